#!/usr/bin/env python3
"""Tuned against untuned against a peer, per model: what `adreno-mlir tune` buys.

    python bench/tune.py --models resnet18,mobilenet_v2 --plans nchw --device pocl \
        --compare onnxruntime --trials 12 --db /tmp/tune.db --json out.json
    python bench/tune.py --models resnet50 --plans texture --device nvidia --compare torch ...

Per model and plan: the tuning run (`adreno_mlir.tuning.tune`: wall seconds, rounds,
failed candidates, its own untuned/tuned device time check), then bench.py's
measurement of the untuned and the tuned compile in the same process against the peer
(onnxruntime on the CPU, or PyTorch eager and CUDA-graph replay with TF32 off): wall
latency (median), device time (OpenCL events, summed), and the ratios. Ends with a
Markdown table and the geometric-mean tuned/untuned speed-up.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from bench import PLANS, bench_model, log, make_peer, materialized_path, shared_dir, time_calls


def untuned_vs_tuned(path, args, variants) -> dict:
    """No peer (the next models' PyTorch twins live in bench/transformers.py): our two
    compiles on the same inputs, wall and device time, error of tuned against untuned."""
    import numpy as np

    import adreno_mlir

    row = {"peer_ms": None, "variants": []}
    ref = None
    for vname, plan in variants:
        cm = adreno_mlir.compile(str(path), device=args.device, **plan)
        rng = np.random.default_rng(args.seed + 1)
        bounds = {t.name: t.bound for t in cm.launch_plan.inputs if t.dtype == "i32"}
        feeds = {n: (rng.integers(0, bounds[n], cm.input_shapes[n]).astype(np.int64) if n in bounds
                     else rng.standard_normal(cm.input_shapes[n]).astype(np.float32)) for n in cm.input_names}
        times, out = time_calls(lambda cm=cm, feeds=feeds: cm.run(feeds), args.warmup, args.repeat)
        first = next(iter(out.values()))
        ref = first if ref is None else ref
        prof = cm.profile(feeds, repeat=5)
        err = float(np.abs(first - ref).max() / max(float(np.abs(ref).max()), 1e-30))
        row["variants"].append({"variant": vname, "ms": float(np.median(times)), "device_ms": sum(prof.values()),
                                "max_rel_err": err, "ok": err <= 1e-4, "error": None,
                                "compile_s": cm.compile_seconds})
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--plans", default="nchw", help="one plan per model, or one per model as MODEL=PLAN entries")
    ap.add_argument("--device", default=None)
    ap.add_argument("--compare", default="onnxruntime", choices=["onnxruntime", "torch"],
                    help="the peer for the shared CNNs (the next models are compared with their untuned selves)")
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--budget-s", type=float, default=None, help="tuning budget per model")
    ap.add_argument("--tune-repeat", type=int, default=10)
    ap.add_argument("--db", default="tune-bench.db")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--devices", default=None, help="comma list: one tuning worker per device")
    ap.add_argument("--ray", action="store_true")
    ap.add_argument("--skip-tune", action="store_true", help="only measure (the database is already tuned)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--shared", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ort-threads", type=int, default=None)
    args = ap.parse_args(argv)
    args.profile, args.tol, args.tol_fp16 = 3, 1e-3, 5e-2
    shared = shared_dir(args.shared)
    from adreno_mlir.tuning.tuner import format_report, tune

    peer = make_peer(args.compare, args.ort_threads)
    per_model = dict(e.split("=") for e in args.plans.split(",") if "=" in e)
    default_plan = next((e for e in args.plans.split(",") if "=" not in e), "nchw")
    rows = []
    for name in args.models.split(","):
        plan = per_model.get(name, default_plan)
        opts = {k: v for k, v in PLANS[plan].items() if k in ("textures", "layout", "precision")}
        nxt = (shared / "models" / "next" / f"{name}.onnx").exists()
        if nxt:  # transformers and newer CNNs (bench/transformers.py materializes them)
            from transformers import materialized

            path = materialized(shared, name)
        else:
            path = materialized_path(shared, name, args.seed)
        rec = {"model": name, "plan": plan}
        if not args.skip_tune:
            log(f"[{name}] tuning ({plan}, {args.trials} trials)")
            t = time.perf_counter()
            rep = tune(str(path), args.db, device=args.device, compile_options=opts, trials=args.trials,
                       budget_s=args.budget_s, repeat=args.tune_repeat, progress=False, workers=args.workers,
                       devices=args.devices.split(",") if args.devices else None, ray=args.ray, log=log)
            rec.update(tune_s=time.perf_counter() - t, rounds=rep.rounds, failures=rep.failures,
                       tuner_untuned_ms=rep.untuned_ms, tuner_tuned_ms=rep.tuned_ms, chosen=len(rep.chosen),
                       signatures=len(rep.signatures), workers=rep.workers)
            log(format_report(rep, top=8))
        variants = [("untuned", PLANS[plan]), ("tuned", {**PLANS[plan], "tuning_db": args.db})]
        row = untuned_vs_tuned(path, args, variants) if nxt else bench_model(name, args, shared, peer, variants)
        rec["peer_ms"], rec["peer_graph_ms"] = row["peer_ms"], row.get("peer_graph_ms")
        for v in row["variants"]:
            rec[v["variant"]] = {k: v.get(k) for k in ("ms", "device_ms", "max_rel_err", "error", "ok", "compile_s")}
        rows.append(rec)
        u, tu = rec["untuned"], rec["tuned"]
        if u.get("ms") and tu.get("ms"):
            log(f"[{name}] untuned {u['ms']:.3f} ms (device {u['device_ms']:.3f}), tuned {tu['ms']:.3f} ms "
                f"(device {tu['device_ms']:.3f}); peer {rec['peer_ms']} ms")
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    graph = args.compare == "torch"
    print(f"\n## tuned vs untuned vs {peer.label}\n")
    head = "| model | plan | tune s | untuned ms | tuned ms | tuned/untuned | untuned dev ms | tuned dev ms | peer ms |"
    head += " tuned/peer |" + (" graph ms | tuned/graph |" if graph else "")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    speedups, dev_speedups = [], []
    for r in rows:
        u, t = r.get("untuned", {}), r.get("tuned", {})
        if not (u.get("ms") and t.get("ms")):
            print(f"| {r['model']} | {r['plan']} | error: {u.get('error') or t.get('error')} |")
            continue
        speedups.append(u["ms"] / t["ms"])
        dev_speedups.append(u["device_ms"] / t["device_ms"])
        peer_ms = r["peer_ms"]
        line = (f"| {r['model']} | {r['plan']} | {r.get('tune_s', 0):.0f} | {u['ms']:.3f} | {t['ms']:.3f} | "
                f"{t['ms'] / u['ms']:.3f} | {u['device_ms']:.3f} | {t['device_ms']:.3f} | "
                + (f"{peer_ms:.3f} | {t['ms'] / peer_ms:.2f} |" if peer_ms else "- | - |"))
        if graph:
            g = r.get("peer_graph_ms")
            line += f" {g:.3f} | {t['ms'] / g:.2f} |" if g else " - | - |"
        print(line)
    if speedups:
        gm = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        gd = math.exp(sum(math.log(s) for s in dev_speedups) / len(dev_speedups))
        print(f"\ngeometric-mean speed-up tuned over untuned: wall x{gm:.3f}, device time x{gd:.3f} "
              f"({len(speedups)} models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
