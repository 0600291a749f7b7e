"""Winograd convolution F(m x m, 3 x 3) on NCHW4c tensors, m = 2 or 4 (the `tile`).

A 3x3, stride-1 convolution computes each m x m output tile from an alpha x alpha
input patch (alpha = m + 2) as (Lavin & Gray, "Fast Algorithms for Convolutional
Neural Networks", 2015)

    Y = A^T [ sum_c (G g_kc G^T) (.) (B^T d_c B) ] A

i.e. per position xi of the alpha x alpha transformed tile a matrix product over
input channels. Multiplications per output drop from 9 to alpha^2 / m^2 (4 for
F(2,3), 2.25 for F(4,3)) at the price of transforms and rounding: F(4,3)'s
matrices have entries up to 8 and 1/24, so its fp32 error is 10-20 times
F(2,3)'s (see tests/test_winograd.py for the measured numbers).

Three kernels, one per `texture.winograd_*` op:

- `WinogradInputSpec`: one work-item per (tile, input channel block): reads the
  alpha x alpha patch (zeros outside the input, i.e. the padding), computes
  B^T d B in float4 arithmetic (4 channels at once) and writes alpha^2 float4s
  into V, an NCHW4c-shaped tensor (alpha^2, C/4, 1, P): "batch" xi, channel
  block, one row, P tiles wide.
- `WinogradMatmulSpec`: per xi, M[xi][k][p] = sum_c U[xi][k][c] V[xi][c][p]: a
  1x1 NCHW4c convolution whose "batch" is xi (4 float4 multiply-adds per input
  float4, weight vectors of 4 output channels), looping over input channel blocks;
  `tile_block` and `channel_blocks` block it over tiles and output channel blocks.
- `WinogradOutputSpec`: one work-item per (tile, output channel block): A^T m A,
  bias, then the fused element-wise epilogue per output pixel (pixels past the
  output's edge, where OH or OW is not a multiple of m, are not written).

The filter transform U = G g G^T is computed at compile time
(`winograd_filter_transform`) and stored packed as [alpha^2, K/4, C, 4]:
U_packed[xi, k4, c, j] = U[xi][4*k4 + j][c], so the float4 at (xi, k4, c) holds
input channel c's weights for the 4 output channels of block k4 (OIHW4o per xi).

Tiles are numbered p = (n * TH + th) * TW + tw with TH = ceil(OH/m), TW = ceil(OW/m).
"""

from __future__ import annotations

from dataclasses import dataclass
from xdsl.dialects.builtin import f16, f32
from xdsl.ir import SSAValue

from adreno_mlir.kernel_math.winograd import AT, BT
from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import window_leaves_input
from adreno_mlir.lowering.kernels.packed import Packed, PackedSpec, block_sum

def _combine(vk: KernelBuilder, coeffs, values: list[SSAValue]) -> SSAValue:
    """sum_i coeffs[i] * values[i] over float4s, emitting only the non-zero terms
    (+-1 as adds and subtracts, others as multiply-adds with a constant)."""
    terms = [(float(c), v) for c, v in zip(coeffs, values) if c != 0]
    terms.sort(key=lambda t: t[0] != 1.0)  # start from a +1 term when there is one
    c0, acc = terms[0]
    if c0 != 1.0:
        acc = vk.fmul(acc, c0)
    for c, v in terms[1:]:
        if c == 1.0:
            acc = vk.fadd(acc, v)
        elif c == -1.0:
            acc = vk.fsub(acc, v)
        else:
            acc = vk.fma(v, c, acc)
    return acc


def _sandwich(vk: KernelBuilder, left, tile: list[list[SSAValue]], right) -> list[list[SSAValue]]:
    """left @ tile @ right^T for matrices of float4s (left, right: rows of coefficients)."""
    inner = len(tile)
    rows = [[_combine(vk, left[i], [tile[a][j] for a in range(inner)]) for j in range(len(tile[0]))]
            for i in range(len(left))]
    return [[_combine(vk, right[j], rows[i]) for j in range(len(right))] for i in range(len(left))]


def _tile_coords(kb: KernelBuilder, p, tiles: tuple[int, int], batch: int):
    """(n, th, tw) of tile number p = (n * TH + th) * TW + tw."""
    th_n, tw_n = tiles
    tw = kb.rem(p, tw_n, "tw")
    rest = kb.div(p, tw_n)
    if batch == 1:
        return 0, rest, tw
    return kb.div(rest, th_n, "n"), kb.rem(rest, th_n, "th"), tw


def _inside(kb: KernelBuilder, v, size: int):
    """0 <= v < size: None when statically true, False when statically false (a single
    tile row or column makes coordinates Python ints), else the condition."""
    if isinstance(v, int):
        return None if 0 <= v < size else False
    return kb.all_of(kb.in_bounds(v, 0, size))


@dataclass(frozen=True)
class WinogradInputSpec(PackedSpec):
    """V[xi][c4][0][p] = (B^T d B)[xi] for the patch d of tile p, channel block c4.

    `out` is V (alpha^2, C4, 1, P), `src` the NCHW4c input (N, C4, H, W)."""

    src: Packed = None  # type: ignore[assignment]
    tile: int = 2
    pads: tuple[int, int] = (0, 0)
    """Top and left padding: where the first patch starts (bottom and right padding
    are the zeros read past the input's edge)."""
    tiles: tuple[int, int] = (1, 1)
    """(TH, TW) tiles per output column and row."""

    def base_name(self) -> str:
        return f"winograd_input_f{self.tile}_4c"

    def head_args(self):
        return [("input", self.src.arg_type(False))]

    def grid(self):
        _, c4, _, p = self.out.shape
        return (p, c4, 1)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split(args)
        n_, _, h_n, w_n = self.src.shape
        alpha = self.tile + 2
        p, c4 = kb.global_id(0, "p"), kb.global_id(1, "c4")
        n, th, tw = _tile_coords(kb, p, self.tiles, n_)
        iy0 = kb.sub(kb.mul(th, self.tile), self.pads[0], "iy0")
        ix0 = kb.sub(kb.mul(tw, self.tile), self.pads[1], "ix0")
        check_y = window_leaves_input(h_n, self.tiles[0], alpha, self.tile, self.pads[0], 1)
        check_x = window_leaves_input(w_n, self.tiles[1], alpha, self.tile, self.pads[1], 1)
        ys = [kb.add(iy0, a) for a in range(alpha)]
        xs = [kb.add(ix0, b) for b in range(alpha)]
        row_ok = [_inside(kb, y, h_n) if check_y else None for y in ys]
        col_ok = [_inside(kb, x_, w_n) if check_x else None for x_ in xs]
        d = [[self.src.read_masked(kb, x, n, c4, ys[a], xs[b], kb.all_of([c for c in (row_ok[a], col_ok[b])
                                                                           if c is not None]))
              for b in range(alpha)] for a in range(alpha)]
        bt = BT[self.tile]
        v = _sandwich(kb.vector(), bt, d, bt)
        for i in range(alpha):
            for j in range(alpha):
                self.out.write(kb, out, v[i][j], i * alpha + j, c4, 0, p)


@dataclass(frozen=True)
class WinogradMatmulSpec(PackedSpec):
    """M[xi][k4][0][p] = sum_c U[xi][k4][c] * V[xi][c][p] (float4 over 4 output channels).

    `src` is V (alpha^2, C4, 1, P), `out` is M (alpha^2, K4, 1, P); the filter argument
    is U packed [alpha^2, K4, 4*C4, 4] (see the module docstring)."""

    src: Packed = None  # type: ignore[assignment]
    tile_block: int = 1
    """Tiles per work-item: each filter float4 loaded feeds this many multiply-adds."""
    channel_blocks: int = 1
    """Output channel blocks per work-item: each V float4 read feeds 4 * channel_blocks
    multiply-adds. Must divide K4."""

    def base_name(self) -> str:
        blk = f"_t{self.tile_block}" if self.tile_block > 1 else ""
        blk += f"_x{self.channel_blocks}" if self.channel_blocks > 1 else ""
        return f"winograd_matmul_4c{blk}"

    def head_args(self):
        return [("input", self.src.arg_type(False)), ("filter", self.weight_type)]

    def grid(self):
        a2, k4, _, p = self.out.shape
        return (-(-p // self.tile_block), k4 // self.channel_blocks, a2)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (v_ptr, u_ptr), _, out = self.split(args)
        _, c4n, _, p_n = self.src.shape
        _, k4n, _, _ = self.out.shape
        tb, cb = self.tile_block, self.channel_blocks
        gx, kb_id, xi = kb.global_id(0, "gx"), kb.global_id(1, "kblk"), kb.global_id(2, "xi")
        k40 = kb.mul(kb_id, cb, "k4")
        p0 = kb.mul(gx, tb, "p0")
        ragged = p_n % tb != 0
        # Reads of a ragged last block are clamped to the last tile, writes guarded.
        ps = [kb.min_i(kb.add(p0, t), p_n - 1) if ragged and t > 0 else kb.add(p0, t) for t in range(tb)]
        ci_n = 4 * c4n
        # float4 index of U[xi][k4 + j][4 * ci4 + lane]
        rows = [kb.mul(kb.add(kb.mul(xi, k4n), kb.add(k40, j)), ci_n) for j in range(cb)]
        zero = kb.vector().f(0.0)

        def step(k: KernelBuilder, ci4, accs):
            vs = [self.src.read(k, v_ptr, xi, ci4, 0, ps[t]) for t in range(tb)]
            c0 = k.mul(ci4, 4)
            ws = [[k.vload4(u_ptr, k.add(k.add(rows[j], c0), lane)) for lane in range(4)] for j in range(cb)]
            res = list(accs)
            for t in range(tb):
                lanes = [k.splat(k.lane(vs[t], lane)) for lane in range(4)]
                for j in range(cb):
                    for lane in range(4):
                        res[t * cb + j] = k.fma(lanes[lane], ws[j][lane], res[t * cb + j])
            return res

        if kb.half:  # half products within a channel block, f32 sums across blocks (block_sum)
            zero32 = kb.vector(f32).f(0.0)
            accs = kb.for_(0, c4n, 1, [zero32] * (tb * cb),
                           lambda k, ci4, a: block_sum(k, a, lambda k2, z: step(k2, ci4, z)), "ci4")
            accs = [kb.cast(a, f16) for a in accs]
        else:
            accs = kb.for_(0, c4n, 1, [zero] * (tb * cb), step, "ci4")
        for t in range(tb):
            def write(k: KernelBuilder, t=t):
                for j in range(cb):
                    self.out.write(k, out, accs[t * cb + j], xi, k.add(k40, j), 0, ps[t])

            if ragged and t > 0:
                kb.guard([kb.cmp("slt", kb.add(p0, t), p_n)], write)
            else:
                write(kb)


@dataclass(frozen=True)
class WinogradOutputSpec(PackedSpec):
    """Y[n][k4][th*m + i][tw*m + j] = (A^T M_p A)[i][j] + bias, then the epilogue.

    `src` is M (alpha^2, K4, 1, P), `out` the NCHW4c result (N, K4, OH, OW)."""

    src: Packed = None  # type: ignore[assignment]
    tile: int = 2
    tiles: tuple[int, int] = (1, 1)
    """(TH, TW) tiles per output column and row."""
    has_bias: bool = False

    def base_name(self) -> str:
        return f"winograd_output_f{self.tile}_4c{self.pepi.suffix()}"

    def head_args(self):
        return [("input", self.src.arg_type(False))] + ([("bias", self.weight_type)] if self.has_bias else [])

    def grid(self):
        # From M, not `out`: with batch 1 `shared()` zeroes out's channel blocks.
        _, k4, _, p = self.src.shape
        return (p, k4, 1)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split(args)
        m_ptr = ins[0]
        m = self.tile
        alpha = m + 2
        n_, _, oh, ow = self.out.shape
        p, k4 = kb.global_id(0, "p"), kb.global_id(1, "k4")
        n, th, tw = _tile_coords(kb, p, self.tiles, n_)
        tile = [[self.src.read(kb, m_ptr, i * alpha + j, k4, 0, p) for j in range(alpha)] for i in range(alpha)]
        vk = kb.vector()
        at = AT[m]
        y = _sandwich(vk, at, tile, at)
        if self.has_bias:
            bias = kb.vload4(ins[1], k4, "bias")
            y = [[vk.fadd(v, bias) for v in row] for row in y]
        oy0, ox0 = kb.mul(th, m, "oy0"), kb.mul(tw, m, "ox0")
        for i in range(m):
            oy = kb.add(oy0, i)
            for j in range(m):
                ox = kb.add(ox0, j)
                conds = ([kb.cmp("slt", oy, oh)] if oh % m and i > 0 else []) + (
                    [kb.cmp("slt", ox, ow)] if ow % m and j > 0 else [])
                kb.guard(conds, lambda k, v=y[i][j], oy=oy, ox=ox: self.finish_pixel(k, extras, out, v, n, k4, oy, ox))
