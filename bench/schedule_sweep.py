#!/usr/bin/env python3
"""Sweep one kernel family's schedule keys and report its device time: which
`kernel_config` values pay on this device (the measurements behind a default rule).

    python bench/schedule_sweep.py --device nvidia --models mobilenet_v2,efficientnet_b0 \
        --plans texture,buffer4c --family depthwise --json dw.json

Each variant is compiled with the default pipeline plus a pass after select-kernel-config
that edits the configs of the family's kernels (as a user editing the IR would), then
profiled with OpenCL events (`CompiledModel.profile`, median of --repeat runs, summed over
the family's launches). Outputs are checked against the default variant (1e-4).

Families and variants:
- depthwise: x_block 1/2/4 x dw_rows 0/1 on depthwise NCHW4c convolutions;
- dwgroups: work_group (local size) of the depthwise convolutions that do not pool;
- reduction: reduce_items for global means by reduced extent: the default rule, serial
  (1) up to 7x7 / 14x14, and fixed 16/64/256.
- matmul: tile_m x tile_n register tiles of MatMul / Gemm (1x1 ... 8x4);
- norm: reduce_items of LayerNorm and Softmax rows (1 ... 256).

Models are the shared graphs or, by name, those of shared/models/next (tiny_bert, vit_b_32, ...).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from xdsl.context import Context  # noqa: E402
from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.passes import ModulePass  # noqa: E402

from adreno_mlir.dialects import graph  # noqa: E402
from adreno_mlir.passes.select_kernel_config import CONFIG_ATTR, config_of, head_of, set_config  # noqa: E402

EDIT: Callable[[object, dict], dict | None] | None = None
"""The current variant: (head op, config) -> new config, or None to leave it."""


@dataclass(frozen=True)
class EditConfigs(ModulePass):
    """Apply the sweep's current variant to every kernel config in the module."""

    name = "sweep-edit-configs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for o in op.walk():
            if CONFIG_ATTR in o.attributes and EDIT is not None:
                new = EDIT(head_of(o), config_of(o))
                if new is not None:
                    set_config(o, new)


def _is_dw(head) -> bool:
    return isinstance(head, graph.Conv2dOp) and head.groups.value.data > 1


def _extent(head) -> int:
    shape = head.input.type.shape
    return int(shape[2] * shape[3])


def depthwise_variants():
    for xb in (1, 2, 4):
        for rows in (0, 1):
            yield f"x{xb}-rows{rows}", lambda h, c, xb=xb, rows=rows: (  # not the pooled ones: one pixel a step
                {**c, "x_block": xb, "dw_rows": rows} if _is_dw(h) and c.get("reduce_items", 1) == 1 else None)


def dwgroups_variants():
    """Local sizes of the (un-pooled) depthwise convs: the default, then preferred sizes
    (each fitted to divisors of the grid by the lowering, `host_builder.local_size`)."""
    yield "default", lambda h, c: None
    for wg in ((16, 4, 4), (32, 4, 1), (16, 16, 1), (8, 8, 4), (64, 2, 1), (4, 4, 16), (32, 1, 8)):
        yield "wg" + "x".join(map(str, wg)), lambda h, c, wg=wg: (
            {**c, "work_group": wg} if _is_dw(h) and c.get("reduce_items", 1) == 1 else None)


def reduction_variants():
    is_mean = (graph.GlobalAvgPoolOp, graph.ReduceMeanOp)
    yield "default", lambda h, c: None
    for limit in (49, 196):
        yield f"serial<={limit}", lambda h, c, limit=limit: (
            {**c, "reduce_items": 1} if isinstance(h, is_mean) and _extent(h) <= limit else None)
    for items in (16, 64, 256):
        yield f"all{items}", lambda h, c, items=items: (
            {**c, "reduce_items": items} if isinstance(h, is_mean) else None)


def matmul_variants():
    """Register tiles of every un-split MatMul / tileable Gemm (the default first)."""
    from adreno_mlir.lowering.families.gemm import tileable

    yield "default", lambda h, c: None
    for tm, tn in ((1, 1), (4, 1), (8, 1), (1, 4), (2, 4), (4, 4), (8, 4)):
        def edit(h, c, tm=tm, tn=tn):
            if not isinstance(h, (graph.MatMulOp, graph.GemmOp)) or c.get("k_split", 1) > 1 or not tileable(h):
                return None
            n = graph.shape_of(h.results[0])[-1]
            return {**c, "tile_m": tm, "tile_n": tn if n % 4 == 0 else 1}
        yield f"tile{tm}x{tn}", edit
    for split, min_k in ((4, 1024), (8, 1024), (16, 1024), (32, 1024), (4, 256), (8, 256), (16, 256)):
        def edit_split(h, c, split=split, min_k=min_k):
            if not isinstance(h, graph.MatMulOp):
                return None
            k = graph.shape_of(h.lhs)[-1]
            return {**c, "k_split": split, "tile_m": 1, "tile_n": 1} if k >= min_k else None
        yield f"ksplit{split}(K>={min_k})", edit_split


def norm_variants():
    """Work-items per row of LayerNorm and Softmax (1: a serial loop per row)."""
    yield "default", lambda h, c: None
    for items in (1, 16, 32, 64, 128, 256):
        yield f"items{items}", lambda h, c, items=items: (
            {**c, "reduce_items": items} if isinstance(h, (graph.LayerNormOp, graph.SoftmaxOp)) else None)


FAMILIES = {"depthwise": (depthwise_variants, ("dwconv",)),
            "dwgroups": (dwgroups_variants, ("dwconv",)),
            "reduction": (reduction_variants, ("global_avgpool", "reduce_mean")),
            "matmul": (matmul_variants, ("matmul", "gemm")),
            "norm": (norm_variants, ("layer_norm", "softmax"))}


def main(argv=None) -> int:
    global EDIT
    from bench import PLANS, materialized_path, shared_dir

    import adreno_mlir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v2,mobilenet_v3_large,efficientnet_b0")
    ap.add_argument("--plans", default="texture,buffer4c")
    ap.add_argument("--family", choices=sorted(FAMILIES), required=True)
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--shared", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    variants_of, prefixes = FAMILIES[args.family]
    shared = shared_dir(args.shared)
    rows = []
    for name in args.models.split(","):
        if (shared / "models" / "next" / f"{name}.onnx").exists():
            from transformers import materialized

            path = materialized(shared, name)
        else:
            path = materialized_path(shared, name, 0)
        for plan in args.plans.split(","):
            ref = None
            for vname, edit in variants_of():
                EDIT = edit
                try:
                    cm = adreno_mlir.compile(str(path), device=args.device, passes=(EditConfigs,),
                                             pipeline=lambda p: p.replace(",split-k", ",sweep-edit-configs,split-k"),
                                             **PLANS[plan])
                except adreno_mlir.CompileError as e:  # a variant some kernel cannot take (e.g. tile_n 4 on a
                    print(f"{name:28s} {plan:9s} {vname:12s} skipped: {str(e)[:150]}", flush=True)  # strided B)
                    continue
                feeds = {n: np.random.default_rng(1).standard_normal(cm.input_shapes[n]).astype(np.float32)
                         for n in cm.input_names}
                out = next(iter(cm.run(feeds).values()))
                if ref is None:
                    ref = out
                err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))
                prof = cm.profile(feeds, repeat=args.repeat)
                fam = sum(ms for k, ms in prof.items() if k.startswith(prefixes))
                row = {"model": name, "plan": plan, "variant": vname, "family_ms": fam,
                       "device_ms": sum(prof.values()), "err_vs_first": err,
                       "kernels": {k: ms for k, ms in prof.items() if k.startswith(prefixes)}}
                rows.append(row)
                print(f"{name:28s} {plan:9s} {vname:12s} {args.family} {fam:.4f} ms  device {row['device_ms']:.3f} ms"
                      f"  err {err:.1e}", flush=True)
                del cm
    EDIT = None
    print(f"\n## {args.family}: family device ms per variant (sum over models)\n")
    for plan in args.plans.split(","):
        by = {}
        for r in rows:
            if r["plan"] == plan:
                by.setdefault(r["variant"], []).append(r["family_ms"])
        for v, ms in by.items():
            print(f"{plan:9s} {v:12s} {sum(ms):.4f} ms  (median per model {statistics.median(ms):.4f})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
