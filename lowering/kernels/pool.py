"""Pooling and reductions.

`PoolSpec` (max / average windows with padding, dilation and ceil mode, grid
(OW, OH, N*C)) loops over its window inside one work-item per output element; a max
window holding a NaN is NaN (`fmax`, arith.maximumf), padded taps are skipped.
`ReduceSpec` (any reduction kind of `REDUCTIONS` over any set of axes: global average
pool, ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp) does too when its
configuration (lowering/families/rows.py) asks for one work-item per output; otherwise
each output gets a work-group of `items` work-items that combine strided shares of the reduced extent and then
their partial results in local memory (`work_group_sum`, shared with the NCHW4c mean). A
global pool over 112x112 pixels is then 49 loads per work-item instead of 12544, which
on a GPU is the difference between a few dozen long serial loops and a full machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import (KernelSpec, contiguous_strides, numel, window_count, window_loops,
                                                 work_group_allsum, work_group_sum)


@dataclass(frozen=True)
class PoolSpec(KernelSpec):
    kind: str  # "max" | "avg"
    x_shape: tuple[int, int, int, int]
    out_shape: tuple[int, int, int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    count_include_pad: bool

    def base_name(self) -> str:
        return f"{self.kind}pool{self.kernel[0]}x{self.kernel[1]}{self.epilogue.suffix()}"

    def global_size(self) -> tuple[int, ...]:
        n, c, oh, ow = self.out_shape
        return (ow, oh, n * c)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x_ptr,), extras, out = self.split_args(args)
        _, c, h, w = self.x_shape
        _, _, oh, ow = self.out_shape
        ox, oy, z = kb.global_id(0, "ox"), kb.global_id(1, "oy"), kb.global_id(2, "z")
        y0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "y0")
        x0 = kb.sub(kb.mul(ox, self.strides[1]), self.pads[1], "x0")
        base = kb.mul(z, h * w, "base")
        is_max = self.kind == "max"

        def tap(k: KernelBuilder, a, b, acc: list[SSAValue]) -> list[SSAValue]:
            iy = k.add(y0, k.mul(a, self.dilations[0]))
            ix = k.add(x0, k.mul(b, self.dilations[1]))
            valid = k.all_of(k.in_bounds(iy, 0, h) + k.in_bounds(ix, 0, w))
            idx = k.select(valid, k.i(k.add(base, k.add(k.mul(iy, w), ix))), k.i(0))
            v = k.load(x_ptr, idx)
            if is_max:
                # NaN-propagating (arith.maximumf): a NaN tap makes the window NaN, as in
                # PyTorch and IEEE 754-2019 maximum. A padded tap reads element 0 and is
                # never selected, so it neither wins nor brings a NaN in; a window of
                # padding only would stay -inf.
                return [k.select(valid, k.fmax(acc[0], v), acc[0])]
            return [k.fadd(acc[0], k.select(valid, v, k.f(0.0)))]

        init = [kb.f(float("-inf") if is_max else 0.0)]
        acc = window_loops(kb, self.kernel, init, tap)
        value = acc[0]
        if not is_max:
            value = kb.fdiv(value, kb.to_float(window_count(kb, y0, x0, h, w, self.kernel, self.pads, self.count_include_pad)))
        coords = [kb.div(z, c), kb.rem(z, c), oy, ox] if self.epilogue.reads_coords else []
        value = self.epilogue.apply(kb, value, coords, extras)
        kb.store(value, out, kb.add(kb.mul(kb.add(kb.mul(z, oh), oy), ow), ox))


_INF = float("inf")
FLT_MAX = 3.4028234663852886e38


def _add(k: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return k.fadd(a, b)


def _mul(k: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return k.fmul(a, b)


def _max(k: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return k.fmax(a, b)  # NaN if either is NaN: a NaN element makes its maximum NaN, as numpy


def _min(k: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return k.fmin(a, b)


@dataclass(frozen=True)
class Reduction:
    """How one reduction kind accumulates: `combine` folds `term(x)` of each element into
    an accumulator that starts at `init` (the combine's identity, also what the idle
    work-items of a work-group contribute); `finish(k, total, count)` turns the total
    into the output. The work-group path combines partial results with the same
    `combine`, so every kind has both schedules."""

    init: float
    combine: Callable[[KernelBuilder, SSAValue, SSAValue], SSAValue] = _add
    term: Callable[[KernelBuilder, SSAValue], SSAValue] | None = None
    finish: Callable[[KernelBuilder, SSAValue, int], SSAValue] | None = None


REDUCTIONS: dict[str, Reduction] = {
    "mean": Reduction(0.0, finish=lambda k, t, n: k.fmul(t, 1.0 / n)),
    "sum": Reduction(0.0),
    "max": Reduction(-_INF, _max),
    "min": Reduction(_INF, _min),
    "prod": Reduction(1.0, _mul),
    "l1": Reduction(0.0, term=lambda k, v: k.absf(v)),
    "l2": Reduction(0.0, term=lambda k, v: k.fmul(v, v), finish=lambda k, t, n: k.sqrt(t)),
    "sum_square": Reduction(0.0, term=lambda k, v: k.fmul(v, v)),
    "log_sum": Reduction(0.0, finish=lambda k, t, n: k.log(t)),
    # A sum of exp(x - m) after a pass for the maximum m; term and finish depend on m
    # (ReduceSpec.body).
    "log_sum_exp": Reduction(0.0),
}
"""The reduction kinds (`graph.ReduceOp.KIND`)."""


@dataclass(frozen=True)
class ReduceSpec(KernelSpec):
    """A reduction (`kind`, a key of `REDUCTIONS`) over `axes` of `x_shape`; the output
    is the kept axes, contiguous. Empty `axes`: each output is its one element's.

    `items` = 1: one work-item per output loops over the reduced extent (grid: the
    outputs). `items` > 1 (a power of two, from the row family's configuration): a work-group
    of `items` work-items per output, grid (items, outputs), work-item l combining the
    reduced elements l, l + items, ... (adjacent work-items read adjacent elements when
    the reduced axes are the trailing ones) before `work_group_sum` combines the partial
    results with the kind's own `combine` (add, max, min, multiply).

    "log_sum_exp" reads the elements twice: their maximum m first (a work-group
    `work_group_allsum` of maxima when grouped), then log(sum(exp(x - m))) + m."""

    x_shape: tuple[int, ...]
    axes: tuple[int, ...]
    items: int = 1
    kind: str = "mean"

    def __post_init__(self):
        if self.kind not in REDUCTIONS:
            raise ValueError(f"unknown reduction kind {self.kind!r}; known: {', '.join(REDUCTIONS)}")

    def base_name(self) -> str:
        group = f"_wg{self.items}" if self.items > 1 else ""
        return f"reduce_{self.kind}{group}{self.epilogue.suffix()}"

    def kept(self) -> list[int]:
        return [d for d in range(len(self.x_shape)) if d not in self.axes]

    def global_size(self) -> tuple[int, ...]:
        outputs = numel([self.x_shape[d] for d in self.kept()])
        return (self.items, outputs) if self.items > 1 else (outputs,)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1) if self.items > 1 else None

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x_ptr,), extras, out = self.split_args(args)
        strides = contiguous_strides(self.x_shape)
        kept = self.kept()
        red_shape = [self.x_shape[d] for d in self.axes]
        red_strides = [strides[d] for d in self.axes]
        count = numel(red_shape)
        grouped = self.items > 1
        gid = kb.global_id(1 if grouped else 0, "i")
        coords = kb.unravel(gid, [self.x_shape[d] for d in kept])
        base = kb.linear(coords, [strides[d] for d in kept])
        trailing = list(self.axes) == list(range(len(self.x_shape) - len(self.axes), len(self.x_shape)))
        red = REDUCTIONS[self.kind]
        lid = kb.local_id(0, "l") if grouped else 0

        def accumulate(init: float, combine, term) -> SSAValue:
            """This work-item's share of the extent combined (all of it when not grouped);
            work-items past the extent (a small reduction in a large group) skip the loop
            and contribute `init`."""
            if count == 1 and not grouped:  # a reduction of one element (size-1 or no axes): no loop
                v = kb.load(x_ptr, base)
                return v if term is None else term(kb, v)

            def step(k: KernelBuilder, r: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                off = r if trailing else k.linear(k.unravel(r, red_shape), red_strides)
                v = k.load(x_ptr, k.add(base, off))
                return [combine(k, acc[0], v if term is None else term(k, v))]

            (partial,) = kb.for_(lid, count, self.items, [kb.f(init)], step, "r")
            return partial

        term, finish = red.term, red.finish
        if self.kind == "log_sum_exp":
            mx = accumulate(-_INF, _max, None)
            if grouped:
                mx = work_group_allsum(kb, mx, lid, self.items, "row_max", combine=_max)
            # An infinite maximum is clamped to +-FLT_MAX so that x - m is never inf - inf
            # (NaN): a +inf element still gives +inf, only -inf elements give -inf.
            m = kb.fmin(kb.fmax(mx, -FLT_MAX), FLT_MAX)

            def term(k: KernelBuilder, v: SSAValue) -> SSAValue:
                return k.exp(k.fsub(v, m))

            def finish(k: KernelBuilder, total: SSAValue, n: int) -> SSAValue:
                return k.fadd(k.log(total), m)

        def finish_output(k: KernelBuilder, total: SSAValue) -> None:
            value = total if finish is None else finish(k, total, count)
            full = []
            it = iter(coords)
            for d in range(len(self.x_shape)):
                full.append(next(it) if d in kept else k.i(0))
            value = self.epilogue.apply(k, value, full, extras)
            k.store(value, out, gid)

        partial = accumulate(red.init, red.combine, term)
        if grouped:
            work_group_sum(kb, partial, lid, self.items, finish_output, combine=red.combine)
        else:
            finish_output(kb, partial)
