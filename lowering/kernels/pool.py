"""Pooling and reductions: one work-item per output element.

`PoolSpec` (max / average windows with padding, dilation and ceil mode, grid
(OW, OH, N*C)) and `ReduceSpec` (mean over any set of axes: global average pool and
ReduceMean) loop over their windows inside the work-item.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, contiguous_strides, numel, window_count, window_loops


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
                return [k.select(valid, k.maxnum(acc[0], v), acc[0])]
            return [k.fadd(acc[0], k.select(valid, v, k.f(0.0)))]

        init = [kb.f(float("-inf") if is_max else 0.0)]
        acc = window_loops(kb, self.kernel, init, tap)
        value = acc[0]
        if not is_max:
            value = kb.fdiv(value, kb.to_float(window_count(kb, y0, x0, h, w, self.kernel, self.pads, self.count_include_pad)))
        coords = [kb.div(z, c), kb.rem(z, c), oy, ox] if self.epilogue.reads_coords else []
        value = self.epilogue.apply(kb, value, coords, extras)
        kb.store(value, out, kb.add(kb.mul(kb.add(kb.mul(z, oh), oy), ow), ox))


@dataclass(frozen=True)
class ReduceSpec(KernelSpec):
    """Mean over `axes` of `x_shape`; the output is the kept axes, contiguous."""

    x_shape: tuple[int, ...]
    axes: tuple[int, ...]

    def base_name(self) -> str:
        return f"reduce_mean{self.epilogue.suffix()}"

    def kept(self) -> list[int]:
        return [d for d in range(len(self.x_shape)) if d not in self.axes]

    def global_size(self) -> tuple[int, ...]:
        return (numel([self.x_shape[d] for d in self.kept()]),)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x_ptr,), extras, out = self.split_args(args)
        strides = contiguous_strides(self.x_shape)
        kept = self.kept()
        red_shape = [self.x_shape[d] for d in self.axes]
        red_strides = [strides[d] for d in self.axes]
        count = numel(red_shape)
        gid = kb.global_id(0, "i")
        coords = kb.unravel(gid, [self.x_shape[d] for d in kept])
        base = kb.linear(coords, [strides[d] for d in kept])
        trailing = list(self.axes) == list(range(len(self.x_shape) - len(self.axes), len(self.x_shape)))

        def step(k: KernelBuilder, r: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            off = r if trailing else k.linear(k.unravel(r, red_shape), red_strides)
            return [k.fadd(acc[0], k.load(x_ptr, k.add(base, off)))]

        (total,) = kb.for_(0, count, 1, [kb.f(0.0)], step, "r")
        value = kb.fmul(total, 1.0 / count)
        full = []
        it = iter(coords)
        for d in range(len(self.x_shape)):
            full.append(next(it) if d in kept else kb.i(0))
        value = self.epilogue.apply(kb, value, full, extras)
        kb.store(value, out, gid)
