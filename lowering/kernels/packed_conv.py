"""NCHW4c convolution kernels, composed of an input source and a reduction.

A convolution kernel (`PackedConvSpec`) is its geometry (window, strides, padding, the
output pixels and channel blocks of one work-item, the bias) and two choices, each a
small frozen dataclass that the spec holds by value (so specs stay hashable and
launches with equal specs share a kernel):

* its **input source** (`ConvSource`): how the value of one input tap (input channel
  block ci4, window tap (kh, kw), the work-item's output pixel t) is obtained:
  `Load` (the input pixel, zeros outside the input), `ScaledLoad` (times a per-channel
  scale: `graph.scale_channels`, fuse-channel-scale), `PoolTiles` (the sum of
  `graph.pool_partials` tiles: the mean `graph.sum_partials` stands for), `DepthwiseLoad`
  (a depthwise conv and its activation computed where the pixel is loaded: a
  `graph.fused {on_load}` region, fuse-depthwise-load) and `TiledLoad` (a depthwise load
  whose values a work-group computes once per chunk into local memory, `dw_tile`);
* its **reduction** (`ConvReduction`): which input channel blocks an output block sums
  and where the sum goes: `Depthwise` (its own block: groups > 1), `Serial` (every block
  in one loop), `SplitK` (a 1/parts share, written as a partial sum that
  `PackedSplitSumSpec` adds up: the split-k pass) and `WorkGroup` (work-item l of a
  work-group sums blocks l, l + items, ...; local memory adds the partial sums).

Why: the kernel used to hold a flag for each of these (`dw_load`, `scale`, `src_tiles`,
`load_tile`, `parts`, `group_items`, `depthwise`, `row_reuse`) and its body a branch
for each, so every `fuse-*` pass added a flag and a branch to one 175-line function
of nested closures. Now the body is the same sequence of calls for every kernel (the
work-item's ids, its output block and window origin, the accumulators, the reduction's
loop, its stores), and a new fused input is one more `ConvSource` (its name part,
arguments and tap read) and the line of `conv_input` (lowering/families/conv4c.py) that
picks it: nothing in the other sources, in any reduction or in the body.

The sources and reductions emit code through a `ConvEmitter`, the SSA values of the
kernel being built (not part of any spec). `PackedDwPoolSpec` (a depthwise conv that
also writes pool partials) has a schedule of its own, a loop over a tile's pixels, and so
has `PackedConvTileSpec` (`local_tile`: a groups-1 1x1 stride-1 conv as a GEMM tiled in
local memory, work-groups of T output channels x T pixels).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.dialects.builtin import VectorType, f16, f32
from xdsl.ir import Attribute, SSAValue

from adreno_mlir.dialects import opencl
from adreno_mlir.lowering.kernel_builder import GLOBAL_F32, KernelBuilder
from adreno_mlir.lowering.kernels.common import local_fragment, window_leaves_input, window_loops, work_group_sum
from adreno_mlir.lowering.kernels.packed import Packed, PackedEpilogue, PackedSpec, block_sum

DW_CHUNK = 32
"""Input channel blocks per local-memory chunk of a `TiledLoad` conv (at most; see dw_chunk)."""
DW_LOCAL_BYTES = 16384
"""Local memory a `TiledLoad` conv's chunk may take: half of Adreno's 32 KB (NVIDIA has 48)."""


def dw_chunk(tile_pixels: int) -> int:
    """Input channel blocks per chunk for a tile of `tile_pixels` pixels: DW_CHUNK, fewer
    when their f32 float4s would pass DW_LOCAL_BYTES (256 pixels: 4 blocks)."""
    return max(1, min(DW_CHUNK, DW_LOCAL_BYTES // (16 * tile_pixels)))


class ConvEmitter:
    """One convolution kernel being built: its arguments and the values that its source
    and reduction share. The work-item's layout (`ConvSource.ids`, by default the
    reduction's) sets `n`, `blk`, `gx`, `oy` (and `lid` for a work-group reduction,
    `part` for split-K, `li`/`lx` for a tiled load); the body then sets `co4` (the first
    output channel block), `ox0` (the first output column), `iy0` and `ixs` (the window's
    first input row, and first input column per output pixel)."""

    def __init__(self, spec: PackedConvSpec, kb: KernelBuilder, args: list[SSAValue]):
        self.spec, self.kb = spec, kb
        self.ins, self.extras, self.out = spec.split(args)
        self.x, self.wt = self.ins[0], self.ins[1]
        self.named = dict(zip((name for name, _ in spec.head_args()), self.ins))
        """The head arguments by name ("bias", "scale", "dw_weight", ...)."""
        self.ci4n = spec.scalar(args, "ci4") if spec.dynamic_ci else spec.src.shape[1]
        """Input channel blocks: a constant, or the launch argument `ci4`."""
        self.n = self.blk = self.gx = self.oy = self.lid = None
        self.part = 0
        self.co4 = self.ox0 = self.iy0 = None
        self.ixs: list = []

    def at(self, k: KernelBuilder, kh, kw, t: int):
        """The input pixel (iy, ix) of window tap (kh, kw) for output pixel t."""
        s = self.spec
        return k.add(self.iy0, k.mul(kh, s.dilations[0])), k.add(self.ixs[t], k.mul(kw, s.dilations[1]))

    def over_taps(self, k: KernelBuilder, ci4, accs: list[SSAValue], tap, tile=None) -> list[SSAValue]:
        """`accs = tap(self, k, ci4, kh, kw, accs, state, tile)` over the window for input
        channel block `ci4`; `state` is what the source reads once per block (a scale)."""
        # Unrolled by the printer: with `#pragma unroll` NVIDIA's compiler ran these
        # NCHW4c convs 1.6x slower than with the window written out (docs/startup.md).
        state = self.spec.source.block(self, k, ci4)
        return window_loops(k, self.spec.kernel, accs, lambda k2, a, b, a2: tap(self, k2, ci4, a, b, a2, state, tile),
                            unroll=opencl.UNROLL_BY_PRINTER)


# --------------------------------------------------------------------------- input sources


@dataclass(frozen=True)
class ConvSource:
    """How a convolution obtains the value of an input tap. A source names its part of
    the kernel name (`suffix`), the head arguments it reads after the bias (`args`), what
    it reads once per input channel block (`block`) and the tap's value (`read`). A
    source that needs a work-group of its own (`TiledLoad`) also lays out the work-items
    (`grid`, `local_size`, `ids`) and wraps the reduction's loop (`stage`); any other
    leaves the layout to the reduction."""

    def suffix(self) -> str:
        return ""

    def args(self, spec: PackedConvSpec) -> list[tuple[str, Attribute]]:
        return []

    def check(self, spec: PackedConvSpec) -> None:
        """Raise ValueError when `spec` cannot read this source."""

    def shared(self, norm) -> ConvSource:
        """The source with the batch-1 channel-block counts of its accessors zeroed
        (`PackedSpec.shared`; `norm` does one accessor)."""
        return self

    @property
    def block_tiles(self) -> int:
        """Tiles per input channel block that a work-group's items may share (`PoolTiles`),
        0 when a block is read whole."""
        return 0

    def block(self, c: ConvEmitter, k: KernelBuilder, ci4):
        """What `read` needs once per input channel block `ci4` (None: nothing)."""
        return None

    def read(self, c: ConvEmitter, k: KernelBuilder, ci4, kh, kw, t: int, state, tile) -> SSAValue:
        """The tap's value: input channel block `ci4` at window tap (kh, kw) of output pixel
        t; `state` is `block`'s, `tile` a pool tile (`block_tiles`) or None."""
        raise NotImplementedError

    # The work-item layout: the reduction's, unless the source needs its own.

    def grid(self, spec: PackedConvSpec) -> tuple[int, int, int]:
        return spec.reduction.grid(spec)

    def local_size(self, spec: PackedConvSpec) -> tuple[int, ...] | None:
        return spec.reduction.local_size()

    def ids(self, c: ConvEmitter) -> None:
        c.spec.reduction.ids(c)

    def prepare(self, c: ConvEmitter) -> None:
        """Kernel-scope state (local memory), after the window origin."""

    def stage(self, c: ConvEmitter, lo, hi, accs: list[SSAValue], reduce) -> list[SSAValue]:
        """Run `reduce(k, lo, hi, accs)`, the reduction's loop over input channel blocks."""
        return reduce(c.kb, lo, hi, accs)

    def overhang(self, spec: PackedConvSpec) -> bool:
        """Whether work-items may lie past the output row (each store is then guarded)."""
        return False


@dataclass(frozen=True)
class Load(ConvSource):
    """The input pixel itself (zeros outside the input)."""

    def read(self, c, k, ci4, kh, kw, t, state, tile):
        s = c.spec
        _, _, H, W = s.src.shape
        iy, ix = c.at(k, kh, kw, t)
        conds = (k.in_bounds(iy, 0, H) if s.needs_check(0) else []) + (
            k.in_bounds(ix, 0, W) if s.needs_check(1) else [])
        return s.src.read_masked(k, c.x, c.n, ci4, iy, ix, k.all_of(conds))


@dataclass(frozen=True)
class ScaledLoad(Load):
    """A `graph.scale_channels` input (fuse-channel-scale): `scale` (N or 1, C4, 1, 1), an
    argument after the bias, multiplies every input pixel read of channel block c4 by
    its float4 (loaded once per input channel block)."""

    scale: Packed

    def args(self, spec):
        return [("scale", self.scale.arg_type(False))]

    def check(self, spec):
        if spec.depthwise:
            raise ValueError("a scaled input (graph.scale_channels) needs a groups-1 conv")

    def shared(self, norm):
        return dataclasses.replace(self, scale=norm(self.scale)) if self.scale.shape[0] == 1 else self

    def block(self, c, k, ci4):
        n = c.n if self.scale.shape[0] > 1 else 0
        return self.scale.read(k, c.named["scale"], n, ci4, 0, 0)

    def read(self, c, k, ci4, kh, kw, t, state, tile):
        return k.vector().fmul(super().read(c, k, ci4, kh, kw, t, state, tile), state)


@dataclass(frozen=True)
class PoolTiles(ConvSource):
    """`src` holds `graph.pool_partials` tiles (N, C4, tiles, 1), and the conv (1x1 window
    on a 1x1 input) reads input pixel (n, c4, 0, 0) as their sum (in f32): the mean that
    `graph.sum_partials` stands for, added where it is read. A `WorkGroup` reduction's
    items take (block, tile) pairs instead of blocks (`block_tiles`)."""

    tiles: int

    def suffix(self) -> str:
        return f"_tiles{self.tiles}"

    @property
    def block_tiles(self) -> int:
        return self.tiles

    def read(self, c, k, ci4, kh, kw, t, state, tile):
        src, x, n = c.spec.src, c.x, c.n

        def at(k2: KernelBuilder, t2) -> SSAValue:  # the f32 partials buffer [N][C4][tiles]
            return k2.vload4(x, src.index(k2, n, ci4, t2, 0))

        if tile is not None:  # one tile (the work-group loop runs over blocks and tiles)
            return k.cast(at(k, tile), k.ftype)
        if self.tiles <= 8:
            total = at(k, 0)
            for t2 in range(1, self.tiles):
                total = k.vector(f32).fadd(total, at(k, t2))
        else:
            (total,) = k.for_(0, self.tiles, 1, [k.vector(f32).f(0.0)],
                              lambda k2, t2, acc: [k2.vector(f32).fadd(acc[0], at(k2, t2))], "tile")
        return k.cast(total, k.ftype)


@dataclass(frozen=True)
class DepthwiseLoad(ConvSource):
    """A depthwise convolution (and its unary activation) that a 1x1 convolution computes
    as it loads its input (a `graph.fused {on_load}` region, fuse-depthwise-load; the conv
    has stride 1 and no padding): `src` is the depthwise conv's input (the conv's `src`
    too), `pepi` its activation (no extra inputs). Its weights (C4 x KH x KW float4s) and
    bias are arguments after the 1x1 conv's own."""

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
        """`_dw<KH>x<KW>[s<stride>][t<tile>]` and the activation: the kernel-name part."""
        kh, kw = self.kernel
        s = f"s{self.strides[0]}" if self.strides != (1, 1) else ""
        t = f"t{tile}" if tile else ""
        return f"_dw{kh}x{kw}{s}{t}{self.pepi.suffix()}"

    def args(self, spec):
        return [("dw_weight", spec.weight_type)] + ([("dw_bias", spec.weight_type)] if self.has_bias else [])

    def check(self, spec):
        if spec.depthwise or spec.kernel != (1, 1) or spec.strides != (1, 1) or any(spec.pads):
            raise ValueError("a depthwise load (on_load region) needs a groups-1 1x1 conv, stride 1, no padding")

    def shared(self, norm):
        return dataclasses.replace(self, src=norm(self.src)) if self.src.shape[0] == 1 else self

    def read(self, c, k, ci4, kh, kw, t, state, tile):
        iy, ix = c.at(k, kh, kw, t)
        return self.value(c, k, ci4, iy, ix)

    def value(self, c: ConvEmitter, kb: KernelBuilder, c4, oy, ox) -> SSAValue:
        """Depthwise output pixel (n, c4, oy, ox): bias + the window's taps (zero outside
        the input), then the activation; the taps are written out."""
        x, wt, bias, n = c.x, c.named["dw_weight"], c.named.get("dw_bias"), c.n
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
        col_ok = [kb.in_bounds(col, 0, W) if check_x else [] for col in cols]
        for a in range(kh_n):
            iy = kb.add(iy0, a * dy)
            row_ok = kb.in_bounds(iy, 0, H) if check_y else []
            for b in range(kw_n):
                v = self.src.read_masked(kb, x, n, c4, iy, cols[b], kb.all_of(row_ok + col_ok[b]))
                acc = kb.fma(v, kb.vload4(wt, kb.add(wbase, a * kw_n + b)), acc)
        return self.pepi.apply(kb, acc, [], n, c4, oy, ox)


@dataclass(frozen=True)
class TiledLoad(ConvSource):
    """A `DepthwiseLoad` shared by a work-group: `tile` = (Lx, G), a work-group of Lx x G
    work-items, Lx along a row segment (`pixels` each) times G = output channel blocks /
    channel_blocks, so that it holds every output channel of its P = Lx * pixels pixels.
    For each chunk of `dw_chunk(P)` input channel blocks it computes the chunk's depthwise
    values of its pixels once, into local memory, then every work-item reads them from
    there (a bare `DepthwiseLoad` has each work-item compute the values it loads, G
    times in all). Serial or split-K reductions only (this sets the work-group)."""

    load: DepthwiseLoad
    tile: tuple[int, int]

    def suffix(self) -> str:
        return self.load.suffix(self.tile[0])

    def args(self, spec):
        return self.load.args(spec)

    def check(self, spec):
        self.load.check(spec)
        if spec.reduction.items > 1:
            raise ValueError("a tiled depthwise load sets the work-group: it needs a serial or split-K reduction")

    def shared(self, norm):
        return dataclasses.replace(self, load=self.load.shared(norm))

    def grid(self, spec):  # work-groups of Lx pixels (the last may overhang the row) x G block groups
        n, _, h, w = spec.out.shape
        lx, g = self.tile
        return (-(-w // (spec.pixels * lx)) * lx * g, h, n * spec.reduction.parts)

    def local_size(self, spec):
        return (self.tile[0] * self.tile[1], 1, 1)

    def ids(self, c):
        # Work-group (Lx * G, 1, 1) over a row segment: item li is pixel li % Lx of it
        # and output block group li / Lx (one flat dimension: drivers cap the third
        # dimension of a work-group at 64 items). z = n * parts + part.
        kb, spec = c.kb, c.spec
        lx_n = self.tile[0]
        c.oy, z = kb.global_id(1, "oy"), kb.global_id(2, "z")
        c.li = kb.local_id(0, "li")
        c.blk, c.lx = kb.div(c.li, lx_n, "blk"), kb.rem(c.li, lx_n, "lx")
        c.gx = kb.add(kb.mul(kb.group_id(0), lx_n), c.lx, "gx")
        z = spec.reduction.take_part(c, z)
        c.n = 0 if spec.out.shape[0] == 1 else z

    def prepare(self, c):  # local memory is declared at kernel scope
        kb = c.kb
        c.tile_pixels = self.tile[0] * c.spec.pixels
        c.dw_values = kb.local_alloc(dw_chunk(c.tile_pixels) * c.tile_pixels, VectorType(kb.ftype, [4]), "dw_values")

    def read(self, c, k, ci4, kh, kw, t, state, tile):
        # this chunk's depthwise values of the work-group's pixels, from local memory
        pixel = k.add(k.mul(c.lx, c.spec.pixels), t)
        return k.load(c.dw_values, k.add(k.mul(k.sub(ci4, c.c0), c.tile_pixels), pixel))

    def stage(self, c, lo, hi, accs, reduce):
        """For each chunk of `dw_chunk` input channel blocks in [lo, hi), the work-group's
        items compute the chunk's depthwise values of its `tile_pixels` pixels (pixels
        past the row repeat its last one) into `dw_values`, wait, run `reduce` over the
        chunk (`read` loads from `dw_values`), and wait again before the next chunk
        overwrites them."""
        kb = c.kb
        lx_n, g_n = self.tile
        OW = c.spec.out.shape[3]
        items = lx_n * g_n
        tile_pixels = c.tile_pixels
        blocks = dw_chunk(tile_pixels)
        x_base = kb.mul(kb.group_id(0), tile_pixels, "x_base")

        def chunk(k: KernelBuilder, c0, acc):
            count = k.mul(k.sub(k.min_i(k.add(c0, blocks), hi), c0), tile_pixels, "values")

            def value(k2: KernelBuilder, v, carried):
                ci4 = k2.add(c0, k2.div(v, tile_pixels))
                ox = k2.min_i(k2.add(x_base, k2.rem(v, tile_pixels)), OW - 1)
                k2.store(self.load.value(c, k2, ci4, c.oy, ox), c.dw_values, v)
                return []

            k.for_(c.li, count, items, [], value, "v")
            k.barrier()
            c.c0 = c0
            acc = reduce(k, c0, k.min_i(k.add(c0, blocks), hi), acc)
            k.barrier()
            return acc

        return kb.for_(lo, hi, blocks, accs, chunk, "c0")

    def overhang(self, spec):  # the last work-group's items past the row
        return -(-spec.out.shape[3] // spec.pixels) % self.tile[0] != 0


# --------------------------------------------------------------------------- reductions


@dataclass(frozen=True)
class ConvReduction:
    """Which input channel blocks an output block sums and where the sum goes. A
    reduction names its kernel kind and name part, lays out the work-items (the grid's
    `items` per output block and `parts`; `ids`), sums (`accumulate`) and stores
    (`finish`)."""

    kind = "conv"
    items = 1
    """Work-items per output block (a work-group summing its input channels)."""
    parts = 1
    """Input-channel parts, each written as a partial sum (split-K)."""
    start_from_bias = True
    """Whether the accumulators start from the bias (else zeros: a work-group adds it
    after its sum, a partial sum has none)."""
    keeps_extents = False
    """Whether the kernel indexes its output with the real extents (`shared` keeps them)."""

    def suffix(self) -> str:
        return ""

    def out_arg(self, spec: PackedConvSpec) -> tuple[str, Attribute]:
        return ("out", spec.out.arg_type(True))

    def grid(self, spec: PackedConvSpec) -> tuple[int, int, int]:
        n, c4, h, w = spec.out.shape
        return (-(-w // spec.pixels) * self.items, h, n * c4 // spec.channel_blocks * self.parts)

    def local_size(self) -> tuple[int, ...] | None:
        return None

    def row_id(self, kb: KernelBuilder):
        """This work-item's row segment of `pixels` output pixels."""
        return kb.global_id(0, "gx")

    def local_id(self, kb: KernelBuilder):
        return None

    def take_part(self, c: ConvEmitter, z):
        """The grid's third id without the split-K part (set in `c.part`)."""
        return z

    def ids(self, c: ConvEmitter) -> None:
        kb, spec = c.kb, c.spec
        c.gx = self.row_id(kb)
        c.oy, z = kb.global_id(1, "oy"), kb.global_id(2, "z")
        c.lid = self.local_id(kb)
        z = self.take_part(c, z)
        co4n, cb = spec.out.shape[1], spec.channel_blocks
        c.n, c.blk = spec.split_z(kb, z, co4n // cb if isinstance(co4n, int) and co4n else 0)

    def accumulate(self, c: ConvEmitter, accs: list[SSAValue]) -> list[SSAValue]:
        raise NotImplementedError

    def store(self, c: ConvEmitter, k: KernelBuilder, value: SSAValue, j: int, ox) -> None:
        """Store output block co4 + j at column ox: epilogue and output."""
        c.spec.finish_pixel(k, c.extras, c.out, value, c.n, k.add(c.co4, j), c.oy, ox)

    def finish(self, c: ConvEmitter, accs: list[SSAValue]) -> None:
        """Store every accumulator (`store`); the columns past the output row are skipped."""
        kb, spec = c.kb, c.spec
        xb, cb = spec.pixels, spec.channel_blocks
        OW = spec.out.shape[3]
        overhang = spec.source.overhang(spec)

        def put(k: KernelBuilder, t: int, ox) -> None:
            for j in range(cb):
                self.store(c, k, accs[t * cb + j], j, ox)

        for t in range(xb):
            ox = kb.add(c.ox0, t)
            if (OW % xb and t > 0) or overhang:
                kb.guard([kb.cmp("slt", ox, OW)], lambda k, t=t, ox=ox: put(k, t, ox))
            else:
                put(kb, t, ox)


@dataclass(frozen=True)
class Depthwise(ConvReduction):
    """groups > 1: output block c4 sums its window over input block c4 alone (weights
    C4 x KH x KW float4s). `row_reuse`: read each input row segment the work-item's
    `pixels` outputs need once ((pixels - 1) * stride + (KW - 1) * dilation + 1 pixels) and
    keep it and the KH x KW weights in registers, instead of one read per tap and output
    pixel (pixels times KW reads per row): 4 outputs of a 3x3 stride-1 conv read 18
    pixels, not 36 (plain loads only)."""

    row_reuse: bool = False
    kind = "dwconv"

    def accumulate(self, c, accs):
        if self.row_reuse:
            return c.spec.depthwise_rows(c.kb, c.x, c.wt, c.n, c.co4, c.iy0, c.ox0, accs)
        return c.over_taps(c.kb, c.co4, accs, self.tap)

    def tap(self, c: ConvEmitter, k: KernelBuilder, ci4, kh, kw, accs, state, tile) -> list[SSAValue]:
        spec = c.spec
        kh_n, kw_n = spec.kernel
        wv = k.vload4(c.wt, k.add(k.mul(c.co4, kh_n * kw_n), k.add(k.mul(kh, kw_n), kw)))
        return [k.fma(spec.source.read(c, k, ci4, kh, kw, t, state, None), wv, accs[t]) for t in range(spec.pixels)]


@dataclass(frozen=True)
class ChannelReduction(ConvReduction):
    """groups 1 (OIHW4o weights: each input pixel read feeds 4 * channel_blocks
    multiply-adds): a loop over input channel blocks [lo, hi) with `step` (`bounds`),
    each step the window's taps. In a half kernel the products and the sums within a
    block are half, the sums across blocks f32 (`block_sum`)."""

    half_result = True
    """Whether a half kernel's f32 sums are converted to half after the loop (a
    work-group converts after its local sum)."""

    def bounds(self, c: ConvEmitter):
        return 0, c.ci4n, 1

    def loop_name(self, c: ConvEmitter) -> str:
        return "ci4"

    def step(self, c: ConvEmitter, k: KernelBuilder, idx, accs: list[SSAValue]) -> list[SSAValue]:
        """One step of the input loop: input channel block `idx`."""
        return c.over_taps(k, idx, accs, self.tap)

    def accumulate(self, c, accs):
        kb = c.kb
        lo, hi, step = self.bounds(c)
        name = self.loop_name(c)

        def reduce(k: KernelBuilder, lo, hi, accs):
            if k.half:  # the accumulators are f32 here (see below)
                return k.for_(lo, hi, step, accs,
                              lambda k2, i, a: block_sum(k2, a, lambda k3, z: self.step(c, k3, i, z)), name)
            return k.for_(lo, hi, step, accs, lambda k2, i, a: self.step(c, k2, i, a), name)

        if kb.half:
            # Half products and sums within one input channel block (4 channels x
            # the window), f32 across blocks: a long reduction (960 channels in
            # MobileNetV3's head) summed in half loses too much (see block_sum).
            accs = [kb.cast(a, f32) for a in accs]
        accs = c.spec.source.stage(c, lo, hi, accs, reduce)
        if kb.half and self.half_result:
            accs = [kb.cast(a, f16) for a in accs]
        return accs

    def tap(self, c: ConvEmitter, k: KernelBuilder, ci4, kh, kw, accs, state, tile) -> list[SSAValue]:
        # OIHW4o: weights of input channel ci for the 4 outputs of block co4 + j
        spec = c.spec
        kh_n, kw_n = spec.kernel
        taps = kh_n * kw_n
        xb, cb = spec.pixels, spec.channel_blocks
        ci_n = k.mul(c.ci4n, 4)
        block = k.mul(ci_n, taps)  # float4s per output block
        base = k.add(k.mul(k.add(k.mul(c.co4, ci_n), k.mul(ci4, 4)), taps), k.add(k.mul(kh, kw_n), kw))
        wv = [[k.vload4(c.wt, k.add(k.add(base, k.mul(block, j)), lane * taps)) for lane in range(4)]
              for j in range(cb)]
        res = list(accs)
        for t in range(xb):
            v = spec.source.read(c, k, ci4, kh, kw, t, state, tile)
            lanes = [k.splat(k.lane(v, lane)) for lane in range(4)]
            for j in range(cb):
                for lane in range(4):
                    res[t * cb + j] = k.fma(lanes[lane], wv[j][lane], res[t * cb + j])
        return res


@dataclass(frozen=True)
class Serial(ChannelReduction):
    """Each work-item sums every input channel block in one loop, adds them to the bias
    and stores its pixels after the epilogue."""


@dataclass(frozen=True)
class SplitK(ChannelReduction):
    """Split-K: each work-item sums 1/parts of the input channels and writes a partial
    float4 (no bias, no epilogue) to a buffer `out` laid out [parts][N][CO4][OH][OW];
    `PackedSplitSumSpec` adds the parts up. For late layers whose grids are too small to
    fill a GPU."""

    parts: int
    start_from_bias = False
    keeps_extents = True  # the partial-sum buffer is indexed with the real extents

    def suffix(self) -> str:
        return f"_split{self.parts}"

    def out_arg(self, spec):
        return ("out", GLOBAL_F32)

    def take_part(self, c, z):
        c.part, z = c.kb.rem(z, self.parts, "part"), c.kb.div(z, self.parts)
        return z

    def bounds(self, c):  # this work-item's share of the input channel blocks
        kb = c.kb
        chunk = kb.div(kb.add(c.ci4n, self.parts - 1), self.parts, "chunk")
        lo = kb.mul(c.part, chunk, "ci4_lo")
        return lo, kb.min_i(kb.add(lo, chunk), c.ci4n), 1

    def store(self, c, k, value, j, ox):
        # [parts][N][CO4][OH][OW]: part p is the tensor at batch p*N + n
        spec = c.spec
        partial = dataclasses.replace(spec.out, kind="buf", element="f32")
        partial.write(k, c.out, value, k.add(k.mul(c.part, spec.src.shape[0]), c.n), k.add(c.co4, j), c.oy, ox)


@dataclass(frozen=True)
class WorkGroup(ChannelReduction):
    """A work-group of `items` work-items (a power of two) per output block: work-item l
    sums input channel blocks l, l + items, ... (neighbours read neighbouring blocks), and
    `work_group_sum` adds their partial sums in local memory; work-item 0 adds the bias,
    runs the epilogue and writes. Split-K in one launch: the form for GEMVs (a
    squeeze-excite block's 1x1 convs on a 1x1 input, a classifier's 1x1 conv), whose grid
    is a few dozen outputs and whose two-launch split-K would cost more in launches than
    the sum itself. Reading pool tiles (`block_tiles`), the items share (block, tile)
    pairs, not only blocks (a 112x112 squeeze-excite input has 8 channel blocks and 128
    tiles)."""

    items: int
    start_from_bias = False
    half_result = False  # a work-group sums in f32 and converts at the end

    def suffix(self) -> str:
        return f"_wg{self.items}"

    def local_size(self):
        return (self.items, 1, 1)

    def row_id(self, kb):
        return kb.group_id(0, "gx")

    def local_id(self, kb):
        return kb.local_id(0, "l")

    def bounds(self, c):  # blocks lid, lid + items, ... (or (block, tile) pairs)
        tiles = c.spec.source.block_tiles
        return c.lid, c.kb.mul(c.ci4n, tiles) if tiles else c.ci4n, self.items

    def loop_name(self, c):
        return "q" if c.spec.source.block_tiles else "ci4"

    def step(self, c, k, idx, accs):
        tiles = c.spec.source.block_tiles
        if tiles:  # pair `idx` = (block, tile)
            return c.over_taps(k, k.div(idx, tiles, "ci4"), accs, self.tap, k.rem(idx, tiles, "tile"))
        return c.over_taps(k, idx, accs, self.tap)

    def finish(self, c, accs):
        """Each accumulator's work-group sum (one local array, a slot per work-item and
        accumulator), then in work-item 0 bias, epilogue and store."""
        kb, spec = c.kb, c.spec
        cb, xb = spec.channel_blocks, spec.pixels
        OW = spec.out.shape[3]
        count = len(accs)
        scratch = kb.local_alloc(self.items * count, accs[0].type, "partial")
        for i, acc in enumerate(accs):
            t, j = divmod(i, cb)
            ox = kb.add(c.ox0, t)

            def then(k: KernelBuilder, total: SSAValue, j=j, ox=ox) -> None:
                if spec.has_bias:
                    bias = k.vload4(c.ins[2], k.add(c.co4, j), "bias")
                    total = k.vector(total.type.element_type).fadd(total, k.cast(bias, total.type.element_type))
                spec.finish_pixel(k, c.extras, c.out, k.cast(total, k.ftype), c.n, k.add(c.co4, j), c.oy, ox)

            tail = [kb.cmp("slt", ox, OW)] if OW % xb and t > 0 else []
            work_group_sum(kb, acc, c.lid, self.items, then, scratch=scratch, stride=count, offset=i,
                           finish_if=tail)


# --------------------------------------------------------------------------- kernels


@dataclass(frozen=True)
class PackedConvSpec(PackedSpec):
    """An NCHW4c convolution: `pixels` output pixels along a row times `channel_blocks`
    output channel blocks per work-item, reading its input through `source` and summing
    through `reduction` (see the module docstring)."""

    src: Packed = None  # type: ignore[assignment]
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    has_bias: bool = False
    pixels: int = 1
    channel_blocks: int = 1
    """Output channel blocks (float4s) per work-item: each input pixel read feeds
    4 * channel_blocks multiply-adds (not for depthwise, whose channels are independent)."""
    dynamic_ci: bool = False
    """Input channel blocks come as the launch argument `ci4` (batch 1, groups 1), so
    convs that differ only in input channels share a kernel."""
    source: ConvSource = field(default_factory=Load)
    reduction: ConvReduction = field(default_factory=Serial)

    @property
    def depthwise(self) -> bool:
        return isinstance(self.reduction, Depthwise)

    def scalar_names(self) -> tuple[str, ...]:
        return ("ci4",) if self.dynamic_ci else ()

    def local_size(self) -> tuple[int, ...] | None:
        return self.source.local_size(self)

    def out_arg(self):
        return self.reduction.out_arg(self)

    def blocking_suffix(self) -> str:
        """The kernel name's part after `_4c`: channel blocks, reduction, source."""
        blk = f"_x{self.channel_blocks}" if self.channel_blocks > 1 else ""
        return blk + self.reduction.suffix() + self.source.suffix()

    def base_name(self) -> str:
        kh, kw = self.kernel
        s = f"_s{self.strides[0]}" if self.strides != (1, 1) else ""
        return f"{self.reduction.kind}{kh}x{kw}{s}_4c{self.blocking_suffix()}{self.pepi.suffix()}"

    def head_args(self):
        args = [("input", self.src.arg_type(False)), ("weight", self.weight_type)]
        args += [("bias", self.weight_type)] if self.has_bias else []
        return args + self.source.args(self)

    def grid(self):
        return self.source.grid(self)

    def shared(self) -> PackedConvSpec:
        return self if self.reduction.keeps_extents else super().shared()

    def shared_changes(self, norm) -> dict:
        return {"source": self.source.shared(norm)}

    def needs_check(self, axis: int) -> bool:
        """Whether the window's reads along `axis` (0: rows) can leave the input."""
        return window_leaves_input(self.src.shape[2 + axis], self.out.shape[2 + axis], self.kernel[axis],
                                   self.strides[axis], self.pads[axis], self.dilations[axis])

    def depthwise_rows(self, kb: KernelBuilder, x, wt, n, c4, iy0, ox0, accs: list[SSAValue]) -> list[SSAValue]:
        """The `row_reuse` schedule: per window row, the input pixels of all `pixels`
        outputs are read once (zeros outside the input) and each feeds the taps that use
        it; the window is written out (straight-line code, weights loaded once each)."""
        _, _, H, W = self.src.shape
        OW = self.out.shape[3]
        kh_n, kw_n = self.kernel
        (_, sx), (dy, dx) = self.strides, self.dilations
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
        """The same calls for every source and reduction: the work-item's ids, its first
        output block and column and window origin, the accumulators (from the bias or
        zeros), the reduction's sum and its stores."""
        self.source.check(self)
        c = ConvEmitter(self, kb, args)
        self.source.ids(c)
        xb, cb = self.pixels, self.channel_blocks
        OW = self.out.shape[3]
        c.co4 = kb.mul(c.blk, cb, "co4")
        c.ox0 = kb.mul(c.gx, xb, "ox")
        c.iy0 = kb.sub(kb.mul(c.oy, self.strides[0]), self.pads[0], "iy0")
        c.ixs = [kb.sub(kb.mul(kb.min_i(kb.add(c.ox0, t), OW - 1) if OW % xb else kb.add(c.ox0, t), self.strides[1]),
                        self.pads[1]) for t in range(xb)]
        self.source.prepare(c)
        vk = kb.vector()
        bias = [kb.vload4(c.ins[2], kb.add(c.co4, j), "bias") if self.has_bias and self.reduction.start_from_bias
                else vk.f(0.0) for j in range(cb)]
        accs = [bias[j] for _ in range(xb) for j in range(cb)]
        accs = self.reduction.accumulate(c, accs)
        self.reduction.finish(c, accs)


@dataclass(frozen=True)
class PackedDwPoolSpec(PackedConvSpec):
    """A depthwise conv (and its fused epilogue) that also writes `graph.pool_partials`:
    grid (items, tiles, N*C4), a work-group of `items` work-items per (tile, channel
    block). Work-item l computes output pixels lo + l, lo + l + items, ... of its tile (the
    tile's run of ceil(OH*OW / tiles) pixels; neighbouring work-items, neighbouring
    pixels), one at a time with the `row_reuse` window reads, stores each after the
    epilogue and adds it to an f32 sum; `work_group_sum` adds the sums and work-item 0
    writes the tile's sum / (OH*OW) to the f32 buffer `partials` [N][C4][tiles]."""

    tiles: int = 1
    items: int = 1

    def base_name(self) -> str:
        return super().base_name() + f"_pool{self.tiles}"

    def blocking_suffix(self) -> str:
        return super().blocking_suffix() + (f"_wg{self.items}" if self.items > 1 else "")

    def head_args(self):
        return super().head_args() + [("partials", GLOBAL_F32)]

    def grid(self):
        n, c4, _, _ = self.out.shape
        return (self.items, self.tiles, n * c4)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1, 1) if self.items > 1 else None

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split(args)
        x, wt, partials = ins[0], ins[1], ins[-1]
        if not self.depthwise or self.source != Load() or self.pixels != 1 or self.items < 2:
            raise ValueError("a pooled depthwise kernel needs a depthwise conv of plain loads, pixels 1 and items >= 2")
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

        (total,) = kb.for_(kb.add(lo, lid), hi, self.items, [kb.vector(f32).f(0.0)], pixel, "p")
        sums = Packed((self.out.shape[0], c4n, self.tiles, 1), "buf", "texture", "f32")

        def finish(k: KernelBuilder, s: SSAValue) -> None:
            sums.write(k, partials, k.vector(f32).fmul(s, 1.0 / pixels), n, c4, tile, 0)

        work_group_sum(kb, total, lid, self.items, finish)


@dataclass(frozen=True)
class PackedSplitSumSpec(PackedSpec):
    """Adds the `parts` partial sums of a split-K convolution, then bias and epilogue."""

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


# --------------------------------------------------------------------------- 1x1 convs as tiled GEMMs

LOCAL_TILES = (0, 32, 64, 128)
"""`local_tile` values of the conv4c family: off, or the side T of a work-group's output
block (T output channels x T pixels)."""
LOCAL_TILE_K = 32
"""Input channels per slice that a `PackedConvTileSpec` work-group stages per step (BK)."""
LOCAL_REGISTER_TILE = {32: (4, 4), 64: (8, 4), 128: (8, 8)}
"""A work-item's output channels x pixels per `local_tile`: work-groups of 64, 128 and 256
work-items (the matmul family's measured choices for the same tiles, lowering/families/gemm.py)."""


@dataclass(frozen=True)
class PackedConvTileSpec(PackedSpec):
    """A groups-1 1x1 convolution, stride 1, no padding, as a GEMM tiled in local memory:
    out[n, co, p] = bias[co] + sum_ci W[co, ci] * x[n, ci, p] over the pixels p of the
    plane, then the fused epilogue (`pepi`) and the store of each float4 of 4 output
    channels at its pixel. (The schedule of MatMulSpec._local_tile_body,
    lowering/kernels/matmul.py, on NCHW4c operands.)

    A work-group of (T / cols) x (T / rows) work-items computes a T x T output block: T
    output channels (T / 4 channel blocks) from channel block group_id(0) * T / 4, T
    pixels from group_id(1) * T; group_id(2) is the batch entry. Neighbouring work-groups
    share their pixels (and read the same input slices through the cache). Each
    work-item holds `rows` / 4 output channel blocks times `cols` pixels as float4
    accumulators: channel block g at g * (T / rows) + ty of the block, pixel group g of
    v = min(cols, 4) pixels at g * v * (T / cols) + v * tx, so one `vload4` from local
    memory reads the four channels (or pixels) of a group and neighbouring work-items read
    neighbouring float4s.

    Per step of BK = `k_tile` input channels the work-items copy the slices into local
    memory, both [BK][T + 4] (K-major; 4 floats of padding keep the groups aligned):
    - the weights, repacked at compile time to [CI][CO] (the lowering's `weight`
      argument, f32, CI and CO the padded channel counts): float4 e of the slice is 4
      output channels of one input channel, e % (T / 4) the channel group, so
      neighbouring work-items read neighbouring float4s and write them with one `vstore4`;
    - the input: float4 e is input channel block e / T (4 consecutive K steps) at pixel
      e % T, one NCHW4c pixel read (a `vload4` of a buffer, a `read_imagef` of an image),
      stored as 4 scalars into rows k .. k + 3 (neighbouring work-items: neighbouring
      pixels, in global and in local memory).
    The next slices are loaded into registers (loop-carried values) before the current
    ones are multiplied, one barrier after the copy and one before the next. Weights of
    output channels past CO, input channel blocks past CI and pixels past the plane read
    0 (masked, addresses clamped); output blocks past CO and pixels past the plane are
    never stored. Sums, local memory and the weights are f32 in a half kernel too (its
    input is converted as it is loaded, the result before the epilogue)."""

    src: Packed = None  # type: ignore[assignment]
    tile: int = 64
    rows: int = 8
    """Output channels per work-item (a multiple of 4: float4 groups)."""
    cols: int = 4
    """Output pixels per work-item."""
    k_tile: int = LOCAL_TILE_K
    has_bias: bool = False

    def __post_init__(self):
        t, rm, rn = self.tile, self.rows, self.cols
        if t not in LOCAL_TILES[1:]:
            raise ValueError(f"local_tile must be one of {LOCAL_TILES[1:]}, got {t}")
        if rm % 4 or not 4 <= rm <= t or rn not in (1, 2, 4, 8) or rn > t or self.k_tile % 4:
            raise ValueError(f"a {rm} x {rn} register tile of a {t} x {t} block: rows must be a multiple of 4, "
                             f"cols 1, 2, 4 or 8, both at most {t}, and k_tile ({self.k_tile}) a multiple of 4")
        if self.src.shape[0] != self.out.shape[0] or self.src.shape[2:] != self.out.shape[2:]:
            raise ValueError(f"a 1x1 stride-1 conv keeps the batch and the plane: input {self.src.shape}, "
                             f"output {self.out.shape}")

    @property
    def items(self) -> tuple[int, int]:
        """The work-group (x: pixels, y: output channels)."""
        return self.tile // self.cols, self.tile // self.rows

    def base_name(self) -> str:
        return f"conv1x1_lt{self.tile}_{self.rows}x{self.cols}_4c{self.pepi.suffix()}"

    def head_args(self):
        return [("input", self.src.arg_type(False)), ("weight", GLOBAL_F32)] + (
            [("bias", self.weight_type)] if self.has_bias else [])

    def shared(self) -> PackedConvTileSpec:
        return self  # the kernel's bounds are its extents

    def grid(self):
        n, c4, h, w = self.out.shape
        wx, wy = self.items
        return (-(-c4 * 4 // self.tile) * wx, -(-h * w // self.tile) * wy, n)

    def local_size(self) -> tuple[int, ...] | None:
        return (*self.items, 1)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split(args)
        x, wt = ins[0], ins[1]
        bias = ins[2] if self.has_bias else None
        t, bk, rm, rn = self.tile, self.k_tile, self.rows, self.cols
        wx, wy = self.items
        items = wx * wy
        vb = min(rn, 4)
        ls = t + 4  # local row stride
        batch, co4n, oh, ow = self.out.shape
        hw = oh * ow
        ci4n = self.src.shape[1]
        k_n = ci4n * 4
        slices = -(-k_n // bk)
        vf = kb.vector(f32)
        zero4 = vf.f(0.0)
        w_s = kb.local_alloc(bk * ls, f32, "w_tile")
        x_s = kb.local_alloc(bk * ls, f32, "x_tile")
        tx, ty = kb.local_id(0, "tx"), kb.local_id(1, "ty")
        co4_0 = kb.mul(kb.group_id(0), t // 4, "co4_0")
        p0 = kb.mul(kb.group_id(1), t, "p0")
        n = kb.group_id(2, "n") if batch > 1 else 0
        lid = kb.add(kb.mul(ty, wx), tx, "lid")
        per = t * bk // 4  # float4s per slice, of either operand
        copies = [(i * items, (i + 1) * items > per) for i in range(-(-per // items))]
        k_check, co_check, p_check = k_n % bk != 0, co4n % (t // 4) != 0, hw % t != 0

        def masked(k1: KernelBuilder, conds, read):
            valid = k1.all_of(conds)
            if valid is None:
                return read(lambda i: i)
            if valid is False:
                return zero4
            return k1.select(valid, read(lambda i: k1.select(valid, k1.i(i), k1.i(0))), zero4)

        def w_coords(k1: KernelBuilder, e):  # (K step, channel block) in the slice
            return k1.div(e, t // 4), k1.rem(e, t // 4)

        def x_coords(k1: KernelBuilder, e):  # (channel block, pixel) in the slice
            return k1.div(e, t), k1.rem(e, t)

        def load(k1: KernelBuilder, sl) -> list[SSAValue]:
            values = []
            for e0, guarded in copies:  # weights: [K][CO4] float4s
                e = k1.add(lid, e0)
                kk, m4 = w_coords(k1, e)
                gk, co4 = k1.add(k1.mul(sl, bk), kk), k1.add(co4_0, m4)
                conds = ([k1.cmp("slt", e, per)] if guarded else []) + (
                    [k1.cmp("slt", gk, k_n)] if k_check else []) + ([k1.cmp("slt", co4, co4n)] if co_check else [])
                values.append(masked(k1, conds, lambda s, gk=gk, co4=co4:
                                     k1.vload4(wt, s(k1.add(k1.mul(gk, co4n), co4)))))
            for e0, guarded in copies:  # input: channel blocks x pixels
                e = k1.add(lid, e0)
                c4l, pp = x_coords(k1, e)
                ci4, p = k1.add(k1.mul(sl, bk // 4), c4l), k1.add(p0, pp)
                conds = ([k1.cmp("slt", e, per)] if guarded else []) + (
                    [k1.cmp("slt", ci4, ci4n)] if k_check else []) + ([k1.cmp("slt", p, hw)] if p_check else [])

                def read(s, ci4=ci4, p=p):
                    ps = s(p)
                    # a buffer pixel is (n, c4) * H * W + p; an image needs its row and column
                    h, w = (0, ps) if self.src.kind == "buf" or oh == 1 else (k1.div(ps, ow), k1.rem(ps, ow))
                    return k1.cast(self.src.read(k1, x, n, s(ci4), h, w), f32)

                values.append(masked(k1, conds, read))
            return values

        def stage(k1: KernelBuilder, values: list[SSAValue]) -> None:
            for (e0, guarded), v, side in zip(copies * 2, values, [0] * len(copies) + [1] * len(copies)):
                def put(k2: KernelBuilder, e0=e0, v=v, side=side) -> None:
                    e = k2.add(lid, e0)
                    if side == 0:
                        kk, m4 = w_coords(k2, e)
                        k2.vstore(v, w_s, k2.add(k2.mul(kk, ls), k2.mul(m4, 4)))
                    else:  # four K steps of one pixel: four rows
                        c4l, pp = x_coords(k2, e)
                        row = k2.add(k2.mul(c4l, 4 * ls), pp)
                        for j in range(4):
                            k2.store(k2.lane(v, j), x_s, k2.add(row, j * ls))

                if guarded:
                    k1.if_(k1.cmp("slt", k1.add(lid, e0), per), put)
                else:
                    put(k1)

        groups = rm // 4

        def step(k1: KernelBuilder, sl: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            acc, regs = list(carried[:groups * rn]), carried[groups * rn:]
            stage(k1, regs)
            k1.barrier()
            nxt = load(k1, k1.min_i(k1.add(sl, 1), slices - 1)) if slices > 1 else regs
            k2 = k1.vector(f32)
            for kk in range(bk):
                wv = [k1.vload(w_s, k1.add(k1.mul(ty, 4), kk * ls + g * 4 * wy), 4) for g in range(groups)]
                xv = local_fragment(k1, x_s, tx, kk * ls, rn, vb, vb * wx)
                for j in range(rn):
                    xs = k2.splat(xv[j])
                    for i in range(groups):
                        acc[i * rn + j] = k2.fma(wv[i], xs, acc[i * rn + j])
            k1.barrier()
            return acc + list(nxt)

        first = load(kb, 0)
        carried = kb.for_(0, slices, 1, [zero4] * (groups * rn) + first, step, "sl")
        accs = carried[:groups * rn]
        for i in range(groups):
            co4 = kb.add(co4_0, kb.add(ty, i * wy), "co4")
            b4 = None
            if bias is not None:  # clamped: a block past CO reads a real one and is not stored
                b4 = kb.cast(kb.vload4(bias, kb.min_i(co4, co4n - 1) if co_check else co4), f32)
            for j in range(rn):
                gj, jj = divmod(j, vb)
                p = kb.add(p0, kb.add(kb.mul(tx, vb), gj * vb * wx + jj))
                conds = ([kb.cmp("slt", co4, co4n)] if co_check else []) + ([kb.cmp("slt", p, hw)] if p_check else [])

                def put(k1: KernelBuilder, v=accs[i * rn + j], p=p, co4=co4, b4=b4) -> None:
                    if b4 is not None:
                        v = k1.vector(f32).fadd(v, b4)
                    h, w = (0, p) if oh == 1 else (k1.div(p, ow, "oy"), k1.rem(p, ow, "ox"))
                    self.finish_pixel(k1, extras, out, k1.cast(v, k1.ftype), n, co4, h, w)

                kb.guard(conds, put)
