"""The texture path (NCHW4c, images where legal) on every shared graph, in fp32 and in
fp16-acc32 (half storage, fp32 arithmetic), against onnxruntime fp32.

Tolerances (max |ours - ort| / max |ort| per output): fp32 1e-4; fp16-acc32 5e-2,
since every stored activation is rounded to 11 significant bits (about 5e-4
relative) and deep networks compound it.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import adreno_mlir
from tests.conftest import MODEL_NAMES, slow_unless
from tests.test_models import scaled_error

TOLERANCE = {"fp32": 1e-4, "fp16-acc32": 5e-2}


# The three NCHW4c plans, each through a different Winograd rule: fp32 textures compile
# for the live device (PoCL's CPU profile: F(4,3) on every 3x3 conv from 8 channels up),
# fp16-acc32 textures and fp32 buffers for the Adreno 740 profile (the GPU rule: F(4,3)
# or F(2,3) from 64 channels, plus split-K and the GPU pixel blocking).
PLANS = {
    "fp32": dict(textures=True, precision="fp32"),
    "fp16-acc32": dict(textures=True, precision="fp16-acc32", target="adreno-740"),
    "buffer4c": dict(textures=False, layout="nchw4c", target="adreno-740"),
}
TOLERANCE["buffer4c"] = TOLERANCE["fp32"]


@pytest.mark.parametrize("precision", list(PLANS))
@pytest.mark.parametrize("name", slow_unless(MODEL_NAMES, fast={"mobilenet_v3_small"}))
def test_texture_plan_matches_onnxruntime(name, precision, model_path):
    path = str(model_path(name))
    cm = adreno_mlir.compile(path, **PLANS[precision])
    assert ("image2d_t" in cm.source) == PLANS[precision]["textures"]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    ours = cm.run(feeds)
    for (out_name, got), ref in zip(ours.items(), sess.run(None, feeds)):
        assert np.isfinite(got).all()
        err = scaled_error(got, ref)
        assert err <= TOLERANCE[precision], f"{name}:{out_name} {precision} error {err:.2e}"


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_bulk_of_activations_in_textures(name, model_path):
    """After annotate-texture-scope (Adreno 740 limits) nearly every NCHW4c activation is an image."""
    from xdsl.dialects import func

    from adreno_mlir.context import make_context
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.pipeline import run_pipeline
    from adreno_mlir.dialects.texture import TextureTensorType

    module = import_onnx(model_path(name))
    run_pipeline(make_context(), module, "graph-canonicalize,fold-batchnorm,convert-layout-nchw4c,"
                                         "annotate-texture-scope{target=adreno-740}")
    fn = next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))
    types = [r.type for op in fn.body.block.ops for r in op.results if isinstance(r.type, TextureTensorType)]
    images = [t for t in types if t.is_image]
    assert len(types) >= 40
    assert len(images) / len(types) >= 0.9, f"{len(images)} of {len(types)} activations are images"


@pytest.mark.parametrize("plan", [dict(textures=True), dict(textures=False, layout="nchw")])
@pytest.mark.parametrize("name", slow_unless(["resnet18", "googlenet"], fast={"resnet18"}))
def test_gpu_schedules_match_onnxruntime(name, plan, model_path):
    """The GPU schedules (split-K for small-grid NCHW4c convolutions, smaller pixel
    blocks for small-grid NCHW ones), which CPU targets do not use, run here on PoCL by
    compiling for an Adreno profile."""
    path = str(model_path(name))
    cm = adreno_mlir.compile(path, target="adreno-740", **plan)
    assert ("conv_split_sum" in cm.source) == plan["textures"]  # (gemm_ksplit is another split)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    for (_, got), ref in zip(cm.run(feeds).items(), sess.run(None, feeds)):
        assert scaled_error(got, ref) <= TOLERANCE["fp32"]
