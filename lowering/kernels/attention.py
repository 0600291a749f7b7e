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
from adreno_mlir.lowering.kernels.common import KernelSpec, numel, work_group_allsum

BLOCK = 4
"""Keys (scores) and output columns a work-item computes per loop step."""

MAX_KEYS = 4096
"""The most keys (L) a row may have: its scores take L floats of local memory (16 KiB)."""


@dataclass(frozen=True)
class AttentionSpec(KernelSpec):
    """out[b, m, :] = softmax_j(scale * sum_d Q[b, m, d] K[b, d, j] + bias[b, m, j]) V[b, j, :].

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
    items: int = 1
    offsets: tuple[int, int, int] = (0, 0, 0)
    """Element offsets of Q, K and V in their buffers (graph.attention's views: the three
    read from one projection)."""
    out_strides: tuple[int, ...] | None = None
    """Element strides of the output over (batch..., m, dv) (graph.attention's out_perm);
    None: contiguous."""

    def __post_init__(self):
        if self.items < 1 or self.items & (self.items - 1):
            raise ValueError(f"items must be a power of two, got {self.items}")
        if self.keys > MAX_KEYS:
            raise ValueError(f"{self.keys} keys exceed the {MAX_KEYS} a row's local scores may hold")

    def base_name(self) -> str:
        return "attention" + ("_bias" if self.bias_strides is not None else "") + (
            f"_wg{self.items}" if self.items > 1 else "")

    def input_names(self) -> tuple[str, ...]:
        return ("q", "k", "v") + (("bias",) if self.bias_strides is not None else ())

    @property
    def rows(self) -> int:
        return max(1, numel(self.batch)) * self.m

    def global_size(self) -> tuple[int, ...]:
        return (self.items, self.rows)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, _, out = self.split_args(args)
        q, k, v = ins[:3]
        bias = ins[3] if self.bias_strides is not None else None
        nb = len(self.batch)
        scores = kb.local_alloc(self.keys, f32, "scores")  # kernel scope, declared first
        grouped = self.items > 1
        r = kb.global_id(1, "r")
        lid = kb.local_id(0, "l") if grouped else kb.i(0)
        step = self.items
        z, m = (kb.div(r, self.m, "z"), kb.rem(r, self.m, "m")) if self.m > 1 else (r, kb.i(0))
        bc = kb.unravel(z, self.batch) if nb else []

        def base(strides: tuple[int, ...], row_stride: int | None) -> SSAValue:
            coords = [*bc, *([m] if row_stride is not None else [])]
            return kb.linear(coords, (*strides[:nb], *([row_stride] if row_stride is not None else [])))

        q_ms, q_ds = self.q_strides[nb:]
        k_ds, k_js = self.k_strides[nb:]
        v_js, v_cs = self.v_strides[nb:]
        q0 = base(self.q_strides, q_ms)
        k0 = base(self.k_strides, None)
        v0 = base(self.v_strides, None)
        q0, k0, v0 = (kb.add(b, o) if o else b for b, o in zip((q0, k0, v0), self.offsets))
        b0 = base(self.bias_strides, self.bias_strides[nb]) if self.bias_strides is not None else None

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
