"""`convert-graph-to-opencl`: graph ops become `opencl.kernel`s plus a host program.

The graph function `@main` is replaced by a host function of the same name whose
arguments and results are `!opencl.buffer`s: weights become `opencl.weight @name`,
intermediate tensors `opencl.alloc_buffer`, and each (fused) graph op one or more
`opencl.launch`es in program order. Reshapes are free (the buffer is reused).

Fusion that falls out of the lowering: a chain of element-wise ops whose
intermediate values have a single user is computed in one kernel, and such a chain
after a convolution, gemm, pool, reduction or resize becomes that kernel's epilogue
(conv + bias + ReLU + residual add is one launch).

Kernels are generated from hashable specs (`lowering/kernels`); a spec seen before
reuses its kernel, so repeated blocks share code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from adreno_mlir.errors import CompileError
from adreno_mlir.weights import store_of
from adreno_mlir.dialects import graph, opencl, texture
from adreno_mlir.lowering.expr import Bin, Expr, In, Src, Un
from adreno_mlir.lowering.kernels.common import Epilogue, KernelSpec, broadcast_strides, contiguous_strides
from adreno_mlir.lowering.kernels.conv import Conv4Spec, ConvSpec
from adreno_mlir.lowering.kernels.elementwise import Access, MapSpec
from adreno_mlir.lowering.kernels.matmul import GemmSpec, MatMulSpec
from adreno_mlir.lowering.kernels.pool import PoolSpec, ReduceSpec
from adreno_mlir.lowering.kernels.resize import ResizeSpec
from adreno_mlir.lowering.kernels.softmax import SoftmaxSpec
from adreno_mlir.lowering.opencl_printer import C_KEYWORDS
from adreno_mlir.passes.fold_batchnorm import FoldBatchNorm


class LoweringError(CompileError):
    pass


def _where(op: Operation) -> str:
    loc = op.location
    desc = getattr(loc, "desc", None)
    return f"'{op.name}' at loc(\"{desc.data}\")" if desc is not None else f"'{op.name}'"


def choose_x_block(schedule: "ConvertGraphToOpenCL", out_h: int, out_w: int, channel_blocks: int) -> int:
    """Output pixels per convolution work-item: the schedule's block, made smaller while
    that leaves fewer than `min_work_items` work-items (late 7x7 layers would otherwise
    keep a GPU mostly idle)."""
    for xb in (4, 2, 1):
        if xb > schedule.conv_x_block or xb > out_w:
            continue
        if -(-out_w // xb) * out_h * channel_blocks >= schedule.min_work_items:
            return xb
    return 1


def local_size(grid: Sequence[int], preferred: Sequence[int]) -> tuple[int, ...] | None:
    """A local size that divides `grid` exactly (kernels have no bounds checks for
    rounded-up grids), close to `preferred`: per axis the largest divisor within the
    preferred extent, then spare capacity goes to the axes that can still grow."""
    if not preferred:
        return None
    pref = list(preferred) + [1] * (len(grid) - len(preferred))
    budget = math.prod(pref)

    def best(g: int, limit: int) -> int:
        return max(d for d in range(1, min(g, max(1, limit)) + 1) if g % d == 0)

    local = [best(g, p) for g, p in zip(grid, pref)]
    for d, g in enumerate(grid):
        rest = math.prod(local) // local[d]
        local[d] = best(g, budget // rest)
    return tuple(local)


_UNARY_KIND = {
    graph.ReluOp: "relu", graph.SigmoidOp: "sigmoid", graph.TanhOp: "tanh", graph.ExpOp: "exp",
    graph.NegOp: "neg", graph.AbsOp: "abs", graph.SqrtOp: "sqrt", graph.HardSwishOp: "hard_swish",
    graph.HardSigmoidOp: "hard_sigmoid", graph.LeakyReluOp: "leaky_relu", graph.ClipOp: "clip",
}
_BINARY_KIND = {graph.AddOp: "add", graph.SubOp: "sub", graph.MulOp: "mul", graph.DivOp: "div"}
_EPILOGUE_HEADS = (graph.Conv2dOp, graph.GemmOp, graph.MaxPoolOp, graph.AvgPoolOp,
                   graph.GlobalAvgPoolOp, graph.ReduceMeanOp, graph.ResizeOp)


def _unary_params(op: Operation) -> tuple[float, ...]:
    if isinstance(op, graph.ClipOp):
        return (op.min.value.data, op.max.value.data)
    if isinstance(op, graph.HardSigmoidOp):
        return (op.alpha.value.data, op.beta.value.data)
    if isinstance(op, graph.LeakyReluOp):
        return (op.alpha.value.data,)
    return ()


def _is_elementwise(op: Operation) -> bool:
    return type(op) in _UNARY_KIND or type(op) in _BINARY_KIND


@dataclass
class Group:
    """Graph ops computed by one kernel: a head plus fused element-wise followers."""

    head: Operation
    ops: list[Operation] = field(default_factory=list)

    @property
    def result(self) -> SSAValue:
        return self.ops[-1].results[0]


def group_expression(group: Group) -> tuple[Expr, list[SSAValue]]:
    """The element-wise part of a group as an expression over Src() (the head's value,
    unless the head is element-wise itself) and In(k), k indexing the returned extra
    inputs (each distinct outside value once)."""
    extras: list[SSAValue] = []
    elementwise_head = _is_elementwise(group.head)
    members = set(group.ops) if elementwise_head else set(group.ops[1:])
    head_value = None if elementwise_head else group.head.results[0]

    def expr(v: SSAValue) -> Expr:
        if head_value is not None and v is head_value:
            return Src()
        owner = v.owner
        if owner in members:
            if type(owner) in _UNARY_KIND:
                return Un(_UNARY_KIND[type(owner)], expr(owner.operands[0]), _unary_params(owner))
            return Bin(_BINARY_KIND[type(owner)], expr(owner.operands[0]), expr(owner.operands[1]))
        if v not in extras:
            extras.append(v)
        return In(extras.index(v))

    return expr(group.result), extras


def plan_groups(block: Block, fuse: bool) -> list[Group]:
    """Greedy chains: follow a value while its only user is an element-wise op of the
    same shape (its other operand, if any, is read through broadcasting strides)."""
    claimed: set[Operation] = set()
    groups: list[Group] = []
    for op in block.ops:
        if op in claimed or isinstance(op, (graph.ConstantOp, graph.ReshapeOp, func.ReturnOp)):
            continue
        if isinstance(op, texture.PackOp) and isinstance(op.input.owner, graph.ConstantOp):
            continue  # packed at compile time
        if not op.name.startswith(("graph.", "texture.pack", "texture.unpack")):
            raise LoweringError(f"{_where(op)}: cannot lower this op to OpenCL")
        group = Group(op, [op])
        claimed.add(op)
        can_grow = fuse and (_is_elementwise(op) or isinstance(op, _EPILOGUE_HEADS))
        if isinstance(op, graph.ReduceMeanOp) and not op.keepdims.value.data:
            can_grow = False  # epilogue coordinates are those of the keepdims shape
        while can_grow:
            value = group.result
            users = {u.operation for u in value.uses}
            if len(users) != 1:
                break
            (user,) = users
            if user in claimed or not _is_elementwise(user):
                break
            if graph.shape_of(user.results[0]) != graph.shape_of(value):
                break
            group.ops.append(user)
            claimed.add(user)
        groups.append(group)
    # A group runs where its last op stood: every extra input it reads exists by then.
    position = {op: i for i, op in enumerate(block.ops)}
    return sorted(groups, key=lambda g: position[g.ops[-1]])


class HostBuilder:
    """Builds the host function and the kernels for one graph function."""

    def __init__(self, module: ModuleOp, fn: func.FuncOp, schedule: "ConvertGraphToOpenCL", kernels: dict):
        self.module = module
        self.fn = fn
        self.schedule = schedule
        self.kernels: dict[KernelSpec, str] = kernels
        self.names: set[str] = set(kernels.values()) | {
            o.sym_name.data for o in module.body.block.ops if hasattr(o, "sym_name")
        }
        self.store = store_of(module)
        in_types = [opencl.BufferType(_numel(a.type), f32) for a in fn.args]
        self.block = Block(arg_types=in_types)
        self.buffers: dict[SSAValue, SSAValue] = {}
        for old, new in zip(fn.args, self.block.args):
            self.buffers[old] = new
            new.name_hint = old.name_hint

    # ------------------------------------------------------------------ buffers

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def buffer(self, value: SSAValue) -> SSAValue:
        if value in self.buffers:
            return self.buffers[value]
        owner = value.owner
        if isinstance(owner, graph.ReshapeOp):
            buf = self.buffer(owner.input)
        elif isinstance(owner, texture.PackOp) and isinstance(owner.input.owner, graph.ConstantOp):
            buf = self.packed_constant(owner)
        elif isinstance(owner, graph.ConstantOp):
            name = owner.weight_name
            if name is None:
                arr = np.array(owner.value.get_values(), dtype=np.float32)
                name = self.store.add(value.name_hint or "const", arr)
            buf = self.emit(opencl.WeightOp(name, opencl.BufferType(_numel(value.type), f32))).results[0]
            buf.name_hint = value.name_hint
        else:
            raise LoweringError(f"value {value.name_hint or ''} is used before it is computed")
        self.buffers[value] = buf
        return buf

    def packed_constant(self, op: texture.PackOp) -> SSAValue:
        """A packed constant operand: NCHW4c data computed now, uploaded as a weight."""
        arr = _constant_array(self, op.input)
        n, c, h, w = arr.shape
        t = op.result.type
        data = np.zeros(t.shape, np.float32)
        data.reshape(n, -1, h, w)[:, :c] = arr
        data = data.reshape(n, t.shape[1], 4, h, w).transpose(0, 1, 3, 4, 2)
        half = t.element == f16
        name = self.store.add((op.input.name_hint or "const") + "_nchw4c" + ("_f16" if half else ""),
                              np.ascontiguousarray(data.astype(np.float16 if half else np.float32)))
        return self.emit(opencl.WeightOp(name, opencl.BufferType(data.size, t.element))).results[0]

    def int_constant(self, v: int) -> SSAValue:
        from xdsl.dialects import arith
        from xdsl.dialects.builtin import IntegerAttr, i32

        return self.emit(arith.ConstantOp(IntegerAttr(int(v), i32))).results[0]

    def alloc(self, value: SSAValue) -> SSAValue:
        t = value.type
        if isinstance(t, texture.TextureTensorType) and t.is_image:
            w, h = t.image_extent
            fmt = "rgba_f16" if t.element == f16 else "rgba_f32"
            op = opencl.AllocImageOp(opencl.ImageType(w, h, fmt))
        elif isinstance(t, texture.TextureTensorType):
            op = opencl.AllocBufferOp(opencl.BufferType(t.num_elements, t.element))
        else:
            op = opencl.AllocBufferOp(opencl.BufferType(_numel(t), f32))
        buf = self.emit(op).results[0]
        buf.name_hint = value.name_hint
        self.buffers[value] = buf
        return buf

    # ------------------------------------------------------------------ kernels

    def kernel(self, spec: KernelSpec) -> str:
        if spec not in self.kernels:
            base = spec.base_name()
            if base in C_KEYWORDS:
                # A kernel named like an OpenCL built-in (`exp`, `sqrt`) shadows it: PoCL
                # then cannot find the kernel, other compilers reject the program.
                base += "_kernel"
            name, n = base, 0
            while name in self.names:
                n += 1
                name = f"{base}_{n}"
            self.names.add(name)
            self.kernels[spec] = name
            kernel = spec.build(name)
            self.module.body.block.insert_op_before(kernel, self.fn)
        return self.kernels[spec]

    def launch(self, spec: KernelSpec, args: Sequence[SSAValue], loc, scalars: Sequence[int] = ()) -> None:
        grid = spec.global_size()
        spec = spec.shared()  # extents the kernel does not need are dropped from its identity
        name = self.kernel(spec)
        values = [self.int_constant(v) for v in scalars]
        op = self.emit(opencl.LaunchOp(name, [*args, *values], grid, local_size(grid, self.schedule.work_group)))
        op.location = loc

    # ------------------------------------------------------------------ groups

    def epilogue(self, group: Group, out_shape: Sequence[int]) -> tuple[Epilogue, list[SSAValue]]:
        """The group's element-wise tail with its extra inputs read through broadcasting strides."""
        e, extras = group_expression(group)
        strides = tuple(broadcast_strides(graph.shape_of(v), out_shape) for v in extras)
        return Epilogue(e, strides), extras

    def lower(self, group: Group) -> None:
        head = group.head
        loc = group.ops[-1].location
        if isinstance(head, (texture.PackOp, texture.UnpackOp)) or isinstance(
                group.result.type, texture.TextureTensorType):
            from adreno_mlir.lowering.packed_lowering import lower_packed

            lower_packed(self, group, loc)
            return
        out_shape = graph.shape_of(group.result)
        if _is_elementwise(head):
            epi, extras = self.epilogue(group, out_shape)
            spec = MapSpec(
                shape=tuple(out_shape),
                inputs=tuple(Access(0, s) for s in epi.strides),
                out=Access(0, contiguous_strides(out_shape)),
                expr=epi.expr,
            )
            ins = [self.buffer(v) for v in extras]
            self.launch(spec, [*ins, self.alloc(group.result)], loc)
            return
        lower = _HEAD_LOWERINGS.get(type(head))
        if lower is None:
            raise LoweringError(f"{_where(head)}: no OpenCL lowering for this op")
        lower(self, group, loc)

    def finish(self) -> func.FuncOp:
        ret = self.fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        outs = [self.buffer(v) for v in ret.operands]
        self.emit(func.ReturnOp(*outs))
        host = func.FuncOp(
            self.fn.sym_name.data,
            ([a.type for a in self.block.args], [o.type for o in outs]),
            Region(self.block),
        )
        for k, v in self.fn.attributes.items():
            if k.startswith("graph."):
                host.attributes[k] = v
        return host


def _numel(t) -> int:
    return int(math.prod(graph.shape_of(t)))


# --------------------------------------------------------------------------- head ops


def _epi_args(hb: HostBuilder, group: Group, out_shape):
    epi, extras = hb.epilogue(group, out_shape) if len(group.ops) > 1 else (Epilogue(), [])
    return epi, [hb.buffer(v) for v in extras]


def _lower_conv(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.Conv2dOp = group.head  # type: ignore[assignment]
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
    sched = hb.schedule
    w_const = op.weight.owner
    if co % 4 == 0 and (groups == 1 or depthwise) and isinstance(w_const, graph.ConstantOp) and sched.vectorize:
        cb = 8 if co % 8 == 0 and not depthwise and sched.conv_co_block >= 8 else 4
        scalars = []
        if not depthwise:  # input channels become a launch argument: one kernel for all of them
            scalars = [x_shape[1]]
            geometry["x_shape"] = (x_shape[0], 0, *x_shape[2:])
            geometry["w_shape"] = (w_shape[0], 0, *w_shape[2:])
        spec = Conv4Spec(co_block=cb, x_block=choose_x_block(sched, out_shape[2], out_shape[3], out_shape[0] * co // cb),
                         dynamic_ci=not depthwise, **geometry)
        hint = (w_const.weight_name or "conv_weight") + "_oihw4o"
        packed = Conv4Spec.pack_weights(_constant_array(hb, op.weight))
        w_buf = hb.emit(opencl.WeightOp(hb.store.add(hint, packed),
                                        opencl.BufferType(packed.size, f32))).results[0]
    else:
        cog = co // groups
        cb = next(b for b in (sched.conv_co_block, 4, 2, 1) if b <= cog and cog % b == 0)
        spec = ConvSpec(co_block=cb, **geometry)
        w_buf = hb.buffer(op.weight)
        scalars = []
    ins = [hb.buffer(op.input), w_buf] + ([hb.buffer(op.bias)] if op.bias is not None else [])
    hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc, scalars)


def _constant_array(hb: HostBuilder, value: SSAValue) -> np.ndarray:
    from adreno_mlir.passes.constants import constant_value

    return constant_value(value, hb.store)


def _lower_gemm(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.GemmOp = group.head  # type: ignore[assignment]
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
                    alpha=op.alpha.value.data, epilogue=epi)
    hb.launch(spec, [hb.buffer(op.a), hb.buffer(op.b), *extras, hb.alloc(group.result)], loc)


def _substitute_src(e: Expr, replacement: Expr) -> Expr:
    if isinstance(e, Src):
        return replacement
    if isinstance(e, Un):
        return Un(e.kind, _substitute_src(e.x, replacement), e.params)
    if isinstance(e, Bin):
        return Bin(e.kind, _substitute_src(e.a, replacement), _substitute_src(e.b, replacement))
    return e


def _lower_pool(hb: HostBuilder, group: Group, loc) -> None:
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


def _lower_reduce(hb: HostBuilder, group: Group, loc) -> None:
    op = group.head
    x_shape = graph.shape_of(op.input)
    if isinstance(op, graph.GlobalAvgPoolOp):
        axes = tuple(range(2, len(x_shape)))
    else:
        axes = graph.ints(op.axes)
    # Epilogue coordinates are those of the input rank with reduced axes at 0, i.e.
    # the keepdims output shape.
    keep_shape = tuple(1 if d in axes else s for d, s in enumerate(x_shape))
    epi, extras = _epi_args(hb, group, keep_shape)
    spec = ReduceSpec(x_shape=x_shape, axes=axes, epilogue=epi)
    hb.launch(spec, [hb.buffer(op.input), *extras, hb.alloc(group.result)], loc)


def _lower_resize(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.ResizeOp = group.head  # type: ignore[assignment]
    x_shape, out_shape = graph.shape_of(op.input), graph.shape_of(op.result)
    epi, extras = _epi_args(hb, group, out_shape)
    scales = op.spatial_scales()
    spec = ResizeSpec(x_shape=x_shape, out_shape=out_shape, mode=op.mode.data,
                      coord_mode=op.coordinate_transformation_mode.data,
                      nearest_mode=op.nearest_mode.data, scales=scales, epilogue=epi)
    hb.launch(spec, [hb.buffer(op.input), *extras, hb.alloc(group.result)], loc)


def _copy(hb: HostBuilder, src: SSAValue, dst: SSAValue, shape, in_acc: Access, out_acc: Access, loc, kind: str,
          out_offset: int | None = None) -> None:
    spec = MapSpec(shape=tuple(shape), inputs=(in_acc,), out=out_acc, expr=In(0), kind=kind,
                   out_offset_arg=out_offset is not None)
    hb.launch(spec, [src, dst], loc, [] if out_offset is None else [out_offset])


def _lower_concat(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.ConcatOp = group.head  # type: ignore[assignment]
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


def _lower_transpose(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.TransposeOp = group.head  # type: ignore[assignment]
    in_strides = contiguous_strides(graph.shape_of(op.input))
    out_shape = graph.shape_of(op.result)
    perm = graph.ints(op.perm)
    _copy(hb, hb.buffer(op.input), hb.alloc(op.result), out_shape,
          Access(0, tuple(in_strides[p] for p in perm)), Access(0, contiguous_strides(out_shape)), loc, "transpose")


def _lower_slice(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.SliceOp = group.head  # type: ignore[assignment]
    in_strides = contiguous_strides(graph.shape_of(op.input))
    out_shape = graph.shape_of(op.result)
    starts, steps = graph.ints(op.starts), graph.ints(op.steps)
    base = sum(s * st for s, st in zip(starts, in_strides))
    _copy(hb, hb.buffer(op.input), hb.alloc(op.result), out_shape,
          Access(base, tuple(st * s for st, s in zip(steps, in_strides))),
          Access(0, contiguous_strides(out_shape)), loc, "slice")


def _lower_softmax(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.SoftmaxOp = group.head  # type: ignore[assignment]
    shape = graph.shape_of(op.input)
    spec = SoftmaxSpec(shape=shape, axis=op.axis.value.data % len(shape))
    hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


def _lower_matmul(hb: HostBuilder, group: Group, loc) -> None:
    op: graph.MatMulOp = group.head  # type: ignore[assignment]
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
                      b_batch_strides=tuple(s * k * n for s in b_bs), m=m, n=n, k=k)
    hb.launch(spec, [hb.buffer(op.lhs), hb.buffer(op.rhs), hb.alloc(op.result)], loc)


_HEAD_LOWERINGS = {
    graph.Conv2dOp: _lower_conv,
    graph.GemmOp: _lower_gemm,
    graph.MaxPoolOp: _lower_pool,
    graph.AvgPoolOp: _lower_pool,
    graph.GlobalAvgPoolOp: _lower_reduce,
    graph.ReduceMeanOp: _lower_reduce,
    graph.ResizeOp: _lower_resize,
    graph.ConcatOp: _lower_concat,
    graph.TransposeOp: _lower_transpose,
    graph.SliceOp: _lower_slice,
    graph.SoftmaxOp: _lower_softmax,
    graph.MatMulOp: _lower_matmul,
}


@dataclass(frozen=True)
class ConvertGraphToOpenCL(ModulePass):
    """Lower every graph function to OpenCL kernels and a host program."""

    name = "convert-graph-to-opencl"

    # The schedule (the pass object itself is what kernel generators read):
    conv_co_block: int = 8
    """Output channels per work-item in NCHW convolutions (1, 2, 4 or 8)."""
    conv_x_block: int = 4
    """Adjacent output pixels per work-item in vectorised convolutions."""
    vectorize: bool = True
    """Use the float4 (OIHW4o) convolution schedule where it applies."""
    fuse: bool = True
    """Fuse element-wise chains and epilogues."""
    work_group: tuple[int, ...] = ()
    """Preferred local size, e.g. `work-group=16,4,4`; empty: the driver chooses."""
    packed_co_blocks: int = 1
    """Output channel blocks per work-item in NCHW4c convolutions (2 halves the
    work-items: slower on the H200, see docs/measurements.md)."""
    min_work_items: int = 16384
    """NCHW convolutions use smaller pixel blocks rather than launch fewer work-items."""
    split_k_items: int = 8192
    """NCHW4c convolutions with fewer work-items than this split their input channels
    over more work-items (0 disables split-K)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.conv_co_block not in (1, 2, 4, 8):
            raise CompileError("convert-graph-to-opencl: conv-co-block must be 1, 2, 4 or 8")
        if self.conv_x_block not in (1, 2, 4) or self.packed_co_blocks not in (1, 2):
            raise CompileError("convert-graph-to-opencl: conv-x-block must be 1, 2 or 4 and "
                               "packed-co-blocks 1 or 2")
        if self.min_work_items < 0 or self.split_k_items < 0 or any(d < 1 for d in self.work_group):
            raise CompileError("convert-graph-to-opencl: min-work-items and split-k-items must be >= 0, "
                               "work-group sizes >= 1")
        FoldBatchNorm().apply(ctx, op)  # batch norms have no kernel of their own
        schedule = self
        kernels: dict[KernelSpec, str] = {
            # kernels already in the module keep their names
        }
        for fn in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
            if not any(isinstance(t, (TensorType, texture.TextureTensorType)) for t in types):
                continue  # already a host function (or nothing tensor-level in it)
            hb = HostBuilder(op, fn, schedule, kernels)
            for group in plan_groups(fn.body.block, schedule.fuse):
                hb.lower(group)
            host = hb.finish()
            op.body.block.insert_op_before(host, fn)
            fn.detach()
            fn.erase(safe_erase=False)
        # Tidy the generated kernels: common subexpressions (row bases shared by taps).
        from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

        CommonSubexpressionElimination().apply(ctx, op)
