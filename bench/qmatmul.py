#!/usr/bin/env python3
"""Quantized matrix products (`graph.matmul_nbits`, com.microsoft MatMulNBits) on the device:
the decode GEMV (one row) and a prefill product, against the memory-bandwidth floor and
PyTorch's fp16 matmul (cuBLAS, the same shape with an fp16 W) in the same run.

    python bench/qmatmul.py [--repeat 20] [--json out.json] [--bandwidth-gbps 4800]
                            [--sweep quick|full] [--shapes mlp,lm_head] [--cold]

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

Each timing is also taken back to back (`--repeat` runs enqueued at once: the span from the
first start to the last end over the runs, without the event overhead of a lone launch).
Those are of one GEMV whose weights stay in the L2 cache (50 MB on the H200) from run to
run; `--cold` times the default and the best schedule again over enough copies of the
shape (each its own weights, 150 MB in all) that each GEMV reads DRAM, as in a decode step.
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
    # Llama-2-7B's decode GEMVs (hidden 4096, MLP 11008): enough bytes (8-28 MB) to stand above the event floor
    ("7B qkv decode", 1, 4096, 12288, 4, 32),
    ("7B mlp up decode", 1, 4096, 11008, 4, 32),
    ("7B mlp down decode", 1, 11008, 4096, 4, 32),
]

SWEEPS = {  # k_split, cols_per_group, k_unroll (None: the rule's for that k_split)
    "quick": ((4, 8, 16, 32), (1, 4, 8, 16), (None,)),
    "full": ((2, 4, 8, 16, 32, 64), (1, 2, 4, 8, 16, 32), (None, 0, 4)),
    "wide": ((1, 2, 4), (8, 16, 32, 64), (0, 2, 4)),  # few items per column, many columns a work-group
    "none": ((), (), ()),  # the default schedule only
}


def schedules(rows: int, k: int, block: int, sweep: str) -> list[tuple[str, dict | None]]:
    """(label, override) pairs: the default first (None)."""
    out: list[tuple[str, dict | None]] = [("default", None)]
    if rows > 1:
        return out + [("tile_m 4, block loads", {"tile_m": 4, "k_split": 1, "block_loads": 1})]
    blocks = -(-k // block)
    if sweep == "none":
        return out
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
    if sweep == "wide":  # W repacked so that neighbouring columns read neighbouring words, a column an item
        out += [(f"interleaved x {c} u{u}", {"k_split": 1, "tile_m": 1, "cols_per_group": c, "block_loads": 0,
                                             "interleave": 1, "k_unroll": u}) for c in (32, 64) for u in (0, 4)]
    return out


def copies_model(rows: int, k: int, n: int, bits: int, block: int, copies: int):
    """`copies` MatMulNBits of one shape reading one A, each with its own (random) packed
    weights and scales: run in turn, each finds the others' bytes in the L2 cache, not its
    own, as in a decoder's step (the H200's 50 MB L2 would otherwise hold a lone GEMV's
    weights from one timed run to the next)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    blocks = -(-k // block)
    inits, nodes, outs = [], [], []
    for c in range(copies):
        inits += [numpy_helper.from_array(rng.integers(0, 256, (n, blocks, block * bits // 8), dtype=np.uint8), f"B{c}"),
                  numpy_helper.from_array((rng.random(n * blocks, dtype=np.float32) * 0.02), f"S{c}")]
        nodes.append(helper.make_node("MatMulNBits", ["A", f"B{c}", f"S{c}"], [f"y{c}"], domain="com.microsoft",
                                      name=f"mm{c}", K=k, N=n, bits=bits, block_size=block))
        outs.append(helper.make_tensor_value_info(f"y{c}", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "copies", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [rows, k])], outs,
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def cold(rows, k, n, bits, block, cfg, nbytes, floor_ms, args) -> dict:
    """One schedule's GEMV with its weights out of the L2 cache: per GEMV of `copies_model`
    (at least 150 MB of weights in all), the median event time and the time of the runs
    back to back (no host in between: the event overhead left out)."""
    import adreno_mlir

    copies = max(2, -(-150_000_000 // nbytes))
    model = copies_model(rows, k, n, bits, block, copies)
    over = None if cfg is None else {f"loc:mm{c}": cfg for c in range(copies)}
    cm = adreno_mlir.compile(model, overrides=over)
    a = np.random.default_rng(1).standard_normal((rows, k)).astype(np.float32)
    st, en = cm.executable.profile_events([a], repeat=args.repeat)
    event_ms = float(np.median((en - st) * 1e-6, axis=0).mean())
    st, en = cm.executable.profile_events([a], repeat=args.repeat, back_to_back=True)
    b2b_ms = float(en[-1, -1] - st[0, 0]) * 1e-6 / (args.repeat * copies)
    out = {"copies": copies, "event_ms": event_ms, "of_bandwidth_event": floor_ms / event_ms,
           "back_to_back_ms": b2b_ms, "of_bandwidth_back_to_back": floor_ms / b2b_ms, "config": cfg}
    print(f"  cold ({copies} copies, {cfg or 'default'}): event {event_ms:.4f} ms ({floor_ms / event_ms:.0%} of the "
          f"bandwidth), back to back {b2b_ms:.4f} ms ({floor_ms / b2b_ms:.0%}; {nbytes / b2b_ms * 1e-6:.0f} GB/s)",
          flush=True)
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
    ap.add_argument("--cold", action="store_true",
                    help="also time the default and the best schedule with the weights out of the L2 cache")
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
                st, en = cm.executable.profile_events([a], repeat=args.repeat, back_to_back=True)
                b2b_ms = float(en[-1, -1] - st[0, 0]) * 1e-6 / args.repeat
                kernels = [line.split("(")[0].split()[-1] for line in cm.source.splitlines() if "__kernel" in line]
                row["ours"][label] = {"ms": ms, "of_bandwidth": floor_ms / ms, "config": cfg,
                                      "back_to_back_ms": b2b_ms, "of_bandwidth_back_to_back": floor_ms / b2b_ms,
                                      "err_vs_default": float(np.abs(out - ref).max() / np.abs(ref).max()),
                                      "kernels": kernels}
                print(f"{name} [{label}]: {ms:.4f} ms, {floor_ms / ms:.0%} of {args.bandwidth_gbps:.0f} GB/s; back to "
                      f"back {b2b_ms:.4f} ms, {floor_ms / b2b_ms:.0%}"
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
        if timed and args.cold:
            cold_runs = [("default", None)] + ([(row["best"], timed[row["best"]]["config"])]
                                               if row["best"] != "default" else [])
            for label, cfg in cold_runs:
                row.setdefault("cold", {})[label] = cold(rows, k, n, bits, block, cfg, nbytes, floor_ms, args)
        result["shapes"].append(row)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
