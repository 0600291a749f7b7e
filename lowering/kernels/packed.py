"""NCHW4c kernels: every work-item handles whole pixels of four channels (a float4).

A packed tensor lives in a global buffer (float4 per pixel, or half4 for fp16
storage) or in a 2-D image (RGBA = the 4 channels; half-float images give fp16
storage). `Packed` hides which: kernels address pixels as (n, c4, h, w), and a pixel
comes as the kernel's data type whatever the storage:

| kernel computes in | f32 buffer | f16 buffer | image |
|---|---|---|---|
| f32 (fp32, fp16-acc32) | `vload4` | `vload_half4` | `read_imagef` |
| f16 (fp16, `compute = "f16"`) | `convert_half4(vload4)` | `vload4` of half | `read_imageh` |

and writes mirror the reads (half kernels need cl_khr_fp16).

Kernels: pack / unpack at the NCHW boundary, convolution (groups 1: OIHW4o weights,
4 float4 multiply-adds per input pixel; depthwise: one), max/avg pool, spatial mean,
resize, and element-wise maps (which also do channel concat through an output
channel offset). Fused epilogues are float4 expressions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.dialects.builtin import VectorType, f16, f32, i32
from xdsl.ir import Attribute, SSAValue

from adreno_mlir.dialects import opencl, texture
from adreno_mlir.lowering.expr import Expr, Src, describe, emit_expr, memo_loader
from adreno_mlir.lowering.kernel_builder import GLOBAL_F16, GLOBAL_F32, KernelBuilder, finish, new_kernel
from adreno_mlir.lowering.kernels.common import (KernelSpec, window_count, window_leaves_input, window_loops,
                                                 work_group_sum)


@dataclass(frozen=True)
class Packed:
    """How a kernel reaches an NCHW4c tensor of shape (N, C4, H, W)."""

    shape: tuple[int, int, int, int]
    kind: str = "buf"  # "buf" | "img"
    mapping: str = "texture"  # image mapping: "texture" | "texture-nhwc"
    element: str = "f32"  # storage: "f32" | "f16"

    def arg_type(self, write: bool) -> Attribute:
        if self.kind == "img":
            return opencl.Image2DType("write" if write else "read")
        return opencl.PointerType("global", f16 if self.element == "f16" else f32)

    def pixel(self, kb: KernelBuilder, n, c4, h, w):
        """Image coordinates (x, y) of a pixel."""
        _, C4, H, W = self.shape
        if self.mapping == "texture-nhwc":
            return kb.add(kb.mul(h, W), w), kb.add(kb.mul(n, C4), c4)
        return w, kb.add(kb.mul(kb.add(kb.mul(n, C4), c4), H), h)

    def index(self, kb: KernelBuilder, n, c4, h, w):
        _, C4, H, W = self.shape
        return kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, C4), c4), H), h), W), w)

    def read(self, kb: KernelBuilder, ptr: SSAValue, n, c4, h, w) -> SSAValue:
        """The pixel as a vector of the kernel's data type (`kb.ftype`)."""
        if self.kind == "img":
            x, y = self.pixel(kb, n, c4, h, w)
            return kb.emit(opencl.ReadImageOp(ptr, kb.i(x), kb.i(y), VectorType(kb.ftype, [4])))
        idx = kb.i(self.index(kb, n, c4, h, w))
        if self.element == "f16" and not kb.half:
            return kb.emit(opencl.VLoadHalf4Op(ptr, idx))
        return kb.cast(kb.emit(opencl.VLoad4Op(ptr, idx)), kb.ftype)

    def write(self, kb: KernelBuilder, ptr: SSAValue, value: SSAValue, n, c4, h, w) -> None:
        """Store a float4 or half4 pixel (converted to the storage's type where needed)."""
        if self.kind == "img":
            x, y = self.pixel(kb, n, c4, h, w)
            kb.emit(opencl.WriteImageOp(ptr, kb.i(x), kb.i(y), value))
            return
        idx = kb.i(self.index(kb, n, c4, h, w))
        half_value = value.type.element_type == f16
        if self.element == "f16" and not half_value:
            kb.emit(opencl.VStoreHalf4Op(value, ptr, idx))
        else:
            kb.emit(opencl.VStore4Op(kb.cast(value, f16 if self.element == "f16" else f32), ptr, idx))

    def read_masked(self, kb: KernelBuilder, ptr, n, c4, h, w, valid) -> SSAValue:
        """The pixel, or zeros where `valid` is false (address clamped in bounds)."""
        if valid is None or valid is True:
            return self.read(kb, ptr, n, c4, h, w)
        zero = kb.vector().f(0.0)
        if valid is False:
            return zero
        v = self.read(kb, ptr, n, c4, kb.select(valid, kb.i(h), kb.i(0)), kb.select(valid, kb.i(w), kb.i(0)))
        return kb.select(valid, v, zero)


def packed_of(value: SSAValue) -> Packed:
    """The accessor of an NCHW4c value: the memory annotate-texture-scope gave it
    (global buffer or image, and which mapping) and its storage element."""
    t = value.type
    assert isinstance(t, texture.TextureTensorType), t
    n, c4, h, w, _ = t.shape
    element = "f16" if t.element == f16 else "f32"
    if t.is_image:
        return Packed((n, c4, h, w), "img", t.scope_name, element)
    return Packed((n, c4, h, w), "buf", "texture", element)


@dataclass(frozen=True)
class PackedEpilogue:
    """Float4 element-wise tail; extra input k is read at the output pixel, with
    coordinate 0 on the axes (n, h, w) where it broadcasts."""

    expr: Expr = Src()
    extras: tuple[tuple[Packed, tuple[bool, bool, bool]], ...] = ()

    def suffix(self) -> str:
        d = describe(self.expr)
        return f"_{d}" if d else ""

    def apply(self, kb: KernelBuilder, value: SSAValue | None, ptrs, n, c4, h, w) -> SSAValue:
        if self.expr == Src():
            return value

        def load(k: int) -> SSAValue:
            acc, (bn, bh, bw) = self.extras[k]
            return acc.read(kb, ptrs[k], 0 if bn else n, c4, 0 if bh else h, 0 if bw else w)

        return emit_expr(kb.vector(), self.expr, value, memo_loader(load))


@dataclass(frozen=True)
class PackedSpec(KernelSpec):
    """Base: head inputs, then epilogue extras, then the output."""

    out: Packed
    pepi: PackedEpilogue = field(default_factory=PackedEpilogue)
    compute: str = "f32"
    """The type the kernel computes in: "f32", or "f16" (half arithmetic: pixels,
    weights and biases as half4; `kernel_config` compute, precision fp16)."""
    offset_arg: bool = False
    """Write output channel block c4 at c4 + `c4_offset`, a launch argument (the last):
    the output is a channel slice of a larger allocation (a concat's copy, or a value
    plan-memory placed in a concat's storage). A launch argument, not a constant, so
    the 58 convolutions DenseNet-121 writes into its concats at 58 offsets share one
    kernel. Batch 1 only: then a channel slice is one run of the layout."""

    @property
    def ftype(self) -> Attribute:
        return f16 if self.compute == "f16" else f32

    @property
    def weight_type(self) -> Attribute:
        """Weights and biases are uploaded in the compute type."""
        return GLOBAL_F16 if self.compute == "f16" else GLOBAL_F32

    def head_args(self) -> list[tuple[str, Attribute]]:
        raise NotImplementedError

    def out_arg(self) -> tuple[str, Attribute]:
        return ("out", self.out.arg_type(True))

    def launch_scalars(self) -> tuple[str, ...]:
        """The kernel's i32 arguments after the output: its own (`scalar_names`), then
        `c4_offset` when it writes at a channel offset (`offset_arg`)."""
        return (*self.scalar_names(), *(("c4_offset",) if self.offset_arg else ()))

    def scalar(self, args, name: str) -> SSAValue:
        names = self.launch_scalars()
        return args[len(args) - len(names) + names.index(name)]

    def build(self, name: str) -> opencl.KernelOp:
        args = [*self.head_args(), *[(f"x{k}", p.arg_type(False)) for k, (p, _) in enumerate(self.pepi.extras)],
                self.out_arg(), *[(n, i32) for n in self.launch_scalars()]]
        kernel, kb = new_kernel(name, args, self.ftype)
        self.body(kb, list(kernel.args))
        finish(kb)
        if self.offset_arg and not kernel.args[-1].uses:
            # A kernel that writes without going through `finish_pixel`/`out_block`
            # would silently write at offset 0: refuse it instead.
            raise AssertionError(f"{name}: the kernel ignores its output channel offset (c4_offset)")
        return kernel

    def split(self, args: list[SSAValue]) -> tuple[list[SSAValue], list[SSAValue], SSAValue]:
        n = len(self.head_args())
        args = args[: len(args) - len(self.launch_scalars())]
        return args[:n], args[n:-1], args[-1]

    def out_block(self, kb: KernelBuilder, out: SSAValue, c4):
        """The channel block at which output block `c4` is stored: c4 itself, or with
        `offset_arg` c4 + the `c4_offset` argument (found through `out`, the kernel's
        output argument, so the writers need no extra parameter)."""
        if not self.offset_arg:
            return c4
        return kb.add(c4, self.scalar(list(out.block.args), "c4_offset"))

    def grid(self) -> tuple[int, int, int]:
        n, c4, h, w = self.out.shape
        return (w, h, n * c4)

    def global_size(self) -> tuple[int, ...]:
        return self.grid()

    def split_z(self, kb: KernelBuilder, z: SSAValue, c4n: int):
        """(n, c4) from the grid's third id; with batch 1 it is c4 itself."""
        if self.out.shape[0] == 1:
            return 0, z
        return kb.div(z, c4n, "n"), kb.rem(z, c4n, "c4")

    def pixel_ids(self, kb: KernelBuilder):
        """(n, c4, h, w) of this work-item for the default grid (W, H, N*C4)."""
        _, c4n, _, _ = self.out.shape
        w, h, z = kb.global_id(0, "w"), kb.global_id(1, "h"), kb.global_id(2, "z")
        n, c4 = self.split_z(kb, z, c4n)
        return n, c4, h, w

    def shared(self) -> PackedSpec:
        """With batch 1 no kernel reads a channel-block count (n is 0 and c4 comes
        straight from the grid), so those extents are zeroed for the kernel's identity."""
        if self.out.shape[0] != 1 or isinstance(self, (PackSpec, UnpackSpec)):
            return self
        if getattr(self, "parts", 1) > 1:
            return self  # the partial-sum buffer is indexed with the real extents

        def norm(p: Packed | None) -> Packed | None:
            return None if p is None else dataclasses.replace(p, shape=(1, 0, *p.shape[2:]))

        changes = {"out": norm(self.out),
                   "pepi": dataclasses.replace(self.pepi, extras=tuple((norm(p), b) for p, b in self.pepi.extras))}
        if getattr(self, "src", None) is not None and self.src.shape[0] == 1:
            changes["src"] = norm(self.src)
        if getattr(self, "scale", None) is not None and self.scale.shape[0] == 1:
            changes["scale"] = norm(self.scale)
        if getattr(self, "dw_load", None) is not None and self.dw_load.src.shape[0] == 1:
            changes["dw_load"] = dataclasses.replace(self.dw_load, src=norm(self.dw_load.src))
        if isinstance(self, PackedMapSpec):
            changes["shape"] = (self.shape[0], 0, *self.shape[2:])
        return dataclasses.replace(self, **changes)

    def finish_pixel(self, kb: KernelBuilder, extras, out, value, n, c4, h, w) -> SSAValue:
        """Epilogue (its extra inputs read at the pixel's own coordinates) and store (at
        the output's channel offset, if any); returns the value stored."""
        value = self.pepi.apply(kb, value, extras, n, c4, h, w)
        self.out.write(kb, out, value, n, self.out_block(kb, out, c4), h, w)
        return value


# --------------------------------------------------------------------------- boundaries


@dataclass(frozen=True)
class PackSpec(PackedSpec):
    """NCHW float buffer -> NCHW4c (channels past C read as zero)."""

    channels: int = 0

    def base_name(self) -> str:
        return "pack_nchw4c"

    def head_args(self):
        return [("input", GLOBAL_F32)]

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split(args)
        n, c4, h, w = self.pixel_ids(kb)
        _, _, H, W = self.out.shape
        lanes = []
        for k in range(4):
            c = kb.add(kb.mul(c4, 4), k)
            valid = kb.cmp("slt", c, self.channels)
            idx = kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, self.channels), c), H), h), W), w)
            lanes.append(kb.masked_load(x, idx, valid))
        self.out.write(kb, out, kb.vec(lanes), n, c4, h, w)


@dataclass(frozen=True)
class UnpackSpec(PackedSpec):
    """NCHW4c -> NCHW float buffer of `channels` channels (padding dropped)."""

    src: Packed = None  # type: ignore[assignment]
    channels: int = 0

    def base_name(self) -> str:
        return "unpack_nchw4c"

    def grid(self):
        n, c4, h, w = self.src.shape
        return (w, h, n * c4)

    def head_args(self):
        return [("input", self.src.arg_type(False))]

    def out_arg(self):
        return ("out", GLOBAL_F32)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split(args)
        _, c4n, H, W = self.src.shape
        w, h, z = kb.global_id(0, "w"), kb.global_id(1, "h"), kb.global_id(2, "z")
        n, c4 = kb.div(z, c4n, "n"), kb.rem(z, c4n, "c4")
        v = self.src.read(kb, x, n, c4, h, w)
        for k in range(4):
            c = kb.add(kb.mul(c4, 4), k)
            idx = kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, self.channels), c), H), h), W), w)
            kb.guard([kb.cmp("slt", c, self.channels)], lambda k2, k=k, idx=idx: k2.store(k2.lane(v, k), out, idx))


# --------------------------------------------------------------------------- convolution


DW_CHUNK = 32
"""Input channel blocks per local-memory chunk of a `load_tile` conv (at most; see dw_chunk)."""
DW_LOCAL_BYTES = 16384
"""Local memory a `load_tile` conv's chunk may take: half of Adreno's 32 KB (NVIDIA has 48)."""


def dw_chunk(tile_pixels: int) -> int:
    """Input channel blocks per chunk for a tile of `tile_pixels` pixels: DW_CHUNK, fewer
    when their f32 float4s would pass DW_LOCAL_BYTES (256 pixels: 4 blocks)."""
    return max(1, min(DW_CHUNK, DW_LOCAL_BYTES // (16 * tile_pixels)))


@dataclass(frozen=True)
class DepthwiseLoad:
    """A depthwise convolution (and its unary activation) that a 1x1 convolution computes
    as it loads its input (a `graph.fused {on_load}` region, fuse-depthwise-load): `src`
    is the depthwise conv's input, `pepi` its activation (no extra inputs). Its weights
    (C4 x KH x KW float4s) and bias are arguments after the 1x1 conv's own."""

    src: Packed
    kernel: tuple[int, int] = (3, 3)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    has_bias: bool = False
    pepi: PackedEpilogue = field(default_factory=PackedEpilogue)
    out_hw: tuple[int, int] = (1, 1)
    """The depthwise output's extent (H, W): the pixels the reader loads."""

    def suffix(self, tile: int = 0) -> str:
        """`_dw<KH>x<KW>[s<stride>][t<load_tile>]` and the activation: the kernel-name part."""
        kh, kw = self.kernel
        s = f"s{self.strides[0]}" if self.strides != (1, 1) else ""
        t = f"t{tile}" if tile else ""
        return f"_dw{kh}x{kw}{s}{t}{self.pepi.suffix()}"

    def read(self, kb: KernelBuilder, x, wt, bias, n, c4, oy, ox) -> SSAValue:
        """Depthwise output pixel (n, c4, oy, ox): bias + the window's taps (zero outside
        the input), then the activation; the taps are written out."""
        _, _, H, W = self.src.shape
        kh_n, kw_n = self.kernel
        (sy, sx), (dy, dx) = self.strides, self.dilations
        check_y = window_leaves_input(H, self.out_hw[0], kh_n, sy, self.pads[0], dy)
        check_x = window_leaves_input(W, self.out_hw[1], kw_n, sx, self.pads[1], dx)
        iy0 = kb.sub(kb.mul(oy, sy), self.pads[0])
        ix0 = kb.sub(kb.mul(ox, sx), self.pads[1])
        acc = kb.vload4(bias, c4) if self.has_bias else kb.vector().f(0.0)
        wbase = kb.mul(c4, kh_n * kw_n)
        cols = [kb.add(ix0, b * dx) for b in range(kw_n)]
        col_ok = [kb.in_bounds(c, 0, W) if check_x else [] for c in cols]
        for a in range(kh_n):
            iy = kb.add(iy0, a * dy)
            row_ok = kb.in_bounds(iy, 0, H) if check_y else []
            for b in range(kw_n):
                v = self.src.read_masked(kb, x, n, c4, iy, cols[b], kb.all_of(row_ok + col_ok[b]))
                acc = kb.fma(v, kb.vload4(wt, kb.add(wbase, a * kw_n + b)), acc)
        return self.pepi.apply(kb, acc, [], n, c4, oy, ox)


@dataclass(frozen=True)
class PackedConvSpec(PackedSpec):
    src: Packed = None  # type: ignore[assignment]
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    depthwise: bool = False
    has_bias: bool = False
    pixels: int = 1
    channel_blocks: int = 1
    """Output channel blocks (float4s) per work-item: each input pixel read feeds
    4 * channel_blocks multiply-adds (not for depthwise, whose channels are independent)."""
    dynamic_ci: bool = False
    """Input channel blocks come as the launch argument `ci4` (batch 1, groups 1), so
    convs that differ only in input channels share a kernel."""
    parts: int = 1
    """Split-K: with split > 1 each work-item sums 1/split of the input channels and
    writes a partial float4 (no bias, no epilogue) to a buffer `out` laid out
    [split][N][CO4][OH][OW]; `PackedSplitSumSpec` adds the parts up. For late layers
    whose grids are too small to fill a GPU."""
    row_reuse: bool = False
    """Depthwise only: read each input row segment the work-item's `pixels` outputs need
    once ((pixels - 1) * stride + (KW - 1) * dilation + 1 pixels) and keep it and the
    KH x KW weights in registers, instead of one read per tap and output pixel (pixels
    times KW reads per row): 4 outputs of a 3x3 stride-1 conv read 18 pixels, not 36."""
    group_items: int = 1
    """Groups-1 convs: > 1 (a power of two) gives each
    output block a work-group of that many work-items, work-item l summing input channel
    blocks l, l + group_items, ..., and `work_group_sum` adds their partial sums in
    local memory; work-item 0 adds the bias, runs the epilogue and writes. Split-K in one
    launch: the form for GEMVs (a squeeze-excite block's 1x1 convs on a 1x1 input, a
    classifier's 1x1 conv), whose grid is a few dozen outputs and whose two-launch
    split-K would cost more in launches than the sum itself."""
    scale: Packed | None = None
    """A `graph.scale_channels` input (fuse-channel-scale): `scale` (N or 1, C4, 1, 1),
    an argument after the bias, multiplies every input pixel read of channel block c4 by
    its float4 (loaded once per input channel block)."""
    src_tiles: int = 0
    """> 0: `src` holds `graph.pool_partials` tiles (N, C4, src_tiles, 1), and the conv
    (1x1 window on a 1x1 input) reads input pixel (n, c4, 0, 0) as their sum (in f32): the
    mean that `graph.sum_partials` stands for, added where it is read. With
    `group_items` > 1 the work-items take (block, tile) pairs instead of blocks."""
    dw_load: DepthwiseLoad | None = None
    """A `graph.fused {on_load}` input (fuse-depthwise-load; 1x1 window, stride 1, no
    padding): `src` is the depthwise conv's input and each input pixel (n, ci4, y, x) is
    computed by `dw_load.read` where the conv would load it."""
    load_tile: tuple[int, int] = (0, 0)
    """With `dw_load`, (Lx, G) > 0: a work-group of Lx x G work-items, Lx along a row
    segment (`pixels` each) times G = output channel blocks / channel_blocks, so that it
    holds every output channel of its P = Lx * pixels pixels. For
    each chunk of `dw_chunk(P)` input channel blocks it computes the chunk's depthwise values
    of its pixels once, into local memory, then every work-item reads them from there.
    (0, 0): each work-item computes the values it loads itself, G times in all."""

    def scalar_names(self) -> tuple[str, ...]:
        return ("ci4",) if self.dynamic_ci else ()

    def local_size(self) -> tuple[int, ...] | None:
        if self.load_tile[0]:
            return (self.load_tile[0] * self.load_tile[1], 1, 1)
        return (self.group_items, 1, 1) if self.group_items > 1 else None

    def out_arg(self):
        return ("out", GLOBAL_F32) if self.parts > 1 else super().out_arg()

    def base_name(self) -> str:
        kh, kw = self.kernel
        kind = "dwconv" if self.depthwise else "conv"
        s = f"_s{self.strides[0]}" if self.strides != (1, 1) else ""
        blk = f"_x{self.channel_blocks}" if self.channel_blocks > 1 else ""
        blk += f"_split{self.parts}" if self.parts > 1 else ""
        blk += f"_wg{self.group_items}" if self.group_items > 1 else ""
        blk += f"_tiles{self.src_tiles}" if self.src_tiles else ""
        blk += self.dw_load.suffix(self.load_tile[0]) if self.dw_load is not None else ""
        return f"{kind}{kh}x{kw}{s}_4c{blk}{self.pepi.suffix()}"

    def head_args(self):
        args = [("input", self.src.arg_type(False)), ("weight", self.weight_type)]
        args += [("bias", self.weight_type)] if self.has_bias else []
        args += [("scale", self.scale.arg_type(False))] if self.scale is not None else []
        if self.dw_load is not None:
            args += [("dw_weight", self.weight_type)] + ([("dw_bias", self.weight_type)] if self.dw_load.has_bias else [])
        return args

    def grid(self):
        n, c4, h, w = self.out.shape
        if self.load_tile[0]:  # work-groups of Lx pixels (the last may overhang the row) x G block groups
            lx, g = self.load_tile
            return (-(-w // (self.pixels * lx)) * lx * g, h, n * self.parts)
        return (-(-w // self.pixels) * self.group_items, h, n * c4 // self.channel_blocks * self.parts)

    def needs_check(self, axis: int) -> bool:
        if self.dw_load is not None:  # a 1x1 window on the depthwise output: never outside it
            return False
        return window_leaves_input(self.src.shape[2 + axis], self.out.shape[2 + axis], self.kernel[axis],
                                   self.strides[axis], self.pads[axis], self.dilations[axis])

    def depthwise_rows(self, kb: KernelBuilder, x, wt, n, c4, iy0, ox0, accs: list[SSAValue]) -> list[SSAValue]:
        """The `row_reuse` schedule: per window row, the input pixels of all `pixels`
        outputs are read once (zeros outside the input) and each feeds the taps that use
        it; the window is written out (straight-line code, weights loaded once each)."""
        _, _, H, W = self.src.shape
        OW = self.out.shape[3]
        kh_n, kw_n = self.kernel
        (sy, sx), (dy, dx) = self.strides, self.dilations
        xb = self.pixels
        cols = (xb - 1) * sx + (kw_n - 1) * dx + 1
        ix0 = kb.sub(kb.mul(ox0, sx), self.pads[1], "ix0")
        # The last block of a row may hang over the output's edge (OW % pixels): its
        # extra columns are read (and discarded) only where they are inside the input.
        check_x = self.needs_check(1) or OW % xb != 0
        col_ok = [kb.in_bounds(kb.add(ix0, c), 0, W) if check_x else [] for c in range(cols)]
        accs = list(accs)
        for a in range(kh_n):
            iy = kb.add(iy0, a * dy)
            row_ok = kb.in_bounds(iy, 0, H) if self.needs_check(0) else []
            row = [self.src.read_masked(kb, x, n, c4, iy, kb.add(ix0, c), kb.all_of(row_ok + col_ok[c]))
                   for c in range(cols)]
            for b in range(kw_n):
                wv = kb.vload4(wt, kb.add(kb.mul(c4, kh_n * kw_n), a * kw_n + b))
                for t in range(xb):
                    accs[t] = kb.fma(row[t * sx + b * dx], wv, accs[t])
        return accs

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split(args)
        x, wt = ins[0], ins[1]
        n_, ci4n, H, W = self.src.shape
        if self.dynamic_ci:
            ci4n = self.scalar(args, "ci4")
        _, co4n, OH, OW = self.out.shape
        kh_n, kw_n = self.kernel
        taps = kh_n * kw_n
        xb, cb = self.pixels, self.channel_blocks
        group = self.group_items > 1
        if group and (self.depthwise or self.parts > 1):
            raise ValueError("group_items > 1 needs a groups-1 conv without parts")
        tiled = self.dw_load is not None and self.load_tile[0] > 0
        if not tiled:
            gx = kb.group_id(0, "gx") if group else kb.global_id(0, "gx")
        oy, z = kb.global_id(1, "oy"), kb.global_id(2, "z")
        lid = kb.local_id(0, "l") if group else None
        part = 0
        if tiled:
            # Work-group (Lx * G, 1, 1) over a row segment: item li is pixel li % Lx of it
            # and output block group li / Lx (one flat dimension: drivers cap the third
            # dimension of a work-group at 64 items). z = n * parts + part.
            lx_n, g_n = self.load_tile
            li = kb.local_id(0, "li")
            blk, lx = kb.div(li, lx_n, "blk"), kb.rem(li, lx_n, "lx")
            gx = kb.add(kb.mul(kb.group_id(0), lx_n), lx, "gx")
            if self.parts > 1:
                part, z = kb.rem(z, self.parts, "part"), kb.div(z, self.parts)
            n = 0 if self.out.shape[0] == 1 else z
        else:
            if self.parts > 1:
                part, z = kb.rem(z, self.parts, "part"), kb.div(z, self.parts)
            n, blk = self.split_z(kb, z, co4n // cb if isinstance(co4n, int) and co4n else 0)
        co4 = kb.mul(blk, cb, "co4")
        ox0 = kb.mul(gx, xb, "ox")
        iy0 = kb.sub(kb.mul(oy, self.strides[0]), self.pads[0], "iy0")
        ixs = [kb.sub(kb.mul(kb.min_i(kb.add(ox0, t), OW - 1) if OW % xb else kb.add(ox0, t), self.strides[1]),
                      self.pads[1]) for t in range(xb)]
        vk = kb.vector()
        named = dict(zip((name for name, _ in self.head_args()), ins))
        if self.dw_load is not None:
            if self.depthwise or self.kernel != (1, 1) or self.strides != (1, 1) or any(self.pads):
                raise ValueError("a depthwise load (on_load region) needs a groups-1 1x1 conv, stride 1, no padding")
            dw_args = (named["dw_weight"], named.get("dw_bias"))
        if tiled:  # local memory is declared at kernel scope
            tile_pixels = lx_n * xb
            dw_values = kb.local_alloc(dw_chunk(tile_pixels) * tile_pixels, VectorType(kb.ftype, [4]), "dw_values")

        chunk_base: dict[str, SSAValue] = {}  # the load_tile loop's first block of the current chunk

        def read_tap(k: KernelBuilder, ci4, kh, kw, t, tile=None):
            if tiled:  # this chunk's depthwise values of the work-group's pixels, from local memory
                pixel = k.add(k.mul(lx, xb), t)
                return k.load(dw_values, k.add(k.mul(k.sub(ci4, chunk_base["c0"]), tile_pixels), pixel))
            iy = k.add(iy0, k.mul(kh, self.dilations[0]))
            ix = k.add(ixs[t], k.mul(kw, self.dilations[1]))
            if self.dw_load is not None:
                return self.dw_load.read(k, x, *dw_args, n, ci4, iy, ix)
            conds = (k.in_bounds(iy, 0, H) if self.needs_check(0) else []) + (
                k.in_bounds(ix, 0, W) if self.needs_check(1) else [])
            if self.src_tiles:  # pooled tiles (a 1x1 window on a 1x1 input), read and added in f32
                def at(k2: KernelBuilder, t) -> SSAValue:  # the f32 partials buffer [N][C4][tiles]
                    return k2.vload4(x, self.src.index(k2, n, ci4, t, 0))

                if tile is not None:  # one tile (the work-group loop runs over blocks and tiles)
                    return k.cast(at(k, tile), k.ftype)
                if self.src_tiles <= 8:
                    total = at(k, 0)
                    for t2 in range(1, self.src_tiles):
                        total = k.vector(f32).fadd(total, at(k, t2))
                else:
                    (total,) = k.for_(0, self.src_tiles, 1, [k.vector(f32).f(0.0)],
                                      lambda k2, t2, acc: [k2.vector(f32).fadd(acc[0], at(k2, t2))], "tile")
                return k.cast(total, k.ftype)
            return self.src.read_masked(k, x, n, ci4, iy, ix, k.all_of(conds))

        def tap(k: KernelBuilder, ci4, kh, kw, accs, scale=None, tile=None):
            if self.depthwise:
                wv = k.vload4(wt, k.add(k.mul(co4, taps), k.add(k.mul(kh, kw_n), kw)))
                return [k.fma(read_tap(k, ci4, kh, kw, t), wv, accs[t]) for t in range(xb)]
            # OIHW4o: weights of input channel ci for the 4 outputs of block co4 + j
            ci_n = k.mul(ci4n, 4)
            block = k.mul(ci_n, taps)  # float4s per output block
            base = k.add(k.mul(k.add(k.mul(co4, ci_n), k.mul(ci4, 4)), taps), k.add(k.mul(kh, kw_n), kw))
            wv = [[k.vload4(wt, k.add(k.add(base, k.mul(block, j)), lane * taps)) for lane in range(4)]
                  for j in range(cb)]
            res = list(accs)
            for t in range(xb):
                v = read_tap(k, ci4, kh, kw, t, tile)
                if scale is not None:
                    v = k.vector().fmul(v, scale)
                lanes = [k.splat(k.lane(v, lane)) for lane in range(4)]
                for j in range(cb):
                    for lane in range(4):
                        res[t * cb + j] = k.fma(lanes[lane], wv[j][lane], res[t * cb + j])
            return res

        if self.scale is not None and self.depthwise:
            raise ValueError("a scaled input (graph.scale_channels) needs a groups-1 conv")
        scale_n = n if self.scale is not None and self.scale.shape[0] > 1 else 0

        def over_taps(k: KernelBuilder, ci4, accs, tile=None):
            # Unrolled by the printer: with `#pragma unroll` NVIDIA's compiler ran these
            # NCHW4c convs 1.6x slower than with the window written out (docs/startup.md).
            scale = None if self.scale is None else self.scale.read(k, named["scale"], scale_n, ci4, 0, 0)
            return window_loops(k, self.kernel, accs, lambda k2, a, b, a2: tap(k2, ci4, a, b, a2, scale, tile),
                                unroll=opencl.UNROLL_BY_PRINTER)

        def step_taps(k: KernelBuilder, idx, accs):
            """One step of the input loop: input block `idx`, or with pool tiles read by a
            work-group, the pair (block, tile) numbered `idx`: the work-group's items then
            share the blocks' tiles too, not only the blocks (a 112x112 squeeze-excite input
            has 8 channel blocks and 128 tiles)."""
            if group and self.src_tiles:
                return over_taps(k, k.div(idx, self.src_tiles, "ci4"), accs, k.rem(idx, self.src_tiles, "tile"))
            return over_taps(k, idx, accs)

        split = self.parts > 1
        bias = [kb.vload4(ins[2], kb.add(co4, j), "bias") if self.has_bias and not split and not group
                else vk.f(0.0) for j in range(cb)]
        accs = [bias[j] for _ in range(xb) for j in range(cb)]
        if self.depthwise and self.row_reuse:
            accs = self.depthwise_rows(kb, x, wt, n, co4, iy0, ox0, accs)
        elif self.depthwise:
            accs = over_taps(kb, co4, accs)
        else:
            lo, hi, step = 0, ci4n, 1
            if group:  # blocks lid, lid + group_items, ...: neighbours read neighbouring blocks
                lo, step = lid, self.group_items
                if self.src_tiles:  # (block, tile) pairs: neighbours read neighbouring tiles
                    hi = kb.mul(ci4n, self.src_tiles)
            loop_name = "q" if group and self.src_tiles else "ci4"
            if split:  # this work-item's share of the input channel blocks
                chunk = kb.div(kb.add(ci4n, self.parts - 1), self.parts, "chunk")
                lo = kb.mul(part, chunk, "ci4_lo")
                hi = kb.min_i(kb.add(lo, chunk), ci4n)

            def reduce(k: KernelBuilder, lo, hi, accs):
                if k.half:  # the accumulators are f32 here (see below)
                    return k.for_(lo, hi, step, accs,
                                  lambda k2, i, a: block_sum(k2, a, lambda k3, z: step_taps(k3, i, z)), loop_name)
                return k.for_(lo, hi, step, accs, lambda k2, i, a: step_taps(k2, i, a), loop_name)

            if kb.half:
                # Half products and sums within one input channel block (4 channels x
                # the window), f32 across blocks: a long reduction (960 channels in
                # MobileNetV3's head) summed in half loses too much (see block_sum).
                accs = [kb.cast(a, f32) for a in accs]
            if tiled:
                accs = self.depthwise_chunks(kb, x, dw_args, li, n, oy, lo, hi, accs, dw_values, tile_pixels,
                                             chunk_base, reduce)
            else:
                accs = reduce(kb, lo, hi, accs)
            if kb.half and not group:  # a work-group sums in f32 and converts at the end
                accs = [kb.cast(a, f16) for a in accs]
        partial = dataclasses.replace(self.out, kind="buf", element="f32")

        def finish(k: KernelBuilder, t: int, ox) -> None:
            for j in range(cb):
                if split:  # [split][N][CO4][OH][OW]: part p is the tensor at batch p*N + n
                    partial.write(k, out, accs[t * cb + j], k.add(k.mul(part, n_), n), k.add(co4, j), oy, ox)
                else:
                    self.finish_pixel(k, extras, out, accs[t * cb + j], n, k.add(co4, j), oy, ox)

        if group:
            self.group_finish(kb, ins, extras, out, accs, lid, n, co4, oy, ox0)
            return
        overhang = tiled and -(-OW // xb) % lx_n != 0  # the last work-group's items past the row
        for t in range(xb):
            ox = kb.add(ox0, t)
            if (OW % xb and t > 0) or overhang:
                kb.guard([kb.cmp("slt", ox, OW)], lambda k, t=t, ox=ox: finish(k, t, ox))
            else:
                finish(kb, t, ox)

    def depthwise_chunks(self, kb: KernelBuilder, x, dw_args, li, n, oy, lo, hi, accs, dw_values,
                         tile_pixels: int, chunk_base: dict, reduce) -> list[SSAValue]:
        """The `load_tile` input loop: for each chunk of `dw_chunk` input channel blocks in
        [lo, hi), the work-group's items compute the chunk's depthwise values of its
        `tile_pixels` pixels (pixels past the row repeat its last one) into `dw_values`,
        wait, run `reduce` over the chunk (read_tap loads from `dw_values`), and wait again
        before the next chunk overwrites them."""
        lx_n, g_n = self.load_tile
        OW = self.out.shape[3]
        items = lx_n * g_n
        blocks = dw_chunk(tile_pixels)
        x_base = kb.mul(kb.group_id(0), tile_pixels, "x_base")

        def chunk(k: KernelBuilder, c0, acc):
            count = k.mul(k.sub(k.min_i(k.add(c0, blocks), hi), c0), tile_pixels, "values")

            def value(k2: KernelBuilder, v, carried):
                ci4 = k2.add(c0, k2.div(v, tile_pixels))
                ox = k2.min_i(k2.add(x_base, k2.rem(v, tile_pixels)), OW - 1)
                k2.store(self.dw_load.read(k2, x, *dw_args, n, ci4, oy, ox), dw_values, v)
                return []

            k.for_(li, count, items, [], value, "v")
            k.barrier()
            chunk_base["c0"] = c0
            acc = reduce(k, c0, k.min_i(k.add(c0, blocks), hi), acc)
            k.barrier()
            return acc

        return kb.for_(lo, hi, blocks, accs, chunk, "c0")

    def group_finish(self, kb: KernelBuilder, ins, extras, out, accs, lid, n, co4, oy, ox0) -> None:
        """`group_items` > 1: each accumulator's work-group sum (one local array, a slot
        per work-item and accumulator), then in work-item 0 bias, epilogue and store."""
        cb, xb = self.channel_blocks, self.pixels
        OW = self.out.shape[3]
        count = len(accs)
        scratch = kb.local_alloc(self.group_items * count, accs[0].type, "partial")
        for i, acc in enumerate(accs):
            t, j = divmod(i, cb)
            ox = kb.add(ox0, t)

            def then(k: KernelBuilder, total: SSAValue, j=j, ox=ox) -> None:
                if self.has_bias:
                    bias = k.vload4(ins[2], k.add(co4, j), "bias")
                    total = k.vector(total.type.element_type).fadd(total, k.cast(bias, total.type.element_type))
                self.finish_pixel(k, extras, out, k.cast(total, k.ftype), n, k.add(co4, j), oy, ox)

            tail = [kb.cmp("slt", ox, OW)] if OW % xb and t > 0 else []
            work_group_sum(kb, acc, lid, self.group_items, then, scratch=scratch, stride=count, offset=i,
                           finish_if=tail)


@dataclass(frozen=True)
class PackedDwPoolSpec(PackedConvSpec):
    """A depthwise conv (and its fused epilogue) that also writes `graph.pool_partials`:
    grid (group_items, tiles, N*C4), a work-group per (tile, channel block). Work-item
    l computes output pixels lo + l, lo + l + group_items, ... of its tile (the tile's
    run of ceil(OH*OW / tiles) pixels; neighbouring work-items, neighbouring pixels),
    one at a time with the `row_reuse` window reads, stores each after the epilogue and
    adds it to an f32 sum; `work_group_sum` adds the sums and work-item 0 writes the
    tile's sum / (OH*OW) to the f32 buffer `partials` [N][C4][tiles]."""

    tiles: int = 1

    def base_name(self) -> str:
        return super().base_name() + f"_pool{self.tiles}"

    def head_args(self):
        return super().head_args() + [("partials", GLOBAL_F32)]

    def grid(self):
        n, c4, _, _ = self.out.shape
        return (self.group_items, self.tiles, n * c4)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split(args)
        x, wt, partials = ins[0], ins[1], ins[-1]
        if not self.depthwise or self.pixels != 1 or self.group_items < 2:
            raise ValueError("a pooled depthwise kernel needs a depthwise conv, pixels 1 and group_items >= 2")
        _, c4n, OH, OW = self.out.shape
        pixels = OH * OW
        chunk = -(-pixels // self.tiles)
        tile, z = kb.global_id(1, "tile"), kb.global_id(2, "z")
        lid = kb.local_id(0, "l")
        n, c4 = self.split_z(kb, z, c4n)
        lo = kb.mul(tile, chunk, "lo")
        hi = kb.min_i(kb.add(lo, chunk), pixels)
        bias = kb.vload4(ins[2], c4, "bias") if self.has_bias else kb.vector().f(0.0)

        def pixel(k: KernelBuilder, p: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            oy, ox = k.div(p, OW, "oy"), k.rem(p, OW, "ox")
            iy0 = k.sub(k.mul(oy, self.strides[0]), self.pads[0], "iy0")
            (value,) = self.depthwise_rows(k, x, wt, n, c4, iy0, ox, [bias])
            value = self.finish_pixel(k, extras, out, value, n, c4, oy, ox)
            return [k.vector(f32).fadd(acc[0], k.cast(value, f32))]

        (total,) = kb.for_(kb.add(lo, lid), hi, self.group_items, [kb.vector(f32).f(0.0)], pixel, "p")
        sums = Packed((self.out.shape[0], c4n, self.tiles, 1), "buf", "texture", "f32")

        def finish(k: KernelBuilder, s: SSAValue) -> None:
            sums.write(k, partials, k.vector(f32).fmul(s, 1.0 / pixels), n, c4, tile, 0)

        work_group_sum(kb, total, lid, self.group_items, finish)


def block_sum(kb: KernelBuilder, accs: list[SSAValue], partial) -> list[SSAValue]:
    """`accs` (f32 accumulators) plus `partial(kb, zeros)`, the half partial sums of one
    step of a reduction loop started from half zeros: how a half kernel keeps its
    products and short sums in half and its long sums in f32."""
    zero = kb.vector().f(0.0)
    parts = partial(kb, [zero] * len(accs))
    vf = kb.vector(f32)
    return [vf.fadd(a, kb.cast(p, f32)) for a, p in zip(accs, parts)]


@dataclass(frozen=True)
class PackedSplitSumSpec(PackedSpec):
    """Adds the `split` partial sums of a split-K convolution, then bias and epilogue."""

    parts: int = 2
    has_bias: bool = False

    def base_name(self) -> str:
        return f"conv_split_sum_4c{self.pepi.suffix()}"

    def head_args(self):
        return [("partial", GLOBAL_F32)] + ([("bias", self.weight_type)] if self.has_bias else [])

    def shared(self) -> PackedSplitSumSpec:
        return self  # the partial buffer's layout needs the real extents

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split(args)
        n, c4, h, w = self.pixel_ids(kb)
        batch = self.out.shape[0]
        partial = dataclasses.replace(self.out, kind="buf", element="f32")
        vk = kb.vector()
        acc = kb.vload4(ins[1], c4, "bias") if self.has_bias else None
        for p in range(self.parts):
            v = partial.read(kb, ins[0], kb.add(n, p * batch), c4, h, w)
            acc = v if acc is None else vk.fadd(acc, v)
        self.finish_pixel(kb, extras, out, acc, n, c4, h, w)


# --------------------------------------------------------------------------- pools, reductions, resize


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


# --------------------------------------------------------------------------- element-wise


@dataclass(frozen=True)
class PackedMapSpec(PackedSpec):
    """out[n, c4 + c4_offset, h, w] = expr(inputs at (n, c4, h, w), broadcasting).

    Grid is over `shape` (the inputs' space); with a channel offset (`offset_arg`) it
    copies one concat input into its slice of the output."""

    shape: tuple[int, int, int, int] = (1, 1, 1, 1)
    src_offset_arg: bool = False
    """Read the inputs at channel block `c4 + src_c4_offset` (a launch argument): a
    concat's copy of a value that plan-memory placed at a channel offset of another
    concat's storage."""

    def scalar_names(self) -> tuple[str, ...]:
        return ("src_c4_offset",) if self.src_offset_arg else ()

    def base_name(self) -> str:
        return f"{describe(self.pepi.expr) or 'copy'}_4c"

    def head_args(self):
        return []

    def grid(self):
        n, c4, h, w = self.shape
        return (w, h, n * c4)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        _, extras, out = self.split(args)
        c4n = self.shape[1]
        w, h, z = kb.global_id(0, "w"), kb.global_id(1, "h"), kb.global_id(2, "z")
        n, c4 = self.split_z(kb, z, c4n)
        c4_in = kb.add(c4, self.scalar(args, "src_c4_offset")) if self.src_offset_arg else c4
        value = self.pepi.apply(kb, None, extras, n, c4_in, h, w)
        self.out.write(kb, out, value, n, self.out_block(kb, out, c4), h, w)
