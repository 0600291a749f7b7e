"""What every kernel generator shares: specs, argument lists, fused epilogues.

A kernel is described by a frozen, hashable *spec* (shapes, attributes, schedule,
epilogue). The lowering keeps one `opencl.kernel` per distinct spec, so ResNet-50's
repeated blocks share kernels. `build()` emits the kernel as IR; `global_size()` is
the launch grid. Kernel arguments are always: the head op's inputs, then the
epilogue's extra inputs, then the output buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from adreno_mlir.kernel_math.matmul import contiguous_strides, numel  # noqa: F401 - used by the kernels
from adreno_mlir.dialects import opencl
from adreno_mlir.lowering.expr import Expr, Src, describe, emit_expr, memo_loader
from adreno_mlir.lowering.kernel_builder import GLOBAL_F32, KernelBuilder, finish, new_kernel


def broadcast_strides(in_shape: Sequence[int], out_shape: Sequence[int]) -> tuple[int, ...]:
    """Strides to read `in_shape` at coordinates of `out_shape` (numpy broadcasting)."""
    cs = contiguous_strides(in_shape)
    pad = len(out_shape) - len(in_shape)
    return tuple(
        0 if d < pad or in_shape[d - pad] == 1 else cs[d - pad] for d in range(len(out_shape))
    )


@dataclass(frozen=True)
class Epilogue:
    """Element-wise work fused after a kernel's main value, before the store."""

    expr: Expr = Src()
    strides: tuple[tuple[int, ...], ...] = ()
    """One stride vector per extra input, over the kernel's output coordinates."""

    @property
    def n_inputs(self) -> int:
        return len(self.strides)

    def suffix(self) -> str:
        d = describe(self.expr)
        return f"_{d}" if d else ""

    @property
    def reads_coords(self) -> bool:
        """Whether `apply` needs output coordinates (only to read extra inputs): kernels
        skip computing them otherwise."""
        return self.n_inputs > 0

    def apply(self, kb: KernelBuilder, value: SSAValue, coords: Sequence[SSAValue], ptrs: Sequence[SSAValue],
              offsets: Sequence[int] = ()) -> SSAValue:
        """The epilogue of `value` at output coordinates `coords` plus the static
        `offsets` (a blocked kernel passes its block's base coordinates once and each
        element's offset, so every extra input's index is one add from a shared base)."""
        if self.expr == Src():
            return value

        def load(k: int) -> SSAValue:
            strides = self.strides[k]
            return kb.load(ptrs[k], kb.linear(coords, strides, sum(o * s for o, s in zip(offsets, strides))))

        return emit_expr(kb, self.expr, value, memo_loader(load))

    def apply_pixels(self, kb: KernelBuilder, value: SSAValue, n: SSAValue, co: SSAValue, p: SSAValue,
                     ptrs: Sequence[SSAValue], width: int, dco: int = 0, dp: int = 0) -> SSAValue:
        """The epilogue of `value`, a vector of consecutive output pixels p + dp, p + dp + 1,
        ... (counted over the plane of an NCHW output of row length `width`) of channel
        co + dco. An extra input that is contiguous over the plane is read with one vload,
        one that is constant over it (a per-channel scale) with one load and a splat; any
        other, lane by lane."""
        if self.expr == Src():
            return value
        lanes = value.type.get_shape()[0]
        vk = kb.vector(lanes=lanes)

        def load(k: int) -> SSAValue:
            sn, sc, sy, sx = self.strides[k]
            base = kb.linear([n, co], [sn, sc], dco * sc)
            if sx == 1 and sy == width:
                return kb.vload(ptrs[k], kb.add(base, kb.add(p, dp)), lanes)
            if sx == 0 and sy == 0:
                return vk.splat(kb.load(ptrs[k], base), lanes)
            values = []
            for lane in range(lanes):
                q = kb.add(p, dp + lane)
                values.append(kb.load(ptrs[k], kb.add(base, kb.linear([kb.div(q, width), kb.rem(q, width)], [sy, sx]))))
            return kb.vec(values)

        return emit_expr(vk, self.expr, value, memo_loader(load))


@dataclass(frozen=True)
class KernelSpec:
    """Base of kernel specs; subclasses are frozen dataclasses (hashable)."""

    epilogue: Epilogue = field(default_factory=Epilogue, kw_only=True)

    def base_name(self) -> str:
        raise NotImplementedError

    def input_names(self) -> tuple[str, ...]:
        return ("input",)

    def arg_names(self) -> list[str]:
        extras = [f"x{k}" for k in range(self.epilogue.n_inputs)]
        return [*self.input_names(), *extras, "out"]

    def global_size(self) -> tuple[int, ...]:
        raise NotImplementedError

    def local_size(self) -> tuple[int, ...] | None:
        """The local size the kernel needs (a work-group reduction is written for its
        work-group's extent), or None: the config's `work_group` or the driver's choice."""
        return None

    def body(self, kb: KernelBuilder, args: Sequence[SSAValue]) -> None:
        raise NotImplementedError

    def shared(self) -> KernelSpec:
        """The spec with extents its kernel never reads set to 0, so launches that
        differ only in them share a kernel (the launch grid comes from the real spec)."""
        return self

    def scalar_names(self) -> tuple[str, ...]:
        """i32 arguments after the output: sizes passed at launch instead of being baked
        into the kernel, so launches that differ only in them share one kernel."""
        return ()

    def pointer_types(self) -> dict[str, Any]:
        """Buffer arguments whose pointee is not f32, by name (an embedding lookup's i32
        token ids)."""
        return {}

    def build(self, name: str) -> opencl.KernelOp:
        other = self.pointer_types()
        args = ([(n, other.get(n, GLOBAL_F32)) for n in self.arg_names()]
                + [(n, i32) for n in self.scalar_names()])
        kernel, kb = new_kernel(name, args)
        self.body(kb, list(kernel.args))
        finish(kb)
        return kernel

    def split_args(self, args: Sequence[SSAValue]) -> tuple[list[SSAValue], list[SSAValue], SSAValue]:
        n = len(self.input_names())
        args = list(args[: len(args) - len(self.scalar_names())])
        return args[:n], args[n:-1], args[-1]

    def scalar(self, args: Sequence[SSAValue], name: str) -> SSAValue:
        names = self.scalar_names()
        return args[len(args) - len(names) + names.index(name)]


def row_floats(kb: KernelBuilder, ptr: SSAValue, at: SSAValue, count: int, stride: int = 1) -> list[SSAValue]:
    """The `count` floats at ptr[at], ptr[at + stride], ...: float4 loads where they are
    contiguous and whole (stride 1, count % 4 == 0), else a float at a time. An attention
    kernel keeps a query row, or a K or V row of a local tile, in registers so."""
    if stride != 1 or count % 4:
        return [kb.load(ptr, kb.add(at, c * stride) if c else at) for c in range(count)]
    return [kb.lane(v4, n) for c in range(0, count, 4) for v4 in [kb.vload(ptr, kb.add(at, c) if c else at, 4)]
            for n in range(4)]


def local_fragment(kb: KernelBuilder, ptr: SSAValue, tid: SSAValue, offset: int, count: int, width: int,
                   spacing: int) -> list[SSAValue]:
    """The `count` floats a work-item reads from a local array as `count / width` groups of
    `width` neighbours (one vload each; a scalar load for width 1): group g at
    offset + g * spacing + tid * width. The register tiles of the local-memory GEMMs
    (matmul.py, packed_conv.py) read their rows and columns so."""
    values = []
    for g in range(count // width):
        off = kb.add(kb.mul(tid, width), offset + g * spacing)
        if width == 1:
            values.append(kb.load(ptr, off))
        else:
            vec = kb.vload(ptr, off, width)
            values += [kb.lane(vec, j) for j in range(width)]
    return values


def work_group_sum(kb: KernelBuilder, partial: SSAValue, lid: SSAValue, items: int,
                   then: Callable[[KernelBuilder, SSAValue], None], *, scratch: SSAValue | None = None,
                   stride: int = 1, offset: SSAValue | int = 0, finish_if: Sequence[SSAValue] = (),
                   combine: Callable[[KernelBuilder, SSAValue, SSAValue], SSAValue] | None = None) -> None:
    """Add up `partial` (a float or a float4) over `items` work-items (`lid`: this one's
    index among them), then run `then(k, total)` in work-item 0 (where `finish_if` holds too).

    A tree in local memory: log2(items) - 1 halving steps, each followed by a barrier
    that every work-item reaches (the branches only guard the adds), and work-item 0
    adds the last two partial sums itself. Work-item i's slot is `i * stride + offset`
    in `scratch` (default: a new local array of `items` elements), so several sums can
    share one array (split-K GEMV: one per column of the work-group). Local arrays live
    at kernel scope: `kb` must be the kernel body's builder. The order of the adds
    differs from a serial loop's, well within fp32 rounding; a NaN or infinity anywhere
    reaches the total. Used by the global means (pool.py, packed_pool.py) and the GEMV.
    `combine(k, a, b)` replaces the add (e.g. `k.fmax` for a row maximum)."""
    add = combine or (lambda k, a, b: k.fadd(a, b))
    if items < 2 or items & (items - 1):
        raise ValueError(f"a work-group sum needs a power of two >= 2 work-items, got {items}")
    if scratch is None:
        scratch = kb.local_alloc(items, partial.type, "partial")

    def slot(k: KernelBuilder, i):
        return k.add(offset, i * stride) if isinstance(i, int) else k.add(k.mul(i, stride), offset)

    kb.store(partial, scratch, slot(kb, lid))
    kb.barrier()
    half = items // 2
    while half > 1:
        def fold(k: KernelBuilder, half: int = half) -> None:
            mine = slot(k, lid)
            k.store(add(k, k.load(scratch, mine), k.load(scratch, slot(k, k.add(lid, half)))), scratch, mine)

        kb.if_(kb.cmp("slt", lid, half), fold)
        kb.barrier()
        half //= 2
    kb.guard([kb.cmp("eq", lid, 0), *finish_if],
             lambda k: then(k, add(k, k.load(scratch, slot(k, 0)), k.load(scratch, slot(k, 1)))))


def work_group_allsum(kb: KernelBuilder, partial: SSAValue, lid: SSAValue, items: int,
                      hint: str | None = None,
                      combine: Callable[[KernelBuilder, SSAValue, SSAValue], SSAValue] | None = None) -> SSAValue:
    """The sum of `partial` over `items` work-items, returned to every one of them (a
    LayerNorm row needs its mean everywhere): `work_group_sum` into a local array of its
    own, then a barrier and a read of slot 0. Each call takes a fresh array, so a second
    sum never overwrites a first one that a slow work-item has yet to read. `combine` as
    for `work_group_sum` (a maximum instead of a sum)."""
    scratch = kb.local_alloc(items, partial.type, hint)
    work_group_sum(kb, partial, lid, items, lambda k, total: k.store(total, scratch, 0), scratch=scratch,
                   combine=combine)
    kb.barrier()
    return kb.load(scratch, 0)


def work_group_allreduce(kb: KernelBuilder, partials: Sequence[SSAValue], lid: SSAValue, items: int,
                         hint: str | None = None,
                         combine: Callable[[KernelBuilder, SSAValue, SSAValue], SSAValue] | None = None
                         ) -> list[SSAValue]:
    """Each of `partials` reduced over `items` work-items and returned to every one of them,
    all in one tree: a local array of len(partials) x items, log2(items) halving steps that
    each fold every value, one barrier a step (`work_group_allsum` per value would take a
    tree and its barriers each: an attention row's G heads' maxima and sums). `combine` as
    for `work_group_sum`."""
    add = combine or (lambda k, a, b: k.fadd(a, b))
    if items < 2 or items & (items - 1):
        raise ValueError(f"a work-group reduction needs a power of two >= 2 work-items, got {items}")
    n = len(partials)
    scratch = kb.local_alloc(n * items, partials[0].type, hint)
    for g, v in enumerate(partials):
        kb.store(v, scratch, kb.add(lid, g * items))
    kb.barrier()
    half = items // 2
    while half >= 1:
        def fold(k: KernelBuilder, half: int = half) -> None:
            for g in range(n):
                mine = k.add(lid, g * items)
                k.store(add(k, k.load(scratch, mine), k.load(scratch, k.add(mine, half))), scratch, mine)

        kb.if_(kb.cmp("slt", lid, half), fold)
        kb.barrier()
        half //= 2
    return [kb.load(scratch, kb.i(g * items)) for g in range(n)]


def window_leaves_input(size: int, out: int, k: int, stride: int, pad: int, dilation: int) -> bool:
    """Whether a sliding window along one axis can read outside [0, size): then its
    reads need bounds checks."""
    last = (out - 1) * stride - pad + (k - 1) * dilation
    return pad > 0 or last >= size


UNROLL_TAPS = 9
"""Windows of at most this many taps are unrolled (a 3x3 conv's nine taps become
straight-line code, a 7x7 stem stays a loop)."""


def window_loops(kb: KernelBuilder, window: Sequence[int], carried: list[SSAValue], tap,
                 unroll: bool | str = True) -> list[SSAValue]:
    """`carried = tap(kb, kh, kw, carried)` over a (KH, KW) window, as an `scf.for` nest
    (kh, kw are loop indices). Small windows are marked `opencl.unroll`: by the OpenCL
    compiler (`unroll=True`, `#pragma unroll`) or by the printer (`unroll="print"`). A 1x1
    window is no loop at all."""
    kh_n, kw_n = window
    if kh_n == kw_n == 1:
        return tap(kb, 0, 0, carried)
    mark = unroll if kh_n * kw_n <= UNROLL_TAPS else False

    def row(k1: KernelBuilder, a, acc1):
        if kw_n == 1:
            return tap(k1, a, 0, acc1)
        return k1.for_(0, kw_n, 1, acc1, lambda k2, b, acc2: tap(k2, a, b, acc2), "kw", mark)

    if kh_n == 1:
        return kb.for_(0, kw_n, 1, carried, lambda k2, b, acc2: tap(k2, 0, b, acc2), "kw", mark)
    return kb.for_(0, kh_n, 1, carried, row, "kh", mark)


def window_count(kb, y0, x0, h: int, w: int, kernel, pads, count_include_pad: bool):
    """Taps of an average-pool window starting at (y0, x0): the valid ones, or with
    count_include_pad those inside the padded input (ONNX / PyTorch semantics)."""
    kh, kw = kernel
    if count_include_pad:
        y1 = kb.min_i(kb.add(y0, kh), h + pads[2])
        x1 = kb.min_i(kb.add(x0, kw), w + pads[3])
        return kb.mul(kb.sub(y1, y0), kb.sub(x1, x0))
    y1 = kb.min_i(kb.add(y0, kh), h)
    x1 = kb.min_i(kb.add(x0, kw), w)
    return kb.mul(kb.sub(y1, kb.max_i(y0, 0)), kb.sub(x1, kb.max_i(x0, 0)))
