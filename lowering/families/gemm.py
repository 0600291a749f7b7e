"""The matrix-product family: `graph.gemm` and `graph.matmul`, lowered to `GemmSpec` and
`MatMulSpec` (lowering/kernels/matmul.py).

| key | values | what |
|---|---|---|
| `k_split` | 1, 2, 4 ... 256 | work-items sharing one output's reduction (1: one per output) |
| `tile_m` | 1, 2, 4, 8 | rows per work-item (register tile; with k_split 1) |
| `tile_n` | 1, 4, 8, 16 (1, 2, 4, 8 with local_tile) | columns per work-item (without local_tile, 4 is a float4 of B, where B's rows are aligned float4s; 8 and 16 the CPU panel schedule: float8s of B, every row tile of a column panel in one work-group) |
| `k_unroll` | 0, 2, 4, 8 | `#pragma unroll N` on the reduction loop (0: none, the OpenCL compiler decides) |
| `local_tile` | 0, 16, 32, 64, 128 | a T x T output tile per work-group of (T / tile_n) x (T / tile_m) work-items, A and B staged in local memory (0: off; excludes k_split) |
| `k_tile` | 16, 32 | with local_tile: K extent of the slices staged per step |
| `k_groups` | 1, 2, 4, 8, 16 | with local_tile: work-groups sharing each tile's reduction, their partial sums added by a second kernel that applies the epilogue |
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from xdsl.ir import Operation

from adreno_mlir.dialects import graph
from adreno_mlir.kernel_math.matmul import MatMulGeometry, float4_columns, matmul_geometry, read_strides
from adreno_mlir.lowering.expr import Bin, In, Src, Un
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv, value_numel
from adreno_mlir.lowering.groups import KernelPattern, LoweringError, where
from adreno_mlir.lowering.kernels.common import Epilogue, broadcast_strides
from adreno_mlir.lowering.kernels.matmul import (
    K_GROUPS,
    PANEL_COLS,
    LOCAL_K_TILES,
    LOCAL_TILE_K,
    LOCAL_TILE_MAX_ITEMS,
    LOCAL_TILES,
    GemmSpec,
    MatMulKSumSpec,
    MatMulSpec,
)
from adreno_mlir.lowering.nchw_lowering import _collapse_rows, _epi_args, _substitute_src

LOCAL_TILE_MIN_UNITS = 16
"""Compute units from which `local_tile` is a default (see Gemm._local_tile)."""
REGISTER_TILE = {16: (1, 1), 32: (4, 4), 64: (8, 4), 128: (8, 8)}
"""The default (tile_m, tile_n) per local_tile: work-groups of 256, 64, 128 and 256 work-items
(bench/gemm_proto.py on the H200: 64 x 64 tiles of 8 x 4 were the fastest on seven of the
eight transformer products measured, 32 x 32 of 4 x 4 within 5% of them)."""
DEFAULT_K_GROUPS_MAX = 8
"""The largest k_groups the default rule picks (the most measured)."""


def tileable(op: Operation) -> bool:
    """Whether a Gemm/MatMul runs as a (tiled) MatMulSpec: a MatMul always; a Gemm
    without transA whose B is either not transposed or a constant (transposed at
    compile time)."""
    if isinstance(op, graph.MatMulOp):
        return True
    return not op.trans_a.value.data and (not op.trans_b.value.data or isinstance(op.b.owner, graph.ConstantOp))


def matmul_dims(op: Operation) -> tuple[int, int, int]:
    """(M, N, batch entries) of a Gemm or MatMul. A MatMul whose B has no batch of its
    own runs its batch as extra rows when A's strides allow (see nchw_lowering.MatMul):
    M counts them."""
    if isinstance(op, graph.GemmOp):
        m, n = graph.shape_of(op.results[0])
        return m, n, 1
    geo = matmul_geometry_of(op)
    rows = geo.collapse_rows()
    if rows is not None:  # B shared by every batch entry: one tall product
        return rows.m, rows.n, 1
    batch = 1
    for d in geo.batch:
        batch *= d
    return geo.m, geo.n, batch


def matmul_geometry_of(op: graph.MatMulOp) -> MatMulGeometry:
    """How a MatMul's kernel reads its operands: the shapes after `lhs_perm` / `rhs_perm`,
    read through the permuted strides of the stored tensors (one source for the rules
    here and the lowering, so a rule never picks what the lowering must refuse)."""
    return matmul_geometry(op.lhs_shape(), read_strides(graph.shape_of(op.lhs), op.lhs_permutation()),
                           op.rhs_shape(), read_strides(graph.shape_of(op.rhs), op.rhs_permutation()))


_SPEC_TERMS = {"k_parts": "k_split", "tile_rows": "tile_m", "tile_cols": "tile_n", "unroll": "k_unroll"}


def _in_key_terms(error: Exception) -> str:
    """A matmul spec's refusal in the words of this family's keys."""
    import re

    return re.sub("|".join(_SPEC_TERMS), lambda m: _SPEC_TERMS[m.group(0)], str(error))


class Gemm(Family):
    name = "gemm"
    keys = (
        Key("k_split", (1, 2, 4, 8, 16, 32, 64, 128, 256), "work-items sharing one output's reduction", off=1),
        Key("tile_m", (1, 2, 4, 8), "rows per work-item (k_split 1)", off=1),
        Key("tile_n", (1, 2, 4, 8, 16), "columns per work-item (k_split 1; 2 with local_tile, 16 without)", off=1),
        Key("k_unroll", (0, 2, 4, 8), "#pragma unroll N on the reduction loop (0: none)", off=0),
        Key("local_tile", LOCAL_TILES, "T x T outputs per work-group through local memory (0: off)", off=0),
        Key("k_tile", LOCAL_K_TILES, "K extent of the slices staged per step (with local_tile)", off=LOCAL_TILE_K),
        Key("k_groups", K_GROUPS, "work-groups sharing a tile's reduction (with local_tile)", off=1),
    )
    exclusive = (("local_tile", "k_split"), ("k_split", "k_groups"), ("k_split", "tile_m"), ("k_split", "tile_n"))
    LOCAL_ONLY = ("k_tile", "k_groups")

    def matches(self, head: Operation) -> bool:
        return isinstance(head, (graph.GemmOp, graph.MatMulOp))

    def applicable(self, head: Operation, cfg: dict[str, Any]) -> tuple[str, ...]:
        """k_tile and k_groups only with local_tile."""
        local = bool(cfg.get("local_tile", 0))
        return tuple(k.name for k in self.keys if local or k.name not in self.LOCAL_ONLY)

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        tile = self._local_tile(op, rules) if given.get("local_tile") is None else given["local_tile"]
        if tile and tileable(op):  # (a given local_tile = 0 asks for the rules below: split-K, register tiles)
            tm, tn = REGISTER_TILE[tile]
            return {"k_split": 1, "tile_m": tm, "tile_n": tn, "k_unroll": 0, "local_tile": tile,
                    "k_tile": LOCAL_TILE_K, "k_groups": self._k_groups(op, rules, tile, given.get("k_tile"))}
        return {**self._tiles(op, rules, self._split(op, rules)), "k_unroll": 0, "local_tile": 0}

    def _k_groups(self, op: Operation, rules: Rules, tile: int, k_tile: int | None) -> int:
        """Work-groups per output tile: the fewest (a power of two up to DEFAULT_K_GROUPS_MAX)
        that make 4 work-groups per compute unit, each with at least two slices of K to add
        up (else the most that keep two). On the H200 (bench/gemm_proto.py, 64 x 64 tiles):
        distilbert's 128x768x768 0.049 ms with 1 group, 0.021 with 8 (cuBLAS 0.023); its
        128x3072x768 0.178 -> 0.050 (8); gpt2's 64x3072x768 0.179 -> 0.034 (8, cuBLAS
        0.034); whisper's 1500x384x384 0.045 -> 0.038 (4); its 1500x384x1536 (576 tiles)
        fastest with 1. Targets without a compute-unit count: 1."""
        if not rules.compute_units:
            return 1
        m, n, batch = matmul_dims(op)
        tiles = cdiv(m, tile) * cdiv(n, tile) * batch
        k, bk = _gemm_k(op), k_tile or LOCAL_TILE_K
        groups = 1
        while groups < DEFAULT_K_GROUPS_MAX and tiles * groups < 4 * rules.compute_units \
                and k // (2 * groups) >= 2 * bk:
            groups *= 2
        return groups

    def _local_tile(self, op: Operation, rules: Rules) -> int:
        """GPUs whose compute units are known: 128 x 128 output tiles per work-group
        (through local memory, 8 x 8 per work-item) when that makes 1.5 work-groups per
        compute unit; else the largest of 64, 32 and 16 whose tiles, with as many K groups
        as K allows (`_k_groups`' bound), make one work-group per compute unit, skipping a
        tile that would hang a third or more past M or N (segformer's 32-wide products take
        32 x 32 tiles, not half-empty 64 x 64 ones); none for products of fewer than 16 rows
        or columns (a GEMV: split-K) or too few tiles.

        Only for GPUs of LOCAL_TILE_MIN_UNITS compute units or more (desktop and data-center
        GPUs, like the H200 it was measured on) that run the tile's work-groups and hold the
        staged slices in local memory; mobile GPUs (a few compute units, `target=auto` on an
        Adreno or Mali) keep the previous schedules until measured there.

        Measured on the H200 (132 compute units; bench/gemm_proto.py, bench/gemm_local_tile.py,
        docs/bench/issue28, docs/bench/issue28-gemm): 64 x 64 tiles of 8 x 4 with K groups
        0.64-1.5x cuBLAS's time on the encoders' products (distilbert, gpt2, whisper); with
        the previous 16 x 16 work-groups of spread outputs, 2048^3 took 0.79 ms with 128 x 128
        tiles (64: 1.12, cuBLAS 0.35) and whisper's 6 x 1500x64x1500 scores 0.12 (64: 0.16).
        Off for targets without a compute-unit count (the named Adreno profiles: not
        measured there) and for CPUs (PoCL: barriers made a 12 x 128x64x128 product 4-10x
        slower)."""
        if not rules.gpu or rules.compute_units < LOCAL_TILE_MIN_UNITS or not tileable(op):
            return 0
        m, n, batch = matmul_dims(op)
        if m < 16 or n < 16:
            return 0
        cu = rules.compute_units
        k = _gemm_k(op)
        for t, share in ((128, 1.5), (64, 1.0), (32, 1.0), (16, 1.0)):
            if t > 16 and (cdiv(m, t) * t > 1.5 * m or cdiv(n, t) * t > 1.5 * n):
                continue  # a third of the tile or more past the edge: a smaller tile (segformer's N = 32)
            tm, tn = REGISTER_TILE[t]
            if rules.max_work_group_size and rules.max_work_group_size < (t // tm) * (t // tn):
                continue
            staged = 2 * LOCAL_TILE_K * (t + 4) * 4  # the A and B slices in local memory
            if rules.local_memory_bytes and staged > rules.local_memory_bytes:
                continue
            groups = 1 if t == 128 else max(1, min(DEFAULT_K_GROUPS_MAX, k // (2 * LOCAL_TILE_K)))
            if cdiv(m, t) * cdiv(n, t) * batch * groups >= share * cu:
                return t
        return 0

    def check(self, head: Operation, cfg: dict[str, Any]) -> str | None:
        t = cfg.get("local_tile", 0)
        tm, tn = cfg.get("tile_m", 1), cfg.get("tile_n", 1)
        if t:
            if cfg.get("k_split", 1) > 1:
                return "local_tile shares K over work-groups (k_groups), not inside one: k_split must be 1"
            if not tileable(head):
                return "local_tile needs a matmul-shaped product (a Gemm without transA, transB only with a constant B)"
            if tm > t or tn > t:
                return f"tile_m and tile_n (a work-item's rows and columns) must be at most local_tile = {t}"
            items = (t // tm) * (t // tn)
            if not 32 <= items <= LOCAL_TILE_MAX_ITEMS:
                return (f"local_tile = {t} with tile_m = {tm}, tile_n = {tn} makes work-groups of {items} work-items; "
                        f"they must hold 32 to {LOCAL_TILE_MAX_ITEMS} (the defaults per tile: "
                        + ", ".join(f"{k}: {a} x {b}" for k, (a, b) in REGISTER_TILE.items()) + ")")
            return None
        if tn not in (1, 4, *PANEL_COLS):
            return f"tile_n = {tn} needs local_tile; without it a work-item takes 1, 4, 8 or 16 columns"
        if cfg.get("k_groups", 1) != 1:
            return "k_groups splits a local tile's reduction over work-groups: it needs local_tile"
        return None

    def _split(self, op: Operation, rules: Rules) -> dict[str, Any]:
        """Gemm and MatMul: `k_split` work-items share each output's reduction (1: one
        work-item per output element; lowering/kernels/matmul.py).

        Split when there are fewer outputs than `min_work_items` and K >= 256 (a batch-1
        classifier: 1000 outputs, K = 1280): one serial loop per output leaves a GPU
        nearly idle. GPUs: with K contiguous in B (Gemm transB = 1) a work-group of 64
        work-items (128 from K = 4096) per output; with B column-contiguous (transB = 0,
        MatMul) 32 per output, 8 neighbouring columns per work-group. CPUs: 8 where the
        float4 loads apply (K contiguous in A's row and B's, K % 4 == 0), else 1. On
        PoCL (2 shared cores, kernel time of cm.profile, median of 5) the classifier
        took 2.14 ms with 1, 1.19 ms with 8, 1.32 with 16, 1.70 with 32; M = 2: 8.2 ->
        2.8 ms; K = 1283 (scalar loads) gained nothing (2.14 -> 2.20 ms with 16). The
        gain there is the float4 loads, not the parallelism, hence a small split.
        Always written, 1 included: the lowering's defaults are the GPU rules."""
        out = graph.shape_of(op.results[0])
        outputs = 1
        for d in out:
            outputs *= d
        if isinstance(op, graph.GemmOp):
            a = graph.shape_of(op.a)
            trans_a = bool(op.trans_a.value.data)
            k = a[0] if trans_a else a[1]
            k_contiguous = bool(op.trans_b.value.data)
            float4 = k_contiguous and (not trans_a or out[0] == 1)
        else:
            # Through lhs_perm / rhs_perm: attention's transposed keys are K-contiguous.
            geo = matmul_geometry_of(op)
            k, k_contiguous = geo.k, geo.n == 1 or geo.b_strides[0] == 1
            float4 = k_contiguous and geo.a_strides[1] == 1
        split = 1
        if outputs < rules.min_work_items and k >= 256:
            if rules.gpu:
                split = (128 if k >= 4096 else 64) if k_contiguous else 32
            elif float4 and k % 4 == 0:
                split = 8
        elif rules.gpu and k >= 1024 and isinstance(op, graph.MatMulOp):
            # Long reductions with enough outputs: 8 work-items per output still help a GPU
            # (ViT-B/32's and Swin-T's K = 3072 / 1536 MLP products: their matmul time on
            # the H200 fell from 8.8 to 6.9 ms with 8, 7.0 with 4, 8.1 with 32;
            # bench/schedule_sweep.py --family matmul, docs/bench/issue12).
            split = 8
        return {"k_split": split}

    def _tiles(self, op: Operation, rules: Rules, cfg: dict[str, Any]) -> dict[str, Any]:
        """Gemm and MatMul without a split: `tile_m` rows by `tile_n` columns per
        work-item (MatMulSpec). CPUs: the panel schedule, 4 x 16 (or 4 x 8) where B's
        columns are contiguous and N a multiple of 16 (8): two float8s of B per K step,
        each A value used 16 times from a register, every row tile of a column panel in
        one work-group (`panel_columns`; PoCL on this project's 2-core EPYC, whole models,
        alternating: vit_b_32 888 -> 420 ms, tiny_bert 57.0 -> 40.8 ms against 4 x 4; a
        plain-OpenCL sweep, bench/cpu_gemm_panels.py, docs/bench/issue30/cpu-panels: 50x768x3072
        25.7 GFLOP/s at 4 x 16, 24.3 at 6 x 16, 23.0 at 4 x 8, 20.6 at 2 x 16, 15.0 at 4 x 16
        with the column panels spread over work-groups; 197x768x768 46.7 at 4 x 16); elsewhere 4 x 4 (one float4 of B
        per K step; tiny_bert's products on PoCL: 0.40-0.64 s with 4x4 / 8x4 tiles against
        1.9 s untiled). GPUs: 1 x 1: the transformer products
        have few rows (ViT-B/32: 50), and tiles cut the work-items below what fills an
        H200 (vit_b_32 + tiny_bert products: 6.6 ms untiled, 11.2 ms 1x4, 25.1 ms 4x4;
        bench/schedule_sweep.py --family matmul, docs/bench/issue12). A Gemm takes tiles
        only when it can run as a matmul (not transA; transB only with a constant B,
        transposed at compile time); otherwise both stay 1. A MatMul whose B is read
        through a `rhs_perm` takes tile_n = 4 only where B's rows are still aligned float4s
        (`float4_columns`: attention's transposed keys are not; its head-split values are)."""
        if cfg["k_split"] > 1 or not tileable(op):
            return cfg  # no tiles to choose: the keys are left out (they would read 1)
        m, n, batch = matmul_dims(op)
        if rules.gpu:
            return {**cfg, "tile_m": 1, "tile_n": 1}
        panel = panel_columns(op)
        if panel:
            return {**cfg, "tile_m": 4 if m >= 4 else 1, "tile_n": panel}
        if isinstance(op, graph.MatMulOp):  # B read through rhs_perm: float4 rows only where aligned
            geo = matmul_geometry_of(op)
            columns4 = float4_columns(geo.n, geo.b_strides, geo.b_batch_strides)
        else:
            columns4 = n % 4 == 0
        return {**cfg, "tile_m": 4 if m >= 4 else 1, "tile_n": 4 if columns4 else 1}

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        """k_split 1 ... 128 (up to K / 2), tile_m 1/2/4/8 and tile_n 1/4 when not split,
        and the reduction loop's unroll pragma (none, 4, 8)."""
        k = _gemm_k(head)
        dims: list = [("k_split", tuple(s for s in (1, 2, 4, 8, 16, 32, 64, 128) if s == 1 or 2 * s <= k))]
        if tileable(head):
            m, n, _ = matmul_dims(head)
            dims.append(("tile_m", tuple(t for t in (1, 2, 4, 8) if t <= max(m, 1))))
            if default.get("tile_n", 1) == 4 or n % 4 == 0:
                dims.append(("tile_n", (1, 4) + tuple(c for c in PANEL_COLS if c <= panel_columns(head))))
        dims.append(("k_unroll", (0, 4, 8)))
        if tileable(head):
            dims.append(("local_tile", LOCAL_TILES))
            dims.append(("k_tile", LOCAL_K_TILES))
            dims.append(("k_groups", tuple(g for g in K_GROUPS if g == 1 or k // g >= 32)))
        return dims

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        t = cfg.get("local_tile", 0)
        if t:  # its register tile from tile_m / tile_n, no split inside a work-group, no unroll pragma
            cfg.update(k_split=1, k_unroll=0)
            cfg.setdefault("k_tile", LOCAL_TILE_K)
            cfg.setdefault("k_groups", 1)
            tm, tn = cfg.get("tile_m", 1), cfg.get("tile_n", 1)
            if tm > t or tn > t or not 32 <= (t // tm) * (t // tn) <= 256:
                cfg["tile_m"], cfg["tile_n"] = REGISTER_TILE[t]
            return cfg
        for key in self.LOCAL_ONLY:
            cfg.pop(key, None)
        if cfg.get("tile_n", 1) not in (1, 4, *PANEL_COLS):
            cfg["tile_n"] = 1
        if cfg.get("k_split", 1) > 1:
            # Untiled, explicitly: select-kernel-config merges an override onto its own
            # choice, so a key left out keeps the default's tile_n = 4, which split-K refuses.
            for t in ("tile_m", "tile_n"):
                if t in cfg:
                    cfg[t] = 1
        return cfg

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        """Outputs / (tile_m * tile_n) x k_split; with local_tile T, (T / tile_m) x (T / tile_n)
        per T x T block and K group."""
        if cfg.get("local_tile", 0):
            m, n, batch = matmul_dims(head)
            t = cfg["local_tile"]
            return cdiv(m, t) * cdiv(n, t) * batch * cfg.get("k_groups", 1) \
                * (t // cfg.get("tile_m", 1)) * (t // cfg.get("tile_n", 1))
        return cdiv(value_numel(head.results[0]), cfg.get("tile_m", 1) * cfg.get("tile_n", 1)) \
            * cfg.get("k_split", 1)


    def extra_bytes(self, head: Operation, cfg: dict[str, Any], out_bytes: int) -> int:
        """k_groups G > 1: G partial sums of every output written and read back."""
        groups = cfg.get("k_groups", 1) if cfg.get("local_tile", 0) else 1
        return 2 * groups * out_bytes if groups > 1 else 0


def panel_columns(op: Operation) -> int:
    """The widest column panel (16 or 8; 0: none) of the CPU panel schedule (MatMulSpec
    `tile_cols` 8 / 16) that a Gemm or MatMul can take: it divides N and B's columns are
    contiguous (a Gemm's constant transposed B is transposed at compile time; a MatMul
    reading B through a `rhs_perm` that makes columns strided, attention's keys, cannot)."""
    if not tileable(op):
        return 0
    if isinstance(op, graph.MatMulOp):
        geo = matmul_geometry_of(op)
        if geo.b_strides[1] != 1 and geo.n > 1:
            return 0
    _, n, _ = matmul_dims(op)
    return next((c for c in sorted(PANEL_COLS, reverse=True) if n % c == 0), 0)


def _gemm_k(head) -> int:
    if isinstance(head, graph.GemmOp):
        a = graph.shape_of(head.a)
        return int(a[0] if head.trans_a.value.data else a[1])
    return int(head.lhs_shape()[-1])


GEMM = Gemm()


# --------------------------------------------------------------------------- lowering


class GemmPattern(KernelPattern):
    heads = (graph.GemmOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.GemmOp = group.head
        out_shape = graph.shape_of(op.result)
        m, n = out_shape
        a_shape = graph.shape_of(op.a)
        k = a_shape[0] if op.trans_a.value.data else a_shape[1]
        epi, extras = _epi_args(hb, group, out_shape)
        beta = op.beta.value.data
        if op.c is not None and beta != 0.0:
            # beta * C joins the epilogue as one more extra input, before the fused tail.
            c_index = len(epi.strides)
            c_expr = In(c_index) if beta == 1.0 else Un("scale", In(c_index), (beta,))
            expr = _substitute_src(epi.expr, Bin("add", Src(), c_expr))
            epi = Epilogue(expr, epi.strides + (broadcast_strides(graph.shape_of(op.c), out_shape),))
            extras = extras + [hb.buffer(op.c)]
        tiles = cfg["tile_m"], cfg["tile_n"]
        local_tile = cfg.get("local_tile", 0)
        if (tiles != (1, 1) or local_tile) and (cfg["k_split"] > 1 or not tileable(op)):
            raise LoweringError(f"{where(op)}: kernel_config tile_m/tile_n and local_tile need k_split = 1, no "
                                "transA, and transB only with a constant B")
        if tiles != (1, 1) or local_tile:
            # A register-tiled matmul (MatMulSpec): B transposed at compile time if need
            # be, alpha folded into the epilogue. Untiled Gemms keep GemmSpec (transB read
            # in place, split-K for GEMVs).
            if op.alpha.value.data != 1.0:
                epi = Epilogue(_substitute_src(epi.expr, Un("scale", Src(), (op.alpha.value.data,))), epi.strides)
            b = hb.buffer(op.b)
            if op.trans_b.value.data:
                b = hb.weight((op.b.owner.weight_name or "gemm_b") + "_t",
                              np.ascontiguousarray(hb.constant_array(op.b).T))
            try:
                spec = MatMulSpec(batch=(), a_batch_strides=(), b_batch_strides=(), m=m, n=n, k=k,
                                  tile_rows=tiles[0], tile_cols=tiles[1], unroll=cfg["k_unroll"],
                                  local_tile=local_tile, **_local_keys(cfg), epilogue=epi)
            except ValueError as e:
                raise LoweringError(f"{where(op)}: kernel_config: {_in_key_terms(e)}") from None
            launch_matmul(hb, spec, [hb.buffer(op.a), b], extras, hb.alloc(group.result), loc)
            return
        spec = GemmSpec(m=m, n=n, k=k, trans_a=bool(op.trans_a.value.data), trans_b=bool(op.trans_b.value.data),
                        alpha=op.alpha.value.data, k_parts=cfg["k_split"], unroll=cfg["k_unroll"], epilogue=epi)
        hb.launch(spec, [hb.buffer(op.a), hb.buffer(op.b), *extras, hb.alloc(group.result)], loc)


class MatMulPattern(KernelPattern):
    heads = (graph.MatMulOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.MatMulOp = group.head
        # Operands are read through the strides of their perms (lhs_perm / rhs_perm): a
        # transposed operand costs no copy.
        a, b = op.lhs_shape(), op.rhs_shape()
        geo = matmul_geometry_of(op)
        # The epilogue runs at (batch..., M, N) coordinates; a 1-D operand's result lacks
        # M or N, so its extra inputs get stride 0 there.
        epi, extras = _epi_args(hb, group, graph.shape_of(group.head.results[0]))
        if len(a) == 1 or len(b) == 1:
            def widen(st: tuple[int, ...]) -> tuple[int, ...]:
                st = st[:-1] + (0,) + st[-1:] if len(a) == 1 else st
                return st + (0,) if len(b) == 1 else st
            epi = Epilogue(epi.expr, tuple(widen(st) for st in epi.strides))
        rows = geo.collapse_rows()
        if rows is not None:
            # B shared by every batch entry and A's batch and rows nesting like one axis
            # (checked with A's real strides): the batch is more rows of one product
            # (PyTorch's attention projections multiply [L, 1, E] by [E, 3E]), so
            # register tiles span batch entries instead of B being re-read per entry.
            collapsed = [_collapse_rows(st, (*geo.batch, geo.m)) for st in epi.strides]
            if all(c is not None for c in collapsed):
                epi = Epilogue(epi.expr, tuple(collapsed))  # type: ignore[arg-type]
                geo = rows
        try:
            spec = MatMulSpec(batch=geo.batch, a_batch_strides=geo.a_batch_strides,
                              b_batch_strides=geo.b_batch_strides, m=geo.m, n=geo.n, k=geo.k,
                              a_strides=geo.a_strides, b_strides=geo.b_strides,
                              k_parts=cfg["k_split"], tile_rows=cfg["tile_m"], tile_cols=cfg["tile_n"],
                              unroll=cfg["k_unroll"], local_tile=cfg.get("local_tile", 0), **_local_keys(cfg),
                              epilogue=epi)
        except ValueError as e:
            raise LoweringError(f"{where(op)}: kernel_config: {_in_key_terms(e)}") from None
        launch_matmul(hb, spec, [hb.buffer(op.lhs), hb.buffer(op.rhs)], extras, hb.alloc(group.result), loc)


def _local_keys(cfg: dict[str, Any]) -> dict[str, int]:
    """MatMulSpec's k_tile / k_groups from a config (keys it holds only with local_tile)."""
    if not cfg.get("local_tile", 0):
        return {}
    return {"k_tile": cfg["k_tile"], "k_groups": cfg["k_groups"]}


def launch_matmul(hb, spec: MatMulSpec, operands: list, extras: list, out, loc) -> None:
    """One launch of `spec`; with k_groups G > 1 two: the product's G partial sums into a
    buffer of their own ([G][batch][M][N], f32), then MatMulKSumSpec adding them up with
    the epilogue into `out`."""
    if spec.k_groups == 1:
        hb.launch(spec, [*operands, *extras, out], loc)
        return
    outputs = max(1, int(np.prod(spec.batch))) * spec.m * spec.n
    partial = hb.scratch(spec.k_groups * outputs, "k_partials")
    hb.launch(dataclasses.replace(spec, epilogue=Epilogue()), [*operands, partial], loc)
    hb.launch(MatMulKSumSpec(batch=spec.batch, m=spec.m, n=spec.n, parts=spec.k_groups, epilogue=spec.epilogue),
              [partial, *extras, out], loc)


Gemm.patterns = (GemmPattern(), MatMulPattern())
