"""The OpenCL C the compiler prints, as one sha256 per (model, plan): a refactor's check.

    python bench/opencl_digest.py -o before.json            # on the old tree
    python bench/opencl_digest.py -o after.json --compare before.json

Compiles (imports, runs the plan's passes and prints; no OpenCL device is touched, so the
result is the same on every machine) the shared models of `../shared/models/graphs` and
`next` (or `--models`) on every plan, with seeded weights from `materialize.py` (the
weights do not change the program text, but a folded constant could). With `--compare`,
prints the (model, plan) pairs whose program changed and exits 1 if any did; `--keep DIR`
writes every program to DIR/<model>-<plan>.cl for a diff.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ADRENO_SHARED", REPO.parent / "shared"))

PLANS = {
    # name: (layout, textures, precision, target); the CompilePlan of each (adreno_mlir.plan)
    "nchw-cpu": ("nchw", False, "fp32", "pocl-cpu"),
    "nchw-gpu": ("nchw", False, "fp32", "adreno-740"),
    "nchw4c-buffers": ("nchw4c", False, "fp32", "adreno-740"),
    "nchw4c-textures": ("nchw4c", True, "fp32", "adreno-740"),
    "fp16-acc32": ("nchw4c", True, "fp16-acc32", "adreno-740"),
    "fp16": ("nchw4c", True, "fp16", "adreno-740"),
    "nchw4c-nvidia": ("nchw4c", True, "fp32", "nvidia-opencl"),
}


def digest(path: Path, plan: str) -> tuple[str, str, float]:
    from adreno_mlir.api import lower
    from adreno_mlir.frontend.onnx_importer import import_onnx
    from adreno_mlir.plan import make_plan

    layout, textures, precision, target = PLANS[plan]
    start = time.perf_counter()
    compile_plan = make_plan(target, textures=textures, precision=precision, layout=layout)  # touches no device
    _, source = lower(import_onnx(str(path)), compile_plan)
    return hashlib.sha256(source.encode()).hexdigest(), source, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="JSON file of {model: {plan: sha256}}")
    ap.add_argument("--compare", help="a JSON file written before: report the differences")
    ap.add_argument("--models", nargs="*", help="model names (default: graphs/ and next/)")
    ap.add_argument("--plans", nargs="*", default=list(PLANS), choices=list(PLANS))
    ap.add_argument("--keep", help="write every program to this folder")
    args = ap.parse_args()

    import importlib.util

    spec = importlib.util.spec_from_file_location("materialize", SHARED / "models" / "materialize.py")
    materialize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(materialize)
    import tempfile

    import onnx

    folders = [SHARED / "models" / "graphs", SHARED / "models" / "next"]
    paths = {p.stem: p for f in folders for p in sorted(f.glob("*.onnx"))}
    names = args.models or list(paths)
    keep = Path(args.keep) if args.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    result: dict[str, dict[str, str]] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model = Path(tmp) / f"{name}.onnx"
            onnx.save(materialize.materialize(str(paths[name]), seed=0), str(model))
            result[name] = {}
            for plan in args.plans:
                try:
                    h, source, s = digest(model, plan)
                except Exception as e:  # noqa: BLE001 - a plan a model cannot take is recorded as such
                    h, source, s = f"error: {type(e).__name__}: {str(e)[:200]}", "", 0.0
                result[name][plan] = h
                seconds[f"{name}/{plan}"] = s
                if keep and source:
                    (keep / f"{name}-{plan}.cl").write_text(source)
                print(f"{name:28s} {plan:16s} {h[:16]}  {s:6.2f} s", flush=True)
    Path(args.output).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"compile time: {sum(seconds.values()):.1f} s over {len(seconds)} programs")
    if not args.compare:
        return 0
    before = json.loads(Path(args.compare).read_text())
    changed = [(m, p) for m in result for p in result[m] if before.get(m, {}).get(p) != result[m][p]]
    for m, p in changed:
        print(f"CHANGED {m} {p}: {before.get(m, {}).get(p, 'absent')[:40]} -> {result[m][p][:40]}")
    print(f"{len(changed)} of {sum(len(v) for v in result.values())} programs changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
