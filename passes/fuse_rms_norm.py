"""`fuse-rms-norm`: an RMS normalization read only by quantized matrix products becomes part of
them (`graph.matmul_nbits`' `norm_scale` / `norm_epsilon`).

A decoder normalizes the residual stream before every projection (RMSNorm: onnxruntime's
SimplifiedLayerNormalization and the normalized output of SkipSimplifiedLayerNormalization),
a kernel of its own whose only readers are the next quantized products (q/k/v, or gate and
up). Those kernels read all of their input row anyway, so they can sum its squares as they
go and scale their result by 1 / sqrt(mean + epsilon) at the end, multiplying each input
element by its gamma as they load it. That removes one launch per normalization (two per
decoder layer), which at one token a run is a launch-bound step's largest saving:

    %n = graph.layer_norm %x, %gamma {axis = 2, center = 0, epsilon = 1e-5}
    %q = graph.matmul_nbits %n, %w, %s ...
  becomes
    %q = graph.matmul_nbits %x, %w, %s norm %gamma {norm_epsilon = 1e-5} ...

Matched: `graph.layer_norm` with `center = 0` over the last axis, without a bias, whose
every reader is a `graph.matmul_nbits` reading it as `a` without a normalization of its own.
Anything else reading the normalized value keeps the normalization as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from adreno_mlir.dialects import graph
from adreno_mlir.pass_options import CheckedPass


class FuseRMSNormIntoQuantizedMatMul(RewritePattern):
    def match_and_rewrite(self, op, rewriter: PatternRewriter, /):
        if not isinstance(op, graph.LayerNormOp) or op.center.value.data != 0 or op.bias is not None:
            return
        shape = graph.shape_of(op.result)
        if op.axis.value.data != len(shape) - 1 or tuple(graph.shape_of(op.scale)) != (shape[-1],):
            return
        users = [u.operation for u in op.result.uses]
        if not users or not all(isinstance(u, graph.MatMulNBitsOp) and u.a is op.result and u.norm_scale is None
                                and u.packed is not op.result for u in users):
            return
        for user in users:
            fused = graph.MatMulNBitsOp(
                operands=[op.input, user.packed, user.scales, [user.zero_points] if user.zero_points else [],
                          [user.bias] if user.bias else [], [op.scale]],
                result_types=[user.result.type],
                properties={"bits": user.bits, "block_size": user.block_size, "norm_epsilon": op.epsilon},
                attributes=dict(user.attributes))
            fused.location = user.location
            rewriter.replace_op(user, fused)
        rewriter.erase_op(op)


@dataclass(frozen=True)
class FuseRMSNorm(CheckedPass):
    name = "fuse-rms-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseRMSNormIntoQuantizedMatMul(), apply_recursively=False).rewrite_module(op)
