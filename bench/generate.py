#!/usr/bin/env python3
"""Generation speed of onnxruntime-genai decoders (issue 29): ours against onnxruntime on the
CPU and PyTorch (transformers, the same architecture) on CUDA, in one run.

    python bench/generate.py [--models llama_tiny_int4,llama_tiny_fp32,PATH.onnx] [--prompt 64]
                             [--new 128] [--max-context 256] [--chunk 64] [--device nvidia]
                             [--compare onnxruntime,torch] [--kv-cache f32|f16] [--json out.json]

Per model, ours (adreno_mlir.compile_decoder, greedy, end-of-sequence ignored):
- compile seconds with a cold and a warm program cache, time to first token (the 64-token
  prompt's prefill, steady state), prefill and decode tokens/s (median of --repeat runs);
- device time of one decode step (OpenCL events: the sum of its launches) and its launches,
  the share of the quantized GEMVs and their achieved bandwidth (weight bytes / time);
- the decode floor: bytes one step reads (weights + the whole cache: the attention reads
  every row) / --bandwidth-gbps, and the launch model launches x the driver's launch cost
  (measured here: enqueueing an empty kernel) + floor, against the measured step time;
- bytes copied host <-> device per decode step.
Peers: onnxruntime (CPU) decode with the past growing a token a step; PyTorch
`LlamaForCausalLM` with random weights, fp32 and fp16, `generate` with the dynamic and the
static cache (eager), CUDA only. The shared tiny decoders are materialized from
$ADRENO_SHARED/models/llm; a path names any other decoder (export_genai.py's output).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path[:0] = [str(REPO), str(BENCH_DIR)]

from bench import shared_dir  # noqa: E402


def decoder_path(name: str, shared: Path) -> Path:
    if name.endswith(".onnx"):
        return Path(name)
    sys.path.insert(0, str(shared / "models"))
    from materialize import materialize  # shared/models/materialize.py

    out = Path(tempfile.gettempdir()) / "adreno-bench-llm" / f"{name}.onnx"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        import onnx

        onnx.save(materialize(str(shared / "models" / "llm" / f"{name}.onnx")), str(out))
    cfg = shared / "models" / "llm" / f"{name}.genai_config.json"
    if cfg.exists():
        (out.parent / cfg.name).write_text(cfg.read_text())
    return out


def launch_cost_us(context, n: int = 2000) -> float:
    """Host microseconds per enqueue of an empty kernel (n launches, then one finish)."""
    import pyopencl as cl

    prg = cl.Program(context, "__kernel void empty(__global float *x) { }").build()
    k = prg.empty
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4)
    k.set_arg(0, buf)
    q = cl.CommandQueue(context)
    for _ in range(50):
        cl.enqueue_nd_range_kernel(q, k, (1,), None)
    q.finish()
    t = time.perf_counter()
    for _ in range(n):
        cl.enqueue_nd_range_kernel(q, k, (1,), None)
    q.finish()
    return (time.perf_counter() - t) / n * 1e6


def ours(path: Path, args) -> dict:
    import adreno_mlir

    row: dict = {}
    with tempfile.TemporaryDirectory() as cache:
        for which in ("cold", "warm"):
            t = time.perf_counter()
            dec = adreno_mlir.compile_decoder(path, max_context=args.max_context, prefill_chunk=args.chunk,
                                              device=args.device, cache=cache, tuning_db=args.tuning_db,
                                              kv_cache=args.kv_cache,
                                              runtime="pyopencl")  # the Python loop (c_loop: the C one)
            row[f"compile_s_{which}"] = time.perf_counter() - t
    row["device"] = dec.decode.device_name
    row["plan"] = dec.decode.plan
    prompt = np.random.default_rng(0).integers(3, dec.vocab, args.prompt).tolist()
    runs = [dec.generate(prompt, args.new, stop_at_eos=False) for _ in range(args.repeat + 1)]
    row["tokens_python"] = runs[-1].tokens
    first, steady = runs[0], runs[1:]
    row["ttft_ms_first_run"] = first.ttft_ms
    row["ttft_ms"] = statistics.median(r.ttft_ms for r in steady)
    row["prefill_tok_s"] = statistics.median(r.prefill_tok_s for r in steady)
    row["decode_tok_s"] = statistics.median(r.decode_tok_s for r in steady)
    row["tokens"] = steady[0].tokens[:16]
    row["bytes_per_step"] = {k: v // max(1, args.new - 1) for k, v in steady[0].transfers.items()}
    # one decode step on a profiling queue
    ex = dec.decode.executable
    feeds = [np.array([[prompt[0]]], np.int32), np.array([args.prompt], np.int32)]
    starts, ends = ex.profile_events(feeds, repeat=args.repeat * 4)
    per_launch = np.median((ends - starts) * 1e-6, axis=0)
    plan = ex.plan
    row["decode_launches"] = len(plan.launches)
    row["decode_device_ms"] = float(per_launch.sum())
    row["decode_span_ms"] = float(np.median((ends[:, -1] - starts[:, 0]) * 1e-6))
    qm = [i for i, la in enumerate(plan.launches) if la.kernel.startswith("qmatmul")]
    weight_bytes = {i: sum(plan.weights[a.index].nbytes for a in plan.launches[i].args if a.kind == "weight")
                    for i in qm}
    if qm:
        t_qm = float(per_launch[qm].sum())
        row["gemv_share"] = t_qm / row["decode_device_ms"]
        row["gemv_gbps"] = sum(weight_bytes.values()) / (t_qm * 1e-3) / 1e9
        row["gemv_gbps_best"] = max(weight_bytes[i] / (per_launch[i] * 1e-3) / 1e9 for i in qm)
    by_kernel: dict[str, float] = {}
    for la, ms in zip(plan.launches, per_launch):
        key = la.kernel.rstrip("0123456789").rstrip("_")
        by_kernel[key] = by_kernel.get(key, 0.0) + float(ms)
    row["decode_device_ms_by_kernel"] = dict(sorted(by_kernel.items(), key=lambda kv: -kv[1])[:12])
    sig = dec.signature
    weights = sum(w.nbytes for w in plan.weights)
    kv = sig.cache_bytes(dec.max_context)
    row["decode_bytes"] = weights + kv
    row["floor_ms"] = (weights + kv) / (args.bandwidth_gbps * 1e9) * 1e3
    row["launch_cost_us"] = launch_cost_us(ex.context)
    row["launch_model_ms"] = row["decode_launches"] * row["launch_cost_us"] * 1e-3 + row["floor_ms"]
    row["step_ms"] = 1e3 / row["decode_tok_s"]
    row["step_vs_model"] = row["step_ms"] / row["launch_model_ms"]
    row["c_loop"] = c_loop(dec, prompt, args)
    return row


def c_loop(dec, prompt: list[int], args) -> dict:
    """The same generation through the C runtime's loop (`adreno-run --generate` on the
    decoder's artifact, no Python per token): the second of two runs (the first one builds or
    loads the programs)."""
    import subprocess

    from adreno_mlir.runtime import native
    from adreno_mlir.runtime.native import build_native, library_path

    try:
        lib = library_path()
        folder = Path(lib).parent if lib else build_native()
        exe = folder / "adreno-run"
        with tempfile.TemporaryDirectory() as tmp:
            art = dec.save(Path(tmp) / "decoder.adreno")
            out = Path(tmp) / "run.json"
            env = native.runner_env()  # the ICD loader adreno-run loads sees the Python side's device
            if "pocl" in dec.decode.device_name.lower() and (icd := native.write_default_icd(Path(tmp))) is not None:
                env["OCL_ICD_VENDORS"] = str(icd)
            for _ in range(2):
                r = subprocess.run([str(exe), "--generate", str(art), "--prompt-ids", ",".join(map(str, prompt)),
                                    "--max-new-tokens", str(args.new), "--ignore-eos", "--json", str(out)],
                                   capture_output=True, text=True, timeout=300, env=env)
                if r.returncode:
                    return {"error": (r.stdout + r.stderr)[-800:]}
            rec = json.loads(out.read_text())
        return rec
    except Exception as e:  # noqa: BLE001 - no C compiler or CMake here: reported, ours kept
        return {"error": f"{type(e).__name__}: {e}"[:800]}


def onnxruntime_decode(path: Path, args) -> dict:
    import onnx
    import onnxruntime as ort

    from adreno_mlir.frontend.decoder import decoder_signature, genai_config

    model = onnx.load(str(path))
    sig = decoder_signature(model, genai_config(path))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    prompt = np.random.default_rng(0).integers(3, sig.vocab, args.prompt).tolist()
    rates, prefill = [], []
    for _ in range(args.repeat):
        feeds = {sig.input_ids: np.array([prompt], np.int64), sig.attention_mask: np.ones((1, len(prompt)), np.int64)}
        for past, _ in sig.caches:
            feeds[past] = np.zeros((1, sig.kv_heads, 0, sig.head_dim), np.float32)
        t = time.perf_counter()
        outs = dict(zip(names, sess.run(None, feeds)))
        prefill.append(len(prompt) / (time.perf_counter() - t))
        total = len(prompt)
        t = time.perf_counter()
        for _ in range(args.new - 1):
            tok = int(outs[sig.logits][0, -1].argmax())
            total += 1
            feeds = {sig.input_ids: np.array([[tok]], np.int64), sig.attention_mask: np.ones((1, total), np.int64)}
            for past, present in sig.caches:
                feeds[past] = outs[present]
            outs = dict(zip(names, sess.run(None, feeds)))
        rates.append((args.new - 1) / (time.perf_counter() - t))
    return {"decode_tok_s": statistics.median(rates), "prefill_tok_s": statistics.median(prefill)}


def torch_generate(path: Path, args) -> dict:
    """transformers' LlamaForCausalLM of the decoder's shape (from its genai_config and
    cos_cache), random weights, on CUDA: decode tokens/s of `generate` (greedy, new tokens
    after the first) per dtype and cache."""
    shadow = [p for p in sys.path if p and Path(p).resolve() == BENCH_DIR]  # bench/transformers.py
    for p in shadow:
        sys.path.remove(p)
    try:
        import torch
        import transformers as tf
    except ImportError:
        return {}
    finally:
        sys.path[:0] = shadow
    if not torch.cuda.is_available():
        return {}
    cfg = json.loads(next(p for p in (path.with_name(path.stem + ".genai_config.json"),
                                      path.with_name("genai_config.json")) if p.exists()).read_text())["model"]
    dec = cfg["decoder"]
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    dims = {i.name: list(i.dims) for i in m.graph.initializer}
    down = next(n for n in m.graph.node if "down_proj" in n.name and n.op_type in ("MatMul", "MatMulNBits"))
    inter = (next(a.i for a in down.attribute if a.name == "K") if down.op_type == "MatMulNBits"
             else dims[down.input[1]][0])
    config = tf.LlamaConfig(hidden_size=dec["hidden_size"], intermediate_size=inter,
                            num_hidden_layers=dec["num_hidden_layers"], num_attention_heads=dec["num_attention_heads"],
                            num_key_value_heads=dec["num_key_value_heads"], vocab_size=cfg["vocab_size"],
                            max_position_embeddings=cfg.get("context_length", 4096), tie_word_embeddings=False)
    out = {}
    torch.backends.cuda.matmul.allow_tf32 = False
    prompt = torch.tensor([np.random.default_rng(0).integers(3, cfg["vocab_size"], args.prompt).tolist()],
                          device="cuda")
    for dtype in ("float32", "float16"):
        torch.manual_seed(0)
        model = tf.LlamaForCausalLM(config).to("cuda", getattr(torch, dtype)).eval()
        for cache in ("dynamic", "static"):
            kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
            if cache == "static":
                kw["cache_implementation"] = "static"

            def timed(n, model=model):
                torch.cuda.synchronize()
                t = time.perf_counter()
                with torch.no_grad():
                    model.generate(prompt, max_new_tokens=n, min_new_tokens=n, **kw)
                torch.cuda.synchronize()
                return time.perf_counter() - t

            try:
                timed(4)
                one = statistics.median(timed(1) for _ in range(3))
                full = statistics.median(timed(args.new) for _ in range(args.repeat))
                out[f"{dtype}_{cache}"] = {"decode_tok_s": (args.new - 1) / (full - one), "ttft_ms": one * 1e3}
            except Exception as e:  # noqa: BLE001 - a transformers version without this cache
                out[f"{dtype}_{cache}"] = {"error": f"{type(e).__name__}: {e}"[:300]}
        del model
        torch.cuda.empty_cache()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="llama_tiny_int4,llama_tiny_fp32")
    ap.add_argument("--shared", default=None)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--max-context", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default=None)
    ap.add_argument("--compare", default="onnxruntime,torch")
    ap.add_argument("--bandwidth-gbps", type=float, default=4800.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--tuning-db", default=None, help="compile with this tuning database (adreno-mlir tune --decoder)")
    ap.add_argument("--kv-cache", choices=("f32", "f16"), default=None,
                    help="the KV caches' storage (default: compile_decoder's, f32)")
    args = ap.parse_args(argv)
    shared = shared_dir(args.shared)
    peers = {p for p in args.compare.split(",") if p}
    results = []
    for name in args.models.split(","):
        path = decoder_path(name, shared)
        row = {"model": name, "ours": ours(path, args)}
        print(json.dumps(row, indent=1), flush=True)
        for peer, key, fn in (("onnxruntime", "onnxruntime_cpu", onnxruntime_decode), ("torch", "torch", torch_generate)):
            if peer in peers:
                try:
                    row[key] = fn(path, args)
                except Exception as e:  # noqa: BLE001 - a peer's failure is reported, ours kept
                    row[key] = {"error": f"{type(e).__name__}: {e}"[:500]}
        results.append(row)
        print(json.dumps(row, indent=1), flush=True)
    print("\n| model | ours decode tok/s (Python loop / C loop) | prefill tok/s | TTFT ms | step ms (device) | launches | "
          "floor ms | launch model ms | peers decode tok/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        o = r["ours"]
        peer = []
        if "onnxruntime_cpu" in r:
            peer.append(f"ORT CPU {r['onnxruntime_cpu']['decode_tok_s']:.0f}")
        for k, v in (r.get("torch") or {}).items():
            if "decode_tok_s" in v:
                peer.append(f"torch {k} {v['decode_tok_s']:.0f}")
        c = o.get("c_loop", {})
        c_rate = f"{c['decode_tok_s']:.0f}" if "decode_tok_s" in c else "-"
        print(f"| {r['model']} | {o['decode_tok_s']:.0f} / {c_rate} | {o['prefill_tok_s']:.0f} | {o['ttft_ms']:.1f} | "
              f"{o['step_ms']:.3f} ({o['decode_device_ms']:.3f}) | {o['decode_launches']} | {o['floor_ms']:.3f} | "
              f"{o['launch_model_ms']:.3f} | {', '.join(peer)} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
