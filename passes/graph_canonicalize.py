"""`graph-canonicalize`: local cleanups of the graph dialect.

- identity reshapes/transposes/clips and single-input concats disappear;
- reshape(reshape(x)) and transpose(transpose(x)) collapse into one op;
- element-wise ops and reshapes whose operands are all constants are evaluated with
  numpy (small results inline, larger ones into the weight store);
- unused pure ops are erased by the greedy driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from adreno_mlir.weights import store_of
from adreno_mlir.dialects import graph
from adreno_mlir.passes.constants import constant_value, module_of, new_constant

FOLD_LIMIT = 1 << 16
"""Largest constant result (elements) the canonicalizer materialises."""


def make_constant(rewriter: PatternRewriter, op: Operation, arr: np.ndarray, hint: str) -> None:
    """Replace `op` by a constant holding `arr`."""
    rewriter.replace(op, new_constant(store_of(module_of(op)), arr, hint))


_NUMPY_UNARY = {
    graph.ReluOp: lambda x, op: np.maximum(x, 0),
    graph.SigmoidOp: lambda x, op: 1 / (1 + np.exp(-x)),
    graph.TanhOp: lambda x, op: np.tanh(x),
    graph.ExpOp: lambda x, op: np.exp(x),
    graph.NegOp: lambda x, op: -x,
    graph.AbsOp: lambda x, op: np.abs(x),
    graph.SqrtOp: lambda x, op: np.sqrt(x),
    graph.ClipOp: lambda x, op: np.clip(x, op.min.value.data, op.max.value.data),
}
_NUMPY_BINARY = {
    graph.AddOp: np.add, graph.SubOp: np.subtract, graph.MulOp: np.multiply, graph.DivOp: np.divide,
}


class FoldConstantElementwise(RewritePattern):
    """Evaluate element-wise ops and reshapes whose operands are all constants."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        fold = _NUMPY_UNARY.get(type(op))
        binary = _NUMPY_BINARY.get(type(op))
        if fold is None and binary is None and not isinstance(op, graph.ReshapeOp):
            return
        if not op.operands or not all(isinstance(v.owner, graph.ConstantOp) for v in op.operands):
            return
        out_shape = graph.shape_of(op.results[0])
        if int(np.prod(out_shape)) > FOLD_LIMIT:
            return
        args = [constant_value(v) for v in op.operands]
        with np.errstate(all="ignore"):
            if isinstance(op, graph.ReshapeOp):
                result = args[0].reshape(out_shape)
            elif binary is not None:
                result = binary(args[0], args[1])
            else:
                result = fold(args[0], op)
        make_constant(rewriter, op, np.asarray(result, np.float32).reshape(out_shape), "folded")


class RemoveIdentityReshape(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter, /):
        if op.input.type == op.result.type:
            rewriter.replace(op, [], [op.input])
        elif isinstance(op.input.owner, graph.ReshapeOp):
            inner = op.input.owner
            rewriter.replace(op, graph.ReshapeOp(operands=[inner.input], result_types=[op.result.type]))


class RemoveIdentityTranspose(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter, /):
        perm = graph.ints(op.perm)
        if list(perm) == list(range(len(perm))):
            rewriter.replace(op, [], [op.input])
        elif isinstance(op.input.owner, graph.TransposeOp):
            inner = op.input.owner
            first = graph.ints(inner.perm)
            composed = [first[p] for p in perm]
            rewriter.replace(op, graph.TransposeOp(
                operands=[inner.input], result_types=[op.result.type],
                properties={"perm": graph.i64_array(composed)}))


class RemoveNoOpClip(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ClipOp, rewriter: PatternRewriter, /):
        if op.min.value.data == -np.inf and op.max.value.data == np.inf:
            rewriter.replace(op, [], [op.input])


class RemoveSingleConcat(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConcatOp, rewriter: PatternRewriter, /):
        if len(op.inputs) == 1:
            rewriter.replace(op, [], [op.inputs[0]])


@dataclass(frozen=True)
class GraphCanonicalize(ModulePass):
    name = "graph-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([
                RemoveIdentityReshape(),
                RemoveIdentityTranspose(),
                RemoveNoOpClip(),
                RemoveSingleConcat(),
                FoldConstantElementwise(),
            ]),
            apply_recursively=True,
        ).rewrite_module(op)
