"""Lowering of the NCHW4c (texture) level: graph ops on `!texture.tensor` values and
`texture.pack`/`unpack` become the kernels of `lowering/kernels/packed.py`.

The memory a value was given by annotate-texture-scope (global buffer or image, its
mapping, f32/f16 storage) becomes its kernels' `Packed` accessor, so one generator
serves buffers and images, and a kernel is shared by launches whose operands live in
the same kind of memory.
"""

from __future__ import annotations

import dataclasses

from xdsl.dialects.builtin import f16
from xdsl.ir import SSAValue

from adreno_mlir.dialects import graph, texture
from adreno_mlir.lowering.expr import In
from adreno_mlir.lowering.kernels.packed import (
    Packed,
    PackedConvSpec,
    PackedEpilogue,
    PackedMapSpec,
    PackedMeanSpec,
    PackedPoolSpec,
    PackedResizeSpec,
    PackedSplitSumSpec,
    PackSpec,
    UnpackSpec,
)


def packed(value: SSAValue) -> Packed:
    t = value.type
    assert isinstance(t, texture.TextureTensorType), t
    n, c4, h, w, _ = t.shape
    element = "f16" if t.element == f16 else "f32"
    if t.is_image:
        return Packed((n, c4, h, w), "img", t.scope_name, element)
    return Packed((n, c4, h, w), "buf", "texture", element)


def _broadcast(value: SSAValue, out: Packed) -> tuple[bool, bool, bool]:
    n, c4, h, w = packed(value).shape
    on, oc4, oh, ow = out.shape
    if c4 != oc4:
        raise ValueError(f"packed operand with {c4} channel blocks cannot broadcast to {oc4}")
    return (n == 1 and on > 1, h == 1 and oh > 1, w == 1 and ow > 1)


def epilogue(hb, group, out: Packed) -> tuple[PackedEpilogue, list[SSAValue]]:
    """The group's element-wise tail as a float4 expression; extra inputs broadcast over
    the axes where they have extent 1."""
    from adreno_mlir.lowering.convert_graph_to_opencl import _is_elementwise, group_expression

    if len(group.ops) == 1 and not _is_elementwise(group.head):
        return PackedEpilogue(), []
    e, extras = group_expression(group)
    pepi = PackedEpilogue(e, tuple((packed(v), _broadcast(v, out)) for v in extras))
    return pepi, [hb.buffer(v) for v in extras]


def lower_packed(hb, group, loc) -> None:
    head = group.head
    if isinstance(head, texture.PackOp):
        out = packed(head.result)
        spec = PackSpec(out=out, channels=graph.shape_of(head.input)[1])
        hb.launch(spec, [hb.buffer(head.input), hb.alloc(head.result)], loc)
        return
    if isinstance(head, texture.UnpackOp):
        src = packed(head.input)
        spec = UnpackSpec(out=src, src=src, channels=graph.shape_of(head.result)[1])
        hb.launch(spec, [hb.buffer(head.input), hb.alloc(head.result)], loc)
        return
    out = packed(group.result)
    if isinstance(head, graph.ConcatOp):
        offset = 0
        dst = hb.alloc(head.result)
        for v in head.inputs:
            src = packed(v)
            spec = PackedMapSpec(out=out, pepi=PackedEpilogue(In(0), ((src, (False, False, False)),)),
                                 shape=src.shape, offset_arg=True)
            hb.launch(spec, [hb.buffer(v), dst], loc, [offset])
            offset += src.shape[1]
        return
    pepi, extras = epilogue(hb, group, out)
    if isinstance(head, graph.Conv2dOp):
        _lower_conv(hb, head, group, out, pepi, extras, loc)
        return
    if isinstance(head, (graph.MaxPoolOp, graph.AvgPoolOp)):
        is_max = isinstance(head, graph.MaxPoolOp)
        spec = PackedPoolSpec(
            out=out, pepi=pepi, src=packed(head.input), kind="max" if is_max else "avg",
            kernel=graph.ints(head.kernel_shape), strides=graph.ints(head.strides), pads=graph.ints(head.pads),
            dilations=graph.ints(head.dilations) if is_max else (1, 1),
            count_include_pad=bool(not is_max and head.count_include_pad.value.data),
        )
        ins = [hb.buffer(head.input)]
    elif isinstance(head, (graph.GlobalAvgPoolOp, graph.ReduceMeanOp)):
        spec = PackedMeanSpec(out=out, pepi=pepi, src=packed(head.input))
        ins = [hb.buffer(head.input)]
    elif isinstance(head, graph.ResizeOp):
        scales = head.spatial_scales()
        spec = PackedResizeSpec(out=out, pepi=pepi, src=packed(head.input), mode=head.mode.data,
                                coord_mode=head.coordinate_transformation_mode.data,
                                nearest_mode=head.nearest_mode.data, scales=scales)
        ins = [hb.buffer(head.input)]
    else:  # an element-wise chain
        spec = PackedMapSpec(out=out, pepi=pepi, shape=out.shape)
        ins = []
    hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc)


def _split_k(hb, out: Packed, x_block: int, ci4: int, depthwise: bool) -> int:
    """How many parts to split a convolution's input channels into: enough for about
    `split_k_items` work-items when the grid alone is smaller (late 7x7 layers), while
    every part keeps at least 8 channel blocks."""
    target = hb.schedule.split_k_items
    n, c4, h, w = out.shape
    items = -(-w // x_block) * h * n * c4
    if depthwise or not target or items >= target:
        return 1
    return max(1, min(8, -(-target // items), ci4 // 8))


def _lower_conv(hb, head: graph.Conv2dOp, group, out: Packed, pepi: PackedEpilogue, extras, loc) -> None:
    from xdsl.dialects.builtin import f32

    from adreno_mlir.dialects import opencl

    k = graph.weight_shape(head.weight)[2:]
    src = packed(head.input)
    ci4 = src.shape[1]
    depthwise = head.groups.value.data > 1
    dynamic = not depthwise and src.shape[0] == 1
    scalars: list[int] = []
    if dynamic:  # one kernel for every input channel count
        scalars = [ci4]
        src = dataclasses.replace(src, shape=(1, 0, *src.shape[2:]))
    x_block = max(1, min(hb.schedule.conv_x_block, out.shape[3]))
    geometry = dict(
        src=src, kernel=tuple(k), strides=graph.ints(head.strides), pads=graph.ints(head.pads),
        dilations=graph.ints(head.dilations), depthwise=depthwise, x_block=x_block, dynamic_ci=dynamic,
        co_blocks=hb.schedule.packed_co_blocks if not depthwise and out.shape[1] % hb.schedule.packed_co_blocks == 0 else 1,
    )
    has_bias = head.bias is not None
    bias = [hb.buffer(head.bias)] if has_bias else []
    x, w = hb.buffer(head.input), hb.buffer(head.weight)
    split = _split_k(hb, out, x_block, ci4, depthwise)
    if split == 1:
        spec = PackedConvSpec(out=out, pepi=pepi, has_bias=has_bias, **geometry)
        hb.launch(spec, [x, w, *bias, *extras, hb.alloc(group.result)], loc, scalars)
        return
    # Split-K: partial sums into a scratch buffer, then one kernel adds them, the bias and
    # the fused epilogue.
    n, c4, oh, ow = out.shape
    scratch = hb.emit(opencl.AllocBufferOp(opencl.BufferType(split * n * c4 * oh * ow * 4, f32))).results[0]
    hb.launch(PackedConvSpec(out=out, has_bias=False, split_k=split, **geometry), [x, w, scratch], loc, scalars)
    total = PackedSplitSumSpec(out=out, pepi=pepi, split_k=split, has_bias=has_bias)
    hb.launch(total, [scratch, *bias, *extras, hb.alloc(group.result)], loc)
