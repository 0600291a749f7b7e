"""fuse-attention's operand views (passes/fuse_attention.py `operand_view`,
`reshape_strides`): a chain of reshapes, transposes and slices of a tensor read as one
strided view of it must give the chain's elements, or no view at all. Checked against
numpy on random chains."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block

from adreno_mlir.dialects import graph
from adreno_mlir.passes.fuse_attention import operand_view, reshape_strides


def _through(x: np.ndarray, offset: int, shape, strides) -> np.ndarray:
    """The elements of x's flat storage that a view (offset, shape, strides) reads."""
    flat = x.reshape(-1)
    idx = np.indices(shape).reshape(len(shape), -1)
    return flat[offset + (np.asarray(strides)[:, None] * idx).sum(0)].reshape(shape)


def _random_chain(rng: np.random.Generator, block: Block, x: np.ndarray):
    """A chain of graph ops over `block`'s argument, numpy's result of the same ops, and
    numpy's value of every value of the chain."""
    value, ref = block.args[0], x
    arrays = {value: x}
    for _ in range(rng.integers(1, 5)):
        kind = rng.choice(["transpose", "slice", "reshape"])
        shape = ref.shape
        if kind == "transpose":
            perm = tuple(int(p) for p in rng.permutation(len(shape)))
            ref = ref.transpose(perm)
            op = graph.TransposeOp.create(operands=[value], result_types=[TensorType(f32, ref.shape)],
                                          properties={"perm": graph.i64_array(perm)})
        elif kind == "slice":
            starts = [int(rng.integers(0, d)) for d in shape]
            steps = [int(rng.integers(1, 3)) for _ in shape]
            ref = ref[tuple(slice(s, None, k) for s, k in zip(starts, steps))]
            op = graph.SliceOp.create(operands=[value], result_types=[TensorType(f32, ref.shape)],
                                      properties={"starts": graph.i64_array(starts), "steps": graph.i64_array(steps)})
        else:
            n = ref.size
            dims = [d for d in range(1, n + 1) if n % d == 0]
            first = int(rng.choice(dims))
            new = (first, n // first) if rng.random() < 0.7 else (1, first, 1, n // first)
            ref = ref.reshape(new)
            op = graph.ReshapeOp.create(operands=[value], result_types=[TensorType(f32, new)])
        block.add_op(op)
        value = op.results[0]
        arrays[value] = np.ascontiguousarray(ref)
    return value, ref, arrays


@pytest.mark.parametrize("seed", range(60))
def test_operand_view_reads_the_chains_elements(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 6, size=rng.integers(2, 5)))
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    block = Block(arg_types=[TensorType(f32, shape)])
    value, ref, arrays = _random_chain(rng, block, x)
    base, offset, vshape, strides, _ = operand_view(value)
    # the view starts at the chain's input, or after a reshape that needed a copy
    assert tuple(vshape) == tuple(ref.shape)
    np.testing.assert_array_equal(_through(arrays[base], offset, vshape, strides), ref)


@pytest.mark.parametrize("old, strides, new, expected", [
    ((6, 48), (48, 1), (6, 3, 1, 16), (48, 16, 16, 1)),
    ((4, 6), (1, 4), (24,), None),             # a transposed matrix flattened: a copy
    ((2, 3, 4), (12, 4, 1), (6, 4), (4, 1)),
    ((2, 3, 4), (1, 8, 2), (2, 12), (1, 2)),  # axes 1 and 2 merge: 8 = 4 * 2
    ((2, 3, 4), (1, 9, 2), (2, 12), None),
])
def test_reshape_strides(old, strides, new, expected):
    assert reshape_strides(old, strides, new) == expected


@pytest.mark.parametrize("out_perm", [(2, 0, 1, 3), (0, 2, 1, 3), (1, 3, 0, 2)])
def test_attention_writes_its_output_transposed(out_perm):
    """Q, K, V given as [B, L, H, D] (two batches, three heads), the product transposed by
    its one reader: graph.attention's out_perm, checked against onnxruntime (a GPU
    target's pipeline on the suite's CPU device)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    import adreno_mlir

    f, shape = TensorProto.FLOAT, [2, 5, 3, 8]
    nodes = [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["qt", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "vt"], ["o"]),
             helper.make_node("Transpose", ["o"], ["y"], perm=list(out_perm))]
    g = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info(n, f, shape) for n in "qkv"],
                          [helper.make_tensor_value_info("y", f, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    cm = adreno_mlir.compile(model, layout="nchw", textures=False, target="adreno-740", keep_ir=True)
    ir = cm.stage_ir["graph-opt"]
    assert "out_perm" in ir and "graph.transpose" not in ir, ir
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in "qkv"}
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(cm.run(feeds)["y"], ref, rtol=1e-5, atol=1e-6)
