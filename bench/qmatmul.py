#!/usr/bin/env python3
"""Quantized matrix products (`graph.matmul_nbits`, com.microsoft MatMulNBits) on the device:
the decode GEMV (one row) and a prefill product, against the memory-bandwidth floor and
PyTorch's fp16 matmul (cuBLAS, the same shape with an fp16 W) in the same run.

    python bench/qmatmul.py [--repeat 20] [--json out.json] [--bandwidth-gbps 4800]

Per shape (rows, K, N, bits, block): the device time of our kernel (OpenCL events, median of
--repeat) with the default schedule and with `k_split` 8 ... 128 (the GEMV's work-items per
output column), the bytes it must read (packed weights, scales, A) and the achieved fraction
of --bandwidth-gbps (the H200's 4.8 TB/s by default).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR.parent), str(BENCH_DIR)]

from bench import torch_matmul_ms  # noqa: E402
from tests.test_matmul_nbits import nbits_model  # noqa: E402

SHAPES = [  # (name, rows, K, N, bits, block)
    ("0.5B qkv decode", 1, 1024, 3072, 4, 32),
    ("0.5B mlp up decode", 1, 1024, 5632, 4, 32),
    ("0.5B mlp down decode", 1, 2816, 1024, 4, 32),
    ("0.5B lm_head decode", 1, 1024, 32000, 4, 32),
    ("0.5B mlp up decode 8-bit", 1, 1024, 5632, 8, 32),
    ("0.5B mlp up prefill 64", 64, 1024, 5632, 4, 32),
]


def main(argv=None):
    import adreno_mlir

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--bandwidth-gbps", type=float, default=4800.0)
    args = ap.parse_args(argv)
    rows_out = []
    for name, rows, k, n, bits, block in SHAPES:
        model = nbits_model((rows,), k, n, bits, block)
        a = np.random.default_rng(1).standard_normal((rows, k)).astype(np.float32)
        nbytes = n * k * bits // 8 + n * (-(-k // block)) * 4 + rows * k * 4 + rows * n * 4
        floor_ms = nbytes / (args.bandwidth_gbps * 1e9) * 1e3
        row = {"shape": name, "rows": rows, "k": k, "n": n, "bits": bits, "block": block, "bytes": nbytes,
               "floor_ms": floor_ms, "torch_fp16_ms": torch_matmul_ms((rows, k), (k, n), args.repeat, dtype="float16"), "ours": {}}
        ref = None
        for split in ("default", 8, 16, 32, 64, 128):
            if split != "default" and rows > 1:
                continue
            try:
                cm = adreno_mlir.compile(model, overrides=None if split == "default" else
                                         {"loc:act": {"k_split": split, "tile_m": 1}})
                out = cm.run({"A": a})["y"]
                ref = out if ref is None else ref
                prof = cm.profile({"A": a}, repeat=args.repeat, by="node")
                ms = sum(prof.values())
                cfg = [line for line in cm.source.splitlines() if "__kernel" in line]
                row["ours"][str(split)] = {"ms": ms, "of_bandwidth": floor_ms / ms,
                                           "err_vs_default": float(np.abs(out - ref).max() / np.abs(ref).max()),
                                           "kernels": [c.split("(")[0].split()[-1] for c in cfg]}
                print(f"{name} k_split={split}: {ms:.4f} ms, {floor_ms / ms:.0%} of {args.bandwidth_gbps:.0f} GB/s"
                      f" (floor {floor_ms:.4f} ms; torch fp16 {row['torch_fp16_ms']})", flush=True)
            except Exception as e:  # noqa: BLE001 - keep the other rows
                row["ours"][str(split)] = {"error": f"{type(e).__name__}: {e}"[:300]}
                print(f"{name} k_split={split}: {e}", flush=True)
        rows_out.append(row)
        if args.json:
            Path(args.json).write_text(json.dumps(rows_out, indent=1))


if __name__ == "__main__":
    main()
