#!/usr/bin/env python3
"""How well does `adreno-mlir analyze`'s roofline rank the kernels a device actually runs?

    ADRENO_SHARED=/work/shared python bench/analyze_agreement.py --models resnet18,mobilenet_v2 \
        --plans nchw,buffer4c,texture [--device nvidia] [--repeat 5] [--json out.json] [--details]

Per model and plan: compile on the live device (target auto: the device's own profile, whose
peak figures `adreno_mlir.target.estimate_peaks` estimates), time every launch with OpenCL
profiling events (median of --repeat runs), and estimate the same plan's kernels with
`adreno_mlir.analyze` (roofline, and the config-aware `estimate_config_us`).

Launches carry the ONNX node of their kernel as their location (convert-graph-to-opencl
copies the kernel op's `loc` onto each `opencl.launch`); one analyzed kernel may become
several launches (Winograd: three kernels, split-K: two) and they may carry different nodes
of the same layer. Kernels that share a node are therefore merged into one group (one ONNX
layer, or a layer and its fused tail), launches are attributed to the group of their node,
and estimates are compared with measurements per group. Kernels and launches without a node
(pack/unpack) form one group "(unnamed)".

Printed per model/plan: the Spearman rank correlation between estimated and measured group
times (roofline, then config-aware), and the sum of estimates against the measured device
total. Spearman's rho is computed here from numpy ranks (ties averaged), no scipy needed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
for _p in (str(REPO), str(BENCH_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from bench import PLANS, materialized_path, shared_dir


def ranks(values) -> np.ndarray:
    """Ranks 1..n of `values`, ties given their average rank."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    r[order] = np.arange(1, len(v) + 1)
    for value in np.unique(v):
        tied = v == value
        if tied.sum() > 1:
            r[tied] = r[tied].mean()
    return r


def spearman(a, b) -> float:
    """Spearman's rho: the Pearson correlation of the ranks (nan for < 3 points or a
    constant side)."""
    if len(a) < 3:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def launch_nodes(cm) -> list[str | None]:
    """The ONNX node name (`loc`) of every launch of `cm`, in launch order."""
    from adreno_mlir.dialects import opencl

    from adreno_mlir.runtime.plan import host_function

    fn = host_function(cm.module)
    nodes = [getattr(op.location, "desc", None) for op in fn.body.block.ops if isinstance(op, opencl.LaunchOp)]
    nodes = [d.data if d is not None else None for d in nodes]
    if len(nodes) != len(cm.launch_plan.launches):
        raise RuntimeError(f"{len(nodes)} launch ops in the module but {len(cm.launch_plan.launches)} launches "
                           "in the plan")
    return nodes


def launch_times_ms(cm, feeds: dict, repeat: int) -> np.ndarray:
    """Median device milliseconds of every launch (OpenCL events on a profiling queue)."""
    ex = cm.executable
    arrays = [np.asarray(feeds[n], np.float32) for n in cm.input_names]
    if hasattr(ex, "profile_launches"):  # [repeat, launches]
        return np.median(ex.profile_launches(arrays, repeat), axis=0)
    import pyopencl as cl  # an older Executable: the same loop here

    q = cl.CommandQueue(ex.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    for buf, arr in zip(ex.inputs, ex._input_arrays(arrays)):
        cl.enqueue_copy(q, buf, arr)
    runs = []
    for _ in range(repeat + 1):
        events = [cl.enqueue_nd_range_kernel(q, l.kernel, l.global_size, l.local_size) for l in ex.launches]
        q.finish()
        runs.append([(ev.profile.end - ev.profile.start) * 1e-6 for ev in events])
    return np.median(np.array(runs[1:]), axis=0)


def plan_name(options: dict) -> str:
    """The analyze plan (`texture`, `buffer4c`, `nchw`) a compile actually used."""
    if options["layout"] == "nchw":
        return "nchw"
    return "texture" if options["textures"] else "buffer4c"


def group_kernels(costs) -> tuple[list[list[int]], dict[str, int]]:
    """Kernels that share an ONNX node merged (union-find): the groups (lists of kernel
    indices) and node name -> group index. Kernels without a node form group "(unnamed)"."""
    parent = list(range(len(costs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    unnamed = [i for i, c in enumerate(costs) if not c.nodes]
    for i, c in enumerate(costs):
        for node in c.nodes:
            if node in owner:
                parent[find(i)] = find(owner[node])
            else:
                owner[node] = i
    for i in unnamed[1:]:
        parent[find(i)] = find(unnamed[0])
    roots: dict[int, int] = {}
    groups: list[list[int]] = []
    for i in range(len(costs)):
        r = find(i)
        if r not in roots:
            roots[r] = len(groups)
            groups.append([])
        groups[roots[r]].append(i)
    node_group = {node: roots[find(i)] for node, i in owner.items()}
    return groups, node_group


def measure(args) -> dict:
    from adreno_mlir.passes.select_kernel_config import config_of

    import adreno_mlir
    from adreno_mlir.analyze import analyze_model, estimate_config_us, kernel_ops

    shared = shared_dir(args.shared)
    out: dict = {"device": None, "results": {}}
    for name in args.models.split(","):
        path = materialized_path(shared, name, 0)
        for plan in args.plans.split(","):
            t = time.perf_counter()
            cm = adreno_mlir.compile(str(path), device=args.device, **PLANS[plan])
            compile_s = time.perf_counter() - t
            out["device"] = cm.device_name
            rng = np.random.default_rng(0)
            feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
            cm.run(feeds)
            ms = launch_times_ms(cm, feeds, args.repeat)
            nodes = launch_nodes(cm)
            opts = cm.options
            analysis = analyze_model(path, opts["target"], plan=plan_name(opts), precision=opts["precision"],
                                     device=args.device)
            costs = analysis.costs
            config_us = [estimate_config_us(k, config_of(k), analysis.profile) for k in kernel_ops(analysis.module)]
            groups, node_group = group_kernels(costs)
            unnamed = next((g for g, members in enumerate(groups) if not costs[members[0]].nodes), None)
            measured = np.zeros(len(groups))
            unattributed = 0.0
            for node, t_ms in zip(nodes, ms):
                g = node_group.get(node) if node is not None else unnamed
                if g is None:
                    unattributed += t_ms * 1e3
                else:
                    measured[g] += t_ms * 1e3
            est = np.array([sum(costs[i].estimate_us for i in members) for members in groups])
            est_cfg = np.array([sum(config_us[i] for i in members) for members in groups])
            rho, rho_cfg = spearman(est, measured), spearman(est_cfg, measured)
            total_measured = float(ms.sum() * 1e3)
            key = f"{name}/{plan}"
            out["results"][key] = {
                "plan": analysis.plan, "kernels": len(costs), "launches": len(nodes), "groups": len(groups),
                "spearman": rho, "spearman_config": rho_cfg,
                "estimate_us": float(est.sum()), "estimate_config_us": float(est_cfg.sum()),
                "measured_us": total_measured, "unattributed_us": unattributed, "compile_s": compile_s,
                "peaks": {"gflops_fp32": analysis.profile.peak_gflops_fp32,
                          "memory_gbps": analysis.profile.memory_gbps, "source": analysis.profile.peak_source},
                "group_times": [{"nodes": sorted({n for i in members for n in costs[i].nodes}),
                                 "kinds": [costs[i].kind for i in members],
                                 "estimate_us": float(est[g]), "estimate_config_us": float(est_cfg[g]),
                                 "measured_us": float(measured[g])} for g, members in enumerate(groups)],
            }
            print(f"{key:26s} groups {len(groups):3d} (kernels {len(costs)}, launches {len(nodes)})  "
                  f"spearman {rho:+.3f} (config-aware {rho_cfg:+.3f})  "
                  f"estimate {est.sum() / 1e3:8.3f} ms (config-aware {est_cfg.sum() / 1e3:8.3f})  "
                  f"measured {total_measured / 1e3:8.3f} ms  ratio {total_measured / est.sum():6.2f}"
                  + (f"  unattributed {unattributed / 1e3:.3f} ms" if unattributed else ""), flush=True)
            if args.details:
                order = np.argsort(-measured)
                for g in order[: args.details]:
                    members = groups[g]
                    label = costs[members[0]].name
                    print(f"    {label[-44:]:44s} {'+'.join(costs[i].kind for i in members)[:30]:30s} "
                          f"est {est[g]:9.1f} us  cfg {est_cfg[g]:9.1f} us  measured {measured[g]:9.1f} us")
            if args.json:  # after every result, so a run cut short keeps what it measured
                Path(args.json).write_text(json.dumps(out, indent=1))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--plans", default="nchw,buffer4c,texture", help=f"compile plans: {','.join(PLANS)}")
    ap.add_argument("--device", default=None, help="OpenCL device (default: PYOPENCL_CTX or PoCL)")
    ap.add_argument("--repeat", type=int, default=5, help="profiled runs per launch (median)")
    ap.add_argument("--shared", default=None, help="the shared folder (default $ADRENO_SHARED)")
    ap.add_argument("--json", default=None, help="write every result (and per-group times) here")
    ap.add_argument("--details", type=int, nargs="?", const=8, default=0, metavar="N",
                    help="also print the N groups with the most measured time (default 8)")
    args = ap.parse_args(argv)
    for plan in args.plans.split(","):
        if plan not in PLANS:
            ap.error(f"unknown plan {plan!r}; choose from {', '.join(PLANS)}")
    result = measure(args)
    print(f"device: {result['device']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
