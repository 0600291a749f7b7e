#!/usr/bin/env python3
"""Benchmark adreno-mlir against a peer runtime on the shared torchvision graphs.

    python bench/bench.py [--models resnet18,mobilenet_v2,...] [--device pocl|nvidia|...]
                          [--repeat N] [--warmup N] [--compare onnxruntime|torch|auto]
                          [--textures on|off|both] [--json out.json]

Per model: compile time, our median latency (wall time of `CompiledModel.run`, which includes
the host->device input copy and the device->host output copy), the peer's median latency
measured in the same run, their ratio, and the max relative error of our output against the
peer's (max |ours - peer| / max |peer|). Ends with a Markdown summary and the devices used.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import math
import os
import platform
import re
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
for p in (str(REPO), str(BENCH_DIR)):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch_models  # noqa: E402  (optional torch inside)

ALL_MODELS = [
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "efficientnet_b0",
    "squeezenet1_1",
    "googlenet",
    "densenet121",
    "lraspp_mobilenet_v3_large",
]
CACHE_DIR = Path(os.environ.get("ADRENO_BENCH_CACHE", "~/.cache/adreno-mlir-bench")).expanduser()


PLANS: dict[str, dict] = {
    "nchw": {"textures": False, "layout": "nchw"},  # plain NCHW buffers (fp32)
    "buffer4c": {"textures": False, "layout": "nchw4c"},  # NCHW4c in global buffers
    "texture": {"textures": True},  # NCHW4c in images where legal
    "texture-wg": {"textures": True, "work_group": "auto"},  # the target's preferred local size
    # every image in the `texture` mapping (rows of a plane in neighbouring image rows) where it fits
    "texture-rows": {"textures": True, "pipeline": lambda p: p.replace(" images=true}", " images=true mapping=texture}")},
    "texture-fp16": {"textures": True, "precision": "fp16-acc32"},
    "buffer4c-fp16": {"textures": False, "layout": "nchw4c", "precision": "fp16-acc32"},
}
"""Named compile plans (keyword arguments of adreno_mlir.compile) for --plans."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def torch_matmul_ms(a_shape, b_shape, repeat: int, dtype: str = "float32", transpose_b: bool = False):
    """Median CUDA-event time (ms) of `torch.matmul(a, b)` for random operands of these shapes
    (b of `b_shape` transposed in its last two axes when `transpose_b`: a K-contiguous B), TF32
    off; None without PyTorch or a CUDA device. The cuBLAS reference of the GEMM benches."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = getattr(torch, dtype)
    a = torch.randn(*a_shape, device="cuda", dtype=dt)
    b = torch.randn(*b_shape, device="cuda", dtype=dt)
    if transpose_b:
        b = b.transpose(-1, -2)
    for _ in range(3):
        torch.matmul(a, b)
    times = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(a, b)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def shared_dir(arg: str | None) -> Path:
    return Path(arg or os.environ.get("ADRENO_SHARED") or REPO.parent / "shared").resolve()


# ------------------------------------------------------------------------------------------
# Models
# ------------------------------------------------------------------------------------------


def materialized_path(shared: Path, name: str, seed: int) -> Path:
    """Materialize graphs/<name>.onnx once into the cache (keyed by graph hash and seed)."""
    graph = shared / "models" / "graphs" / f"{name}.onnx"
    if not graph.exists():
        raise FileNotFoundError(f"{graph} not found (set --shared or ADRENO_SHARED)")
    digest = hashlib.sha256(graph.read_bytes()).hexdigest()[:12]
    out = CACHE_DIR / f"{name}-seed{seed}-{digest}.onnx"
    if out.exists():
        return out
    models_dir = str(shared / "models")
    if models_dir not in sys.path:
        sys.path.insert(0, models_dir)
    from materialize import materialize

    model = materialize(str(graph), seed=seed)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(model.SerializeToString())
    os.replace(tmp, out)
    return out


def textures_supported() -> bool:
    """Whether adreno_mlir.compile takes a `textures` keyword (checked on the real function)."""
    import adreno_mlir

    fns = [adreno_mlir.compile]
    try:
        import adreno_mlir.api as api

        fns.append(api.compile)
    except Exception:
        pass
    for fn in fns:
        try:
            if "textures" in inspect.signature(fn).parameters:
                return True
        except (TypeError, ValueError):
            continue
    return False


# ------------------------------------------------------------------------------------------
# Timing helpers
# ------------------------------------------------------------------------------------------


def time_calls(fn, warmup: int, repeat: int, sync=None) -> tuple[list[float], object]:
    """Run fn warmup+repeat times; return (per-call ms of the timed runs, last result)."""
    out = None
    for _ in range(warmup):
        out = fn()
        if sync:
            sync()
    times = []
    for _ in range(repeat):
        if sync:
            sync()
        t0 = time.perf_counter()
        out = fn()
        if sync:
            sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return times, out


FAMILIES = {
    "reduction": ("global_avgpool", "reduce_mean", "global_", "reduce"),
    "gemm": ("gemm", "matmul", "gemv"),
    "concat/copy": ("copy", "concat"),
    "depthwise": ("dwconv",),
}
"""Kernel families of issue 13, by kernel-name prefix (Winograd's matmul is not a GEMM)."""


def family_of(kernel: str) -> str:
    if kernel.startswith("winograd"):
        return "winograd"
    if kernel.startswith("dwconv") and re.search(r"_pool\d+", kernel):
        return "depthwise+pool"  # a depthwise conv that also writes a pool's partial means (fuse-pool-partials)
    if kernel.startswith("conv") and re.search(r"_dw\d+x\d+", kernel):
        return "1x1+depthwise"  # a 1x1 conv computing the depthwise conv it reads (fuse-depthwise-load)
    for family, prefixes in FAMILIES.items():
        if kernel.startswith(prefixes):
            return family
    return "other"


def family_shares(kernel_ms: dict[str, float]) -> dict[str, dict[str, float]]:
    """{family: {"ms": summed device ms, "share": fraction of the model's device time}}."""
    total = sum(kernel_ms.values()) or 1.0
    out: dict[str, dict[str, float]] = {}
    for k, ms in kernel_ms.items():
        f = out.setdefault(family_of(k), {"ms": 0.0, "share": 0.0})
        f["ms"] += ms
        f["share"] += ms / total
    return out


def max_rel_err(ours: np.ndarray, ref: np.ndarray) -> float:
    """max |ours - ref| / max |ref| (inf on shape mismatch or non-finite values)."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.size != ref.size:
        return math.inf
    ours = ours.reshape(ref.shape)
    if not (np.all(np.isfinite(ours)) and np.all(np.isfinite(ref))):
        return math.inf
    denom = max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)
    return float(np.max(np.abs(ours - ref))) / denom if ref.size else 0.0


# ------------------------------------------------------------------------------------------
# Peers
# ------------------------------------------------------------------------------------------


class OrtPeer:
    label = "onnxruntime"

    def __init__(self, threads: int | None):
        import onnxruntime as ort

        self.ort = ort
        self.threads = threads

    def describe(self) -> str:
        cpu = platform.processor() or platform.machine()
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        threads = self.threads or f"default ({os.cpu_count()} cores)"
        return f"onnxruntime {self.ort.__version__} CPUExecutionProvider, {cpu}, threads: {threads}"

    def prepare(self, name: str, path: Path, model):
        opts = self.ort.SessionOptions()
        if self.threads:
            opts.intra_op_num_threads = self.threads
        sess = self.ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        out_names = [o.name for o in sess.get_outputs()]

        def run(feeds):
            return dict(zip(out_names, sess.run(out_names, feeds)))

        return run, None

    def measure(self, prepared, feeds, warmup, repeat):
        run, _ = prepared
        return time_calls(lambda: run(feeds), warmup, repeat)


class TorchPeer:
    label = "torch"

    def __init__(self):
        torch, torchvision = torch_models.require_torch()
        if not torch.cuda.is_available():
            raise torch_models.TorchUnavailable("torch is installed but sees no CUDA device")
        self.torch, self.torchvision = torch, torchvision
        # Full fp32 so the numbers are comparable with ours (no TF32 on Ampere+).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def describe(self) -> str:
        t = self.torch
        return (
            f"PyTorch {t.__version__} eager (torchvision {self.torchvision.__version__}), "
            f"CUDA {t.version.cuda}, cuDNN {t.backends.cudnn.version()}, "
            f"{t.cuda.get_device_name(0)}; fp32, TF32 off"
        )

    def prepare(self, name: str, path: Path, model):
        net = torch_models.build_torch_model(name, model, device="cuda")
        return net, None

    def measure(self, prepared, feeds, warmup, repeat):
        torch = self.torch
        net, _ = prepared
        (name, x), = feeds.items()
        xt = torch.from_numpy(x).to("cuda")

        def call():
            with torch.inference_mode():
                return net(xt)

        times, y = time_calls(call, warmup, repeat, sync=torch.cuda.synchronize)
        self.graph_times = self.measure_graph(net, xt, warmup, repeat)
        return times, {"__single__": y.detach().float().cpu().numpy()}

    def measure_graph(self, net, xt, warmup, repeat) -> list[float] | None:
        """CUDA-graph replay of the same forward: the whole model captured once, then one
        `replay()` per call (no Python, no per-kernel launch cost): PyTorch's best case
        for a fixed-shape batch-1 model. None when capture fails."""
        torch = self.torch
        try:
            static_x = xt.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.inference_mode(), torch.cuda.stream(side):
                for _ in range(3):  # warm-up on a side stream, as torch.cuda.graphs requires
                    net(static_x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.inference_mode(), torch.cuda.graph(graph):
                net(static_x)
            times, _ = time_calls(graph.replay, warmup, repeat, sync=torch.cuda.synchronize)
            return times
        except Exception as e:  # noqa: BLE001 - reported, eager numbers stay
            log(f"CUDA graph capture failed: {type(e).__name__}: {e}")
            return None


def make_peer(kind: str, threads: int | None):
    if kind == "auto":
        kind = "torch" if torch_models.cuda_available() else "onnxruntime"
    if kind == "torch":
        return TorchPeer()
    if kind == "onnxruntime":
        return OrtPeer(threads)
    raise SystemExit(f"unknown --compare {kind!r}")


# ------------------------------------------------------------------------------------------
# Benchmark
# ------------------------------------------------------------------------------------------


def bench_model(name, args, shared, peer, variants):
    import onnx

    import adreno_mlir

    row = {"model": name, "variants": [], "peer_ms": None, "error": None}
    path = materialized_path(shared, name, args.seed)
    model = onnx.load(str(path))
    graph_in = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    rng = np.random.default_rng(args.seed + 1)
    feeds = {
        i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
        for i in graph_in
    }
    row["input_shapes"] = {k: list(v.shape) for k, v in feeds.items()}

    # Peer first: it also gives the reference output.
    log(f"[{name}] peer {peer.label}: preparing")
    prepared = peer.prepare(name, path, model)
    peer_times, peer_out = peer.measure(prepared, feeds, args.warmup, args.repeat)
    row["peer_ms"] = statistics.median(peer_times)
    row["peer_min_ms"] = min(peer_times)
    graph_times = getattr(peer, "graph_times", None)
    row["peer_graph_ms"] = statistics.median(graph_times) if graph_times else None
    del prepared

    for vname, plan in variants:
        v = {"variant": vname, "error": None}
        row["variants"].append(v)
        try:
            kwargs = {"device": args.device, **(plan or {})}
            log(f"[{name}] ours ({vname}): compiling")
            t0 = time.perf_counter()
            cm = adreno_mlir.compile(model, **kwargs)
            v["compile_s"] = float(getattr(cm, "compile_seconds", 0.0) or (time.perf_counter() - t0))
            v["device"] = cm.device_name
            log(f"[{name}] ours ({vname}): compiled in {v['compile_s']:.2f}s; running")
            times, out = time_calls(lambda: cm.run(feeds), args.warmup, args.repeat)
            v["ms"] = statistics.median(times)
            v["min_ms"] = min(times)
            v["ratio"] = v["ms"] / row["peer_ms"] if row["peer_ms"] else None
            v["ratio_graph"] = v["ms"] / row["peer_graph_ms"] if row.get("peer_graph_ms") else None
            if "__single__" in peer_out:
                if len(out) != 1:
                    raise ValueError(f"torch peer gives one output, ours gives {list(out)}")
                pairs = [(next(iter(out.values())), peer_out["__single__"])]
            else:
                pairs = [(out[k], peer_out[k]) for k in cm.output_names]
            v["max_rel_err"] = max(max_rel_err(a, b) for a, b in pairs)
            if args.profile:
                prof = cm.profile(feeds, repeat=max(3, min(args.repeat, 10)))
                v["kernel_ms"] = prof
                v["device_ms"] = sum(prof.values())
                v["families"] = family_shares(prof)
                if row.get("peer_graph_ms"):
                    v["device_over_graph"] = v["device_ms"] / row["peer_graph_ms"]
                top = sorted(prof.items(), key=lambda kv: -kv[1])[: args.profile]
                log(f"[{name}] ours ({vname}): device time {v['device_ms']:.3f} ms over {len(prof)} kernels; top: "
                    + ", ".join(f"{k} {ms:.3f}" for k, ms in top))
            tol = args.tol_fp16 if (plan or {}).get("precision", "fp32") != "fp32" else args.tol
            v["ok"] = v["max_rel_err"] <= tol
            del cm
        except Exception as e:  # keep benchmarking the other models
            v["error"] = f"{type(e).__name__}: {e}"
            v["ok"] = False
            log(traceback.format_exc())
    timed = {v["variant"]: v for v in row["variants"] if "ms" in v}
    buf = timed.get("buffer4c") or timed.get("buffer") or timed.get("nchw")
    if buf is not None and "texture" in timed:
        row["tex_over_buf"] = timed["texture"]["ms"] / buf["ms"]
    return row


# ------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table_rows(rows, show_variant, show_tex):
    show_graph = any(r.get("peer_graph_ms") for r in rows)
    header = ["model"] + (["path"] if show_variant else []) + [
        "compile (s)", "ours (ms)", "peer (ms)", "ours/peer"
    ] + (["tex/buf"] if show_tex else []) + (
        ["graph (ms)", "ours/graph", "device (ms)", "device/graph"] if show_graph else []) + ["max rel err", "check"]
    out = []
    for r in rows:
        if r.get("error") and not r["variants"]:
            cells = [r["model"]] + ([""] if show_variant else []) + ["-"] * (4 + show_tex + 4 * show_graph) + [
                "-", "ERROR: " + r["error"][:80]]
            out.append(cells)
            continue
        for i, v in enumerate(r["variants"]):
            check = ("ok" if v.get("ok") else "FAIL") if not v.get("error") else "ERROR: " + v["error"][:80]
            cells = [r["model"]] + ([v["variant"]] if show_variant else []) + [
                fmt(v.get("compile_s"), ".2f"),
                fmt(v.get("ms"), ".2f"),
                fmt(r.get("peer_ms"), ".2f"),
                fmt(v.get("ratio"), ".2f"),
            ]
            if show_tex:
                cells.append(fmt(r.get("tex_over_buf"), ".2f") if v["variant"] == "texture" else "")
            if show_graph:
                cells += [fmt(r.get("peer_graph_ms"), ".2f"), fmt(v.get("ratio_graph"), ".2f"),
                          fmt(v.get("device_ms"), ".2f"), fmt(v.get("device_over_graph"), ".2f")]
            cells += [fmt(v.get("max_rel_err"), ".2e"), check]
            out.append(cells)
    return header, out


def print_plain(header, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    sys.stdout.flush()


def print_markdown(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See bench/README.md.")
    ap.add_argument("--models", default=",".join(ALL_MODELS),
                    help="comma-separated graph names (default: all ten)")
    ap.add_argument("--device", default=None,
                    help="OpenCL device for adreno_mlir.compile (default: PYOPENCL_CTX, else PoCL)")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per model (median reported)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs before timing")
    ap.add_argument("--compare", default="onnxruntime", choices=["onnxruntime", "torch", "auto"],
                    help="peer: onnxruntime CPU (default), PyTorch eager on CUDA, or auto "
                         "(torch when torch+CUDA import, else onnxruntime)")
    ap.add_argument("--textures", choices=["on", "off", "both"], default=None,
                    help="pass textures=True/False to adreno_mlir.compile (only if it accepts it)")
    ap.add_argument("--plans", default=None,
                    help=f"comma list of compile plans to compare: {', '.join(PLANS)} (overrides --textures)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also time every kernel with OpenCL events and print the N most expensive")
    ap.add_argument("--tol-fp16", type=float, default=5e-2, help="max relative error for fp16-acc32 plans")
    ap.add_argument("--json", default=None, help="write all results to this JSON file")
    ap.add_argument("--tol", type=float, default=1e-3, help="max relative error for 'ok' (default 1e-3)")
    ap.add_argument("--seed", type=int, default=0, help="weight seed for materialize (input uses seed+1)")
    ap.add_argument("--shared", default=None, help="shared folder (default: $ADRENO_SHARED or <repo>/../shared)")
    ap.add_argument("--ort-threads", type=int, default=None, help="onnxruntime intra-op threads")
    args = ap.parse_args(argv)

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in ALL_MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {','.join(ALL_MODELS)}")
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    shared = shared_dir(args.shared)

    try:
        peer = make_peer(args.compare, args.ort_threads)
    except torch_models.TorchUnavailable as e:
        raise SystemExit(f"error: {e}")

    variants: list[tuple[str, dict | None]] = [("default", None)]
    if args.plans:
        unknown = [p for p in args.plans.split(",") if p not in PLANS]
        if unknown:
            ap.error(f"unknown plan(s) {unknown}; choose from {', '.join(PLANS)}")
        variants = [(p, PLANS[p]) for p in args.plans.split(",")]
    elif args.textures is not None:
        if textures_supported():
            variants = {"on": [("texture", PLANS["texture"])], "off": [("buffer", {"textures": False})],
                        "both": [("buffer", {"textures": False}), ("texture", PLANS["texture"])]}[args.textures]
        else:
            log(f"note: adreno_mlir.compile() takes no `textures` argument; --textures {args.textures} "
                "ignored (buffer path only)")
    show_variant = variants[0][1] is not None
    show_tex = any(v == "texture" for v, _ in variants) and len(variants) >= 2

    rows = []
    for name in models:
        try:
            row = bench_model(name, args, shared, peer, variants)
        except Exception as e:
            log(traceback.format_exc())
            row = {"model": name, "variants": [], "peer_ms": None, "error": f"{type(e).__name__}: {e}"}
        rows.append(row)
        print(f"\n== {name} ==")
        print_plain(*table_rows([row], show_variant, show_tex))

    our_dev = next((v["device"] for r in rows for v in r["variants"] if v.get("device")), "(no model compiled)")
    peer_dev = peer.describe()
    print("\n## adreno-mlir vs " + peer.label + "\n")
    header, body = table_rows(rows, show_variant, show_tex)
    header = [h.replace("peer (ms)", f"{peer.label} (ms)") for h in header]
    print_markdown(header, body)
    print()
    print(f"- ours: adreno-mlir on {our_dev}; latency = wall time of `CompiledModel.run` "
          "(includes host->device and device->host copies)")
    if any(v.get("families") for r in rows for v in r["variants"]):
        names = ["reduction", "gemm", "concat/copy", "depthwise", "depthwise+pool", "1x1+depthwise", "winograd", "other"]
        print("\n## device time by kernel family (share of the model's device time, from OpenCL events)\n")
        print("| model | path | device ms | " + " | ".join(names) + " |")
        print("|---|---|---:|" + "---:|" * len(names))
        for r in rows:
            for v in r["variants"]:
                fam = v.get("families")
                if fam:
                    print(f"| {r['model']} | {v['variant']} | {v['device_ms']:.3f} | "
                          + " | ".join(f"{100 * fam.get(n, {}).get('share', 0.0):.0f}%" for n in names) + " |")
        print()
    if peer.label == "torch":
        print(f"- peer: {peer_dev}; latency = forward with torch.cuda.synchronize(), input already on the GPU; "
              "graph = replay of the forward captured as one CUDA graph (no host copies either)")
    else:
        print(f"- peer: {peer_dev}; latency = wall time of `InferenceSession.run`")
    print(f"- median of {args.repeat} runs after {args.warmup} warm-up runs; "
          f"max rel err = max|ours-peer| / max|peer|, check: <= {args.tol:g}; "
          f"weights: materialize(seed={args.seed}); host: {platform.node()} ({platform.platform()})")

    if args.json:
        payload = {
            "config": {k: getattr(args, k) for k in vars(args)},
            "peer": peer.label,
            "devices": {"ours": our_dev, "peer": peer_dev},
            "results": rows,
        }
        Path(args.json).write_text(json.dumps(payload, indent=2, default=str))
        log(f"wrote {args.json}")

    failed = [r["model"] for r in rows if r.get("error") or not r["variants"] or not all(v.get("ok") for v in r["variants"])]
    if failed:
        log(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
