"""Conversion patterns for the NCHW4c (texture) level: graph ops on `!texture.tensor`
values and `texture.pack`/`unpack` become the kernels of `lowering/kernels/packed*.py`.

The memory a value was given by annotate-texture-scope (global buffer or image, its
mapping, f32/f16 storage) becomes its kernels' `Packed` accessor, so one generator
serves buffers and images, and a kernel is shared by launches whose operands live in
the same kind of memory.
"""

from __future__ import annotations

import dataclasses

from xdsl.ir import SSAValue

from adreno_mlir.dialects import graph, texture
from adreno_mlir.lowering.expr import In
from adreno_mlir.lowering.groups import Group, KernelPattern, group_expression, is_elementwise
from adreno_mlir.lowering.kernels.packed import Packed, PackedEpilogue, packed_of
from adreno_mlir.lowering.kernels.packed_conv import PackedSplitSumSpec
from adreno_mlir.lowering.kernels.packed_layout import PackSpec, UnpackSpec
from adreno_mlir.lowering.kernels.packed_map import PackedMapSpec
from adreno_mlir.lowering.kernels.packed_pool import PackedPoolSpec
from adreno_mlir.lowering.kernels.packed_resize import PackedResizeSpec
from adreno_mlir.lowering.winograd_lowering import (
    lower_winograd_input,
    lower_winograd_output,
)


packed = packed_of


def _broadcast(value: SSAValue, out: Packed) -> tuple[bool, bool, bool]:
    n, c4, h, w = packed(value).shape
    on, oc4, oh, ow = out.shape
    if c4 != oc4:
        raise ValueError(f"packed operand with {c4} channel blocks cannot broadcast to {oc4}")
    return (n == 1 and on > 1, h == 1 and oh > 1, w == 1 and ow > 1)


def epilogue(hb, group: Group, out: Packed) -> tuple[PackedEpilogue, list[SSAValue]]:
    """The group's element-wise tail as a float4 expression; extra inputs broadcast over
    the axes where they have extent 1."""
    if not group.has_epilogue:
        return PackedEpilogue(), []
    e, extras = group_expression(group)
    pepi = PackedEpilogue(e, tuple((packed(v), _broadcast(v, out)) for v in extras))
    return pepi, [hb.buffer(v) for v in extras]


def at_channel_offset(hb, value: SSAValue, spec, scalars: list[int]):
    """`spec` and its launch scalars for writing `value`: plus the `c4_offset`
    argument when plan-memory placed `value` at a non-zero channel block of shared
    storage (a launch argument, so the writers of every slice share one kernel)."""
    offset = hb.channel_offset(value)
    if not offset:
        return spec, scalars
    return dataclasses.replace(spec, offset_arg=True), [*scalars, offset]


class Pack(KernelPattern):
    heads = (texture.PackOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        op = group.head
        spec = PackSpec(out=packed(op.result), channels=graph.shape_of(op.input)[1])
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


class Unpack(KernelPattern):
    heads = (texture.UnpackOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        op = group.head
        src = packed(op.input)
        spec = UnpackSpec(out=src, src=src, channels=graph.shape_of(op.result)[1])
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


class PackedConcat(KernelPattern):
    heads = (graph.ConcatOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        """One copy per input into its channel slice, except for the inputs plan-memory
        placed there (their kernels wrote them in place: `storage` attributes). A copied
        input that lives at a channel offset of other storage is read from there."""
        op = group.head
        out = packed(op.result)
        offset = 0
        dst = hb.alloc(op.result)
        base = hb.channel_offset(op.result)
        for v in op.inputs:
            src = packed(v)
            if not hb.storage.in_place(v, op.result, offset):
                src_offset = hb.channel_offset(v)
                spec = PackedMapSpec(out=out, pepi=PackedEpilogue(In(0), ((src, (False, False, False)),)),
                                     shape=src.shape, offset_arg=True, src_offset_arg=src_offset > 0)
                hb.launch(spec, [hb.buffer(v), dst], loc, [*([src_offset] if src_offset else []), base + offset])
            offset += src.shape[1]


class PackedSlice(KernelPattern):
    """A slice of whole channel blocks (graph.SliceOp.channel_block_slice): a copy of the
    blocks from the input's channel offset (`src_c4_offset`: the slice's first block, plus
    the input's own offset in shared storage), written at the result's offset if it has one."""

    heads = (graph.SliceOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        op = group.head
        out, src = packed(op.result), packed(op.input)
        src_offset = graph.ints(op.starts)[1] // 4 + hb.channel_offset(op.input)
        spec = PackedMapSpec(out=out, pepi=PackedEpilogue(In(0), ((src, (False, False, False)),)),
                             shape=out.shape, src_offset_arg=True)
        spec, scalars = at_channel_offset(hb, op.result, spec, [src_offset])
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc, scalars)


class EpiloguePattern(KernelPattern):
    """Packed kernels with a fused float4 epilogue: `spec(...)` builds the head's spec."""

    packed = True

    def lower(self, hb, group, cfg, loc):
        out = packed(group.result)
        pepi, extras = epilogue(hb, group, out)
        spec, ins, scalars = self.group_spec(hb, group, out, pepi, cfg)
        spec, scalars = at_channel_offset(hb, group.result, spec, scalars)
        hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc, scalars)

    def group_spec(self, hb, group: Group, out: Packed, pepi: PackedEpilogue, cfg: dict):
        """The spec, head inputs and launch scalars of `group`'s kernel: `spec` of its head,
        unless the pattern needs more of the group."""
        return self.spec(hb, group.head, out, pepi, cfg)

    def spec(self, hb, op, out: Packed, pepi: PackedEpilogue, cfg: dict):
        raise NotImplementedError


class PackedElementwise(EpiloguePattern):
    def matches(self, group):
        return is_elementwise(group.head) and group.packed

    def spec(self, hb, op, out, pepi, cfg):
        return PackedMapSpec(out=out, pepi=pepi, shape=out.shape), [], []


class PackedPool(EpiloguePattern):
    heads = (graph.MaxPoolOp, graph.AvgPoolOp)

    def spec(self, hb, op, out, pepi, cfg):
        is_max = isinstance(op, graph.MaxPoolOp)
        spec = PackedPoolSpec(
            out=out, pepi=pepi, src=packed(op.input), kind="max" if is_max else "avg",
            kernel=graph.ints(op.kernel_shape), strides=graph.ints(op.strides), pads=graph.ints(op.pads),
            dilations=graph.ints(op.dilations) if is_max else (1, 1),
            count_include_pad=bool(not is_max and op.count_include_pad.value.data),
        )
        return spec, [hb.buffer(op.input)], []


class PackedResize(EpiloguePattern):
    heads = (graph.ResizeOp,)

    def spec(self, hb, op, out, pepi, cfg):
        spec = PackedResizeSpec(out=out, pepi=pepi, src=packed(op.input), mode=op.mode.data,
                                coord_mode=op.coordinate_transformation_mode.data,
                                nearest_mode=op.nearest_mode.data, scales=op.spatial_scales(),
                                cubic_a=op.cubic_coeff_a.value.data, exclude_outside=bool(op.exclude_outside.value.data))
        return spec, [hb.buffer(op.input)], []


class SplitKSum(EpiloguePattern):
    heads = (graph.SplitKSumOp,)

    def spec(self, hb, op, out, pepi, cfg):
        bias = [hb.weight_buffer(op.bias)] if op.bias is not None else []
        spec = PackedSplitSumSpec(out=out, pepi=pepi, parts=op.parts.value.data, has_bias=op.bias is not None)
        return spec, [hb.buffer(op.partial), *bias], []


class WinogradInput(KernelPattern):
    heads = (texture.WinogradInputOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        lower_winograd_input(hb, group.head, cfg, loc)


class WinogradOutput(KernelPattern):
    """The inverse transform carries the convolution's bias and fused epilogue."""

    heads = (texture.WinogradOutputOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        out = packed(group.result)
        pepi, extras = epilogue(hb, group, out)
        lower_winograd_output(hb, group.head, group.result, out, pepi, extras, cfg, loc)


PACKED_PATTERNS: tuple[KernelPattern, ...] = (
    Pack(), Unpack(), PackedConcat(), PackedSlice(), PackedElementwise(), PackedPool(), PackedResize(), SplitKSum(),
    WinogradInput(), WinogradOutput(),
)
"""The NCHW4c patterns of kernels whose family has no schedule keys; the convolution,
mean and Winograd-product patterns are their families' (lowering/families/)."""
