"""NCHW4c pools: max / average pool over a window, and the mean over H and W (global
average pool, ReduceMean over the spatial axes), one float4 of four channels per output."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from adreno_mlir.dialects import opencl
from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import window_count, window_loops, work_group_sum
from adreno_mlir.lowering.kernels.packed import Packed, PackedSpec


@dataclass(frozen=True)
class PackedPoolSpec(PackedSpec):
    src: Packed = None  # type: ignore[assignment]
    kind: str = "max"
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    count_include_pad: bool = False

    def base_name(self) -> str:
        return f"{self.kind}pool{self.kernel[0]}x{self.kernel[1]}_4c{self.pepi.suffix()}"

    def head_args(self):
        return [("input", self.src.arg_type(False))]

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), extras, out = self.split(args)
        n, c4, oy, ox = self.pixel_ids(kb)
        _, _, H, W = self.src.shape
        y0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "y0")
        x0 = kb.sub(kb.mul(ox, self.strides[1]), self.pads[1], "x0")
        is_max = self.kind == "max"
        vk = kb.vector()

        def tap(k: KernelBuilder, a, b, carried):
            (acc,) = carried
            vk = k.vector()
            iy = k.add(y0, k.mul(a, self.dilations[0]))
            ix = k.add(x0, k.mul(b, self.dilations[1]))
            valid = k.all_of(k.in_bounds(iy, 0, H) + k.in_bounds(ix, 0, W))
            v = self.src.read(k, x, n, c4, k.select(valid, k.i(iy), k.i(0)), k.select(valid, k.i(ix), k.i(0)))
            # Max: NaN-propagating per lane (arith.maximumf), as PoolSpec; a padded tap
            # reads pixel (0, 0) and is not selected.
            return [k.select(valid, vk.fmax(acc, v) if is_max else vk.fadd(acc, v), acc)]

        (acc,) = window_loops(kb, self.kernel, [vk.f(float("-inf") if is_max else 0.0)], tap,
                              unroll=opencl.UNROLL_BY_PRINTER)
        if not is_max:
            count = window_count(kb, y0, x0, H, W, self.kernel, self.pads, self.count_include_pad)
            acc = vk.fdiv(acc, kb.splat(kb.to_float(count)))
        self.finish_pixel(kb, extras, out, acc, n, c4, oy, ox)


@dataclass(frozen=True)
class PackedMeanSpec(PackedSpec):
    """Mean over H and W (global average pool, ReduceMean over axes 2, 3).

    `items` = 1: one work-item per (n, channel block) loops over the H*W pixels.
    `items` > 1: a work-group of `items` work-items per
    (n, channel block), grid (items, 1, N*C4); work-item l sums pixels l, l + items, ...
    (adjacent work-items read adjacent pixels) and `work_group_sum` adds the float4
    partial sums in local memory, so a squeeze-excite pool over 112x112 pixels is 49
    loads per work-item on a GPU instead of 12544."""

    src: Packed = None  # type: ignore[assignment]
    items: int = 1

    def base_name(self) -> str:
        group = f"_wg{self.items}" if self.items > 1 else ""
        return f"global_avgpool_4c{group}{self.pepi.suffix()}"

    def head_args(self):
        return [("input", self.src.arg_type(False))]

    def grid(self):
        n, c4, _, _ = self.out.shape
        return (self.items, 1, n * c4)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1, 1) if self.items > 1 else None

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), extras, out = self.split(args)
        if self.items > 1:
            self.group_body(kb, x, extras, out)
            return
        n, c4, _, _ = self.pixel_ids(kb)
        _, _, H, W = self.src.shape
        # The sum runs in f32 even in a half kernel: H*W values of a few units would
        # overflow half's 65504 (a 112x112 squeeze-excite pool) and lose its precision.
        vk = kb.vector(f32)

        def add(k2: KernelBuilder, a, h, w):
            return [k2.vector(f32).fadd(a[0], k2.cast(self.src.read(k2, x, n, c4, h, w), f32))]

        def row(k: KernelBuilder, h, acc):
            return k.for_(0, W, 1, acc, lambda k2, w, a: add(k2, a, h, w), "w")

        (total,) = kb.for_(0, H, 1, [vk.f(0.0)], row, "h")
        mean = kb.cast(vk.fmul(total, 1.0 / (H * W)), kb.ftype)
        self.finish_pixel(kb, extras, out, mean, n, c4, 0, 0)

    def group_body(self, kb: KernelBuilder, x: SSAValue, extras, out: SSAValue) -> None:
        """The work-group schedule: partial sums (in f32, as the loop's) over a strided
        share of the pixels, their tree sum, and work-item 0's mean and epilogue."""
        n, c4 = self.split_z(kb, kb.global_id(2, "z"), self.out.shape[1])
        lid = kb.local_id(0, "l")
        _, _, H, W = self.src.shape
        # Buffers and NHWC-mapped images hold a channel block's H*W pixels as one run
        # (pixel p is at (h, w) = (0, p)); the row-per-h image mapping needs p's row.
        linear = self.src.kind == "buf" or self.src.mapping == "texture-nhwc"

        def add(k: KernelBuilder, p: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            h, w = (0, p) if linear else (k.div(p, W, "h"), k.rem(p, W, "w"))
            return [k.vector(f32).fadd(acc[0], k.cast(self.src.read(k, x, n, c4, h, w), f32))]

        # Work-items past the last pixel (fewer pixels than work-items) add nothing.
        (partial,) = kb.for_(lid, H * W, self.items, [kb.vector(f32).f(0.0)], add, "p")

        def finish(k: KernelBuilder, total: SSAValue) -> None:
            mean = k.cast(k.vector(f32).fmul(total, 1.0 / (H * W)), k.ftype)
            self.finish_pixel(k, extras, out, mean, n, c4, 0, 0)

        work_group_sum(kb, partial, lid, self.items, finish)


@dataclass(frozen=True)
class PackedChannelNormSpec(PackedSpec):
    """graph.channel_norm on NCHW4c: one work-item per pixel (grid W, H, N) walks the
    pixel's channel blocks three times (the mean, the mean square of x - mean, the
    normalized write), as LayerNormSpec does a row: two reductions rather than the sum and
    the sum of squares in one, which cancel when |mean| >> std. Sums run in f32 (a half
    kernel's too). The channels are a multiple of 4 (convert-layout-nchw4c's condition),
    so no padding lane enters the sums; `scale` and `bias` are [C] buffers read as float4
    per block."""

    src: Packed = None  # type: ignore[assignment]
    epsilon: float = 1e-5
    center: bool = True
    has_bias: bool = True

    def base_name(self) -> str:
        return ("channel_norm" if self.center else "channel_rms_norm") + f"_4c{self.pepi.suffix()}"

    def head_args(self):
        return [("input", self.src.arg_type(False)), ("scale", self.weight_type)] + (
            [("bias", self.weight_type)] if self.has_bias else [])

    def shared(self) -> PackedChannelNormSpec:
        return self  # its loops run over the channel blocks: the count stays in the identity

    def grid(self):
        n, _, h, w = self.out.shape
        return (w, h, n)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split(args)
        x, scale = ins[0], ins[1]
        bias = ins[2] if self.has_bias else None
        c4n = self.src.shape[1]
        w, h, n = kb.global_id(0, "w"), kb.global_id(1, "h"), kb.global_id(2, "n")
        if self.out.shape[0] == 1:
            n = 0
        vf = kb.vector(f32)

        def pixel(k: KernelBuilder, c4) -> SSAValue:
            return k.cast(self.src.read(k, x, n, c4, h, w), f32)

        def lanes(k: KernelBuilder, v: SSAValue) -> SSAValue:
            return k.fadd(k.fadd(k.lane(v, 0), k.lane(v, 1)), k.fadd(k.lane(v, 2), k.lane(v, 3)))

        inv_c = 1.0 / (4 * c4n)
        mean = None
        if self.center:
            (total,) = kb.for_(0, c4n, 1, [vf.f(0.0)], lambda k, c4, a: [k.vector(f32).fadd(a[0], pixel(k, c4))], "c4")
            mean = kb.fmul(lanes(kb, total), inv_c, "mean")

        def square(k: KernelBuilder, c4, a):
            v, kv = pixel(k, c4), k.vector(f32)
            d = kv.fsub(v, kv.splat(mean)) if mean is not None else v
            return [kv.fadd(a[0], kv.fmul(d, d))]

        (sq,) = kb.for_(0, c4n, 1, [vf.f(0.0)], square, "c4")
        var = kb.fmul(lanes(kb, sq), inv_c, "var")
        inv = kb.fdiv(1.0, kb.sqrt(kb.fadd(var, self.epsilon)), "inv_std")

        def write(k: KernelBuilder, c4, a):
            v = pixel(k, c4)
            kv = k.vector(f32)
            d = kv.fsub(v, kv.splat(mean)) if mean is not None else v
            y = kv.fmul(kv.fmul(d, kv.splat(inv)), k.cast(k.vload4(scale, c4, "scale"), f32))
            if bias is not None:
                y = kv.fadd(y, k.cast(k.vload4(bias, c4, "bias"), f32))
            self.finish_pixel(k, extras, out, k.cast(y, k.ftype), n, c4, h, w)
            return []

        kb.for_(0, c4n, 1, [], write, "c4")
