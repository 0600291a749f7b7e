#!/usr/bin/env python3
"""Fused attention (`graph.attention`) under each schedule, against PyTorch in the same run.

    python bench/attention.py [--shapes tiny_bert,vit_b_32,...] [--sweep] [--repeat 50] [--json out.json]

For attention shapes of the shared transformers (and a 197-token ViT-B/16 and a 512-token
BERT), each an ONNX model softmax(q @ k^T * scale [+ bias]) @ v compiled for the device:

- `default`: the compile's default configuration (the row kernel up to 4096 keys);
- `row`: the row kernel (kernel_config tile 0: a work-group per query row, its scores in
  local memory);
- `tiled`: the tiled kernel with its defaults for the device (AttentionTiledSpec: query rows
  per work-group sharing K/V tiles in local memory, key shares with an online softmax);
- with `--sweep`, every (tile, key_split, kv_tile) of a small grid;
- `unfused`: fuse-attention off (two products and a softmax, three or four kernels);
- PyTorch on the same GPU when there is one: `F.scaled_dot_product_attention` and the
  unfused math (matmul, softmax, matmul), CUDA-event medians, TF32 off.

Device ms are the medians of OpenCL event times (sum over the run's kernels); every
configuration is checked against numpy (float64) before it is timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR.parent)]

# name: (batch dims, M, L, D, Dv, bias shape or None)
SHAPES = {
    "tiny_bert": ((1, 4), 128, 128, 64, 64, None),
    "vit_b_32": ((1, 12), 50, 50, 64, 64, None),
    "vit_b_16": ((1, 12), 197, 197, 64, 64, None),
    "swin_t_s1": ((64, 3), 49, 49, 32, 32, (1, 3, 49, 49)),
    "swin_t_s3": ((4, 12), 49, 49, 32, 32, (1, 12, 49, 49)),
    "mobilevit_s": ((4, 4), 64, 64, 48, 48, None),
    "levit_128s": ((1, 6), 49, 49, 16, 32, (1, 6, 49, 49)),
    "coatnet_nano": ((1, 16), 49, 49, 32, 32, (1, 16, 49, 49)),
    "bert_512": ((1, 12), 512, 512, 64, 64, None),
}
SWEEP = [(t, s, 32) for t in (4, 8, 16, 32) for s in (1, 4, 8)] + [(8, 2, 16), (16, 4, 16), (2, 8, 32)]


def model_of(batch, m, keys, d, dv, bias_shape):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    q_shape, k_shape, v_shape = (*batch, m, d), (*batch, keys, d), (*batch, keys, dv)
    rank = len(k_shape)
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[*range(rank - 2), rank - 1, rank - 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s0"], name="mm1"),
             helper.make_node("Mul", ["s0", "c"], ["s1"])]
    inits = [numpy_helper.from_array(np.array([d ** -0.5], np.float32), "c")]
    s = "s1"
    if bias_shape is not None:
        inits.append(numpy_helper.from_array(rng.standard_normal(bias_shape).astype(np.float32), "bias"))
        nodes.append(helper.make_node("Add", [s, "bias"], ["s2"]))
        s = "s2"
    nodes += [helper.make_node("Softmax", [s], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"], name="mm2")]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh) for n, sh in (("q", q_shape), ("k", k_shape),
                                                                                 ("v", v_shape))]
    g = helper.make_graph(nodes, "attention", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    bias = None if bias_shape is None else numpy_helper.to_array(inits[1])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), bias


def reference(feeds, bias, scale):
    q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
    s = q @ np.swapaxes(k, -1, -2) * scale + (0 if bias is None else bias)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def torch_times(shape, feeds, bias, repeat):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    q, k, v = (torch.from_numpy(feeds[n]).cuda() for n in "qkv")
    b = None if bias is None else torch.from_numpy(bias).cuda()
    scale = shape[3] ** -0.5

    def sdpa():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=b, scale=scale)

    def math():
        s = (q @ k.transpose(-1, -2)) * scale
        if b is not None:
            s = s + b
        return torch.softmax(s, -1) @ v

    out = {}
    for name, fn in (("torch_sdpa", sdpa), ("torch_math", math)):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        out[name] = float(np.median(times))
    return out


def run(args):
    import adreno_mlir

    rows = []
    for name in args.shapes.split(","):
        batch, m, keys, d, dv, bias_shape = SHAPES[name]
        model, bias = model_of(batch, m, keys, d, dv, bias_shape)
        rng = np.random.default_rng(1)
        feeds = {"q": rng.standard_normal((*batch, m, d)).astype(np.float32),
                 "k": rng.standard_normal((*batch, keys, d)).astype(np.float32),
                 "v": rng.standard_normal((*batch, keys, dv)).astype(np.float32)}
        ref = reference(feeds, bias, d ** -0.5)
        # the tiled kernel with its defaults for the device (a key given selects it; the
        # split is the default's rule: up to 8 work-items a row, 8+ keys each)
        split = max(n for n in (1, 2, 4, 8) if n == 1 or 8 * n <= keys)
        configs = [("default", None), ("row", {"tile": 0}), ("tiled", {"key_split": split})]
        if args.sweep:
            configs += [(f"t{t}_s{s}_kv{kv}", {"tile": t, "key_split": s, "kv_tile": kv}) for t, s, kv in SWEEP]
        configs.append(("unfused", "unfused"))
        row = {"shape": name, "batch": batch, "m": m, "keys": keys, "d": d, "dv": dv, "bias": bias_shape is not None,
               "configs": {}}
        for label, cfg in configs:
            pipeline = lambda p: p.replace("fuse-attention{", "fuse-attention{max-keys=0 ")  # noqa: E731
            if cfg == "unfused":
                pipeline = lambda p: p.replace("fuse-attention{", "fuse-attention{enabled=false ")  # noqa: E731
            overrides = None if cfg in (None, "unfused") else {"loc:mm2": cfg}
            t0 = time.perf_counter()
            try:
                cm = adreno_mlir.compile(model, target=args.target, device=args.device, layout="nchw",
                                         textures=False, pipeline=pipeline, overrides=overrides,
                                         runtime="pyopencl")
            except Exception as e:  # noqa: BLE001 - a configuration the lowering refuses: reported
                row["configs"][label] = {"error": str(e).splitlines()[0][:200]}
                continue
            (got,) = cm.run(feeds).values()
            err = float(np.abs(got - ref).max() / np.abs(ref).max())
            ex = cm.executable
            s, e = ex.profile_events([feeds[n] for n in cm.input_names], repeat=args.repeat)
            per = np.median((e - s) * 1e-6, axis=0)
            kernels = [la.kernel for la in ex.plan.launches]
            cfg_text = " ".join(k for k in kernels if k.startswith("attention"))  # the name says the schedule
            row["configs"][label] = {"device_ms": float(per.sum()), "kernels": kernels, "err": err,
                                     "attention_kernel": cfg_text, "compile_s": time.perf_counter() - t0}
            ok = "ok" if err < 1e-4 else "WRONG"
            print(f"{name:13s} {label:14s} {per.sum() * 1e3:9.1f} us  {len(kernels)} kernels  err {err:.1e} {ok}  "
                  f"{cfg_text}", flush=True)
        row.update(torch_times((batch, m, keys, d), feeds, bias, args.repeat))
        for k in ("torch_sdpa", "torch_math"):
            if k in row:
                print(f"{name:13s} {k:14s} {row[k] * 1e3:9.1f} us", flush=True)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--sweep", action="store_true", help="also every (tile, key_split, kv_tile) of a small grid")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--target", default="auto")
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = run(args)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
