#!/usr/bin/env python3
"""The CPU panel schedule of the matrix products (gemm family `tile_n` 8 / 16 without
local_tile, MatMulSpec._panel_body) as plain OpenCL C, swept over its register tile and
its work order on a CPU OpenCL device, against numpy's result.

    python bench/cpu_gemm_panels.py [--device pocl] [--shapes 50x768x3072,197x768x768]
                                    [--tiles 4x16,6x16,4x8,2x16,8x8] [--repeat 8] [--json out.json]

A schedule is (MR, NR, order): each work-item computes MR rows by NR columns as NR / 8
float8 accumulators per row, per K step loading its B row segment as float8s and each
row's A element once, broadcast; `rows` order puts the row tiles along dimension 0 and a
whole column panel in one work-group (what the compiler emits: a CPU runtime runs a
work-group's items one after another on one core, so the panel of B is read from memory
once), `cols` the column panels along dimension 0 with the driver's work-groups. Kernels
are printed as the compiler prints them for CPUs: `#pragma OPENCL FP_CONTRACT OFF` and
multiply-adds as `a * b + c` (fma=split); `--contract` drops the pragma (the compiler may
then fuse them), `--fma` writes fma() calls (PoCL's fma() is a library call: slow), `--mad` mad() calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def source(m: int, k: int, n: int, mr: int, nr: int, order: str, contract: bool, fma: bool | str) -> str:
    nv = nr // 8
    decl = "\n    ".join(f"float8 c{r}_{v} = (float8)(0.0f);" for r in range(mr) for v in range(nv))
    rows = "\n    ".join(f"const int r{r} = min(row0 + {r}, {m - 1});" for r in range(mr))
    loads = "\n        ".join(f"const float8 b{v} = *((__global const float8*)(B + k * {n} + col0 + {8 * v}));"
                               for v in range(nv))
    body = []
    for r in range(mr):
        body.append(f"const float8 a{r} = (float8)(A[r{r} * {k} + k]);")
        body += [f"c{r}_{v} = {fma}(a{r}, b{v}, c{r}_{v});" if fma else f"c{r}_{v} = a{r} * b{v} + c{r}_{v};"
                 for v in range(nv)]
    stores = []
    for r in range(mr):
        for v in range(nv):
            st = f"*((__global float8*)(C + (row0 + {r}) * {n} + col0 + {8 * v})) = c{r}_{v};"
            stores.append(f"if (row0 + {r} < {m}) {st}" if m % mr else st)
    ids = ("const int rb = get_global_id(0); const int cb = get_global_id(1);" if order == "rows" else
           "const int cb = get_global_id(0); const int rb = get_global_id(1);")
    body_text = "\n        ".join(body)
    stores_text = "\n    ".join(stores)
    return ("" if contract else "#pragma OPENCL FP_CONTRACT OFF\n") + f"""
__kernel void gemm(__global const float* A, __global const float* B, __global float* C) {{
    {ids}
    const int row0 = rb * {mr}; const int col0 = cb * {nr};
    {rows}
    {decl}
    for (int k = 0; k < {k}; ++k) {{
        {loads}
        {body_text}
    }}
    {stores_text}
}}
"""


def run(ctx, m, k, n, mr, nr, order, args) -> dict:
    import pyopencl as cl

    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    prg = cl.Program(ctx, source(m, k, n, mr, nr, order, args.contract,
                                 "fma" if args.fma else "mad" if args.mad else False)).build()
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * m * n)
    row_tiles = -(-m // mr)
    gsz, lsz = ((row_tiles, n // nr), (row_tiles, 1)) if order == "rows" else ((n // nr, row_tiles), None)
    times = []
    for _ in range(args.repeat + 2):
        e = prg.gemm(queue, gsz, lsz, *bufs, out)
        e.wait()
        times.append((e.profile.end - e.profile.start) * 1e-6)
    got = np.empty((m, n), np.float32)
    cl.enqueue_copy(queue, got, out)
    queue.finish()
    ref = a @ b
    ms = statistics.median(times[2:])
    return {"m": m, "k": k, "n": n, "mr": mr, "nr": nr, "order": order, "ms": ms,
            "gflops": 2 * m * n * k / ms / 1e6, "err": float(np.abs(got - ref).max() / np.abs(ref).max())}


def main(argv=None) -> int:
    import pyopencl as cl

    from adreno_mlir.runtime.device import find_device

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="pocl")
    ap.add_argument("--shapes", default="50x768x3072,50x3072x768,197x768x768,128x256x1024")
    ap.add_argument("--tiles", default="4x16,6x16,4x8,2x16,8x8")
    ap.add_argument("--orders", default="rows,cols")
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--contract", action="store_true", help="no FP_CONTRACT OFF pragma")
    ap.add_argument("--fma", action="store_true", help="fma() calls instead of a * b + c")
    ap.add_argument("--mad", action="store_true", help="mad() calls instead of a * b + c")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    dev = find_device(args.device)
    ctx = cl.Context([dev])
    print(f"device: {dev.name.strip()} ({dev.platform.name.strip()})", file=sys.stderr)
    rows = []
    for shape in args.shapes.split(","):
        m, k, n = map(int, shape.split("x"))
        for tile in args.tiles.split(","):
            mr, nr = map(int, tile.split("x"))
            if n % nr or nr % 8:
                continue
            for order in args.orders.split(","):
                r = run(ctx, m, k, n, mr, nr, order, args)
                rows.append(r)
                print(f"{m}x{k}x{n} {mr}x{nr} {order}: {r['ms']:.3f} ms, {r['gflops']:.1f} GFLOP/s, "
                      f"err {r['err']:.1e}", file=sys.stderr, flush=True)
    print("| M x K x N | tile | order | ms | GFLOP/s |")
    print("|---|---|---|---:|---:|")
    for r in rows:
        print(f"| {r['m']}x{r['k']}x{r['n']} | {r['mr']}x{r['nr']} | {r['order']} | {r['ms']:.3f} | {r['gflops']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": dev.name.strip(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
