"""Softmax along one axis: the row's maximum, the sum of exp(x - max), then the
normalised values.

`items` = 1: one work-item per (outer, inner) row, three loops over it. `items` > 1 (a
power of two, the row family's work-items per row, lowering/families/rows.py): a work-group per row, work-item l taking
elements l, l + items, ...; the maximum and the sum are work-group reductions
(`work_group_allsum`), so a transformer's attention rows (50-3136 of them, 49-3136
long) keep a GPU busy instead of running a handful of long serial loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, numel, work_group_allsum


@dataclass(frozen=True)
class SoftmaxSpec(KernelSpec):
    shape: tuple[int, ...]
    axis: int
    items: int = 1
    log: bool = False
    """LogSoftmax (graph.log_softmax): the last step writes x - max - log(sum) instead of
    exp(x - max) / sum; everything before it is the softmax's."""

    def base_name(self) -> str:
        return ("log_softmax" if self.log else "softmax") + (f"_wg{self.items}" if self.items > 1 else "")

    def dims(self) -> tuple[int, int, int]:
        return numel(self.shape[: self.axis]), self.shape[self.axis], numel(self.shape[self.axis + 1:])

    def global_size(self) -> tuple[int, ...]:
        outer, _, inner = self.dims()
        return (self.items, outer * inner) if self.items > 1 else (inner, outer)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1) if self.items > 1 else None

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split_args(args)
        outer, length, inner = self.dims()
        grouped = self.items > 1
        if grouped:
            r = kb.global_id(1, "r")
            o, i = (kb.div(r, inner, "outer"), kb.rem(r, inner, "inner")) if inner > 1 else (r, kb.i(0))
            lid, step = kb.local_id(0, "l"), self.items
        else:
            i, o = kb.global_id(0, "inner"), kb.global_id(1, "outer")
            lid, step = kb.i(0), 1
        base = kb.add(kb.mul(o, length * inner), i, "base")

        def at(k: KernelBuilder, j: SSAValue) -> SSAValue:
            return k.add(base, k.mul(j, inner))

        (mx,) = kb.for_(lid, length, step, [kb.f(float("-inf"))],
                        lambda k, j, a: [k.fmax(a[0], k.load(x, at(k, j)))], "j")
        if grouped:
            mx = work_group_allsum(kb, mx, lid, self.items, "row_max", combine=lambda k, a, b: k.fmax(a, b))
        (total,) = kb.for_(lid, length, step, [kb.f(0.0)],
                           lambda k, j, a: [k.fadd(a[0], k.exp(k.fsub(k.load(x, at(k, j)), mx)))], "j")
        if grouped:
            total = work_group_allsum(kb, total, lid, self.items, "row_sum")
        if self.log:
            log_sum = kb.log(total)
        else:
            inv = kb.fdiv(1.0, total, "inv")

        def write(k: KernelBuilder, j: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            idx = at(k, j)
            if self.log:  # LogSoftmax: never log(softmax), which is -inf where exp underflows
                k.store(k.fsub(k.fsub(k.load(x, idx), mx), log_sum), out, idx)
            else:
                k.store(k.fmul(k.exp(k.fsub(k.load(x, idx), mx)), inv), out, idx)
            return []

        kb.for_(lid, length, step, [], write, "j")
