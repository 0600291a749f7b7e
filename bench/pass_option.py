#!/usr/bin/env python3
"""Device time of the default compile with one pass option set to each of several values.

    python bench/pass_option.py --models /tmp/m/fastvit_t8.onnx,/tmp/m/mobilenet_v2.onnx \
        --option fuse-depthwise-load.max_window=0,5,3 [--device nvidia] [--json out.json]

Per model, one compile per value: the plan's pipeline (`compile()`'s default for the device,
learned defaults included) with `PASS{OPTION=VALUE}` written into the pass's options (the
pass must be in the pipeline). Device time is the sum of the OpenCL event times of one
inference (median of `--rounds` rounds of `--repeat` profiled runs), the values measured in
turn within each round so that a drift of the device moves all alike. Outputs are compared
with the first value's (relative max error). Ends with a Markdown table: each value's device
ms and its ratio to the first value's, and the geomean of the ratios.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def with_option(pipeline: str, pass_name: str, option: str, value: str) -> str:
    """`pipeline` with `option=value` in `pass_name`'s options (replacing a value it has)."""
    m = re.search(rf"(?<![\w-]){re.escape(pass_name)}(\{{[^}}]*\}})?", pipeline)
    if m is None:
        raise SystemExit(f"pass {pass_name} is not in the pipeline: {pipeline}")
    opts = m.group(1)[1:-1].split() if m.group(1) else []
    opts = [o for o in opts if not o.startswith(f"{option}=")] + [f"{option}={value}"]
    return pipeline[: m.start()] + f"{pass_name}{{{' '.join(opts)}}}" + pipeline[m.end():]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="comma-separated .onnx paths (weights filled)")
    ap.add_argument("--option", required=True, help="PASS.OPTION=V1,V2,... (the first value is the reference)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    spec, _, values = args.option.partition("=")
    pass_name, _, option = spec.rpartition(".")
    values = [v for v in values.split(",") if v]
    if not pass_name or not option or not values:
        raise SystemExit("--option takes PASS.OPTION=V1,V2,...")

    import adreno_mlir
    from learned_defaults import feeds_for, measure_variants

    rows = []
    for path in args.models.split(","):
        name = Path(path).stem
        rec: dict = {"model": name}
        try:
            cms = {}
            for v in values:
                t = time.perf_counter()
                cms[v] = adreno_mlir.compile(path, device=args.device,
                                             pipeline=lambda p, v=v: with_option(p, pass_name, option, v))
                rec[f"{v}_compile_s"] = time.perf_counter() - t
                rec[f"{v}_launches"] = len(cms[v].executable.plan.launches)
            rec.update(measure_variants(cms, feeds_for(cms[values[0]], 1), args.rounds, args.repeat))
            log(f"[{name}] device ms: " + ", ".join(f"{option}={v} {rec[f'{v}_ms']:.4f}" for v in values))
        except Exception as e:  # one model's failure is a row, not the end of the run
            rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"[{name}] error: {rec['error']}")
        rows.append(rec)
        if args.json:
            Path(args.json).write_text(json.dumps({"option": args.option, "rows": rows}, indent=1))

    head = "".join(f" {option}={v} ms |" for v in values) + "".join(f" {v}/{values[0]} |" for v in values[1:])
    print(f"\n| model |{head} max err |")
    print("|---|" + "---:|" * (2 * len(values) - 1) + "---:|")
    ratios: dict[str, list[float]] = {v: [] for v in values[1:]}
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | error: {r['error'][:80]} |")
            continue
        cells = "".join(f" {r[f'{v}_ms']:.4f} |" for v in values)
        for v in values[1:]:
            ratios[v].append(r[f"{v}_ms"] / r[f"{values[0]}_ms"])
            cells += f" {ratios[v][-1]:.3f} |"
        err = max(x for k, x in r.items() if k.endswith("_err"))
        print(f"| {r['model']} |{cells} {err:.1e} |")
    for v, x in ratios.items():
        if x:
            print(f"{option}={v} / {option}={values[0]}: geomean {math.exp(sum(map(math.log, x)) / len(x)):.3f} "
                  f"over {len(x)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
