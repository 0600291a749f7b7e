"""Fused attention (`graph.attention`): softmax(scale * (Q @ K) + bias) @ V in one kernel.

One work-group per (batch entry, query row m), `items` work-items (a power of two, the
work-items per row: the row family's key, lowering/families/rows.py; 1 is a serial row per work-item). The row's L scores live
in a `__local` array, so the [..., M, L] score and probability matrices of the unfused
chain never reach global memory:

1. work-item l computes the scores of keys in blocks of 4 (keys 4l..4l+3, then
   4(l + items)...; a dot product over D read through Q's and K's strides, each Q
   element loaded once per block), scales them, adds the bias, stores them in local
   memory and keeps their maximum;
2. the row maximum (`work_group_allsum` with fmax, which propagates NaN as the unfused
   softmax's does), then p_j = exp(s_j - max) written back in place, and the row sum;
3. after a barrier every work-item sees every p_j and computes output columns (4 at a
   time when Dv % 4 == 0, blocks strided by items) as sum_j p_j * V[j, d] / sum.

Operands are read through element strides (graph.attention's perms, broadcast batch
axes at stride 0), the output is contiguous [..., M, Dv].
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, numel, row_floats, work_group_allsum

BLOCK = 4
"""Keys (scores) and output columns a work-item computes per loop step."""

MAX_KEYS = 4096
"""The most keys (L) a row may have: its scores take L floats of local memory (16 KiB)."""


@dataclass(frozen=True)
class AttentionOperands(KernelSpec):
    """What both attention kernels compute and read:
    out[b, m, :] = softmax_j(scale * sum_d Q[b, m, d] K[b, d, j] + bias[b, m, j]) V[b, j, :].

    Each operand's strides are (batch strides over `batch`, then its two matrix axes):
    Q (m, d), K (d, j), V (j, dv), bias (m, j); `bias_strides` None: no bias."""

    batch: tuple[int, ...]
    m: int
    d: int
    keys: int
    dv: int
    q_strides: tuple[int, ...]
    k_strides: tuple[int, ...]
    v_strides: tuple[int, ...]
    bias_strides: tuple[int, ...] | None
    scale: float = 1.0
    offsets: tuple[int, int, int] = (0, 0, 0)
    """Element offsets of Q, K and V in their buffers (graph.attention's views: the three
    read from one projection)."""
    out_strides: tuple[int, ...] | None = None
    """Element strides of the output over (batch..., m, dv) (graph.attention's out_perm);
    None: contiguous."""

    def input_names(self) -> tuple[str, ...]:
        return ("q", "k", "v") + (("bias",) if self.bias_strides is not None else ())

    def name_stem(self) -> str:
        return "attention" + ("_bias" if self.bias_strides is not None else "")

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1)  # both kernels' work-groups: `items` work-items in a row

    def operands(self, args: list[SSAValue]) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue | None, SSAValue]:
        """(q, k, v, bias or None, out) of the kernel's arguments."""
        ins, _, out = self.split_args(args)
        return ins[0], ins[1], ins[2], ins[3] if self.bias_strides is not None else None, out

    def operand_bases(self, kb: KernelBuilder, bc: list[SSAValue], row: SSAValue
                      ) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue | None]:
        """The element index of query row `row`'s Q row, of K's and V's matrices and of the
        row's bias row (None: no bias) for batch coordinates `bc`."""
        nb = len(self.batch)

        def base(strides: tuple[int, ...], row_stride: int | None) -> SSAValue:
            coords = [*bc, *([row] if row_stride is not None else [])]
            return kb.linear(coords, (*strides[:nb], *([row_stride] if row_stride is not None else [])))

        q0, k0, v0 = (kb.add(b, o) if o else b for b, o in zip(
            (base(self.q_strides, self.q_strides[nb]), base(self.k_strides, None), base(self.v_strides, None)),
            self.offsets))
        b0 = base(self.bias_strides, self.bias_strides[nb]) if self.bias_strides is not None else None
        return q0, k0, v0, b0


@dataclass(frozen=True)
class AttentionSpec(AttentionOperands):
    """The row kernel: a work-group of `items` work-items per query row (see the module
    docstring)."""

    items: int = 1

    def __post_init__(self):
        if self.items < 1 or self.items & (self.items - 1):
            raise ValueError(f"items must be a power of two, got {self.items}")
        if self.keys > MAX_KEYS:
            raise ValueError(f"{self.keys} keys exceed the {MAX_KEYS} a row's local scores may hold")

    def base_name(self) -> str:
        return self.name_stem() + (f"_wg{self.items}" if self.items > 1 else "")

    @property
    def rows(self) -> int:
        return max(1, numel(self.batch)) * self.m

    def global_size(self) -> tuple[int, ...]:
        return (self.items, self.rows)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        q, k, v, bias, out = self.operands(args)
        nb = len(self.batch)
        scores = kb.local_alloc(self.keys, f32, "scores")  # kernel scope, declared first
        grouped = self.items > 1
        r = kb.global_id(1, "r")
        lid = kb.local_id(0, "l") if grouped else kb.i(0)
        step = self.items
        z, m = (kb.div(r, self.m, "z"), kb.rem(r, self.m, "m")) if self.m > 1 else (r, kb.i(0))
        bc = kb.unravel(z, self.batch) if nb else []

        q_ds = self.q_strides[nb + 1]
        k_ds, k_js = self.k_strides[nb:]
        v_js, v_cs = self.v_strides[nb:]
        q0, k0, v0, b0 = self.operand_bases(kb, bc, m)

        blk = BLOCK  # keys per work-item step: each q element loaded once for 4 keys
        ragged = self.keys % blk != 0

        def score(k1: KernelBuilder, jb: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            # a ragged last block recomputes key L - 1 (same value, same slot, same
            # work-item; harmless to the max) instead of branching
            js = [k1.min_i(k1.add(jb, t), self.keys - 1) if ragged else (k1.add(jb, t) if t else jb)
                  for t in range(blk)]
            kjs = [k1.add(k0, k1.mul(j, k_js)) for j in js]

            def dot(k2: KernelBuilder, dd: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                qv = k2.load(q, k2.add(q0, k2.mul(dd, q_ds)))
                kd = k2.mul(dd, k_ds)
                return [k2.fma(qv, k2.load(k, k2.add(kj, kd)), a[t]) for t, kj in enumerate(kjs)]

            sums = k1.for_(0, self.d, 1, [k1.f(0.0)] * blk, dot, "dd")
            mx1 = acc[0]
            for j, s in zip(js, sums):
                if self.scale != 1.0:
                    s = k1.fmul(s, self.scale)
                if bias is not None:
                    s = k1.fadd(s, k1.load(bias, k1.add(b0, k1.mul(j, self.bias_strides[nb + 1]))))
                k1.store(s, scores, j)
                mx1 = k1.fmax(mx1, s)
            return [mx1]

        (mx,) = kb.for_(kb.mul(lid, blk), self.keys, step * blk, [kb.f(float("-inf"))], score, "jb")
        if grouped:
            mx = work_group_allsum(kb, mx, lid, self.items, "row_max", combine=lambda k1, a, b: k1.fmax(a, b))

        def prob(k1: KernelBuilder, j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            p = k1.exp(k1.fsub(k1.load(scores, j), mx))
            k1.store(p, scores, j)
            return [k1.fadd(acc[0], p)]

        (total,) = kb.for_(lid, self.keys, step, [kb.f(0.0)], prob, "j")
        if grouped:
            total = work_group_allsum(kb, total, lid, self.items, "row_sum")
            kb.barrier()  # every p_j written (the sum's own barriers order them too)
        inv = kb.fdiv(1.0, total, "inv")
        if self.out_strides is None:
            out0, out_cs = kb.mul(r, self.dv, "out0"), 1
        else:
            out0 = kb.linear([*bc, m], self.out_strides[:-1])
            out_cs = self.out_strides[-1]

        cols = BLOCK if self.dv % BLOCK == 0 else 1  # columns per work-item step: p_j loaded once for 4

        def column(k1: KernelBuilder, c0: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            vcs = [k1.add(v0, k1.mul(k1.add(c0, t) if t else c0, v_cs)) for t in range(cols)]

            def mac(k2: KernelBuilder, j: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                p, vj = k2.load(scores, j), k2.mul(j, v_js)
                return [k2.fma(p, k2.load(v, k2.add(vc, vj)), a[t]) for t, vc in enumerate(vcs)]

            accs = k1.for_(0, self.keys, 1, [k1.f(0.0)] * cols, mac, "j")
            for t, acc in enumerate(accs):
                col = k1.add(c0, t) if t else c0
                k1.store(k1.fmul(acc, inv), out, k1.add(out0, k1.mul(col, out_cs) if out_cs != 1 else col))
            return []

        kb.for_(kb.mul(lid, cols), self.dv, step * cols, [], column, "c")


LOCAL_FLOATS = 4096
"""The floats of local memory the tiled kernel's work-group may take (16 KiB, as the
decoder's tiled prefill attention: lowering/kernels/gqa.py)."""


def row_stride(width: int, tile: int) -> int:
    """The local stride of a K or V row of `width` floats in the tiled kernel. Under 8 rows a
    work-group, a warp's quarter (8 work-items, one float4 access each) reads rows of
    several key shares at once; rows `width` floats apart fall on the same banks when
    width is a multiple of 32, so rows are padded by a float4 (by one float for a width
    not a multiple of 4)."""
    if tile >= 8:
        return width
    return width + (4 if width % 4 == 0 else 1)


def tiled_local_floats(kv_tile: int, d: int, dv: int, tile: int, split: int) -> int:
    """Local floats of the tiled kernel: its K and V tile, and (with several work-items a
    row) room for the combine's maxima and sums plus at least one output column."""
    need = kv_tile * (row_stride(d, tile) + row_stride(dv, tile))
    if split > 1:
        need = max(need, 3 * tile * split)
    return need


def tiled_config_error(tile: int, split: int, kv_tile: int, d: int, dv: int) -> str | None:
    """Why the tiled kernel cannot run with `tile` rows, `split` work-items a row
    (kernel_config `key_split`) and `kv_tile` keys a tile for heads of D and Dv; None if it
    can. The attention family's `check` and AttentionTiledSpec both ask this."""
    for name, n in (("tile", tile), ("key_split", split), ("kv_tile", kv_tile)):
        if n < 1 or n & (n - 1):
            return f"{name} must be a power of two, got {n}"
    if tile * split > 256:
        return f"tile x key_split = {tile} x {split} exceed 256 work-items a work-group"
    if kv_tile < split:
        return f"kv_tile = {kv_tile} gives the {split} work-items of a row no key each: take kv_tile >= key_split"
    if kv_tile // split > 16:
        return (f"kv_tile / key_split = {kv_tile // split} keys a work-item a tile exceed 16 (they are unrolled): "
                "use a smaller kv_tile or a larger key_split")
    need = tiled_local_floats(kv_tile, d, dv, tile, split)
    if need > LOCAL_FLOATS:
        return (f"kv_tile = {kv_tile} keys of K and V rows of {d} and {dv} ({need} floats with the combine) exceed "
                f"the {LOCAL_FLOATS} floats of local memory a work-group may take: use a smaller kv_tile")
    return None


@dataclass(frozen=True)
class AttentionTiledSpec(AttentionOperands):
    """The same product as AttentionSpec, tiled over query rows (flash attention): one
    work-group per (batch entry, `tile` query rows), `split` work-items per row, `tile *
    split` in all (work-item l takes row l % tile and key share l // tile, so a warp's
    neighbours share their K/V reads).

    The work-group walks the keys in tiles of `kv_tile`: it copies each tile's K and V rows
    into local memory once (kv_tile (D + Dv) floats) for all its rows, where the row
    kernel reads them once per row. Work-item (row, share) takes the tile's keys
    share, share + split, ...: it computes their scores at once (kv_tile / split of them,
    unrolled, its query row in registers), then keeps an online softmax: its running
    maximum, its sum and its Dv outputs, rescaled by exp(old max - new max) once a tile.
    At the end the `split` shares of a row are combined through local memory (maxima,
    then the sums and the outputs rescaled to the row's maximum), a chunk of columns at
    a time. Keys past L (a ragged last tile) read row L - 1 and score -inf. No row's
    scores are stored anywhere, so L is unbounded. A row whose every score is -inf gives
    NaN, as the unfused softmax does."""

    tile: int = 16
    split: int = 4
    kv_tile: int = 32

    def __post_init__(self):
        error = tiled_config_error(self.tile, self.split, self.kv_tile, self.d, self.dv)
        if error is not None:
            raise ValueError(error)

    def base_name(self) -> str:
        return self.name_stem() + f"_t{self.tile}_s{self.split}_kv{self.kv_tile}"

    @property
    def tiles(self) -> int:
        return -(-self.m // self.tile)

    @property
    def items(self) -> int:
        return self.tile * self.split

    def global_size(self) -> tuple[int, ...]:
        return (self.items, max(1, numel(self.batch)) * self.tiles)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        q, k, v, bias, out = self.operands(args)
        nb, d, dv, keys = len(self.batch), self.d, self.dv, self.keys
        tile, split, kt = self.tile, self.split, self.kv_tile
        cap = tiled_local_floats(kt, d, dv, tile, split)
        kv = kb.local_alloc(cap, f32, "kv_tile")  # kernel scope, declared first
        lid = kb.local_id(0, "l")
        t, share = (kb.rem(lid, tile, "t"), kb.div(lid, tile, "share")) if split > 1 else (lid, kb.i(0))
        z, ti = kb.div(kb.group_id(1), self.tiles, "z"), kb.rem(kb.group_id(1), self.tiles, "ti")
        bc = kb.unravel(z, self.batch) if nb else []
        m = kb.add(kb.mul(ti, tile), t, "m")
        valid = kb.cmp("slt", m, self.m)
        m_in = kb.min_i(m, self.m - 1)  # a row past M computes row M - 1 again, unwritten

        q_ds = self.q_strides[nb + 1]
        k_ds, k_js = self.k_strides[nb:]
        v_js, v_cs = self.v_strides[nb:]
        q0, k0, v0, b0 = self.operand_bases(kb, bc, m_in)
        qv = row_floats(kb, q, q0, d, q_ds)
        if self.scale != 1.0:
            qv = [kb.fmul(x, self.scale) for x in qv]
        ninf = float("-inf")

        dk, dvk = row_stride(d, tile), row_stride(dv, tile)  # local row strides of K and V

        def copy(k1: KernelBuilder, j0: SSAValue, src: SSAValue, src0: SSAValue, width: int, row_st: int,
                 col_st: int, at: int, stride: int) -> None:
            """kv[at + r * stride + c] = src[row (j0 + r, at most L - 1), column c] for the
            tile's kt rows, in the order of the source's contiguous axis (neighbouring
            work-items read neighbouring floats)."""
            lanes = 4 if col_st == 1 and width % 4 == 0 else 1
            by_rows = col_st == 1 or row_st != 1  # consecutive elements run along a row

            def one(k2: KernelBuilder, e: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                if by_rows:
                    r, c = k2.div(e, width), k2.rem(e, width)
                else:
                    c, r = k2.div(e, kt), k2.rem(e, kt)
                j = k2.min_i(k2.add(j0, r), keys - 1)
                src_at = k2.add(src0, k2.add(k2.mul(j, row_st), k2.mul(c, col_st) if col_st != 1 else c))
                dst = k2.add(k2.mul(r, stride), c)
                dst = k2.add(dst, at) if at else dst
                if lanes == 4:
                    k2.vstore(k2.vload(src, src_at, 4), kv, dst)
                else:
                    k2.store(k2.load(src, src_at), kv, dst)
                return []

            k1.for_(k1.mul(lid, lanes), kt * width, self.items * lanes, [], one, "e")

        per = kt // split  # keys a work-item takes per tile
        ragged = keys % kt != 0

        def tile_body(k1: KernelBuilder, j0: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            mx, total, o = acc[0], acc[1], acc[2:]
            k1.barrier()  # the previous tile's readers are done
            copy(k1, j0, k, k0, d, k_js, k_ds, 0, dk)
            copy(k1, j0, v, v0, dv, v_js, v_cs, kt * dk, dvk)
            k1.barrier()
            rows = [k1.add(share, i * split) if i else share for i in range(per)]
            scores = []
            for r in rows:
                kr = row_floats(k1, kv, k1.mul(r, dk), d)
                s = k1.f(0.0)
                for x, y in zip(qv, kr):
                    s = k1.fma(x, y, s)
                j = k1.add(j0, r)
                if bias is not None:
                    jb = k1.min_i(j, keys - 1) if ragged else j
                    s = k1.fadd(s, k1.load(bias, k1.add(b0, k1.mul(jb, self.bias_strides[nb + 1]))))
                if ragged:
                    s = k1.select(k1.cmp("slt", j, keys), s, k1.f(ninf))
                scores.append(s)
            new = mx
            for s in scores:
                new = k1.fmax(new, s)
            safe = k1.select(k1.fcmp("oeq", new, k1.f(ninf)), k1.f(0.0), new)  # no key yet: exp(-inf) = 0
            alpha = k1.exp(k1.fsub(mx, safe))
            ps = [k1.exp(k1.fsub(s, safe)) for s in scores]
            total = k1.fmul(total, alpha)
            for p in ps:
                total = k1.fadd(total, p)
            o = [k1.fmul(x, alpha) for x in o]
            for r, p in zip(rows, ps):
                vr = row_floats(k1, kv, k1.add(k1.mul(r, dvk), kt * dk), dv)
                o = [k1.fma(p, y, x) for x, y in zip(o, vr)]
            return [new, total, *o]

        res = kb.for_(0, keys, kt, [kb.f(ninf), kb.f(0.0)] + [kb.f(0.0)] * dv, tile_body, "j0")
        mx, total, o = res[0], res[1], res[2:]
        if self.out_strides is None:
            out0, out_cs = kb.mul(kb.add(kb.mul(z, self.m), m_in), dv, "out0"), 1
        else:
            out0 = kb.linear([*bc, m_in], self.out_strides[:-1])
            out_cs = self.out_strides[-1]

        def out_at(k1: KernelBuilder, col) -> SSAValue:
            col = k1.i(col)
            return k1.add(out0, k1.mul(col, out_cs) if out_cs != 1 else col)

        if split == 1:
            inv = kb.fdiv(1.0, total, "inv")

            def write(k1: KernelBuilder) -> None:
                for c, x in enumerate(o):
                    k1.store(k1.fmul(x, inv), out, out_at(k1, c))

            kb.if_(valid, write)
            return
        # combine the row's `split` shares: slots [share][t] (lid), maxima then sums
        n = self.items
        kb.barrier()  # every work-item is done with the last tile
        kb.store(mx, kv, lid)
        kb.barrier()
        row_max = kb.f(ninf)
        for s2 in range(split):
            row_max = kb.fmax(row_max, kb.load(kv, kb.add(t, s2 * tile) if s2 else t))
        safe = kb.select(kb.fcmp("oeq", row_max, kb.f(ninf)), kb.f(0.0), row_max)
        f = kb.exp(kb.fsub(mx, safe))
        kb.store(kb.fmul(total, f), kv, kb.add(lid, n))
        kb.barrier()
        row_sum = kb.f(0.0)
        for s2 in range(split):
            row_sum = kb.fadd(row_sum, kb.load(kv, kb.add(t, n + s2 * tile)))
        inv = kb.fdiv(1.0, row_sum, "inv")
        chunk = min(dv, (cap - 2 * n) // n)
        for c0 in range(0, dv, chunk):
            width = min(chunk, dv - c0)
            for c in range(width):  # slot [column][share][t]
                kb.store(kb.fmul(o[c0 + c], f), kv, kb.add(lid, 2 * n + c * n))
            kb.barrier()

            def column(k1: KernelBuilder, c: SSAValue, _: list[SSAValue], c0: int = c0) -> list[SSAValue]:
                at = k1.add(k1.add(k1.mul(c, n), t), 2 * n)
                acc = k1.f(0.0)
                for s2 in range(split):
                    acc = k1.fadd(acc, k1.load(kv, k1.add(at, s2 * tile) if s2 else at))
                k1.if_(valid, lambda k2: k2.store(k2.fmul(acc, inv), out, out_at(k2, k2.add(c, c0) if c0 else c)))
                return []

            kb.for_(share, width, split, [], column, "c")
            kb.barrier()  # read before the next chunk overwrites
