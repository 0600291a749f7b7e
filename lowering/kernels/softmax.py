"""Softmax along one axis: one work-item per (outer, inner) row; max, sum, normalise."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, numel


@dataclass(frozen=True)
class SoftmaxSpec(KernelSpec):
    shape: tuple[int, ...]
    axis: int

    def base_name(self) -> str:
        return "softmax"

    def dims(self) -> tuple[int, int, int]:
        return numel(self.shape[: self.axis]), self.shape[self.axis], numel(self.shape[self.axis + 1:])

    def global_size(self) -> tuple[int, ...]:
        outer, _, inner = self.dims()
        return (inner, outer)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split_args(args)
        outer, length, inner = self.dims()
        i, o = kb.global_id(0, "inner"), kb.global_id(1, "outer")
        base = kb.add(kb.mul(o, length * inner), i, "base")

        def at(k: KernelBuilder, j: SSAValue) -> SSAValue:
            return k.add(base, k.mul(j, inner))

        (mx,) = kb.for_(0, length, 1, [kb.f(float("-inf"))],
                        lambda k, j, a: [k.fmax(a[0], k.load(x, at(k, j)))], "j")
        (total,) = kb.for_(0, length, 1, [kb.f(0.0)],
                           lambda k, j, a: [k.fadd(a[0], k.exp(k.fsub(k.load(x, at(k, j)), mx)))], "j")
        inv = kb.fdiv(1.0, total, "inv")

        def write(k: KernelBuilder, j: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            idx = at(k, j)
            k.store(k.fmul(k.exp(k.fsub(k.load(x, idx), mx)), inv), out, idx)
            return []

        kb.for_(0, length, 1, [], write, "j")
