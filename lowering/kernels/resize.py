"""ONNX Resize of the two spatial axes (nearest, bilinear or bicubic), grid (OW, OH, N*C).

Source coordinates follow ONNX's coordinate_transformation_mode (as its reference
implementation computes them, with length_resized = scale * input length); bilinear and
bicubic taps are clamped to the edge, which equals ONNX's edge padding. Bicubic weights
(`cubic_taps`) are the reference's: taps floor(s) - 1 .. floor(s) + 2 with the Keys
kernel of parameter A (`cubic_coeff_a`) at t = s - floor(s); with exclude_outside the
weights of taps outside the input are 0 and the others divided by their sum. Rows are
interpolated first, then the four rows, as onnxruntime does. Coordinates are computed in f32 with
onnxruntime's order of operations and constants rounded to f32 as it rounds them, and
divisions correctly rounded (`fdiv_rounded`): a nearest-neighbour coordinate that is
exactly an integer or a half in real arithmetic (every third row of a 1.5x resize) must
round the way onnxruntime's does, or a whole row of pixels comes from its neighbour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec


@dataclass(frozen=True)
class ResizeSpec(KernelSpec):
    x_shape: tuple[int, int, int, int]
    out_shape: tuple[int, int, int, int]
    mode: str
    coord_mode: str
    nearest_mode: str
    scales: tuple[float, float]  # (h, w)
    cubic_a: float = -0.75
    exclude_outside: bool = False

    def base_name(self) -> str:
        return f"resize_{self.mode}{self.epilogue.suffix()}"

    def global_size(self) -> tuple[int, ...]:
        n, c, oh, ow = self.out_shape
        return (ow, oh, n * c)

    def _source(self, kb: KernelBuilder, o: SSAValue, axis: int) -> SSAValue:
        in_len, out_len = self.x_shape[2 + axis], self.out_shape[2 + axis]
        scale = self.scales[axis]
        # ONNX's length_resized is scale * length_original, which differs from the
        # (integer) output length when the scale does not divide evenly.
        resized = in_len * scale
        if math.isclose(resized, out_len, rel_tol=1e-6):
            resized = float(out_len)
        of = kb.to_float(o)  # coordinates are f32, also in a kernel computing in half
        s32, length = np.float32(scale), np.float32(in_len)
        mode = self.coord_mode
        if mode == "align_corners":  # x * (L - 1) / (R - 1)
            if resized == 1:
                return kb.const_like(0.0, f32)
            return kb.fdiv_rounded(kb.fmul(of, float(length - np.float32(1))), float(np.float32(resized) - np.float32(1)))
        if mode == "asymmetric":
            return kb.fdiv_rounded(of, float(s32))
        if mode == "pytorch_half_pixel" and resized == 1:
            return kb.const_like(0.0, f32)
        q = kb.fdiv_rounded(kb.fadd(of, 0.5), float(s32))  # (x + 0.5) / scale
        if mode == "half_pixel_symmetric":  # offset + (x + 0.5) / scale - 0.5, offset as onnxruntime rounds it
            adjustment = np.float32(out_len) / (s32 * length)
            offset = (length / np.float32(2)) * (np.float32(1) - adjustment)
            if offset != 0:
                q = kb.fadd(q, float(offset))
        return kb.fsub(q, 0.5)

    def _nearest(self, kb: KernelBuilder, s: SSAValue, in_len: int) -> SSAValue:
        if self.nearest_mode == "round_prefer_floor":
            r = kb.ceil(kb.fsub(s, 0.5))
        elif self.nearest_mode == "round_prefer_ceil":
            r = kb.floor(kb.fadd(s, 0.5))
        elif self.nearest_mode == "floor":
            r = kb.floor(s)
        else:
            r = kb.ceil(s)
        return kb.min_i(kb.max_i(kb.to_int(r), 0), in_len - 1)

    def cubic_taps(self, kb: KernelBuilder, s: SSAValue, in_len: int) -> list[tuple[SSAValue, SSAValue]]:
        """The four (clamped index, f32 weight) taps of bicubic interpolation at source
        coordinate `s` along an axis of `in_len` pixels. ONNX's reference takes t = 1
        on the taps floor(s) - 2 .. floor(s) + 1 where s is an integer; its weights
        there (0, 0, 1, 0) equal these (0, 1, 0, 0) of t = 0 on the taps used here."""
        a = float(np.float32(self.cubic_a))
        f = kb.floor(s)
        t = kb.fsub(s, f)
        i0 = kb.to_int(f)

        def outer(u):  # |u| in [1, 2]: ((A u - 5A) u + 8A) u - 4A
            return kb.fsub(kb.fmul(kb.fadd(kb.fmul(kb.fsub(kb.fmul(u, a), 5 * a), u), 8 * a), u), 4 * a)

        def inner(u):  # |u| in [0, 1]: ((A + 2) u - (A + 3)) u u + 1
            return kb.fadd(kb.fmul(kb.fmul(kb.fsub(kb.fmul(u, a + 2), a + 3), u), u), 1.0)

        one_minus_t = kb.fsub(1.0, t)
        weights = [outer(kb.fadd(t, 1.0)), inner(t), inner(one_minus_t), outer(kb.fsub(2.0, t))]
        indices = [kb.add(i0, k - 1) for k in range(4)]
        if self.exclude_outside:
            weights = [kb.select(kb.all_of(kb.in_bounds(i, 0, in_len)), w, kb.const_like(0.0, f32))
                       for i, w in zip(indices, weights)]
            total = kb.fadd(kb.fadd(kb.fadd(weights[0], weights[1]), weights[2]), weights[3])
            weights = [kb.fdiv(w, total) for w in weights]
        return [(kb.min_i(kb.max_i(i, 0), in_len - 1), w) for i, w in zip(indices, weights)]

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), extras, out = self.split_args(args)
        _, c, h, w = self.x_shape
        _, _, oh, ow = self.out_shape
        ox, oy, z = kb.global_id(0, "ox"), kb.global_id(1, "oy"), kb.global_id(2, "z")
        base = kb.mul(z, h * w, "base")
        sy, sx = self._source(kb, oy, 0), self._source(kb, ox, 1)

        def at(iy, ix) -> SSAValue:
            return kb.load(x, kb.add(base, kb.add(kb.mul(iy, w), ix)))

        if self.mode == "nearest":
            value = at(self._nearest(kb, sy, h), self._nearest(kb, sx, w))
        elif self.mode == "cubic":
            rows_taps, cols_taps = self.cubic_taps(kb, sy, h), self.cubic_taps(kb, sx, w)

            def weighted(pairs):
                acc = None
                for v, wt in pairs:
                    acc = kb.fmul(v, wt) if acc is None else kb.fadd(acc, kb.fmul(v, wt))
                return acc

            rows = [weighted((at(iy, ix), wx) for ix, wx in cols_taps) for iy, _ in rows_taps]
            value = weighted(zip(rows, (wy for _, wy in rows_taps)))
        else:
            fy, fx = kb.floor(sy), kb.floor(sx)
            ly, lx = kb.fsub(sy, fy), kb.fsub(sx, fx)
            iy, ix = kb.to_int(fy), kb.to_int(fx)
            y0, y1 = kb.min_i(kb.max_i(iy, 0), h - 1), kb.min_i(kb.max_i(kb.add(iy, 1), 0), h - 1)
            x0, x1 = kb.min_i(kb.max_i(ix, 0), w - 1), kb.min_i(kb.max_i(kb.add(ix, 1), 0), w - 1)

            def lerp(a, b, t):
                return kb.fadd(a, kb.fmul(kb.fsub(b, a), t))

            top = lerp(at(y0, x0), at(y0, x1), lx)
            bottom = lerp(at(y1, x0), at(y1, x1), lx)
            value = lerp(top, bottom, ly)
        coords = [kb.div(z, c), kb.rem(z, c), oy, ox] if self.epilogue.reads_coords else []
        value = self.epilogue.apply(kb, value, coords, extras)
        kb.store(value, out, kb.add(kb.mul(kb.add(kb.mul(z, oh), oy), ow), ox))
