"""`adreno-mlir tune`: measure kernel configurations into a tuning database.

    adreno-mlir tune model.onnx --db tuning.db --trials 16          # tune (resumes when rerun)
    adreno-mlir tune model.onnx --db tuning.db --budget-s 600       # a time budget instead
    adreno-mlir tune model.onnx --db tuning.db --budget-s 60        # quick: where the cost model predicts gain
    adreno-mlir tune model.onnx --db tuning.db --devices nvidia:0,nvidia:1 --ray   # one Ray worker per GPU
    adreno-mlir tune --db tuning.db --export tuned.json             # move results to another machine
    adreno-mlir tune --db tuning.db --import tuned.json
    adreno-mlir run model.onnx --tuning-db tuning.db                # use them
"""

from __future__ import annotations

import argparse
import json
import sys

from adreno_mlir.errors import CompileError


def add_tune_command(sub: argparse._SubParsersAction) -> None:
    from adreno_mlir.cli_run import shape_arguments
    from adreno_mlir.options import TEXTURE_FLAGS, Layout, Precision

    t = sub.add_parser("tune", help="search kernel configurations on the device; results go to a tuning database",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("model", nargs="?", help="the .onnx model (not needed with --export/--import/--show)")
    t.add_argument("--db", required=True, help="the tuning database (SQLite; created when missing)")
    t.add_argument("--device", help="OpenCL device (default: PYOPENCL_CTX or PoCL)")
    t.add_argument("--target", default="auto", help="target profile (default: read the device)")
    t.add_argument("--textures", choices=list(TEXTURE_FLAGS), default="auto")
    t.add_argument("--precision", choices=[m.value for m in Precision], default="fp32")
    t.add_argument("--layout", choices=[m.value for m in Layout], default=None)
    shape_arguments(t)
    from adreno_mlir.cli_generate import decoder_program_arguments

    decoder_program_arguments(t)
    g = t.add_mutually_exclusive_group()
    g.add_argument("--trials", type=int, default=None,
                   help="configurations per kernel signature, the default included (default 16)")
    g.add_argument("--budget-s", type=float, default=None,
                   help="stop starting new measurements after this many seconds (trials then default to 64)")
    t.add_argument("--timeout-s", type=float, default=120.0,
                   help="a measurement taking longer is a hang: its worker is killed (default 120)")
    t.add_argument("--repeat", type=int, default=10, help="timed runs per measurement (default 10)")
    t.add_argument("--workers", type=int, default=1, help="measuring processes on --device (default 1)")
    t.add_argument("--devices", help="comma-separated OpenCL devices, one worker each (e.g. nvidia:0,nvidia:1)")
    t.add_argument("--ray", action="store_true",
                   help="run the workers as Ray actors on a local Ray (without --devices/--workers: one per local "
                        "device like --device)")
    t.add_argument("--ray-address", help="join this Ray cluster: one worker per node, each on its default device")
    t.add_argument("--cost-model", default="auto", metavar="auto|none|PATH",
                   help="what orders the search: the learned cost model shipped for the device (auto, default; "
                        "candidates predicted fastest first, kernels predicted to gain most first), an artifact "
                        "(PATH), or none (Optuna's TPE over each space)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--json", help="write the report as JSON")
    t.add_argument("--export", metavar="FILE", help="write every row of --db as JSON and exit (FILE.gz: gzipped)")
    t.add_argument("--compact", action="store_true",
                   help="with --export: medians only, one row per line (the repository's tuning-corpus/)")
    t.add_argument("--import", dest="import_", metavar="FILE", help="merge rows exported elsewhere into --db and exit")
    t.add_argument("--show", action="store_true", help="print what --db holds per device and exit")
    t.set_defaults(func=_cmd_tune)


def _cmd_tune(args: argparse.Namespace) -> int:
    from adreno_mlir.tuning.db import TuningDB

    if args.export or args.import_ or args.show:
        with TuningDB(args.db) as db:
            if args.export:
                n = db.export_json(args.export, compact=args.compact)
                print(f"exported {n} rows of {args.db} to {args.export}")
            if args.import_:
                n = db.import_json(args.import_)
                print(f"imported {n} rows from {args.import_} into {args.db}")
            if args.show:
                for key, counts in db.summary():
                    print(f"{key.short()}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return 0
    if not args.model:
        raise CompileError("tune needs a model (or --export / --import / --show)")
    if args.repeat < 1 or args.timeout_s <= 0 or args.workers < 1:
        raise CompileError("tune: --repeat and --workers must be at least 1 and --timeout-s positive")
    from adreno_mlir.cli_generate import decoder_program_of
    from adreno_mlir.cli_run import shape_options
    from adreno_mlir.options import textures_from_flag
    from adreno_mlir.tuning.tuner import format_report, tune

    opts = {"target": args.target, "textures": textures_from_flag(args.textures), "precision": args.precision,
            "layout": args.layout}
    trials = args.trials if args.trials is not None else (64 if args.budget_s else 16)
    devices = [d.strip() for d in args.devices.split(",")] if args.devices else None
    try:
        rep = tune(args.model, args.db, device=args.device, devices=devices, compile_options=opts, trials=trials,
                   budget_s=args.budget_s, timeout_s=args.timeout_s, repeat=args.repeat, workers=args.workers,
                   ray=args.ray, ray_address=args.ray_address, progress=not args.no_progress, seed=args.seed,
                   log=lambda s: print(s, file=sys.stderr), **shape_options(args),
                   decoder=decoder_program_of(args),
                   cost_model=None if args.cost_model.lower() == "none" else args.cost_model)
    except KeyboardInterrupt:
        print(f"interrupted: every finished measurement is in {args.db}; run the same command again to resume",
              file=sys.stderr)
        return 130
    print(format_report(rep))
    if args.decoder:
        chunk = f" --prefill-chunk {args.prefill_chunk}" if args.decoder == "prefill" else ""
        print(f"use it: adreno-mlir generate {args.model} --max-context {args.max_context}{chunk} --tuning-db "
              f"{args.db} --prompt-ids ...")
    else:
        print(f"use it: adreno-mlir run {args.model} --tuning-db {args.db}")
    if args.json:
        from dataclasses import asdict

        with open(args.json, "w") as f:
            json.dump({**asdict(rep), "speedup": rep.speedup}, f, indent=1, default=str)
    return 0
