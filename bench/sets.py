#!/usr/bin/env python3
"""Our default compile's device time against PyTorch's CUDA-graph replay, per model set (issue 30).

    python bench/sets.py [--sets graphs,next,timm] [--models squeezenet1_1,mixnet_s,...]
                         [--device nvidia|pocl] [--jobs N] [--rounds R] [--json out.json]

Sets: `graphs` (the ten torchvision CNNs of shared/models/graphs), `next` (shared/models/next:
vit_b_32, swin_t, tiny_bert, efficientnet_v2_s), `timm` (shared/models/timm, file names are
timm model names). Per model:

1. the weight-less graph is materialized once (seeded weights, as bench.py / transformers.py do);
2. our default plan is compiled twice: `cost_model="auto"` (learned defaults, the default) and
   `cost_model=None` (the rules); both outputs are compared with onnxruntime CPU on the same
   seeded input (max |ours - ort| / max |ort|, flagged above --tol);
3. our device time (the sum of the OpenCL event times of one inference, `cm.profile`) and the
   wall time of `cm.run`, the two variants measured in turn over --rounds rounds (medians);
4. the PyTorch twin, fp32 with TF32 off: eager and CUDA-graph replay (bench.TorchPeer), medians.
   Twins: graphs = torch_models.build_torch_model (same weights), next = transformers.torch_twin,
   timm = timm.create_model(name, pretrained=False) (random weights: latency only). Without
   torch or CUDA the peer is skipped with a message and our two variants still run.

With --jobs N > 0 the compiles of a set run first in N worker processes (each saves an
artifact, `CompiledModel.save`), then the main process loads each artifact and measures the
models one by one with the CPU otherwise idle. Compile seconds are then those of a worker
(N compiles at a time). --jobs 0 compiles inline.

Prints a Markdown table per set (learned, rules and CUDA-graph ms and their ratios) and per set
the geomean and max of learned/graph and rules/graph (issue 30's target: geomean <= 1.2, none
above 2.0). A model that fails is a row with its error. --json writes everything (after every
model, so a run stopped by a time limit keeps what it measured).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import importlib.util
import json
import math
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
for _p in (str(REPO), str(BENCH_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import torch_models  # noqa: E402

import bench  # noqa: E402

# bench/transformers.py under another name, so that Hugging Face's `transformers` stays importable.
_spec = importlib.util.spec_from_file_location("bench_transformers", BENCH_DIR / "transformers.py")
bench_transformers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_transformers)
# bench/ off the path from now on (it is there as the script's folder): `import transformers`
# inside timm or torch must find the library, not bench/transformers.py.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]

log = bench.log
SETS = ("graphs", "next", "timm")
VARIANTS = (("learned", "auto"), ("rules", None))
"""(name, cost_model argument of adreno_mlir.compile)."""
T0 = time.perf_counter()


def say(msg: str) -> None:
    log(f"[{time.perf_counter() - T0:6.1f}s] {msg}")


def set_models(shared: Path, name: str) -> list[str]:
    if name == "graphs":
        return list(bench.ALL_MODELS)
    if name == "next":
        return list(bench_transformers.MODELS)
    return sorted(p.stem for p in (shared / "models" / "timm").glob("*.onnx"))


def materialized(shared: Path, set_name: str, name: str, seed: int) -> Path:
    """The model with seeded weights, cached: graphs and next through bench.py's and
    transformers.py's caches, timm alike (keyed by graph hash and seed)."""
    if set_name == "graphs":
        return bench.materialized_path(shared, name, seed)
    if set_name == "next":
        if seed != 0:
            raise ValueError("next: transformers.materialized fills weights with seed 0 only")
        return bench_transformers.materialized(shared, name)
    graph = shared / "models" / set_name / f"{name}.onnx"
    if not graph.exists():
        raise FileNotFoundError(f"{graph} not found (set --shared or ADRENO_SHARED)")
    digest = hashlib.sha256(graph.read_bytes()).hexdigest()[:12]
    out = bench.CACHE_DIR / f"{name}-{set_name}-seed{seed}-{digest}.onnx"
    if not out.exists():
        models_dir = str(shared / "models")
        if models_dir not in sys.path:
            sys.path.insert(0, models_dir)
        from materialize import materialize

        bench.CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(materialize(str(graph), seed=seed).SerializeToString())
        os.replace(tmp, out)
    return out


def seeded_feeds(model, seed: int) -> dict[str, np.ndarray]:
    """standard_normal with seed+1 for float inputs (as bench.py; transformers.py's rng(1) at
    seed 0), token ids in [0, 1000) for int64 ones."""
    import onnx

    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed + 1)
    feeds = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            feeds[i.name] = rng.integers(0, 1000, shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


# ------------------------------------------------------------------------------------------
# Compiling (inline, or in worker processes that save artifacts)
# ------------------------------------------------------------------------------------------


def compile_facts(cm, seconds: float) -> dict:
    plan = getattr(cm, "compile_plan", None)
    build = getattr(cm, "build_info", None)
    return {
        "compile_s": float(getattr(cm, "compile_seconds", 0.0) or seconds),
        "timings": dict(getattr(cm, "timings", {}) or {}),
        "plan": getattr(cm, "plan", ""),
        "cost_model_used": Path(plan.cost_model).name if plan is not None and plan.cost_model else "",
        "device": cm.device_name,
        "runtime": cm.runtime,
        "build": str(build) if build is not None else None,
        "launches": len(cm.launch_plan.launches),
    }


def compile_job(path: str, device: str | None, cost_model, out_dir: str, target: str = "auto") -> dict:
    """Worker: compile and save the artifact; its facts (or the error)."""
    try:
        import adreno_mlir

        t0 = time.perf_counter()
        cm = adreno_mlir.compile(path, device=device, cost_model=cost_model, target=target)
        facts = compile_facts(cm, time.perf_counter() - t0)
        facts["artifact"] = str(cm.save(out_dir))
        return facts
    except Exception as e:  # noqa: BLE001 - reported as the variant's error
        return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}


class Compiler:
    """A set's compiles, started at once in a process pool (--jobs > 0) or done on demand inline."""

    def __init__(self, args, pool, jobs: list[tuple[str, str, Path]]):
        self.args = args
        self.pool = pool
        self.futures: dict[tuple[str, str], cf.Future] = {}
        self.tmp = Path(tempfile.mkdtemp(prefix="adreno-sets-"))
        if pool is not None:
            # Biggest graphs first: the longest compiles start first.
            for model, set_name, path in sorted(jobs, key=lambda j: -j[2].stat().st_size):
                for vname, cost_model in VARIANTS:
                    out = self.tmp / f"{model}-{vname}.adreno"
                    self.futures[(model, vname)] = self.pool.submit(compile_job, str(path), args.device,
                                                                    cost_model, str(out), args.target)

    def wait_all(self, deadline: float) -> None:
        """Wait until every compile is done (or the deadline passes): the measurements run on an idle CPU."""
        if not self.futures:
            return
        pending = [f for f in self.futures.values() if not f.done()]
        say(f"compiling {len(self.futures)} variants in {self.pool._max_workers} workers")
        while pending:
            left = deadline - time.perf_counter()
            if left <= 0:
                say(f"{len(pending)} compiles not finished by the time limit")
                return
            finished, pending = cf.wait(pending, timeout=min(left, 30), return_when=cf.FIRST_COMPLETED)
            if finished:
                say(f"compiled {len(self.futures) - len(pending)}/{len(self.futures)}")

    def get(self, model: str, path: Path, vname: str, cost_model, deadline: float):
        """(compiled or loaded model, facts); raises with the compile's error."""
        import adreno_mlir

        if self.pool is None:
            t0 = time.perf_counter()
            cm = adreno_mlir.compile(str(path), device=self.args.device, cost_model=cost_model,
                                     target=self.args.target)
            return cm, compile_facts(cm, time.perf_counter() - t0)
        fut = self.futures[(model, vname)]
        try:
            facts = fut.result(timeout=max(0.0, deadline - time.perf_counter()))
        except cf.TimeoutError:
            raise TimeoutError("compile not finished within the time limit (--limit-s)") from None
        if "error" in facts:
            raise RuntimeError(facts["error"] + "\n" + facts.get("traceback", ""))
        t0 = time.perf_counter()
        cm = adreno_mlir.load(facts["artifact"], device=self.args.device)
        facts["load_s"] = time.perf_counter() - t0
        return cm, facts

    def close(self) -> None:
        for f in self.futures.values():
            f.cancel()
        shutil.rmtree(self.tmp, ignore_errors=True)


def stop_pool(pool) -> None:
    """Shut the worker pool down; a compile still running past the time limit: stop the workers we started."""
    if pool is None:
        return
    procs = list((pool._processes or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()


# ------------------------------------------------------------------------------------------
# The PyTorch twin
# ------------------------------------------------------------------------------------------


def make_torch_peer():
    """bench.TorchPeer (fp32, TF32 off), or None with a message when torch or CUDA is missing."""
    try:
        peer = bench.TorchPeer()
    except torch_models.TorchUnavailable as e:
        say(f"no PyTorch peer: {e}; measuring our two variants only")
        return None
    except Exception as e:  # noqa: BLE001
        say(f"no PyTorch peer: {type(e).__name__}: {e}; measuring our two variants only")
        return None
    return peer


def torch_twin(set_name: str, name: str, model):
    import torch

    if set_name == "graphs":
        return torch_models.build_torch_model(name, model, device="cuda")
    if set_name == "next":
        return bench_transformers.torch_twin(name).eval().to("cuda")
    import timm

    return timm.create_model(name, pretrained=False).eval().to(torch.device("cuda"))


def measure_torch(peer, set_name, name, model, feeds, args, row) -> None:
    torch = peer.torch
    net = None
    try:
        net = torch_twin(set_name, name, model)
        eager, out = peer.measure((net, None), feeds, args.warmup, args.torch_repeat)
        row["torch_eager_ms"] = statistics.median(eager)
        graph = getattr(peer, "graph_times", None)
        row["torch_graph_ms"] = statistics.median(graph) if graph else None
        if set_name == "graphs":  # same weights as ours: the twin's output is a check of the twin
            row["torch_out"] = out["__single__"]
        if not graph:
            row["torch_error"] = "CUDA graph capture failed (see log)"
    except Exception as e:  # noqa: BLE001 - no twin: our figures still count
        row["torch_error"] = f"{type(e).__name__}: {e}"
        say(f"[{name}] PyTorch twin failed: {row['torch_error']}")
        log(traceback.format_exc())
    finally:
        del net
        peer.graph_times = None
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------------
# One model
# ------------------------------------------------------------------------------------------


def bench_one(set_name, name, path, args, peer, compiler, deadline) -> dict:
    import onnx
    import onnxruntime as ort

    row: dict = {"set": set_name, "model": name, "variants": {}}
    model = onnx.load(str(path))
    feeds = seeded_feeds(model, args.seed)
    row["input_shapes"] = {k: list(v.shape) for k, v in feeds.items()}

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ort_names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(ort_names, sess.run(ort_names, feeds)))
    del sess
    say(f"[{name}] onnxruntime reference done")

    if peer is not None:
        measure_torch(peer, set_name, name, model, feeds, args, row)
        if "torch_out" in row:
            row["torch_vs_ort_err"] = bench.max_rel_err(row.pop("torch_out"), ref[ort_names[0]])
        say(f"[{name}] torch eager {bench.fmt(row.get('torch_eager_ms'), '.3f')} ms, "
            f"CUDA graph {bench.fmt(row.get('torch_graph_ms'), '.3f')} ms")
    del model

    cms = {}
    for vname, cost_model in VARIANTS:
        v = row["variants"][vname] = {}
        try:
            say(f"[{name}] {vname}: {'compiling' if compiler.pool is None else 'loading the artifact'}")
            cm, facts = compiler.get(name, path, vname, cost_model, deadline)
            v.update(facts)
            out = cm.run(feeds)
            pairs = [(out[k], ref[k]) if k in ref else (out[k], ref[ort_names[i]])
                     for i, k in enumerate(cm.output_names)]
            v["max_rel_err"] = max(bench.max_rel_err(a, b) for a, b in pairs)
            v["ok"] = v["max_rel_err"] <= args.tol
            cms[vname] = cm
            say(f"[{name}] {vname}: compiled in {v['compile_s']:.2f}s ({v['cost_model_used'] or 'rules'}), "
                f"{v['launches']} launches, max rel err {v['max_rel_err']:.2e}{'' if v['ok'] else ' (ABOVE TOL)'}")
        except Exception as e:  # noqa: BLE001 - one variant's failure is a cell, not the end of the run
            v["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:400]
            v["ok"] = False
            say(f"[{name}] {vname}: ERROR {v['error']}")
            log(traceback.format_exc())

    # Device and wall time, the variants in turn within each round.
    dev = {v: [] for v in cms}
    wall = {v: [] for v in cms}
    kernels: dict[str, dict] = {}
    try:
        for _ in range(args.warmup):
            for cm in cms.values():
                cm.run(feeds)
        for _ in range(args.rounds):
            for vname, cm in cms.items():
                prof = cm.profile(feeds, repeat=args.profile_repeat)
                dev[vname].append(sum(prof.values()))
                kernels[vname] = prof
                times, _ = bench.time_calls(lambda cm=cm: cm.run(feeds), 1, args.wall_repeat)
                wall[vname].extend(times)
    except Exception as e:  # noqa: BLE001
        row["measure_error"] = f"{type(e).__name__}: {e}"[:400]
        say(f"[{name}] measuring failed: {row['measure_error']}")
        log(traceback.format_exc())
    for vname in cms:
        v = row["variants"][vname]
        if dev[vname]:
            v["device_ms"] = statistics.median(dev[vname])
            v["device_rounds_ms"] = dev[vname]
            v["wall_ms"] = statistics.median(wall[vname])
            v["top_kernels"] = sorted(kernels[vname].items(), key=lambda kv: -kv[1])[:8]
    cms.clear()
    lv, rv, g = (row["variants"]["learned"].get("device_ms"), row["variants"]["rules"].get("device_ms"),
                 row.get("torch_graph_ms"))
    row["learned_over_graph"] = lv / g if lv and g else None
    row["rules_over_graph"] = rv / g if rv and g else None
    row["learned_over_rules"] = lv / rv if lv and rv else None
    say(f"[{name}] device ms: learned {bench.fmt(lv, '.4f')}, rules {bench.fmt(rv, '.4f')}, graph {bench.fmt(g, '.4f')}; "
        f"learned/graph {bench.fmt(row['learned_over_graph'], '.3f')}, rules/graph {bench.fmt(row['rules_over_graph'], '.3f')}")
    return row


# ------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summarize(rows) -> dict:
    out: dict = {"models": len(rows)}
    for key in ("learned_over_graph", "rules_over_graph", "learned_over_rules"):
        vals = [(r[key], r["model"]) for r in rows if r.get(key)]
        out[key] = {
            "n": len(vals),
            "geomean": geomean([x for x, _ in vals]),
            "max": max(vals)[0] if vals else None,
            "max_model": max(vals)[1] if vals else None,
            "above_2": [m for x, m in vals if x > 2.0],
        }
    for key in ("learned_over_graph", "rules_over_graph"):
        s = out[key]
        s["target_met"] = (s["n"] == len(rows) and s["geomean"] is not None and s["geomean"] <= 1.2
                           and not s["above_2"]) if s["n"] else None
    return out


def print_set(set_name, rows, summary) -> None:
    f = bench.fmt
    print(f"\n## {set_name}\n")
    print("| model | learned device ms | rules device ms | CUDA graph ms | learned/graph | rules/graph | "
          "learned/rules | torch eager ms | learned wall ms | rules wall ms | compile s learned / rules | "
          "max rel err learned / rules |")
    print("|---|" + "---:|" * 11)
    for r in rows:
        if r.get("error"):
            print(f"| {r['model']} | ERROR: {r['error'][:200]} |" + " |" * 10)
            continue
        lv, rv = r["variants"].get("learned", {}), r["variants"].get("rules", {})

        def err(v):
            if v.get("error"):
                return "ERROR: " + v["error"][:120]
            return f(v.get("max_rel_err"), ".1e") + ("" if v.get("ok") else " (FAIL)")

        graph = f(r.get("torch_graph_ms"), ".4f") if r.get("torch_graph_ms") else (
            "- (" + r["torch_error"][:100] + ")" if r.get("torch_error") else "-")
        print(f"| {r['model']} | {f(lv.get('device_ms'), '.4f')} | {f(rv.get('device_ms'), '.4f')} | {graph} | "
              f"{f(r.get('learned_over_graph'), '.3f')} | {f(r.get('rules_over_graph'), '.3f')} | "
              f"{f(r.get('learned_over_rules'), '.3f')} | {f(r.get('torch_eager_ms'), '.3f')} | "
              f"{f(lv.get('wall_ms'), '.3f')} | {f(rv.get('wall_ms'), '.3f')} | "
              f"{f(lv.get('compile_s'), '.1f')} / {f(rv.get('compile_s'), '.1f')} | {err(lv)} / {err(rv)} |")
    print()
    for key, label in (("learned_over_graph", "learned/graph"), ("rules_over_graph", "rules/graph"),
                       ("learned_over_rules", "learned/rules")):
        s = summary[key]
        if not s["n"]:
            print(f"- {label}: no model measured")
            continue
        line = (f"- {label}: geomean {s['geomean']:.3f}, max {s['max']:.3f} ({s['max_model']}) over "
                f"{s['n']} of {summary['models']} models")
        if key != "learned_over_rules":
            line += f"; above 2.0: {', '.join(s['above_2']) or 'none'}"
            line += "; target (geomean <= 1.2, none above 2.0): " + (
                "met" if s["target_met"] else "not met" if s["n"] == summary["models"] else "incomplete set")
        print(line)
    sys.stdout.flush()


def run_sets(args, shared, plan, peer, pool, deadline, payload, dump) -> None:
    for set_name, models in plan.items():
        rows = payload["sets"][set_name]
        paths: dict[str, Path] = {}
        errors: dict[str, str] = {}
        for m in models:
            try:
                paths[m] = materialized(shared, set_name, m, args.seed)
            except Exception as e:  # noqa: BLE001
                errors[m] = f"materialize: {type(e).__name__}: {e}"
        say(f"set {set_name}: {len(models)} models")
        compiler = Compiler(args, pool, [(m, set_name, p) for m, p in paths.items()])
        try:
            compiler.wait_all(deadline)
            for m in models:
                if m in errors:
                    rows.append({"set": set_name, "model": m, "error": errors[m]})
                elif time.perf_counter() > deadline:
                    say(f"[{m}] skipped: past --limit-s")
                    rows.append({"set": set_name, "model": m, "error": "not run: past --limit-s"})
                else:
                    try:
                        rows.append(bench_one(set_name, m, paths[m], args, peer, compiler, deadline))
                    except Exception as e:  # noqa: BLE001 - a row, not the end of the run
                        say(f"[{m}] ERROR {type(e).__name__}: {e}")
                        log(traceback.format_exc())
                        rows.append({"set": set_name, "model": m, "error": f"{type(e).__name__}: {e}"[:400]})
                if payload["devices"]["ours"] is None:
                    payload["devices"]["ours"] = next((v.get("device") for v in rows[-1].get("variants", {}).values()
                                                       if v.get("device")), None)
                payload["summary"][set_name] = summarize(rows)
                dump()
        finally:
            compiler.close()



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--sets", default=",".join(SETS), help="comma list of graphs,next,timm")
    ap.add_argument("--models", default=None, help="comma list of model names (of any of the sets); default all")
    ap.add_argument("--device", default=None, help="OpenCL device (default: PYOPENCL_CTX, else PoCL)")
    ap.add_argument("--shared", default=None, help="folder holding models/ (default: $ADRENO_SHARED or ../shared)")
    ap.add_argument("--seed", type=int, default=0, help="weight seed for materialize (input: seed+1)")
    ap.add_argument("--jobs", type=int, default=0, help="compile in N worker processes first (0: inline)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the two variants in turn (medians)")
    ap.add_argument("--profile-repeat", type=int, default=10, help="profiled runs per round (cm.profile repeat)")
    ap.add_argument("--wall-repeat", type=int, default=5, help="timed cm.run calls per round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--torch-repeat", type=int, default=50, help="timed torch eager / graph-replay calls")
    ap.add_argument("--tol", type=float, default=1e-3, help="max relative error against onnxruntime")
    ap.add_argument("--target", default="auto",
                    help="target profile of both variants (default auto: the device's own), e.g. nvidia-h200 "
                         "on an H100 to try the H200's learned defaults there")
    ap.add_argument("--cost-model", default="auto",
                    help="the learned variant's cost_model (default auto: the shipped artifact for the device, "
                         "if any); a path tries an artifact on another device, e.g. the H200's on an H100")
    ap.add_argument("--limit-s", type=float, default=None,
                    help="start no model after this many seconds (the tables are still printed)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    global VARIANTS
    VARIANTS = (("learned", args.cost_model), ("rules", None))

    shared = bench.shared_dir(args.shared)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    bad = [s for s in sets if s not in SETS]
    if bad:
        ap.error(f"unknown sets {bad}; choose from {', '.join(SETS)}")
    plan = {s: set_models(shared, s) for s in sets}
    if args.models:
        wanted = [m.strip() for m in args.models.split(",") if m.strip()]
        known = {m for ms in plan.values() for m in ms}
        if unknown := [m for m in wanted if m not in known]:
            ap.error(f"models {unknown} are in none of the sets {sets}")
        plan = {s: [m for m in ms if m in wanted] for s, ms in plan.items()}
    deadline = T0 + args.limit_s if args.limit_s else math.inf

    peer = make_torch_peer()
    payload = {
        "config": vars(args),
        "host": f"{platform.node()} ({platform.platform()})",
        "devices": {"ours": None, "torch": peer.describe() if peer is not None else None},
        "sets": {s: [] for s in plan},
        "summary": {},
    }
    if peer is not None:
        import torch

        payload["devices"]["torch"] += f"; matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}, " \
                                       f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}"
        try:
            import timm

            payload["devices"]["timm"] = timm.__version__
        except Exception as e:  # noqa: BLE001
            payload["devices"]["timm"] = f"unavailable: {e}"

    def dump():
        if args.json:
            Path(args.json).write_text(json.dumps(payload, indent=1, default=str))

    pool = cf.ProcessPoolExecutor(max_workers=args.jobs, mp_context=mp.get_context("spawn")) if args.jobs > 0 else None
    try:
        run_sets(args, shared, plan, peer, pool, deadline, payload, dump)
    finally:
        stop_pool(pool)

    print("\n# adreno-mlir default compile vs PyTorch CUDA-graph replay (device ms)")
    for set_name in plan:
        print_set(set_name, payload["sets"][set_name], payload["summary"].get(set_name) or summarize([]))
    print(f"\n- ours: {payload['devices']['ours']}; device ms = sum of the OpenCL event times of one inference "
          f"(cm.profile, {args.profile_repeat} runs, each launch's median), median of {args.rounds} rounds with "
          f"learned and rules in turn; wall = cm.run (host copies included)")
    print(f"- torch: {payload['devices']['torch'] or 'not measured (no torch/CUDA here)'}; timm "
          f"{payload['devices'].get('timm', '-')}; medians of {args.torch_repeat} calls after {args.warmup} warm-ups")
    print(f"- max rel err = max|ours - onnxruntime CPU| / max|onnxruntime| on the same input, tol {args.tol:g}; "
          f"weights: materialize(seed={args.seed}); host {payload['host']}")
    dump()
    if args.json:
        say(f"wrote {args.json}")
    bad = [r["model"] for rs in payload["sets"].values() for r in rs
           if r.get("error") or not all(v.get("ok") for v in r.get("variants", {}).values())]
    if bad:
        say(f"FAILED or above tolerance: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
