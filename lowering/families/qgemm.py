"""The quantized matrix-product family: `graph.matmul_nbits` (com.microsoft MatMulNBits),
lowered to `QMatMulSpec` (lowering/kernels/qmatmul.py), which dequantizes W's packed blocks
in registers.

| key | values | what |
|---|---|---|
| `k_split` | 1, 2, 4 ... 256 | work-items sharing one output column's blocks (1: one per output); a GEMV's split |
| `tile_m` | 1, 2, 4, 8 | rows per work-item, each weight dequantized once for all of them (k_split 1) |
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Operation

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv
from adreno_mlir.lowering.groups import KernelPattern, LoweringError, where
from adreno_mlir.lowering.kernels.common import Epilogue
from adreno_mlir.lowering.kernels.qmatmul import QMatMulSpec
from adreno_mlir.lowering.expr import Bin, In, Src
from adreno_mlir.lowering.nchw_lowering import _collapse_rows, _epi_args, _substitute_src


class QGemm(Family):
    name = "qgemm"
    keys = (
        Key("k_split", (1, 2, 4, 8, 16, 32, 64, 128, 256), "work-items sharing one output column's blocks", off=1),
        Key("tile_m", (1, 2, 4, 8), "rows per work-item (k_split 1)", off=1),
    )
    exclusive = (("k_split", "tile_m"),)

    def matches(self, head: Operation) -> bool:
        return isinstance(head, graph.MatMulNBitsOp)

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """Fewer outputs than `min_work_items` (an LLM's decode GEMV: one row): on GPUs, 32
        work-items per output column share its blocks (at most one block each), else 1.
        More rows (prefill): tiles of 4 rows, each weight dequantized once per 4 rows
        (CPUs too). Not measured on a GPU yet: the first choice, to be tuned."""
        m, n = op.rows, op.n
        if m * n < rules.min_work_items and rules.gpu:
            split = 1
            while split < 32 and 2 * split <= op.blocks:
                split *= 2
            return {"k_split": split, "tile_m": 1}
        return {"k_split": 1, "tile_m": 4 if m >= 4 else 1}

    def check(self, head: Operation, cfg: dict[str, Any]) -> str | None:
        if cfg.get("k_split", 1) > 1 and cfg.get("tile_m", 1) > 1:
            return "k_split > 1 computes one row per work-item: tile_m must be 1"
        return None

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        blocks = head.blocks
        return [("k_split", tuple(s for s in (1, 2, 4, 8, 16, 32, 64, 128) if s == 1 or s <= blocks)),
                ("tile_m", tuple(t for t in (1, 2, 4, 8) if t <= max(head.rows, 1)))]

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        if cfg.get("k_split", 1) > 1:
            cfg["tile_m"] = 1
        return cfg

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        return cfg.get("k_split", 1) * head.n * cdiv(head.rows, cfg.get("tile_m", 1))


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
                               epilogue=epi)
        except ValueError as e:
            raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
        ins = [hb.buffer(op.a), hb.buffer(op.packed), hb.buffer(op.scales)]
        if op.zero_points is not None:
            ins.append(hb.buffer(op.zero_points))
        hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc)


QGemm.patterns = (QMatMulPattern(),)
