"""The Winograd product family: `texture.winograd_matmul` (M = U V per position of the
transformed tile), lowered to `WinogradMatmulSpec` (lowering/kernels/winograd.py).

| key | values | what |
|---|---|---|
| `tiles_per_item` | 1-8 | tiles per work-item (at most the tile count) |
| `co_blocks` | 1, 2, 4 | output channel blocks per work-item (must divide K/4) |

The input and output transforms (`texture.winograd_input` / `winograd_output`) take no keys.
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Operation

from adreno_mlir.dialects import texture
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv
from adreno_mlir.lowering.groups import KernelPattern, LoweringError, where
from adreno_mlir.lowering.kernels.packed import packed_of
from adreno_mlir.lowering.kernels.winograd import WinogradMatmulSpec


class WinogradMatmul(Family):
    name = "winograd_matmul"
    keys = (
        Key("tiles_per_item", range(1, 9), "tiles per work-item", off=1),
        Key("co_blocks", (1, 2, 4), "output channel blocks per work-item", off=1),
    )

    def matches(self, head: Operation) -> bool:
        return isinstance(head, texture.WinogradMatmulOp)

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """One tile and one channel block per work-item on GPUs (fastest on the H200);
        CPUs gain from reusing each filter float4 for two tiles and two channel blocks
        (measured on PoCL)."""
        if rules.gpu:
            return {"tiles_per_item": 1, "co_blocks": 1}
        k4 = op.result.type.shape[1]
        return {"tiles_per_item": 2, "co_blocks": 2 if k4 % 2 == 0 else 1}

    def check(self, op: Operation, cfg: dict[str, Any]) -> str | None:
        k4 = op.result.type.shape[1]
        cb = cfg.get("co_blocks", 1)
        if k4 % cb:
            return f"kernel_config co_blocks = {cb} must divide the {k4} output channel blocks"
        return None

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        return [("tiles_per_item", (1, 2, 4)), ("co_blocks", (1, 2, 4))]

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        """alpha^2 x tiles / tiles_per_item x channel blocks / co_blocks."""
        a2, k4, _, p, _ = head.results[0].type.shape
        return a2 * cdiv(p, cfg.get("tiles_per_item", 1)) * cdiv(k4, cfg.get("co_blocks", 1))


WINOGRAD_MATMUL = WinogradMatmul()


class WinogradMatmulPattern(KernelPattern):
    """One launch: M = U V per position of the transformed tile (the filter constant U is
    uploaded like any weight)."""

    heads = (texture.WinogradMatmulOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        op: texture.WinogradMatmulOp = group.head
        error = WINOGRAD_MATMUL.check(op, cfg)
        if error is not None:
            raise LoweringError(f"{where(op)}: {error}")
        p = op.result.type.shape[3]
        # more tiles per work-item than there are tiles would only repeat the last one
        spec = WinogradMatmulSpec(out=packed_of(op.result), src=packed_of(op.input),
                                  tile_block=min(cfg["tiles_per_item"], p), channel_blocks=cfg["co_blocks"])
        hb.launch(spec, [hb.buffer(op.input), hb.weight_buffer(op.filter), hb.alloc(op.result)], loc)


WinogradMatmul.patterns = (WinogradMatmulPattern(),)
