"""Direct 2-D convolution (NCHW activations) with a fused epilogue.

Two schedules share the geometry code:

- `Conv4Spec` (groups == 1 or depthwise, output channels % 4 == 0): weights are packed
  at compile time to OIHW4o (`[CO/4][CI][KH][KW][4]`), so one `vload4` brings the
  weights of four output channels; each work-item accumulates `co_block` channels
  (as float4s) for `x_block` adjacent output pixels. One input load feeds
  `co_block` multiply-adds. Grid: (ceil(OW / x_block), OH, N * CO / co_block).
- `ConvSpec` (any grouping): one work-item per output pixel and `co_block`
  channels, scalar weights.

Window loops are marked for unrolling (`#pragma unroll`) for windows up to 3x3; bounds
checks are emitted only where padding or the window can leave the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, window_leaves_input, window_loops


@dataclass(frozen=True)
class ConvGeometry(KernelSpec):
    x_shape: tuple[int, int, int, int]
    w_shape: tuple[int, int, int, int]
    out_shape: tuple[int, int, int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    groups: int
    has_bias: bool
    co_block: int

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.groups == self.x_shape[1] == self.w_shape[0]

    def name_prefix(self) -> str:
        kh, kw = self.w_shape[2:]
        kind = "dwconv" if self.depthwise else "conv"
        s = f"_s{self.strides[0]}" if self.strides != (1, 1) else ""
        return f"{kind}{kh}x{kw}{s}"

    def base_name(self) -> str:
        return f"{self.name_prefix()}{self.epilogue.suffix()}"

    def input_names(self) -> tuple[str, ...]:
        return ("input", "weight", "bias") if self.has_bias else ("input", "weight")

    def needs_check(self, axis: int) -> bool:
        return window_leaves_input(self.x_shape[2 + axis], self.out_shape[2 + axis], self.w_shape[2 + axis],
                                   self.strides[axis], self.pads[axis], self.dilations[axis])

    def over_taps(self, kb: KernelBuilder, accs: list[SSAValue], tap) -> list[SSAValue]:
        """Apply `tap(kb, kh, kw, accs)` over the window: a loop nest, marked for full
        unrolling when the window is small."""
        return window_loops(kb, self.w_shape[2:], accs, tap)

    def input_tap(self, kb: KernelBuilder, x_ptr, plane, iy0, ix0, kh, kw):
        """Input value at window tap (kh, kw) of the plane starting at `plane` (0 if padding)."""
        h, w = self.x_shape[2:]
        iy = kb.add(iy0, kb.mul(kh, self.dilations[0]))
        ix = kb.add(ix0, kb.mul(kw, self.dilations[1]))
        conds = (kb.in_bounds(iy, 0, h) if self.needs_check(0) else []) + (
            kb.in_bounds(ix, 0, w) if self.needs_check(1) else [])
        return kb.masked_load(x_ptr, kb.add(plane, kb.add(kb.mul(iy, w), ix)), kb.all_of(conds))

    def store(self, kb: KernelBuilder, out, extras, value, n, co, oy, ox, dco: int = 0, dx: int = 0) -> None:
        """Epilogue and store of output (n, co + dco, oy, ox + dx): the block's base index
        is computed once, each element adds its static offset."""
        _, co_total, oh, ow = self.out_shape
        value = self.epilogue.apply(kb, value, [n, co, oy, ox], extras, (0, dco, 0, dx))
        base = kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, co_total), co), oh), oy), ow), ox)
        kb.store(value, out, kb.add(base, dco * oh * ow + dx))


@dataclass(frozen=True)
class ConvSpec(ConvGeometry):
    """Scalar schedule for any grouping."""

    def global_size(self) -> tuple[int, ...]:
        n, co, oh, ow = self.out_shape
        return (ow, oh, n * co // self.co_block)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        _, ci_total, h, w = self.x_shape
        co_total, cig, kh_n, kw_n = self.w_shape
        cb = self.co_block
        cog = co_total // self.groups
        blocks = co_total // cb
        taps = kh_n * kw_n

        ox, oy, z = kb.global_id(0, "ox"), kb.global_id(1, "oy"), kb.global_id(2, "z")
        n = kb.div(z, blocks, "n")
        co0 = kb.mul(kb.rem(z, blocks), cb, "co")
        ci_base = kb.mul(kb.div(co0, cog), cig, "ci0") if self.groups > 1 else 0
        iy0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "iy0")
        ix0 = kb.sub(kb.mul(ox, self.strides[1]), self.pads[1], "ix0")
        x_base = kb.mul(kb.add(kb.mul(n, ci_total), ci_base), h * w, "x_base")
        w_base = kb.mul(co0, cig * taps, "w_base")

        def over_ci(kb1: KernelBuilder, ci: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            plane = kb1.add(x_base, kb1.mul(ci, h * w))
            w_ci = kb1.add(w_base, kb1.mul(ci, taps))

            def tap(k: KernelBuilder, kh, kw, a: list[SSAValue]) -> list[SSAValue]:
                v = self.input_tap(k, x_ptr, plane, iy0, ix0, kh, kw)
                widx = k.add(w_ci, k.add(k.mul(kh, kw_n), kw))
                return [k.fma(v, k.load(w_ptr, k.add(widx, j * cig * taps)), a[j]) for j in range(cb)]

            return self.over_taps(kb1, accs, tap)

        if self.has_bias:
            accs = [kb.load(ins[2], kb.add(co0, j), f"acc{j}") for j in range(cb)]
        else:
            accs = [kb.f(0.0)] * cb
        accs = kb.for_(0, cig, 1, accs, over_ci, "ci")
        for j in range(cb):
            self.store(kb, out, extras, accs[j], n, co0, oy, ox, dco=j)


@dataclass(frozen=True)
class Conv4Spec(ConvGeometry):
    """float4-over-output-channels schedule; weights packed OIHW4o (depthwise: C4HW4c)."""

    x_block: int = 1
    dynamic_ci: bool = False
    """Input channels come as the launch argument `ci` (groups == 1 only), so convs that
    differ only in input channels share a kernel (DenseNet has dozens)."""

    def name_prefix(self) -> str:
        return f"{super().name_prefix()}_c{self.co_block}x{self.x_block}"

    def scalar_names(self) -> tuple[str, ...]:
        return ("ci",) if self.dynamic_ci else ()

    def global_size(self) -> tuple[int, ...]:
        n, co, oh, ow = self.out_shape
        return (-(-ow // self.x_block), oh, n * co // self.co_block)

    @staticmethod
    def pack_weights(w: np.ndarray) -> np.ndarray:
        """OIHW -> [O/4][I][KH][KW][4] (for depthwise I == 1)."""
        o, i, kh, kw = w.shape
        return np.ascontiguousarray(w.reshape(o // 4, 4, i, kh, kw).transpose(0, 2, 3, 4, 1))

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        _, ci_total, h, w = self.x_shape
        co_total, cig, kh_n, kw_n = self.w_shape
        if self.dynamic_ci:
            ci_total = cig = self.scalar(args, "ci")
        _, _, oh, ow = self.out_shape
        nv, xb = self.co_block // 4, self.x_block
        blocks = co_total // self.co_block
        taps = kh_n * kw_n

        gx, oy, z = kb.global_id(0, "gx"), kb.global_id(1, "oy"), kb.global_id(2, "z")
        n = kb.div(z, blocks, "n")
        co0 = kb.mul(kb.rem(z, blocks), self.co_block, "co")
        ox0 = kb.mul(gx, xb, "ox")
        iy0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "iy0")
        # Output pixels past the right edge (when OW % x_block != 0) read a clamped column
        # and are not stored.
        ix0s = [
            kb.sub(kb.mul(kb.min_i(kb.add(ox0, t), ow - 1) if ow % xb else kb.add(ox0, t), self.strides[1]),
                   self.pads[1]) for t in range(xb)
        ]
        co4 = kb.div(co0, 4, "co4")

        def tap_at(k: KernelBuilder, plane, w_row, kh, kw, a: list[SSAValue]) -> list[SSAValue]:
            wv = [k.vload4(w_ptr, k.add(w_row, k.add(k.add(k.mul(kh, kw_n), kw), k.mul(cig, j * taps))))
                  for j in range(nv)]
            res = list(a)
            for t in range(xb):
                v = k.splat(self.input_tap(k, x_ptr, plane, iy0, ix0s[t], kh, kw))
                for j in range(nv):
                    res[t * nv + j] = k.fma(v, wv[j], a[t * nv + j])
            return res

        if self.depthwise:
            # Four channels, each its own input plane.
            def lanes(k: KernelBuilder, kh, kw, a: list[SSAValue]) -> list[SSAValue]:
                wv = k.vload4(w_ptr, k.add(k.mul(co4, taps), k.add(k.mul(kh, kw_n), kw)))
                res = list(a)
                for t in range(xb):
                    vals = [self.input_tap(k, x_ptr, k.mul(k.add(k.mul(n, ci_total), k.add(co0, c)), h * w),
                                           iy0, ix0s[t], kh, kw) for c in range(4)]
                    res[t] = k.fma(k.vec(vals), wv, a[t])
                return res

            accs = self.init(kb, ins, co4, xb)
            accs = self.over_taps(kb, accs, lanes)
        else:
            x_base = kb.mul(kb.mul(n, ci_total), h * w, "x_base")
            w_base = kb.mul(co4, kb.mul(cig, taps), "w_base")

            def over_ci(kb1: KernelBuilder, ci: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
                plane = kb1.add(x_base, kb1.mul(ci, h * w))
                w_row = kb1.add(w_base, kb1.mul(ci, taps))
                return self.over_taps(kb1, accs, lambda k, kh, kw, a: tap_at(k, plane, w_row, kh, kw, a))

            accs = kb.for_(0, cig, 1, self.init(kb, ins, co4, xb * nv), over_ci, "ci")

        for t in range(xb):

            def emit_stores(k: KernelBuilder, t=t) -> None:
                for j in range(nv):
                    for c in range(4):
                        value = k.lane(accs[t * nv + j], c)
                        self.store(k, out, extras, value, n, co0, oy, ox0, dco=4 * j + c, dx=t)

            if ow % xb and t > 0:
                kb.guard([kb.cmp("slt", kb.add(ox0, t), ow)], emit_stores)
            else:
                emit_stores(kb)

    def init(self, kb: KernelBuilder, ins, co4, count: int) -> list[SSAValue]:
        nv = self.co_block // 4
        if not self.has_bias:
            zero = kb.splat(kb.f(0.0))
            return [zero] * count
        bias = [kb.vload4(ins[2], kb.add(co4, j), f"bias{j}") for j in range(nv)]
        return [bias[i % nv] for i in range(count)]
