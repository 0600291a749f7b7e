#!/usr/bin/env python3
"""Device time per kernel family, to compare two compiler trees on the same machine.

    PYTHONPATH=<tree> python bench/kernel_times.py --models resnet18,mobilenet_v2 \
        --plans nchw,texture --device nvidia --json after.json
    python bench/kernel_times.py --compare before.json after.json

The first form compiles each model with whatever `adreno_mlir` is importable (so one
script measures both the old and the new tree) and records OpenCL event times per
kernel (`CompiledModel.profile`: median over --repeat runs, summed over launches) and
the model's total device time. The second form prints, per kernel family (the kernel
name up to its first `_`: conv3x3, dwconv3x3, winograd, maxpool3x3, ...), the summed
device time of both runs and their ratio, over all models and plans measured in both,
and the per-model totals. Issue 8 asks that no family gets slower beyond noise when
kernels keep their loops as loops.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

_path = list(sys.path)
from bench import ALL_MODELS, PLANS, materialized_path, shared_dir

# bench.py puts this repository first on sys.path; restored, so that PYTHONPATH picks the
# compiler tree to measure (an older checkout for a before/after comparison).
sys.path[:] = _path


def family(kernel: str) -> str:
    return kernel.split("_", 1)[0]


def measure(args) -> dict:
    import onnx

    import adreno_mlir

    out = {"models": {}, "device": None}
    shared = shared_dir(args.shared)
    for name in args.models.split(","):
        path = materialized_path(shared, name, 0)
        model = onnx.load(str(path))
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        feeds = {model.graph.input[0].name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
        for plan in args.plans.split(","):
            t = time.perf_counter()
            try:
                cm = adreno_mlir.compile(str(path), device=args.device, **PLANS[plan])
            except Exception as e:  # noqa: BLE001 - report and go on with the next plan
                print(f"{name} {plan}: compile failed: {e}", file=sys.stderr)
                continue
            compile_s = time.perf_counter() - t
            cm.run(feeds)
            runs = [cm.profile(feeds, repeat=1) for _ in range(args.repeat)]
            per_kernel = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            totals = [sum(r.values()) for r in runs]
            out["device"] = cm.device_name
            out["models"][f"{name}/{plan}"] = {
                "kernels": per_kernel, "total_ms": statistics.median(totals), "compile_s": compile_s}
            print(f"{name:28s} {plan:13s} device {statistics.median(totals):8.3f} ms  compile {compile_s:.2f} s",
                  file=sys.stderr, flush=True)
            if args.json:  # after every model, so a run cut short keeps what it measured
                Path(args.json).write_text(json.dumps(out, indent=1))
    return out


def compare(before: dict, after: dict, threshold: float) -> int:
    common = sorted(set(before["models"]) & set(after["models"]))
    fam_b: dict[str, float] = {}
    fam_a: dict[str, float] = {}
    for key in common:
        kb, ka = before["models"][key]["kernels"], after["models"][key]["kernels"]
        for k in set(kb) & set(ka):
            f = family(re.sub(r"_\d+$", "", k))
            fam_b[f] = fam_b.get(f, 0.0) + kb[k]
            fam_a[f] = fam_a.get(f, 0.0) + ka[k]
    print(f"device: before {before.get('device')}, after {after.get('device')}")
    print("\n| kernel family | before ms | after ms | after/before |\n|---|---:|---:|---:|")
    slower = 0
    for f in sorted(fam_b, key=lambda f: -fam_b[f]):
        r = fam_a[f] / fam_b[f] if fam_b[f] else float("nan")
        mark = " **slower**" if r > 1 + threshold else ""
        slower += bool(mark)
        print(f"| {f} | {fam_b[f]:.3f} | {fam_a[f]:.3f} | {r:.3f}{mark} |")
    print("\n| model/plan | before ms | after ms | after/before | compile before s | compile after s |")
    print("|---|---:|---:|---:|---:|---:|")
    for key in common:
        b, a = before["models"][key], after["models"][key]
        print(f"| {key} | {b['total_ms']:.3f} | {a['total_ms']:.3f} | {a['total_ms'] / b['total_ms']:.3f} "
              f"| {b['compile_s']:.2f} | {a['compile_s']:.2f} |")
    return slower


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ALL_MODELS))
    ap.add_argument("--plans", default="nchw,buffer4c,texture,texture-fp16")
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--shared", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--threshold", type=float, default=0.05, help="relative slow-down flagged (default 0.05)")
    args = ap.parse_args(argv)
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        compare(before, after, args.threshold)
        return 0
    result = measure(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
