#!/usr/bin/env python3
"""Differential fuzzing, long run: random ONNX graphs on every plan against onnxruntime.

    python bench/fuzz.py [--graphs 1000] [--plans nchw,buffer4c,textures,tiny-test,fp16-acc32]
                         [--max-steps 10] [--seed 0] [--json fuzz.json] [--out DIR] [--minimize]
    python bench/fuzz.py --replay SPEC.json [--plans ...] [--minimize]   # one graph again

The graphs come from `tests/fuzz_graphs.py` (the generator tests/test_fuzz.py uses):
Hypothesis draws them (`--seed` fixes the sequence; no shrinking here), each is built as
a float32 opset-17 model, run by onnxruntime (CPUExecutionProvider) and by ONNX's
reference evaluator, and compiled with `adreno_mlir.compile(model, runtime="pyopencl",
**plan)` on every plan of `PLANS`. Per plan a graph is:

- ok: every output within tolerance of onnxruntime (1e-4 max|diff|/max|ref|, fp16-acc32 5e-2);
- refused: compile raised a CompileError whose message is clear (not an internal error);
- divergence: ours differs from onnxruntime only at elements where onnxruntime and
  onnx.reference disagree with each other (a documented divergence of the references,
  not our bug; the detail says whether ours matches onnx.reference or neither);
- mismatch: ours differs from onnxruntime (and the above does not hold);
- crash: any other exception, or an unclear CompileError (an internal error in disguise).

Independently of our results, graphs where onnxruntime and onnx.reference disagree (or
the reference fails) are counted. Each mismatch/crash is written to --out as
`fail-<graph>-<plan>.onnx` + `.json` (the spec, replayable with --replay); with
--minimize the spec is shrunk greedily first (`fuzz_graphs.minimize`: the same plan must
keep failing the same way) and saved as `repro-<graph>-<plan>.onnx`.

The JSON summary (--json, default OUT/summary.json) is rewritten every 10 graphs, so a
run that is stopped still leaves its counts.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# As the test suite: verify the IR after every stage; our own program cache folder.
os.environ.setdefault("ADRENO_MLIR_VERIFY", "all")
if "ADRENO_MLIR_CACHE_DIR" not in os.environ:
    os.environ["ADRENO_MLIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="adreno-mlir-fuzz-programs-")
# Hypothesis keeps a cache of source constants under ./.hypothesis unless told otherwise.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "adreno-mlir-fuzz-hypothesis"))
# The fp16 plan runs on Intel's CPU runtime (cl_khr_fp16), registered as the tests do.
from adreno_mlir.runtime.device import use_intel_cpu_runtime  # noqa: E402

use_intel_cpu_runtime()


def _normalise(msg: str) -> str:
    """A refusal message without node names and numbers, to group refusals by reason."""
    msg = msg.splitlines()[0]
    msg = re.sub(r"node '[^']*'", "node '…'", msg)
    msg = re.sub(r"'[^']*'", "'…'", msg) if "tensor" in msg else msg
    return re.sub(r"-?\d+(\.\d+)?", "N", msg)[:200]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", type=int, default=1000, help="graphs to try (default 1000)")
    ap.add_argument("--plans", default="all", help="comma-separated plan names of fuzz_graphs.PLANS, or all")
    ap.add_argument("--max-steps", type=int, default=10, help="steps per graph, at most (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="Hypothesis seed of the graph sequence (default 0)")
    ap.add_argument("--out", default=None, help="folder for failing models and the summary "
                                                "(default /tmp/fuzz-work/run-SEED)")
    ap.add_argument("--json", default=None, help="summary file (default OUT/summary.json)")
    ap.add_argument("--minimize", action="store_true", help="shrink each failing graph before saving it")
    ap.add_argument("--replay", default=None, help="a spec (JSON text or file) to run instead of generating")
    ap.add_argument("--resume", action="store_true",
                    help="continue a stopped run: read OUT's summary and skip the graphs it already tried "
                         "(the same --seed/--max-steps regenerate the same sequence)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    warnings.simplefilter("ignore")
    import faulthandler

    faulthandler.enable()  # a crash inside the OpenCL driver leaves a Python stack in the log
    import numpy as np
    import onnx
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from tests import fuzz_graphs as fg

    plans = list(fg.PLANS) if args.plans == "all" else args.plans.split(",")
    unknown = [p for p in plans if p not in fg.PLANS]
    if unknown:
        ap.error(f"unknown plan(s) {unknown}; known: {', '.join(fg.PLANS)}")
    out = Path(args.out or f"/tmp/fuzz-work/run-{args.seed}")
    out.mkdir(parents=True, exist_ok=True)
    summary_path = Path(args.json) if args.json else out / "summary.json"

    counts = {p: collections.Counter() for p in plans}
    refusals: dict[str, collections.Counter] = {p: collections.Counter() for p in plans}
    failures: list[dict] = []
    divergences: list[dict] = []
    ref_disagree: list[dict] = []
    ref_errors: collections.Counter = collections.Counter()
    ort_failed: list[dict] = []
    ops_seen: collections.Counter = collections.Counter()
    kernels_seen: dict[str, collections.Counter] = {p: collections.Counter() for p in plans}
    memory = collections.Counter()
    seen_specs: set[str] = set()
    state = {"graphs": 0, "start": time.time(), "skip": 0, "seconds_before": 0.0}
    if args.resume and summary_path.is_file():
        old = json.loads(summary_path.read_text())
        if old.get("seed") != args.seed or old.get("max_steps") != args.max_steps:
            ap.error("--resume: the summary was written with another --seed or --max-steps")
        state["skip"] = old["graphs_tried"]
        state["seconds_before"] = old["seconds"]
        for p in plans:
            counts[p].update(old["per_plan"].get(p, {}))
            refusals[p].update(old["refusals_by_reason"].get(p, {}))
            kernels_seen[p].update(old.get("kernels_launched", {}).get(p, {}))
        failures.extend(old["failures"])
        divergences.extend(old["divergences"])
        ref_disagree.extend(old["onnxruntime_vs_onnx_reference"]["cases"])
        ref_errors.update(old["onnxruntime_vs_onnx_reference"]["reference_errors"])
        ort_failed.extend(old["onnxruntime_failed"])
        ops_seen.update(old["ops_generated"])
        memory.update(old.get("memory", {}))
        seen_specs.update(old.get("spec_hashes", []))
        print(f"resuming after {state['skip']} graphs", flush=True)

    def write_summary(final: bool = False) -> None:
        summary = {
            "finished": final, "graphs_tried": state["graphs"], "distinct_graphs": len(seen_specs),
            "seconds": round(state["seconds_before"] + time.time() - state["start"], 1), "seed": args.seed,
            "max_steps": args.max_steps,
            "plans": {p: fg.PLANS[p] for p in plans},
            "per_plan": {p: dict(counts[p]) for p in plans},
            "totals": dict(sum((counts[p] for p in plans), collections.Counter())),
            "refusals_by_reason": {p: dict(refusals[p].most_common()) for p in plans},
            "failures": failures,
            "divergences": divergences,
            "onnxruntime_vs_onnx_reference": {"disagree": len(ref_disagree), "reference_failed": sum(ref_errors.values()),
                                              "reference_errors": dict(ref_errors.most_common()),
                                              "cases": ref_disagree},
            "onnxruntime_failed": ort_failed,
            "ops_generated": dict(ops_seen.most_common()),
            "kernels_launched": {p: dict(kernels_seen[p].most_common()) for p in plans},
            "memory": dict(memory),
            "spec_hashes": sorted(seen_specs),
        }
        tmp = summary_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(summary, indent=1, default=str))
        tmp.replace(summary_path)

    def fails_same_way(plan: str, status: str):
        def check(spec) -> bool:
            try:
                model = fg.build_model(spec)
                feeds = fg.make_feeds(spec)
                refs = fg.ort_outputs(model, feeds)
            except Exception:  # noqa: BLE001 - not a valid candidate
                return False
            res = fg.check_plan(model, feeds, refs, plan, fg.LazyReference(model, feeds))
            return res.status == status
        return check

    def run_one(spec) -> None:
        index = state["graphs"]
        state["graphs"] += 1
        if index < state["skip"]:
            return
        key = hashlib.sha256(spec.to_json().encode()).hexdigest()[:16]
        seen_specs.add(key)
        for st_ in spec.steps:
            ops_seen[st_.op + (f"/{st_.params['kind']}" if st_.op in ("Act", "Binary") else "")] += 1
        model = fg.build_model(spec)
        feeds = fg.make_feeds(spec)
        try:
            refs = fg.ort_outputs(model, feeds)
        except Exception as e:  # noqa: BLE001 - onnxruntime cannot run the graph
            ort_failed.append({"graph": index, "error": f"{type(e).__name__}: {e}"[:500], "spec": spec.to_dict()})
            return
        reference = fg.LazyReference(model, feeds)
        diverge = fg.references_diverge(refs, reference)
        if reference.error:
            ref_errors[_normalise(reference.error)] += 1
        if diverge:
            ref_disagree.append({"graph": index, "where": diverge, "description": fg.describe(spec)})
        line = []
        bad: list[str] = []
        outcomes = {}
        for plan in plans:
            res = fg.check_plan(model, feeds, refs, plan, reference)
            counts[plan][res.status] += 1
            outcomes[plan] = res
            kernels_seen[plan].update({re.sub(r"_\d+$", "", k) for k in res.kernels})
            line.append(f"{plan}:{res.status}")
            if res.status == "refused":
                refusals[plan][_normalise(res.detail)] += 1
            elif res.status == "divergence":
                divergences.append({"graph": index, "plan": plan, "detail": res.detail,
                                    "description": fg.describe(spec)})
            elif res.failed:
                stem = f"fail-{index}-{plan}"
                onnx.save(model, str(out / f"{stem}.onnx"))
                (out / f"{stem}.json").write_text(spec.to_json())
                rec = {"graph": index, "plan": plan, "status": res.status, "detail": res.detail[:2000],
                       "errors": res.errors, "description": fg.describe(spec), "model": str(out / f"{stem}.onnx"),
                       "spec": spec.to_dict()}
                if args.minimize:
                    small = fg.minimize(spec, fails_same_way(plan, res.status))
                    m_small = fg.build_model(small)
                    f_small = fg.make_feeds(small)
                    r_small = fg.check_plan(m_small, f_small, fg.ort_outputs(m_small, f_small), plan,
                                            fg.LazyReference(m_small, f_small))
                    onnx.save(m_small, str(out / f"repro-{index}-{plan}.onnx"))
                    (out / f"repro-{index}-{plan}.json").write_text(small.to_json())
                    rec.update(minimized=fg.describe(small), minimized_detail=r_small.detail[:2000],
                               minimized_model=str(out / f"repro-{index}-{plan}.onnx"))
                failures.append(rec)
                bad.append(f"  {plan}: {res.status}: {res.detail[:600]}")
        if "tiny-test" in outcomes and outcomes["tiny-test"].status in ("ok", "divergence"):
            tiny = outcomes["tiny-test"]
            memory["tiny-test graphs with images"] += tiny.images > 0
            memory["tiny-test graphs with activation buffers"] += tiny.buffers > 0
            if "textures" in outcomes and outcomes["textures"].images > tiny.images:
                memory["tiny-test graphs with fewer images than adreno-740 (limit crossed)"] += 1
        if bad and not args.quiet:
            print(f"\n[graph {index}]\n" + "\n".join(bad) + f"\n{fg.describe(spec)}", flush=True)
        if not args.quiet and (index % 25 == 0 or any(":mismatch" in s or ":crash" in s for s in line)):
            totals = sum((counts[p] for p in plans), collections.Counter())
            print(f"[{index + 1} graphs, {time.time() - state['start']:.0f} s] {dict(totals)}", flush=True)
        if index % 10 == 0:
            write_summary()

    if args.replay:
        text = Path(args.replay).read_text() if os.path.isfile(args.replay) else args.replay
        spec = fg.GraphSpec.from_json(text)
        print(fg.describe(spec))
        run_one(spec)
    else:
        @seed(args.seed)
        @settings(max_examples=args.graphs, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), derandomize=False)
        @given(fg.graph_specs(args.max_steps))
        def fuzz(spec):
            run_one(spec)

        fuzz()
    write_summary(final=True)
    totals = sum((counts[p] for p in plans), collections.Counter())
    print(f"\n{state['graphs']} graphs ({len(seen_specs)} distinct), {time.time() - state['start']:.0f} s")
    for p in plans:
        print(f"  {p:12s} {dict(counts[p])}")
    print(f"  total        {dict(totals)}")
    print(f"  onnxruntime vs onnx.reference: {len(ref_disagree)} graphs disagree, "
          f"{sum(ref_errors.values())} where the reference failed; onnxruntime failed on {len(ort_failed)}")
    print(f"summary: {summary_path}")
    _ = np
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
