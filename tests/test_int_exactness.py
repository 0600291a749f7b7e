"""Exactness of the float-held integers at their edges (review of issue 28): a comparison
with an integer constant above 2048 under fp16 storage (the constant must not be rounded
to half), the runtime's extreme admitted value -2**24 through an integer division, and
a Cast of (-1, 0) to an integer giving +0 (1 / it is +inf, as in onnxruntime)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir


def _ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_fp16_storage_keeps_integer_constants_of_comparisons_exact():
    eye = numpy_helper.from_array(np.eye(4, dtype=np.float32).reshape(4, 4, 1, 1), "eye")
    k = numpy_helper.from_array(np.array([2049], np.int64), "k")
    nodes = [helper.make_node("Conv", ["x", "eye"], ["c0"]), helper.make_node("Conv", ["c0", "eye"], ["c1"]),
             helper.make_node("Cast", ["c1"], ["i"], to=TensorProto.INT64), helper.make_node("Equal", ["i", "k"], ["b"]),
             helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [eye, k])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = {"x": np.full((1, 4, 2, 2), 2048.0, np.float32)}
    cm = adreno_mlir.compile(model, textures=False, layout="nchw4c", precision="fp16-acc32", calibration=False)
    np.testing.assert_array_equal(cm.run(x)["y"], _ort(model, x))  # 2048 == 2049 is false


def test_integer_division_at_minus_two_to_the_24():
    g = helper.make_graph([helper.make_node("Div", ["a", "two"], ["q"]),
                           helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], "g",
                          [helper.make_tensor_value_info("a", TensorProto.INT64, [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([2], np.int64), "two")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    a = {"a": np.array([[-(1 << 24), (1 << 24) - 1, -7]], np.int64)}
    got = adreno_mlir.compile(model, textures=False, layout="nchw").run(a)["y"]
    np.testing.assert_array_equal(got, _ort(model, a))


def test_cast_to_int_of_a_small_negative_is_plus_zero():
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                           helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
                           helper.make_node("Div", ["one", "f"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.ones([1], np.float32), "one")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = {"x": np.array([[-0.5, 0.5, -2.7, 3.2]], np.float32)}
    np.testing.assert_array_equal(adreno_mlir.compile(model, textures=False, layout="nchw").run(x)["y"], _ort(model, x))
