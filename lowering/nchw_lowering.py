"""Conversion patterns for the NCHW level: graph ops on plain tensors become the
kernels of `lowering/kernels` (one pattern per op kind)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i32

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.expr import Bin, Expr, In, Src, Tern, Un
from adreno_mlir.lowering.groups import Group, KernelPattern, LoweringError, group_expression, is_elementwise, where
from adreno_mlir.lowering.kernels.common import Epilogue, broadcast_strides, contiguous_strides, numel
from adreno_mlir.lowering.kernels.conv_transpose import ConvTransposeSpec
from adreno_mlir.lowering.kernels.data_movement import PadSpec
from adreno_mlir.lowering.kernels.elementwise import Access, GatherSpec, IntToFloatSpec, MapSpec, TakeSpec
from adreno_mlir.lowering.kernels.pool import PoolSpec
from adreno_mlir.lowering.kernels.resize import ResizeSpec
from adreno_mlir.lowering.kernels.scan import CumSumSpec


def epilogue(group: Group, out_shape) -> tuple[Epilogue, list]:
    """The group's element-wise tail with its extra inputs read through broadcasting strides."""
    if not group.has_epilogue:
        return Epilogue(), []
    e, extras = group_expression(group)
    strides = tuple(broadcast_strides(graph.shape_of(v), out_shape) for v in extras)
    return Epilogue(e, strides), extras


def _epi_args(hb, group: Group, out_shape):
    epi, extras = epilogue(group, out_shape)
    return epi, [hb.buffer(v) for v in extras]


class ElementwiseMap(KernelPattern):
    """A chain of element-wise ops (a fused region headed by one, or a lone op)."""

    def matches(self, group: Group) -> bool:
        return is_elementwise(group.head) and not group.packed

    def lower(self, hb, group, cfg, loc):
        out_shape = graph.shape_of(group.result)
        epi, extras = epilogue(group, out_shape)
        spec = MapSpec(shape=tuple(out_shape), inputs=tuple(Access(0, s) for s in epi.strides),
                       out=Access(0, contiguous_strides(out_shape)), expr=epi.expr)
        hb.launch(spec, [*[hb.buffer(v) for v in extras], hb.alloc(group.result)], loc)


class ConvTranspose(KernelPattern):
    """The gather-form kernel (kernels/conv_transpose.py), one work-item per output
    pixel, bias and fused epilogue before the store. The op has no NCHW4c kernel, so
    this is its lowering on every plan."""

    heads = (graph.ConvTranspose2dOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.ConvTranspose2dOp = group.head
        out_shape = graph.shape_of(op.result)
        epi, extras = _epi_args(hb, group, out_shape)
        spec = ConvTransposeSpec(
            x_shape=graph.shape_of(op.input), w_shape=graph.shape_of(op.weight), out_shape=out_shape,
            strides=graph.ints(op.strides), pads=graph.ints(op.pads)[:2], dilations=graph.ints(op.dilations),
            groups=op.groups.value.data, has_bias=op.bias is not None, epilogue=epi)
        ins = [hb.buffer(op.input), hb.buffer(op.weight)] + ([hb.buffer(op.bias)] if op.bias is not None else [])
        hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc)


def _substitute_src(e: Expr, replacement: Expr) -> Expr:
    if isinstance(e, Src):
        return replacement
    if isinstance(e, Un):
        return Un(e.kind, _substitute_src(e.x, replacement), e.params)
    if isinstance(e, Bin):
        return Bin(e.kind, _substitute_src(e.a, replacement), _substitute_src(e.b, replacement))
    if isinstance(e, Tern):
        return Tern(e.kind, *(_substitute_src(x, replacement) for x in (e.a, e.b, e.c)))
    return e


class Pool(KernelPattern):
    heads = (graph.MaxPoolOp, graph.AvgPoolOp)

    def lower(self, hb, group, cfg, loc):
        op = group.head
        out_shape = graph.shape_of(op.results[0])
        epi, extras = _epi_args(hb, group, out_shape)
        is_max = isinstance(op, graph.MaxPoolOp)
        spec = PoolSpec(
            kind="max" if is_max else "avg", x_shape=graph.shape_of(op.input), out_shape=out_shape,
            kernel=graph.ints(op.kernel_shape), strides=graph.ints(op.strides), pads=graph.ints(op.pads),
            dilations=graph.ints(op.dilations) if is_max else (1, 1),
            count_include_pad=bool(not is_max and op.count_include_pad.value.data), epilogue=epi,
        )
        hb.launch(spec, [hb.buffer(op.input), *extras, hb.alloc(group.result)], loc)


class Resize(KernelPattern):
    heads = (graph.ResizeOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.ResizeOp = group.head
        x_shape, out_shape = graph.shape_of(op.input), graph.shape_of(op.result)
        epi, extras = _epi_args(hb, group, out_shape)
        spec = ResizeSpec(x_shape=x_shape, out_shape=out_shape, mode=op.mode.data,
                          coord_mode=op.coordinate_transformation_mode.data,
                          nearest_mode=op.nearest_mode.data, scales=op.spatial_scales(),
                          cubic_a=op.cubic_coeff_a.value.data, exclude_outside=bool(op.exclude_outside.value.data),
                          epilogue=epi)
        hb.launch(spec, [hb.buffer(op.input), *extras, hb.alloc(group.result)], loc)


def _copy(hb, src, dst, shape, in_acc: Access, out_acc: Access, loc, kind: str, out_offset: int | None = None):
    spec = MapSpec(shape=tuple(shape), inputs=(in_acc,), out=out_acc, expr=In(0), kind=kind,
                   out_offset_arg=out_offset is not None)
    hb.launch(spec, [src, dst], loc, [] if out_offset is None else [out_offset])


class Concat(KernelPattern):
    heads = (graph.ConcatOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.ConcatOp = group.head
        out_shape = graph.shape_of(op.result)
        axis = op.axis.value.data
        out_strides = contiguous_strides(out_shape)
        dst = hb.alloc(op.result)
        offset = 0
        for v in op.inputs:
            shape = graph.shape_of(v)
            _copy(hb, hb.buffer(v), dst, shape, Access(0, contiguous_strides(shape)),
                  Access(0, out_strides), loc, "concat_copy", offset * out_strides[axis])
            offset += shape[axis]


class Transpose(KernelPattern):
    heads = (graph.TransposeOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.TransposeOp = group.head
        in_strides = contiguous_strides(graph.shape_of(op.input))
        out_shape = graph.shape_of(op.result)
        perm = graph.ints(op.perm)
        _copy(hb, hb.buffer(op.input), hb.alloc(op.result), out_shape,
              Access(0, tuple(in_strides[p] for p in perm)), Access(0, contiguous_strides(out_shape)), loc,
              "transpose")


class Slice(KernelPattern):
    heads = (graph.SliceOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.SliceOp = group.head
        in_strides = contiguous_strides(graph.shape_of(op.input))
        out_shape = graph.shape_of(op.result)
        starts, steps = graph.ints(op.starts), graph.ints(op.steps)
        base = sum(s * st for s, st in zip(starts, in_strides))
        _copy(hb, hb.buffer(op.input), hb.alloc(op.result), out_shape,
              Access(base, tuple(st * s for st, s in zip(steps, in_strides))),
              Access(0, contiguous_strides(out_shape)), loc, "slice")


class Pad(KernelPattern):
    heads = (graph.PadOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.PadOp = group.head
        spec = PadSpec(x_shape=graph.shape_of(op.input), out_shape=graph.shape_of(op.result),
                       axes=tuple(op.axis_geometry()), mode=op.mode.data, value=op.value.value.data)
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


class Expand(KernelPattern):
    """A broadcast copy: the input is read with stride 0 along its broadcast axes."""

    heads = (graph.ExpandOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.ExpandOp = group.head
        out_shape = graph.shape_of(op.result)
        _copy(hb, hb.buffer(op.input), hb.alloc(op.result), out_shape,
              Access(0, broadcast_strides(graph.shape_of(op.input), out_shape)),
              Access(0, contiguous_strides(out_shape)), loc, "expand")


def _gather_geometry(shape, axis: int, count: int) -> dict[str, int]:
    """GatherSpec's / TakeSpec's view of a gather: the input as [outer, axis_len, inner],
    `count` rows taken along the axis."""
    return dict(outer=numel(shape[:axis]), axis_len=shape[axis], count=count, inner=numel(shape[axis + 1:]))


class Gather(KernelPattern):
    """A gather whose indices graph-canonicalize could not turn into a slice."""

    heads = (graph.GatherOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.GatherOp = group.head
        shape = graph.shape_of(op.input)
        axis = op.axis.value.data
        indices = np.asarray(graph.ints(op.indices), np.int64)
        if shape[axis] > 1 << 24:
            raise LoweringError(f"{where(op)}: gathering along an axis of {shape[axis]} elements (over 2**24) "
                                "is not supported: its index table is stored as floats")
        spec = GatherSpec(**_gather_geometry(shape, axis, len(indices)))
        table = hb.weight((op.input.name_hint or "gather") + "_indices", indices.astype(np.float32))
        hb.launch(spec, [hb.buffer(op.input), table, hb.alloc(op.result)], loc)


def _collapse_rows(strides: tuple[int, ...], rows_shape: tuple[int, ...]) -> tuple[int, int] | None:
    """An extra input's (row, column) strides when the leading axes `rows_shape` (batch
    axes and M) are read as one row axis: possible when those axes' strides are all 0
    (a bias) or nest like a contiguous array's; None otherwise."""
    lead, col = strides[:-1], strides[-1]
    if not any(lead):
        return (0, col)
    live = [(st, d) for st, d in zip(lead, rows_shape) if d != 1]
    for (outer, _), (inner, d_inner) in zip(live, live[1:]):
        if outer != inner * d_inner:
            return None
    return (live[-1][0], col) if live else (0, col)


class Take(KernelPattern):
    """An embedding lookup: a gather with run-time ids (i32 from a model input, or
    float-held integers computed on device)."""

    heads = (graph.TakeOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.TakeOp = group.head
        spec = TakeSpec(**_gather_geometry(graph.shape_of(op.input), op.axis.value.data,
                                           numel(graph.shape_of(op.indices))),
                        float_ids=op.indices.type.get_element_type() != i32)
        hb.launch(spec, [hb.buffer(op.input), hb.buffer(op.indices), hb.alloc(op.result)], loc)


class IntToFloat(KernelPattern):
    """An integer model input converted to float-held integers, once."""

    heads = (graph.IntToFloatOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.IntToFloatOp = group.head
        hb.launch(IntToFloatSpec(size=numel(graph.shape_of(op.input))), [hb.buffer(op.input), hb.alloc(op.result)],
                  loc)


class CumSum(KernelPattern):
    """A cumulative sum: one work-item per line along the axis (kernels/scan.py)."""

    heads = (graph.CumSumOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.CumSumOp = group.head
        shape, p = graph.shape_of(op.input), op.params()
        axis = p["axis"]
        spec = CumSumSpec(outer=numel(shape[:axis]), length=shape[axis], inner=numel(shape[axis + 1:]),
                          exclusive=p["exclusive"], reverse=p["reverse"])
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


NCHW_PATTERNS: tuple[KernelPattern, ...] = (
    ElementwiseMap(), ConvTranspose(), Pool(), Resize(), Concat(), Transpose(), Slice(), Gather(), Take(), Pad(),
    Expand(), IntToFloat(), CumSum(),
)
"""The NCHW patterns of kernels whose family has no schedule keys; the convolution, matrix
product, reduction, normalisation and attention patterns are their families'
(lowering/families/)."""
