"""`graph.cumsum`: a cumulative sum along one axis.

The input is viewed as [outer, length, inner]; one work-item per (outer, inner) line adds
the line's `length` elements in order (front to back, or back to front with `reverse`),
storing each running sum (before its element is added, with `exclusive`). A serial scan:
the lines of these models are sequence positions (a few hundred), and the order of the
adds is onnxruntime's, so float results match it to the bit.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec


@dataclass(frozen=True)
class CumSumSpec(KernelSpec):
    outer: int
    length: int
    inner: int
    exclusive: bool = False
    reverse: bool = False

    def base_name(self) -> str:
        return "cumsum" + ("_exclusive" if self.exclusive else "") + ("_reverse" if self.reverse else "")

    def global_size(self) -> tuple[int, ...]:
        return (self.outer * self.inner,)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split_args(args)
        gid = kb.global_id(0, "i")
        o, i = kb.unravel(gid, (self.outer, self.inner), ("o", "in"))
        base = kb.add(kb.mul(o, self.length * self.inner), i)

        def step(k: KernelBuilder, t: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            (acc,) = carried
            pos = k.sub(self.length - 1, t) if self.reverse else t
            index = k.add(base, k.mul(pos, self.inner))
            total = k.fadd(acc, k.load(x, index))
            k.store(acc if self.exclusive else total, out, index)
            return [total]

        kb.for_(0, self.length, 1, [kb.f(0.0)], step, "t")
