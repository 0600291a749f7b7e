"""Writes the small ONNX models the frontend FileCheck tests import.

    python make_models.py OUT_DIR
small.onnx: Conv -> BatchNormalization -> Relu, a Shape/Gather/Unsqueeze/Concat
subgraph feeding Reshape (must fold away), an Identity (dropped) and a Gemm.
unsupported.onnx: two unsupported op types (Sin twice, TopK once) among supported ones.
dynamic.onnx: a model whose input has a symbolic batch dimension.
"""

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)


def init(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="/conv/Conv", pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"], name="/bn/BatchNormalization"),
    helper.make_node("Relu", ["bn"], ["r"], name="/relu/Relu"),
    helper.make_node("Shape", ["r"], ["shape"], name="/Shape"),
    helper.make_node("Gather", ["shape", "zero"], ["n"], name="/Gather", axis=0),
    helper.make_node("Unsqueeze", ["n", "zero_axes"], ["n1"], name="/Unsqueeze"),
    helper.make_node("Concat", ["n1", "minus_one"], ["newshape"], name="/Concat", axis=0),
    helper.make_node("Reshape", ["r", "newshape"], ["flat"], name="/Reshape"),
    helper.make_node("Identity", ["fc_w"], ["fc_w_id"], name="/Identity"),
    helper.make_node("Gemm", ["flat", "fc_w_id", "fc_b"], ["y"], name="/fc/Gemm", transB=1),
]
inits = [
    init("w", (8, 3, 3, 3)), init("b", (8,)), init("s", (8,)), init("bb", (8,)), init("m", (8,)),
    numpy_helper.from_array(np.abs(rng.standard_normal(8)).astype(np.float32) + 0.5, "v"),
    init("fc_w", (10, 128)), init("fc_b", (10,)),
    numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"), i64("zero_axes", [0]), i64("minus_one", [-1]),
]
g = helper.make_graph(
    nodes, "small",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
    inits,
)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "small.onnx")

nodes = [
    helper.make_node("Relu", ["x"], ["a"], name="/relu"),
    helper.make_node("Sin", ["a"], ["b"], name="/sin1"),
    helper.make_node("Sin", ["b"], ["c"], name="/sin2"),
    helper.make_node("TopK", ["c", "k"], ["d", "idx"], name="/topk", axis=1),
]
g = helper.make_graph(
    nodes, "unsupported",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
    [helper.make_tensor_value_info("d", TensorProto.FLOAT, [1, 2])],
    [i64("k", [2])],
)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "unsupported.onnx")

g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"], name="/relu")], "dynamic",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "dynamic.onnx")
(out / "truncated.onnx").write_bytes((out / "small.onnx").read_bytes()[:200])
