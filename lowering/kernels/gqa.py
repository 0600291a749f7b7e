"""Grouped-query attention over a KV cache on the device (`graph.group_query_attention`):
three kernels per op, whatever the number of heads.

1. `GQAUpdateSpec` (one work-item per pair of elements of each head of each new token):
   rotates q and k (rotary embedding at the token's position, halves or interleaved pairs),
   stores q in a scratch buffer [B, S, H, D] and writes k and v into the caches at row
   position (a row at or past L, a padded prefill chunk's tail, is not written).
2. `GQAAttentionSpec` (flash-decoding): one work-group per (token, KV head, split of the
   cache rows); the G = H / KVH query heads of a KV head share it, so each K and V row is
   read once for all of them. The work-group's `items` work-items compute the scores of
   the split's rows up to the token's position (the run-time bound: rows past it cost
   nothing), keep them in local memory, take each head's maximum and sum, and compute the
   output columns. With one split the outputs are final; with more, each split writes its
   unnormalized outputs, maximum and sum ([..., D + 2] per head) and
3. `GQACombineSpec` adds the splits up (each scaled by exp(its max - the max), divided by
   the scaled sums), one work-item per output element.

Positions come from `start` (float-held integers computed on device from the run-time
position): token s of batch row b sits at start[b] + s and attends to cache rows j <= it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import GLOBAL_F16, KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, row_floats, work_group_allreduce

LOCAL_FLOATS = 4096
"""Floats of local memory (16 KiB) a work-group of the attention kernels may use: G queries
of D, G scores per row of its split and the reductions' partials (`attention_local_floats`);
the tiled prefill's K and V tiles."""


def powers_of_two(**keys: int) -> None:
    """ValueError naming the first of `keys` that is not a power of two."""
    for what, v in keys.items():
        if v < 1 or v & (v - 1):
            raise ValueError(f"{what} must be a power of two, got {v}")


def prefill_local_floats(kv_tile: int, depth: int) -> int:
    """What `GQAPrefillSpec` declares in local memory, in floats: a K and a V tile."""
    return 2 * kv_tile * depth


def attention_local_floats(group: int, depth: int, chunk: int, items: int) -> int:
    """What `GQAAttentionSpec` declares in local memory, in floats (its `local_floats`)."""
    return group * (depth + chunk) + (2 * group * items if items > 1 else 0)


@dataclass(frozen=True)
class _Geometry(KernelSpec):
    batch: int
    rows: int
    """S: new tokens per run."""
    heads: int
    kv_heads: int
    depth: int
    length: int
    """L: the caches' rows."""
    cache: str = "f32"
    """The caches' storage: "f32", or "f16" (`kv-cache-storage{element=f16}`: halves read
    with vload_half and written with vstore_half, arithmetic in f32; no cl_khr_fp16)."""

    def pointer_types(self) -> dict:
        return {"k_cache": GLOBAL_F16, "v_cache": GLOBAL_F16} if self.cache == "f16" else {}

    def cache_suffix(self) -> str:
        return "_f16" if self.cache == "f16" else ""

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    def position(self, kb: KernelBuilder, start: SSAValue, b: SSAValue, s: SSAValue) -> SSAValue:
        """start[b] + s as an int; a start outside [0, L) (or not a number) gives L, which no
        row reaches."""
        first = kb.load(start, b, "first")
        inside = kb.and_(kb.fcmp("oge", first, 0.0), kb.fcmp("olt", first, float(self.length)))
        return kb.add(kb.to_int(kb.select(inside, first, kb.f(float(self.length)))), s, "pos")


@dataclass(frozen=True)
class GQAUpdateSpec(_Geometry):
    """Rotate q and k at each token's position; q to the output (scratch [B, S, H, D]), k and v
    into the caches. `packed`: q, k, v are one [B, S, (H + 2 KVH) D] input."""

    packed: bool = True
    rotary: bool = True
    interleaved: bool = False
    table_rows: int = 0

    def base_name(self) -> str:
        return ("gqa_update" + ("_rotary" if self.rotary else "") + ("_interleaved" if self.interleaved else "")
                + self.cache_suffix())

    def input_names(self) -> tuple[str, ...]:
        qkv = ("qkv",) if self.packed else ("q", "k", "v")
        return (*qkv, "start", *(("cos", "sin") if self.rotary else ()), "k_cache", "v_cache")

    def global_size(self) -> tuple[int, ...]:
        return (self.batch * self.rows * (self.heads + 2 * self.kv_heads) * (self.depth // 2),)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, _, q_out = self.split_args(args)
        names = dict(zip(self.input_names(), ins))
        h, kvh, d, half = self.heads, self.kv_heads, self.depth, self.depth // 2
        gid = kb.global_id(0, "i")
        b, s, hh, p = kb.unravel(gid, (self.batch, self.rows, h + 2 * kvh, half), ("b", "s", "hh", "p"))
        pos = self.position(kb, names["start"], b, s)
        token = kb.add(kb.mul(b, self.rows), s, "token")
        i1, i2 = (kb.mul(p, 2), kb.add(kb.mul(p, 2), 1)) if self.interleaved else (p, kb.add(p, half))

        def source(k1: KernelBuilder, which: str, head: SSAValue) -> tuple[SSAValue, SSAValue]:
            """The pair (i1, i2) of `head` (an index among q's, k's or v's heads) of this token."""
            if self.packed:
                offset = {"q": 0, "k": h, "v": h + kvh}[which]
                base = k1.mul(k1.add(k1.mul(token, h + 2 * kvh), k1.add(head, offset)), d)
                ptr = names["qkv"]
            else:
                base = k1.mul(k1.add(k1.mul(token, h if which == "q" else kvh), head), d)
                ptr = names[which]
            return k1.load(ptr, k1.add(base, i1)), k1.load(ptr, k1.add(base, i2))

        def rotate(k1: KernelBuilder, x1: SSAValue, x2: SSAValue) -> tuple[SSAValue, SSAValue]:
            if not self.rotary:
                return x1, x2
            row = k1.min_i(pos, self.table_rows - 1)  # a padded token past the tables reads the last row
            t = k1.add(k1.mul(row, half), p)
            c, sn = k1.load(names["cos"], t, "c"), k1.load(names["sin"], t, "s")
            return k1.fsub(k1.fmul(x1, c), k1.fmul(x2, sn)), k1.fadd(k1.fmul(x2, c), k1.fmul(x1, sn))

        def cache_store(k1: KernelBuilder, cache: SSAValue, kv: SSAValue, y1: SSAValue, y2: SSAValue) -> None:
            def write(k2: KernelBuilder) -> None:
                row = k2.mul(k2.add(k2.mul(k2.add(k2.mul(b, kvh), kv), self.length), pos), d)
                k2.store_float(y1, cache, k2.add(row, i1))
                k2.store_float(y2, cache, k2.add(row, i2))

            k1.if_(k1.cmp("slt", pos, self.length), write)

        def query(k1: KernelBuilder) -> None:
            y1, y2 = rotate(k1, *source(k1, "q", hh))
            base = k1.mul(k1.add(k1.mul(token, h), hh), d)
            k1.store(y1, q_out, k1.add(base, i1))
            k1.store(y2, q_out, k1.add(base, i2))

        def key(k1: KernelBuilder) -> None:
            kv = k1.sub(hh, h)
            cache_store(k1, names["k_cache"], kv, *rotate(k1, *source(k1, "k", kv)))

        def value(k1: KernelBuilder) -> None:
            kv = k1.sub(hh, h + kvh)
            cache_store(k1, names["v_cache"], kv, *source(k1, "v", kv))

        kb.if_else(kb.cmp("slt", hh, h), query,
                   lambda k1: k1.if_else(k1.cmp("slt", hh, h + kvh), key, value))


@dataclass(frozen=True)
class GQAAttentionSpec(_Geometry):
    """Attention of each token's G query heads of one KV head over one split of the cache
    rows (see the module docstring). Output: [B, S, H * D] with one split, else the
    partials [B * S * KVH, splits, G, D + 2] (unnormalized outputs, the maximum, the sum)."""

    splits: int = 1
    items: int = 1
    scale: float = 1.0

    def __post_init__(self):
        powers_of_two(splits=self.splits, items=self.items)
        if self.local_floats > LOCAL_FLOATS:
            raise ValueError(f"{self.group} heads x ({self.depth} + {self.chunk} rows"
                             + (f" + 2 x {self.items} work-items' partials" if self.items > 1 else "")
                             + f") exceed the {LOCAL_FLOATS} floats of local memory a work-group may take: use more "
                             "splits" + (" or fewer items" if self.items > 1 else ""))

    @property
    def local_floats(self) -> int:
        """Local memory floats: the G query rows, G scores per row of the split and, with
        several work-items, the two reductions' partials (a maximum and a sum per head)."""
        return attention_local_floats(self.group, self.depth, self.chunk, self.items)

    @property
    def chunk(self) -> int:
        """Cache rows per split."""
        return -(-self.length // self.splits)

    def base_name(self) -> str:
        return (f"gqa_attention_g{self.group}" + (f"_split{self.splits}" if self.splits > 1 else "")
                + (f"_wg{self.items}" if self.items > 1 else "") + self.cache_suffix())

    def input_names(self) -> tuple[str, ...]:
        return ("q", "k_cache", "v_cache", "start")

    def global_size(self) -> tuple[int, ...]:
        return (self.items, self.batch * self.rows * self.kv_heads, self.splits)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1, 1)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (q, kc, vc, start), _, out = self.split_args(args)
        g, d, h, kvh, chunk, items = self.group, self.depth, self.heads, self.kv_heads, self.chunk, self.items
        qs = kb.local_alloc(g * d, f32, "q_rows")  # kernel scope, declared first
        scores = kb.local_alloc(g * chunk, f32, "scores")
        lid = kb.local_id(0, "l") if items > 1 else kb.i(0)
        r = kb.group_id(1, "r")
        split = kb.group_id(2, "split") if self.splits > 1 else kb.i(0)
        b, s, kv = kb.unravel(r, (self.batch, self.rows, kvh), ("b", "s", "kv"))
        pos = self.position(kb, start, b, s)
        j0 = kb.mul(split, chunk, "j0")
        j1 = kb.min_i(kb.min_i(kb.add(j0, chunk), kb.add(pos, 1)), self.length)  # rows j0 <= j < j1
        token = kb.add(kb.mul(b, self.rows), s, "token")
        q0 = kb.mul(kb.add(kb.mul(token, h), kb.mul(kv, g)), d, "q0")  # this KV head's G query rows, contiguous

        def load_q(k1: KernelBuilder, e: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            k1.store(k1.load(q, k1.add(q0, e)), qs, e)
            return []

        kb.for_(lid, g * d, items, [], load_q, "e")
        kb.barrier()
        cache0 = kb.mul(kb.add(kb.mul(b, kvh), kv), self.length * d, "cache0")
        vec = d % 4 == 0

        def score(k1: KernelBuilder, j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            row = k1.add(cache0, k1.mul(j, d))

            def dot(k2: KernelBuilder, dd: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                if vec:
                    kv4 = k2.vload_float(kc, k2.add(row, dd), 4)
                    out = list(a)
                    for t in range(4):
                        kt = k2.lane(kv4, t)
                        for gi in range(g):
                            out[gi] = k2.fma(k2.load(qs, k2.add(dd, gi * d + t)), kt, out[gi])
                    return out
                kt = k2.load_float(kc, k2.add(row, dd))
                return [k2.fma(k2.load(qs, k2.add(dd, gi * d)), kt, a[gi]) for gi in range(g)]

            sums = k1.for_(0, d, 4 if vec else 1, [k1.f(0.0)] * g, dot, "dd")
            slot = k1.sub(j, j0)
            out = []
            for gi, sm in enumerate(sums):
                sm = k1.fmul(sm, self.scale) if self.scale != 1.0 else sm
                k1.store(sm, scores, k1.add(slot, gi * chunk))
                out.append(k1.fmax(acc[gi], sm))
            return out

        maxes = kb.for_(kb.add(j0, lid), j1, items, [kb.f(float("-inf"))] * g, score, "j")
        if items > 1:  # every head's maximum in one tree
            maxes = work_group_allreduce(kb, maxes, lid, items, "row_max", combine=lambda k1, a, c: k1.fmax(a, c))

        def prob(k1: KernelBuilder, j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            slot = k1.sub(j, j0)
            out = []
            for gi in range(g):
                at = k1.add(slot, gi * chunk)
                pr = k1.exp(k1.fsub(k1.load(scores, at), maxes[gi]))
                k1.store(pr, scores, at)
                out.append(k1.fadd(acc[gi], pr))
            return out

        totals = kb.for_(kb.add(j0, lid), j1, items, [kb.f(0.0)] * g, prob, "j")
        if items > 1:  # every head's sum in one tree (its barriers also order the probabilities' stores)
            totals = work_group_allreduce(kb, totals, lid, items, "row_sum")
        cols = 4 if vec else 1
        final = self.splits == 1
        invs = [kb.fdiv(1.0, t) for t in totals] if final else []
        part0 = kb.mul(kb.add(kb.mul(r, self.splits), split), g * (d + 2), "part0")

        def column(k1: KernelBuilder, c0: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            def mac(k2: KernelBuilder, j: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                slot = k2.sub(j, j0)
                vrow = k2.add(k2.add(cache0, k2.mul(j, d)), c0)
                vs = ([k2.lane(v4, t) for v4 in [k2.vload_float(vc, vrow, 4)] for t in range(4)] if vec
                      else [k2.load_float(vc, vrow)])
                out = list(a)
                for gi in range(g):
                    pr = k2.load(scores, k2.add(slot, gi * chunk))
                    for t in range(cols):
                        out[gi * cols + t] = k2.fma(pr, vs[t], out[gi * cols + t])
                return out

            accs = k1.for_(j0, j1, 1, [k1.f(0.0)] * (g * cols), mac, "j")
            for gi in range(g):
                for t in range(cols):
                    col = k1.add(c0, t) if t else c0
                    if final:
                        k1.store(k1.fmul(accs[gi * cols + t], invs[gi]), out, k1.add(k1.add(q0, gi * d), col))
                    else:
                        k1.store(accs[gi * cols + t], out, k1.add(k1.add(part0, gi * (d + 2)), col))
            return []

        kb.for_(kb.mul(lid, cols), d, items * cols, [], column, "c")
        if not final:
            def stats(k1: KernelBuilder) -> None:
                for gi in range(g):
                    at = k1.add(part0, gi * (d + 2) + d)
                    k1.store(maxes[gi], out, at)
                    k1.store(totals[gi], out, k1.add(at, 1))

            if items > 1:
                kb.if_(kb.cmp("eq", lid, 0), stats)
            else:
                stats(kb)


@dataclass(frozen=True)
class GQACombineSpec(_Geometry):
    """The splits of `GQAAttentionSpec` added up: out[token, h, c] = sum_t e_t o_t[c] /
    sum_t e_t l_t with e_t = exp(m_t - max_t m_t); splits that start past the token's
    position hold nothing and are skipped. One work-item per output element."""

    splits: int = 2

    def base_name(self) -> str:
        return f"gqa_combine_split{self.splits}"

    def input_names(self) -> tuple[str, ...]:
        return ("partial", "start")

    def global_size(self) -> tuple[int, ...]:
        return (self.depth, self.batch * self.rows * self.heads)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (part, start), _, out = self.split_args(args)
        g, d, chunk = self.group, self.depth, -(-self.length // self.splits)
        c = kb.global_id(0, "c")
        rh = kb.global_id(1, "rh")
        b, s, hd = kb.unravel(rh, (self.batch, self.rows, self.heads), ("b", "s", "h"))
        pos = self.position(kb, start, b, s)
        kv, gi = kb.div(hd, g, "kv"), kb.rem(hd, g, "g")
        r = kb.add(kb.mul(kb.add(kb.mul(b, self.rows), s), self.kv_heads), kv)
        base = kb.mul(kb.add(kb.mul(r, self.splits * g), gi), d + 2, "base")
        stride = g * (d + 2)  # from one split's record of this head to the next's
        used = kb.min_i(kb.add(kb.div(pos, chunk), 1), self.splits)  # splits holding rows <= pos

        def top(k1: KernelBuilder, t: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            return [k1.fmax(acc[0], k1.load(part, k1.add(k1.add(base, k1.mul(t, stride)), d)))]

        (mx,) = kb.for_(0, used, 1, [kb.f(float("-inf"))], top, "t")

        def add(k1: KernelBuilder, t: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            rec = k1.add(base, k1.mul(t, stride))
            e = k1.exp(k1.fsub(k1.load(part, k1.add(rec, d)), mx))
            return [k1.fma(e, k1.load(part, k1.add(rec, c)), acc[0]), k1.fma(e, k1.load(part, k1.add(rec, d + 1)), acc[1])]

        num, den = kb.for_(0, used, 1, [kb.f(0.0), kb.f(0.0)], add, "t")
        kb.store(kb.fdiv(num, den), out, kb.add(kb.mul(rh, d), c))


@dataclass(frozen=True)
class GQAPrefillSpec(_Geometry):
    """Causal attention of a prefill chunk tiled over its tokens (flash attention): one
    work-group per (batch row, tile of `tile` tokens, KV head), one work-item per (token,
    query head) of the tile, `tile * G` in all. The work-group walks the cache rows up to
    its last token's position in tiles of `kv_tile` rows: it copies each tile's K and V
    rows into local memory once (2 kv_tile D floats) for all its tile x G query rows,
    where the one-token-a-work-group kernel (`GQAAttentionSpec`) reads every row once per
    token. Each work-item keeps its query row, its output row and the running maximum
    and sum in registers (an online softmax: earlier rows rescaled by exp(m - m') as the
    maximum grows) and stops at its own token's position (causal). Output [B, S, H * D]."""

    tile: int = 16
    kv_tile: int = 32
    scale: float = 1.0

    def __post_init__(self):
        powers_of_two(tile=self.tile, kv_tile=self.kv_tile)
        if prefill_local_floats(self.kv_tile, self.depth) > LOCAL_FLOATS:
            raise ValueError(f"kv_tile = {self.kv_tile} rows of K and V ({prefill_local_floats(self.kv_tile, self.depth)} "
                             "floats) exceed "
                             f"the {LOCAL_FLOATS} floats of local memory a work-group may take: use a smaller kv_tile")

    @property
    def tiles(self) -> int:
        return -(-self.rows // self.tile)

    @property
    def items(self) -> int:
        return self.tile * self.group

    def base_name(self) -> str:
        return f"gqa_prefill_g{self.group}_t{self.tile}_kv{self.kv_tile}" + self.cache_suffix()

    def input_names(self) -> tuple[str, ...]:
        return ("q", "k_cache", "v_cache", "start")

    def global_size(self) -> tuple[int, ...]:
        return (self.items, self.batch * self.tiles * self.kv_heads)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (q, kc, vc, start), _, out = self.split_args(args)
        g, d, h, kvh, rows, tile_rows = self.group, self.depth, self.heads, self.kv_heads, self.rows, self.kv_tile
        keys = kb.local_alloc(tile_rows * d, f32, "k_tile")  # kernel scope, declared first
        values = kb.local_alloc(tile_rows * d, f32, "v_tile")
        lid = kb.local_id(0, "l")
        b, t0, kv = kb.unravel(kb.group_id(1, "r"), (self.batch, self.tiles, kvh), ("b", "tile", "kv"))
        t, gi = (kb.div(lid, g, "t"), kb.rem(lid, g, "g")) if g > 1 else (lid, kb.i(0))
        s = kb.add(kb.mul(t0, self.tile), t, "s")
        valid = kb.cmp("slt", s, rows)
        s_in = kb.min_i(s, rows - 1)  # a work-item past the chunk computes its last token again, unwritten
        pos = self.position(kb, start, b, s_in)
        last = self.position(kb, start, b, kb.min_i(kb.add(kb.mul(t0, self.tile), self.tile - 1), rows - 1))
        end = kb.min_i(kb.add(last, 1), self.length)  # rows this work-group reads: [0, end)
        mine = kb.min_i(kb.add(pos, 1), self.length)  # rows this work-item attends: [0, mine)
        row0 = kb.mul(kb.add(kb.mul(kb.add(kb.mul(b, rows), s_in), h), kb.add(kb.mul(kv, g), gi)), d, "row0")
        vec = d % 4 == 0
        lanes = 4 if vec else 1

        qv = row_floats(kb, q, row0, d)
        if self.scale != 1.0:
            qv = [kb.fmul(x, self.scale) for x in qv]
        cache0 = kb.mul(kb.add(kb.mul(b, kvh), kv), self.length * d, "cache0")

        def tile_body(k1: KernelBuilder, j0: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            k1.barrier()  # the previous tile's readers are done
            have = k1.mul(k1.sub(k1.min_i(k1.add(j0, tile_rows), self.length), j0), d)  # floats of rows < L

            def copy(k2: KernelBuilder, e: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                at = k2.add(k2.add(cache0, k2.mul(j0, d)), e)
                if vec:
                    k2.vstore(k2.vload_float(kc, at, 4), keys, e)
                    k2.vstore(k2.vload_float(vc, at, 4), values, e)
                else:
                    k2.store(k2.load_float(kc, at), keys, e)
                    k2.store(k2.load_float(vc, at), values, e)
                return []

            k1.for_(k1.mul(lid, lanes), have, self.items * lanes, [], copy, "e")
            k1.barrier()

            def row(k2: KernelBuilder, r: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                m, l, o = a[0], a[1], a[2:]
                at = k2.mul(r, d)
                kr = row_floats(k2, keys, at, d)
                score = k2.f(0.0)
                for x, y in zip(qv, kr):
                    score = k2.fma(x, y, score)
                m2 = k2.fmax(m, score)
                alpha = k2.exp(k2.fsub(m, m2))
                p = k2.exp(k2.fsub(score, m2))
                vr = row_floats(k2, values, at, d)
                return [m2, k2.fma(l, alpha, p)] + [k2.fma(p, v, k2.fmul(x, alpha)) for x, v in zip(o, vr)]

            n = k1.min_i(k1.sub(mine, j0), tile_rows)  # this token's rows of the tile (none past it)
            return k1.for_(0, n, 1, acc, row, "r")

        res = kb.for_(0, end, tile_rows, [kb.f(float("-inf")), kb.f(0.0)] + [kb.f(0.0)] * d, tile_body, "j0")
        inv = kb.fdiv(1.0, res[1])

        def write(k1: KernelBuilder) -> None:
            for c in range(d):
                k1.store(k1.fmul(res[2 + c], inv), out, k1.add(row0, c))

        kb.if_(valid, write)
