"""Matrix products: ONNX Gemm (2-D, optional transposes, alpha, beta * C via the
epilogue) and batched MatMul with broadcasting batch dimensions.

`k_parts = 1` (kernel_config): one work-item per output element looping over all of
K; grid (N, M[, batch]). That is the right shape for large M * N, but a batch-1
classifier (Gemm 1x1280 by 1000x1280) is then 1000 work-items of 1280 serial
multiply-adds each, which leaves most of a GPU idle.

`k_parts = S > 1`: S work-items of one work-group share each output's reduction. Each
sums a strided share of K (item s takes k = s, s + S, ...: neighbouring work-items read
neighbouring addresses), the shares are added by a tree reduction in local memory, and
the work-item with s = 0 applies alpha and the epilogue and stores. The work-group's
shape follows B's layout, the operand that is read once and dominates the traffic:

- K contiguous in B (Gemm with transB = 1, as PyTorch exports a Linear layer; a MatMul
  reading attention's keys through `rhs_perm`): one output per work-group, local size (S, 1[, 1]), grid (S * N, M[, batch]). When A's row
  is contiguous too and K % 4 == 0 the loads are float4 (`vload4` of A's row and B's
  row, whose starts are then multiples of 4 floats); otherwise scalar.
- N contiguous in B (transB = 0, MatMul): neighbouring work-items must take
  neighbouring columns for their loads to coalesce, so a work-group holds `cols`
  columns (`split_k_cols`) times S shares: local size (cols, S[, 1]), grid (N rounded
  up to cols, S * M[, batch]). Columns past N load column N - 1 (in bounds, never
  stored) so that every work-item reaches every barrier.

A MatMul reads each operand through strides (`MatMulSpec.a_strides`, `b_strides` and
the batch strides), not as a contiguous [batch..., M, K] / [batch..., K, N] array: a
`graph.matmul` with `lhs_perm` / `rhs_perm` reads a transposed operand in place instead
of a transpose kernel copying it first (attention's keys, its head split/merge). Every
path takes any strides; the float4 loads only where the strides keep them aligned and
contiguous (see `MatMulSpec`), the scalar loads elsewhere. A kernel that reads a
non-contiguous operand is named with `_tA` / `_tB` / `_tAB`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from adreno_mlir.kernel_math.matmul import _contiguous_batch, float4_columns
from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, local_fragment, numel, work_group_sum

LOCAL_TILES = (0, 16, 32, 64, 128)
"""`local_tile` values: off, or the side of a work-group's square output tile."""
LOCAL_TILE_K = 32
"""K extent of the slices a local-tile work-group stages per step, by default (`k_tile`)."""
LOCAL_K_TILES = (16, 32)
"""`k_tile` values."""
LOCAL_REGISTER_TILES = (1, 2, 4, 8)
"""`tile_m` / `tile_n` values with local_tile: a work-item's rows / columns of the tile."""
LOCAL_TILE_MAX_ITEMS = 1024
"""The largest work-group a local-tile configuration may ask for (the rules' defaults stay
within 256, which every profile's devices run)."""
K_GROUPS = (1, 2, 4, 8, 16)
"""`k_groups` values."""

PANEL_COLS = (8, 16)
"""`tile_n` values (without local_tile) of the CPU panel schedule (MatMulSpec._panel_body)."""
PANEL_LANES = 8
"""Floats per vector of the panel schedule: a 256-bit register (AVX2)."""
PANEL_MAX_GROUP = 1024
"""The most row tiles a panel's work-group holds (more: the driver picks the work-group)."""

SPLIT_K_GROUP = 256
"""Work-items per work-group of a split-K kernel whose B is column-contiguous (at most;
every profile's devices allow 256)."""


def split_k_cols(split: int, n: int) -> int:
    """Columns per work-group of the column-contiguous split-K kernel: SPLIT_K_GROUP
    work-items in all, at most 32 columns (a warp's worth of neighbouring loads), no
    more than N needs."""
    cols = max(1, min(32, SPLIT_K_GROUP // split))
    while cols > 1 and cols // 2 >= n:
        cols //= 2
    return cols


Terms = Sequence[tuple[SSAValue | int, int]]
"""(coordinate, stride) pairs whose sum is an operand's offset for k = 0."""


def pragma(unroll: int) -> bool | int:
    """`for_(unroll=...)` for an unroll count: 0 is no pragma (False), N is `#pragma unroll N`."""
    return unroll if unroll > 0 else False


def unroll_suffix(unroll: int) -> str:
    """The kernel-name part that tells an unrolled kernel from the plain one."""
    return f"_u{unroll}" if unroll > 0 else ""


@dataclass(frozen=True)
class SplitK:
    """The geometry of a split-K product: per-operand strides along K and how the
    work-group is laid out (see the module docstring)."""

    k: int
    split: int
    n: int
    m: int
    a_ks: int
    b_ks: int
    batch: int = 0
    """Batch extent (a third grid axis) or 0 for none."""
    unroll: int = 0
    """`#pragma unroll N` on the reduction loop (0: none)."""

    @property
    def k_contiguous(self) -> bool:
        return self.b_ks == 1

    @property
    def cols(self) -> int:
        return 1 if self.k_contiguous else split_k_cols(self.split, self.n)

    def global_size(self) -> tuple[int, ...]:
        if self.k_contiguous:
            grid = (self.split * self.n, self.m)
        else:
            grid = (-(-self.n // self.cols) * self.cols, self.split * self.m)
        return (*grid, self.batch) if self.batch else grid

    def local_size(self) -> tuple[int, ...]:
        local = (self.split, 1) if self.k_contiguous else (self.cols, self.split)
        return (*local, 1) if self.batch else local

    def ids(self, kb: KernelBuilder) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue | int]:
        """(row, col, s, c): the output this work-item helps with, its share of K and its
        column inside the work-group (0 in the K-contiguous layout)."""
        if self.k_contiguous:
            return kb.global_id(1, "row"), kb.group_id(0, "col"), kb.local_id(0, "s"), 0
        return kb.group_id(1, "row"), kb.global_id(0, "col"), kb.local_id(1, "s"), kb.local_id(0, "c")

    def product(self, kb: KernelBuilder, a: SSAValue, b: SSAValue, s: SSAValue, a_terms: Terms, b_terms: Terms,
                vec4: bool) -> SSAValue:
        """Work-item `s`'s share of sum_k A[.., k] * B[k, ..] (A at offset(a_terms) +
        k * a_ks, B likewise). `vec4`: both are contiguous in K, K % 4 == 0 and every
        stride in the terms is a multiple of 4, so float4 loads are aligned."""
        split = self.split
        if vec4:
            assert self.a_ks == self.b_ks == 1 and self.k % 4 == 0
            assert all(st % 4 == 0 for _, st in (*a_terms, *b_terms)), "float4 loads need 4-float aligned rows"
            a4 = kb.linear([c for c, _ in a_terms], [st // 4 for _, st in a_terms])
            b4 = kb.linear([c for c, _ in b_terms], [st // 4 for _, st in b_terms])
            kv = kb.vector(f32)

            def step4(k1: KernelBuilder, j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                return [k1.fma(k1.vload4(a, k1.add(a4, j)), k1.vload4(b, k1.add(b4, j)), acc[0])]

            (acc4,) = kb.for_(s, self.k // 4, split, [kv.f(0.0)], step4, "j", unroll=pragma(self.unroll))
            return kb.fadd(kb.fadd(kb.lane(acc4, 0), kb.lane(acc4, 1)), kb.fadd(kb.lane(acc4, 2), kb.lane(acc4, 3)))
        a0 = kb.linear([c for c, _ in a_terms], [st for _, st in a_terms])
        b0 = kb.linear([c for c, _ in b_terms], [st for _, st in b_terms])

        def step(k1: KernelBuilder, kk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            va = k1.load(a, k1.add(a0, k1.mul(kk, self.a_ks)))
            return [k1.fma(va, k1.load(b, k1.add(b0, k1.mul(kk, self.b_ks))), acc[0])]

        (acc,) = kb.for_(s, self.k, split, [kb.f(0.0)], step, "kk", unroll=pragma(self.unroll))
        return acc

    def scratch(self, kb: KernelBuilder) -> SSAValue:
        """The work-group's local array of partial sums, [split][cols] (declared first
        in the kernel, where OpenCL C readers expect `__local` arrays)."""
        return kb.local_alloc(self.split * self.cols, f32, "partial")

    def reduce(self, kb: KernelBuilder, scratch: SSAValue, partial: SSAValue, s: SSAValue, c: SSAValue | int,
               col: SSAValue, finish) -> None:
        """Add the work-group's `split` partial sums of each column; `finish(kb, total)`
        runs on the work-item with s = 0 (of a column inside N) with the full sum.
        `work_group_sum` with one sum per column: slot s * cols + c of `scratch`."""
        # the rounded-up grid's extra columns compute but never store
        extra = [kb.cmp("slt", col, self.n)] if not self.k_contiguous and self.n % self.cols else []
        work_group_sum(kb, partial, s, self.split, finish, scratch=scratch, stride=self.cols, offset=c,
                       finish_if=extra)


def _is_pow2(v: int) -> bool:
    return v >= 1 and v & (v - 1) == 0


@dataclass(frozen=True)
class GemmSpec(KernelSpec):
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    alpha: float
    k_parts: int = 1
    unroll: int = 0
    """`#pragma unroll N` on the K loop (0: none; the compiler decides)."""
    """Work-items sharing one output's reduction (1: one work-item per output)."""

    def __post_init__(self):
        if not _is_pow2(self.k_parts):
            raise ValueError(f"k_parts must be a power of two, got {self.k_parts}")

    def base_name(self) -> str:
        return f"gemm{'_ksplit' if self.k_parts > 1 else ''}{unroll_suffix(self.unroll)}{self.epilogue.suffix()}"

    def input_names(self) -> tuple[str, ...]:
        return ("a", "b")

    def strides(self) -> tuple[int, int, int, int]:
        """(A's row stride, A's K stride, B's column stride, B's K stride)."""
        m, n, k = self.m, self.n, self.k
        a_rs, a_ks = (1, m) if self.trans_a else (k, 1)
        b_cs, b_ks = (k, 1) if self.trans_b else (1, n)
        return a_rs, a_ks, b_cs, b_ks

    def split(self) -> SplitK:
        _, a_ks, _, b_ks = self.strides()
        return SplitK(k=self.k, split=self.k_parts, n=self.n, m=self.m, a_ks=a_ks, b_ks=b_ks, unroll=self.unroll)

    def global_size(self) -> tuple[int, ...]:
        return self.split().global_size() if self.k_parts > 1 else (self.n, self.m)

    def local_size(self) -> tuple[int, ...] | None:
        return self.split().local_size() if self.k_parts > 1 else None

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        if self.k_parts > 1:
            self.split_body(kb, args)
            return
        (a, b), extras, out = self.split_args(args)
        col, row = kb.global_id(0, "col"), kb.global_id(1, "row")
        m, n, k = self.m, self.n, self.k

        def step(kb1: KernelBuilder, kk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            ia = kb1.add(kb1.mul(kk, m), row) if self.trans_a else kb1.add(kb1.mul(row, k), kk)
            ib = kb1.add(kb1.mul(col, k), kk) if self.trans_b else kb1.add(kb1.mul(kk, n), col)
            return [kb1.fma(kb1.load(a, ia), kb1.load(b, ib), acc[0])]

        (acc,) = kb.for_(0, k, 1, [kb.f(0.0)], step, "kk", unroll=pragma(self.unroll))
        if self.alpha != 1.0:
            acc = kb.fmul(acc, self.alpha)
        value = self.epilogue.apply(kb, acc, [row, col], extras)
        kb.store(value, out, kb.add(kb.mul(row, n), col))

    def split_body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (a, b), extras, out = self.split_args(args)
        sk = self.split()
        scratch = sk.scratch(kb)
        row, col, s, c = sk.ids(kb)
        a_rs, a_ks, b_cs, b_ks = self.strides()
        # With M = 1 the row is always 0: A's row term drops out (and transA changes nothing).
        a_terms = [(row, a_rs)] if self.m > 1 else []
        col_ld = kb.min_i(col, self.n - 1) if not sk.k_contiguous and self.n % sk.cols else col
        vec4 = a_ks == 1 and b_ks == 1 and self.k % 4 == 0 and all(st % 4 == 0 for _, st in a_terms)
        partial = sk.product(kb, a, b, s, a_terms, [(col_ld, b_cs)], vec4)

        def finish(k1: KernelBuilder, total: SSAValue) -> None:
            if self.alpha != 1.0:
                total = k1.fmul(total, self.alpha)
            value = self.epilogue.apply(k1, total, [row, col], extras)
            k1.store(value, out, k1.add(k1.mul(row, self.n), col))

        sk.reduce(kb, scratch, partial, s, c, col, finish)


@dataclass(frozen=True)
class MatMulSpec(KernelSpec):
    """out[b, m, n] = sum_k A[b, m, k] * B[b, k, n]; batch strides may be 0 (broadcast).

    A is read at `sum(b * a_batch_strides) + a_strides[0] * m + a_strides[1] * k`, B at
    `sum(b * b_batch_strides) + b_strides[0] * k + b_strides[1] * n` (MatMulGeometry); the defaults are
    contiguous [M, K] / [K, N] operands. The output is contiguous.

    Register tiles (`k_parts` = 1): each work-item computes `tile_rows` rows by `tile_cols`
    columns (kernel_config `tile_rows`, `tile_cols`). `tile_cols` = 4 keeps a float4 accumulator
    per row and reads B's row segment with one `vload4` (only where `float4_columns`
    holds; anything else is a LoweringError, never a misaligned load); each A element is
    then used four times from a register, each B float4 `tile_rows` times. With K % 4 == 0,
    A's K stride 1 and its other strides multiples of 4 too, A is read a float4 at a time
    (four K steps per loop trip); otherwise A is read a float at a time. Rows past M
    load row M - 1 and are not stored. The fused element-wise tail (`epilogue`: bias,
    GELU, residual add) runs per output element before its store.

    Split-K (`k_parts` > 1) takes any strides too: B's K stride picks the work-group
    layout (SplitK), float4 loads only when both operands are K-contiguous and aligned."""

    batch: tuple[int, ...]
    a_batch_strides: tuple[int, ...]
    b_batch_strides: tuple[int, ...]
    m: int
    n: int
    k: int
    k_parts: int = 1
    """Work-items sharing one output's reduction (1: one work-item per output tile)."""
    tile_rows: int = 1
    tile_cols: int = 1
    unroll: int = 0
    """`#pragma unroll N` on the K loop (0: none; the compiler decides)."""
    a_strides: tuple[int, int] | None = None
    """(row stride, K stride) of A; None: contiguous, (K, 1)."""
    b_strides: tuple[int, int] | None = None
    """(K stride, column stride) of B; None: contiguous, (N, 1)."""
    local_tile: int = 0
    """Work-group tiles in local memory (kernel_config `local_tile`, 0: off): a work-group
    of (T / tile_cols) x (T / tile_rows) work-items computes a T x T block of the output,
    T = `local_tile` (16, 32, 64 or 128), from T x `k_tile` slices of A and B staged in
    local memory (`_local_tile_body`)."""
    k_tile: int = LOCAL_TILE_K
    """K extent of the slices a local-tile work-group stages per step (16 or 32)."""
    k_groups: int = 1
    """With local_tile: work-groups sharing one tile's reduction (1: one); their partial
    sums are added by MatMulKSumSpec."""

    def __post_init__(self):
        # Strides of extents of 1 are never multiplied by anything but 0: normalised, so
        # that equal kernels have equal specs (one kernel, one name).
        a_rs, a_ks = self.a_strides or (self.k, 1)
        b_ks, b_cs = self.b_strides or (self.n, 1)
        if self.m == 1:
            a_rs = self.k
        if self.n == 1:
            b_cs = 1
        if self.k == 1:
            a_ks, b_ks = 1, self.n
        object.__setattr__(self, "a_strides", (a_rs, a_ks))
        object.__setattr__(self, "b_strides", (b_ks, b_cs))
        if self.local_tile:  # its K loop steps by slices, fully unrolled inside: no pragma
            object.__setattr__(self, "unroll", 0)
            self._check_local_tile()
            return
        object.__setattr__(self, "k_tile", LOCAL_TILE_K)  # meaningless without local tiles: one spec
        if self.k_groups != 1:
            raise ValueError(f"k_groups = {self.k_groups} splits a local tile's reduction: it needs local_tile")
        if not _is_pow2(self.k_parts):
            raise ValueError(f"k_parts must be a power of two, got {self.k_parts}")
        if self.tile_cols not in (1, 4, *PANEL_COLS) or self.n % self.tile_cols:
            raise ValueError(f"tile_cols must be 1, or 4, 8 or 16 dividing N (N = {self.n}), got {self.tile_cols}")
        if self.tile_cols in PANEL_COLS and b_cs != 1:
            raise ValueError(f"tile_cols = {self.tile_cols} reads B's rows as float8s, but B's column stride is {b_cs} "
                             "(a transposed operand, rhs_perm): it needs contiguous columns; use tile_cols = 1")
        if self.tile_cols == 4 and not float4_columns(self.n, self.b_strides, self.b_batch_strides):
            raise ValueError(
                f"tile_cols = 4 reads B's rows as float4s, but B is read with K stride {b_ks}, column stride {b_cs} "
                f"and batch strides {list(self.b_batch_strides)} (a transposed operand, rhs_perm): it needs "
                "column stride 1 and the other strides multiples of 4; use tile_cols = 1")
        if self.tile_rows not in (1, 2, 4, 8):
            raise ValueError(f"tile_rows must be 1, 2, 4 or 8, got {self.tile_rows}")
        if self.k_parts > 1 and (self.tile_rows, self.tile_cols) != (1, 1):
            raise ValueError("split-K matmuls compute one output per work-group: tile_rows and tile_cols must be 1")

    def _check_local_tile(self) -> None:
        t = self.local_tile
        if t not in LOCAL_TILES:
            raise ValueError(f"local_tile must be one of {LOCAL_TILES}, got {t}")
        if self.k_parts > 1:
            raise ValueError("local_tile shares K over work-groups (k_groups), not inside one: it needs k_parts = 1")
        for name, r in (("tile_rows", self.tile_rows), ("tile_cols", self.tile_cols)):
            if r not in LOCAL_REGISTER_TILES or r > t:
                raise ValueError(f"{name} must be one of {LOCAL_REGISTER_TILES} and at most local_tile = {t}, got {r}")
        items = (t // self.tile_rows) * (t // self.tile_cols)
        if not 32 <= items <= LOCAL_TILE_MAX_ITEMS:
            raise ValueError(f"local_tile = {t} with a {self.tile_rows} x {self.tile_cols} register tile makes "
                             f"work-groups of {items} work-items; they must hold 32 to {LOCAL_TILE_MAX_ITEMS}")
        if self.k_tile not in LOCAL_K_TILES:
            raise ValueError(f"k_tile must be one of {LOCAL_K_TILES}, got {self.k_tile}")
        if self.k_groups not in K_GROUPS:
            raise ValueError(f"k_groups must be one of {K_GROUPS}, got {self.k_groups}")

    @property
    def a_contiguous(self) -> bool:
        return self.a_strides == (self.k, 1) and _contiguous_batch(self.a_batch_strides, self.batch, self.m * self.k)

    @property
    def b_contiguous(self) -> bool:
        return self.b_strides == (self.n, 1) and _contiguous_batch(self.b_batch_strides, self.batch, self.k * self.n)

    @property
    def a_float4(self) -> bool:
        """A's rows read as float4s along K (with tile_cols = 4)."""
        a_rs, a_ks = self.a_strides
        return self.k % 4 == 0 and a_ks == 1 and all(st % 4 == 0 for st in (a_rs, *self.a_batch_strides))

    def _layout_suffix(self) -> str:
        strided = ("" if self.a_contiguous else "A") + ("" if self.b_contiguous else "B")
        return f"_t{strided}" if strided else ""

    def base_name(self) -> str:
        if self.k_parts > 1:
            return "matmul_ksplit" + self._layout_suffix() + unroll_suffix(self.unroll) + self.epilogue.suffix()
        if self.panel:
            return (f"matmul_panel_{self.tile_rows}x{self.tile_cols}{self._layout_suffix()}{unroll_suffix(self.unroll)}"
                    f"{self.epilogue.suffix()}")
        if self.local_tile:
            groups = f"_kg{self.k_groups}" if self.k_groups > 1 else ""
            return (f"matmul_lt{self.local_tile}_{self.tile_rows}x{self.tile_cols}_k{self.k_tile}{groups}"
                    f"{self._layout_suffix()}{self.epilogue.suffix()}")
        tile = f"_{self.tile_rows}x{self.tile_cols}" if (self.tile_rows, self.tile_cols) != (1, 1) else ""
        return f"matmul{tile}{self._layout_suffix()}{unroll_suffix(self.unroll)}{self.epilogue.suffix()}"

    def input_names(self) -> tuple[str, ...]:
        return ("a", "b")

    def split(self) -> SplitK:
        return SplitK(k=self.k, split=self.k_parts, n=self.n, m=self.m, a_ks=self.a_strides[1],
                      b_ks=self.b_strides[0], batch=max(1, numel(self.batch)), unroll=self.unroll)

    @property
    def panel(self) -> bool:
        """The CPU panel schedule (tile_cols 8 or 16, `_panel_body`)."""
        return self.tile_cols in PANEL_COLS and not self.local_tile and self.k_parts == 1

    def global_size(self) -> tuple[int, ...]:
        if self.k_parts > 1:
            return self.split().global_size()
        if self.panel:
            return (-(-self.m // self.tile_rows), self.n // self.tile_cols, max(1, numel(self.batch)))
        if self.local_tile:
            t = self.local_tile
            wx, wy = self.local_size()[:2]
            return (-(-self.n // t) * wx, -(-self.m // t) * wy, max(1, numel(self.batch)) * self.k_groups)
        return (self.n // self.tile_cols if self.tile_cols > 1 else self.n, -(-self.m // self.tile_rows),
                max(1, numel(self.batch)))

    def local_size(self) -> tuple[int, ...] | None:
        if self.panel:
            row_tiles = -(-self.m // self.tile_rows)
            return (row_tiles, 1, 1) if row_tiles <= PANEL_MAX_GROUP else None
        if self.local_tile:
            return (self.local_tile // self.tile_cols, self.local_tile // self.tile_rows, 1)
        return self.split().local_size() if self.k_parts > 1 else None

    def _coords(self, kb: KernelBuilder, z: SSAValue) -> list[SSAValue]:
        return kb.unravel(z, self.batch) if self.batch else []

    def _store(self, kb: KernelBuilder, value: SSAValue, out: SSAValue, extras, bc, z, row, col) -> None:
        """Epilogue and store of one output element (row, col) of batch entry z."""
        value = self.epilogue.apply(kb, value, [*bc, row, col], extras)
        kb.store(value, out, kb.add(kb.mul(kb.add(kb.mul(z, self.m), row), self.n), col))

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        if self.k_parts > 1:
            self.split_body(kb, args)
            return
        if self.local_tile:
            self._local_tile_body(kb, args)
            return
        if self.panel:
            self._panel_body(kb, args)
            return
        (a, b), extras, out = self.split_args(args)
        tm, tn = self.tile_rows, self.tile_cols
        cid, rid, z = kb.global_id(0, "col"), kb.global_id(1, "row"), kb.global_id(2, "z")
        bc, b_base, row0, a_rows = self._register_rows(kb, rid, z)
        m, k = self.m, self.k
        a_ks = self.a_strides[1]
        b_ks, b_cs = self.b_strides
        if tn == 1:
            b_col = kb.add(b_base, kb.mul(cid, b_cs))

            def step(k1: KernelBuilder, kk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                vb = k1.load(b, k1.add(b_col, k1.mul(kk, b_ks)))
                return [k1.fma(k1.load(a, k1.add(ar, k1.mul(kk, a_ks))), vb, acc[r]) for r, ar in enumerate(a_rows)]

            accs = kb.for_(0, k, 1, [kb.f(0.0)] * tm, step, "kk", unroll=pragma(self.unroll))
            lanes = [[acc] for acc in accs]
            cols = [cid]
        else:
            # float4_columns holds (checked in __post_init__): B's rows start at multiples of 4
            kv = kb.vector(f32)
            b4_col = kb.add(kb.div(b_base, 4), cid) if self.batch else cid  # in float4 units
            b4_ks = b_ks // 4
            if self.a_float4:
                a4_rows = [kb.div(ar, 4) for ar in a_rows]  # A's rows start at multiples of 4

                def step4(k1: KernelBuilder, kq: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                    k0 = k1.mul(kq, 4)
                    vb = [k1.vload4(b, k1.add(b4_col, k1.mul(k1.add(k0, j), b4_ks))) for j in range(4)]
                    out_acc = []
                    for r, a4r in enumerate(a4_rows):
                        va = k1.vload4(a, k1.add(a4r, kq))
                        t = acc[r]
                        for j in range(4):
                            t = k1.fma(k1.vector(f32).splat(k1.lane(va, j)), vb[j], t)
                        out_acc.append(t)
                    return out_acc

                accs = kb.for_(0, k // 4, 1, [kv.f(0.0)] * tm, step4, "kq", unroll=pragma(self.unroll))
            else:
                def step(k1: KernelBuilder, kk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                    vb = k1.vload4(b, k1.add(b4_col, k1.mul(kk, b4_ks)))
                    return [k1.fma(k1.vector(f32).splat(k1.load(a, k1.add(ar, k1.mul(kk, a_ks)))), vb, acc[r])
                            for r, ar in enumerate(a_rows)]

                accs = kb.for_(0, k, 1, [kv.f(0.0)] * tm, step, "kk", unroll=pragma(self.unroll))
            lanes = [[kb.lane(acc, j) for j in range(4)] for acc in accs]
            col0 = kb.mul(cid, 4, "col0")
            cols = [col0] + [kb.add(col0, j) for j in range(1, 4)]
        for r in range(tm):
            row = kb.add(row0, r) if r else row0

            def store_row(k1: KernelBuilder, r: int = r, row: SSAValue = row) -> None:
                for j, col in enumerate(cols):
                    self._store(k1, lanes[r][j], out, extras, bc, z, row, col)

            if m % tm and r:
                kb.if_(kb.cmp("slt", row, m), store_row)
            else:
                store_row(kb)

    def _register_rows(self, kb: KernelBuilder, rid: SSAValue, z: SSAValue):
        """(batch coordinates, B's batch offset, first row, the offsets of A's rows) of the
        register tile of row tile `rid` in batch entry `z`: tile_rows rows from rid *
        tile_rows, those past M (the last tile of a ragged M) reading row M - 1, never stored."""
        bc = self._coords(kb, z)
        a_base = kb.linear(bc, self.a_batch_strides) if self.batch else kb.i(0)
        b_base = kb.linear(bc, self.b_batch_strides) if self.batch else kb.i(0)
        tm, m = self.tile_rows, self.m
        row0 = kb.mul(rid, tm, "row0") if tm > 1 else rid
        rows = [row0] + [kb.min_i(kb.add(row0, r), m - 1) if m % tm else kb.add(row0, r) for r in range(1, tm)]
        return bc, b_base, row0, [kb.add(a_base, kb.mul(r, self.a_strides[0])) for r in rows]

    def _panel_body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        """The CPU panel schedule (tile_cols = 8 or 16): each work-item computes tile_rows
        rows by tile_cols columns, held as tile_cols / 8 float8 accumulators per row (a
        CPU's 256-bit vector registers: 4 x 16 is 8 of AVX2's 16); per K step it loads
        its B row segment as float8s and each row's A element once, broadcast (the inner
        kernel of a BLIS-style GEMM). Work-item (i, j) takes row tile i of column panel j:
        a work-group is every row tile of one panel (when at most PANEL_MAX_GROUP), so a CPU
        runtime, which runs a work-group's items one after another on one core, reads the
        K x tile_cols panel of B once from memory and then from its cache for every row
        tile. Rows past M read row M - 1 and are not stored."""
        (a, b), extras, out = self.split_args(args)
        tm, tn = self.tile_rows, self.tile_cols
        nv = tn // PANEL_LANES
        rid, cid, z = kb.global_id(0, "rt"), kb.global_id(1, "ct"), kb.global_id(2, "z")
        bc, b_base, row0, a_rows = self._register_rows(kb, rid, z)
        m, k = self.m, self.k
        a_ks, b_ks = self.a_strides[1], self.b_strides[0]
        col0 = kb.mul(cid, tn, "col0")
        b_col = kb.add(b_base, col0)
        vk = kb.vector(f32, PANEL_LANES)

        def step(k1: KernelBuilder, kk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            b_row = k1.add(b_col, k1.mul(kk, b_ks))
            vb = [k1.vload(b, k1.add(b_row, PANEL_LANES * v), PANEL_LANES) for v in range(nv)]
            out_acc = []
            for r, ar in enumerate(a_rows):
                va = k1.vector(f32, PANEL_LANES).splat(k1.load(a, k1.add(ar, k1.mul(kk, a_ks))), PANEL_LANES)
                out_acc += [k1.fma(va, vb[v], acc[r * nv + v]) for v in range(nv)]
            return out_acc

        accs = kb.for_(0, k, 1, [vk.f(0.0)] * (tm * nv), step, "kk", unroll=pragma(self.unroll))
        for r in range(tm):
            row = kb.add(row0, r) if r else row0

            def store_row(k1: KernelBuilder, r: int = r, row: SSAValue = row) -> None:
                for v in range(nv):
                    for j in range(PANEL_LANES):
                        col = k1.add(col0, PANEL_LANES * v + j) if PANEL_LANES * v + j else col0
                        self._store(k1, k1.lane(accs[r * nv + v], j), out, extras, bc, z, row, col)

            if m % tm and r:
                kb.if_(kb.cmp("slt", row, m), store_row)
            else:
                store_row(kb)

    def _local_tile_body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        """The work-group tile (`local_tile` = T): a T x T block of the output per work-group
        of (T / tile_cols) x (T / tile_rows) work-items, each tile_rows x tile_cols outputs
        in registers. Per step of `k_tile` (BK) along K, the work-items copy a T x BK slice
        of A and a BK x T slice of B into local memory (each operand read once per
        work-group instead of once per output; float4 loads along whichever of K or M/N is
        contiguous where the strides keep them aligned, else scalar loads in that order, so
        they coalesce) and accumulate their outputs from it. A is stored transposed,
        [BK][T + 4], B as [BK][T + 4]: a work-item's rows (and columns) are float4 groups
        (float2 for a tile of 2) spread over the tile, group g at g * 4 * (work-items along
        that side) + 4 * id, so one vload reads four of them and neighbouring work-items
        read neighbouring float4s; the 4 floats of padding keep the groups aligned and
        spread the transposing stores over the banks.

        The next slices are loaded from global memory into registers before the current
        ones are multiplied (one barrier after the copy into local memory, one before the
        next copy overwrites it), so their latency hides behind the arithmetic.

        `k_groups` = G > 1: K is split over G work-groups (grid axis 2 counts batch entries
        times G), each adding up its share of the slices into a partial sum that it stores
        raw to `out`, a [G][batch][M][N] buffer that MatMulKSumSpec adds up (with the
        epilogue). Out-of-range rows, columns and K steps read 0 (masked loads, addresses
        clamped) and are never stored."""
        (a, b), extras, out = self.split_args(args)
        t, bk, groups = self.local_tile, self.k_tile, self.k_groups
        rm, rn = self.tile_rows, self.tile_cols
        wx, wy = t // rn, t // rm
        items = wx * wy
        va, vb = min(rm, 4), min(rn, 4)
        ls = t + 4  # local row stride: aligned float4 groups, transposing stores spread over banks
        m, n, k = self.m, self.n, self.k
        a_rs, a_ks = self.a_strides
        b_ks, b_cs = self.b_strides
        a_s = kb.local_alloc(bk * ls, f32, "a_tile")
        b_s = kb.local_alloc(bk * ls, f32, "b_tile")
        tx, ty = kb.local_id(0, "tx"), kb.local_id(1, "ty")
        row0 = kb.mul(kb.group_id(1), t, "row0")
        col0 = kb.mul(kb.group_id(0), t, "col0")
        gz = kb.group_id(2, "z")
        z, kz = (kb.div(gz, groups, "b"), kb.rem(gz, groups, "kz")) if groups > 1 else (gz, None)
        bc = self._coords(kb, z)
        a_base = kb.linear(bc, self.a_batch_strides) if self.batch else kb.i(0)
        b_base = kb.linear(bc, self.b_batch_strides) if self.batch else kb.i(0)
        lid = kb.add(kb.mul(ty, wx), tx, "lid")
        span = self.k_span()
        slices = span // bk
        kbeg = kb.mul(kz, span, "kbeg") if groups > 1 else kb.i(0)
        if groups > 1 and span * groups != k:
            kend, k_check = kb.min_i(kb.add(kbeg, span), k), True
        else:
            kend, k_check = kb.i(k), k % bk != 0
        a4 = self.a_float4 and (not k_check or span % 4 == 0)
        b4 = b_cs == 1 and n % 4 == 0 and b_ks % 4 == 0 and all(st % 4 == 0 for st in self.b_batch_strides)
        a_along, b_along = a_ks == 1, b_ks == 1 and not b4  # slices copied in K order (else M / N order)

        def elements(vec: bool) -> int:
            """Elements of one operand's T x BK slice (float4s when vec)."""
            return t * bk // (4 if vec else 1)

        def plan(vec: bool) -> list[tuple[int, bool]]:
            """Per copy of one operand's slice: (element offset e0 added to lid, guarded)."""
            per = elements(vec)
            return [(i * items, (i + 1) * items > per) for i in range(-(-per // items))]

        def coords(k1: KernelBuilder, e: SSAValue, along_k: bool, vec: bool):
            """(outer, kk) of slice element e (float4 e when vec: four K steps or four columns)."""
            if along_k:
                per_row = bk // 4 if vec else bk
                return k1.div(e, per_row), k1.mul(k1.rem(e, per_row), 4) if vec else k1.rem(e, per_row)
            per_row = t // 4 if vec else t
            return (k1.mul(k1.rem(e, per_row), 4) if vec else k1.rem(e, per_row)), k1.div(e, per_row)

        def load(k1: KernelBuilder, src, base, slice_: SSAValue, along_k: bool, vec: bool, outer0, extent: int,
                 outer_stride: int, k_stride: int) -> list[SSAValue]:
            k0 = k1.add(kbeg, k1.mul(slice_, bk))
            values = []
            for e0, guarded in plan(vec):
                e = k1.add(lid, e0)
                outer, kk = coords(k1, e, along_k, vec)
                go, gk = k1.add(outer0, outer), k1.add(k0, kk)
                conds = ([k1.cmp("slt", e, elements(vec))] if guarded else []) + \
                    ([k1.cmp("slt", go, extent)] if extent % t else []) + ([k1.cmp("slt", gk, kend)] if k_check else [])
                index = k1.add(base, k1.add(k1.mul(go, outer_stride), k1.mul(gk, k_stride)))
                valid = k1.all_of(conds)
                if vec:
                    safe = k1.select(valid, index, k1.i(0)) if valid is not None else index
                    v = k1.vload4(src, k1.div(safe, 4))
                    values.append(k1.select(valid, v, k1.vector(f32).f(0.0)) if valid is not None else v)
                else:
                    values.append(k1.masked_load(src, index, valid))
            return values

        def store(k1: KernelBuilder, dst, values: list[SSAValue], along_k: bool, vec: bool) -> None:
            for (e0, guarded), v in zip(plan(vec), values):
                def put(k2: KernelBuilder, e0=e0, v=v) -> None:
                    e = k2.add(lid, e0)
                    outer, kk = coords(k2, e, along_k, vec)
                    if not vec:
                        k2.store(v, dst, k2.add(k2.mul(kk, ls), outer))
                    elif along_k:  # four K steps of one row: four rows of the transposed slice
                        for j in range(4):
                            k2.store(k2.lane(v, j), dst, k2.add(k2.mul(k2.add(kk, j), ls), outer))
                    else:  # four columns of one K step
                        k2.vstore(v, dst, k2.add(k2.mul(kk, ls), outer))
                if guarded:
                    k1.if_(k1.cmp("slt", k1.add(lid, e0), elements(vec)), put)
                else:
                    put(k1)

        def load_both(k1: KernelBuilder, slice_: SSAValue) -> list[SSAValue]:
            return load(k1, a, a_base, slice_, a_along, a4, row0, m, a_rs, a_ks) + \
                load(k1, b, b_base, slice_, b_along, b4, col0, n, b_cs, b_ks)

        na = len(plan(a4))

        def step(k1: KernelBuilder, sl: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            acc, regs = list(carried[:rm * rn]), carried[rm * rn:]
            store(k1, a_s, regs[:na], a_along, a4)
            store(k1, b_s, regs[na:], b_along, b4)
            k1.barrier()
            nxt = load_both(k1, k1.min_i(k1.add(sl, 1), slices - 1)) if slices > 1 else regs
            for kk in range(bk):
                av = local_fragment(k1, a_s, ty, kk * ls, rm, va, wy * va)
                bv = local_fragment(k1, b_s, tx, kk * ls, rn, vb, wx * vb)
                for i in range(rm):
                    for j in range(rn):
                        acc[i * rn + j] = k1.fma(av[i], bv[j], acc[i * rn + j])
            k1.barrier()
            return acc + list(nxt)

        first = load_both(kb, kb.i(0))
        carried = kb.for_(0, slices, 1, [kb.f(0.0)] * (rm * rn) + first, step, "sl")
        accs = carried[:rm * rn]
        for i in range(rm):
            gi, ii = divmod(i, va)
            row = kb.add(row0, kb.add(kb.mul(ty, va), gi * wy * va + ii))
            for j in range(rn):
                gj, jj = divmod(j, vb)
                col = kb.add(col0, kb.add(kb.mul(tx, vb), gj * wx * vb + jj))
                conds = ([kb.cmp("slt", row, m)] if m % t else []) + ([kb.cmp("slt", col, n)] if n % t else [])
                v = accs[i * rn + j]
                if groups > 1:
                    index = kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(kz, max(1, numel(self.batch))), z), m), row),
                                          n), col)
                    kb.guard(conds, lambda k1, v=v, index=index: k1.store(v, out, index))
                else:
                    kb.guard(conds, lambda k1, v=v, row=row, col=col:
                             self._store(k1, v, out, extras, bc, z, row, col))

    def k_span(self) -> int:
        """K steps per work-group: all of K rounded up to whole slices, or with `k_groups`
        G, an equal share of whole slices (the last group's may be shorter)."""
        bk = self.k_tile
        return -(-(-(-self.k // self.k_groups)) // bk) * bk

    def split_body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        """As GemmSpec's, per batch entry (grid axis 2). B's K stride picks the layout: a
        contiguous B ([K, N] per batch entry) is column-contiguous unless N = 1; a B read
        transposed (attention's keys, rhs_perm) is K-contiguous. float4 loads when both
        operands are K-contiguous, K % 4 == 0 and every other stride a multiple of 4."""
        (a, b), extras, out = self.split_args(args)
        sk = self.split()
        scratch = sk.scratch(kb)
        row, col, s, c = sk.ids(kb)
        z = kb.global_id(2, "z")
        m, n, k = self.m, self.n, self.k
        a_rs, a_ks = self.a_strides
        b_cs = self.b_strides[1]
        bc = kb.unravel(z, self.batch) if self.batch else []
        a_terms = [*zip(bc, self.a_batch_strides), *([(row, a_rs)] if m > 1 else [])]
        col_ld = kb.min_i(col, n - 1) if not sk.k_contiguous and n % sk.cols else col
        # N = 1: the column is always 0
        b_terms = [*zip(bc, self.b_batch_strides), *([(col_ld, b_cs)] if n > 1 else [])]
        vec4 = sk.k_contiguous and a_ks == 1 and k % 4 == 0 and all(st % 4 == 0 for _, st in (*a_terms, *b_terms))
        partial = sk.product(kb, a, b, s, a_terms, b_terms, vec4)

        def finish(k1: KernelBuilder, total: SSAValue) -> None:
            self._store(k1, total, out, extras, bc, z, row, col)

        sk.reduce(kb, scratch, partial, s, c, col, finish)


@dataclass(frozen=True)
class MatMulKSumSpec(KernelSpec):
    """out[b, m, n] = epilogue(sum_g P[g, b, m, n]): the partial sums of a local-tile
    matmul whose K is split over `parts` work-groups (MatMulSpec.k_groups), added in a fixed
    order (the result does not depend on scheduling), with the product's fused epilogue
    applied at its (batch..., M, N) coordinates. One work-item per output element, grid
    (N, M, batch)."""

    batch: tuple[int, ...]
    m: int
    n: int
    parts: int

    def base_name(self) -> str:
        return f"matmul_ksum{self.parts}{self.epilogue.suffix()}"

    def input_names(self) -> tuple[str, ...]:
        return ("partial",)

    def global_size(self) -> tuple[int, ...]:
        return (self.n, self.m, max(1, numel(self.batch)))

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (p,), extras, out = self.split_args(args)
        col, row, z = kb.global_id(0, "col"), kb.global_id(1, "row"), kb.global_id(2, "z")
        index = kb.add(kb.mul(kb.add(kb.mul(z, self.m), row), self.n), col, "i")
        total = max(1, numel(self.batch)) * self.m * self.n
        acc = kb.load(p, index)
        for g in range(1, self.parts):
            acc = kb.fadd(acc, kb.load(p, kb.add(index, g * total)))
        bc = kb.unravel(z, self.batch) if self.batch else []
        kb.store(self.epilogue.apply(kb, acc, [*bc, row, col], extras), out, index)
