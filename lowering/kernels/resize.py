"""ONNX Resize of the two spatial axes (nearest or bilinear), grid (OW, OH, N*C).

Source coordinates follow ONNX's coordinate_transformation_mode (as its reference
implementation computes them, with length_resized = scale * input length); bilinear taps are
clamped to the edge, which equals ONNX's edge padding. They are computed in f32 with
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
