#!/usr/bin/env python3
"""A sweep of GEMM schedules written as plain OpenCL C, against cuBLAS in the same run: the
measurements behind the gemm family's register-blocked local-memory tiles (`local_tile`,
`tile_m`/`tile_n` with it, `k_groups`; lowering/kernels/matmul.py).

    python bench/gemm_proto.py [--repeat 10] [--json out.json] [--only TEXT] [--quick]

A schedule is (BM, BN, BK, RM, RN, prefetch, KG): a BM x BN output tile per work-group of
(BN / RN) x (BM / RM) work-items, each RM x RN outputs in registers, read from BK-deep
slices of A (stored transposed, [BK][BM + 4]) and B ([BK][BN + 4]) in local memory with
float4 reads (a work-item's rows and columns are float4 groups spread over the tile, so
neighbouring work-items read neighbouring float4s); `prefetch` loads the next slices from
global memory into registers while the current ones are multiplied; KG > 1 splits K over
KG work-groups writing partial sums that a second kernel adds (both kernels timed).
Row-major A [M, K] and B [K, N], K % 4 == N % 4 == 0. Each schedule is checked against
numpy before it is timed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import torch_matmul_ms  # noqa: E402

SHAPES = [  # (name, M, K, N)
    ("distilbert qkv/out", 128, 768, 768),
    ("distilbert ffn up", 128, 768, 3072),
    ("distilbert ffn down", 128, 3072, 768),
    ("gpt2 qkv", 64, 768, 2304),
    ("gpt2 mlp down", 64, 3072, 768),
    ("whisper qkv", 1500, 384, 384),
    ("whisper ffn up", 1500, 384, 1536),
    ("whisper ffn down", 1500, 1536, 384),
    ("llama mlp", 64, 512, 1376),
    ("vit 197x768x768", 197, 768, 768),
    ("vit 197x768x3072", 197, 768, 3072),
    ("vit 50x768x2304", 50, 768, 2304),
    ("square 1024", 1024, 1024, 1024),
    ("square 2048", 2048, 2048, 2048),
]


def cdiv(a, b):
    return -(-a // b)


def groups(r: int, items: int) -> tuple[int, int]:
    """(vector width, groups): a work-item's r rows (or columns) as r / v groups of v
    neighbours, group g at g * items * v + id * v."""
    v = min(r, 4)
    return v, r // v


def source(cfg: dict, m: int, n: int, k: int) -> str:
    bm, bn, bk, rm, rn, pf, kg = (cfg[x] for x in ("bm", "bn", "bk", "rm", "rn", "pf", "kg"))
    wx, wy = bn // rn, bm // rm
    nt = wx * wy
    kc = cdiv(cdiv(k, kg), bk) * bk  # K per work-group along z
    tiles = kc // bk
    va, ga = groups(rm, wy)
    vb, gb = groups(rn, wx)
    la, lb = bm + 4, bn + 4
    na = cdiv(bm * bk // 4, nt)
    nb = cdiv(bk * bn // 4, nt)
    L = []
    w = L.append
    w(f"__kernel __attribute__((reqd_work_group_size({wx}, {wy}, 1)))")
    w("void gemm(__global const float* restrict A, __global const float* restrict B, __global float* restrict C) {")
    w(f"  __local float As[{bk * la}]; __local float Bs[{bk * lb}];")
    w("  const int tx = get_local_id(0), ty = get_local_id(1);")
    w(f"  const int tid = ty * {wx} + tx;")
    w(f"  const int row0 = get_group_id(1) * {bm}, col0 = get_group_id(0) * {bn};")
    w(f"  const int kbeg = get_group_id(2) * {kc};")
    w(f"  const int kend = min({k}, kbeg + {kc});")
    for i in range(rm):
        w("  float " + ", ".join(f"c{i}_{j} = 0.0f" for j in range(rn)) + ";")
    w("  float4 " + ", ".join([f"ra{i}" for i in range(na)] + [f"rb{i}" for i in range(nb)]) + ";")

    def load(t: str):
        for i in range(na):
            e = f"(tid + {i * nt})"
            cond = f"{e} < {bm * bk // 4}" if (bm * bk // 4) % nt else "1"
            w(f"  {{ int e = {e}; int mm = e / {bk // 4}, k4 = e % {bk // 4}; int gm = row0 + mm, gk = kbeg + ({t}) * {bk} + k4 * 4;")
            w(f"    ra{i} = ({cond} && gm < {m} && gk < kend) ? vload4(0, A + gm * {k} + gk) : (float4)(0.0f); }}")
        for i in range(nb):
            e = f"(tid + {i * nt})"
            cond = f"{e} < {bk * bn // 4}" if (bk * bn // 4) % nt else "1"
            w(f"  {{ int e = {e}; int kk = e / {bn // 4}, n4 = e % {bn // 4}; int gk = kbeg + ({t}) * {bk} + kk, gn = col0 + n4 * 4;")
            w(f"    rb{i} = ({cond} && gk < kend && gn < {n}) ? vload4(0, B + gk * {n} + gn) : (float4)(0.0f); }}")

    def store():
        for i in range(na):
            e = f"(tid + {i * nt})"
            guard = f"if ({e} < {bm * bk // 4}) " if (bm * bk // 4) % nt else ""
            w(f"  {guard}{{ int e = {e}; int mm = e / {bk // 4}, k4 = e % {bk // 4};")
            for j in range(4):
                w(f"    As[(k4 * 4 + {j}) * {la} + mm] = ra{i}.s{j};")
            w("  }")
        for i in range(nb):
            e = f"(tid + {i * nt})"
            guard = f"if ({e} < {bk * bn // 4}) " if (bk * bn // 4) % nt else ""
            w(f"  {guard}{{ int e = {e}; int kk = e / {bn // 4}, n4 = e % {bn // 4}; vstore4(rb{i}, 0, Bs + kk * {lb} + n4 * 4); }}")

    def compute():
        w(f"  #pragma unroll")
        w(f"  for (int kk = 0; kk < {bk}; kk++) {{")
        for g in range(ga):
            off = f"kk * {la} + {g * wy * va} + ty * {va}"
            if va == 1:
                w(f"    float a{g * va} = As[{off}];")
            else:
                w(f"    float{va} _a{g} = vload{va}(0, As + {off});")
                for j in range(va):
                    w(f"    float a{g * va + j} = _a{g}.s{j};")
        for g in range(gb):
            off = f"kk * {lb} + {g * wx * vb} + tx * {vb}"
            if vb == 1:
                w(f"    float b{g * vb} = Bs[{off}];")
            else:
                w(f"    float{vb} _b{g} = vload{vb}(0, Bs + {off});")
                for j in range(vb):
                    w(f"    float b{g * vb + j} = _b{g}.s{j};")
        for i in range(rm):
            for j in range(rn):
                w(f"    c{i}_{j} = fma(a{i}, b{j}, c{i}_{j});")
        w("  }")

    if pf:
        load("0")
        store()
        w("  barrier(CLK_LOCAL_MEM_FENCE);")
        w(f"  for (int t = 0; t < {tiles}; t++) {{")
        w(f"    if (t + 1 < {tiles}) {{")
        load("t + 1")
        w("    }")
        compute()
        w("    barrier(CLK_LOCAL_MEM_FENCE);")
        w(f"    if (t + 1 < {tiles}) {{")
        store()
        w("    barrier(CLK_LOCAL_MEM_FENCE); }")
        w("  }")
    else:
        w(f"  for (int t = 0; t < {tiles}; t++) {{")
        load("t")
        store()
        w("    barrier(CLK_LOCAL_MEM_FENCE);")
        compute()
        w("    barrier(CLK_LOCAL_MEM_FENCE);")
        w("  }")
    base = f"get_group_id(2) * {m * n} + " if kg > 1 else ""
    for i in range(rm):
        gi, ii = divmod(i, va)
        w(f"  {{ int row = row0 + {gi * wy * va} + ty * {va} + {ii};")
        w(f"    if (row < {m}) {{")
        for j in range(rn):
            gj, jj = divmod(j, vb)
            w(f"      {{ int col = col0 + {gj * wx * vb} + tx * {vb} + {jj}; if (col < {n}) C[{base}row * {n} + col] = c{i}_{j}; }}")
        w("    } }")
    w("}")
    if kg > 1:
        w("__kernel void ksum(__global const float* restrict P, __global float* restrict C) {")
        w("  const int i = get_global_id(0);")
        w(f"  if (i < {m * n}) {{ float s = P[i];")
        for z in range(1, kg):
            w(f"    s += P[i + {z * m * n}];")
        w("    C[i] = s; }")
        w("}")
    return "\n".join(L)


def configs(m, k, n, quick=False):
    tiles = [(32, 32, 2, 2), (32, 32, 4, 4), (64, 32, 4, 2), (32, 64, 2, 4), (64, 64, 4, 4), (64, 64, 8, 4),
             (128, 64, 8, 4), (64, 128, 4, 8), (128, 128, 8, 8), (128, 128, 8, 4), (16, 64, 2, 4), (64, 16, 4, 2)]
    for (bm, bn, rm, rn), bk, pf, kg in itertools.product(tiles, (16, 32), (0, 1), (1, 2, 4, 8)):
        wx, wy = bn // rn, bm // rm
        if wx * wy < 32 or wx * wy > 1024:
            continue
        if 4 * bk * (bm + bn + 8) > 48 * 1024:
            continue
        if kg > 1 and cdiv(k, kg) < 2 * bk:
            continue
        if bm > 2 * m and bm > 16:
            continue
        if quick and (bk, pf) != (16, 1):
            continue
        yield {"bm": bm, "bn": bn, "bk": bk, "rm": rm, "rn": rn, "pf": pf, "kg": kg}


def name(c):
    return f"{c['bm']}x{c['bn']}/{c['bk']} r{c['rm']}x{c['rn']} pf{c['pf']} kg{c['kg']}"


def main(argv=None):
    import pyopencl as cl

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true", help="BK 16 with prefetch only")
    ap.add_argument("--shapes", default="", help="M,K,N;M,K,N (instead of the list)")
    args = ap.parse_args(argv)
    import os

    platforms = cl.get_platforms()
    dev = cl.create_some_context(interactive=False).devices[0] if os.environ.get("PYOPENCL_CTX") else next((d for p in platforms for d in p.get_devices() if d.type & cl.device_type.GPU), None) \
        or next(d for p in platforms if "Portable" in p.name for d in p.get_devices())
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    print(f"device: {dev.name}", flush=True)
    shapes = [(f"{s}", *map(int, s.split(","))) for s in args.shapes.split(";")] if args.shapes else SHAPES
    rows = []
    rng = np.random.default_rng(0)
    for sname, m, k, n in shapes:
        if args.only not in sname:
            continue
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        mf = cl.mem_flags
        da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
        db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
        dc = cl.Buffer(ctx, mf.READ_WRITE, size=m * n * 4)
        dp = cl.Buffer(ctx, mf.READ_WRITE, size=8 * m * n * 4)
        cb = torch_matmul_ms((m, k), (k, n), args.repeat)
        row = {"shape": sname, "m": m, "k": k, "n": n, "cublas_ms": cb, "ours": {}}
        for c in configs(m, k, n, args.quick):
            try:
                prg = cl.Program(ctx, source(c, m, n, k)).build()
            except Exception as e:  # noqa: BLE001
                row["ours"][name(c)] = {"error": str(e)[:200]}
                continue
            grid = (cdiv(n, c["bn"]) * c["bn"] // c["rn"], cdiv(m, c["bm"]) * c["bm"] // c["rm"], c["kg"])
            local = (c["bn"] // c["rn"], c["bm"] // c["rm"], 1)

            gemm = cl.Kernel(prg, "gemm")
            gemm.set_args(da, db, dp if c["kg"] > 1 else dc)
            if c["kg"] > 1:
                ksum = cl.Kernel(prg, "ksum")
                ksum.set_args(dp, dc)

            def run():
                e1 = cl.enqueue_nd_range_kernel(q, gemm, grid, local)
                if c["kg"] > 1:
                    return e1, cl.enqueue_nd_range_kernel(q, ksum, (cdiv(m * n, 256) * 256,), (256,))
                return e1, e1

            run()
            q.finish()
            out = np.empty((m, n), np.float32)
            cl.enqueue_copy(q, out, dc)
            err = float(np.abs(out - ref).max() / np.abs(ref).max())
            if err > 1e-4:
                row["ours"][name(c)] = {"error": f"wrong: {err:.2e}"}
                print(f"{sname} {name(c)}: WRONG {err:.2e}", flush=True)
                continue
            times = []
            for _ in range(args.repeat):
                e1, e2 = run()
                e2.wait()
                times.append((e2.profile.end - e1.profile.start) * 1e-6)
            ms = statistics.median(times)
            row["ours"][name(c)] = {"ms": ms, **c}
        ok = {kk: v for kk, v in row["ours"].items() if "ms" in v}
        best = sorted(ok.items(), key=lambda kv: kv[1]["ms"])[:5]
        flops = 2 * m * n * k
        def show(kk, v):
            vs = f", x{v['ms'] / cb:.2f} cuBLAS" if cb else ""
            return f"{kk} {v['ms']:.4f} ({flops / v['ms'] / 1e6:.0f} GF/s{vs})"

        print(f"{sname} {m}x{k}x{n}: cuBLAS {cb and f'{cb:.4f}'} ms; best: " + "; ".join(show(*kv) for kv in best),
              flush=True)
        rows.append(row)
        if args.json:  # after every shape: a run cut short keeps what it measured
            Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
