"""Matrix products with quantized weights (`graph.matmul_nbits`, com.microsoft MatMulNBits):
the kernel reads W's packed blocks (32-bit words of `bits`-bit integers), its scales and
zero points, and dequantizes in registers; W is never stored as floats.

out[r, n] = sum_blocks scale[n, b] * sum_{k in block b} a[r, k] * (q[n, k] - zero_point[n, b])

One kernel, generated from the block format (bits, block size, zero points or not): the
inner loop over a block is unrolled over its words and each word's values (a 4-bit word
holds 8, an 8-bit one 4, a 2-bit one 16), a value being `(word >> (bits * j)) & mask`,
made a float minus its zero point as `as_float(q | 0x4B000000) - (2^23 + zp)` (exact: the
bits of 2^23 + q; one integer or and one float add, where an int-to-float conversion runs
at a quarter of the float rate or less on GPUs, 16 a clock per SM on the H200). Each word's
products are a chain of their own, the words' sums added as a tree (independent chains in
flight instead of one dependent chain of a block's 32 multiply-adds). The scale multiplies
the block's sum once. A is read as float4s where K % 4 == 0 (every word's
values are consecutive k), else a float at a time.

Schedule (kernel_config of the `qgemm` family, lowering/families/qgemm.py):
- `k_split` S: S work-items share one output column's blocks (item s takes blocks s, s + S,
  ...; neighbouring items read neighbouring blocks), their sums added in local memory
  (`work_group_sum`). The decode GEMV of an LLM (one row) needs this to fill a GPU.
- `cols_per_group` C: a work-group holds C columns of S items each (S * C work-items, item
  `lid` is share s = lid % S of column group * C + lid / S): a 32-wide SIMD of S = 8, C = 4
  reads 4 columns' runs of 8 neighbouring blocks at once, and its reads of A are of 8
  blocks, each shared by 4 items (broadcast), instead of 32 different ones. Each column sums its
  S partials in its own S slots of the local array (slot = lid: no bank conflicts, no two
  columns share a slot). Grid (S * C * ceil(N / C), rows / tile_m); the columns past N of
  the last group read column N - 1 (in bounds) and store nothing, so that every item
  reaches every barrier.
- `block_loads`: a work-item reads a block's words with one vload (2, 4, 8 or 16 words:
  `vload4` of int for a 4-bit block of 32, 16 bytes; two vload16 for an 8-bit block of 128)
  instead of a word at a time, so the S items of a column read S neighbouring 16-byte (or
  larger) chunks: coalesced, and one load instruction per block instead of `words`.
- `k_unroll` U: `#pragma unroll U` on the block loop, so that a work-item has up to U
  blocks' loads in flight (a GEMV is bandwidth-bound: it needs bytes in flight, not ALU).
- `tile_m` R: each work-item computes R rows of its column, dequantizing each weight once for
  all R (prefill: the weight bytes are read M / R times instead of M).
Rows past M (the last tile of a ragged M) read row M - 1 and are not stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from adreno_mlir.dialects.graph import QUANT_BITS
from adreno_mlir.lowering.kernel_builder import GLOBAL_I32, KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, work_group_sum
from adreno_mlir.lowering.kernels.matmul import pragma

QMATMUL_MAX_GROUP = 1024
"""The most work-items (k_split * cols_per_group) a work-group of the kernel may have (the
families' defaults stay within 256, which every profile's devices run)."""
MAGIC_BITS = 0x4B000000
"""The bits of 2^23 as an f32: or-ed with an integer q < 2^23 they are the float 2^23 + q."""
MAGIC = 8388608.0
"""2^23, subtracted (with the zero point) after `bits_as_float` to leave q - zp exactly."""
VLOAD_WORDS = 16
"""The widest vload of words (int16: 64 bytes); a block of more words takes several."""


@dataclass(frozen=True)
class QMatMulSpec(KernelSpec):
    m: int
    """Rows of A (its leading extents collapsed)."""
    n: int
    k: int
    bits: int
    block: int
    zero_points: bool
    k_parts: int = 1
    tile_rows: int = 1
    cols: int = 1
    """Output columns per work-group (`cols_per_group`)."""
    block_loads: bool = False
    """A block's words in one vload (`block_loads`)."""
    unroll: int = 0
    """`#pragma unroll N` on the block loop (`k_unroll`; 0: none)."""
    rms_norm: bool = False
    """A is RMS-normalized on the way in (`graph.matmul_nbits`' norm_scale, fuse-rms-norm): each
    A element is multiplied by its gamma as it is loaded, its square summed alongside the
    product, and the total scaled by 1 / sqrt(sum / K + norm_epsilon) before the epilogue."""
    norm_epsilon: float = 0.0
    interleaved: bool = False
    """W's words interleaved across the columns (`interleave`: the lowering repacks them to
    [blocks, words, N] and the scales and zero points to [blocks, N]), so neighbouring
    columns' work-items read neighbouring words: what a CPU's compiler turns into vector
    loads across its SIMD lanes, and coalesced loads on a GPU when k_split is 1."""

    def __post_init__(self):
        if self.bits not in QUANT_BITS:
            raise ValueError(f"bits must be one of {QUANT_BITS}, got {self.bits}")
        if self.block < 16 or self.block & (self.block - 1):
            raise ValueError(f"block_size must be a power of two >= 16, got {self.block}")
        if self.k_parts < 1 or self.k_parts & (self.k_parts - 1):
            raise ValueError(f"k_parts must be a power of two, got {self.k_parts}")
        if self.tile_rows not in (1, 2, 4, 8):
            raise ValueError(f"tile_rows must be 1, 2, 4 or 8, got {self.tile_rows}")
        if self.k_parts > 1 and self.tile_rows > 1:
            raise ValueError("k_parts > 1 (a GEMV's split) computes one row per work-item: tile_rows must be 1")
        if self.cols < 1 or self.cols & (self.cols - 1):
            raise ValueError(f"cols must be a power of two, got {self.cols}")
        if self.k_parts * self.cols > QMATMUL_MAX_GROUP:
            raise ValueError(f"k_parts * cols = {self.k_parts * self.cols} work-items per work-group; "
                             f"at most {QMATMUL_MAX_GROUP}")
        if self.interleaved and self.block_loads:
            raise ValueError("block_loads reads a block's words at once, which interleave puts N words apart")
        if self.unroll not in (0, 2, 4, 8):
            raise ValueError(f"unroll must be 0, 2, 4 or 8, got {self.unroll}")

    @property
    def blocks(self) -> int:
        return -(-self.k // self.block)

    @property
    def words(self) -> int:
        return self.block * self.bits // 32

    def base_name(self) -> str:
        zp = "_zp" if self.zero_points else ""
        split = "_ksplit" if self.k_parts > 1 else ""
        cols = f"_c{self.cols}" if self.cols > 1 else ""
        vload = "_vload" if self.block_loads and self.words > 1 else ""
        unroll = f"_u{self.unroll}" if self.unroll else ""
        rows = f"_r{self.tile_rows}" if self.tile_rows > 1 else ""
        rms = "_rms" if self.rms_norm else ""
        zp += "_il" if self.interleaved else ""
        return (f"qmatmul_q{self.bits}b{self.block}{zp}{rms}{split}{cols}{vload}{unroll}{rows}"
                f"{self.epilogue.suffix()}")

    def input_names(self) -> tuple[str, ...]:
        return ("a", "packed", "scales", *(("zero_points",) if self.zero_points else ()),
                *(("norm_scale",) if self.rms_norm else ()))

    def pointer_types(self):
        return {"packed": GLOBAL_I32}

    @property
    def group_items(self) -> int:
        return self.k_parts * self.cols

    def global_size(self) -> tuple[int, ...]:
        return (self.k_parts * self.cols * -(-self.n // self.cols), -(-self.m // self.tile_rows))

    def local_size(self) -> tuple[int, ...] | None:
        return (self.group_items, 1) if self.group_items > 1 else None

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, extras, out = self.split_args(args)
        a, packed, scales = ins[:3]
        zps = ins[3] if self.zero_points else None
        gamma = ins[-1] if self.rms_norm else None
        split, ncols = self.k_parts, self.cols
        scratch = kb.local_alloc(split * ncols, f32, "partial") if split > 1 and not self.rms_norm else None
        c: SSAValue | int = 0  # the column's place in its work-group
        if split > 1 and ncols > 1:
            lid = kb.local_id(0, "lid")
            s = kb.and_(lid, kb.i(split - 1), "s")
            c = kb.shr(lid, split.bit_length() - 1, "c")
            col = kb.add(kb.mul(kb.group_id(0), ncols), c, "col")
        elif split > 1:
            col, s = kb.group_id(0, "col"), kb.local_id(0, "s")
        else:
            col, s = kb.global_id(0, "col"), kb.i(0)
        # the last work-group's columns past N (N % C != 0) read column N - 1 and store nothing
        past_n = self.n % ncols != 0
        col_r = kb.min_i(col, self.n - 1) if past_n else col
        rid = kb.global_id(1, "rid")
        m, k, tr = self.m, self.k, self.tile_rows
        row0 = kb.mul(rid, tr, "row0") if tr > 1 else rid
        rows = [row0] + [kb.min_i(kb.add(row0, r), m - 1) if m % tr else kb.add(row0, r) for r in range(1, tr)]
        a_rows = [kb.mul(r, k) for r in rows]
        per = 32 // self.bits
        mask = (1 << self.bits) - 1
        vec = k % 4 == 0
        ragged = k % self.block != 0  # the last block's values past K are not read
        il = self.interleaved
        w_col = col_r if il else kb.mul(col_r, self.blocks * self.words, "w_col")
        s_col = col_r if il else kb.mul(col_r, self.blocks, "s_col")

        def block_scale_index(k1: KernelBuilder, b: SSAValue) -> SSAValue:
            return k1.add(k1.mul(b, self.n), s_col) if il else k1.add(s_col, b)

        def word_index(k1: KernelBuilder, b: SSAValue, j: int) -> SSAValue:
            if il:  # word j of block b of every column, then the next word
                return k1.add(k1.mul(k1.add(k1.mul(b, self.words), j), self.n), w_col)
            return k1.add(k1.add(w_col, k1.mul(b, self.words)), j)

        rms = self.rms_norm

        def block_step(k1: KernelBuilder, b: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            accs, squares = carried[:tr], list(carried[tr:])  # squares: sum of a^2 per row (rms_norm)
            k0 = k1.mul(b, self.block, "k0")
            scale = k1.load(scales, block_scale_index(k1, b), "scale")
            # q - zp as (2^23 + q) - (2^23 + zp): q's bits or-ed into 2^23's (`bits_as_float`), one
            # float add where a conversion would take a quarter or less of the float rate
            zp = (k1.fadd(k1.load(zps, block_scale_index(k1, b), "zp"), MAGIC) if zps is not None
                  else k1.f(MAGIC + float(2 ** (self.bits - 1))))
            parts: list[list[SSAValue]] = [[] for _ in range(tr)]  # per row, one partial sum per word
            wbase = k1.add(w_col, k1.mul(b, self.words))
            if self.block_loads and self.words > 1:
                # the block's words in one load (two vload16 for 32 words), all issued before any use
                width = min(self.words, VLOAD_WORDS)
                chunks = [k1.vload(packed, k1.add(wbase, i), width, "words")
                          for i in range(0, self.words, width)]
                words = [k1.lane(chunks[j // width], j % width) for j in range(self.words)]
            else:
                words = None
            for j in range(self.words):
                word = words[j] if words is not None else k1.load(packed, word_index(k1, b, j))
                values = []
                for i in range(per):
                    # an arithmetic shift (>> of a signed int): the mask drops the sign bits too
                    q = word if i == 0 else k1.shr(word, self.bits * i)
                    q = k1.or_(k1.and_(q, k1.i(mask)), k1.i(MAGIC_BITS))
                    values.append(k1.fsub(k1.bits_as_float(q), zp))
                kw = j * per  # this word's first k inside the block
                gammas = None
                if rms:  # gamma of each of this word's k, shared by the rows
                    gammas = []
                    for g in range(per // 4 if vec else per):
                        width = 4 if vec else 1
                        cond = [k1.cmp("slt", k1.add(k0, kw + width * g), k)] if ragged else []
                        valid = k1.all_of(cond)
                        gi = k1.add(k0, kw + width * g)
                        if valid is not None:
                            gi = k1.select(valid, gi, k1.i(0))
                        if vec:
                            gv = k1.vload(gamma, gi, 4)
                            gammas += [k1.lane(gv, t) for t in range(4)]
                        else:
                            gammas.append(k1.load(gamma, gi))

                def take(x: SSAValue, r: int, t: int) -> SSAValue:
                    """One A element into row r's sums: its square (rms_norm), then x * gamma."""
                    if not rms:
                        return x
                    squares[r] = k1.fma(x, x, squares[r])
                    return k1.fmul(x, gammas[t])

                sums = [k1.f(0.0)] * tr  # this word's products: independent chains, several in flight
                for r, ar in enumerate(a_rows):
                    base = k1.add(ar, k1.add(k0, kw))
                    if vec:
                        for g in range(per // 4):
                            cond = [k1.cmp("slt", k1.add(k0, kw + 4 * g), k)] if ragged else []
                            valid = k1.all_of(cond)
                            idx = k1.add(base, 4 * g)
                            if valid is not None:
                                idx = k1.select(valid, idx, k1.i(0))
                            av = k1.vload(a, idx, 4)
                            for t in range(4):
                                x = k1.lane(av, t)
                                if valid is not None:
                                    x = k1.select(valid, x, k1.f(0.0))
                                sums[r] = k1.fma(take(x, r, 4 * g + t), values[4 * g + t], sums[r])
                    else:
                        for t in range(per):
                            cond = [k1.cmp("slt", k1.add(k0, kw + t), k)] if ragged else []
                            x = k1.masked_load(a, k1.add(base, t), k1.all_of(cond))
                            sums[r] = k1.fma(take(x, r, t), values[t], sums[r])
                for r in range(tr):
                    parts[r].append(sums[r])
            totals = []
            for r in range(tr):  # the words' sums added as a tree
                level = parts[r]
                while len(level) > 1:
                    level = [k1.fadd(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                             for i in range(0, len(level), 2)]
                totals.append(level[0])
            return [k1.fma(totals[r], scale, accs[r]) for r in range(tr)] + squares

        carried = kb.for_(s, self.blocks, split, [kb.f(0.0)] * (tr * (2 if rms else 1)), block_step, "b",
                          unroll=pragma(self.unroll))
        accs, squares = carried[:tr], carried[tr:]

        def normalized(k1: KernelBuilder, total: SSAValue, square: SSAValue) -> SSAValue:
            """total / sqrt(sum of squares / K + epsilon): the RMS normalization of A's row."""
            return k1.fdiv(total, k1.sqrt(k1.fadd(k1.fmul(square, 1.0 / k), self.norm_epsilon)))

        def finish_rows(k1: KernelBuilder, totals: list[SSAValue]) -> None:
            for r in range(tr):
                row = k1.add(row0, r) if r else row0

                def store(k2: KernelBuilder, r: int = r, row: SSAValue = row) -> None:
                    v = self.epilogue.apply(k2, totals[r], [row, col], extras)
                    k2.store(v, out, k2.add(k2.mul(row, self.n), col))

                if m % tr and r:
                    k1.if_(k1.cmp("slt", row, m), store)
                else:
                    store(k1)

        inside = [kb.cmp("slt", col, self.n)] if past_n else []
        if split == 1:
            kb.guard(inside, lambda k1: finish_rows(k1, [normalized(k1, t, q) for t, q in zip(accs, squares)]
                                                    if rms else accs))
            return
        # column c's partial sums in slots c * S .. c * S + S - 1 (slot = lid)
        if rms:  # the product's and the squares' partial sums reduced together, as lanes of one float4
            zero = kb.f(0.0)
            both = kb.vec([accs[0], squares[0], zero, zero])
            scratch = kb.local_alloc(split * ncols, both.type, "partial")
            work_group_sum(kb, both, s, split,
                           lambda k1, total: finish_rows(k1, [normalized(k1, k1.lane(total, 0), k1.lane(total, 1))]),
                           scratch=scratch, offset=kb.mul(c, split), finish_if=inside)
            return
        work_group_sum(kb, accs[0], s, split, lambda k1, total: finish_rows(k1, [total]), scratch=scratch,
                       offset=kb.mul(c, split), finish_if=inside)
