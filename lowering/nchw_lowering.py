"""Conversion patterns for the NCHW level: graph ops on plain tensors become the
kernels of `lowering/kernels` (one pattern per op kind)."""

from __future__ import annotations

import numpy as np

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.expr import Bin, Expr, In, Src, Un
from adreno_mlir.lowering.groups import Group, KernelPattern, LoweringError, group_expression, is_elementwise, where
from adreno_mlir.lowering.kernels.common import Epilogue, broadcast_strides, contiguous_strides
from adreno_mlir.lowering.kernels.conv import Conv4Spec, ConvSpec
from adreno_mlir.lowering.kernels.elementwise import Access, GatherSpec, MapSpec
from adreno_mlir.lowering.kernels.matmul import GemmSpec, MatMulSpec
from adreno_mlir.lowering.kernels.norm import LayerNormSpec
from adreno_mlir.lowering.kernels.pool import PoolSpec, ReduceSpec
from adreno_mlir.lowering.kernels.resize import ResizeSpec
from adreno_mlir.lowering.kernels.softmax import SoftmaxSpec


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


class Convolution(KernelPattern):
    """`kernel = "vec4"`: float4 OIHW4o weights packed now, `co_block` (4/8) output
    channels and `x_block` pixels per work-item; `"scalar"`: the generic kernel."""

    heads = (graph.Conv2dOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.Conv2dOp = group.head
        out_shape = graph.shape_of(op.result)
        x_shape, w_shape = graph.shape_of(op.input), graph.shape_of(op.weight)
        epi, extras = _epi_args(hb, group, out_shape)
        co, groups = out_shape[1], op.groups.value.data
        depthwise = groups > 1 and groups == x_shape[1] == co
        geometry = dict(
            x_shape=x_shape, w_shape=w_shape, out_shape=out_shape,
            strides=graph.ints(op.strides), pads=graph.ints(op.pads), dilations=graph.ints(op.dilations),
            groups=groups, has_bias=op.bias is not None, epilogue=epi,
        )
        scalars: list[int] = []
        if cfg["kernel"] == "vec4":
            if not (co % 4 == 0 and (groups == 1 or depthwise) and isinstance(op.weight.owner, graph.ConstantOp)):
                raise LoweringError(f"{where(op)}: kernel_config kernel = \"vec4\" needs constant weights, output "
                                    "channels divisible by 4 and groups 1 or depthwise; use \"scalar\"")
            cb = cfg["co_block"]
            if cb not in (4, 8) or co % cb or (depthwise and cb != 4):
                raise LoweringError(f"{where(op)}: kernel_config co_block = {cb} must be 4 or 8, divide the "
                                    f"output channels ({co}) and be 4 for depthwise")
            if not depthwise:  # input channels become a launch argument: one kernel for all of them
                scalars = [x_shape[1]]
                geometry["x_shape"] = (x_shape[0], 0, *x_shape[2:])
                geometry["w_shape"] = (w_shape[0], 0, *w_shape[2:])
            spec = Conv4Spec(co_block=cb, x_block=cfg["x_block"], dynamic_ci=not depthwise, **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + "_oihw4o"
            w_buf = hb.weight(hint, Conv4Spec.pack_weights(hb.constant_array(op.weight)))
        else:
            cb = cfg["co_block"]
            if (co // groups) % cb:
                    raise LoweringError(f"{where(op)}: kernel_config co_block = {cb} must divide the output "
                                    f"channels per group ({co // groups})")
            spec = ConvSpec(co_block=cb, **geometry)
            w_buf = hb.buffer(op.weight)
        ins = [hb.buffer(op.input), w_buf] + ([hb.buffer(op.bias)] if op.bias is not None else [])
        hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc, scalars)


def _substitute_src(e: Expr, replacement: Expr) -> Expr:
    if isinstance(e, Src):
        return replacement
    if isinstance(e, Un):
        return Un(e.kind, _substitute_src(e.x, replacement), e.params)
    if isinstance(e, Bin):
        return Bin(e.kind, _substitute_src(e.a, replacement), _substitute_src(e.b, replacement))
    return e


class Gemm(KernelPattern):
    heads = (graph.GemmOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.GemmOp = group.head
        out_shape = graph.shape_of(op.result)
        m, n = out_shape
        a_shape = graph.shape_of(op.a)
        k = a_shape[0] if op.trans_a.value.data else a_shape[1]
        epi, extras = _epi_args(hb, group, out_shape)
        beta = op.beta.value.data
        if op.c is not None and beta != 0.0:
            # beta * C joins the epilogue as one more extra input, before the fused tail.
            c_index = len(epi.strides)
            c_expr = In(c_index) if beta == 1.0 else Un("scale", In(c_index), (beta,))
            expr = _substitute_src(epi.expr, Bin("add", Src(), c_expr))
            epi = Epilogue(expr, epi.strides + (broadcast_strides(graph.shape_of(op.c), out_shape),))
            extras = extras + [hb.buffer(op.c)]
        spec = GemmSpec(m=m, n=n, k=k, trans_a=bool(op.trans_a.value.data), trans_b=bool(op.trans_b.value.data),
                        alpha=op.alpha.value.data, k_split=cfg.get("k_split", 1), epilogue=epi)
        hb.launch(spec, [hb.buffer(op.a), hb.buffer(op.b), *extras, hb.alloc(group.result)], loc)


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


class Reduce(KernelPattern):
    heads = (graph.GlobalAvgPoolOp, graph.ReduceMeanOp)

    def lower(self, hb, group, cfg, loc):
        op = group.head
        x_shape = graph.shape_of(op.input)
        axes = tuple(range(2, len(x_shape))) if isinstance(op, graph.GlobalAvgPoolOp) else graph.ints(op.axes)
        # Epilogue coordinates are those of the input rank with reduced axes at 0, i.e.
        # the keepdims output shape.
        keep_shape = tuple(1 if d in axes else s for d, s in enumerate(x_shape))
        epi, extras = _epi_args(hb, group, keep_shape)
        # reduce_items > 1: a work-group per output element (select-kernel-config's rule)
        spec = ReduceSpec(x_shape=x_shape, axes=axes, items=cfg.get("reduce_items", 1), epilogue=epi)
        hb.launch(spec, [hb.buffer(op.input), *extras, hb.alloc(group.result)], loc)


class Resize(KernelPattern):
    heads = (graph.ResizeOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.ResizeOp = group.head
        x_shape, out_shape = graph.shape_of(op.input), graph.shape_of(op.result)
        epi, extras = _epi_args(hb, group, out_shape)
        spec = ResizeSpec(x_shape=x_shape, out_shape=out_shape, mode=op.mode.data,
                          coord_mode=op.coordinate_transformation_mode.data,
                          nearest_mode=op.nearest_mode.data, scales=op.spatial_scales(), epilogue=epi)
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


class Softmax(KernelPattern):
    heads = (graph.SoftmaxOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.SoftmaxOp = group.head
        shape = graph.shape_of(op.input)
        spec = SoftmaxSpec(shape=shape, axis=op.axis.value.data % len(shape))
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


class LayerNorm(KernelPattern):
    heads = (graph.LayerNormOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.LayerNormOp = group.head
        shape = graph.shape_of(op.input)
        axis = op.norm_axis()
        row_shape = tuple(shape[axis:])
        rows = 1
        for d in shape[:axis]:
            rows *= d
        bias = op.bias
        spec = LayerNormSpec(
            rows=rows, row_shape=row_shape, scale_strides=broadcast_strides(graph.shape_of(op.scale), row_shape),
            bias_strides=None if bias is None else broadcast_strides(graph.shape_of(bias), row_shape),
            epsilon=op.epsilon.value.data, items=cfg.get("reduce_items", 1))
        ins = [hb.buffer(op.input), hb.buffer(op.scale)] + ([] if bias is None else [hb.buffer(bias)])
        hb.launch(spec, [*ins, hb.alloc(op.result)], loc)


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
        outer = inner = 1
        for d in shape[:axis]:
            outer *= d
        for d in shape[axis + 1:]:
            inner *= d
        spec = GatherSpec(outer=outer, axis_len=shape[axis], count=len(indices), inner=inner)
        table = hb.weight((op.input.name_hint or "gather") + "_indices", indices.astype(np.float32))
        hb.launch(spec, [hb.buffer(op.input), table, hb.alloc(op.result)], loc)


class MatMul(KernelPattern):
    heads = (graph.MatMulOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.MatMulOp = group.head
        a, b = graph.shape_of(op.lhs), graph.shape_of(op.rhs)
        a2 = (1, *a) if len(a) == 1 else a
        b2 = (*b, 1) if len(b) == 1 else b
        batch = graph.broadcast_shapes(a2[:-2], b2[:-2])
        a_full = (*[1] * (len(batch) - len(a2[:-2])), *a2[:-2])
        b_full = (*[1] * (len(batch) - len(b2[:-2])), *b2[:-2])
        a_bs = tuple(0 if d == 1 else s for d, s in zip(a_full, contiguous_strides(a_full)))
        b_bs = tuple(0 if d == 1 else s for d, s in zip(b_full, contiguous_strides(b_full)))
        m, k, n = a2[-2], a2[-1], b2[-1]
        spec = MatMulSpec(batch=tuple(batch), a_batch_strides=tuple(s * m * k for s in a_bs),
                          b_batch_strides=tuple(s * k * n for s in b_bs), m=m, n=n, k=k,
                          k_split=cfg.get("k_split", 1))
        hb.launch(spec, [hb.buffer(op.lhs), hb.buffer(op.rhs), hb.alloc(op.result)], loc)


NCHW_PATTERNS: tuple[KernelPattern, ...] = (
    ElementwiseMap(), Convolution(), Gemm(), Pool(), Reduce(), Resize(), Concat(), Transpose(), Slice(),
    Softmax(), MatMul(), LayerNorm(), Gather(),
)
