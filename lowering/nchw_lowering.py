"""Conversion patterns for the NCHW level: graph ops on plain tensors become the
kernels of `lowering/kernels` (one pattern per op kind)."""

from __future__ import annotations

import numpy as np

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.expr import Bin, Expr, In, Src, Tern, Un
from adreno_mlir.lowering.groups import Group, KernelPattern, LoweringError, group_expression, is_elementwise, where
from adreno_mlir.lowering.kernels.attention import MAX_KEYS, AttentionSpec
from adreno_mlir.lowering.kernels.common import Epilogue, broadcast_strides, contiguous_strides, numel
from adreno_mlir.lowering.kernels.conv import Conv4Spec, ConvSpec, PlaneSpec, PointwiseSpec, RowsSpec, pack_taps
from adreno_mlir.lowering.kernels.conv_transpose import ConvTransposeSpec
from adreno_mlir.lowering.kernels.data_movement import PadSpec
from adreno_mlir.lowering.kernels.elementwise import Access, GatherSpec, MapSpec, TakeSpec
from adreno_mlir.lowering.kernels.matmul import GemmSpec, MatMulSpec, read_strides
from adreno_mlir.lowering.kernels.norm import LayerNormSpec
from adreno_mlir.passes.select_kernel_config import conv_config_error, is_depthwise, matmul_geometry_of, tileable
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
    channels and `x_block` pixels per work-item; `"pointwise"` (1x1 convs): `x_block`
    vectors of `vec` pixels for `co_block` channels, weights packed per channel block;
    `"plane"` (stride 1, rows as wide as the input's): vectors of `vec` pixels of the
    flattened plane, `co_block` channels (depthwise: 1);
    `"rows"`: vectors of `vec` pixels along an output row, `co_block` channels; `"scalar"`: the generic kernel."""

    heads = (graph.Conv2dOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.Conv2dOp = group.head
        out_shape = graph.shape_of(op.result)
        x_shape, w_shape = graph.shape_of(op.input), graph.shape_of(op.weight)
        epi, extras = _epi_args(hb, group, out_shape)
        groups, depthwise = op.groups.value.data, is_depthwise(op)
        geometry = dict(
            x_shape=x_shape, w_shape=w_shape, out_shape=out_shape,
            strides=graph.ints(op.strides), pads=graph.ints(op.pads), dilations=graph.ints(op.dilations),
            groups=groups, has_bias=op.bias is not None, epilogue=epi,
        )
        scalars: list[int] = []
        error = conv_config_error(op, cfg)
        if error is not None:
            raise LoweringError(f"{where(op)}: {error}")
        cb = cfg.get("co_block", 1)
        if cfg["kernel"] == "pointwise":
            spec = PointwiseSpec(co_block=cb, x_block=cfg["x_block"], vec=cfg["vec"], **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + f"_pw{cb}"
            w_buf = hb.weight(hint, PointwiseSpec.pack_weights(hb.constant_array(op.weight), cb))
        elif cfg["kernel"] == "rows":
            cb = 1 if depthwise else cb
            spec = RowsSpec(co_block=cb, vec=cfg["vec"], **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + f"_rw{cb}"
            w_buf = hb.weight(hint, pack_taps(hb.constant_array(op.weight), cb))
        elif cfg["kernel"] == "plane":
            cb = 1 if depthwise else cb
            spec = PlaneSpec(co_block=cb, vec=cfg["vec"], **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + f"_pl{cb}"
            w_buf = hb.weight(hint, pack_taps(hb.constant_array(op.weight), cb))
        elif cfg["kernel"] == "vec4":
            if not depthwise:  # input channels become a launch argument: one kernel for all of them
                scalars = [x_shape[1]]
                geometry["x_shape"] = (x_shape[0], 0, *x_shape[2:])
                geometry["w_shape"] = (w_shape[0], 0, *w_shape[2:])
            spec = Conv4Spec(co_block=cb, x_block=cfg["x_block"], dynamic_ci=not depthwise, **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + "_oihw4o"
            w_buf = hb.weight(hint, Conv4Spec.pack_weights(hb.constant_array(op.weight)))
        else:
            spec = ConvSpec(co_block=cb, **geometry)
            w_buf = hb.buffer(op.weight)
        ins = [hb.buffer(op.input), w_buf] + ([hb.buffer(op.bias)] if op.bias is not None else [])
        hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc, scalars)


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
        tiles = cfg.get("tile_m", 1), cfg.get("tile_n", 1)
        if tiles != (1, 1) and (cfg.get("k_split", 1) > 1 or not tileable(op)):
            raise LoweringError(f"{where(op)}: kernel_config tile_m/tile_n need k_split = 1, no transA, and "
                                "transB only with a constant B")
        if tiles != (1, 1):
            # A register-tiled matmul (MatMulSpec): B transposed at compile time if need
            # be, alpha folded into the epilogue. Untiled Gemms keep GemmSpec (transB read
            # in place, split-K for GEMVs).
            if op.alpha.value.data != 1.0:
                epi = Epilogue(_substitute_src(epi.expr, Un("scale", Src(), (op.alpha.value.data,))), epi.strides)
            b = hb.buffer(op.b)
            if op.trans_b.value.data:
                b = hb.weight((op.b.owner.weight_name or "gemm_b") + "_t",
                              np.ascontiguousarray(hb.constant_array(op.b).T))
            try:
                spec = MatMulSpec(batch=(), a_batch_strides=(), b_batch_strides=(), m=m, n=n, k=k,
                                  tile_m=tiles[0], tile_n=tiles[1], epilogue=epi)
            except ValueError as e:
                raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
            hb.launch(spec, [hb.buffer(op.a), b, *extras, hb.alloc(group.result)], loc)
            return
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
    """Global average pools and every `graph.ReduceOp` kind (ReduceSpec)."""

    heads = (graph.GlobalAvgPoolOp, graph.ReduceOp)

    def lower(self, hb, group, cfg, loc):
        op = group.head
        x_shape = graph.shape_of(op.input)
        gap = isinstance(op, graph.GlobalAvgPoolOp)
        axes = tuple(range(2, len(x_shape))) if gap else graph.ints(op.axes)
        # Epilogue coordinates are those of the input rank with reduced axes at 0, i.e.
        # the keepdims output shape.
        keep_shape = tuple(1 if d in axes else s for d, s in enumerate(x_shape))
        epi, extras = _epi_args(hb, group, keep_shape)
        # reduce_items > 1: a work-group per output element (select-kernel-config's rule)
        spec = ReduceSpec(x_shape=x_shape, axes=axes, items=cfg.get("reduce_items", 1),
                          kind="mean" if gap else op.kind, epilogue=epi)
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


class Softmax(KernelPattern):
    heads = (graph.SoftmaxOp, graph.LogSoftmaxOp)

    def lower(self, hb, group, cfg, loc):
        op: graph.SoftmaxOp | graph.LogSoftmaxOp = group.head
        shape = graph.shape_of(op.input)
        spec = SoftmaxSpec(shape=shape, axis=op.axis.value.data % len(shape), items=cfg.get("reduce_items", 1),
                           log=isinstance(op, graph.LogSoftmaxOp))
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


class Attention(KernelPattern):
    """graph.attention (fuse-attention's op): one AttentionSpec kernel, its operands read
    through their perms' strides with broadcast batch axes at stride 0. The op has no
    NCHW4c kernel, so this is its lowering on every plan."""

    heads = (graph.AttentionOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.AttentionOp = group.head
        if group.has_epilogue:
            raise LoweringError(f"{where(op)}: graph.attention takes no fused element-wise epilogue")
        out = graph.shape_of(op.result)
        batch, (m, dv) = tuple(out[:-2]), out[-2:]
        d, keys = op.read_shape("k")[-2:]
        if keys > MAX_KEYS:
            raise LoweringError(f"{where(op)}: graph.attention over {keys} keys: its kernel keeps a row's scores "
                                f"in local memory, at most {MAX_KEYS}; leave fuse-attention out of the pipeline")

        def strides(which: str) -> tuple[int, ...]:
            read = read_strides(graph.shape_of(getattr(op, which)), op.permutation(which))
            shape = op.read_shape(which)
            lead = len(batch) - (len(shape) - 2)
            batch_st = tuple(0 if dim == 1 else st for dim, st in zip(shape[:-2], read[:-2]))
            return (0,) * lead + batch_st + tuple(read[-2:])

        bias_st = None
        if op.bias is not None:
            bias_st = broadcast_strides(graph.shape_of(op.bias), (*batch, m, keys))
        try:
            spec = AttentionSpec(batch=batch, m=m, d=d, keys=keys, dv=dv, q_strides=strides("q"),
                                 k_strides=strides("k"), v_strides=strides("v"), bias_strides=bias_st,
                                 scale=op.scale.value.data, items=cfg.get("reduce_items", 1))
        except ValueError as e:
            raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
        ins = [hb.buffer(op.q), hb.buffer(op.k), hb.buffer(op.v)]
        ins += [hb.buffer(op.bias)] if op.bias is not None else []
        hb.launch(spec, [*ins, hb.alloc(op.result)], loc)


class LayerNorm(KernelPattern):
    heads = (graph.LayerNormOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.LayerNormOp = group.head
        shape = graph.shape_of(op.input)
        axis = op.norm_axis()
        row_shape = tuple(shape[axis:])
        bias = op.bias
        spec = LayerNormSpec(
            rows=numel(shape[:axis]), row_shape=row_shape, scale_strides=broadcast_strides(graph.shape_of(op.scale), row_shape),
            bias_strides=None if bias is None else broadcast_strides(graph.shape_of(bias), row_shape),
            epsilon=op.epsilon.value.data, items=cfg.get("reduce_items", 1))
        ins = [hb.buffer(op.input), hb.buffer(op.scale)] + ([] if bias is None else [hb.buffer(bias)])
        hb.launch(spec, [*ins, hb.alloc(op.result)], loc)


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
    """An embedding lookup: a gather with run-time i32 ids."""

    heads = (graph.TakeOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.TakeOp = group.head
        spec = TakeSpec(**_gather_geometry(graph.shape_of(op.input), op.axis.value.data,
                                           numel(graph.shape_of(op.indices))))
        hb.launch(spec, [hb.buffer(op.input), hb.buffer(op.indices), hb.alloc(op.result)], loc)


class MatMul(KernelPattern):
    heads = (graph.MatMulOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.MatMulOp = group.head
        # Operands are read through the strides of their perms (lhs_perm / rhs_perm): a
        # transposed operand costs no copy.
        a, b = op.lhs_shape(), op.rhs_shape()
        geo = matmul_geometry_of(op)
        # The epilogue runs at (batch..., M, N) coordinates; a 1-D operand's result lacks
        # M or N, so its extra inputs get stride 0 there.
        epi, extras = _epi_args(hb, group, graph.shape_of(group.head.results[0]))
        if len(a) == 1 or len(b) == 1:
            def widen(st: tuple[int, ...]) -> tuple[int, ...]:
                st = st[:-1] + (0,) + st[-1:] if len(a) == 1 else st
                return st + (0,) if len(b) == 1 else st
            epi = Epilogue(epi.expr, tuple(widen(st) for st in epi.strides))
        rows = geo.collapse_rows()
        if rows is not None:
            # B shared by every batch entry and A's batch and rows nesting like one axis
            # (checked with A's real strides): the batch is more rows of one product
            # (PyTorch's attention projections multiply [L, 1, E] by [E, 3E]), so
            # register tiles span batch entries instead of B being re-read per entry.
            collapsed = [_collapse_rows(st, (*geo.batch, geo.m)) for st in epi.strides]
            if all(c is not None for c in collapsed):
                epi = Epilogue(epi.expr, tuple(collapsed))  # type: ignore[arg-type]
                geo = rows
        try:
            spec = MatMulSpec(batch=geo.batch, a_batch_strides=geo.a_batch_strides,
                              b_batch_strides=geo.b_batch_strides, m=geo.m, n=geo.n, k=geo.k,
                              a_strides=geo.a_strides, b_strides=geo.b_strides,
                              k_split=cfg.get("k_split", 1), tile_m=cfg.get("tile_m", 1),
                              tile_n=cfg.get("tile_n", 1), epilogue=epi)
        except ValueError as e:
            raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
        hb.launch(spec, [hb.buffer(op.lhs), hb.buffer(op.rhs), *extras, hb.alloc(group.result)], loc)


NCHW_PATTERNS: tuple[KernelPattern, ...] = (
    ElementwiseMap(), Convolution(), ConvTranspose(), Gemm(), Pool(), Reduce(), Resize(), Concat(), Transpose(),
    Slice(),
    Softmax(), MatMul(), LayerNorm(), Gather(), Take(), Pad(), Expand(), Attention(),
)
