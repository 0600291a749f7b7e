#!/usr/bin/env python3
"""Benchmark the transformer and newer-CNN graphs of shared/models/next (issue 12) and the
Hugging Face exports of shared/models/hf (issue 28: names starting with `hf_`).

    python bench/transformers.py [--models tiny_bert,vit_b_32,swin_t,efficientnet_v2_s]
    python bench/transformers.py --models hf   # the six Hugging Face exports
                                 [--plans nchw,buffer4c,texture] [--device pocl|nvidia]
                                 [--repeat N] [--json out.json]

Per model and plan: compile time, our median wall latency (`CompiledModel.run`, with the
host<->device copies) and summed device time (OpenCL events, `CompiledModel.profile`),
the max relative error against onnxruntime (max |ours - ort| / max |ort|, same weights and
input), and the peers measured in the same run:

- onnxruntime's CPU latency (always; on a CPU-only machine it is the ratio's peer);
- with a CUDA device: PyTorch eager and CUDA-graph replay (fp32, TF32 off) of the same
  architecture built from torchvision / torch.nn with random weights (the exported graphs
  rename and transpose weights, so they are not loaded into the twins: latency only); for
  the `hf_` models the `transformers` model of the same config the export was made from
  (`hf_twin`: default configs, llama and whisper at the sizes of the exported graphs).

Device time is split into families (matmul/gemm, softmax, layer norm, copies = transpose /
slice / concat / gather / pad, element-wise, conv, other): what share of a transformer is
its matrix products, softmax, normalisation and data movement.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR.parent), str(BENCH_DIR)]

from bench import CACHE_DIR, log, max_rel_err, shared_dir, time_calls  # noqa: E402

MODELS = ["tiny_bert", "vit_b_32", "swin_t", "efficientnet_v2_s"]
HF_MODELS = ["hf_distilbert", "hf_gpt2", "hf_llama_tiny", "hf_whisper_tiny_encoder", "hf_t5_small_encoder",
             "hf_segformer_b0"]
PLANS = {
    "nchw": {"textures": False, "layout": "nchw"},
    "buffer4c": {"textures": False, "layout": "nchw4c"},
    "texture": {"textures": True},
    "texture-fp16": {"textures": True, "precision": "fp16-acc32"},
}
FAMILIES = (
    ("matmul", ("matmul", "gemm", "gemv")),
    ("softmax", ("softmax",)),
    ("layer_norm", ("layer_norm",)),
    ("copies", ("transpose", "slice", "concat", "gather", "pad", "copy", "expand", "pack", "unpack")),
    ("conv", ("conv", "dwconv", "winograd")),
)


def family(kernel: str) -> str:
    for name, prefixes in FAMILIES:
        if kernel.startswith(prefixes):
            return name
    return "other (element-wise, pools)"


def materialized(shared: Path, name: str) -> Path:
    import hashlib
    import os

    folder = "hf" if name.startswith("hf_") else "next"
    graph = shared / "models" / folder / f"{name}.onnx"
    digest = hashlib.sha256(graph.read_bytes()).hexdigest()[:12]
    out = CACHE_DIR / f"{name}-{folder}-seed0-{digest}.onnx"
    if not out.exists():
        sys.path.insert(0, str(shared / "models"))
        from materialize import materialize

        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(materialize(str(graph), seed=0).SerializeToString())
        os.replace(tmp, out)
    return out


def _transformers_library():
    """Hugging Face's `transformers`, not this file (which has its name and whose folder
    is on sys.path)."""
    import importlib

    here = Path(__file__).resolve()
    mod = sys.modules.get("transformers")
    if mod is not None and Path(getattr(mod, "__file__", "") or "").resolve() != here:
        return mod
    sys.modules.pop("transformers", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]
    try:
        return importlib.import_module("transformers")
    finally:
        sys.path[:] = saved


def hf_twin(name: str):
    """The `transformers` model whose export `name` is (random weights), as a module that
    takes the export's inputs and returns its one output."""
    import torch

    lib = _transformers_library()
    DistilBertConfig, DistilBertModel, GPT2Config, GPT2Model = (lib.DistilBertConfig, lib.DistilBertModel,
                                                                lib.GPT2Config, lib.GPT2Model)
    LlamaConfig, LlamaModel, T5Config, T5EncoderModel = lib.LlamaConfig, lib.LlamaModel, lib.T5Config, lib.T5EncoderModel
    SegformerConfig, SegformerForSemanticSegmentation = lib.SegformerConfig, lib.SegformerForSemanticSegmentation
    WhisperConfig, WhisperModel = lib.WhisperConfig, lib.WhisperModel

    if name == "hf_distilbert":
        model = DistilBertModel(DistilBertConfig())
    elif name == "hf_gpt2":
        model = GPT2Model(GPT2Config())
    elif name == "hf_llama_tiny":  # the exported graph's sizes: 4 layers, 512 wide, 8 heads, 2 KV heads
        model = LlamaModel(LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                                       num_attention_heads=8, num_key_value_heads=2, vocab_size=32000))
    elif name == "hf_t5_small_encoder":
        model = T5EncoderModel(T5Config())
    elif name == "hf_whisper_tiny_encoder":  # whisper-tiny: 4 layers, 384 wide, 6 heads
        model = WhisperModel(WhisperConfig(d_model=384, encoder_layers=4, decoder_layers=4,
                                           encoder_attention_heads=6, decoder_attention_heads=6,
                                           encoder_ffn_dim=1536, decoder_ffn_dim=1536)).get_encoder()
    elif name == "hf_segformer_b0":
        model = SegformerForSemanticSegmentation(SegformerConfig(num_labels=2))
    else:
        raise KeyError(name)

    class First(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            out = self.m(x)
            return out[0] if isinstance(out, tuple) else (out.logits if hasattr(out, "logits") else
                                                          out.last_hidden_state)

    return First(model)


def torch_twin(name: str):
    """The architecture of `name` in PyTorch (random weights), or None."""
    import torch
    import torchvision

    if name.startswith("hf_"):
        return hf_twin(name)
    if name == "tiny_bert":  # 4 post-norm layers, d 256, 4 heads, FFN 1024, GELU, batch first
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True)
        return torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    return getattr(torchvision.models, name)(weights=None)


def torch_times(name, x, warmup, repeat):
    """(eager ms, CUDA-graph ms) medians, or (None, None) without CUDA."""
    try:
        import torch
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    net = torch_twin(name).eval().to("cuda")
    xt = torch.from_numpy(x).to("cuda")  # token ids: int64, as the export takes them
    with torch.inference_mode():
        eager, _ = time_calls(lambda: net(xt), warmup, repeat, sync=torch.cuda.synchronize)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                net(xt)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            net(xt)
        graph, _ = time_calls(g.replay, warmup, repeat, sync=torch.cuda.synchronize)
    return statistics.median(eager), statistics.median(graph)


def gemm_overrides(model, options, args) -> dict:
    """`local_tile` for every matrix product of the model that can take it (analyze's
    gemm-family kernels of this plan, keyed by their node)."""
    from adreno_mlir.analyze import analyze_model
    from adreno_mlir.plan import make_plan

    plan = make_plan("auto", args.device, textures=options.get("textures"), layout=options.get("layout"),
                     precision=options.get("precision", "fp32"))
    from adreno_mlir.analyze import kernel_ops
    from adreno_mlir.lowering.families import config_of, family_of, head_of
    from adreno_mlir.lowering.families.gemm import tileable

    analysis = analyze_model(model, plan=plan)
    out = {}
    for kop, c in zip(kernel_ops(analysis.module), analysis.costs):
        head = head_of(kop)
        if family_of(head).name == "gemm" and tileable(head) and config_of(kop).get("k_split", 1) == 1:
            out[f"loc:{c.name}"] = {"local_tile": args.gemm_local_tile}
    log(f"local_tile {args.gemm_local_tile} on {len(out)} matrix products")
    return out


def bench(name, args, shared):
    import onnx
    import onnxruntime as ort

    import adreno_mlir

    path = materialized(shared, name)
    model = onnx.load(str(path))
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    if inp.type.tensor_type.elem_type == onnx.TensorProto.INT64:  # token ids
        feeds = {inp.name: np.random.default_rng(1).integers(0, 1000, shape).astype(np.int64)}
    else:
        feeds = {inp.name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ort_times, ref = time_calls(lambda: sess.run(None, feeds), args.warmup, args.repeat)
    row = {"model": name, "ort_ms": statistics.median(ort_times), "plans": {}}
    try:
        row["torch_ms"], row["torch_graph_ms"] = torch_times(name, feeds[inp.name], args.warmup, args.repeat)
    except Exception as e:  # noqa: BLE001 - no twin: our figures still count
        log(f"[{name}] no PyTorch twin: {type(e).__name__}: {e}")
        row["torch_ms"] = row["torch_graph_ms"] = None
    log(f"[{name}] onnxruntime {row['ort_ms']:.2f} ms, torch eager {row['torch_ms']}, graph {row['torch_graph_ms']}")
    for plan in args.plans.split(","):
        v: dict = {}
        row["plans"][plan] = v
        try:
            t0 = time.perf_counter()
            options = dict(PLANS[plan])
            if args.without:
                options["pipeline"] = lambda p: p.replace(f"{args.without},", "").replace(f",{args.without}", "")
            if args.replace:
                old, _, new = args.replace.partition("=>")
                options["pipeline"] = lambda p, old=old, new=new: p.replace(old, new)
            if args.gemm_local_tile is not None:
                options["overrides"] = gemm_overrides(model, options, args)
            cm = adreno_mlir.compile(model, device=args.device, **options)
            v["compile_s"] = time.perf_counter() - t0
            times, out = time_calls(lambda: cm.run(feeds), args.warmup, args.repeat)
            v["ms"] = statistics.median(times)
            v["max_rel_err"] = max(max_rel_err(out[k], r) for k, r in zip(cm.output_names, ref))
            prof = cm.profile(feeds, repeat=max(3, min(args.repeat, 10)))
            v["device_ms"] = sum(prof.values())
            fams: dict[str, float] = {}
            for k, ms in prof.items():
                fams[family(k)] = fams.get(family(k), 0.0) + ms
            v["families"] = {k: {"ms": ms, "share": ms / v["device_ms"]} for k, ms in fams.items()}
            v["top"] = sorted(prof.items(), key=lambda kv: -kv[1])[:8]
            peer = row["torch_ms"] or row["ort_ms"]
            v["ratio"] = v["ms"] / peer
            if row["torch_graph_ms"]:
                v["ratio_graph"] = v["ms"] / row["torch_graph_ms"]
            log(f"[{name}] {plan}: {v['ms']:.2f} ms (device {v['device_ms']:.2f}), err {v['max_rel_err']:.2e}, "
                + ", ".join(f"{k} {d['share']:.0%}" for k, d in v["families"].items()))
            del cm
        except Exception as e:  # keep going with the other plans
            v["error"] = f"{type(e).__name__}: {e}"
            log(traceback.format_exc())
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--plans", default="nchw,buffer4c,texture")
    ap.add_argument("--device", default=None)
    ap.add_argument("--shared", default=None)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--without", default=None, metavar="PASS",
                    help="compile with PASS removed from the default pipeline (e.g. fuse-attention): what it buys")
    ap.add_argument("--replace", default=None, metavar="OLD=>NEW",
                    help="compile with OLD replaced by NEW in the default pipeline string, e.g. "
                         "'fuse-attention{=>fuse-attention{max-keys=128 '")
    ap.add_argument("--gemm-local-tile", type=int, default=None, metavar="T",
                    help="compile every matrix product that can take it with kernel_config local_tile = T "
                         "(0: none, the schedules before local tiles)")
    args = ap.parse_args(argv)
    unknown = [p for p in args.plans.split(",") if p not in PLANS]
    if unknown:
        ap.error(f"unknown plans {unknown}; choose from {', '.join(PLANS)}")
    shared = shared_dir(args.shared)
    names = HF_MODELS if args.models == "hf" else args.models.split(",")
    rows = [bench(m, args, shared) for m in names]
    peer = "torch eager" if rows and rows[0]["torch_ms"] else "onnxruntime"
    print(f"| model | plan | ours ms | device ms | {peer} ms | ratio | CUDA graph ms | ratio | max rel err |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        for plan, v in r["plans"].items():
            if "error" in v:
                print(f"| {r['model']} | {plan} | error: {v['error'][:80]} |")
                continue
            g = r["torch_graph_ms"]
            print(f"| {r['model']} | {plan} | {v['ms']:.2f} | {v['device_ms']:.2f} | "
                  f"{(r['torch_ms'] or r['ort_ms']):.2f} | {v['ratio']:.2f} | {g and f'{g:.2f}' or '-'} | "
                  f"{v.get('ratio_graph') and '%.2f' % v['ratio_graph'] or '-'} | {v['max_rel_err']:.1e} |")
    print()
    for r in rows:
        for plan, v in r["plans"].items():
            if "families" in v:
                print(f"{r['model']} {plan}: " + ", ".join(
                    f"{k} {d['share']:.0%}" for k, d in sorted(v["families"].items(), key=lambda kv: -kv[1]["ms"])))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
