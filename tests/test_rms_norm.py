"""RMS normalization (`graph.layer_norm {center = 0}`): ONNX RMSNormalization, and the
decomposed form T5's and Llama's exports write (Pow, ReduceMean, Add eps, Sqrt,
Reciprocal or Div(1, .), Mul, Mul by the weight), which graph-canonicalize recognizes as
one op and one kernel; against onnxruntime on every plan."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

RNG = np.random.default_rng(12)
SHAPE = [1, 24, 64]
PLANS = [
    pytest.param({"layout": "nchw", "textures": False}, id="nchw"),
    pytest.param({"layout": "nchw4c", "textures": False}, id="nchw4c"),
    pytest.param({"textures": True}, id="images"),
]


def _model(nodes, inits, opset=17):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "rms", [x], [y], inits),
                             opset_imports=[helper.make_opsetid("", opset)])


def _decomposed(inverse: str, square: str):
    inits = [numpy_helper.from_array(RNG.standard_normal(SHAPE[-1]).astype(np.float32), "w"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    sq = helper.make_node("Pow", ["x", "two"], ["sq"]) if square == "pow" else helper.make_node("Mul", ["x", "x"], ["sq"])
    inv = helper.make_node("Reciprocal", ["root"], ["inv"]) if inverse == "reciprocal" else \
        helper.make_node("Div", ["one", "root"], ["inv"])
    nodes = [sq, helper.make_node("ReduceMean", ["sq"], ["mean"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["mean", "eps"], ["var"]), helper.make_node("Sqrt", ["var"], ["root"]), inv,
             helper.make_node("Mul", ["x", "inv"], ["normed"]), helper.make_node("Mul", ["w", "normed"], ["y"])]
    return _model(nodes, [t for t in inits if t.name in {i for n in nodes for i in n.input}])


def _check(model, plan):
    x = {"x": (RNG.standard_normal(SHAPE) * 3 + 1).astype(np.float32)}
    (ref,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)
    cm = adreno_mlir.compile(model, keep_ir=True, **plan)
    got = cm.run(x)["y"]
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-5
    return cm


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize(("inverse", "square"), [("reciprocal", "pow"), ("div", "mul")])
def test_decomposed_rms_norm_is_one_kernel(inverse, square, plan):
    cm = _check(_decomposed(inverse, square), plan)
    assert "__kernel void rms_norm" in cm.source
    assert "graph.reduce_mean" in cm.stage_ir["graph"]  # as imported: the decomposed chain
    after = cm.stage_ir["graph-opt"]  # after graph-canonicalize: one op, the weight its scale
    assert "center = 0" in after and "graph.sqrt" not in after and "graph.reduce_mean" not in after, after
    assert "graph.mul" not in after


@pytest.mark.parametrize("plan", PLANS)
def test_onnx_rms_normalization(plan):
    w = numpy_helper.from_array(RNG.standard_normal(SHAPE[-1]).astype(np.float32), "w")
    model = _model([helper.make_node("RMSNormalization", ["x", "w"], ["y"], epsilon=1e-5)], [w], opset=23)
    assert "__kernel void rms_norm" in _check(model, plan).source


def test_a_mean_that_is_read_elsewhere_stays_decomposed():
    """The chain's values used twice (the mean square is also an output's input) keep it
    unfused: nothing the model still reads is recomputed or lost."""
    model = _decomposed("reciprocal", "pow")
    model.graph.node.append(helper.make_node("Add", ["y", "mean"], ["y2"]))
    model.graph.output[0].name = "y2"
    x = {"x": RNG.standard_normal(SHAPE).astype(np.float32)}
    (ref,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)
    cm = adreno_mlir.compile(model, textures=False, layout="nchw")
    assert "rms_norm" not in cm.source
    got = cm.run(x)["y2"]
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-5
