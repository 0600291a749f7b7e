#!/usr/bin/env python3
"""Startup costs: compile time (split by phase), first inference vs steady state, load().

    python bench/startup.py [--models mobilenet_v2,resnet18] [--plans nchw] [--device pocl]
                            [--repeat 5] [--json out.json]

Two parts, both on the shared torchvision graphs (weights materialized with seed 0):

1. **compile() in one process.** The package is imported and the device opened first
   (a tiny compile), then each model is compiled `--repeat` times: the first compile of a
   model in the process, the median, and the median split into import / passes /
   lowering / print / program / setup (`CompiledModel.timings`).
2. **Startup in fresh processes**, with the driver's own caches off (PoCL:
   `POCL_KERNEL_CACHE=0`; NVIDIA: `CUDA_CACHE_DISABLE=1`; pyopencl's source cache:
   `PYOPENCL_NO_CACHE=1`), each scenario its own process:
   - `cold`: compile + first run with our program cache empty (a new folder);
   - `warm`: the same with our cache filled by `cold`;
   - `artifact`: `adreno_mlir.load()` of the artifact `cold` saved, + first run.
   Each reports compile or load time, program build time and cache outcome, first-run
   time, steady-state median and first/steady.

Run it with PYTHONPATH pointing at another tree to measure that tree (parts that tree
lacks, e.g. the artifact, are skipped). See docs/startup.md for results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

_path = list(sys.path)
from bench import PLANS, materialized_path, shared_dir

# bench.py puts this repository first on sys.path; restored, so that PYTHONPATH picks the
# compiler tree to measure (an older checkout for a before/after comparison).
sys.path[:] = _path

DRIVER_CACHE_OFF = {"POCL_KERNEL_CACHE": "0", "CUDA_CACHE_DISABLE": "1", "PYOPENCL_NO_CACHE": "1"}


def _feeds(m):
    import numpy as np

    name = m.input_names[0]
    return {name: np.random.default_rng(0).standard_normal(m.input_shapes[name]).astype(np.float32)}


def child(args) -> dict:
    """One startup scenario in this (fresh) process; prints a JSON line."""

    t0 = time.perf_counter()
    import adreno_mlir

    t_import = time.perf_counter() - t0
    t = time.perf_counter()
    if args.child == "artifact":
        m = adreno_mlir.load(args.artifact, device=args.device)
    else:
        kwargs = dict(PLANS[args.plan])
        import inspect

        from adreno_mlir import api

        if args.cache_dir and "cache" in inspect.signature(api.compile).parameters:
            kwargs["cache"] = args.cache_dir
        m = adreno_mlir.compile(args.model, device=args.device, **kwargs)
    t_ready = time.perf_counter() - t
    feeds = _feeds(m)
    t = time.perf_counter()
    m.run(feeds)
    first = time.perf_counter() - t
    steady = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        m.run(feeds)
        steady.append(time.perf_counter() - t)
    info = getattr(m, "build_info", None)
    out = {"scenario": args.child, "package_import_s": t_import, "ready_s": t_ready, "first_run_s": first,
           "steady_s": statistics.median(steady), "program_s": getattr(info, "seconds", None),
           "program_cache": getattr(info, "cache", None), "device": m.device_name}
    if args.child == "cold" and args.artifact and hasattr(m, "save"):
        m.save(args.artifact)
    print("RESULT " + json.dumps(out), flush=True)
    return out


def in_process(args, models: list[tuple[str, Path]]) -> list[dict]:
    import adreno_mlir

    shared = shared_dir(args.shared)
    adreno_mlir.compile(str(materialized_path(shared, "squeezenet1_1", 0)), device=args.device)  # open the device
    rows = []
    for name, path in models:
        for plan in args.plans.split(","):
            runs = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                cm = adreno_mlir.compile(str(path), device=args.device, **PLANS[plan])
                runs.append((time.perf_counter() - t, getattr(cm, "timings", {})))
            totals = [r[0] for r in runs]
            split = {k: statistics.median(r[1].get(k, 0.0) for r in runs) for k in runs[0][1]}
            row = {"model": name, "plan": plan, "first_s": totals[0], "median_s": statistics.median(totals),
                   "split": split}
            rows.append(row)
            print(f"compile {name:26s} {plan:12s} first {totals[0]:.2f} s  median {row['median_s']:.2f} s  "
                  + " ".join(f"{k} {v:.3f}" for k, v in split.items()), file=sys.stderr, flush=True)
    return rows


def fresh_processes(args, models: list[tuple[str, Path]]) -> list[dict]:
    rows = []
    for name, path in models:
        for plan in args.plans.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                cache, artifact = Path(tmp) / "programs", Path(tmp) / f"{name}.adreno"
                env = {**os.environ, **DRIVER_CACHE_OFF, "ADRENO_MLIR_CACHE_DIR": str(cache)}
                row = {"model": name, "plan": plan}
                for scenario in ("cold", "warm", "artifact"):
                    if scenario == "artifact" and not artifact.exists():
                        continue
                    cmd = [sys.executable, __file__, "--child", scenario, "--model", str(path), "--plan", plan,
                           "--repeat", str(args.repeat), "--cache-dir", str(cache), "--artifact", str(artifact)]
                    if args.device:
                        cmd += ["--device", args.device]
                    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
                    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
                    if line is None:
                        print(f"{name} {plan} {scenario}: failed\n{r.stderr[-2000:]}", file=sys.stderr)
                        continue
                    res = json.loads(line[7:])
                    row[scenario] = res
                    print(f"startup {name:26s} {plan:8s} {scenario:8s} ready {res['ready_s']:.2f} s "
                          f"(program {res['program_s'] or 0:.2f} s {res['program_cache']}) "
                          f"first run {res['first_run_s']:.3f} s  steady {res['steady_s']:.3f} s  "
                          f"first/steady {res['first_run_s'] / res['steady_s']:.1f}x", file=sys.stderr, flush=True)
                rows.append(row)
    return rows


def markdown(result: dict) -> str:
    lines = ["| model | plan | first compile s | median compile s | import | passes | lowering | print | program |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result.get("compile", []):
        s = r["split"]
        lines.append(f"| {r['model']} | {r['plan']} | {r['first_s']:.2f} | {r['median_s']:.2f} | "
                     + " | ".join(f"{s.get(k, float('nan')):.3f}" for k in ("import", "passes", "lowering", "print", "program"))
                     + " |")
    lines += ["", "| model | plan | scenario | compile/load s | program s (cache) | first run s | steady s | first/steady |",
              "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in result.get("startup", []):
        for sc in ("cold", "warm", "artifact"):
            if sc in r:
                x = r[sc]
                lines.append(f"| {r['model']} | {r['plan']} | {sc} | {x['ready_s']:.2f} | "
                             f"{x['program_s'] or 0:.3f} ({x['program_cache']}) | {x['first_run_s']:.3f} | "
                             f"{x['steady_s']:.3f} | {x['first_run_s'] / x['steady_s']:.1f}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v2,resnet18")
    ap.add_argument("--plans", default="nchw")
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shared", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--parts", default="compile,startup")
    ap.add_argument("--child", choices=("cold", "warm", "artifact"), help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--plan", default="nchw", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    ap.add_argument("--artifact", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    shared = shared_dir(args.shared)
    models = [(n, materialized_path(shared, n, 0)) for n in args.models.split(",")]
    result: dict = {}
    if "compile" in args.parts:
        result["compile"] = in_process(args, models)
    if "startup" in args.parts:
        result["startup"] = fresh_processes(args, models)
    print(markdown(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
