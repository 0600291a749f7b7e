"""graph.channel_norm (issue 30: convnextv2_atto spent 90 of its 206 H200 launches on the
transpose -> LayerNormalization -> transpose of ConvNeXt's LayerNorm2d and the unpacks and
packs around it): graph-canonicalize folds the three into one op, lowered on NCHW as the
row normalization with strided rows and on NCHW4c as a per-pixel loop over channel blocks.
Numerics against onnxruntime on every plan, images and buffers, and where it applies."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

pytest.importorskip("pyopencl")

PLANS = {
    "cpu-default": {},
    "nchw": {"layout": "nchw"},
    "gpu-images": {"target": "adreno-740", "textures": True},
    "gpu-buffers": {"target": "adreno-740", "textures": False, "layout": "nchw4c"},
}


def _convnext_block(c: int, *, shape=(1, 3, 9, 11), bias: bool = True, mean_offset: float = 0.0) -> onnx.ModelProto:
    """x -> 3x3 conv to c channels -> Transpose NHWC -> LayerNormalization(-1) ->
    Transpose NCHW -> 1x1 conv -> GELU-free ReLU: a stem or a block's norm of ConvNeXt.
    `mean_offset` adds a large constant to the conv's bias (|mean| >> std: the two-pass
    variance must not cancel)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((c, shape[1], 3, 3)) * 0.3).astype(np.float32), "w0"),
             numpy_helper.from_array((rng.standard_normal(c) * 0.1 + mean_offset).astype(np.float32), "b0"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "gamma"),
             numpy_helper.from_array((rng.standard_normal((8, c, 1, 1)) * 0.3).astype(np.float32), "w1")]
    ln_in = ["t", "gamma"]
    if bias:
        inits.append(numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float32), "beta"))
        ln_in.append("beta")
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c"], name="conv", pads=[1] * 4),
             helper.make_node("Transpose", ["c"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("LayerNormalization", ln_in, ["n"], name="norm", axis=-1, epsilon=1e-6),
             helper.make_node("Transpose", ["n"], ["nt"], name="to_nchw", perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["nt", "w1"], ["p"], name="proj"),
             helper.make_node("Relu", ["p"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "convnext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _check(model: onnx.ModelProto, cm, shape) -> None:
    import onnxruntime as ort

    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    # fp32 on the suite's CPU devices (a 3x3 conv may be Winograd F(4,3) on NCHW4c)
    np.testing.assert_allclose(cm.run({"x": x})["y"], ref, rtol=1e-4, atol=5e-5)


def _kernels(cm) -> list[str]:
    return re.findall(r"__kernel void (\w+)", cm.source)


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("c", [16, 6])
def test_transposed_layer_norm_is_one_channel_norm(plan, c):
    model = _convnext_block(c)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    ir = cm.stage_ir["graph-opt"]
    assert "graph.channel_norm" in ir and "graph.transpose" not in ir and "graph.layer_norm" not in ir, ir
    names = _kernels(cm)
    assert not any(k.startswith("transpose") for k in names), names
    packed = "layout" in cm.stage_ir and "!texture.tensor" in cm.stage_ir["layout"]
    # NCHW4c with whole channel blocks: the packed kernel between the two convs, no
    # unpack/pack around it; 6 channels (a partial block) or the NCHW plan: the strided rows
    if packed and c % 4 == 0:
        assert any(k.startswith("channel_norm_4c") for k in names), names
        assert sum(k.startswith("unpack") for k in names) == 1, names
    else:
        assert any(k.startswith("layer_norm_channels") for k in names), names
    _check(model, cm, (1, 3, 9, 11))


@pytest.mark.parametrize("plan", ["cpu-default", "nchw"])
def test_channel_norm_without_bias_and_far_from_zero(plan):
    """|mean| ~ 100 against a std of ~1: the mean is taken first, then the mean square
    of x - mean, so nothing cancels."""
    model = _convnext_block(8, bias=False, mean_offset=100.0)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    assert "graph.channel_norm" in cm.stage_ir["graph-opt"]
    _check(model, cm, (1, 3, 9, 11))


def test_batch_of_two():
    shape = (2, 3, 5, 7)
    model = _convnext_block(12, shape=shape)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS["gpu-images"])
    assert any(k.startswith("channel_norm_4c") for k in _kernels(cm))
    _check(model, cm, shape)


@pytest.mark.parametrize("plan", ["cpu-default", "gpu-images", "nchw"])
def test_rms_normalization_over_channels(plan):
    """RMSNormalization (opset 23) between the same transposes: `center = 0`, no mean."""
    rng = np.random.default_rng(0)
    c, shape = 8, (1, 8, 5, 7)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("RMSNormalization", ["t", "g"], ["n"], axis=-1, epsilon=1e-5),
             helper.make_node("Transpose", ["n"], ["y"], perm=[0, 3, 1, 2])]
    g = helper.make_graph(nodes, "rms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "g")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    ir = cm.stage_ir["graph-opt"]
    assert "graph.channel_norm" in ir and "center = 0" in ir, ir
    _check(model, cm, shape)


@pytest.mark.parametrize("textures", [True, False])
def test_channel_norm_with_half_storage(textures):
    """fp16-acc32: half pixels in and out (vload_half4 / half images), the sums in f32."""
    import onnxruntime as ort

    model = _convnext_block(16)
    cm = adreno_mlir.compile(model, precision="fp16-acc32", target="adreno-740", textures=textures, layout="nchw4c")
    assert any(k.startswith("channel_norm_4c") for k in _kernels(cm))
    x = np.random.default_rng(1).standard_normal((1, 3, 9, 11)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    # half storage rounds every stored value to 2^-11 relative: the fp16 tolerance of the suite
    err = float(np.abs(cm.run({"x": x})["y"] - ref).max() / np.abs(ref).max())
    assert err <= 5e-3, err
