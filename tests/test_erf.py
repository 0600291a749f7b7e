"""ONNX Erf (graph.erf): an element-wise op added through the op interface alone
(its `emit`/`evaluate` in dialects/graph.py, one importer entry). Conv -> Erf -> Mul and
the GELU pattern x * 0.5 * (1 + erf(x / sqrt 2)) against onnxruntime, on every plan."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.dialects import graph

RNG = np.random.default_rng(7)
SHAPE = [1, 6, 9, 11]  # 6 channels: NCHW4c pads them to 8


def _const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def _conv_erf_mul():
    w = _const("w", RNG.standard_normal((8, 6, 3, 3)) * 0.3)
    b = _const("b", RNG.standard_normal(8) * 0.1)
    s = _const("s", RNG.standard_normal((1, 8, 1, 1)))
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Erf", ["c"], ["e"]),
        helper.make_node("Mul", ["e", "s"], ["y"]),
    ]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 9, 11])
    return nodes, [w, b, s], out


def _gelu():
    """Conv, then GELU as exported by PyTorch (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5)."""
    w = _const("w", RNG.standard_normal((8, 6, 3, 3)) * 0.4)
    consts = [w, _const("sqrt2", [math.sqrt(2.0)]), _const("one", [1.0]), _const("half", [0.5])]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Div", ["c", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]),
        helper.make_node("Mul", ["c", "a"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 9, 11])
    return nodes, consts, out


def _model(build):
    nodes, inits, out = build()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)
    g = helper.make_graph(nodes, build.__name__.strip("_"), [x], [out], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


PLANS = [
    pytest.param(dict(textures=False), 1e-4, id="nchw"),
    pytest.param(dict(textures=False, layout="nchw4c"), 1e-4, id="nchw4c"),
    # fp16 storage of the input and intermediates: relative error of a few 1e-3
    pytest.param(dict(textures=True, precision="fp16-acc32"), 1e-2, id="images-fp16"),
]


@pytest.mark.parametrize("build", [_conv_erf_mul, _gelu])
@pytest.mark.parametrize("plan, tol", PLANS)
def test_erf_matches_onnxruntime(build, plan, tol):
    model = _model(build)
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    cm = adreno_mlir.compile(model, target="pocl-cpu", **plan)
    assert "erf(" in cm.source
    got = cm.run({"x": x})["y"]
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err <= tol, (plan, err)
    if plan.get("textures"):
        assert "image2d_t" in cm.source


def test_erf_fuses_like_any_elementwise_op():
    """Erf has the Elementwise trait: conv -> erf -> mul is one kernel (the conv's
    epilogue). PyTorch's exported GELU (Div, Erf, Add, Mul, Mul) becomes one graph.gelu
    (graph-canonicalize's RecognizeGelu), so it too joins the conv's epilogue: one
    kernel, named for it, with no division left."""
    cm = adreno_mlir.compile(_model(_conv_erf_mul), target="pocl-cpu", textures=False, layout="nchw")
    assert cm.source.count("__kernel") == 1, cm.source
    cm = adreno_mlir.compile(_model(_gelu), target="pocl-cpu", textures=False, layout="nchw")
    assert cm.source.count("__kernel") == 1, cm.source
    assert "_gelu(" in cm.source and "div" not in cm.source, cm.source


def test_erf_evaluate_and_registry():
    assert graph.ELEMENTWISE_BY_KIND["erf"] is graph.ErfOp
    assert graph.ErfOp in graph.UNARY_OPS
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    np.testing.assert_allclose(graph.ErfOp.evaluate(x), [math.erf(v) for v in x], rtol=1e-6)
