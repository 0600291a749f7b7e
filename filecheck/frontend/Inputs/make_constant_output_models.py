"""Writes the ONNX model of import_constant_outputs.mlir.

    python make_constant_output_models.py OUT_DIR

constant_outputs.onnx: one computed output (y = relu(x)) between constant ones: an
initializer sum (f32), the Shape of x (int64), a mask of initializers (bool) and a
ConstantOfShape of 16 int64 elements (more than graph.constant inlines).
"""

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
w = numpy_helper.from_array(np.array([[1.0, -2.0], [3.0, 0.5]], np.float32), "w")
b = numpy_helper.from_array(np.ones((2, 2), np.float32), "b")
nodes = [
    helper.make_node("Add", ["w", "b"], ["w_plus_b"], name="/add"),
    helper.make_node("Relu", ["x"], ["y"], name="/relu"),
    helper.make_node("Shape", ["x"], ["s"], name="/shape"),
    helper.make_node("Greater", ["w", "b"], ["mask"], name="/greater"),
    helper.make_node("ConstantOfShape", ["n"], ["big"], name="/fill",
                     value=numpy_helper.from_array(np.array([7], np.int64))),
]
n = numpy_helper.from_array(np.array([16], np.int64), "n")
g = helper.make_graph(nodes, "constant_outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 2])],
                      [helper.make_tensor_value_info("w_plus_b", TensorProto.FLOAT, [2, 2]),
                       helper.make_tensor_value_info("s", TensorProto.INT64, [4]),
                       helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 2, 2]),
                       helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 2]),
                       helper.make_tensor_value_info("big", TensorProto.INT64, [16])],
                      [w, b, n])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "constant_outputs.onnx")
