#!/usr/bin/env python3
"""Matrix products with and without work-group tiles in local memory (gemm family key
`local_tile`), against cuBLAS (torch.matmul, TF32 off) in the same run.

    python bench/gemm_local_tile.py [--device nvidia] [--set encoders|vit|all] [--repeat 20] [--json out.json]

Per shape (M, K, N[, batch]): the device time of our matmul kernel (OpenCL events, median
of --repeat) with local_tile 0 (the schedules before local tiles) and 16 / 32 / 64 / 128, its
GFLOP/s, and the ratio to cuBLAS's time for the same product (CUDA events, median). The
shapes are the products of the transformer encoders of shared/models/hf (distilbert,
gpt2, whisper's encoder, t5, llama_tiny), their attention's batched products, and two
square ones.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR.parent), str(BENCH_DIR)]

from bench import log, torch_matmul_ms  # noqa: E402

SHAPES = [  # (name, batch, M, K, N, B transposed (K-contiguous, as attention's keys))
    ("distilbert qkv/out", (), 128, 768, 768, False),
    ("distilbert ffn up", (), 128, 768, 3072, False),
    ("distilbert ffn down", (), 128, 3072, 768, False),
    ("distilbert scores", (12,), 128, 64, 128, True),
    ("distilbert context", (12,), 128, 128, 64, False),
    ("gpt2 qkv", (), 64, 768, 2304, False),
    ("whisper qkv", (), 1500, 384, 384, False),
    ("whisper ffn up", (), 1500, 384, 1536, False),
    ("whisper scores", (6,), 1500, 64, 1500, True),
    ("llama mlp", (), 64, 512, 1376, False),
    ("square 1024", (), 1024, 1024, 1024, False),
    ("square 2048", (), 2048, 2048, 2048, False),
]
VIT_SHAPES = [  # issue 30's transformer shapes: ViT-B/16 (197 tokens) and ViT-B/32 (50 tokens)
    ("vit_b_16 qkv", (), 197, 768, 2304, False),
    ("vit_b_16 out", (), 197, 768, 768, False),
    ("vit_b_16 ffn up", (), 197, 768, 3072, False),
    ("vit_b_16 ffn down", (), 197, 3072, 768, False),
    ("vit_b_16 scores", (12,), 197, 64, 197, True),
    ("vit_b_16 context", (12,), 197, 197, 64, False),
    ("vit_b_32 qkv", (), 50, 768, 2304, False),
    ("vit_b_32 ffn up", (), 50, 768, 3072, False),
    ("vit_b_32 ffn down", (), 50, 3072, 768, False),
]
SETS = {"encoders": SHAPES, "vit": VIT_SHAPES, "all": SHAPES + VIT_SHAPES}
TILES = ("default", 0, 16, 32, 64, 128)


def model(batch, m, k, n, trans):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [*batch, m, k])
    if batch:  # both operands computed (attention)
        bshape = [*batch, n, k] if trans else [*batch, k, n]
        ins = [a, helper.make_tensor_value_info("b", TensorProto.FLOAT, bshape)]
        inits = []
    else:
        bshape = [k, n]
        ins, inits = [a], [numpy_helper.from_array(rng.standard_normal(bshape).astype(np.float32) * 0.05, "b")]
    nodes = []
    b = "b"
    if trans:
        perm = list(range(len(bshape)))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        nodes.append(helper.make_node("Transpose", ["b"], ["bt"], perm=perm))
        b = "bt"
    nodes.append(helper.make_node("MatMul", ["a", b], ["y"], name="mm"))
    g = helper.make_graph(nodes, "mm", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), bshape


def cublas_ms(batch, m, k, n, trans, repeat):
    return torch_matmul_ms((*batch, m, k), (*batch, n, k) if trans else (*batch, k, n), repeat, transpose_b=trans)


def main(argv=None):
    import adreno_mlir

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="", help="only the shapes whose name contains this text")
    ap.add_argument("--set", default="encoders", choices=sorted(SETS),
                    help="encoders: the hf encoders' products and two squares; vit: ViT-B/16 and /32's")
    args = ap.parse_args(argv)
    rows = []
    for name, batch, m, k, n, trans in SETS[args.set]:
        if args.only not in name:
            continue
        onnx_model, bshape = model(batch, m, k, n, trans)
        rng = np.random.default_rng(1)
        feeds = {"a": rng.standard_normal([*batch, m, k]).astype(np.float32)}
        if batch:
            feeds["b"] = rng.standard_normal(bshape).astype(np.float32)
        flops = 2 * m * n * k * int(np.prod(batch or (1,)))
        row = {"shape": name, "batch": list(batch), "m": m, "k": k, "n": n, "b_transposed": trans,
               "cublas_ms": cublas_ms(batch, m, k, n, trans, args.repeat), "ours": {}}
        ref = None
        for t in TILES:
            try:
                cm = adreno_mlir.compile(onnx_model, device=args.device, textures=False, layout="nchw",
                                         overrides=None if t == "default" else {"loc:mm": {"local_tile": t}})
                out = cm.run(feeds)["y"]
                ref = out if ref is None else ref
                err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))
                prof = cm.profile(feeds, repeat=args.repeat, by="node")
                ms = prof.get("mm", sum(prof.values()))
                kernels = [l.split("(")[0].split()[-1] for l in cm.source.splitlines() if "__kernel" in l]
                row["ours"][str(t)] = {"ms": ms, "gflops": flops / ms / 1e6, "err_vs_default": err,
                                       "kernels": kernels}
                vs = f", x{ms / row['cublas_ms']:.2f} cuBLAS" if row["cublas_ms"] else ""
                log(f"{name} local_tile={t}: {ms:.4f} ms, {flops / ms / 1e6:.0f} GFLOP/s{vs} ({kernels})")
            except Exception as e:  # noqa: BLE001 - keep the other rows
                row["ours"][str(t)] = {"error": f"{type(e).__name__}: {e}"[:300]}
                log(f"{name} local_tile={t}: {e}")
        rows.append(row)
    print("| shape | M x K x N (batch) | cuBLAS ms | default ms | no local tile | lt16 | lt32 | lt64 | lt128 | default / cuBLAS | best / cuBLAS |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"

    for r in rows:
        ms = {t: r["ours"][str(t)].get("ms") for t in TILES}
        best = min(v for v in ms.values() if v is not None)
        cb = r["cublas_ms"]
        print(f"| {r['shape']} | {r['m']}x{r['k']}x{r['n']} {tuple(r['batch']) or ''} | {cb and f'{cb:.4f}' or '-'} | "
              + " | ".join(f"{ms[t]:.4f}" if ms[t] is not None else "err" for t in TILES)
              + f" | {ratio(ms['default'], cb)} | {ratio(best, cb)} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
