"""2-D transposed convolution (ONNX ConvTranspose) on NCHW tensors, in gather form.

A transposed convolution scatters: input pixel (iy, ix) adds x * w[ci, co, kh, kw] to
output pixel (iy * stride - pad + kh * dilation, ...). Scattering from work-items would
need atomic float adds (no such thing in OpenCL 1.2) or a zeroed output and a second
pass, so each work-item owns one output pixel and gathers instead: for each tap
(kh, kw), the input row that reaches output row oy is

    t = oy + pad_top - kh * dilation,  iy = t / stride   (when t >= 0, t % stride == 0, iy < H)

and likewise for columns. A tap that reaches no input pixel skips its loop over the
group's input channels (the loop's trip count is 0 then), so the loads need neither
masks nor clamped addresses. With stride s only about 1 / s^2 of the taps contribute;
the others cost a few integer operations.

Weights stay in ONNX's layout [C_in, C_out / groups, KH, KW], read as a buffer (they may
be computed at run time). Grid: (OW, OH, N * C_out), one output pixel per work-item;
bias and the fused element-wise epilogue are applied before the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import UNROLL_TAPS, KernelSpec


@dataclass(frozen=True)
class ConvTransposeSpec(KernelSpec):
    x_shape: tuple[int, int, int, int]
    w_shape: tuple[int, int, int, int]
    """[C_in, C_out / groups, KH, KW]."""
    out_shape: tuple[int, int, int, int]
    strides: tuple[int, int]
    pads: tuple[int, int]
    """Begin pads (top, left); the end pads only set the output extent."""
    dilations: tuple[int, int]
    groups: int
    has_bias: bool

    def base_name(self) -> str:
        kh, kw = self.w_shape[2:]
        s = f"_s{self.strides[0]}" if self.strides != (1, 1) else ""
        return f"conv_transpose{kh}x{kw}{s}{self.epilogue.suffix()}"

    def input_names(self) -> tuple[str, ...]:
        return ("input", "weight", "bias") if self.has_bias else ("input", "weight")

    def global_size(self) -> tuple[int, ...]:
        n, co, oh, ow = self.out_shape
        return (ow, oh, n * co)

    def source_index(self, kb: KernelBuilder, o, k, axis: int):
        """(input index, conditions) of the input pixel that output coordinate `o`
        reaches through tap `k` along `axis` (0: rows, 1: columns)."""
        s, d, size = self.strides[axis], self.dilations[axis], self.x_shape[2 + axis]
        pad, taps, out = self.pads[axis], self.w_shape[2 + axis], self.out_shape[2 + axis]
        t = kb.sub(kb.add(o, pad), kb.mul(k, d))
        i = kb.div(t, s)
        # Only the checks that can fail: t ranges over [pad - (taps - 1) * d, out - 1 + pad].
        # C division truncates toward zero (-1 / 2 == 0): test t >= 0, not i >= 0.
        conds = []
        if pad < (taps - 1) * d:
            conds.append(kb.cmp("sge", t, 0))
        if (out - 1 + pad) // s >= size:
            conds.append(kb.cmp("slt", i, size))
        if s > 1:
            conds.append(kb.cmp("eq", kb.rem(t, s), 0))
        return i, conds

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        n_total, ci_total, h, w = self.x_shape
        _, cog, kh_n, kw_n = self.w_shape
        co_total, oh, ow = self.out_shape[1:]
        cig = ci_total // self.groups
        taps = kh_n * kw_n

        ox, oy, z = kb.global_id(0, "ox"), kb.global_id(1, "oy"), kb.global_id(2, "z")
        n, co = kb.unravel(z, (n_total, co_total), ("n", "co"))
        if self.groups > 1:
            ci0 = kb.mul(kb.div(co, cog), cig, "ci0")
            m = kb.rem(co, cog, "m")
        else:
            ci0, m = 0, co
        x_base = kb.mul(kb.add(kb.mul(n, ci_total), ci0), h * w, "x_base")
        w_base = kb.mul(kb.add(kb.mul(ci0, cog), m), taps, "w_base")
        x_ci, w_ci = h * w, cog * taps  # strides from one input channel to the next

        mark = kh_n * kw_n <= UNROLL_TAPS  # small windows unroll, as the convolution's

        def loop(k: KernelBuilder, count: int, carried: list[SSAValue], body, hint: str) -> list[SSAValue]:
            return body(k, 0, carried) if count == 1 else k.for_(0, count, 1, carried, body, hint, mark)

        def row(k: KernelBuilder, kh, accs: list[SSAValue]) -> list[SSAValue]:
            iy, cy = self.source_index(k, oy, kh, 0)  # once per row of taps
            row_ok = k.all_of(cy)
            x_row = k.add(x_base, k.mul(iy, w))
            w_row = k.add(w_base, k.mul(kh, kw_n))

            def tap(k1: KernelBuilder, kw, a: list[SSAValue]) -> list[SSAValue]:
                ix, cx = self.source_index(k1, ox, kw, 1)
                valid = k1.all_of(([] if row_ok is None else [row_ok]) + cx)
                trips = cig if valid is None else k1.select(valid, k1.i(cig), k1.i(0))
                x_tap, w_tap = k1.add(x_row, ix), k1.add(w_row, kw)

                def over_ci(k2: KernelBuilder, ci: SSAValue, a2: list[SSAValue]) -> list[SSAValue]:
                    v = k2.load(x_ptr, k2.add(x_tap, k2.mul(ci, x_ci)))
                    return [k2.fma(v, k2.load(w_ptr, k2.add(w_tap, k2.mul(ci, w_ci))), a2[0])]

                return k1.for_(0, trips, 1, a, over_ci, "ci")

            return loop(k, kw_n, accs, tap, "kw")

        acc = kb.load(ins[2], co, "acc") if self.has_bias else kb.f(0.0)
        (acc,) = loop(kb, kh_n, [acc], row, "kh")
        value = self.epilogue.apply(kb, acc, [n, co, oy, ox], extras)
        kb.store(value, out, kb.add(kb.mul(kb.add(kb.mul(z, oh), oy), ow), ox))
