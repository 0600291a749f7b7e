"""Direct 2-D convolution (NCHW activations, OIHW weights) with a fused epilogue.

Schedule: each work-item computes `co_block` output channels of one output pixel, so
one input load feeds `co_block` multiply-adds and the weights a work-group reads are
uniform across its work-items (dimension 0 runs along output width). Grid:
(OW, OH, N * CO / co_block). Kernel taps are unrolled for windows up to 3x3; bounds
checks are emitted only where padding or the window can leave the input.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from lowering.kernel_builder import KernelBuilder
from lowering.kernels.common import KernelSpec

UNROLL_TAPS = 9


@dataclass(frozen=True)
class ConvSpec(KernelSpec):
    x_shape: tuple[int, int, int, int]
    w_shape: tuple[int, int, int, int]
    out_shape: tuple[int, int, int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    groups: int
    has_bias: bool
    co_block: int

    def base_name(self) -> str:
        kh, kw = self.w_shape[2:]
        kind = "dwconv" if self.groups > 1 and self.groups == self.x_shape[1] else "conv"
        s = f"_s{self.strides[0]}" if self.strides != (1, 1) else ""
        return f"{kind}{kh}x{kw}{s}{self.epilogue.suffix()}"

    def input_names(self) -> tuple[str, ...]:
        return ("input", "weight", "bias") if self.has_bias else ("input", "weight")

    def global_size(self) -> tuple[int, ...]:
        n, co, oh, ow = self.out_shape
        return (ow, oh, n * co // self.co_block)

    def _needs_check(self, axis: int) -> bool:
        size = self.x_shape[2 + axis]
        out = self.out_shape[2 + axis]
        k = self.w_shape[2 + axis]
        last = (out - 1) * self.strides[axis] - self.pads[axis] + (k - 1) * self.dilations[axis]
        return self.pads[axis] > 0 or last >= size

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        n_, ci_total, h, w = self.x_shape
        co_total, cig, kh_n, kw_n = self.w_shape
        _, _, oh, ow = self.out_shape
        cb = self.co_block
        cog = co_total // self.groups
        blocks = co_total // cb

        ox = kb.global_id(0, "ox")
        oy = kb.global_id(1, "oy")
        z = kb.global_id(2, "z")
        n = kb.div(z, blocks, "n")
        co0 = kb.mul(kb.rem(z, blocks), cb, "co")
        ci_base = kb.mul(kb.div(co0, cog), cig, "ci0") if self.groups > 1 else 0
        iy0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "iy0")
        ix0 = kb.sub(kb.mul(ox, self.strides[1]), self.pads[1], "ix0")
        x_base = kb.mul(kb.add(kb.mul(n, ci_total), ci_base), h * w, "x_base")
        w_base = kb.mul(co0, cig * kh_n * kw_n, "w_base")
        check_h, check_w = self._needs_check(0), self._needs_check(1)

        def tap(kb2: KernelBuilder, ci: SSAValue, kh, kw, accs: list[SSAValue]) -> list[SSAValue]:
            iy = kb2.add(iy0, kb2.mul(kh, self.dilations[0]))
            ix = kb2.add(ix0, kb2.mul(kw, self.dilations[1]))
            conds = (kb2.in_bounds(iy, 0, h) if check_h else []) + (kb2.in_bounds(ix, 0, w) if check_w else [])
            valid = kb2.all_of(conds)
            idx = kb2.add(kb2.add(kb2.mul(ci, h * w), x_base), kb2.add(kb2.mul(iy, w), ix))
            v = kb2.masked_load(x_ptr, idx, valid)
            w_idx = kb2.add(kb2.add(w_base, kb2.mul(ci, kh_n * kw_n)), kb2.add(kb2.mul(kh, kw_n), kw))
            return [
                kb2.fma(v, kb2.load(w_ptr, kb2.add(w_idx, j * cig * kh_n * kw_n)), accs[j])
                for j in range(cb)
            ]

        def over_ci(kb1: KernelBuilder, ci: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            if kh_n * kw_n <= UNROLL_TAPS:
                for a in range(kh_n):
                    for b in range(kw_n):
                        accs = tap(kb1, ci, a, b, accs)
                return accs

            def over_kh(kb2: KernelBuilder, kh: SSAValue, accs2: list[SSAValue]) -> list[SSAValue]:
                return kb2.for_(0, kw_n, 1, accs2, lambda kb3, kw, a3: tap(kb3, ci, kh, kw, a3), "kw")

            return kb1.for_(0, kh_n, 1, accs, over_kh, "kh")

        if self.has_bias:
            accs = [kb.load(ins[2], kb.add(co0, j), f"acc{j}") for j in range(cb)]
        else:
            accs = [kb.f(0.0)] * cb
        accs = kb.for_(0, cig, 1, accs, over_ci, "ci")
        for j in range(cb):
            co = kb.add(co0, j)
            value = self.epilogue.apply(kb, accs[j], [n, co, oy, ox], extras)
            o_idx = kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, co_total), co), oh), oy), ow), ox)
            kb.store(value, out, o_idx)
