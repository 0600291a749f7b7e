"""The quantized matrix-product family: `graph.matmul_nbits` (com.microsoft MatMulNBits),
lowered to `QMatMulSpec` (lowering/kernels/qmatmul.py), which dequantizes W's packed blocks
in registers.

| key | values | what |
|---|---|---|
| `k_split` | 1, 2, 4 ... 256 | work-items sharing one output column's blocks (1: one per output); a GEMV's split |
| `tile_m` | 1, 2, 4, 8 | rows per work-item, each weight dequantized once for all of them (k_split 1) |
| `cols_per_group` | 1, 2, 4 ... 64 | output columns per work-group (k_split x cols_per_group work-items, at most 1024) |
| `block_loads` | 0, 1 | 1: a work-item reads each block's words with one vload (16 bytes for 4-bit blocks of 32) |
| `k_unroll` | 0, 2, 4, 8 | `#pragma unroll N` on the block loop: N blocks' loads in flight per work-item |
| `interleave` | 0, 1 | 1: W repacked [blocks, words, N] at compile time (scales, zero points [blocks, N]): neighbouring columns read neighbouring words (CPU SIMD, coalesced warps without k_split); not with block_loads |
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xdsl.ir import Operation

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv
from adreno_mlir.lowering.groups import KernelPattern, LoweringError, where
from adreno_mlir.lowering.kernels.common import Epilogue
from adreno_mlir.lowering.kernels.qmatmul import QMATMUL_MAX_GROUP, QMatMulSpec
from adreno_mlir.lowering.expr import Bin, In, Src
from adreno_mlir.lowering.nchw_lowering import _collapse_rows, _epi_args, _substitute_src


GEMV_SPLIT = 4
"""Work-items sharing a column in the GPU decode default (`_gemv`: measured on the H200)."""
GEMV_COLUMNS = 8
"""Columns per work-group of the GPU decode default (with GEMV_SPLIT: 32 work-items, a warp)."""
TUNED_GROUP_MAX = 256
"""The tuner's largest work-group (every profile's devices run 256)."""


class QGemm(Family):
    name = "qgemm"
    keys = (
        Key("k_split", (1, 2, 4, 8, 16, 32, 64, 128, 256), "work-items sharing one output column's blocks", off=1),
        Key("tile_m", (1, 2, 4, 8), "rows per work-item (k_split 1)", off=1),
        Key("cols_per_group", (1, 2, 4, 8, 16, 32, 64), "output columns per work-group (k_split work-items each)",
            off=1),
        Key("block_loads", (0, 1), "1: each block's words in one vload (coalesced 16-byte chunks)", off=0),
        Key("k_unroll", (0, 2, 4, 8), "#pragma unroll N on the block loop (0: none)", off=0),
        Key("interleave", (0, 1), "1: W's words repacked [blocks, words, N] (neighbouring columns, neighbouring "
            "words)", off=0),
    )
    exclusive = (("k_split", "tile_m"), ("block_loads", "interleave"))

    def matches(self, head: Operation) -> bool:
        return isinstance(head, graph.MatMulNBitsOp)

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """On a GPU, fewer than 4 rows (an LLM's decode GEMV: one row, an lm_head of 32000
        columns included) or fewer outputs than `min_work_items`: the split GEMV of `_gemv`
        (one work-item per output would loop over all of K's blocks, one load after the
        other: the lm_head took 37 us on the H200 that way, 11% of its bandwidth floor).
        More rows (prefill): tiles of 4 rows, each weight dequantized once per 4 rows, a
        word at a time (CPUs too, and CPUs for the GEMV: one work-item per output; PoCL
        gains nothing from work-groups that share a column). `interleave` (the words of
        neighbouring columns side by side) stays off: on this project's 2-core CPU it made
        llama_tiny's int4 prefill 1.6x faster on Intel's CPU runtime (695 -> 1099 tokens/s)
        but 7x slower on PoCL (509 -> 70) and changed neither's decode step (launch-bound:
        about 0.15 ms a launch on Intel's runtime); the tuner tries it. On a GPU the GEMV
        of a product far wider than deep (an lm_head) takes it (`_gemv`)."""
        m = op.rows
        gemv = m < 4 or m * op.n < rules.min_work_items
        if gemv and rules.gpu and given.get("tile_m", 1) == 1:
            return self._gemv(op, rules, given)
        return {"k_split": 1, "tile_m": 4 if m >= 4 else 1, "cols_per_group": 1, "block_loads": 0, "k_unroll": 0,
                "interleave": 0}

    def _gemv(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """The decode GEMV on a GPU: bandwidth-bound (each weight byte read once, ~5 integer
        and float operations per value), so the schedule is about bytes in flight and
        coalescing. Measured on the H200 (bench/qmatmul.py --sweep wide, every weight read
        from DRAM, docs/bench/issue29/session3/):

        - `block_loads` 1, `k_split` 4, `cols_per_group` 8 (32 work-items: a warp of 8
          neighbouring columns whose 4 items read 4 neighbouring 16-byte blocks; their A
          reads are the same 4 blocks, broadcast), `k_unroll` 2. That was the fastest or
          within 5% of it on K = 1024 to 4096 and N = 1024 to 12288: 37.3 us for Llama-7B's
          MLP up projection (4096 x 11008, 28 MB: 15% of 4.8 TB/s), where splitting K until
          each item had 64 bytes (the rule before: k_split 32 x 2 columns) took 188 us, and
          more items per column or more columns a work-group were slower (2 x 16: 40.2,
          4 x 32: 40.9, 1 x 16: 63.1).
        - a product far wider than deep (N >= 16 K: an lm_head, 1024 x 32000): W repacked
          so that neighbouring columns read neighbouring words (`interleave`), one work-item
          per column, 32 a work-group, `k_unroll` 4: 26.3 us against 40.5 for the rule before
          (the split kernel at 4 x 8: 29.4 with the weights in L2, 19.1 interleaved).
        - fewer than 2048 columns: k_split raised towards 32 (at most 32768 work-items in
          all), as 4 items a column leave the GPU idle: the 0.34B decoder's down projection
          (2816 x 1024) took 16.5 us with 32 items a column (8 columns a work-group) and
          18.7-23.3 with 4 (qmatmul_down.json, qmatmul_final.json).
        - k_split halved while it exceeds the blocks, cols_per_group while it is more than
          N needs.
        A `k_split` or `cols_per_group` given (an override) is kept and the rest follows it."""
        blocks, n = op.blocks, op.n
        if n >= 16 * op.k and "k_split" not in given and given.get("block_loads", 0) == 0:
            cols = given.get("cols_per_group", 32)
            while cols > 1 and cols // 2 >= n:
                cols //= 2
            unroll = max((u for u in (2, 4) if u <= blocks), default=0)
            return {"k_split": 1, "tile_m": 1, "cols_per_group": cols, "block_loads": 0, "k_unroll": unroll,
                    "interleave": 1}
        split = given.get("k_split", GEMV_SPLIT)
        if "k_split" not in given:
            while n < 2048 and split < 32 and 2 * split * n <= 32768:
                split *= 2  # few columns: more work-items on each
            while split > 1 and split > blocks:
                split //= 2
        cols = given.get("cols_per_group", GEMV_COLUMNS)
        while cols > 1 and (cols // 2 >= n or split * cols > TUNED_GROUP_MAX) and "cols_per_group" not in given:
            cols //= 2  # no more columns than N needs, no more than 256 work-items
        unroll = 2 if cdiv(blocks, split) >= 2 else 0  # two blocks' loads in flight where an item has two
        return {"k_split": split, "tile_m": 1, "cols_per_group": cols, "block_loads": 1, "k_unroll": unroll}

    def check(self, head: Operation, cfg: dict[str, Any]) -> str | None:
        if cfg.get("k_split", 1) > 1 and cfg.get("tile_m", 1) > 1:
            return "k_split > 1 computes one row per work-item: tile_m must be 1"
        items = cfg.get("k_split", 1) * cfg.get("cols_per_group", 1)
        if items > QMATMUL_MAX_GROUP:
            return (f"k_split x cols_per_group = {items} work-items per work-group; at most {QMATMUL_MAX_GROUP}")
        if cfg.get("interleave", 0) and cfg.get("block_loads", 0):
            return "block_loads reads a block's words at once, which interleave puts N words apart: choose one"
        return None

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        blocks = head.blocks
        return [("k_split", tuple(s for s in (1, 2, 4, 8, 16, 32, 64, 128) if s == 1 or s <= blocks)),
                ("tile_m", tuple(t for t in (1, 2, 4, 8) if t <= max(head.rows, 1))),
                ("cols_per_group", tuple(c for c in (1, 2, 4, 8, 16, 32) if c == 1 or c // 2 < head.n)),
                ("block_loads", (0, 1)),
                ("k_unroll", (0, 2, 4, 8)),
                ("interleave", (0, 1))]

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        """One candidate per distinct kernel: no row tiles with a split, no more columns per
        work-group than N needs nor more than TUNED_GROUP_MAX work-items, no unroll beyond a
        work-item's blocks, no block loads of one-word blocks (nothing to vectorize)."""
        split = cfg.get("k_split", 1)
        if split > 1:
            cfg["tile_m"] = 1
        cols = cfg.get("cols_per_group", 1)
        while cols > 1 and (cols // 2 >= head.n or split * cols > TUNED_GROUP_MAX):
            cols //= 2
        cfg["cols_per_group"] = cols
        trips = cdiv(head.blocks, split)
        if cfg.get("k_unroll", 0) > trips:
            cfg["k_unroll"] = max((u for u in (2, 4, 8) if u <= trips), default=0)
        if head.words == 1:
            cfg["block_loads"] = 0
        if cfg.get("block_loads", 0):  # the two exclude each other: block loads win
            cfg["interleave"] = 0
        return cfg

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        cols = cfg.get("cols_per_group", 1)
        return cfg.get("k_split", 1) * cols * cdiv(head.n, cols) * cdiv(head.rows, cfg.get("tile_m", 1))


QGEMM = QGemm()


class QMatMulPattern(KernelPattern):
    heads = (graph.MatMulNBitsOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.MatMulNBitsOp = group.head
        out_shape = graph.shape_of(op.result)
        epi, extras = _epi_args(hb, group, out_shape)
        # the kernel's coordinates are (row, column), the leading axes read as one row axis
        collapsed = [_collapse_rows(st, tuple(out_shape[:-1])) for st in epi.strides]
        if any(c is None for c in collapsed):
            raise LoweringError(f"{where(op)}: the fused epilogue reads an input that does not broadcast over the "
                                "product's rows as one axis; leave that op out of the region (graph-fuse)")
        epi = Epilogue(epi.expr, tuple(collapsed))  # type: ignore[arg-type]
        if op.bias is not None:  # the bias joins the epilogue as one more extra input, before the fused tail
            epi = Epilogue(_substitute_src(epi.expr, Bin("add", Src(), In(len(epi.strides)))), epi.strides + ((0, 1),))
            extras = extras + [hb.buffer(op.bias)]
        try:
            spec = QMatMulSpec(m=op.rows, n=op.n, k=op.k, bits=op.bits.value.data, block=op.block_size.value.data,
                               zero_points=op.zero_points is not None, k_parts=cfg["k_split"], tile_rows=cfg["tile_m"],
                               cols=cfg["cols_per_group"], block_loads=bool(cfg["block_loads"]),
                               unroll=cfg["k_unroll"], interleaved=bool(cfg["interleave"]),
                               rms_norm=op.norm_scale is not None,
                               norm_epsilon=op.norm_epsilon.value.data if op.norm_epsilon is not None else 0.0,
                               epilogue=epi)
        except ValueError as e:
            raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
        if spec.interleaved:  # repacked once, at compile time: [N, blocks, ...] -> [blocks, ..., N]
            def interleaved(value, hint: str):
                owner = value.owner
                if not isinstance(owner, graph.ConstantOp):
                    raise LoweringError(f"{where(op)}: interleave repacks the weights at compile time; they must be "
                                        "constants")
                # the store's own array: the words are i32 (constant_array would make floats of them)
                arr = (np.asarray(hb.store[owner.weight_name]) if owner.weight_name is not None
                       else hb.constant_array(value)).reshape(graph.shape_of(value))
                dtype = np.int32 if value is op.packed else np.float32
                moved = np.ascontiguousarray(np.moveaxis(arr, 0, -1), dtype=dtype)
                return hb.weight(f"{value.name_hint or hint}_interleaved", moved)

            ins = [hb.buffer(op.a), interleaved(op.packed, "packed"), interleaved(op.scales, "scales")]
            if op.zero_points is not None:
                ins.append(interleaved(op.zero_points, "zero_points"))
        else:
            ins = [hb.buffer(op.a), hb.buffer(op.packed), hb.buffer(op.scales)]
            if op.zero_points is not None:
                ins.append(hb.buffer(op.zero_points))
        if op.norm_scale is not None:
            ins.append(hb.buffer(op.norm_scale))
        hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc)


QGemm.patterns = (QMatMulPattern(),)
