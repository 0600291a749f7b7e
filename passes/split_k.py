"""`split-k`: carry out the split-K that a convolution's `kernel_config` asks for.

An NCHW4c convolution with `split_k = S > 1` becomes

    %p = graph.conv2d_split_k %x, %w {parts = S, ...}   // S partial sums, f32 buffer
    %y = graph.split_k_sum %p, %bias {parts = S}        // + bias + the fused epilogue

When the convolution heads a `graph.fused` region (graph-fuse gives every kernel one),
the sum takes its place there, so the epilogue stays fused into the summing kernel, and
the partial sums get a region of their own before it. The partial-sum kernel keeps the
convolution's blocking keys (and `compute`); the sum keeps `work_group` and `compute`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from adreno_mlir.dialects import graph, texture
from adreno_mlir.lowering.families import CONFIG_ATTR, COMMON_KEYS, config_of, kernel_op, set_config, validate_config
from adreno_mlir.lowering.families.conv4c import CONV4C


class SplitConvolution(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.Conv2dOp, rewriter: PatternRewriter, /):
        t = op.result.type
        if not isinstance(t, texture.TextureTensorType):
            return
        cfg = config_of(op)
        if not CONV4C.matches(op) or not cfg:
            return
        cfg = validate_config(op, cfg)  # a clear error for a split of "2", of a depthwise conv, ...
        parts = CONV4C.split_parts(cfg)
        if parts <= 1:
            return
        kop = kernel_op(op)
        n, c4, h, w, _ = t.shape
        partial_type = texture.TextureTensorType.make((parts * n, c4, h, w, 4), f32, "nchw4c", "global")
        partial = graph.Conv2dSplitKOp.create(
            operands=[op.input, op.weight], result_types=[partial_type],
            properties={"parts": IntegerAttr(parts, 64), "strides": op.strides, "pads": op.pads,
                        "dilations": op.dilations})
        partial.location = op.location
        rewriter.insert(partial, InsertPoint.before(kop))
        partials = graph.FusedOp.wrap([partial], rewriter)  # a kernel of its own: its region
        set_config(partials, CONV4C.split_head_config(cfg))
        total = graph.SplitKSumOp.create(
            operands=[partials.result, *([] if op.bias is None else [op.bias])], result_types=[t],
            properties={"parts": IntegerAttr(parts, 64)})
        total.location = op.location
        rewriter.replace(op, total)
        sum_cfg = {k: v for k, v in cfg.items() if k in COMMON_KEYS}
        if sum_cfg:
            set_config(total, sum_cfg)
        else:
            kernel_op(total).attributes.pop(CONFIG_ATTR, None)


@dataclass(frozen=True)
class SplitK(ModulePass):
    name = "split-k"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitConvolution(), apply_recursively=False).rewrite_module(op)
