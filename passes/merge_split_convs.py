"""`merge-split-convs`: convolutions of a channel split whose outputs are concatenated
become one convolution.

MixNet's mixed convolutions (timm `MixedConv2d`) split the channels into groups, give
each group a convolution of its own (depthwise 3x3, 5x5, 7x7, 9x9; or 1x1 pointwise
"grouped" projections) and concatenate the results:

    %a = graph.slice %x {starts = [0, 0, 0, 0]}  : 1x48x56x56 -> 1x24x56x56
    %b = graph.slice %x {starts = [0, 24, 0, 0]} : 1x48x56x56 -> 1x24x56x56
    %p = graph.conv2d %a, %w3 {groups = 24, pads = [1, 1, 1, 1]}
    %q = graph.conv2d %b, %w5 {groups = 24, pads = [2, 2, 2, 2]}
    %y = graph.concat %p, %q {axis = 1}
  becomes
    %y = graph.conv2d %x, %w35 {groups = 48, pads = [2, 2, 2, 2]}

where %w35 is 48 depthwise 5x5 kernels, the first 24 of them the 3x3 ones zero-padded
around their centre. Pointwise (and any groups-1) parts become one dense convolution
whose weight is block-diagonal over the parts' input channels. Every part reads the same
input rows and columns of the merged convolution, each tap at the same place, so the
merged result is the concatenation exactly (the extra taps multiply by zero).

Why: the split form is 2n + 1 kernels (n slices, n convolutions, the concat) and a batch
norm after the concat stays a kernel of its own, since fold-batchnorm folds only into a
convolution; the merged form is one kernel with the batch norm folded in (the pass runs
before fold-batchnorm). On MixNet-S that is 319 -> about 150 launches. On a GPU, where a
launch costs at least 5-6 us of device time (the H200's event floor, more on Adreno's
driver), the kernels of these small convolutions cost about as much as their launches;
the zero taps cost compute instead. `max-flop-ratio` bounds that: the parts are merged
only if the merged convolution's multiply-adds are at most that many times the parts'
(4 by default on GPU targets; MixNet's 3/5/7/9 depthwise groups come to 1.98x, its
two-way pointwise splits to 2x; on CPU targets 1, i.e. no zero taps). 0 turns the pass off.

Matched: a `graph.concat` on axis 1 of 4-D tensors whose every input is a
`graph.conv2d` read only by the concat, each reading a `graph.slice` of one tensor `x`
that takes a run of channels and everything else (steps 1), the runs in concat order
covering x's channels from 0 to the end; constant weights (and biases, if any); equal
strides, dilations 1; either all groups-1 convolutions or all depthwise ones (groups =
the part's channels) with one channel multiplier; a padding of the merged window (the
span of the parts' taps relative to an output pixel) that gives the parts' output
extent. Anything else is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from adreno_mlir.dialects import graph
from adreno_mlir.graph_constants import constant_value, erase_dead_constants, module_of, new_constant
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile
from adreno_mlir.weights import store_of


def _channel_run(s: graph.SliceOp) -> tuple[int, int] | None:
    """(first channel, channels) of a slice taking a run of channels of a 4-D tensor
    and all of every other axis, else None."""
    x, out = graph.shape_of(s.input), graph.shape_of(s.result)
    starts, steps = graph.ints(s.starts), graph.ints(s.steps)
    if len(x) != 4 or any(st != 1 for st in steps) or any(starts[d] != 0 or out[d] != x[d] for d in (0, 2, 3)):
        return None
    return starts[1], out[1]


def _window(size: int, out: int, stride: int, parts: list[tuple[int, int, int]]):
    """The merged window along one axis: (kernel, pad_begin, pad_end, offsets) where part
    i's taps start at offsets[i] in it, or None where no padding gives the parts' output
    extent. `parts` holds each part's (kernel, pad_begin, pad_end); `size` is the input's
    extent and `out` the output's. Relative to an output pixel's first input row, part i
    reads rows [-pad_begin, kernel - pad_begin): the merged window spans all of them."""
    lo = min(-pb for _, pb, _ in parts)
    hi = max(k - pb for k, pb, _ in parts)
    k, pad = hi - lo, -lo
    # the end padding that gives the parts' output extent: out = (size + pad + end - k) // stride + 1
    end = max(0, (out - 1) * stride - size - pad + k)
    if (size + pad + end - k) // stride + 1 != out:
        return None
    return k, pad, end, [pad - pb for _, pb, _ in parts]


@dataclass
class _Part:
    conv: graph.Conv2dOp
    c0: int
    channels: int
    weight: np.ndarray
    bias: np.ndarray | None


class MergeSplitConvs(RewritePattern):
    def __init__(self, max_flop_ratio: int):
        super().__init__()
        self.max_flop_ratio = max_flop_ratio

    def parts(self, op: graph.ConcatOp) -> tuple[graph.SliceOp, list[_Part]] | None:
        if op.axis.value.data != 1 or len(op.inputs) < 2 or len(graph.shape_of(op.result)) != 4:
            return None
        parts, source, at = [], None, 0
        for v in op.inputs:
            conv = v.owner
            if not isinstance(conv, graph.Conv2dOp) or len(list(v.uses)) != 1:
                return None
            s = conv.input.owner
            if not isinstance(s, graph.SliceOp) or (source is not None and s.input is not source):
                return None
            source = s.input
            run = _channel_run(s)
            if run is None or run[0] != at:
                return None
            w = constant_value(conv.weight)
            b = constant_value(conv.bias) if conv.bias is not None else None
            if w is None or (conv.bias is not None and b is None):
                return None
            parts.append(_Part(conv, at, run[1], w, b))
            at += run[1]
        if at != graph.shape_of(source)[1]:
            return None
        return source, parts

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConcatOp, rewriter: PatternRewriter, /):
        if self.max_flop_ratio == 0:
            return
        found = self.parts(op)
        if found is None:
            return
        x, parts = found
        first = parts[0].conv
        strides = graph.ints(first.strides)
        if any(tuple(graph.ints(p.conv.strides)) != tuple(strides) or tuple(graph.ints(p.conv.dilations)) != (1, 1) for p in parts):
            return
        dense = all(p.conv.groups.value.data == 1 for p in parts)
        multiplier = parts[0].weight.shape[0] // parts[0].channels
        depthwise = all(p.conv.groups.value.data == p.channels and p.weight.shape[0] == multiplier * p.channels
                        for p in parts)
        if not (dense or depthwise):
            return
        xs, ys = graph.shape_of(x), graph.shape_of(op.result)
        windows = []
        for axis in (0, 1):  # kernel rows, then columns
            dims = [(p.weight.shape[2 + axis], graph.ints(p.conv.pads)[axis], graph.ints(p.conv.pads)[2 + axis])
                    for p in parts]
            w = _window(xs[2 + axis], ys[2 + axis], strides[axis], dims)
            if w is None:
                return
            windows.append(w)
        (kh, ph, eh, oh), (kw, pw, ew, ow) = windows
        c_in, c_out = xs[1], ys[1]
        # multiply-adds per output pixel, merged against the parts'
        merged = c_out * (1 if depthwise else c_in) * kh * kw
        split = sum(p.weight.shape[0] * p.weight.shape[1] * p.weight.shape[2] * p.weight.shape[3] for p in parts)
        if merged > self.max_flop_ratio * split:
            return
        weight = np.zeros((c_out, 1 if depthwise else c_in, kh, kw), np.float32)
        bias = np.zeros(c_out, np.float32) if any(p.bias is not None for p in parts) else None
        o = 0
        for p, dy, dx in zip(parts, oh, ow):
            n, _, k1, k2 = p.weight.shape
            cin = slice(0, 1) if depthwise else slice(p.c0, p.c0 + p.channels)
            weight[o:o + n, cin, dy:dy + k1, dx:dx + k2] = p.weight
            if p.bias is not None:
                bias[o:o + n] = p.bias
            o += n
        store = store_of(module_of(op))
        name = first.weight.owner.weight_name or "conv_weight"
        consts = [new_constant(store, weight, f"{name}_merged")]
        if bias is not None:
            consts.append(new_constant(store, bias, f"{name}_merged_bias"))
        conv = graph.Conv2dOp(x, consts[0].result, consts[1].result if bias is not None else None, op.result.type,
                              strides, (ph, pw, eh, ew), (1, 1), c_in if depthwise else 1)
        conv.location = op.location
        rewriter.insert(consts, InsertPoint.before(op))
        rewriter.replace_op(op, conv)
        for p in parts:
            s = p.conv.input.owner
            rewriter.erase(p.conv)
            if not s.result.uses:
                rewriter.erase(s)


@dataclass(frozen=True)
class MergeSplitConvsPass(CheckedPass):
    """One convolution for the convolutions of a channel split that a concat joins
    (see the module docstring)."""

    name = "merge-split-convs"

    target: str = target_option()
    """Target profile: on a CPU target the bound is 1 (no zero taps), see max_flop_ratio."""
    max_flop_ratio: int = option(4, minimum=0)
    """On GPU targets, merge only if the merged convolution has at most this many times the
    parts' multiply-adds (its zero taps); 0: never. CPU targets merge only where that
    costs no multiply-adds: a CPU runtime pays for the zero taps in time and its launches
    are cheap against its kernels (PoCL, this project's 2-core CPU, mixnet_s: device time
    36.7 ms split, 66.7 merged at 4; wall time 52.5 / 54.6 ms)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ratio = self.max_flop_ratio if target_profile(self, op).is_gpu else min(self.max_flop_ratio, 1)
        PatternRewriteWalker(MergeSplitConvs(ratio), apply_recursively=False).rewrite_module(op)
        # the parts' weights are dead now
        erase_dead_constants(op)
