"""Winograd F(m x m, 3 x 3) arithmetic (Lavin & Gray 2015): the transform matrices, the tile
grid, the filter transform U = G g G^T done at compile time (conv-winograd) and a float64
reference. The kernels that apply B^T d B and A^T m A are lowering/kernels/winograd.py."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

_F = Fraction
# Lavin & Gray / wincnn, interpolation points 0, 1, -1 (F(2,3)) and 0, +-1, +-2 (F(4,3)).
# Exact fractions: the kernels emit only the non-zero terms, the filter transform runs
# in float64.
BT = {
    2: [[1, 0, -1, 0],
        [0, 1, 1, 0],
        [0, -1, 1, 0],
        [0, 1, 0, -1]],
    4: [[4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1]],
}
G = {
    2: [[1, 0, 0],
        [_F(1, 2), _F(1, 2), _F(1, 2)],
        [_F(1, 2), _F(-1, 2), _F(1, 2)],
        [0, 0, 1]],
    4: [[_F(1, 4), 0, 0],
        [_F(-1, 6), _F(-1, 6), _F(-1, 6)],
        [_F(-1, 6), _F(1, 6), _F(-1, 6)],
        [_F(1, 24), _F(1, 12), _F(1, 6)],
        [_F(1, 24), _F(-1, 12), _F(1, 6)],
        [0, 0, 1]],
}
AT = {
    2: [[1, 1, 1, 0],
        [0, 1, -1, -1]],
    4: [[1, 1, 1, 1, 1, 0],
        [0, 1, -1, 2, -2, 0],
        [0, 1, 1, 4, 4, 0],
        [0, 1, -1, 8, -8, 1]],
}

TILES = (2, 4)


def _check_tile(tile: int) -> None:
    if tile not in TILES:
        raise ValueError(f"Winograd tile must be 2 or 4 (F(2x2,3x3) or F(4x4,3x3)), got {tile}")


def winograd_matrices(tile: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B^T, G, A^T) of F(tile x tile, 3 x 3) as float64 arrays of shapes
    (alpha, alpha), (alpha, 3), (tile, alpha)."""
    _check_tile(tile)
    return tuple(np.array([[float(v) for v in row] for row in m[tile]]) for m in (BT, G, AT))  # type: ignore[return-value]


def winograd_tiles(out_h: int, out_w: int, tile: int) -> tuple[int, int]:
    """(TH, TW): tiles per output column and row (the last ones may hang over the edge)."""
    return -(-out_h // tile), -(-out_w // tile)


# --------------------------------------------------------------------------- numpy


def winograd_filter_transform(w_oihw: np.ndarray, tile: int) -> np.ndarray:
    """U = G g G^T for every (output, input) channel pair of 3x3 weights (K, C, 3, 3),
    computed in float64; returns shape (alpha^2, K, C) with xi = i * alpha + j."""
    _, g, _ = winograd_matrices(tile)
    w = np.asarray(w_oihw, dtype=np.float64)
    if w.ndim != 4 or w.shape[2:] != (3, 3):
        raise ValueError(f"the Winograd filter transform needs (K, C, 3, 3) weights, got {list(w.shape)}")
    u = (g @ w @ g.T).transpose(2, 3, 0, 1)  # G g G^T per (k, c), as (i, j, k, c)
    alpha = tile + 2
    return u.reshape(alpha * alpha, *w.shape[:2])


def pack_filter_transform(u: np.ndarray) -> np.ndarray:
    """(alpha^2, K, C) -> the kernel's layout [alpha^2, K/4, C, 4] (float32), K padded to a
    multiple of 4 with zeros: element (xi, k4, c, j) is U[xi][4*k4 + j][c]."""
    a2, k, c = u.shape
    k4 = -(-k // 4)
    padded = np.zeros((a2, 4 * k4, c), np.float32)
    padded[:, :k] = u  # rounded to float32 once, here
    return np.ascontiguousarray(padded.reshape(a2, k4, 4, c).transpose(0, 1, 3, 2))


def unpack_oihw4o(packed: np.ndarray) -> np.ndarray:
    """[O/4, I, KH, KW, 4] -> [O, I, KH, KW] (the layout pass's packing, inverted)."""
    o4, i, kh, kw, _ = packed.shape
    return np.ascontiguousarray(np.asarray(packed).transpose(0, 4, 1, 2, 3).reshape(o4 * 4, i, kh, kw))


def winograd_weight(w_packed_oihw4o: np.ndarray, tile: int) -> np.ndarray:
    """The `texture.winograd_matmul` filter constant from OIHW4o-packed 3x3 weights."""
    return pack_filter_transform(winograd_filter_transform(unpack_oihw4o(w_packed_oihw4o), tile))


def winograd_conv_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                            pads: tuple[int, int, int, int], tile: int,
                            dtype=np.float64) -> np.ndarray:
    """A 3x3 stride-1 convolution (NCHW x, OIHW w, pads top, left, bottom, right)
    computed the Winograd way, transforms and products in `dtype`: the algorithm the
    kernels implement, for checking them and for checking it against direct
    convolution."""
    bt, _, at = (m.astype(dtype) for m in winograd_matrices(tile))
    n, c, h, wd = x.shape
    k = w.shape[0]
    pt, pl, pb, pr = pads
    oh, ow = h + pt + pb - 2, wd + pl + pr - 2
    th, tw = winograd_tiles(oh, ow, tile)
    alpha = tile + 2
    # zero padding plus the overhang of the last tiles
    xp = np.zeros((n, c, th * tile + 2, tw * tile + 2), dtype)
    rows, cols = min(h, th * tile + 2 - pt), min(wd, tw * tile + 2 - pl)
    xp[:, :, pt:pt + rows, pl:pl + cols] = x[:, :, :rows, :cols]
    d = np.lib.stride_tricks.sliding_window_view(xp, (alpha, alpha), axis=(2, 3))[:, :, ::tile, ::tile]
    v = np.einsum("ia,nctsab,jb->ijcnts", bt, d, bt)  # (alpha, alpha, C, N, TH, TW)
    v = v.reshape(alpha, alpha, c, n * th * tw)
    u = winograd_filter_transform(w, tile).astype(dtype).reshape(alpha, alpha, k, c)
    m = np.einsum("ijkc,ijcp->ijkp", u, v)
    y = np.einsum("ai,ijkp,bj->kpab", at, m, at)  # (K, P, tile, tile)
    y = y.reshape(k, n, th, tw, tile, tile).transpose(1, 0, 2, 4, 3, 5).reshape(n, k, th * tile, tw * tile)
    y = y[:, :, :oh, :ow]
    if b is not None:
        y = y + np.asarray(b, dtype).reshape(1, k, 1, 1)
    return y


# --------------------------------------------------------------------------- kernels
