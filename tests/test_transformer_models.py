"""Transformer models (TinyBERT, ViT-B/32, Swin-T) and the newer CNN kept with them
(EfficientNetV2-S), the graphs of ../shared/models/next, against onnxruntime on PoCL.

Each model that runs is listed in NEXT_MODELS (the folder also holds graphs that are
work in progress). Every one must match onnxruntime on the three fp32 plans (NCHW
buffers, NCHW4c buffers, textures) within max|ours - ort| / max|ort| <= 1e-4, and the
transformers in fp16-acc32 (fp16 storage, fp32 arithmetic) within 2e-2. Their graph IR
must hold only real compute: shape subgraphs (Shape, Gather, Equal, Where, Range ...)
fold to constants at import. On a GPU profile fuse-attention makes each attention block
one kernel.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import adreno_mlir
from tests.conftest import NEXT, materialized_model, slow_unless

NEXT_MODELS = ["tiny_bert", "vit_b_32", "swin_t", "efficientnet_v2_s"]
TRANSFORMERS = {"tiny_bert", "vit_b_32", "swin_t"}

PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "nchw4c": dict(layout="nchw4c", textures=False),
    "textures": dict(textures=True),
}


def _path(name: str) -> str:
    if not (NEXT / f"{name}.onnx").exists():
        pytest.fail(f"{NEXT / (name + '.onnx')} is missing; set ADRENO_SHARED to the shared/ folder")
    return str(materialized_model(name, NEXT))


def _compare(name: str, tolerance: float, **options) -> None:
    path = _path(name)
    cm = adreno_mlir.compile(path, **options)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    ours = cm.run(feeds)
    for (out_name, got), ref in zip(ours.items(), sess.run(None, feeds)):
        assert got.shape == ref.shape
        assert np.isfinite(got).all()
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
        assert err <= tolerance, f"{name}:{out_name} {options}: scaled error {err:.2e} > {tolerance}"


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("name", slow_unless(NEXT_MODELS, fast={"tiny_bert"}))
def test_next_model_matches_onnxruntime(name, plan):
    _compare(name, 1e-4, **PLANS[plan])


@pytest.mark.parametrize("name", slow_unless(sorted(TRANSFORMERS & set(NEXT_MODELS)), fast={"tiny_bert"}))
def test_transformer_fp16_storage(name):
    _compare(name, 2e-2, textures=True, precision="fp16-acc32")


@pytest.mark.parametrize("name", NEXT_MODELS)
def test_graph_ir_holds_only_compute(name):
    """No graph op computes only from constants: shape arithmetic and constant subgraphs
    were folded at import (graph-canonicalize folds element-wise leftovers)."""
    from adreno_mlir.dialects import graph
    from adreno_mlir.frontend import import_onnx

    module = import_onnx(_path(name))
    ops = [op for op in module.walk() if op.name.startswith("graph.") and not isinstance(op, graph.ConstantOp)]
    assert ops
    folded_late = [f"{op.name} at {op.location}" for op in ops
                   if op.operands and all(isinstance(v.owner, graph.ConstantOp) for v in op.operands)]
    assert not folded_late, f"{name}: ops on constants only: {folded_late[:5]}"


@pytest.mark.parametrize("name", slow_unless(["tiny_bert", "vit_b_32", "swin_t"], fast={"tiny_bert"}))
def test_fused_attention_for_gpu_profiles(name):
    """For a GPU profile fuse-attention turns each attention block into one kernel
    (Swin-T's with its relative-position bias) reading q, k and v from the projection
    through strided views and writing its output transposed for the output projection
    (no transpose and slice kernels around it); the result still matches onnxruntime
    when run here."""
    path = _path(name)
    cm = adreno_mlir.compile(path, layout="nchw", textures=False, target="adreno-740", keep_ir=True)
    assert "__kernel void attention" in cm.source
    attention = [line for line in cm.stage_ir["graph-opt"].splitlines() if "graph.attention" in line]
    assert attention and all("q_view" in line and "k_view" in line and "v_view" in line for line in attention), \
        attention[:1]
    if name in ("tiny_bert", "vit_b_32"):  # nn.MultiheadAttention's packed projection: nothing left between
        lines = [line for line in cm.stage_ir["graph-opt"].splitlines() if "self_attn" in line or "self_attention" in line]
        # no slice or transpose kernel left: q/k/v views, and the output written transposed
        assert not [line for line in lines if "graph.slice" in line or "graph.transpose" in line], name
        assert all("out_perm" in line for line in attention), attention[:1]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(2).standard_normal(cm.input_shapes["input"]).astype(np.float32)
    (got,) = cm.run({"input": x}).values()
    (ref,) = sess.run(None, {"input": x})
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-4
