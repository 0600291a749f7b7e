"""Conversion patterns for the NCHW4c (texture) level: graph ops on `!texture.tensor`
values and `texture.pack`/`unpack` become the kernels of `lowering/kernels/packed.py`.

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
from adreno_mlir.lowering.groups import Group, KernelPattern, LoweringError, group_expression, is_elementwise, where
from adreno_mlir.lowering.kernels.packed import (
    DepthwiseLoad,
    Packed,
    PackedConvSpec,
    PackedDwPoolSpec,
    PackedEpilogue,
    PackedMapSpec,
    PackedMeanSpec,
    PackedPoolSpec,
    PackedResizeSpec,
    PackedSplitSumSpec,
    PackSpec,
    UnpackSpec,
    packed_of,
)
from adreno_mlir.lowering.winograd_lowering import (
    lower_winograd_input,
    lower_winograd_matmul,
    lower_winograd_output,
)
from adreno_mlir.passes.select_kernel_config import conv4c_config_error, dw_tile_groups


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


class PackedMean(EpiloguePattern):
    heads = (graph.GlobalAvgPoolOp, graph.ReduceMeanOp)

    def spec(self, hb, op, out, pepi, cfg):
        # reduce_items > 1: a work-group per (n, channel block) (select-kernel-config's rule)
        spec = PackedMeanSpec(out=out, pepi=pepi, src=packed(op.input), items=cfg.get("reduce_items", 1))
        return spec, [hb.buffer(op.input)], []


class PackedResize(EpiloguePattern):
    heads = (graph.ResizeOp,)

    def spec(self, hb, op, out, pepi, cfg):
        spec = PackedResizeSpec(out=out, pepi=pepi, src=packed(op.input), mode=op.mode.data,
                                coord_mode=op.coordinate_transformation_mode.data,
                                nearest_mode=op.nearest_mode.data, scales=op.spatial_scales(),
                                cubic_a=op.cubic_coeff_a.value.data, exclude_outside=bool(op.exclude_outside.value.data))
        return spec, [hb.buffer(op.input)], []


def conv_input(hb, op) -> tuple[Packed, list[SSAValue], dict]:
    """A conv's input accessor, its head input buffers before the weights... (the input, and
    after weight and bias a scale) and the spec fields that say how to read it: a
    `graph.sum_partials` input is read as its pool partials (the conv adds the tiles), a
    `graph.scale_channels` one as its input times the scale, a `graph.fused {on_load}`
    region's as the depthwise conv it holds computed at each pixel (its input, and after
    weight and bias the depthwise weights and bias), anything else as itself."""
    owner = op.input.owner
    if graph.on_load_region(op.input) is not None:
        if not graph.reads_on_load(op):
            raise LoweringError(f"{where(op)} reads the graph.fused {{on_load}} region at {where(owner)}, which "
                                "only a groups-1 1x1 convolution with stride 1 and no padding can read (it computes "
                                "the region's depthwise values as it loads them); delete on_load to give the region "
                                "a kernel")
        return depthwise_load(hb, owner)
    if isinstance(owner, graph.ScaleChannelsOp):
        groups = getattr(op, "groups", None)
        if groups is not None and groups.value.data != 1:
            raise LoweringError(f"{where(op)}: only a groups-1 convolution can read graph.scale_channels")
        return packed(owner.input), [hb.buffer(owner.input), hb.buffer(owner.scale)], {"scale": packed(owner.scale)}
    if isinstance(owner, graph.SumPartialsOp):
        if not owner.readable_by(op):
            raise LoweringError(f"{where(op)}: only a groups-1 1x1 convolution with stride 1 and no padding can "
                                "read graph.sum_partials")
        return packed(owner.input), [hb.buffer(owner.input)], {"src_tiles": owner.input.type.shape[2]}
    return packed(op.input), [hb.buffer(op.input)], {}


def depthwise_load(hb, region: graph.FusedOp) -> tuple[Packed, list[SSAValue], dict]:
    """conv_input's answer for an on_load region: the depthwise conv's input, its weights
    and bias, and the `dw_load` spec field (the activation as a float4 expression)."""
    dw: graph.Conv2dOp = region.head
    group = Group(region.ops, region)
    expr, extras = group_expression(group) if group.has_epilogue else (PackedEpilogue().expr, [])
    if extras:
        raise LoweringError(f"{where(region)}: an on_load region's activation cannot read other tensors")
    src = packed(dw.input)
    load = DepthwiseLoad(src=src, kernel=tuple(graph.weight_shape(dw.weight)[2:]), strides=graph.ints(dw.strides),
                         pads=graph.ints(dw.pads), dilations=graph.ints(dw.dilations), has_bias=dw.bias is not None,
                         pepi=PackedEpilogue(expr), out_hw=packed(region.result).shape[2:])
    bias = [hb.weight_buffer(dw.bias)] if dw.bias is not None else []
    return src, [hb.buffer(dw.input), hb.weight_buffer(dw.weight), *bias], {"dw_load": load}


def conv_geometry(op, src: Packed, out: Packed, cfg: dict) -> tuple[dict, list[int]]:
    """PackedConvSpec fields shared by the direct and the split-K partial kernel, and
    the launch scalars (input channel blocks, when they are a launch argument)."""
    k = graph.weight_shape(op.weight)[2:]
    depthwise = getattr(op, "groups", None) is not None and op.groups.value.data > 1
    dynamic = not depthwise and src.shape[0] == 1
    scalars: list[int] = []
    if dynamic:  # one kernel for every input channel count
        scalars = [src.shape[1]]
        src = dataclasses.replace(src, shape=(1, 0, *src.shape[2:]))
    co_blocks = cfg["co_blocks"]
    error = conv4c_config_error(op, cfg)
    if error is not None:
        raise LoweringError(f"{where(op)}: {error}")
    return dict(
        src=src, kernel=tuple(k), strides=graph.ints(op.strides), pads=graph.ints(op.pads),
        dilations=graph.ints(op.dilations), depthwise=depthwise, x_block=min(cfg["x_block"], out.shape[3]),
        dw_rows=depthwise and bool(cfg.get("dw_rows", 0)),
        dynamic_ci=dynamic, co_blocks=co_blocks, reduce_items=cfg.get("reduce_items", 1),
        dw_tile=(cfg["dw_tile"], dw_tile_groups(op, cfg)) if cfg.get("dw_tile", 0) else (0, 0),
    ), scalars


class PackedConvolution(EpiloguePattern):
    """Direct NCHW4c convolution: `x_block` pixels and `co_blocks` channel blocks per
    work-item. A `split_k > 1` left in the config means the split-k pass did not run."""

    heads = (graph.Conv2dOp,)

    def group_spec(self, hb, group, out, pepi, cfg):
        return self.spec(hb, group.head, out, pepi, cfg, group.pool_partials)

    def spec(self, hb, op, out, pepi, cfg, pool: graph.PoolPartialsOp | None = None):
        if cfg["split_k"] > 1:
            raise LoweringError(f"{where(op)}: kernel_config split_k = {cfg['split_k']} needs the split-k pass "
                                "before convert-graph-to-opencl")
        src, xs, reads = conv_input(hb, op)
        geometry, scalars = conv_geometry(op, src, out, cfg)
        bias = [hb.weight_buffer(op.bias)] if op.bias is not None else []
        ins = [xs[0], hb.weight_buffer(op.weight), *bias, *xs[1:]]
        if pool is not None:  # fuse-pool-partials: the kernel also writes the tile means
            spec = PackedDwPoolSpec(out=out, pepi=pepi, has_bias=op.bias is not None,
                                    tiles=pool.tiles.value.data, **geometry, **reads)
            return spec, [*ins, hb.alloc(pool.result)], scalars
        spec = PackedConvSpec(out=out, pepi=pepi, has_bias=op.bias is not None, **geometry, **reads)
        return spec, ins, scalars


class SplitKPartial(KernelPattern):
    """Partial sums of a split-K convolution into a [parts][N][C4][OH][OW] f32 buffer."""

    heads = (graph.Conv2dSplitKOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        op: graph.Conv2dSplitKOp = group.head
        parts = op.parts.value.data
        n, c4, oh, ow, _ = op.result.type.shape
        out = Packed((n // parts, c4, oh, ow), "buf", "texture", "f32")
        src, xs, reads = conv_input(hb, op)
        geometry, scalars = conv_geometry(op, src, out, cfg)
        spec = PackedConvSpec(out=out, has_bias=False, split_k=parts, **geometry, **reads)
        hb.launch(spec, [xs[0], hb.weight_buffer(op.weight), *xs[1:], hb.alloc(op.result)], loc, scalars)


class SplitKSum(EpiloguePattern):
    heads = (graph.SplitKSumOp,)

    def spec(self, hb, op, out, pepi, cfg):
        bias = [hb.weight_buffer(op.bias)] if op.bias is not None else []
        spec = PackedSplitSumSpec(out=out, pepi=pepi, split_k=op.parts.value.data, has_bias=op.bias is not None)
        return spec, [hb.buffer(op.partial), *bias], []


class WinogradInput(KernelPattern):
    heads = (texture.WinogradInputOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        lower_winograd_input(hb, group.head, cfg, loc)


class WinogradMatmul(KernelPattern):
    heads = (texture.WinogradMatmulOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        lower_winograd_matmul(hb, group.head, cfg, loc)


class WinogradOutput(KernelPattern):
    """The inverse transform carries the convolution's bias and fused epilogue."""

    heads = (texture.WinogradOutputOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        out = packed(group.result)
        pepi, extras = epilogue(hb, group, out)
        lower_winograd_output(hb, group.head, group.result, out, pepi, extras, cfg, loc)


PACKED_PATTERNS: tuple[KernelPattern, ...] = (
    Pack(), Unpack(), PackedConcat(), PackedElementwise(), PackedPool(), PackedMean(), PackedResize(),
    PackedConvolution(), SplitKPartial(), SplitKSum(), WinogradInput(), WinogradMatmul(), WinogradOutput(),
)
