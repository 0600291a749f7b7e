"""The geometry of a matrix product whose operands are read through strides (a
`graph.matmul` with `lhs_perm` / `rhs_perm` reads a transposed operand in place): what
select-kernel-config's rules and the matmul kernels (lowering/kernels/matmul.py) both read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a dense row-major array of `shape`."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def numel(shape: Sequence[int]) -> int:
    return int(math.prod(shape))


def read_strides(stored_shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """Element strides with which `transpose(stored, perm)` is read from the contiguous
    `stored` tensor (`graph.matmul`'s `lhs_perm` / `rhs_perm`); 0 along unit axes, whose
    coordinate is always 0."""
    cs = contiguous_strides(stored_shape)
    return tuple(0 if stored_shape[p] == 1 else cs[p] for p in perm)


class MatMulGeometry(NamedTuple):
    """out[b..., m, n] = sum_k A[b..., m, k] * B[b..., k, n] with each operand read through
    element strides: A at sum(b * a_batch_strides) + m * a_strides[0] + k * a_strides[1],
    B at sum(b * b_batch_strides) + k * b_strides[0] + n * b_strides[1]. A batch stride is
    0 where the operand is broadcast."""

    batch: tuple[int, ...]
    a_batch_strides: tuple[int, ...]
    b_batch_strides: tuple[int, ...]
    m: int
    n: int
    k: int
    a_strides: tuple[int, int]
    """(row stride, K stride) of A."""
    b_strides: tuple[int, int]
    """(K stride, column stride) of B."""

    def collapse_rows(self) -> MatMulGeometry | None:
        """The batch read as more rows of one product, when B is shared by every batch
        entry and A's batch axes and rows nest like one row axis (PyTorch's attention
        projections multiply [L, 1, E] by [E, 3E]): register tiles then span batch
        entries instead of B being re-read per entry. None when that does not hold
        (B has a batch; A is broadcast along a batch axis or read transposed across it)."""
        if not self.batch or any(self.b_batch_strides):
            return None
        live = [(st, d) for st, d in zip((*self.a_batch_strides, self.a_strides[0]), (*self.batch, self.m))
                if d != 1]
        if any(st == 0 for st, _ in live):
            return None
        if any(outer != inner * d_inner for (outer, _), (inner, d_inner) in zip(live, live[1:])):
            return None
        rows = numel(self.batch) * self.m
        row_stride = live[-1][0] if live else self.k
        return self._replace(batch=(), a_batch_strides=(), b_batch_strides=(), m=rows,
                             a_strides=(row_stride, self.a_strides[1]))


def matmul_geometry(a_shape: Sequence[int], a_read: Sequence[int], b_shape: Sequence[int],
                    b_read: Sequence[int]) -> MatMulGeometry:
    """The geometry of numpy's matmul of A (shape `a_shape`, read through strides
    `a_read`) and B: a 1-D A is one row, a 1-D B one column, batch axes broadcast."""
    a = (1, *a_shape) if len(a_shape) == 1 else tuple(a_shape)
    a_st = (0, *a_read) if len(a_shape) == 1 else tuple(a_read)
    b = (*b_shape, 1) if len(b_shape) == 1 else tuple(b_shape)
    b_st = (*b_read, 0) if len(b_shape) == 1 else tuple(b_read)
    batch = broadcast_batch(a[:-2], b[:-2])

    def batch_strides(dims, strides):
        pad = len(batch) - len(dims)
        return (0,) * pad + tuple(0 if d == 1 else st for d, st in zip(dims, strides))

    return MatMulGeometry(batch, batch_strides(a[:-2], a_st[:-2]), batch_strides(b[:-2], b_st[:-2]),
                          m=a[-2], n=b[-1], k=a[-1], a_strides=(a_st[-2], a_st[-1]), b_strides=(b_st[-2], b_st[-1]))


def broadcast_batch(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


def float4_columns(n: int, b_strides: Sequence[int], b_batch_strides: Sequence[int]) -> bool:
    """Whether B's rows can be read as float4s (tile_n = 4): columns contiguous, N % 4 == 0,
    and every row start (K and batch strides) a multiple of 4 floats, so each vload4 is
    aligned."""
    return n % 4 == 0 and b_strides[1] == 1 and all(st % 4 == 0 for st in (b_strides[0], *b_batch_strides))


def _contiguous_batch(batch_strides: Sequence[int], batch: Sequence[int], inner: int) -> bool:
    """Whether batch strides are those of a contiguous array whose entries hold `inner`
    elements (broadcast axes, stride 0, skipped)."""
    expected = inner
    for st, d in zip(reversed(batch_strides), reversed(batch)):
        if st == 0:
            continue
        if st != expected:
            return False
        expected *= d
    return True
