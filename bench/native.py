#!/usr/bin/env python3
"""Host overhead per inference: the pyopencl launch path vs the native runtime (runtime/c).

    python bench/native.py [--models mobilenet_v2,...] [--plan texture] [--device nvidia]
                           [--repeat 50] [--rounds 5] [--json out.json]

For each model (weights materialized with seed 0) compiled once for the device, in one
process, with both launch paths open on the same program:

- **pyopencl (ms)**: median wall time of `cm.run(feeds, runtime="pyopencl")`: one pyopencl
  call per kernel (what every release before the native runtime did).
- **native (ms)**: median wall time of `cm.run(feeds)` through libadreno_rt (ctypes: one
  call per inference; inputs and outputs copied through pinned memory on discrete GPUs).
- **runner (ms)**: `adreno-run` on the saved artifact (the C program, no Python at all):
  its own median over --repeat runs.
- **device (ms)**: the sum of the kernels' times from OpenCL profiling events (median per
  launch), and **span**: first kernel start to last kernel end on the profiling queue
  (informational: on the H200 a profiling queue leaves gaps between kernels that an
  ordinary queue does not, so the span can exceed an unprofiled inference's wall time).
- **io (ms)**: median wall time of the input and output copies alone (`adreno_transfer`).
- **issue (ms)**: host time to enqueue one inference's launches (pyopencl: one Python call
  per kernel; native: the C loop), and **batched (ms)**: wall time per inference when many
  inferences' launches are issued back to back without copies (device-bound time, no
  events involved).
- **overhead**: wall - device - io, the host's share of an inference (the goal: <= 10% of
  device time). It is a difference of medians measured apart, so it can come out slightly
  negative where the host adds nothing measurable.

The two Python paths are timed in alternating rounds (`--rounds` x `--repeat` runs each)
so that clock and thermal drift affect both alike; the medians are over all runs.
Needs the native runtime built (`adreno-mlir build-native`, or ADRENO_MLIR_NATIVE_LIB).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
_path = list(sys.path)
from bench import ALL_MODELS, PLANS, materialized_path, shared_dir

sys.path[:] = _path


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def measure(name: str, path: Path, plan: dict, args, tmp: Path) -> dict:
    import numpy as np

    import adreno_mlir
    from adreno_mlir.runtime.device import write_intel_icd
    from adreno_mlir.runtime.native import runner_env, write_pocl_icd

    t = time.perf_counter()
    cm = adreno_mlir.compile(str(path), device=args.device, runtime="native", **plan)
    compile_s = time.perf_counter() - t
    feeds = {n: np.random.default_rng(0).standard_normal(cm.input_shapes[n]).astype(np.float32)
             for n in cm.input_names}
    arrays = [feeds[n] for n in cm.input_names]
    nat = cm.executable.native
    ref = cm.run(feeds, runtime="pyopencl")  # also creates pyopencl's memory and kernels
    got = cm.run(feeds)
    err = max(float(np.abs(got[k] - ref[k]).max()) / max(float(np.abs(ref[k]).max()), 1e-30) for k in ref)
    for _ in range(args.warmup):
        cm.run(feeds, runtime="pyopencl")
        cm.run(feeds)
        nat.transfer(arrays)
    py, na, io = [], [], []
    for _ in range(args.rounds):
        py += timed(lambda: cm.run(feeds, runtime="pyopencl"), args.repeat)
        na += timed(lambda: cm.run(feeds), args.repeat)
        io += timed(lambda: nat.transfer(arrays), args.repeat)
    # Host time to issue one inference's launches, and the device-bound time per inference
    # (launches of many inferences issued back to back, no copies): native, then pyopencl.
    native_issue, batched = zip(*(nat.measure_launches(args.repeat) for _ in range(args.rounds)))
    py_issue = []
    ex = cm.executable
    import pyopencl as cl

    for _ in range(args.rounds):
        ex.queue.finish()
        t = time.perf_counter()
        for _ in range(args.repeat):
            for launch in ex.launches:
                cl.enqueue_nd_range_kernel(ex.queue, launch.kernel, launch.global_size, launch.local_size)
        py_issue.append((time.perf_counter() - t) * 1e3 / args.repeat)
        ex.queue.finish()
    launch_ms, span = nat.profile(arrays, args.repeat)
    device = sum(launch_ms)
    runner = None
    if args.runner:
        art = cm.save(tmp / f"{name}.adreno")
        env = runner_env()  # with pyopencl's ICD loader where the system has none
        icd = (write_pocl_icd(tmp / "icd") if "portable" in cm.device_name.lower()
               else write_intel_icd(tmp / "icd") if "intel" in cm.device_name.lower() else None)
        if icd is not None:
            env["OCL_ICD_VENDORS"] = str(icd)
        device_arg = ["--device", args.device] if args.device else []
        if "nvidia" in cm.device_name.lower() and not args.device:
            device_arg = ["--device", "nvidia"]
        proc = subprocess.run([str(args.runner), str(art), "--repeat", str(args.repeat * args.rounds),
                               "--warmup", str(args.warmup), *device_arg], env=env, capture_output=True,
                              text=True, check=False, timeout=1200)
        found = re.search(r"latency: median ([0-9.]+) ms", proc.stdout)
        if found:
            runner = float(found.group(1))
        else:
            log(f"  adreno-run failed: {proc.stderr.strip()[-500:]}")
    row = {
        "model": name, "plan": cm.plan, "device_name": cm.device_name, "compile_s": round(compile_s, 3),
        "launches": len(cm.launch_plan.launches), "io_mode": nat.io_mode,
        "pyopencl_ms": statistics.median(py), "native_ms": statistics.median(na), "runner_ms": runner,
        "device_ms": device, "span_ms": span, "io_ms": statistics.median(io), "max_rel_err_native_vs_pyopencl": err,
        "batched_ms": statistics.median(batched), "native_issue_ms": statistics.median(native_issue),
        "pyopencl_issue_ms": statistics.median(py_issue),
    }
    for key in ("pyopencl", "native"):
        over = row[f"{key}_ms"] - device - row["io_ms"]
        row[f"{key}_overhead_ms"] = over
        row[f"{key}_overhead_pct"] = 100 * over / device if device else None
    if runner is not None:
        row["runner_overhead_pct"] = 100 * (runner - device - row["io_ms"]) / device if device else None
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ALL_MODELS))
    ap.add_argument("--plan", default=None, choices=sorted(PLANS),
                    help="a bench.py plan (default: the compiler's default plan for the device)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runner", default=None, help="adreno-run to time too (default: next to the library)")
    ap.add_argument("--no-runner", action="store_true")
    ap.add_argument("--shared", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--table", default=None, metavar="JSON", help="only print the table of a saved --json file")
    args = ap.parse_args()
    if args.table:
        print_table(json.loads(Path(args.table).read_text())["rows"])
        return 0
    from adreno_mlir.runtime.native import library_path

    lib = library_path()
    if lib is None:
        log("the native runtime is not built: adreno-mlir build-native (or set ADRENO_MLIR_NATIVE_LIB)")
        return 1
    if args.no_runner:
        args.runner = None
    elif args.runner is None:
        args.runner = lib.parent / "adreno-run"
    plan = PLANS[args.plan] if args.plan else {}
    shared = shared_dir(args.shared)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in [m for m in args.models.split(",") if m]:
            log(f"{name} ...")
            try:
                rows.append(measure(name, materialized_path(shared, name, args.seed), plan, args, Path(tmp)))
            except Exception as e:  # noqa: BLE001 - a benchmark reports and goes on
                log(f"  {name} failed: {type(e).__name__}: {e}")
                rows.append({"model": name, "error": f"{type(e).__name__}: {e}"})
            if args.json:
                Path(args.json).write_text(json.dumps({"rows": rows, "repeat": args.repeat, "rounds": args.rounds},
                                                      indent=1))
    print_table(rows)
    return 0 if all("error" not in r for r in rows) else 1


def print_table(rows: list[dict]) -> None:
    """The Markdown table of `rows` (overheads recomputed from the stored medians)."""
    for r in rows:
        if "error" in r:
            continue
        for key in ("pyopencl", "native", "runner"):
            wall = r.get(f"{key}_ms")
            if wall is not None and r["device_ms"]:
                r[f"{key}_overhead_pct"] = 100 * (wall - r["device_ms"] - r["io_ms"]) / r["device_ms"]
    ok = [r for r in rows if "error" not in r]
    if ok:
        print(f"device: {ok[0]['device_name']}; plan: {ok[0]['plan']}; io: {ok[0]['io_mode']}")
    print("(overhead = (wall - device - io) / device; issue = host time to enqueue one inference's launches; "
          "batched = device-bound time per inference)")
    print("| model | launches | device ms | batched ms | io ms | pyopencl ms | native ms | adreno-run ms "
          "| overhead pyopencl | overhead native | overhead adreno-run | issue pyopencl ms | issue native ms "
          "| native/pyopencl |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | error: {r['error'][:80]} |")
            continue
        run = f"{r['runner_ms']:.3f}" if r["runner_ms"] is not None else "-"
        run_pct = f"{r['runner_overhead_pct']:.1f}%" if r.get("runner_overhead_pct") is not None else "-"
        batched = f"{r['batched_ms']:.3f}" if "batched_ms" in r else "-"
        issue = (f"{r['pyopencl_issue_ms']:.3f} | {r['native_issue_ms']:.3f}" if "native_issue_ms" in r
                 else "- | -")
        print(f"| {r['model']} | {r['launches']} | {r['device_ms']:.3f} | {batched} | {r['io_ms']:.3f} "
              f"| {r['pyopencl_ms']:.3f} | {r['native_ms']:.3f} | {run} | {r['pyopencl_overhead_pct']:.1f}% "
              f"| {r['native_overhead_pct']:.1f}% | {run_pct} | {issue} | {r['native_ms'] / r['pyopencl_ms']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
