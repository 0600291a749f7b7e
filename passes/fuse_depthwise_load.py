"""`fuse-depthwise-load`: a 1x1 convolution computes the depthwise convolution it reads
as it loads its input, so the depthwise conv is no kernel of its own.

An inverted-residual block (MobileNetV2/V3, LR-ASPP's backbone) is 1x1 expansion ->
depthwise conv + activation -> 1x1 projection. On a GPU the depthwise kernel does little
work for a launch: on the H200's OpenCL driver a 14x14 one takes about 6.5 us on buffers
and 11-12 us on images, of which 4.5-5 us is the cost of any launch, and no schedule of
the kernel itself got it below that (docs/bench/issue13/README.md). This pass marks the
depthwise conv's region `on_load`:

    %d = graph.fused {on_load} -> !texture.tensor<1x24x14x14x4xf32, ...> {   // no kernel
      %c = graph.conv2d %e, %wd, %bd {groups = 96 : i64, pads = ...}
      %a = graph.clip %c {min = 0.0 : f32, max = 6.0 : f32}
      graph.yield %a
    }
    %p = graph.fused -> ... {
      %q = graph.conv2d %d, %wp, %bp      // loads %e and computes %a at each pixel it reads
      ...
    }

The projection conv then reads the depthwise conv's input, weights and bias instead of
the depthwise output. By default (`dw_tile` > 0, select-kernel-config) each of its
work-groups holds a row segment of pixels times every output channel block, and computes
the segment's depthwise values (window sum and activation) once into local memory, chunk by
chunk of input channel blocks, before accumulating the 1x1 conv from there. With
`dw_tile = 0` (and for 1x1 outputs, which keep their GEMV work-group) each work-item
computes the values it loads itself, output channel blocks / `co_blocks` times over. Either
way the depthwise launch and the round trip of its output are gone.

It applies where

- the depthwise conv (groups = channels, one output channel per input) heads a
  `graph.fused` region (graph-fuse gives every kernel one) whose tail, if any, reads
  nothing from outside it (its activation), on NCHW4c tensors, with no pool partials, and
- its value has one reader: a groups-1 1x1 convolution with stride 1 and no padding
  (the projection), reading it as its input,

with a window of at most `max_window` (5) pixels, and only for GPU targets. On the H200, 64
of the 66 fused layers of MobileNetV2/V3 and LR-ASPP (33 per plan, buffers and images) got
faster, by up to 18 us. The other two are MobileNetV2's
7x7 projection to 320 channels: a 3-pixel `dw_tile`, 2-6 us slower. MobileNetV2's device time
fell 15% on buffers and 23% on images (docs/bench/issue13/README.md, session 4).

A squeeze-excite block's depthwise conv keeps its kernel, since its pool needs every
value. A variant was measured and left out: the kernel wrote only the pool partials, and
the projection computed the depthwise values times the scale on load. It saved the store,
0-2 us per layer, but the projection's work-groups then computed 5x5 windows over up to
960 channels, so the projection got slower: -107 to +7 us per layer, a net loss in
EfficientNet-B0 and LR-ASPP.

A region with a `kernel_config` is left alone (a config
written by hand asks for that kernel). To give a depthwise conv its kernel back, delete
`on_load` from its region. Run after graph-fuse and fuse-pool-partials, before
select-kernel-config.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from adreno_mlir.dialects import graph
from adreno_mlir.passes.select_kernel_config import CONFIG_ATTR
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile


def _only_reader(op: Operation) -> graph.Conv2dOp | None:
    """The one reader of `op`'s value when it is a conv that can compute it on load."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    conv = uses[0].operation
    if not isinstance(conv, graph.Conv2dOp) or conv.input is not op.results[0] or not graph.reads_on_load(conv):
        return None
    parent = conv.parent_op()
    if isinstance(parent, graph.FusedOp) and parent.head is not conv:
        return None
    return conv


class DepthwiseOnLoad(RewritePattern):
    def __init__(self, max_window: int = 0):
        self.max_window = max_window

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.Conv2dOp, rewriter: PatternRewriter, /):
        if not graph.is_depthwise_load(op):
            return
        if self.max_window and max(graph.shape_of(op.weight)[2:4]) > self.max_window:
            return
        region = op.parent_op()
        if (not isinstance(region, graph.FusedOp) or region.head is not op or region.on_load is not None
                or region.partials is not None or CONFIG_ATTR in region.attributes
                or not region.tail_reads_only_region()):
            return
        if _only_reader(region) is None:
            return
        region.attributes["on_load"] = UnitAttr()
        rewriter.has_done_action = True


@dataclass(frozen=True)
class FuseDepthwiseLoad(CheckedPass):
    name = "fuse-depthwise-load"

    target: str = target_option()
    """Target profile: the pass applies to GPU targets only."""
    max_window: int = option(5, minimum=0)
    """Fuse only depthwise convolutions whose window is at most this many pixels high and
    wide (0: any window). 5: the fused 3x3 and 5x5 layers were measured faster (above), but
    the 7x7 ones of timm's fastvit_t8 and mixnet_s cost more on load than their kernels:
    on the H200 with learned defaults, max_window=5 against 0 took fastvit_t8 from 1.98 to
    1.58 ms and mixnet_s from 4.51 to 4.16 ms; six models without larger windows moved
    within the noise (0.993-1.038; docs/bench/issue30/dw-window)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = target_profile(self, op)
        if not profile.is_gpu:
            return
        PatternRewriteWalker(DepthwiseOnLoad(self.max_window), apply_recursively=False).rewrite_module(op)
