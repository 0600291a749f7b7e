#!/usr/bin/env python3
"""Learned defaults against the rules and against tuning, on models the cost model never saw.

    python bench/learned_defaults.py --models /tmp/m/vit_b_32.onnx,/tmp/m/levit_128s.onnx \
        --cost-model adreno_mlir/tuning/cost_models/nvidia-h200.json [--tune 2 --budget-s 30] \
        [--searches guided,tpe] [--device nvidia] [--json out.json]

Per model, three compiles of the default plan (the target's; textures on GPUs):
  rules    select-kernel-config's rules (cost_model=None, no database: what users got before);
  learned  the same with the cost model choosing each kernel's configuration;
  tuned    (the first `--tune` models) `adreno-mlir tune --budget-s` into a fresh database,
           then compiled with it; one tuned variant per `--searches` entry: `guided` (the
           search ordered by the `--cost-model` artifact: quick tuning) and `tpe` (no cost
           model: Optuna's TPE / exhaustive per signature), e.g. to compare the two at the
           same budget (`tuned_guided`, `tuned_tpe`; a single entry is just `tuned`).
Device time is the sum of the OpenCL event times of one inference (median of `--rounds`
rounds of `--repeat` profiled runs), the variants measured in turn within each round so that
a drift of the device moves all alike. Outputs of every variant are compared with the rules'
(relative max error). Ends with a Markdown table and geomeans: learned/rules and learned/tuned.
A model the cost model was trained on says nothing about it: pass models absent from the
corpus the artifact lists (`training_models` in the artifact; the script warns on overlap).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def feeds_for(cm, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    bounds = {t.name: t.bound for t in cm.launch_plan.inputs if t.dtype == "i32"}
    return {n: (rng.integers(0, bounds[n], cm.input_shapes[n]).astype(np.int64) if n in bounds
                else rng.standard_normal(cm.input_shapes[n]).astype(np.float32)) for n in cm.input_names}


def measure_variants(cms: dict, feeds: dict, rounds: int, repeat: int) -> dict:
    """`{V_err, V_ms}` per compiled variant V: the max error of its first output relative to
    the first variant's, and its device time (the median over `rounds` of its summed
    OpenCL event times, `repeat` profiled runs each), the variants measured in turn."""
    rec: dict = {}
    outs = {v: next(iter(cm.run(feeds).values())) for v, cm in cms.items()}
    ref = next(iter(outs.values()))
    for v, o in outs.items():
        rec[f"{v}_err"] = float(np.abs(o - ref).max() / max(float(np.abs(ref).max()), 1e-30))
    times = {v: [] for v in cms}
    for _ in range(rounds):
        for v, cm in cms.items():
            times[v].append(sum(cm.profile(feeds, repeat=repeat).values()))
    for v in cms:
        rec[f"{v}_ms"] = float(np.median(times[v]))
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="comma-separated .onnx paths (weights filled)")
    ap.add_argument("--cost-model", required=True, help="the cost-model artifact (JSON)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--tune", type=int, default=0, help="tune the first N models too (default 0)")
    ap.add_argument("--budget-s", type=float, default=30.0, help="tuning budget per model")
    ap.add_argument("--searches", default="guided", help="comma list of tuning searches: guided, tpe")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--limit-s", type=float, default=None, help="start no model after this many seconds")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import adreno_mlir
    from adreno_mlir.tuning.tuner import tune

    from adreno_mlir.errors import AdrenoError, read_json

    trained = set(read_json(args.cost_model, AdrenoError).get("training_models", []))
    start = time.perf_counter()
    rows = []
    for i, path in enumerate(args.models.split(",")):
        name = Path(path).stem
        if args.limit_s is not None and time.perf_counter() - start > args.limit_s:
            log(f"[{name}] skipped: past --limit-s")
            continue
        if name in trained:
            log(f"[{name}] WARNING: the cost model was trained on this model; its row is not a held-out one")
        rec: dict = {"model": name, "held_out": name not in trained}
        try:
            # rules: no cost model (compile()'s default is the shipped one, i.e. learned)
            variants = {"rules": {"cost_model": None}, "learned": {"cost_model": args.cost_model}}
            searches = [x.strip() for x in args.searches.split(",") if x.strip()]
            # every other model tunes in the other order: the first run also fills the
            # program cache of the default compile, which the second then finds warm
            order = searches if i % 2 == 0 else searches[::-1]
            for search in order if i < args.tune else ():
                if search not in ("guided", "tpe"):
                    raise SystemExit(f"unknown --searches entry {search!r} (guided, tpe)")
                v = "tuned" if len(searches) == 1 else f"tuned_{search}"
                db = Path(tempfile.mkdtemp(prefix="adreno-learned-")) / "tune.db"
                t = time.perf_counter()
                rep = tune(path, str(db), device=args.device, budget_s=args.budget_s, progress=False, log=log,
                           trials=64, cost_model=args.cost_model if search == "guided" else None)
                rec[f"{v}_tune_s"] = time.perf_counter() - t
                rec[f"{v}_tuner_gain"] = rep.untuned_ms / rep.tuned_ms if rep.tuned_ms else None
                rec[f"{v}_rounds"] = rep.rounds
                rec[f"{v}_predicted"] = rep.predicted_speedup
                rec[f"{v}_kernel_gain"] = rep.kernel_speedup
                log(f"[{name}] {v}: tuner gain x{rec[f'{v}_tuner_gain']:.3f} in {rep.rounds} rounds"
                    + (f", predicted x{rep.predicted_speedup:.3f}" if rep.predicted_speedup else ""))
                variants[v] = {"tuning_db": str(db)}
            cms = {}
            for v, opts in variants.items():
                t = time.perf_counter()
                cms[v] = adreno_mlir.compile(path, device=args.device, **opts)
                rec[f"{v}_compile_s"] = time.perf_counter() - t
            rec.update(measure_variants(cms, feeds_for(cms["rules"], 1), args.rounds, args.repeat))
            log(f"[{name}] device ms: " + ", ".join(f"{v} {rec[f'{v}_ms']:.4f}" for v in cms))
        except Exception as e:  # one model's failure is a row, not the end of the run
            rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"[{name}] error: {rec['error']}")
        rows.append(rec)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))

    tuned_names = sorted({k[:-3] for r in rows for k in r if k.startswith("tuned") and k.endswith("_ms")})
    head = "".join(f" {v} ms |" for v in tuned_names) + "".join(f" learned/{v} |" for v in tuned_names)
    print(f"\n| model | held out | rules ms | learned ms |{head} learned/rules | max err |")
    print("|---|---|---:|---:|" + "---:|" * (2 * len(tuned_names)) + "---:|---:|")
    lr, lt = [], {v: [] for v in tuned_names}
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['held_out']} | error: {r['error'][:80]} |")
            continue
        lr.append(r["learned_ms"] / r["rules_ms"])
        cells = ""
        for v in tuned_names:
            cells += f" {r[f'{v}_ms']:.4f} |" if r.get(f"{v}_ms") else " - |"
        for v in tuned_names:
            if r.get(f"{v}_ms"):
                lt[v].append(r["learned_ms"] / r[f"{v}_ms"])
                cells += f" {lt[v][-1]:.3f} |"
            else:
                cells += " - |"
        err = max(v for k, v in r.items() if k.endswith("_err"))
        print(f"| {r['model']} | {r['held_out']} | {r['rules_ms']:.4f} | {r['learned_ms']:.4f} |{cells} "
              f"{lr[-1]:.3f} | {err:.1e} |")

    def geo(x):
        return math.exp(sum(map(math.log, x)) / len(x)) if x else float("nan")

    print(f"\ngeomean learned/rules {geo(lr):.3f} over {len(lr)} models; "
          + "; ".join(f"learned/{v} {geo(x):.3f} over {len(x)}" for v, x in lt.items()))
    for v in tuned_names:
        gains = [r[f"{v}_tuner_gain"] for r in rows if r.get(f"{v}_tuner_gain")]
        print(f"{v}: the tuner's own untuned/tuned check, geomean x{geo(gains):.3f} over {len(gains)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
