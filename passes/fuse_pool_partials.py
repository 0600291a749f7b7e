"""`fuse-pool-partials`: the kernel that computes a tensor also pools it, so a
squeeze-excite block's global average pool is no kernel of its own.

A squeeze-excite block is depthwise conv (+ activation) -> global average pool -> 1x1
conv -> activation -> 1x1 conv -> sigmoid -> scale. On a GPU the pool is a launch that
reads a few thousand pixels: too little work to pay for a launch (~5 us each on the
H200's OpenCL driver, 9-16 of them in MobileNetV3 and EfficientNet), and a separate
kernel always rereads the tensor the depthwise kernel has just written. This pass moves
the pool into the depthwise kernel's region:

    %x, %p = graph.fused -> !texture.tensor<1x60x14x14x4xf32, ...>, !texture.tensor<1x60x4x1x4xf32, ...> {
      %c = graph.conv2d %in, %w, %b {groups = 240 : i64, ...}
      %h = graph.hard_swish %c
      %t = graph.pool_partials %h {tiles = 4 : i64}
      graph.yield %h, %t
    }
    %m = graph.sum_partials %p : ... -> !texture.tensor<1x60x1x1x4xf32, ...>
    %f = graph.fused { graph.conv2d %m, %w1, %b1 ... }   // reads the 4 tiles and adds them

The depthwise kernel then runs a work-group per (tile, channel block); each work-group
writes its pixels as before and the sum of its tile, divided by H*W, from local memory.
The first FC adds the `tiles` partial means of each channel as it loads its input
(`graph.sum_partials` has no kernel).

It applies where

- the pool is a `graph.global_avg_pool` of an NCHW4c tensor whose only reader is a
  groups-1 1x1 convolution (with stride 1 and no padding: a squeeze-excite FC), and
- the tensor is computed by a depthwise convolution's `graph.fused` region with its
  activation fused (the usual squeeze-excite input; a depthwise conv without one, a
  region of one op, keeps its pool kernel: that case was never measured) that has no
  partials yet,

and only for GPU targets: CPUs run the serial pool and a separate kernel as fast
(select-kernel-config's reduce rule). `tiles` (the op attribute) is chosen so that the
depthwise kernel keeps about `TARGET_ITEMS` work-items (the pass options `target-items` and
`pixels-per-item` change the rule); edit it
in the IR (and the partials type) to try another. Run after graph-fuse and before
select-kernel-config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, f32
from xdsl.ir import Block, Operation, Region
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from adreno_mlir.dialects import graph, texture
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile
from adreno_mlir.lowering.families import CONFIG_ATTR
from adreno_mlir.lowering.families.conv4c import pool_items

TARGET_ITEMS = 65536
"""Work-items the pooled depthwise kernel aims for (with `pool_items` per work-group)."""
PIXELS_PER_ITEM = 1
"""The fewest output pixels per work-item the tiling leaves (more tiles would idle work-items).

On the H200 (a sweep over MobileNetV3-Small/Large and EfficientNet-B0 (bench/pool_tiles_sweep.py), buffers
and images, docs/bench/issue13/s3-pool-sweep.log) 65536 work-items and one pixel each gave
the least device time summed over the six runs (5.71 ms, as did 65536 / 2), against 5.87 for
32768 / 2 and 5.98 for 32768 / 4; its depthwise kernels were the fastest (mobilenet_v3_small
on buffers 85 us against 116), while the first FCs, which add more tiles, were slower."""


def pool_tiles(n: int, c4: int, pixels: int, target_items: int = TARGET_ITEMS,
               pixels_per_item: int = PIXELS_PER_ITEM) -> int:
    """Tiles per channel block: no more than leave each work-item `pixels_per_item` pixels
    (small planes get fewer: a 7x7 plane is one or two tiles of 16 work-items), and no more
    work-groups than `target_items` work-items need."""
    items = pool_items(pixels)
    return max(1, min(math.ceil(pixels / (pixels_per_item * items)), math.ceil(target_items / (items * n * c4))))


def _pool_kernel(pool: graph.GlobalAvgPoolOp) -> Operation | None:
    """The pool's kernel: its region of its own (graph-fuse), or the pool itself when it is
    in none; None when the pool is fused with a tail or a config asks for its kernel."""
    kernel = pool.parent_op()
    if not isinstance(kernel, graph.FusedOp):
        return pool
    if kernel.ops != [pool] or CONFIG_ATTR in kernel.attributes:
        return None
    return kernel


def _se_fc(kernel: Operation) -> graph.Conv2dOp | None:
    """The pool's only reader when it is a squeeze-excite FC (a groups-1 1x1 conv)."""
    value = kernel.results[0]
    users = {u.operation for u in value.uses}
    if len(users) != 1:
        return None
    fc = users.pop()
    if not isinstance(fc, graph.Conv2dOp) or fc.input is not value or not graph.SumPartialsOp.readable_by(fc):
        return None
    return fc


def _depthwise_region(value) -> graph.FusedOp | None:
    owner = value.owner
    if not isinstance(owner, graph.FusedOp) or owner.partials is not None or len(owner.ops) < 2:
        return None  # no region, partials already, or no activation (a region of one op: not measured)
    head = owner.head
    if not isinstance(head, graph.Conv2dOp) or head.groups.value.data <= 1:
        return None
    if graph.shape_of(head.input)[1] != head.groups.value.data:
        return None  # grouped, not depthwise
    return owner


@dataclass
class PoolInProducer(RewritePattern):
    target_items: int = TARGET_ITEMS
    pixels_per_item: int = PIXELS_PER_ITEM

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GlobalAvgPoolOp, rewriter: PatternRewriter, /):
        t = op.input.type
        if not isinstance(t, texture.TextureTensorType) or len(t.shape) != 5:
            return
        region = _depthwise_region(op.input)
        kernel = _pool_kernel(op)
        if region is None or kernel is None or _se_fc(kernel) is None:
            return
        n, c4, h, w, _ = t.shape
        tiles = pool_tiles(n, c4, h * w, self.target_items, self.pixels_per_item)
        partials_type = texture.TextureTensorType.make((n, c4, tiles, 1, 4), f32, "nchw4c", "global")

        # A new region with the partials result: the old one's ops move over.
        old_yield = region.body.block.last_op
        stored = old_yield.values[0]
        block = Block()
        new = graph.FusedOp(region.result.type, Region(block), partials_type)
        new.location = region.location
        new.attributes.update(region.attributes)
        for o in list(region.body.block.ops):
            if isinstance(o, graph.YieldOp):
                continue
            o.detach()
            block.add_op(o)
        pool = graph.PoolPartialsOp.create(operands=[stored], result_types=[partials_type],
                                           properties={"tiles": IntegerAttr(tiles, 64)})
        pool.location = op.location
        block.add_op(pool)
        block.add_op(graph.YieldOp(stored, pool.result))
        rewriter.insert_op(new, InsertPoint.before(region))
        region.result.replace_all_uses_with(new.result)
        new.result.name_hint = region.result.name_hint
        rewriter.erase_op(region)

        total = graph.SumPartialsOp.create(operands=[new.partials], result_types=[op.result.type])
        total.location = op.location
        total.result.name_hint = kernel.results[0].name_hint
        rewriter.replace_op(kernel, total)


@dataclass(frozen=True)
class FusePoolPartials(CheckedPass):
    name = "fuse-pool-partials"

    target: str = target_option()
    """Target profile: the pass applies to GPU targets only."""
    target_items: int = option(TARGET_ITEMS, minimum=1)
    """Work-items a pooled depthwise kernel aims for (more tiles, up to `pixels_per_item`)."""
    pixels_per_item: int = option(PIXELS_PER_ITEM, minimum=1)
    """The fewest output pixels per work-item that the tiling leaves."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = target_profile(self, op)
        if not profile.is_gpu:
            return
        PatternRewriteWalker(PoolInProducer(self.target_items, self.pixels_per_item),
                             apply_recursively=False).rewrite_module(op)
