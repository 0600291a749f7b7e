"""fuse-depthwise-load on and off, on one device, from per-launch OpenCL event times.

    python bench/depthwise_load_ab.py --models mobilenet_v2,mobilenet_v3_large --device nvidia

Each model and plan is compiled twice, with the default pipeline ("on") and without
fuse-depthwise-load ("off"), and profiled in the order off, on, on, off (the H200 moves by
up to ~10% between runs; each run is the median of `--repeat` inferences per launch). Per
model and plan it prints:

- the total device time of each;
- the depthwise launches of each (`dwconv*`: with the pass on, those it leaves, the
  squeeze-excite ones that also pool);
- the 1x1 convs of "off" at the nodes where "on" has a fused launch (`conv1x1..._dw...`),
  and those fused launches;
- dw cost on = depthwise launches on + fused - their 1x1 convs off: what the depthwise
  convs cost with the pass; depthwise launches off / dw cost on is its speedup;
- the max relative error of each against onnxruntime;

and, per fused launch, its time beside the separate 1x1 conv and depthwise conv it replaces.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import adreno_mlir  # noqa: E402
from analyze_agreement import launch_nodes  # noqa: E402
from bench import PLANS, materialized_path, shared_dir  # noqa: E402


def without_pass(pipeline: str) -> str:
    return re.sub(r",fuse-depthwise-load\{[^}]*\}", "", pipeline)


def measure(name: str, plan: str, args) -> dict:
    path = str(materialized_path(shared_dir(args.shared), name, 0))
    cms = {}
    for variant in ("off", "on"):
        kw = dict(PLANS[plan])
        if args.target:
            kw["target"] = args.target
        if variant == "off":
            kw["pipeline"] = without_pass
        cms[variant] = adreno_mlir.compile(path, device=args.device, **kw)
    cm = cms["on"]
    feeds = {n: np.random.default_rng(1).standard_normal(cm.input_shapes[n]).astype(np.float32)
             for n in cm.input_names}
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    err = {}
    for variant, c in cms.items():
        got = list(c.run(feeds).values())
        err[variant] = max(float(np.abs(g - r).max() / (np.abs(r).max() + 1e-30)) for g, r in zip(got, ref))
    times: dict[str, list[np.ndarray]] = {"off": [], "on": []}
    for variant in ("off", "on", "on", "off"):
        c = cms[variant]
        arrays = [feeds[n] for n in c.input_names]
        times[variant].append(np.median(c.executable.profile_launches(arrays, args.repeat), axis=0))
    mean = {v: np.mean(t, axis=0) for v, t in times.items()}
    launches = {v: list(zip(launch_nodes(c), [l.kernel for l in c.launch_plan.launches], mean[v]))
                for v, c in cms.items()}
    fused = [(d, k, ms) for d, k, ms in launches["on"] if k.startswith("conv") and "_dw" in k]
    nodes = {d for d, _, _ in fused}
    dw_off = [ms for _, k, ms in launches["off"] if k.startswith("dwconv")]
    dw_on = [ms for _, k, ms in launches["on"] if k.startswith("dwconv")]
    pw_off = [ms for d, k, ms in launches["off"] if d in nodes and k.startswith("conv1x1")]
    r = dict(model=name, plan=plan, off_ms=float(mean["off"].sum()), on_ms=float(mean["on"].sum()),
             dw_off_us=1e3 * sum(dw_off), n_dw_off=len(dw_off), dw_on_us=1e3 * sum(dw_on), n_dw_on=len(dw_on),
             pw_off_us=1e3 * sum(pw_off), n_pw=len(pw_off), fused_us=1e3 * sum(x[2] for x in fused),
             n_fused=len(fused), err_off=err["off"], err_on=err["on"], layers=[])
    r["dw_cost_on_us"] = r["dw_on_us"] + r["fused_us"] - r["pw_off_us"]
    for i, (d, k, ms) in enumerate(launches["on"]):
        if not (k.startswith("conv") and "_dw" in k):
            continue
        j = next(j for j, (dd, kk, _) in enumerate(launches["off"]) if dd == d and kk.startswith("conv1x1"))
        dk, dms = next((kk, mm) for _, kk, mm in reversed(launches["off"][:j]) if kk.startswith("dwconv"))
        r["layers"].append(dict(node=d, fused=k, fused_us=1e3 * ms, pw=launches["off"][j][1],
                                pw_us=1e3 * launches["off"][j][2], dw=dk, dw_us=1e3 * dms))
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", required=True, help="comma-separated graph names (../shared/models/graphs)")
    ap.add_argument("--plans", default="buffer4c,texture")
    ap.add_argument("--device", default=os.environ.get("ADRENO_DEVICE"), help="OpenCL device (default: PYOPENCL_CTX)")
    ap.add_argument("--target", default=None, help="target profile (default: the device's)")
    ap.add_argument("--shared", default=None, help="the shared folder (default: $ADRENO_SHARED or ../shared)")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json", default=None, help="write the rows here")
    args = ap.parse_args()
    rows = []
    for name in args.models.split(","):
        for plan in args.plans.split(","):
            r = measure(name, plan, args)
            rows.append(r)
            for L in r["layers"]:
                gain = L["dw_us"] + L["pw_us"] - L["fused_us"]
                print(f"  {name} {plan} {L['fused']:45s} fused {L['fused_us']:6.1f} us = 1x1 {L['pw_us']:6.1f} + "
                      f"depthwise {L['dw_us']:5.1f} ({L['dw']}) - {gain:5.1f}", flush=True)
    print("| model | plan | device off ms | on ms | on/off | dwconv launches off (us) | their 1x1 off (us) | "
          "fused on (us) | dwconv launches on (us) | dw cost on (us) | dw speedup | err off / on |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        cost = r["dw_cost_on_us"]
        speedup = f"{r['dw_off_us'] / cost:.2f}" if cost > 0 else "all hidden"
        print(f"| {r['model']} | {r['plan']} | {r['off_ms']:.3f} | {r['on_ms']:.3f} | {r['on_ms'] / r['off_ms']:.2f} | "
              f"{r['dw_off_us']:.1f} ({r['n_dw_off']}) | {r['pw_off_us']:.1f} ({r['n_pw']}) | "
              f"{r['fused_us']:.1f} ({r['n_fused']}) | {r['dw_on_us']:.1f} ({r['n_dw_on']}) | {cost:.1f} | {speedup} | "
              f"{r['err_off']:.1e} / {r['err_on']:.1e} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
