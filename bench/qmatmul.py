#!/usr/bin/env python3
"""Quantized matrix products (`graph.matmul_nbits`, com.microsoft MatMulNBits) on the device:
the decode GEMV (one row) and a prefill product, against the memory-bandwidth floor and
PyTorch's fp16 matmul (cuBLAS, the same shape with an fp16 W) in the same run.

    python bench/qmatmul.py [--repeat 20] [--json out.json] [--bandwidth-gbps 4800]
                            [--sweep quick|full] [--shapes mlp,lm_head]

Per shape (rows, K, N, bits, block): the device time of our kernel (OpenCL events, median of
--repeat) with the default schedule and with the schedules of the qgemm family's keys
(lowering/families/qgemm.py):

- `words S`: the word-at-a-time kernel (k_split S, one column per work-group, block_loads 0:
  the schedule before block loads, for comparison);
- `S x C` (+ `uU`): block_loads 1, k_split S, cols_per_group C (S * C <= 256), k_unroll U
  (quick: the rule's unroll for that S; full: 0 and 4 as well, and more S and C);
- prefill: the default (tile_m 4) with and without block loads.

For each: the bytes it must read (packed weights, scales, A), the achieved fraction of
--bandwidth-gbps (the H200's 4.8 TB/s by default) and the error against the first
schedule's output. The first line is the event floor: the median device time of a
one-element Relu kernel, the least any launch takes on this device (a GEMV of 1.5 MB is
0.3 us at 4.8 TB/s, likely below it: compare times with it, not only with the floor).
The best schedule per shape is printed last, as an override entry for a tuning file.
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
    ("0.5B mlp up decode block 128", 1, 1024, 5632, 4, 128),
    ("0.5B mlp up prefill 64", 64, 1024, 5632, 4, 32),
]

SWEEPS = {  # k_split, cols_per_group, k_unroll (None: the rule's for that k_split)
    "quick": ((4, 8, 16, 32), (1, 4, 8, 16), (None,)),
    "full": ((2, 4, 8, 16, 32, 64), (1, 2, 4, 8, 16, 32), (None, 0, 4)),
}


def schedules(rows: int, k: int, block: int, sweep: str) -> list[tuple[str, dict | None]]:
    """(label, override) pairs: the default first (None)."""
    out: list[tuple[str, dict | None]] = [("default", None)]
    if rows > 1:
        return out + [("tile_m 4, block loads", {"tile_m": 4, "k_split": 1, "block_loads": 1})]
    blocks = -(-k // block)
    out += [(f"words {s}", {"k_split": s, "tile_m": 1, "cols_per_group": 1, "block_loads": 0, "k_unroll": 0})
            for s in (8, 32, 128) if s <= blocks]
    splits, cols, unrolls = SWEEPS[sweep]
    for s in splits:
        if s > blocks:
            continue
        for c in cols:
            if s * c > 256:
                continue
            for u in unrolls:
                cfg = {"k_split": s, "tile_m": 1, "cols_per_group": c, "block_loads": 1}
                if u is not None:
                    cfg["k_unroll"] = u
                out.append((f"{s} x {c}" + ("" if u is None else f" u{u}"), cfg))
    return out


def event_floor_ms(repeat: int) -> float:
    """The median device time of a one-element Relu: the per-launch floor of the events."""
    import adreno_mlir
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "floor",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    cm = adreno_mlir.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    return sum(cm.profile({"x": np.ones(1, np.float32)}, repeat=repeat, by="node").values())


def main(argv=None):
    import adreno_mlir

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--bandwidth-gbps", type=float, default=4800.0)
    ap.add_argument("--sweep", choices=sorted(SWEEPS), default="quick")
    ap.add_argument("--shapes", default="", help="comma-separated substrings of the shape names to run (default: all)")
    args = ap.parse_args(argv)
    floor = event_floor_ms(args.repeat)
    print(f"event floor (one-element Relu): {floor:.4f} ms", flush=True)
    result = {"event_floor_ms": floor, "sweep": args.sweep, "shapes": []}
    wanted = [w.strip() for w in args.shapes.split(",") if w.strip()]
    for name, rows, k, n, bits, block in SHAPES:
        if wanted and not any(w in name for w in wanted):
            continue
        model = nbits_model((rows,), k, n, bits, block)
        a = np.random.default_rng(1).standard_normal((rows, k)).astype(np.float32)
        nbytes = n * k * bits // 8 + n * (-(-k // block)) * 4 + rows * k * 4 + rows * n * 4
        floor_ms = nbytes / (args.bandwidth_gbps * 1e9) * 1e3
        row = {"shape": name, "rows": rows, "k": k, "n": n, "bits": bits, "block": block, "bytes": nbytes,
               "floor_ms": floor_ms, "torch_fp16_ms": torch_matmul_ms((rows, k), (k, n), args.repeat, dtype="float16"),
               "ours": {}}
        ref = None
        for label, cfg in schedules(rows, k, block, args.sweep):
            try:
                cm = adreno_mlir.compile(model, overrides=None if cfg is None else {"loc:act": cfg})
                out = cm.run({"A": a})["y"]
                ref = out if ref is None else ref
                prof = cm.profile({"A": a}, repeat=args.repeat, by="node")
                ms = sum(prof.values())
                kernels = [line.split("(")[0].split()[-1] for line in cm.source.splitlines() if "__kernel" in line]
                row["ours"][label] = {"ms": ms, "of_bandwidth": floor_ms / ms, "config": cfg,
                                      "err_vs_default": float(np.abs(out - ref).max() / np.abs(ref).max()),
                                      "kernels": kernels}
                print(f"{name} [{label}]: {ms:.4f} ms, {floor_ms / ms:.0%} of {args.bandwidth_gbps:.0f} GB/s"
                      f" (floor {floor_ms:.4f} ms; torch fp16 {row['torch_fp16_ms']}; {kernels[0]})", flush=True)
            except Exception as e:  # noqa: BLE001 - keep the other rows
                row["ours"][label] = {"error": f"{type(e).__name__}: {e}"[:300], "config": cfg}
                print(f"{name} [{label}]: {e}", flush=True)
        timed = {lb: r for lb, r in row["ours"].items() if "ms" in r}
        if timed:
            best = min(timed, key=lambda lb: timed[lb]["ms"])
            row["best"] = best
            print(f"{name}: best [{best}] {timed[best]['ms']:.4f} ms (default {timed.get('default', {}).get('ms')}); "
                  f"override: {json.dumps({'loc:act': timed[best]['config']})}", flush=True)
        result["shapes"].append(row)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
