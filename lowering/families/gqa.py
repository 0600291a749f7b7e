"""The grouped-query attention family: `graph.group_query_attention` (a decoder's attention over
its KV cache on the device), lowered to three kernels (lowering/kernels/gqa.py): the rotary
+ cache update, the attention of each KV head's query heads over splits of the cache
(flash-decoding) and, with more than one split, their combination.

| key | values | what |
|---|---|---|
| `splits` | 1, 2, 4 ... 64 | work-groups along the cache rows per (token, KV head); >1 adds the combining kernel |
| `items` | 1, 2, 4 ... 256 | work-items per work-group (rows of the split, then output columns, are spread over them) |
| `tile` | 0, 1, 2 ... 64 | >0 (several tokens a run; a decode program ignores it): the prefill kernel tiled over the chunk instead, `tile` tokens a work-group (`GQAPrefillSpec`: a work-item per token and query head, K/V tiles in local memory; `splits` and `items` then unused) |
| `kv_tile` | 4, 8 ... 64 | cache rows per K/V tile of the tiled kernel (2 kv_tile D floats of local memory) |

The attention's loops stop at each token's position (a run-time value), so a split past it
costs a work-group that does nothing, and a short context reads only its rows.
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Operation

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv
from adreno_mlir.lowering.groups import KernelPattern, LoweringError, where
from adreno_mlir.lowering.kernels.gqa import (LOCAL_FLOATS, GQAAttentionSpec, GQACombineSpec, GQAPrefillSpec,
                                              GQAUpdateSpec, attention_local_floats,
                                              prefill_local_floats)

POWERS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


MAX_SPLITS = 64
MIN_CHUNK = 32
"""The fewest cache rows per split the GPU decode default gives a work-group."""


def tiled(op: graph.GroupQueryAttentionOp, cfg: dict[str, Any]) -> bool:
    """Whether `cfg` runs `op` with the prefill kernel tiled over the chunk: a `tile` given
    and several tokens a run (a decode program ignores `tile`)."""
    return bool(cfg.get("tile", 0)) and op.geometry[1] > 1


def min_splits(op: graph.GroupQueryAttentionOp, items: int = 1) -> int | None:
    """The fewest splits whose rows fit a work-group's local memory (G queries + G scores a
    row, and with several work-items their reductions' partials); None when even MAX_SPLITS
    do not (a cache too long, or heads too wide)."""
    _, _, length, d, _ = op.geometry
    g = op.heads // op.kv_heads
    splits = 1
    while attention_local_floats(g, d, cdiv(length, splits), items) > LOCAL_FLOATS:
        if splits == MAX_SPLITS:
            return None
        splits *= 2
    return splits


class GQA(Family):
    name = "gqa"
    keys = (
        Key("splits", POWERS[:7], "work-groups along the cache rows per (token, KV head)", off=1),
        Key("items", POWERS, "work-items per work-group", off=1),
        Key("tile", (0, *POWERS[:7]), "tokens per work-group of the tiled prefill kernel (0: one token a work-group)",
            off=0),
        Key("kv_tile", POWERS[2:7], "cache rows per K/V tile in local memory (tiled prefill)", off=32),
    )
    fixed_work_group = True

    def matches(self, head: Operation) -> bool:
        return isinstance(head, graph.GroupQueryAttentionOp)

    def applicable(self, head: Operation, cfg: dict[str, Any]) -> tuple[str, ...]:
        """Decode (one token a run): splits and items (a `tile` given is for prefill: a
        decode program ignores it). Prefill: tile and kv_tile when tiled, else splits, items
        and tile (0)."""
        if head.geometry[1] == 1:
            return ("splits", "items")
        return ("tile", "kv_tile") if tiled(head, cfg) else ("splits", "items", "tile")

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """Decode (one token a run), on GPUs: 64 work-items a work-group; the cache split into
        chunks of at least MIN_CHUNK (32) rows until there are about two work-groups per
        compute unit (at most 32 splits). CPUs: one work-item, as few splits as local memory
        allows. Measured on the H200 (bench/decode_attention.py, the 0.34B decoder, 4 KV
        heads, 193 of 256 rows): chunks of 32 rows (8 splits) take 26.6 us a layer, of 64
        (4 splits) 32.8, one split 101; items 32 or 128 change little
        (docs/bench/issue29/final/attn_sweep.json).

        Prefill (several tokens a run): the tiled kernel, 64 // G tokens a work-group (a
        work-item per token and query head; at most the chunk), K/V tiles of 32 rows (fewer
        where 2 x 32 x D floats do not fit local memory), where its work-groups are at least
        the target's compute units (or it does not say: the Adreno profiles; CPUs). Else one
        token a work-group: on the H200 (132 compute units) the 0.34B decoder's chunk of 64
        makes 16 tiled work-groups, whose attention took 98 us a layer against 65 for the
        256 work-groups of one token each (tiles of 4 tokens, 64 work-groups: 119;
        docs/bench/issue29/session3/prefill_attn.log)."""
        b, s, length, d, _ = op.geometry
        g = op.heads // op.kv_heads
        schedule_given = any(given.get(k, 1) != 1 for k in ("splits", "items"))
        if s > 1 and given.get("tile", 0 if schedule_given else 1):
            tile = 1
            while tile * 2 <= max(1, 64 // g) and tile < s:
                tile *= 2
            kv_tile = 32
            while kv_tile > 4 and prefill_local_floats(kv_tile, d) > LOCAL_FLOATS:
                kv_tile //= 2
            groups = b * cdiv(s, tile) * op.kv_heads
            if "tile" in given or not rules.gpu or not rules.compute_units or groups >= rules.compute_units:
                return {"tile": tile, "kv_tile": kv_tile}
        if not rules.gpu:
            return {"splits": min_splits(op) or MAX_SPLITS, "items": 1}  # (too long for any: check() says so)
        splits = min_splits(op, 64) or min_splits(op) or MAX_SPLITS
        if s == 1:
            groups = b * op.kv_heads
            target = 2 * (rules.compute_units or 16)
            while splits < 32 and groups * splits < target and cdiv(length, 2 * splits) >= MIN_CHUNK:
                splits *= 2
            return {"splits": splits, "items": 64}
        return {"splits": splits, "items": 64, "tile": 0}

    def check(self, head: Operation, cfg: dict[str, Any]) -> str | None:
        _, _, length, d, _ = head.geometry
        g = head.heads // head.kv_heads
        if tiled(head, cfg):
            if cfg["tile"] * g > 256:
                return f"tile = {cfg['tile']} tokens x {g} query heads exceed 256 work-items a work-group"
            if prefill_local_floats(cfg.get("kv_tile", 32), d) > LOCAL_FLOATS:
                return (f"kv_tile = {cfg.get('kv_tile', 32)} rows of K and V of {d} exceed the {LOCAL_FLOATS} floats of "
                        "local memory a work-group may take")
            return None
        if min_splits(head) is None:
            return (f"{g} query heads of {d} over {length} cache rows do not fit local memory even in {MAX_SPLITS} "
                    f"splits ({LOCAL_FLOATS} floats a work-group); compile with a smaller max_context")
        items = cfg.get("items", 1)
        least = min_splits(head, items)
        if least is None:
            return (f"items = {items} work-items' reduction partials (2 x {g} x {items} floats) leave no local memory "
                    "for the cache rows; use fewer items")
        if cfg.get("splits", 1) < least:
            return (f"splits = {cfg.get('splits', 1)} leaves more cache rows per work-group than local memory holds"
                    + (f" beside {items} work-items' partials" if items > 1 else "") + f"; at least {least}")
        return None

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        low = min_splits(head) or MAX_SPLITS
        dims = [("splits", tuple(s for s in POWERS[:7] if s >= low)), ("items", (1, 16, 32, 64, 128, 256))]
        _, s, _, d, _ = head.geometry
        if s > 1:
            g = head.heads // head.kv_heads
            dims += [("tile", tuple(t for t in (0, 1, 2, 4, 8, 16, 32, 64) if t * g <= 256 and t < 2 * s)),
                     ("kv_tile", tuple(k for k in (8, 16, 32, 64) if prefill_local_floats(k, d) <= LOCAL_FLOATS))]
        return dims

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        """The tiled kernel reads neither splits nor items; the other one no kv_tile (a space
        kept without its op, as a tuning record's: several tokens where it has `tile`)."""
        tokens = head.geometry[1] if head is not None else (2 if "tile" in cfg else 1)
        if tokens == 1:
            cfg.pop("tile", None)
            cfg.pop("kv_tile", None)
        elif cfg.get("tile", 0):
            cfg.pop("splits", None)
            cfg.pop("items", None)
        else:
            cfg.pop("kv_tile", None)
        return cfg

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        b, s, _, _, _ = head.geometry
        if tiled(head, cfg):
            return b * cdiv(s, cfg["tile"]) * head.kv_heads * cfg["tile"] * (head.heads // head.kv_heads)
        return b * s * head.kv_heads * cfg.get("splits", 1) * cfg.get("items", 1)


GQA_FAMILY = GQA()


class GQAPattern(KernelPattern):
    """The three kernels of one `graph.group_query_attention`; the caches are state buffers,
    written in place."""

    heads = (graph.GroupQueryAttentionOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.GroupQueryAttentionOp = group.head
        b, s, length, d, table = op.geometry
        h, kvh = op.heads, op.kv_heads
        geo = dict(batch=b, rows=s, heads=h, kv_heads=kvh, depth=d, length=length)
        kc, vc = hb.buffer(op.k_cache), hb.buffer(op.v_cache)
        start = hb.buffer(op.start)
        q_rot = hb.scratch(b * s * h * d, "q_rotated")
        qkv = [hb.buffer(op.query)] + ([] if op.packed else [hb.buffer(op.key), hb.buffer(op.value)])
        rotary = [hb.buffer(op.cos), hb.buffer(op.sin)] if op.cos is not None else []
        cache = op.cache_storage
        hb.launch(GQAUpdateSpec(**geo, cache=cache, packed=op.packed, rotary=op.cos is not None,
                                interleaved=bool(op.interleaved.value.data), table_rows=table),
                  [*qkv, start, *rotary, kc, vc, q_rot], loc)
        out = hb.alloc(op.output)
        if tiled(op, cfg):
            try:
                prefill = GQAPrefillSpec(**geo, cache=cache, tile=cfg["tile"], kv_tile=cfg.get("kv_tile", 32),
                                         scale=op.scale.value.data)
            except ValueError as e:
                raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
            hb.launch(prefill, [q_rot, kc, vc, start, out], loc)
            return
        splits, items = cfg["splits"], cfg["items"]
        try:
            attn = GQAAttentionSpec(**geo, cache=cache, splits=splits, items=items, scale=op.scale.value.data)
        except ValueError as e:
            raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
        if splits == 1:
            hb.launch(attn, [q_rot, kc, vc, start, out], loc)
            return
        partial = hb.scratch(b * s * kvh * splits * (h // kvh) * (d + 2), "attention_splits")
        hb.launch(attn, [q_rot, kc, vc, start, partial], loc)
        hb.launch(GQACombineSpec(**geo, splits=splits), [partial, start, out], loc)


GQA.patterns = (GQAPattern(),)
