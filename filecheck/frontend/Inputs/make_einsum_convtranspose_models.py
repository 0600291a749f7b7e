"""Writes the ONNX models of import_einsum.mlir and import_conv_transpose.mlir.

    python make_einsum_convtranspose_models.py OUT_DIR

einsum_attention.onnx: q @ k^T and scores @ v as Einsums (bhid,bhjd->bhij, bhij,bhjd->bhid).
einsum_forms.onnx: an outer product, a row sum, a batched diagonal, a three-operand chain and
an implicit-output matmul, one Einsum node each.
einsum_bad.onnx: an Einsum whose inputs have '...' but whose output does not.
conv_transpose.onnx: a 2-D ConvTranspose with output_shape (pads derived from it) and a
1-D one with groups (imported as 2-D over N x C x 1 x L).
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


def value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(nodes, inputs, outputs, inits, name, opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), out / f"{name}.onnx")


save([helper.make_node("Einsum", ["q", "k"], ["scores"], name="/attn/qk", equation="bhid,bhjd->bhij"),
      helper.make_node("Einsum", ["scores", "v"], ["ctx"], name="/attn/av", equation="bhij,bhjd->bhid")],
     [value("q", [1, 4, 10, 16]), value("k", [1, 4, 10, 16]), value("v", [1, 4, 10, 16])],
     [value("ctx", [1, 4, 10, 16])], [], "einsum_attention")

save([helper.make_node("Einsum", ["a", "b"], ["outer"], name="/outer", equation="i,j->ij"),
      helper.make_node("Einsum", ["m"], ["rows"], name="/rowsum", equation="ij->i"),
      helper.make_node("Einsum", ["d"], ["diag"], name="/diag", equation="...ii->...i"),
      helper.make_node("Einsum", ["m", "n", "p"], ["chain"], name="/chain", equation="ij,jk,kl->il"),
      helper.make_node("Einsum", ["m", "n"], ["implicit"], name="/implicit", equation="ij,jk")],
     [value("a", [3]), value("b", [4]), value("m", [3, 4]), value("d", [2, 5, 5]), value("n", [4, 5]),
      value("p", [5, 2])],
     [value("outer", [3, 4]), value("rows", [3]), value("diag", [2, 5]), value("chain", [3, 2]),
      value("implicit", [3, 5])], [], "einsum_forms")

save([helper.make_node("Einsum", ["x"], ["y"], name="/bad", equation="...ij->ij")],
     [value("x", [2, 3, 4])], [value("y", [3, 4])], [], "einsum_bad")

save([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="/up2d", strides=[3, 2], output_shape=[10, 8]),
      helper.make_node("ConvTranspose", ["s", "w1"], ["z"], name="/up1d", strides=[2], pads=[1, 0], group=2)],
     [value("x", [1, 2, 3, 3]), value("s", [1, 4, 6])],
     [value("y", [1, 3, 10, 8]), value("z", [1, 6, 12])],
     [init("w", (2, 3, 3, 3)), init("b", (3,)), init("w1", (4, 3, 3))], "conv_transpose", opset=17)
