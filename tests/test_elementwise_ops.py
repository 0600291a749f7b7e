"""ONNX Pow, Log, Reciprocal, Max/Min/Sum, Where, Gelu and PRelu: element-wise graph ops
(dialects/graph.py) against onnxruntime on every plan (NCHW buffers, NCHW4c buffers,
NCHW4c images), including NaN and inf: max/min propagate NaN, where selects without
letting the value it does not choose leak, log(0) and 1/0 stay infinite. Also the
specialised constant exponents, fusion into a convolution's epilogue, the NCHW4c
padding channels that log would make -inf before a convolution and half arithmetic
(a Where on a condition computed at run time: tests/test_bool_ops.py)."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.dialects import graph

RNG = np.random.default_rng(11)
SHAPE = [1, 8, 5, 6]
OPSET = 20  # Gelu is new in opset 20

PLANS = [
    pytest.param({"layout": "nchw", "textures": False}, id="nchw"),
    pytest.param({"layout": "nchw4c", "textures": False}, id="nchw4c"),
    pytest.param({"textures": True}, id="images"),
]
TOLERANCE = 1e-5
"""Largest |ours - onnxruntime| over the finite outputs, relative to their largest |value|."""


def _const(name, arr, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(arr, dtype), name)


def _model(nodes, inits=(), inputs=("x",), input_shapes=None):
    shapes = input_shapes or {}
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes.get(n, SHAPE)) for n in inputs]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "elementwise", ins, [out], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def _x(zeros=False, nans=False):
    """Random NCHW data; optionally with exact zeros (log, reciprocal) and NaNs (max/min)."""
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    if zeros:
        x[0, :, 0, 0] = 0.0
    if nans:
        x[0, 1, 2, :] = np.nan
        x[0, 5, :, 3] = np.nan
    return x


def _node(op, ins, out="y", **attrs):
    return helper.make_node(op, list(ins), [out], **attrs)


def _pow_const(e):
    return lambda: (_model([_node("Pow", ["x", "e"])], [_const("e", e)]), {"x": _x()})


def _per_channel(values):
    return np.asarray(values, np.float32).reshape(8, 1, 1)


CASES = {
    "pow_2": _pow_const(2.0),
    "pow_3": _pow_const([3.0]),
    "pow_0.5": _pow_const(0.5),
    "pow_1": _pow_const(1.0),
    "pow_0": _pow_const(0.0),
    "pow_-1": _pow_const(-1.0),
    "pow_1.7": _pow_const(1.7),
    "pow_int_exponent": lambda: (
        _model([_node("Pow", ["x", "e"])], [_const("e", 2, np.int64)]), {"x": _x()}),
    "pow_per_channel": lambda: (
        _model([_node("Pow", ["x", "e"])], [_const("e", _per_channel([1, 2, 3, 2, 1, 3, 0.5, 4]))]), {"x": _x()}),
    "pow_runtime_exponent": lambda: (
        _model([_node("Abs", ["x"], "a"), _node("Pow", ["a", "e"])], inputs=("x", "e")),
        {"x": _x(), "e": RNG.uniform(-2, 3, SHAPE).astype(np.float32)}),
    "log": lambda: (_model([_node("Log", ["x"])]), {"x": _x(zeros=True)}),
    "reciprocal": lambda: (_model([_node("Reciprocal", ["x"])]), {"x": _x(zeros=True)}),
    "max_3_inputs": lambda: (
        _model([_node("Max", ["x", "s", "t"])], [_const("s", _per_channel(RNG.standard_normal(8))),
                                                 _const("t", [0.25])]),
        {"x": _x(nans=True)}),
    "min_2_inputs": lambda: (
        _model([_node("Min", ["x", "z"])], inputs=("x", "z")), {"x": _x(nans=True), "z": _x()}),
    "max_1_input": lambda: (_model([_node("Max", ["x"])]), {"x": _x(nans=True)}),
    "sum_3_inputs": lambda: (
        _model([_node("Sum", ["x", "s", "z"])], [_const("s", _per_channel(RNG.standard_normal(8)))],
               inputs=("x", "z")),
        {"x": _x(), "z": _x()}),
    "gelu": lambda: (_model([_node("Gelu", ["x"])]), {"x": 3 * _x()}),
    "gelu_tanh": lambda: (_model([_node("Gelu", ["x"], approximate="tanh")]), {"x": 3 * _x()}),
    "prelu_per_channel": lambda: (
        _model([_node("PRelu", ["x", "s"])], [_const("s", _per_channel(RNG.uniform(-1, 1, 8)))]), {"x": _x()}),
    "prelu_runtime_slope": lambda: (
        _model([_node("PRelu", ["x", "s"])], inputs=("x", "s"), input_shapes={"s": [1, 8, 1, 1]}),
        {"x": _x(), "s": RNG.uniform(-1, 1, (1, 8, 1, 1)).astype(np.float32)}),
    # An attention-style mask: -inf where the mask is false; x's NaNs sit where it is
    # false too, and must not leak.
    "where_mask": lambda: (
        _model([_node("Where", ["m", "x", "ninf"])],
               [numpy_helper.from_array(np.arange(48).reshape(1, 8, 1, 6) % 3 != 0, "m"),
                _const("ninf", -np.inf)]),
        {"x": np.where(np.arange(48).reshape(1, 8, 1, 6) % 3 != 0, _x(), np.float32(np.nan))}),
    "where_two_inputs": lambda: (
        _model([_node("Where", ["m", "x", "z"])], [numpy_helper.from_array(RNG.random((5, 1)) > 0.5, "m")],
               inputs=("x", "z")),
        {"x": _x(), "z": _x()}),
}


def _conv_epilogue():
    """Conv -> Gelu -> Where (mask) -> PRelu -> Max: one kernel on the NCHW plan."""
    inits = [
        _const("w", RNG.standard_normal((8, 8, 3, 3)) * 0.3),
        numpy_helper.from_array(RNG.random((1, 8, 5, 6)) > 0.3, "m"),
        _const("low", [-3.0]),
        _const("s", _per_channel(RNG.uniform(0, 0.5, 8))),
        _const("t", [-1.0]),
    ]
    nodes = [
        _node("Conv", ["x", "w"], "c", pads=[1, 1, 1, 1]),
        _node("Gelu", ["c"], "g", approximate="tanh"),
        _node("Where", ["m", "g", "low"], "wh"),
        _node("PRelu", ["wh", "s"], "p"),
        _node("Max", ["p", "t"]),
    ]
    return _model(nodes, inits), {"x": _x()}


def _padding():
    """Conv to 6 channels (NCHW4c pads them to 8), |.|, Log, Conv back to 8: the padding
    channels hold log(0) = -inf, which must not reach the second convolution's sums."""
    inits = [_const("w1", RNG.standard_normal((6, 8, 1, 1))), _const("w2", RNG.standard_normal((8, 6, 3, 3)) * 0.3)]
    nodes = [
        _node("Conv", ["x", "w1"], "c"),
        _node("Abs", ["c"], "a"),
        _node("Log", ["a"], "l"),
        _node("Conv", ["l", "w2"], pads=[1, 1, 1, 1]),
    ]
    return _model(nodes, inits), {"x": _x()}


CASES["conv_epilogue"] = _conv_epilogue
CASES["log_before_conv_padding"] = _padding


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _check(got, ref, tol=TOLERANCE):
    """Same non-finite values at the same places; finite ones within `tol` of max |ref|."""
    assert got.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    inf = np.isinf(ref)
    np.testing.assert_array_equal(got[inf], ref[inf])
    finite = np.isfinite(ref)
    assert np.isfinite(got[finite]).all()
    scale = max(float(np.abs(ref[finite]).max(initial=0.0)), 1e-30)
    err = float(np.abs(got[finite] - ref[finite]).max(initial=0.0)) / scale
    assert err <= tol, err


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_onnxruntime(case, plan):
    model, feeds = CASES[case]()
    ref = _ort(model, feeds)
    cm = adreno_mlir.compile(model, target="pocl-cpu", **plan)
    _check(cm.run(feeds)["y"], ref)
    if plan.get("textures") and case != "max_1_input":  # (that one is a copy of its input)
        assert "image2d_t" in cm.source


def test_constant_exponents_are_specialised():
    """2 and 3 multiply, 0.5 is sqrt, 1 is x itself and 0 is 1: no pow call; any other
    constant and a run-time exponent call OpenCL's pow."""
    def source(e):
        model, _ = _pow_const(e)()
        return adreno_mlir.compile(model, target="pocl-cpu", textures=False).source

    for e in (2.0, 3.0, 1.0, 0.0, -1.0):
        assert "pow(" not in source(e), e
    assert "sqrt(" in source(0.5) and "pow(" not in source(0.5)
    assert "pow(" in source(1.7)
    model, _ = CASES["pow_per_channel"]()
    assert "pow(" in adreno_mlir.compile(model, target="pocl-cpu", textures=False).source
    cm = adreno_mlir.compile(_pow_const([[2.0]])()[0], target="pocl-cpu", textures=False, keep_ir=True)
    assert "graph.pow %x {exponent = 2.000000e+00 : f32}" in cm.stage_ir["graph"]


def test_epilogue_fuses_into_the_convolution():
    """Gelu, Where, PRelu and Max are element-wise like any other: the convolution's
    epilogue, one kernel on the NCHW plan."""
    model, _ = _conv_epilogue()
    cm = adreno_mlir.compile(model, target="pocl-cpu", textures=False, layout="nchw")
    assert cm.source.count("__kernel") == 1, cm.source
    assert "tanh(" in cm.source and "adreno_fmax_float" in cm.source and " ? " in cm.source


def test_log_padding_keeps_the_next_convolution_on_nchw():
    """On the NCHW4c plans the convolution after log reads an unpacked NCHW tensor (its
    padding would be -inf); after sigmoid (padding log(0.5)) it stays packed."""
    model, feeds = _padding()
    cm = adreno_mlir.compile(model, target="pocl-cpu", textures=True, keep_ir=True)
    layout = cm.stage_ir["layout"]
    assert "texture.unpack" in layout.split("graph.log")[1].split("graph.conv2d")[0]
    _check(cm.run(feeds)["y"], _ort(model, feeds))


def test_half_arithmetic(half_device):
    """precision fp16: every NCHW4c kernel computes in half, the new ops too (float4
    lanes become half4, the where select included)."""
    inits = [numpy_helper.from_array(np.arange(48).reshape(1, 8, 1, 6) % 3 != 0, "m"), _const("low", [-4.0]),
             _const("s", _per_channel(RNG.uniform(0, 0.5, 8))), _const("e", 2.0), _const("t", [-1.0])]
    nodes = [
        _node("Gelu", ["x"], "g", approximate="tanh"),
        _node("Where", ["m", "g", "low"], "w"),
        _node("PRelu", ["w", "s"], "p"),
        _node("Pow", ["p", "e"], "q"),
        _node("Sigmoid", ["q"], "sg"),
        _node("Reciprocal", ["sg"], "r"),
        _node("Log", ["r"], "l"),
        _node("Max", ["l", "t"]),
    ]
    model = _model(nodes, inits)
    feeds = {"x": _x()}
    cm = adreno_mlir.compile(model, device=half_device, precision="fp16", textures=True, target="adreno-740")
    assert "half4" in cm.source
    _check(cm.run(feeds)["y"], _ort(model, feeds), tol=2e-2)


def test_gelu_approximation_is_checked():
    model = _model([_node("Gelu", ["x"], approximate="fast")])
    with pytest.raises(adreno_mlir.CompileError, match=r"approximate = 'fast' is not one of none, tanh"):
        adreno_mlir.compile(model, target="pocl-cpu", textures=False)


def test_evaluate_matches_the_kernels():
    """Constant folding uses each op's numpy `evaluate`, specialised as the kernels are."""
    for kind in ("log", "reciprocal", "pow", "gelu", "max", "min", "pow_tensor", "prelu", "where"):
        assert graph.ELEMENTWISE_BY_KIND[kind].KIND == kind
    x = np.array([-np.inf, -2.0, -0.0, 0.0, 0.5, 3.0, np.inf, np.nan], np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(graph.PowOp.evaluate(x, params=(2.0,)), x * x)
        np.testing.assert_array_equal(graph.PowOp.evaluate(x, params=(0.5,)), np.sqrt(x))
        np.testing.assert_array_equal(graph.PowOp.evaluate(x, params=(1.7,)), np.power(x, np.float32(1.7)))
        np.testing.assert_array_equal(graph.MaxOp.evaluate(x, np.float32(0.0)), np.maximum(x, 0))
        assert np.isnan(graph.MinOp.evaluate(np.float32(np.nan), np.float32(1.0)))
    cond = np.array([1, 0, 1, 0, 1, 0, 1, 0], np.float32)
    w = graph.WhereOp.evaluate(cond, x, np.float32(7.0))
    np.testing.assert_array_equal(w, [-np.inf, 7, -0.0, 7, 0.5, 7, np.inf, 7])
    g = graph.GeluOp.evaluate(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_allclose(g, [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in (-1.0, 0.0, 2.0)])
    np.testing.assert_allclose(graph.PReluOp.evaluate(np.array([-2.0, 3.0]), np.array([0.5])), [-1.0, 3.0])
