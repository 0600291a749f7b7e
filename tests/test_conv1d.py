"""1-D convolution (N x C x L, audio and temporal models): imported as a 2-D convolution
over N x C x 1 x L with a 1 x K window (adreno_mlir/frontend/onnx_importer.py::_conv),
against onnxruntime on every plan: strides, dilations, explicit and SAME padding,
groups (depthwise), bias, and a 1-D convolution between 1-D poolings."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

PLANS = [
    pytest.param({"layout": "nchw", "textures": False}, id="nchw"),
    pytest.param({"layout": "nchw4c", "textures": False}, id="nchw4c"),
    pytest.param({"textures": True}, id="images"),
]
RNG = np.random.default_rng(5)

CASES = {
    "plain": dict(cin=8, cout=16, k=3, attrs=dict(pads=[1, 1])),
    "stride2_whisper": dict(cin=16, cout=16, k=3, attrs=dict(pads=[1, 1], strides=[2])),
    "dilated": dict(cin=8, cout=8, k=3, attrs=dict(dilations=[2], pads=[2, 2])),
    "same_upper": dict(cin=4, cout=8, k=4, attrs=dict(auto_pad="SAME_UPPER")),
    "depthwise": dict(cin=12, cout=12, k=5, attrs=dict(group=12, pads=[2, 2])),
    "no_bias_valid": dict(cin=6, cout=10, k=7, attrs={}, bias=False),
}


def _model(cin, cout, k, attrs, bias=True, length=50, pool=False):
    group = attrs.get("group", 1)
    w = numpy_helper.from_array(RNG.standard_normal((cout, cin // group, k)).astype(np.float32), "w")
    b = numpy_helper.from_array(RNG.standard_normal(cout).astype(np.float32), "b")
    conv = helper.make_node("Conv", ["p" if pool else "x", "w"] + (["b"] if bias else []), ["c"], name="conv1d",
                            **attrs)
    nodes = [conv, helper.make_node("Relu", ["c"], ["y"] if not pool else ["r"])]
    if pool:
        nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2], strides=[2]), *nodes,
                 helper.make_node("AveragePool", ["r"], ["y"], kernel_shape=[3], strides=[1], pads=[1, 1])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, length])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "conv1d", [x], [y], [w] + ([b] if bias else []))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, plan):
    x = RNG.standard_normal([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = adreno_mlir.compile(model, target="pocl-cpu", **plan).run({"x": x})["y"]
    assert got.shape == ref.shape
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-5


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_conv1d_matches_onnxruntime(case, plan):
    _check(_model(**CASES[case]), plan)


@pytest.mark.parametrize("plan", PLANS)
def test_conv1d_between_1d_pools(plan):
    _check(_model(cin=8, cout=8, k=3, attrs=dict(pads=[1, 1]), pool=True), plan)


def test_conv3d_is_refused_by_name():
    w = numpy_helper.from_array(np.zeros((2, 2, 1, 1, 1), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="c3")], "c3", [x], [y], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(adreno_mlir.CompileError, match=r"node 'c3' \(Conv\): only 1-D and 2-D convolutions"):
        adreno_mlir.compile(model, target="pocl-cpu", textures=False)
