#!/usr/bin/env python3
"""Vector loads as `vloadN` calls or as typed-pointer accesses: what the OpenCL compiler makes
of each, and the device time of the same kernels printed both ways, in one run.

    python bench/vector_access.py [--device nvidia] [--repeat 20] [--json out.json] [--only TEXT]

OpenCL's `vload4(i, p)` needs only the element's alignment (4 bytes for a float), so a
compiler that cannot prove more must read the four floats one at a time; an access through
a `float4` pointer (`((__global const float4*)p)[i]`) promises 16-byte alignment and can be
one 128-bit load. This bench compiles every case twice, with
`convert-graph-to-opencl{vector_access=vload}` (every vector access a vloadN / vstoreN, the
printer's output before typed accesses) and `{vector_access=typed}` (those the IR proves
aligned through typed pointers; lowering/opencl_printer.py VECTOR_ACCESS_MODES), checks that
both give the same outputs, and reports per case:

- the device time of the model's kernels (OpenCL events, `cm.profile`, median of --repeat),
  both ways, alternating;
- where the device's program binary is PTX (NVIDIA), the count of vector (`.v2`/`.v4`) and
  scalar 32-bit loads from global and shared memory in each.
- the cuBLAS time of the matrix products (torch.matmul, TF32 off) where PyTorch has CUDA.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR.parent), str(BENCH_DIR)]

from bench import log  # noqa: E402


def matmul_model(m: int, k: int, n: int, seed: int = 0):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "mm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array((rng.standard_normal([k, n]) * 0.05).astype(np.float32), "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def shared_model(shared: Path, name: str):
    """A shared model (`next/vit_b_32`) with its stripped weights filled (materialize.py, seed 0)."""
    models = str(shared / "models")
    if models not in sys.path:
        sys.path.insert(0, models)
    from materialize import materialize

    return materialize(str(shared / "models" / f"{name}.onnx"), seed=0)


def cases(shared: Path, models: list[str]):
    from tests.test_matmul_nbits import nbits_model

    out = [(f"matmul {m}x{k}x{n}", (lambda m=m, k=k, n=n: matmul_model(m, k, n)), (m, k, n))
           for m, k, n in ((2048, 2048, 2048), (1500, 384, 1536), (197, 768, 3072), (197, 768, 768),
                           (50, 768, 2304), (197, 3072, 768))]
    out += [(f"int4 GEMV {k}x{n}", (lambda k=k, n=n: nbits_model((1, 1), k, n, 4, 32)), None)
            for k, n in ((4096, 11008), (1024, 32000), (1024, 3072), (2816, 1024))]
    out += [(f"model {m}", (lambda m=m: shared_model(shared, m)), None) for m in models]
    return out


def with_access(mode: str):
    """A `pipeline=` for compile(): the plan's pipeline with
    convert-graph-to-opencl{vector_access=MODE} (see bench/pass_option.py)."""
    from pass_option import with_option

    return lambda p: with_option(p, "convert-graph-to-opencl", "vector_access", mode)


PTX_PATTERNS = {
    "ld.global v": r"ld\.global(?:\.nc)?\.v[24]\.",
    "ld.global 32": r"ld\.global(?:\.nc)?\.(?:f32|b32|u32|s32)\b",
    "ld.shared v": r"ld\.shared\.v[24]\.",
    "ld.shared 32": r"ld\.shared\.(?:f32|b32|u32|s32)\b",
    "st.global v": r"st\.global\.v[24]\.",
}


def ptx_counts(source: str, device) -> dict | None:
    """Counts of load kinds in the device's binary of `source`, if it is PTX text."""
    import pyopencl as cl

    ctx = cl.Context([device])
    prg = cl.Program(ctx, source).build()
    binary = prg.get_info(cl.program_info.BINARIES)[0]
    text = binary.decode("latin-1") if isinstance(binary, bytes) else str(binary)
    if ".version" not in text or ".target" not in text:
        return None
    return {k: len(re.findall(p, text)) for k, p in PTX_PATTERNS.items()}


def feeds_for(model) -> dict:
    rng = np.random.default_rng(1)
    feeds = {}
    init = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def main(argv=None) -> int:
    import adreno_mlir
    from adreno_mlir.runtime.device import find_device

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--models", default="", help="shared models too, e.g. next/vit_b_32,graphs/resnet50 "
                    "(default plan of the device: textures where it has them)")
    ap.add_argument("--shared", default=None, help="the shared folder (default: $ADRENO_SHARED or ../shared)")
    args = ap.parse_args(argv)
    from bench import shared_dir

    models = [m for m in args.models.split(",") if m]
    dev = find_device(args.device)
    log(f"device: {dev.name.strip()} ({dev.platform.name.strip()})")
    rows = []
    for name, build, mkn in cases(shared_dir(args.shared), models):
        if args.only not in name:
            continue
        model = build()
        feeds = feeds_for(model)
        row: dict = {"case": name}
        textures = None if name.startswith("model ") else False
        try:
            cms = {v: adreno_mlir.compile(model, device=args.device, textures=textures, pipeline=with_access(v))
                   for v in ("vload", "typed")}
            outs = {v: cm.run(feeds) for v, cm in cms.items()}
            ref = outs["vload"]
            row["max_rel_diff"] = max(float(np.abs(outs["typed"][k] - r).max() / max(np.abs(r).max(), 1e-30))
                                      for k, r in ref.items())
            times = {v: [] for v in cms}
            for _ in range(args.rounds):
                for v, cm in cms.items():
                    times[v].append(sum(cm.profile(feeds, repeat=args.repeat).values()))
            row["ms"] = {v: statistics.median(t) for v, t in times.items()}
            if mkn:
                from bench import torch_matmul_ms

                m, k, n = mkn
                row["cublas_ms"] = torch_matmul_ms((m, k), (k, n), args.repeat)
            row["kernels"] = [l.split("(")[0].split()[-1] for l in cms["vload"].source.splitlines() if "__kernel" in l]
            row["ptx"] = {v: ptx_counts(cm.source, dev) for v, cm in cms.items()}
            log(f"{name}: vload {row['ms']['vload']:.4f} ms, typed {row['ms']['typed']:.4f} ms "
                f"(x{row['ms']['vload'] / row['ms']['typed']:.2f}), cuBLAS {row.get('cublas_ms')}, diff {row['max_rel_diff']:.1e}, "
                f"ptx {row['ptx']}, {row['kernels']}")
        except Exception as e:  # noqa: BLE001 - keep the other rows
            row["error"] = f"{type(e).__name__}: {e}"[:400]
            log(f"{name}: {row['error']}")
        rows.append(row)
    print("| case | vload ms | typed ms | vload / typed | cuBLAS ms | cuBLAS / typed | max rel diff | kernels |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "ms" in r:
            cb = r.get("cublas_ms")
            cb_ratio = f"{cb / r['ms']['typed']:.2f}" if cb else "-"
            print(f"| {r['case']} | {r['ms']['vload']:.4f} | {r['ms']['typed']:.4f} | "
                  f"{r['ms']['vload'] / r['ms']['typed']:.2f} | {f'{cb:.4f}' if cb else '-'} | "
                  f"{cb_ratio} | {r['max_rel_diff']:.1e} | {', '.join(r['kernels'])} |")
        else:
            print(f"| {r['case']} | error | | | | | | {r.get('error', '')[:120]} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
