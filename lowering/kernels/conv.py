"""Direct 2-D convolution (NCHW activations) with a fused epilogue.

Five schedules share the geometry code (the last three are the CPU defaults: explicit
float8 pixel vectors, which PoCL's vectorizer does not have to discover):

- `Conv4Spec` (groups == 1 or depthwise, output channels % 4 == 0): weights are packed
  at compile time to OIHW4o (`[CO/4][CI][KH][KW][4]`), so one `vload4` brings the
  weights of four output channels; each work-item accumulates `channel_block` channels
  (as float4s) for `pixel_block` adjacent output pixels. One input load feeds
  `channel_block` multiply-adds. Grid: (ceil(OW / pixel_block), OH, N * CO / channel_block).
- `ConvSpec` (any grouping): one work-item per output pixel and `channel_block`
  channels, scalar weights.
- `PointwiseSpec` (1x1, stride 1): vectors of pixels of the flattened plane x channels.
- `PlaneSpec` (stride 1, rows as wide as the input's): one vector over the flattened
  plane per tap.
- `RowsSpec` (row stride 1 or 2): vectors along an output row.

Window loops are marked for unrolling (`#pragma unroll`) for windows up to 3x3; bounds
checks are emitted only where padding or the window can leave the input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import UNROLL_TAPS, KernelSpec, window_leaves_input, window_loops


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
    channel_block: int

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.groups == self.x_shape[1] == self.w_shape[0]

    def name_prefix(self) -> str:
        kh, kw = self.w_shape[2:]
        kind = "dwconv" if self.depthwise else "conv"
        sy, sx = self.strides
        s = "" if self.strides == (1, 1) else f"_s{sy}" if sy == sx else f"_s{sy}x{sx}"
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
        return (ow, oh, n * co // self.channel_block)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        _, ci_total, h, w = self.x_shape
        co_total, cig, kh_n, kw_n = self.w_shape
        cb = self.channel_block
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

    pixel_block: int = 1
    dynamic_ci: bool = False
    """Input channels come as the launch argument `ci` (groups == 1 only), so convs that
    differ only in input channels share a kernel (DenseNet has dozens)."""

    def name_prefix(self) -> str:
        return f"{super().name_prefix()}_c{self.channel_block}x{self.pixel_block}"

    def scalar_names(self) -> tuple[str, ...]:
        return ("ci",) if self.dynamic_ci else ()

    def global_size(self) -> tuple[int, ...]:
        n, co, oh, ow = self.out_shape
        return (-(-ow // self.pixel_block), oh, n * co // self.channel_block)

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
        nv, xb = self.channel_block // 4, self.pixel_block
        blocks = co_total // self.channel_block
        taps = kh_n * kw_n

        gx, oy, z = kb.global_id(0, "gx"), kb.global_id(1, "oy"), kb.global_id(2, "z")
        n = kb.div(z, blocks, "n")
        co0 = kb.mul(kb.rem(z, blocks), self.channel_block, "co")
        ox0 = kb.mul(gx, xb, "ox")
        iy0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "iy0")
        # Output pixels past the right edge (when OW % pixel_block != 0) read a clamped column
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
        nv = self.channel_block // 4
        if not self.has_bias:
            zero = kb.splat(kb.f(0.0))
            return [zero] * count
        bias = [kb.vload4(ins[2], kb.add(co4, j), f"bias{j}") for j in range(nv)]
        return [bias[i % nv] for i in range(count)]


@dataclass(frozen=True)
class PointwiseSpec(ConvGeometry):
    """1x1 convolution (stride 1, no padding, groups 1) as a matrix product over the
    flattened pixels of each plane: a work-item holds `pixel_block` vectors of `vector`
    consecutive pixels for each of `channel_block` output channels, so one vector load of the
    input feeds `channel_block` multiply-adds and one scalar weight feeds `pixel_block`. Weights
    are packed `[CO/channel_block][CI][channel_block]`, the order the loop reads them.

    This is the CPU schedule: PoCL vectorizes explicit float8 arithmetic, while its
    implicit vectorization across work-items gives up on the float4-over-channels
    kernel (`Conv4Spec`; 12 GFLOP/s for mobilenet_v2's 1x1 convolutions, against about
    40 for float8 x 2 pixels x 4 channels in a microbenchmark on this project's 2-core
    machine). Pixels past the last full block run a scalar loop in the same work-item."""

    vector: int = 8
    pixel_block: int = 2

    def name_prefix(self) -> str:
        return f"{super().name_prefix()}_pw{self.vector}x{self.pixel_block}c{self.channel_block}"

    @property
    def pixels_per_plane(self) -> int:
        return self.out_shape[2] * self.out_shape[3]

    def global_size(self) -> tuple[int, ...]:
        n, co, _, _ = self.out_shape
        step = self.vector * self.pixel_block
        return (-(-self.pixels_per_plane // step), n * co // self.channel_block)

    @staticmethod
    def pack_weights(w: np.ndarray, channel_block: int) -> np.ndarray:
        """OIHW (1x1) -> [O/channel_block][I][channel_block]."""
        o, i = w.shape[:2]
        return np.ascontiguousarray(w.reshape(o // channel_block, channel_block, i).transpose(0, 2, 1))

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        ci_total = self.x_shape[1]
        co_total = self.out_shape[1]
        cb, vector, xb = self.channel_block, self.vector, self.pixel_block
        plane, step, ow = self.pixels_per_plane, vector * xb, self.out_shape[3]
        blocks = co_total // cb

        gx, z = kb.global_id(0, "gx"), kb.global_id(1, "z")
        n = kb.div(z, blocks, "n")
        co0 = kb.mul(kb.rem(z, blocks), cb, "co")
        p0 = kb.mul(gx, step, "p0")
        x_n = kb.mul(kb.mul(n, ci_total), plane, "x_n")
        x_base = kb.add(x_n, p0, "x_base")
        w_base = kb.mul(kb.rem(z, blocks), ci_total * cb, "w_base")
        out_base = kb.add(kb.mul(kb.add(kb.mul(n, co_total), co0), plane), p0, "out_base")

        def bias(k: KernelBuilder, j: int) -> SSAValue:
            return k.load(ins[2], k.add(co0, j)) if self.has_bias else k.f(0.0)

        def full(k: KernelBuilder) -> None:
            biases = [bias(k, j) for j in range(cb)]
            accs = [k.splat(biases[j], vector) for _ in range(xb) for j in range(cb)]

            def over_ci(k1: KernelBuilder, ci: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                row = k1.add(x_base, k1.mul(ci, plane))
                xs = [k1.vload(x_ptr, k1.add(row, t * vector), vector) for t in range(xb)]
                w_row = k1.add(w_base, k1.mul(ci, cb))
                res = list(a)
                for j in range(cb):
                    wj = k1.splat(k1.load(w_ptr, k1.add(w_row, j)), vector)
                    for t in range(xb):
                        res[t * cb + j] = k1.fma(xs[t], wj, a[t * cb + j])
                return res

            accs = k.for_(0, ci_total, 1, accs, over_ci, "ci")
            for t in range(xb):
                for j in range(cb):
                    value = self.epilogue.apply_pixels(k, accs[t * cb + j], n, co0, p0, extras, ow, dco=j, dp=t * vector)
                    k.vstore(value, out, k.add(out_base, j * plane + t * vector))

        def tail(k: KernelBuilder) -> None:
            # the last pixels of a plane that `step` does not divide, one at a time
            def pixel(k1: KernelBuilder, p: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                def over_ci(k2: KernelBuilder, ci: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                    xv = k2.load(x_ptr, k2.add(k2.add(x_n, p), k2.mul(ci, plane)))
                    w_row = k2.add(w_base, k2.mul(ci, cb))
                    return [k2.fma(xv, k2.load(w_ptr, k2.add(w_row, j)), a[j]) for j in range(cb)]

                accs = k1.for_(0, ci_total, 1, [bias(k1, j) for j in range(cb)], over_ci, "ci")
                oy, ox = k1.div(p, ow, "oy"), k1.rem(p, ow, "ox")
                for j in range(cb):
                    self.store(k1, out, extras, accs[j], n, co0, oy, ox, dco=j)
                return []

            k.for_(p0, plane, 1, [], pixel, "p")

        if plane % step == 0:
            full(kb)
        else:
            kb.if_else(kb.cmp("sle", kb.add(p0, step), plane), full, tail)


@dataclass(frozen=True)
class _VectorConv(ConvGeometry):
    """What the plane and row kernels share: packed weights, the per-pixel path for
    vectors that cannot take the vector loads, the vector loop over input channels."""

    vector: int = 8

    def weight(self, k: KernelBuilder, w_ptr: SSAValue, w_base: SSAValue, ci, t, j: int) -> SSAValue:
        """Weight of input channel ci, tap t (an int or an index), channel co0 + j."""
        taps, cb = self.w_shape[2] * self.w_shape[3], self.channel_block
        return k.load(w_ptr, k.add(w_base, k.add(k.mul(ci, taps * cb), k.add(k.mul(t, cb), j))))

    def bases(self, kb: KernelBuilder, z: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
        """(n, co0, input base, weight base) of work-item row z (n * blocks + block)."""
        _, ci_total, h, w = self.x_shape
        co_total, cig, kh_n, kw_n = self.w_shape
        blocks = co_total // self.channel_block
        n = kb.div(z, blocks, "n")
        cob = kb.rem(z, blocks)
        co0 = kb.mul(cob, self.channel_block, "co")
        # depthwise (channel_block 1): the channel's own plane; groups 1: every input plane
        x_base = kb.mul(kb.add(kb.mul(n, ci_total), co0) if self.depthwise else kb.mul(n, ci_total), h * w, "x_base")
        return n, co0, x_base, kb.mul(cob, cig * kh_n * kw_n * self.channel_block, "w_base")

    def per_pixel_path(self, k: KernelBuilder, ptrs: tuple, n, co0, x_base, w_base, biases: list[SSAValue],
               where: Callable[[KernelBuilder, SSAValue], tuple[SSAValue, SSAValue, SSAValue]]) -> None:
        """The `vector` pixels of this work-item one at a time (a loop over lanes):
        `where(k, lane)` gives the lane's (oy, ox, is-it-stored) with oy, ox clamped to a
        real pixel; masked scalar loads over the window, the epilogue, a guarded store."""
        x_ptr, w_ptr, out, extras = ptrs
        cb = self.channel_block
        h, w = self.x_shape[2:]

        def lane_body(k1: KernelBuilder, lane: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            oy, ox, stored = where(k1, lane)
            iy0 = k1.sub(k1.mul(oy, self.strides[0]), self.pads[0])
            ix0 = k1.sub(k1.mul(ox, self.strides[1]), self.pads[1])

            def over_ci(k2: KernelBuilder, ci: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                plane = k2.add(x_base, k2.mul(ci, h * w))

                def tap(k3: KernelBuilder, kh, kw, acc: list[SSAValue]) -> list[SSAValue]:
                    v = self.input_tap(k3, x_ptr, plane, iy0, ix0, kh, kw)
                    t = k3.add(k3.mul(kh, self.w_shape[3]), kw)
                    return [k3.fma(v, self.weight(k3, w_ptr, w_base, ci, t, j), acc[j]) for j in range(cb)]

                return self.over_taps(k2, a, tap)

            accs = k1.for_(0, self.w_shape[1], 1, list(biases), over_ci, "ci")

            def store(k2: KernelBuilder) -> None:
                for j in range(cb):
                    self.store(k2, out, extras, accs[j], n, co0, oy, ox, dco=j)

            k1.guard([stored], store)
            return []

        k.for_(0, self.vector, 1, [], lane_body, "lane")

    def vector_loop(self, k: KernelBuilder, w_ptr, x_base, w_base, biases: list[SSAValue],
                    load: Callable[[KernelBuilder, SSAValue, SSAValue, int], SSAValue]) -> list[SSAValue]:
        """The accumulators (one vector per output channel) over input channels and taps:
        `load(k, plane, kh, kw)` gives the tap's input vector. Rows of the window are a
        loop (marked for unrolling when the window is small); columns are written out, so
        each column's lane mask is computed once per work-item."""
        h, w = self.x_shape[2:]
        cig, kh_n, kw_n = self.w_shape[1:]
        cb, vector = self.channel_block, self.vector
        mark = kh_n * kw_n <= UNROLL_TAPS

        def over_ci(k1: KernelBuilder, ci: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            plane = k1.add(x_base, k1.mul(ci, h * w))

            def row(k2: KernelBuilder, kh, acc: list[SSAValue]) -> list[SSAValue]:
                res = list(acc)
                for kw in range(kw_n):
                    v = load(k2, plane, kh, kw)
                    t = k2.add(k2.mul(kh, kw_n), kw)
                    for j in range(cb):
                        res[j] = k2.fma(v, k2.splat(self.weight(k2, w_ptr, w_base, ci, t, j), vector), res[j])
                return res

            return row(k1, 0, a) if kh_n == 1 else k1.for_(0, kh_n, 1, a, row, "kh", mark)

        return k.for_(0, cig, 1, [k.splat(b, vector) for b in biases], over_ci, "ci")


def _inside(k: KernelBuilder, v, hi: int):
    """0 <= v < hi: a Python bool when v is known now (a 1-pixel-wide plane)."""
    return 0 <= v < hi if isinstance(v, int) else k.all_of(k.in_bounds(v, 0, hi))


@dataclass(frozen=True)
class PlaneSpec(_VectorConv):
    """Convolution with stride 1 and output rows as wide as the input's (groups 1, or
    depthwise), as vectors of `vector` consecutive pixels of the flattened plane for
    `channel_block` output channels (depthwise: 1): input pixel p + offset feeds output pixel
    p at every tap, so one vload reads a tap for the whole vector (rows included) and
    only the columns that cross the left or right edge are masked (one select with a
    mask made once per work-item). Vectors whose reads would leave the plane (the first
    and last rows) and the last partial vector compute each pixel with masked scalar
    loads. Weights are packed `[CO/channel_block][CI/groups][KH*KW][channel_block]`.

    A CPU schedule: explicit float8 arithmetic is what PoCL vectorizes (mobilenet_v2's
    stride-1 depthwise layers took ~11 ms on PoCL with the float4-over-channels kernel
    on this project's 2-core machine, ~4 ms as plane vectors). Unlike row vectors, a
    vector of a flattened plane needs no special case for rows narrower than itself
    (7x7 and 14x14 maps)."""

    def name_prefix(self) -> str:
        return f"{super().name_prefix()}_pl{self.vector}" + ("" if self.depthwise else f"c{self.channel_block}")

    @property
    def pixels_per_plane(self) -> int:
        return self.out_shape[2] * self.out_shape[3]

    def global_size(self) -> tuple[int, ...]:
        n, co, _, _ = self.out_shape
        return (-(-self.pixels_per_plane // self.vector), n * co // self.channel_block)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        h, w = self.x_shape[2:]
        co_total, _, kh_n, kw_n = self.w_shape
        cb, vector, plane, ow = self.channel_block, self.vector, self.pixels_per_plane, self.out_shape[3]
        (dy, dx), (pt, pl) = self.dilations, self.pads[:2]
        # input offset of tap (kh, kw) from the output pixel's flat index: kh * dy * w + shift[kw]
        shifts = [kw * dx - pl - pt * w for kw in range(kw_n)]
        lo, hi = min(shifts), max(shifts) + (kh_n - 1) * dy * w

        gx, z = kb.global_id(0, "gx"), kb.global_id(1, "z")
        n, co0, x_base, w_base = self.bases(kb, z)
        p0 = kb.mul(gx, vector, "p0")
        biases = [kb.load(ins[2], kb.add(co0, j)) if self.has_bias else kb.f(0.0) for j in range(cb)]

        def vectors(k: KernelBuilder) -> None:
            # per column of the window that can leave the row: 1 where lane l's input
            # column is inside it
            one, nil, zero = k.f(1.0), k.f(0.0), k.vector(lanes=vector).f(0.0)
            masks = {kw: k.vec([k.select(_inside(k, k.add(k.rem(k.add(p0, lane), w), kw * dx - pl), w), one, nil)
                                for lane in range(vector)])
                     for kw in range(kw_n) if kw * dx - pl != 0}

            def load(k1: KernelBuilder, plane_in, kh, kw: int) -> SSAValue:
                v = k1.vload(x_ptr, k1.add(k1.add(plane_in, p0), k1.add(k1.mul(kh, dy * w), shifts[kw])), vector)
                return k1.select_nonzero(masks[kw], v, zero) if kw in masks else v

            accs = self.vector_loop(k, w_ptr, x_base, w_base, biases, load)
            for j in range(cb):
                value = self.epilogue.apply_pixels(k, accs[j], n, co0, p0, extras, ow, dco=j)
                k.vstore(value, out, k.add(k.mul(k.add(k.mul(n, co_total), k.add(co0, j)), plane), p0))

        def where(k: KernelBuilder, lane: SSAValue):
            p = k.add(p0, lane)
            q = k.min_i(p, plane - 1)  # lanes past the plane's end compute its last pixel, unstored
            return k.div(q, ow, "oy"), k.rem(q, ow, "ox"), k.cmp("slt", p, plane)

        inside = kb.all_of([kb.cmp("sge", kb.add(p0, lo), 0), kb.cmp("slt", kb.add(p0, vector - 1 + hi), h * w),
                            kb.cmp("sle", kb.add(p0, vector), plane)])
        kb.if_else(inside, vectors,
                   lambda k: self.per_pixel_path(k, (x_ptr, w_ptr, out, extras), n, co0, x_base, w_base, biases,
                                                 where))


@dataclass(frozen=True)
class RowsSpec(_VectorConv):
    """Any convolution with groups 1 or depthwise, stride 1 or 2 along the row, as
    vectors of `vector` consecutive output pixels of one row for `channel_block` output channels
    (depthwise: 1). At each tap the input lanes are ox * stride + offset: one vload for
    stride 1, two and a pick of the even lanes for stride 2. A tap's row above or below
    the input reads a clamped row and contributes zero; vectors whose columns would leave
    the row (the ends of rows, rows narrower than a vector) and the last partial vector
    compute each pixel with masked scalar loads. Weights are packed
    `[CO/channel_block][CI/groups][KH*KW][channel_block]`.

    A CPU schedule like `PointwiseSpec`: explicit float8 arithmetic is what PoCL
    vectorizes. mobilenet_v2's stem (3x3 stride 2, 3 -> 32 channels) took 1.03 ms
    as rows against 1.87 ms as vec4 on PoCL."""

    def name_prefix(self) -> str:
        return f"{super().name_prefix()}_rw{self.vector}c{self.channel_block}"

    def global_size(self) -> tuple[int, ...]:
        n, co, oh, ow = self.out_shape
        return (-(-ow // self.vector), oh, n * co // self.channel_block)

    @property
    def chunks(self) -> int:
        """vloads of `vector` elements per tap: the lanes span (vector - 1) * stride + 1."""
        return -(-((self.vector - 1) * self.strides[1] + 1) // self.vector)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        x_ptr, w_ptr = ins[0], ins[1]
        h, w = self.x_shape[2:]
        co_total, _, _, kw_n = self.w_shape
        _, _, oh, ow = self.out_shape
        cb, vector, sx = self.channel_block, self.vector, self.strides[1]
        dy, dx = self.dilations

        gx, oy, z = kb.global_id(0, "gx"), kb.global_id(1, "oy"), kb.global_id(2, "z")
        n, co0, x_base, w_base = self.bases(kb, z)
        ox0 = kb.mul(gx, vector, "ox")
        iy0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "iy0")
        ix_start = kb.sub(kb.mul(ox0, sx), self.pads[1], "ix0")
        biases = [kb.load(ins[2], kb.add(co0, j)) if self.has_bias else kb.f(0.0) for j in range(cb)]
        p = kb.add(kb.mul(oy, ow), ox0, "p")  # the vector's first output pixel in its plane

        def vectors(k: KernelBuilder) -> None:
            zero = k.vector(lanes=vector).f(0.0)

            def load(k1: KernelBuilder, plane_in, kh, kw: int) -> SSAValue:
                iy = k1.add(iy0, k1.mul(kh, dy))
                row_ok = k1.all_of(k1.in_bounds(iy, 0, h)) if self.needs_check(0) else None
                if row_ok is not None:
                    iy = k1.max_i(k1.min_i(iy, h - 1), 0)  # a readable row; its values are not used
                start = k1.add(plane_in, k1.add(k1.mul(iy, w), k1.add(ix_start, kw * dx)))
                parts = [k1.vload(x_ptr, k1.add(start, c * vector), vector) for c in range(self.chunks)]
                v = parts[0] if sx == 1 else k1.vec(
                    [k1.lane(parts[lane * sx // vector], lane * sx % vector) for lane in range(vector)])
                return k1.select(row_ok, v, zero)

            accs = self.vector_loop(k, w_ptr, x_base, w_base, biases, load)
            for j in range(cb):
                value = self.epilogue.apply_pixels(k, accs[j], n, co0, p, extras, ow, dco=j)
                k.vstore(value, out, k.add(k.mul(k.add(k.mul(n, co_total), k.add(co0, j)), oh * ow), p))

        def where(k: KernelBuilder, lane: SSAValue):
            ox = k.add(ox0, lane)  # lanes past the row's end compute its last pixel, unstored
            return oy, k.min_i(ox, ow - 1), k.cmp("slt", ox, ow)

        last = kb.add(ix_start, (kw_n - 1) * dx + self.chunks * vector - 1)
        inside = kb.all_of([kb.cmp("sge", ix_start, 0), kb.cmp("slt", last, w), kb.cmp("sle", kb.add(ox0, vector), ow)])
        kb.if_else(inside, vectors,
                   lambda k: self.per_pixel_path(k, (x_ptr, w_ptr, out, extras), n, co0, x_base, w_base, biases,
                                                 where))


def pack_taps(w: np.ndarray, channel_block: int) -> np.ndarray:
    """OIHW -> [O/channel_block][I][KH*KW][channel_block] (PlaneSpec, RowsSpec)."""
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // channel_block, channel_block, i, kh * kw).transpose(0, 2, 3, 1))
