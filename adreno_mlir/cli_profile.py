"""`adreno-mlir profile MODEL`: device time per ONNX node, a Chrome trace, a plot (adreno_mlir/profiler.py).

    adreno-mlir profile model.onnx [--repeat N] [--trace trace.json] [--plot top.png] [--json FILE] [--top N]
    adreno-mlir profile model.adreno ...        # an artifact: the same table without analyze's columns

Compiles (or loads) the model, runs it `--warmup` + `--repeat` times on a profiling queue and
prints one row per ONNX node: family, launches, median device time, share, achieved GFLOP/s
and GB/s, and `adreno-mlir analyze`'s roofline estimate for the same kernel. `--trace`
writes one inference's launches as trace-event JSON (open it in chrome://tracing or
https://ui.perfetto.dev); `--plot` a PNG of the longest nodes by family (needs matplotlib:
pip install 'adreno-mlir[plot]').
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _cmd_profile(args: argparse.Namespace) -> int:
    import adreno_mlir
    from adreno_mlir.cli_run import (
        _cache,
        _check_given,
        _is_artifact,
        _load_inputs,
        _onnx_inputs,
        _parse_inputs,
        note_shapes_ignored,
        plan_from_args,
        shape_options,
    )
    from adreno_mlir.errors import CompileError
    from adreno_mlir.profiler import format_table, plot_profile, profile_model, require_matplotlib, write_trace

    if args.plot:
        require_matplotlib()  # before the compile, not after it
    path = Path(args.model)
    if _is_artifact(path):
        note_shapes_ignored(args)
        model = adreno_mlir.load(path, device=args.device, cache=_cache(args), runtime="pyopencl")
        given = _parse_inputs(args.input, model.input_names)
        print(f"loaded {path} in {model.load_seconds:.2f} s for {model.device_name} ({model.plan})")
        analysis = "an artifact holds no graph IR for adreno-mlir analyze; profile the .onnx file for them"
    else:
        if not path.is_file():
            raise CompileError(f"no such model file: {path}")
        expected = _onnx_inputs(path, **shape_options(args))
        given = _parse_inputs(args.input, list(expected)) if expected is not None else {}
        if expected is not None:
            _check_given(given, expected)
        plan = plan_from_args(args)
        model = adreno_mlir.compile(path, plan=plan, cache=_cache(args), runtime="pyopencl", **shape_options(args))
        if expected is None:
            given = _parse_inputs(args.input, model.input_names)
        print(f"compiled in {model.compile_seconds:.2f} s for {model.device_name} ({model.plan})")
        analysis = _analysis(path, model, shape_options(args))
    feeds = _load_inputs(model, given, args.seed)
    prof = profile_model(model, feeds, repeat=args.repeat, warmup=args.warmup, analysis=analysis, name=path.stem)
    for line in format_table(prof, args.top):
        print(line)
    if args.trace:
        write_trace(prof, args.trace)
        print(f"trace ({len(prof.launches)} launches of one inference): {args.trace} "
              "(open in chrome://tracing or https://ui.perfetto.dev)")
    if args.plot:
        plot_profile(prof, args.plot, top=args.top or 20)
        print(f"plot: {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps(prof.to_json(), indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def _analysis(path: Path, model, shapes: dict | None = None):
    """analyze's figures for the compiled plan, or why there are none."""
    from adreno_mlir.analyze import analyze_model
    from adreno_mlir.errors import CompileError

    plan = model.compile_plan
    if plan is None:
        return "the model was compiled with a custom pipeline"
    try:
        return analyze_model(path, plan=plan, **(shapes or {}))
    except CompileError as e:  # a target profile without peak figures
        return str(e).splitlines()[0]


def add_command(sub: argparse._SubParsersAction) -> None:
    """Register `profile` on the `adreno-mlir` subcommand parser (called by cli_run.add_commands)."""
    from adreno_mlir.cli_run import (
        _cache_arguments,
        _json_path,
        _plan_arguments,
        shape_arguments,
    )
    from adreno_mlir.options import positive_int

    p = sub.add_parser("profile", help="device time per ONNX node from OpenCL events, with analyze's estimates, "
                                       "a Chrome trace and a plot", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="an .onnx file, or an artifact written by `adreno-mlir compile -o X.adreno`")
    p.add_argument("--input", action="append", help="FILE.npy, NAME=FILE.npy or NAME=random (as `run`)")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    shape_arguments(p)
    _plan_arguments(p)
    p.add_argument("--repeat", type=positive_int, default=10, help="timed inferences (default 10, at least 1)")
    p.add_argument("--warmup", type=int, default=2, help="untimed inferences first (default 2)")
    p.add_argument("--top", type=positive_int, default=None, metavar="N", help="show only the N longest nodes")
    p.add_argument("--trace", type=_json_path, metavar="FILE", help="write one inference as Chrome trace JSON")
    p.add_argument("--plot", metavar="FILE.png", help="bar plot of the longest nodes by family (matplotlib)")
    p.add_argument("--json", type=_json_path, metavar="FILE", help="also write the rows and launches as JSON")
    _cache_arguments(p)
    p.set_defaults(func=_cmd_profile)
