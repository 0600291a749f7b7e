"""Hugging Face exports (../shared/models/hf: `torch.onnx.export` of `transformers` models
built from their default configs, legacy and dynamo exporters) against onnxruntime on PoCL.

Each must match on the three fp32 plans (NCHW buffers, NCHW4c buffers, textures) within
max|ours - ort| / max|ort| <= 1e-4, and in fp16-acc32 within 2e-2. What each needed:
distilbert and llama_tiny a boolean computed at run time (IsNaN + Where, from the
attention-mask path: tests/test_bool_ops.py), gpt2 its `input_ids` reshaped before the
embedding Gather, whisper's encoder 1-D convolutions (tests/test_conv1d.py).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import adreno_mlir
from tests.conftest import HF, materialized_model, slow_unless

HF_MODELS = ["hf_distilbert", "hf_gpt2", "hf_llama_tiny", "hf_whisper_tiny_encoder", "hf_t5_small_encoder",
             "hf_segformer_b0"]
FAST = {"hf_distilbert", "hf_whisper_tiny_encoder"}
"""The rows the README's test command runs (one text model, one with convolutions); CI runs all."""

PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "nchw4c": dict(layout="nchw4c", textures=False),
    "textures": dict(textures=True),
    "fp16-acc32": dict(textures=True, precision="fp16-acc32"),
}
TOLERANCE = {"fp16-acc32": 2e-2}


def _path(name: str) -> str:
    if not (HF / f"{name}.onnx").exists():
        pytest.fail(f"{HF / (name + '.onnx')} is missing; set ADRENO_SHARED to the shared/ folder")
    return str(materialized_model(name, HF))


def _feeds(sess: ort.InferenceSession) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    feeds = {}
    for i in sess.get_inputs():
        if "int" in i.type:  # token ids over the first 1000 of every vocabulary here
            feeds[i.name] = rng.integers(0, 1000, i.shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(i.shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("name", slow_unless(HF_MODELS, fast=FAST))
def test_hf_export_matches_onnxruntime(name, plan):
    path = _path(name)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = _feeds(sess)
    options = PLANS[plan]
    if options.get("precision") == "fp16-acc32":
        options = {**options, "calibration": False}  # random weights; the range guard has its own tests
    cm = adreno_mlir.compile(path, **options)
    tolerance = TOLERANCE.get(plan, 1e-4)
    for (out_name, got), ref in zip(cm.run(feeds).items(), sess.run(None, feeds)):
        assert got.shape == ref.shape
        assert np.isfinite(got).all()
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
        assert err <= tolerance, f"{name}:{out_name} {plan}: scaled error {err:.2e} > {tolerance}"
