"""`fold-batchnorm`: inference batch normalization disappears.

A batch norm that is the only user of a convolution with constant weights is folded
into them (w' = w * s, b' = (b - mean) * s + beta, s = scale / sqrt(var + eps)); any
other batch norm becomes a per-channel multiply and add with constants computed at
compile time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from adreno_mlir.weights import store_of
from adreno_mlir.dialects import graph
from adreno_mlir.graph_constants import constant_value, erase_dead_constants, module_of, new_constant


def _bn_affine(op: graph.BatchNormOp) -> tuple[np.ndarray, np.ndarray] | None:
    params = [constant_value(v) for v in (op.scale, op.bias, op.mean, op.var)]
    if any(p is None for p in params):
        return None
    scale, beta, mean, var = (p.astype(np.float64) for p in params)
    s = scale / np.sqrt(var + op.epsilon.value.data)
    return s, beta - mean * s


def _constant(op, arr: np.ndarray, hint: str) -> graph.ConstantOp:
    return new_constant(store_of(module_of(op)), arr, hint)


class FoldIntoConv(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter, /):
        conv = op.input.owner
        if not isinstance(conv, graph.Conv2dOp) or len(list(op.input.uses)) != 1:
            return
        affine = _bn_affine(op)
        w = constant_value(conv.weight)
        b = constant_value(conv.bias) if conv.bias is not None else np.zeros(graph.shape_of(conv.weight)[0], np.float32)
        if affine is None or w is None or b is None:
            return
        s, shift = affine
        name = conv.weight.owner.weight_name or "conv_weight"
        new_w = _constant(op, w * s.reshape(-1, 1, 1, 1), f"{name}_bn")
        new_b = _constant(op, b * s + shift, f"{name}_bn_bias")
        new_conv = graph.Conv2dOp(
            conv.input, new_w.result, new_b.result, op.result.type,
            graph.ints(conv.strides), graph.ints(conv.pads), graph.ints(conv.dilations),
            conv.groups.value.data,
        )
        new_conv.location = conv.location
        rewriter.insert([new_w, new_b], InsertPoint.before(conv))
        rewriter.replace(op, new_conv)
        rewriter.erase(conv)


class DecomposeBatchNorm(RewritePattern):
    """x * s + shift with per-channel constants shaped to broadcast over axis 1."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter, /):
        affine = _bn_affine(op)
        if affine is None:
            return
        s, shift = affine
        rank = len(graph.shape_of(op.input))
        shape = (-1,) + (1,) * (rank - 2)
        sc = _constant(op, s.reshape(shape), "bn_scale")
        sh = _constant(op, shift.reshape(shape), "bn_shift")
        mul = graph.MulOp(op.input, sc.result, op.result.type)
        add = graph.AddOp(mul.result, sh.result, op.result.type)
        mul.location = add.location = op.location
        rewriter.replace(op, [sc, sh, mul, add])


@dataclass(frozen=True)
class FoldBatchNorm(ModulePass):
    name = "fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldIntoConv(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(DecomposeBatchNorm(), apply_recursively=False).rewrite_module(op)
        # the unfolded weights and statistics are dead now
        erase_dead_constants(op)
