"""`adreno-mlir analyze MODEL`: the roofline estimate of every kernel (adreno_mlir/analyze.py).

    adreno-mlir analyze model.onnx --target adreno-740 [--plan texture|buffer4c|nchw]
                        [--precision fp32|fp16-acc32] [--json FILE] [--top N]
                        [--input-shape NAME:D1,D2,...] [--dim NAME=VALUE]

Runs the plan's stages up to and including `config` (no OpenCL program is built or run) and
prints a table of kernels sorted by estimated time, then the totals and the target's peak
figures. A target without peak figures is an error naming it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def format_table(analysis, top: int | None = None) -> list[str]:
    """The table lines: kernels by estimated time (longest first), then the totals."""
    from adreno_mlir.analyze import launch_overhead_us
    from adreno_mlir.printing import cut_name

    costs = sorted(analysis.costs, key=lambda c: -c.estimate_us)
    shown = costs[:top] if top else costs
    width = min(44, max([len("name")] + [len(c.name) for c in shown]))
    kind_w = min(18, max([len("kind")] + [len(c.kind) for c in shown]))
    lines = [(f"{'name':<{width}}  {'kind':<{kind_w}}  {'GFLOP':>9}  {'global MB':>9}  {'texture MB':>10}  "
              f"{'FLOP/B':>8}  {'est us':>9}  bound")]
    for c in shown:
        lines.append(f"{cut_name(c.name, width):<{width}}  {cut_name(c.kind, kind_w):<{kind_w}}  {c.flops / 1e9:9.4f}  "
                     f"{c.global_bytes / 1e6:9.3f}  {c.texture_bytes / 1e6:10.3f}  {c.intensity:8.2f}  "
                     f"{c.estimate_us:9.2f}  {c.bound}")
    if top and len(costs) > top:
        lines.append(f"... {len(costs) - top} more kernels (--top {top})")
    p = analysis.profile
    flops = sum(c.flops for c in costs)
    glob = sum(c.global_bytes for c in costs)
    tex = sum(c.texture_bytes for c in costs)
    bound = {b: sum(c.estimate_us for c in costs if c.bound == b) for b in ("compute", "memory")}
    lines.append(f"total: {len(costs)} kernels, {flops / 1e9:.4f} GFLOP, {glob / 1e6:.3f} MB global, "
                 f"{tex / 1e6:.3f} MB texture; estimate {analysis.total_us:.1f} us (sum over kernels: "
                 f"{bound['compute']:.1f} us in compute-bound ones, {bound['memory']:.1f} us in memory-bound ones, "
                 f"{launch_overhead_us(p):g} us launch overhead each)")
    lines.append(f"target {p.name}: {p.peak_gflops_fp32:g} GFLOP/s fp32, {p.peak_gflops_fp16:g} GFLOP/s fp16, "
                 f"{p.memory_gbps:g} GB/s ({p.peak_source or 'no source recorded'})")
    return lines


def _cmd_analyze(args: argparse.Namespace) -> int:
    from adreno_mlir.analyze import analyze_model
    from adreno_mlir.cli_run import shape_options

    from adreno_mlir.cli_generate import decoder_program_of

    program = decoder_program_of(args)
    if program is not None:  # one generation program of a decoder
        from adreno_mlir.frontend.decoder import import_decoder_program

        model = import_decoder_program(args.model, *program)
        analysis = analyze_model(model, args.target, plan=args.plan, precision=args.precision, device=args.device)
    else:
        analysis = analyze_model(args.model, args.target, plan=args.plan, precision=args.precision,
                                 device=args.device, **shape_options(args))
    print(f"analyze {args.model}: {analysis.plan} ({len(analysis.costs)} kernels; stages up to config: "
          f"adreno-opt -p '{analysis.pipeline}')")
    for line in format_table(analysis, args.top):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"model": str(args.model), **analysis.to_json()}, indent=1))
        print(f"wrote {args.json}")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    """Register `analyze` on the `adreno-mlir` subcommand parser (called by cli_run.add_commands)."""
    from adreno_mlir.analyze import PLANS
    from adreno_mlir.cli_run import shape_arguments
    from adreno_mlir.options import Precision, positive_int

    a = sub.add_parser("analyze", help="estimate every kernel's time with a roofline model (no device run)")
    a.add_argument("model", help="path of the .onnx file")
    shape_arguments(a)
    from adreno_mlir.cli_generate import decoder_program_arguments

    decoder_program_arguments(a)
    a.add_argument("--target", default="adreno-740",
                   help="target profile with peak figures: adreno-740 (default), adreno-660, auto (estimated from "
                        "the OpenCL device) or device-<OpenCL device name>")
    a.add_argument("--plan", choices=list(PLANS), default=None,
                   help="texture (NCHW4c in images), buffer4c (NCHW4c in buffers) or nchw (default: the target's "
                        "plan, as compile picks it)")
    a.add_argument("--precision", choices=[m.value for m in Precision], default="fp32",
                   help="fp16-acc32: fp16 storage (2-byte elements), fp32 arithmetic")
    a.add_argument("--device", help="OpenCL device for --target auto (default: PYOPENCL_CTX or PoCL)")
    a.add_argument("--json", metavar="FILE", help="also write every kernel's figures to FILE")
    a.add_argument("--top", type=positive_int, default=None, metavar="N", help="show only the N longest kernels")
    a.set_defaults(func=_cmd_analyze)
