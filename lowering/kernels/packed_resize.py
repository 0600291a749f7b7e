"""NCHW4c resize (nearest, linear, cubic): the NCHW resize kernel's coordinate
arithmetic (kernels/resize.py), reading float4 pixels."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.packed import Packed, PackedSpec


@dataclass(frozen=True)
class PackedResizeSpec(PackedSpec):
    src: Packed = None  # type: ignore[assignment]
    mode: str = "nearest"
    coord_mode: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    scales: tuple[float, float] = (1.0, 1.0)
    cubic_a: float = -0.75
    exclude_outside: bool = False

    def base_name(self) -> str:
        return f"resize_{self.mode}_4c{self.pepi.suffix()}"

    def head_args(self):
        return [("input", self.src.arg_type(False))]

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        from adreno_mlir.lowering.kernels.resize import ResizeSpec

        (x,), extras, out = self.split(args)
        n, c4, oy, ox = self.pixel_ids(kb)
        N, C4, H, W = self.src.shape
        _, _, OH, OW = self.out.shape
        # The NCHW resize kernel's coordinate arithmetic, shared.
        geometry = ResizeSpec(x_shape=(N, 4 * C4, H, W), out_shape=(N, 4 * C4, OH, OW), mode=self.mode,
                              coord_mode=self.coord_mode, nearest_mode=self.nearest_mode, scales=self.scales,
                              cubic_a=self.cubic_a, exclude_outside=self.exclude_outside)
        sy, sx = geometry._source(kb, oy, 0), geometry._source(kb, ox, 1)
        if self.mode == "nearest":
            value = self.src.read(kb, x, n, c4, geometry._nearest(kb, sy, H), geometry._nearest(kb, sx, W))
        elif self.mode == "cubic":
            # 16 taps whose weights have negative lobes: summed in f32 also in a half
            # kernel (as the global mean sums), then converted to the kernel's type.
            vk = kb.vector(f32)
            rows_taps, cols_taps = geometry.cubic_taps(kb, sy, H), geometry.cubic_taps(kb, sx, W)

            def weighted(pairs):
                acc = None
                for v, wt in pairs:
                    term = vk.fmul(v, vk.splat(wt))
                    acc = term if acc is None else vk.fadd(acc, term)
                return acc

            rows = [weighted((kb.cast(self.src.read(kb, x, n, c4, iy, ix), f32), wx) for ix, wx in cols_taps)
                    for iy, _ in rows_taps]
            value = kb.cast(weighted(zip(rows, (wy for _, wy in rows_taps))), kb.ftype)
        else:
            vk = kb.vector()
            fy, fx = kb.floor(sy), kb.floor(sx)
            ly, lx = kb.splat(kb.fsub(sy, fy)), kb.splat(kb.fsub(sx, fx))
            iy, ix = kb.to_int(fy), kb.to_int(fx)
            y0, y1 = kb.min_i(kb.max_i(iy, 0), H - 1), kb.min_i(kb.max_i(kb.add(iy, 1), 0), H - 1)
            x0, x1 = kb.min_i(kb.max_i(ix, 0), W - 1), kb.min_i(kb.max_i(kb.add(ix, 1), 0), W - 1)

            def at(a, b):
                return self.src.read(kb, x, n, c4, a, b)

            def lerp(a, b, t):
                return vk.fadd(a, vk.fmul(vk.fsub(b, a), t))

            value = lerp(lerp(at(y0, x0), at(y0, x1), lx), lerp(at(y1, x0), at(y1, x1), lx), ly)
        self.finish_pixel(kb, extras, out, value, n, c4, oy, ox)
