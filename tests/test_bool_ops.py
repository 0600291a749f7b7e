"""Booleans computed at run time (dialects/graph.py "booleans": 0/1 float masks): IsNaN,
IsInf, Not, And/Or/Xor, Equal/Less/LessOrEqual/Greater/GreaterOrEqual, Cast to and from
bool and Where on a computed condition, against onnxruntime on every plan with NaN and
infinities in the data (ordered comparisons are false where either side is NaN, Cast of
NaN to bool is true)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.dialects import graph

SHAPE = [1, 8, 5, 6]
PLANS = [
    pytest.param({"layout": "nchw", "textures": False}, id="nchw"),
    pytest.param({"layout": "nchw4c", "textures": False}, id="nchw4c"),
    pytest.param({"textures": True}, id="images"),
]


def _data(seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
    x[0, 1, 2, :] = np.nan
    x[0, 2, 0, 0], x[0, 3, 1, 1], x[0, 4, 4, 5] = np.inf, -np.inf, 0.0
    x[0, 5, :, :] = np.round(x[0, 5, :, :])  # equal values in both inputs here
    return x


def _model(nodes, inits=()):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in ("x", "z")]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "bools", ins, [out], list(inits)),
                             opset_imports=[helper.make_opsetid("", 20)])


def _to_float(src: str) -> helper.NodeProto:
    return helper.make_node("Cast", [src], ["y"], to=TensorProto.FLOAT)


def _cases():
    cases = {
        "is_nan": [helper.make_node("IsNaN", ["x"], ["b"]), _to_float("b")],
        "nan_to_zero": [helper.make_node("IsNaN", ["x"], ["b"]),
                        helper.make_node("Where", ["b", "zero", "x"], ["y"])],
        "is_inf": [helper.make_node("IsInf", ["x"], ["b"]), _to_float("b")],
        "is_pos_inf": [helper.make_node("IsInf", ["x"], ["b"], detect_negative=0), _to_float("b")],
        "is_neg_inf": [helper.make_node("IsInf", ["x"], ["b"], detect_positive=0), _to_float("b")],
        "cast_to_bool": [helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BOOL), _to_float("b")],
        "not": [helper.make_node("Greater", ["x", "z"], ["b"]), helper.make_node("Not", ["b"], ["c"]),
                _to_float("c")],
        "greater_than_a_constant": [helper.make_node("Greater", ["x", "zero"], ["b"]), _to_float("b")],
    }
    for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
        cases[op.lower()] = [helper.make_node(op, ["x", "z"], ["b"]), _to_float("b")]
    for op in ("And", "Or", "Xor"):
        cases[op.lower() + "_where"] = [helper.make_node("Less", ["x", "zero"], ["p"]),
                                        helper.make_node("IsNaN", ["z"], ["q"]),
                                        helper.make_node(op, ["p", "q"], ["c"]),
                                        helper.make_node("Where", ["c", "x", "z"], ["y"])]
    return cases


CASES = _cases()
INITS = [numpy_helper.from_array(np.zeros([1], np.float32), "zero")]


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_boolean_ops_match_onnxruntime(case, plan):
    nodes = CASES[case]
    used = {i for n in nodes for i in n.input}
    model = _model(nodes, [t for t in INITS if t.name in used])
    feeds = {"x": _data(1), "z": _data(2)}
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = adreno_mlir.compile(model, target="pocl-cpu", **plan).run(feeds)["y"]
    # exact: masks are 0/1 and Where copies one operand
    np.testing.assert_array_equal(got, ref)


def test_a_boolean_model_output_computed_at_run_time_is_refused():
    model = _model([helper.make_node("IsNaN", ["x"], ["y"])])
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.BOOL
    with pytest.raises(adreno_mlir.CompileError, match=r"model output 'y' is a boolean computed at run time; .* add a "
                                                       r"Cast to float"):
        adreno_mlir.compile(model, target="pocl-cpu", textures=False)


def test_masks_fold_at_compile_time_with_the_kernels_semantics():
    """A comparison of constants folds (`evaluate`) to the mask the kernel would write."""
    a = np.array([1.0, np.nan, -np.inf, 2.0], np.float32)
    b = np.array([1.0, np.nan, 0.0, np.nan], np.float32)
    np.testing.assert_array_equal(graph.EqualOp.evaluate(a, b), [1, 0, 0, 0])
    np.testing.assert_array_equal(graph.LessOp.evaluate(a, b), [0, 0, 1, 0])
    np.testing.assert_array_equal(graph.IsInfOp.evaluate(a, params=(0.0, 1.0)), [0, 0, 1, 0])
    np.testing.assert_array_equal(graph.ToBoolOp.evaluate(a), [1, 1, 1, 1])
    np.testing.assert_array_equal(graph.XorOp.evaluate(np.array([0, 1, 1.0]), np.array([1, 1, 0.0])), [1, 0, 1])
