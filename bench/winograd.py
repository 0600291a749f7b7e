#!/usr/bin/env python3
"""Winograd vs direct convolution: per 3x3 layer and end to end.

    python bench/winograd.py --layers [--shapes 64x56,128x28] [--full] [--plans texture,buffer4c]
    python bench/winograd.py --models resnet18,resnet50,vgg [--vgg 11|16] [--vgg-size 224]
    common: [--device pocl|nvidia|...] [--target auto] [--tiles off,2,4,auto]
            [--repeat 20] [--warmup 2] [--json OUT] [--torch]

`conv-winograd{tile=off|2|4|auto}` is forced into the default pipeline (`cm.pipeline`) of
each plan through `adreno_mlir.compile(pipeline=...)`; every variant is checked against
onnxruntime (CPU) on the same input. Times:

- device ms: median over --repeat runs of the sum of all kernel times of one run
  (OpenCL profiling events, `cm.profile(feeds, 1)` per run, after --warmup runs). Per layer
  the layout boundary kernels (pack_* / unpack_*, the same in every variant) are left out;
  their time is in the JSON (`total_ms`).
- wall ms: median of `cm.run(feeds)` (includes host<->device copies).

Which tile each conv got is recorded by a pass inserted right after conv-winograd
(`bench-record-winograd`), and cross-checked with the Winograd kernels launched.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import platform
import re
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
for p in (str(REPO), str(BENCH_DIR)):
    if p not in sys.path:
        sys.path.insert(0, p)

import bench as _bench  # noqa: E402  (materialized_path, shared_dir, max_rel_err)

PLANS: dict[str, dict] = {
    "texture": {"textures": True, "layout": "nchw4c"},
    "buffer4c": {"textures": False, "layout": "nchw4c"},
    "texture-fp16": {"textures": True, "layout": "nchw4c", "precision": "fp16-acc32"},
    "buffer4c-fp16": {"textures": False, "layout": "nchw4c", "precision": "fp16-acc32"},
}
"""Compile plans (keyword arguments of adreno_mlir.compile); all NCHW4c, where
conv-winograd applies."""

TILES = ("off", "2", "4", "auto")
TILE_LABEL = {0: "direct", 2: "F2", 4: "F4"}
DEFAULT_SHAPES = [(64, 56), (128, 28), (256, 14), (512, 7)]
FULL_EXTRA_SHAPES = [(64, 112), (128, 56), (256, 28), (512, 14)]
MODELS = ("resnet18", "resnet50", "vgg")
VGG_CFG = {
    11: [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    13: [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    16: [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
}
METRICS = ("wall_ms", "wall_min_ms", "total_ms", "device_ms", "device_min_ms", "kernel_ms", "class_ms",
           "launches", "max_rel_err", "ok")
"""What a variant with the same per-conv tiles as a measured one copies from it."""
WINOGRAD_KERNEL = re.compile(r"^winograd_(input|matmul|output)")
WINOGRAD_OUTPUT_KERNEL = re.compile(r"^winograd_output_f(\d+)")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------
# Pipeline editing and the recording pass
# ------------------------------------------------------------------------------------------

RECORDS: list[list[dict]] = []
"""One list per run of `bench-record-winograd` (a compile that falls back to the buffer
plan lowers twice: the last list is the one that ran)."""

_RECORD_PASS = None


def record_pass():
    """The `bench-record-winograd` ModulePass class (built lazily: xDSL imports are slow)."""
    global _RECORD_PASS
    if _RECORD_PASS is not None:
        return _RECORD_PASS
    from xdsl.passes import ModulePass

    from adreno_mlir.dialects import graph, texture
    from adreno_mlir.passes.conv_winograd import ineligible_reason

    def where(op) -> str:
        desc = getattr(op.location, "desc", None)
        return desc.data if desc is not None else "?"

    @dataclass(frozen=True)
    class RecordWinograd(ModulePass):
        """Appends [{conv, tile, ...}] for every conv of the module, in program order:
        tile 2/4 for a Winograd output transform, 0 for an eligible conv left direct,
        None for a conv Winograd cannot take (1x1, strided, grouped, ...)."""

        name = "bench-record-winograd"

        def apply(self, ctx, op) -> None:
            rec = []
            for o in op.walk():
                if isinstance(o, texture.WinogradOutputOp):
                    n, k4, oh, ow, _ = o.result.type.shape
                    rec.append({"conv": where(o), "tile": o.tile_size, "out_channels": 4 * k4, "out_hw": [oh, ow]})
                elif isinstance(o, graph.Conv2dOp):
                    try:
                        reason = ineligible_reason(o)
                    except Exception as e:  # noqa: BLE001 - informational only
                        reason = f"? ({e})"
                    shape = list(graph.shape_of(o.result))
                    rec.append({"conv": where(o), "tile": None if reason else 0, "out_channels": shape[1],
                                "out_hw": shape[2:], **({"why_not": reason} if reason else {})})
            RECORDS.append(rec)

    _RECORD_PASS = RecordWinograd
    return RecordWinograd


def with_tile(pipeline: str, tile: str) -> str:
    """`pipeline` with conv-winograd's `tile` option set (and the recording pass after it)."""
    found = []

    def repl(m: re.Match) -> str:
        opts = m.group(1).strip()
        opts = re.sub(r"\s*\btile=[^\s}]*", "", opts).strip()
        opts = f"{opts} tile={tile}".strip()
        found.append(True)
        return "conv-winograd{" + opts + "},bench-record-winograd"

    out = re.sub(r"conv-winograd\{([^}]*)\}", repl, pipeline)
    if not found:
        if re.search(r"(^|,)\s*conv-winograd\s*(,|$)", pipeline):
            out = re.sub(r"(^|,)(\s*)conv-winograd(\s*)(?=,|$)",
                         lambda m: f"{m.group(1)}{m.group(2)}conv-winograd{{tile={tile}}},bench-record-winograd",
                         pipeline)
        else:
            raise ValueError(f"the pipeline has no conv-winograd pass: {pipeline}")
    return out


# ------------------------------------------------------------------------------------------
# Models
# ------------------------------------------------------------------------------------------


def he_conv(rng, cout: int, cin: int, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    w = (rng.standard_normal((cout, cin, k, k)) * math.sqrt(2.0 / (cin * k * k))).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.05).astype(np.float32)
    return w, b


def conv_layer_model(channels: int, size: int, batch: int, seed: int):
    """Conv 3x3 / stride 1 / pad 1, C -> C, with bias, then Relu (fused as the epilogue)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w, b = he_conv(rng, channels, channels)
    shape = [batch, channels, size, size]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    g = helper.make_graph(nodes, f"conv3x3_c{channels}_s{size}",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


def vgg_model(depth: int, size: int, classifier: str, seed: int, batch: int = 1):
    """A VGG-`depth` conv stack (3x3 pad 1 conv + ReLU, 2x2 max pools) on a size x size
    image; classifier: none (last feature map), small (global average pool + 512->1000
    Gemm) or full (VGG's 25088/... -> 4096 -> 4096 -> 1000 with ReLUs, flattening the
    last feature map)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if depth not in VGG_CFG:
        raise ValueError(f"--vgg must be one of {sorted(VGG_CFG)}")
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    cur, c, s = "input", 3, size
    ci = 0
    for i, v in enumerate(VGG_CFG[depth]):
        if v == "M":
            if s < 2:
                raise ValueError(f"--vgg-size {size} is too small for VGG's five 2x2 pools (needs >= 32)")
            nodes.append(helper.make_node("MaxPool", [cur], [f"pool{i}"], name=f"features.{i}",
                                          kernel_shape=[2, 2], strides=[2, 2]))
            cur, s = f"pool{i}", s // 2
            continue
        w, b = he_conv(rng, v, c)
        inits += [numpy_helper.from_array(w, f"features.{i}.weight"), numpy_helper.from_array(b, f"features.{i}.bias")]
        nodes.append(helper.make_node("Conv", [cur, f"features.{i}.weight", f"features.{i}.bias"], [f"conv{i}"],
                                      name=f"features.{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]))
        nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"], name=f"features.{i}.relu"))
        cur, c = f"relu{i}", v
        ci += 1
    out_shape = [batch, c, s, s]
    if classifier == "small":
        nodes.append(helper.make_node("GlobalAveragePool", [cur], ["gap"], name="avgpool"))
        nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
        w = (rng.standard_normal((1000, c)) * math.sqrt(1.0 / c)).astype(np.float32)
        inits += [numpy_helper.from_array(w, "fc.weight"), numpy_helper.from_array(np.zeros(1000, np.float32), "fc.bias")]
        nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["output"], name="fc", transB=1))
        cur, out_shape = "output", [batch, 1000]
    elif classifier == "full":
        nodes.append(helper.make_node("Flatten", [cur], ["flat"], name="flatten", axis=1))
        prev, n_in = "flat", c * s * s
        for j, n_out in enumerate((4096, 4096, 1000)):
            w = (rng.standard_normal((n_out, n_in)) * math.sqrt(2.0 / n_in)).astype(np.float32)
            inits += [numpy_helper.from_array(w, f"classifier.{j}.weight"),
                      numpy_helper.from_array(np.zeros(n_out, np.float32), f"classifier.{j}.bias")]
            name = "output" if j == 2 else f"fc{j}"
            nodes.append(helper.make_node("Gemm", [prev, f"classifier.{j}.weight", f"classifier.{j}.bias"], [name],
                                          name=f"classifier.{j}", transB=1))
            if j < 2:
                nodes.append(helper.make_node("Relu", [name], [f"{name}_relu"], name=f"classifier.{j}.relu"))
                name = f"{name}_relu"
            prev, n_in = name, n_out
        cur, out_shape = "output", [batch, 1000]
    elif classifier != "none":
        raise ValueError("--vgg-classifier must be none, small or full")
    g = helper.make_graph(nodes, f"vgg{depth}_{size}",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


def graph_inputs(model) -> dict[str, list[int]]:
    inits = {t.name for t in model.graph.initializer}
    return {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input if i.name not in inits}


def eligible_convs(model) -> int:
    """Conv nodes that conv-winograd can take: 3x3, stride 1, dilation 1, one group."""
    n = 0
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        a = {x.name: x for x in node.attribute}
        ks = list(a["kernel_shape"].ints) if "kernel_shape" in a else None
        if ks is None:
            w = next((t for t in model.graph.initializer if t.name == node.input[1]), None)
            ks = list(w.dims[2:]) if w is not None else None
        ok = (ks == [3, 3]
              and list(a["strides"].ints if "strides" in a else [1, 1]) == [1, 1]
              and list(a["dilations"].ints if "dilations" in a else [1, 1]) == [1, 1]
              and (a["group"].i if "group" in a else 1) == 1)
        n += ok
    return n


# ------------------------------------------------------------------------------------------
# References
# ------------------------------------------------------------------------------------------


class OrtRef:
    def __init__(self):
        try:
            import onnxruntime as ort
        except ImportError as e:  # the numbers still come, without the error column
            log(f"note: onnxruntime is not installed ({e}); no error column")
            ort = None
        self.ort = ort

    def describe(self) -> str:
        return f"onnxruntime {self.ort.__version__} CPUExecutionProvider" if self.ort else "none"

    def outputs(self, model, feeds) -> dict[str, np.ndarray] | None:
        if self.ort is None:
            return None
        src = str(model) if isinstance(model, (str, Path)) else model.SerializeToString()
        sess = self.ort.InferenceSession(src, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(names, feeds)))


class TorchRef:
    """PyTorch on CUDA (cuDNN, fp32, TF32 off, cudnn.benchmark on so cuDNN picks its
    fastest algorithm, Winograd included): GPU ms per forward from CUDA events around
    --repeat back-to-back calls."""

    def __init__(self):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        self.torch = torch

    def describe(self) -> str:
        t = self.torch
        return (f"PyTorch {t.__version__}, CUDA {t.version.cuda}, cuDNN {t.backends.cudnn.version()}, "
                f"{t.cuda.get_device_name(0)}; fp32, TF32 off, cudnn.benchmark")

    def time(self, fn, x: np.ndarray, warmup: int, repeat: int) -> float:
        torch = self.torch
        xt = torch.from_numpy(x).cuda()
        with torch.inference_mode():
            for _ in range(max(warmup, 2)):
                fn(xt)
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeat):
                fn(xt)
            end.record()
            torch.cuda.synchronize()
        return start.elapsed_time(end) / repeat

    def conv_relu(self, model):
        torch = self.torch
        inits = {t.name: t for t in model.graph.initializer}
        from onnx import numpy_helper

        w = torch.from_numpy(numpy_helper.to_array(inits["w"]).copy()).cuda()
        b = torch.from_numpy(numpy_helper.to_array(inits["b"]).copy()).cuda()
        return lambda x: torch.relu(torch.nn.functional.conv2d(x, w, b, padding=1))

    def vgg(self, model):
        """The VGG ONNX graph of `vgg_model` as a torch function (same weights)."""
        torch = self.torch
        F = torch.nn.functional
        from onnx import numpy_helper

        inits = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()).cuda() for t in model.graph.initializer}
        nodes = list(model.graph.node)

        def fwd(x):
            for n in nodes:
                if n.op_type == "Conv":
                    x = F.conv2d(x, inits[n.input[1]], inits[n.input[2]], padding=1)
                elif n.op_type == "Relu":
                    x = torch.relu(x)
                elif n.op_type == "MaxPool":
                    x = F.max_pool2d(x, 2, 2)
                elif n.op_type == "GlobalAveragePool":
                    x = F.adaptive_avg_pool2d(x, 1)
                elif n.op_type == "Flatten":
                    x = torch.flatten(x, 1)
                elif n.op_type == "Gemm":
                    x = F.linear(x, inits[n.input[1]], inits[n.input[2]])
                else:
                    raise ValueError(f"no torch twin for {n.op_type}")
            return x

        return fwd


# ------------------------------------------------------------------------------------------
# Measuring one compiled variant
# ------------------------------------------------------------------------------------------


def compile_variant(model, args, plan: dict, tile: str):
    import adreno_mlir

    RECORDS.clear()
    t0 = time.perf_counter()
    cm = adreno_mlir.compile(model, target=args.target, device=args.device, **plan,
                             pipeline=lambda p: with_tile(p, tile), passes=[record_pass()])
    compile_s = float(getattr(cm, "compile_seconds", 0.0) or (time.perf_counter() - t0))
    record = list(RECORDS[-1]) if RECORDS else []
    return cm, compile_s, record


def launched_tiles(cm) -> dict[str, int]:
    """Winograd output transforms launched per tile, from the executable's launch list."""
    counts: dict[str, int] = {}
    for launch in getattr(cm.executable, "launches", []):
        m = WINOGRAD_OUTPUT_KERNEL.match(launch.name)
        if m:
            counts[f"F{m.group(1)}"] = counts.get(f"F{m.group(1)}", 0) + 1
    return counts


def kernel_class(name: str) -> str:
    if name.startswith(("pack_", "unpack_")):
        return "layout"
    if WINOGRAD_KERNEL.match(name):
        return "winograd"
    if name.startswith("conv") or "split_k" in name or "splitk" in name:
        return "conv"
    return "other"


def measure(cm, feeds, ref_out, args, tol: float) -> dict:
    """Warm-up, wall times of cm.run, per-run device times, error vs the reference."""
    r: dict = {}
    out = None
    for _ in range(args.warmup):
        out = cm.run(feeds)
    walls = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        out = cm.run(feeds)
        walls.append((time.perf_counter() - t0) * 1e3)
    r["wall_ms"] = statistics.median(walls)
    r["wall_min_ms"] = min(walls)
    cm.profile(feeds, 1)  # the profiling queue's own first run
    runs = [cm.profile(feeds, 1) for _ in range(args.repeat)]
    totals = [sum(run.values()) for run in runs]
    non_layout = [sum(ms for k, ms in run.items() if kernel_class(k) != "layout") for run in runs]
    r["total_ms"] = statistics.median(totals)
    r["device_ms"] = statistics.median(non_layout)
    r["device_min_ms"] = min(non_layout)
    kernels = {k: float(np.median([run.get(k, 0.0) for run in runs])) for k in runs[0]}
    r["kernel_ms"] = kernels
    by_class: dict[str, float] = {}
    for k, ms in kernels.items():
        by_class[kernel_class(k)] = by_class.get(kernel_class(k), 0.0) + ms
    r["class_ms"] = by_class
    r["launches"] = [l.name for l in getattr(cm.executable, "launches", [])]
    if ref_out is not None:
        pairs = [(out[k], ref_out[k]) for k in cm.output_names if k in ref_out]
        if not pairs and len(out) == len(ref_out) == 1:
            pairs = [(next(iter(out.values())), next(iter(ref_out.values())))]
        r["max_rel_err"] = max(_bench.max_rel_err(a, b) for a, b in pairs) if pairs else None
        r["ok"] = r["max_rel_err"] is not None and r["max_rel_err"] <= tol
    else:
        r["max_rel_err"], r["ok"] = None, True
    return r


def run_variants(name: str, model, feeds, ref_out, args, plan_name: str, tiles: list[str]) -> list[dict]:
    """Every tile option for one model and plan. A variant whose per-conv tiles equal an
    already measured one's (e.g. auto = 4 on PoCL) reuses its numbers (`same_as`)."""
    plan = PLANS[plan_name]
    tol = args.tol if plan.get("precision", "fp32") == "fp32" else args.tol_fp16
    measured: dict[tuple, dict] = {}
    rows = []
    for tile in tiles:
        v = {"tile_option": tile, "plan": plan_name, "error": None}
        rows.append(v)
        cm = None
        try:
            log(f"[{name}] {plan_name} tile={tile}: compiling")
            cm, v["compile_s"], record = compile_variant(model, args, plan, tile)
            v["plan_used"] = cm.plan
            v["pipeline"] = cm.pipeline
            v["device"] = cm.device_name
            v["convs"] = record
            v["tiles"] = tile_counts(record)
            v["launched"] = launched_tiles(cm)
            recorded_wino = {k: n for k, n in v["tiles"].items() if k in ("F2", "F4")}
            if record and recorded_wino != v["launched"]:
                v["note"] = f"recorded {recorded_wino} but launched {v['launched']}"
            key = tuple(c["tile"] for c in record) + (cm.plan,)
            if record and key in measured:
                prev = measured[key]
                v.update({k: prev[k] for k in METRICS if k in prev})
                v["same_as"] = prev["tile_option"]
                log(f"[{name}] {plan_name} tile={tile}: same convs as tile={prev['tile_option']}, numbers reused")
                continue
            log(f"[{name}] {plan_name} tile={tile}: compiled in {v['compile_s']:.2f}s ({v['tiles']}); running")
            v.update(measure(cm, feeds, ref_out, args, tol))
            if record:
                measured[key] = v
            log(f"[{name}] {plan_name} tile={tile}: device {v['device_ms']:.3f} ms, wall {v['wall_ms']:.2f} ms, "
                f"err {fmt(v.get('max_rel_err'), '.1e')}")
        except Exception as e:  # keep going with the other variants
            v["error"] = f"{type(e).__name__}: {e}"
            v["ok"] = False
            log(traceback.format_exc())
        finally:
            del cm
            gc.collect()
    return rows


def tile_counts(record: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in record:
        k = "n/a" if c["tile"] is None else TILE_LABEL.get(c["tile"], str(c["tile"]))
        out[k] = out.get(k, 0) + 1
    return out


def chosen_tile(v: dict) -> str:
    """The label of the one 3x3 conv's tile in a single-conv variant."""
    elig = [c for c in v.get("convs", []) if c["tile"] is not None]
    if not elig:
        return "n/a" if v.get("convs") else "?"
    return "/".join(sorted({TILE_LABEL.get(c["tile"], str(c["tile"])) for c in elig}))


# ------------------------------------------------------------------------------------------
# The two benchmarks
# ------------------------------------------------------------------------------------------


def parse_shapes(text: str) -> list[tuple[int, int]]:
    shapes = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*[x:@]\s*(\d+)", part)
        if not m:
            raise ValueError(f"bad shape {part!r}: use CxS (channels x spatial side), e.g. 64x56")
        shapes.append((int(m.group(1)), int(m.group(2))))
    return shapes


def bench_layers(args, ref: OrtRef, torch_ref, plans, tiles) -> list[dict]:
    results = []
    for c, s in args.shape_list:
        name = f"conv {c}x{s}x{s}"
        row = {"channels": c, "size": s, "batch": args.batch, "plans": {}, "error": None}
        results.append(row)
        try:
            model = conv_layer_model(c, s, args.batch, args.seed)
            rng = np.random.default_rng(args.seed + 1)
            feeds = {"x": rng.standard_normal((args.batch, c, s, s)).astype(np.float32)}
            ref_out = ref.outputs(model, feeds)
            row["gflop"] = 2.0 * args.batch * c * c * 9 * s * s / 1e9
            if torch_ref is not None:
                try:
                    row["torch_ms"] = torch_ref.time(torch_ref.conv_relu(model), feeds["x"], args.warmup, args.repeat)
                except Exception as e:  # noqa: BLE001
                    row["torch_error"] = f"{type(e).__name__}: {e}"
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            log(traceback.format_exc())
            continue
        for plan in plans:
            row["plans"][plan] = run_variants(name, model, feeds, ref_out, args, plan, tiles)
        print_layer_rows([row], header=False, file=sys.stderr)
    return results


def load_model(name: str, args):
    import onnx

    if name == "vgg":
        return vgg_model(args.vgg, args.vgg_size, args.vgg_classifier, args.seed, args.batch)
    path = _bench.materialized_path(_bench.shared_dir(args.shared), name, args.seed)
    return onnx.load(str(path))


def bench_models(args, ref: OrtRef, torch_ref, plans, tiles) -> list[dict]:
    results = []
    for name in args.model_list:
        row = {"model": name, "plans": {}, "error": None}
        results.append(row)
        try:
            model = load_model(name, args)
            rng = np.random.default_rng(args.seed + 1)
            feeds = {k: rng.standard_normal(shape).astype(np.float32) for k, shape in graph_inputs(model).items()}
            row["input_shapes"] = {k: list(v.shape) for k, v in feeds.items()}
            row["eligible_convs"] = eligible_convs(model)
            row["convs"] = sum(n.op_type == "Conv" for n in model.graph.node)
            log(f"[{name}] onnxruntime reference")
            ref_out = ref.outputs(model, feeds)
            if torch_ref is not None:
                try:
                    if name == "vgg":
                        fn = torch_ref.vgg(model)
                    else:
                        import torch_models

                        net = torch_models.build_torch_model(name, model, device="cuda")
                        fn = net
                    row["torch_ms"] = torch_ref.time(fn, next(iter(feeds.values())), args.warmup, args.repeat)
                except Exception as e:  # noqa: BLE001
                    row["torch_error"] = f"{type(e).__name__}: {e}"
                    log(f"[{name}] torch: {row['torch_error']}")
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            log(traceback.format_exc())
            continue
        for plan in plans:
            row["plans"][plan] = run_variants(name, model, feeds, ref_out, args, plan, tiles)
        print_model_rows([row], header=False, file=sys.stderr)
    return results


# ------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def md_row(cells, file=None):
    print("| " + " | ".join(str(c) for c in cells) + " |", file=file or sys.stdout)


def variant(variants: list[dict], tile: str) -> dict | None:
    return next((v for v in variants if v["tile_option"] == tile), None)


def cell_ms(v: dict | None, key: str = "device_ms") -> str:
    if v is None:
        return "-"
    if v.get("error"):
        return "ERR"
    return fmt(v.get(key), ".3f")


def cell_err(v: dict | None) -> str:
    if v is None:
        return "-"
    if v.get("error"):
        return "ERR"
    e = v.get("max_rel_err")
    return fmt(e, ".1e") + ("" if v.get("ok", True) else "!")


def speedup(base: dict | None, v: dict | None) -> str:
    if not base or not v or base.get("error") or v.get("error") or not v.get("device_ms"):
        return "-"
    return f"{base['device_ms'] / v['device_ms']:.2f}x"


LAYER_HEADER = ["C", "HxW", "plan", "direct ms", "F2 ms", "F4 ms", "F2 speed-up", "F4 speed-up", "auto", "fastest",
                "wall ms direct/F2/F4", "max rel err direct/F2/F4"]


def fastest_label(vs: dict[str, dict | None]) -> str:
    timed = {k: v["device_ms"] for k, v in vs.items() if v and not v.get("error") and v.get("device_ms")}
    if not timed:
        return "-"
    return min(timed, key=timed.get)


AUTO_SLACK = 1.05
"""auto's choice counts as the fastest when within 5% of the fastest measured tile."""


def auto_missed(au: dict | None, vs: dict[str, dict | None]) -> str | None:
    """The fastest measured tile when auto's choice is over AUTO_SLACK slower than it, else None."""
    if au is None or au.get("error"):
        return None
    fastest = fastest_label(vs)
    chosen = vs.get(chosen_tile(au))
    if fastest == "-" or chosen is None or chosen.get("error") or not chosen.get("device_ms"):
        return None
    return fastest if chosen["device_ms"] > AUTO_SLACK * vs[fastest]["device_ms"] else None


def print_layer_rows(rows, header=True, file=None, torch_col=False):
    hdr = LAYER_HEADER + (["torch ms"] if torch_col else [])
    if header:
        md_row(hdr, file)
        md_row(["---"] * 3 + ["---:"] * (len(hdr) - 3), file)
    for r in rows:
        if r.get("error"):
            md_row([r["channels"], f"{r['size']}x{r['size']}", "-"] + ["-"] * (len(hdr) - 4)
                   + ["ERROR: " + r["error"][:80]], file)
            continue
        for plan, vs in r["plans"].items():
            d, f2, f4, au = (variant(vs, t) for t in ("off", "2", "4", "auto"))
            auto = "-" if au is None else ("ERR" if au.get("error") else chosen_tile(au))
            fastest = fastest_label({"direct": d, "F2": f2, "F4": f4})
            if auto_missed(au, {"direct": d, "F2": f2, "F4": f4}):
                auto += " *"
            walls = "/".join(cell_ms(v, "wall_ms") for v in (d, f2, f4))
            errs = " / ".join(cell_err(v) for v in (d, f2, f4))
            cells = [r["channels"], f"{r['size']}x{r['size']}", plan, cell_ms(d), cell_ms(f2), cell_ms(f4),
                     speedup(d, f2), speedup(d, f4), auto, fastest, walls, errs]
            if torch_col:
                cells.append(fmt(r.get("torch_ms"), ".3f"))
            md_row(cells, file)


MODEL_HEADER = ["model", "plan", "tile", "device ms", "wall ms", "speed-up vs direct", "convs direct/F2/F4 (n/a)",
                "max rel err", "compile s"]


def print_model_rows(rows, header=True, file=None, torch_col=False):
    hdr = MODEL_HEADER + (["torch ms"] if torch_col else [])
    if header:
        md_row(hdr, file)
        md_row(["---"] * 3 + ["---:"] * (len(hdr) - 3), file)
    for r in rows:
        if r.get("error"):
            md_row([r["model"], "-", "-"] + ["-"] * (len(hdr) - 4) + ["ERROR: " + r["error"][:80]], file)
            continue
        for plan, vs in r["plans"].items():
            base = variant(vs, "off")
            for v in vs:
                t = v.get("tiles", {})
                convs = f"{t.get('direct', 0)}/{t.get('F2', 0)}/{t.get('F4', 0)} ({t.get('n/a', 0)})" if t else "-"
                label = v["tile_option"] + (f" (= {v['same_as']})" if v.get("same_as") else "")
                if v.get("error"):
                    md_row([r["model"], plan, label, "ERROR: " + v["error"][:100]] + [""] * (len(hdr) - 4), file)
                    continue
                cells = [r["model"], plan, label, cell_ms(v), fmt(v.get("wall_ms"), ".2f"),
                         speedup(base, v) if v is not base else "1.00x", convs, cell_err(v),
                         fmt(v.get("compile_s"), ".2f")]
                if torch_col:
                    cells.append(fmt(r.get("torch_ms"), ".3f"))
                md_row(cells, file)


def notes(layers, models) -> list[str]:
    out = []
    for r in layers:
        for plan, vs in r.get("plans", {}).items():
            d = variant(vs, "off")
            shape = f"{r['channels']}x{r['size']}x{r['size']} {plan}"
            for t in ("2", "4"):
                v = variant(vs, t)
                if d and v and not d.get("error") and not v.get("error") and v.get("device_ms", 0) > d.get("device_ms", 0):
                    out.append(f"Winograd loses: {shape}: F{t} {v['device_ms']:.3f} ms vs direct {d['device_ms']:.3f} ms")
            au = variant(vs, "auto")
            if au and not au.get("error"):
                missed = auto_missed(au, {"direct": d, "F2": variant(vs, "2"), "F4": variant(vs, "4")})
                if missed:
                    out.append(f"auto picks {chosen_tile(au)} for {shape}, but {missed} is faster (by > 5%)")
            for v in vs:
                if v.get("error"):
                    out.append(f"error {shape} tile={v['tile_option']}: {v['error'][:200]}")
                elif v.get("ok") is False:
                    out.append(f"error above tolerance {shape} tile={v['tile_option']}: {v.get('max_rel_err'):.2e}")
                other = [k for k in v.get("launches", []) if kernel_class(k) == "other"]
                if other and v["tile_option"] != "off" and "unfused" not in " ".join(out):
                    out.append(f"unfused epilogue: with Winograd the layer launches {other} after the output "
                               "transform (the direct conv fuses it)")
    for r in models:
        for plan, vs in r.get("plans", {}).items():
            d = variant(vs, "off")
            for v in vs:
                if v.get("error"):
                    out.append(f"error {r['model']} {plan} tile={v['tile_option']}: {v['error'][:200]}")
                    continue
                if v.get("ok") is False:
                    out.append(f"error above tolerance {r['model']} {plan} tile={v['tile_option']}: "
                               f"{v.get('max_rel_err'):.2e}")
                if v.get("note"):
                    out.append(f"{r['model']} {plan} tile={v['tile_option']}: {v['note']}")
                if d and v is not d and not d.get("error") and d.get("launches") and v.get("launches"):
                    t = v.get("tiles", {})
                    extra = len(v["launches"]) - len(d["launches"]) - 2 * (t.get("F2", 0) + t.get("F4", 0))
                    if extra > 0:
                        out.append(f"{r['model']} {plan} tile={v['tile_option']}: {extra} more launches than "
                                   "3 per Winograd conv (an epilogue not fused into the output transform?)")
                if d and v is not d and not d.get("error") and v.get("device_ms", 0) > d.get("device_ms", 0):
                    out.append(f"Winograd loses end to end: {r['model']} {plan} tile={v['tile_option']}: "
                               f"{v['device_ms']:.2f} ms vs direct {d['device_ms']:.2f} ms")
                if v.get("plan_used") and "textures" in PLANS[plan] and PLANS[plan]["textures"] \
                        and "buffers" in v["plan_used"]:
                    out.append(f"{r['model']} {plan} tile={v['tile_option']}: fell back to {v['plan_used']}")
    return list(dict.fromkeys(out))


def device_description(args) -> str:
    try:
        from adreno_mlir.runtime import default_context, describe_device

        return describe_device(default_context(args.device).devices[0])
    except Exception as e:  # noqa: BLE001
        return f"(no device: {type(e).__name__}: {e})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog="See bench/README.md.")
    ap.add_argument("--layers", action="store_true", help="single 3x3 conv+ReLU layers (default when no --models)")
    ap.add_argument("--shapes", default=None,
                    help="layers as CxS (C in = C out, S x S spatial), comma-separated; "
                         "default 64x56,128x28,256x14,512x7 (+64x112,128x56,256x28,512x14 with --full)")
    ap.add_argument("--full", action="store_true", help="add the larger stage shapes to the default --shapes")
    ap.add_argument("--models", default=None, help=f"end-to-end models, comma-separated: {','.join(MODELS)}")
    ap.add_argument("--plans", default="texture,buffer4c", help=f"compile plans: {','.join(PLANS)}")
    ap.add_argument("--tiles", default="off,2,4,auto",
                    help="conv-winograd tile options to compare (off = direct); default off,2,4,auto")
    ap.add_argument("--device", default=None, help="OpenCL device (default: PYOPENCL_CTX, else PoCL)")
    ap.add_argument("--target", default="auto", help="target profile for the compile (default auto: the live device)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs (median reported); default 20")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first; default 2")
    ap.add_argument("--batch", type=int, default=1, help="batch size (layers and vgg); default 1")
    ap.add_argument("--vgg", type=int, default=16, choices=sorted(VGG_CFG), help="VGG depth; default 16")
    ap.add_argument("--vgg-size", type=int, default=224, help="VGG input side (>= 32); default 224")
    ap.add_argument("--vgg-classifier", default="small", choices=["none", "small", "full"],
                    help="none: conv stack only; small (default): avgpool + 512->1000; full: VGG's FC layers")
    ap.add_argument("--torch", action="store_true",
                    help="also time PyTorch/cuDNN on CUDA (fp32, TF32 off, cudnn.benchmark) for reference")
    ap.add_argument("--tol", type=float, default=1e-3, help="max rel err for fp32 plans; default 1e-3")
    ap.add_argument("--tol-fp16", type=float, default=5e-2, help="max rel err for fp16-acc32 plans; default 5e-2")
    ap.add_argument("--seed", type=int, default=0, help="weights seed (input: seed+1); default 0")
    ap.add_argument("--shared", default=None, help="shared folder (default: $ADRENO_SHARED or <repo>/../shared)")
    ap.add_argument("--json", default=None, metavar="OUT", help="write every number to this JSON file")
    args = ap.parse_args(argv)

    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    plans = [p.strip() for p in args.plans.split(",") if p.strip()]
    bad = [p for p in plans if p not in PLANS]
    if bad or not plans:
        ap.error(f"unknown plan(s) {bad}; choose from {', '.join(PLANS)}")
    tiles = [t.strip() for t in args.tiles.split(",") if t.strip()]
    bad = [t for t in tiles if t not in TILES]
    if bad or not tiles:
        ap.error(f"unknown tile option(s) {bad}; choose from {', '.join(TILES)}")
    args.model_list = [m.strip() for m in (args.models or "").split(",") if m.strip()]
    bad = [m for m in args.model_list if m not in MODELS]
    if bad:
        ap.error(f"unknown model(s) {bad}; choose from {', '.join(MODELS)}")
    if not args.model_list:
        args.layers = True
    try:
        args.shape_list = parse_shapes(args.shapes) if args.shapes else \
            DEFAULT_SHAPES + (FULL_EXTRA_SHAPES if args.full else [])
    except ValueError as e:
        ap.error(str(e))
    if "vgg" in args.model_list and args.vgg_size < 32:
        ap.error("--vgg-size must be >= 32 (five 2x2 max pools)")

    dev = device_description(args)
    print(f"device: {dev}", flush=True)
    ref = OrtRef()
    torch_ref = None
    if args.torch:
        try:
            torch_ref = TorchRef()
            print(f"torch: {torch_ref.describe()}")
        except Exception as e:  # noqa: BLE001
            log(f"note: --torch unavailable ({type(e).__name__}: {e}); continuing without it")

    t_start = time.perf_counter()
    layers = bench_layers(args, ref, torch_ref, plans, tiles) if args.layers else []
    models = bench_models(args, ref, torch_ref, plans, tiles) if args.model_list else []

    target_used = next((v.get("plan_used") for r in layers + models for vs in r.get("plans", {}).values()
                        for v in vs if v.get("plan_used")), None)
    torch_col = torch_ref is not None
    if layers:
        print("\n## Winograd vs direct, per layer (Conv 3x3 s1 p1 + bias + ReLU, C -> C, batch "
              f"{args.batch})\n")
        print_layer_rows(layers, torch_col=torch_col)
        print("\n- ms: median device time over the layer's kernels (OpenCL events; pack/unpack at the "
              "model boundary left out); speed-up = direct / Winograd; auto: the tile `tile=auto` gave "
              "(* = over 5% slower than the fastest measured); max rel err vs onnxruntime (! = above tolerance)")
    if models:
        print("\n## Winograd vs direct, end to end\n")
        print_model_rows(models, torch_col=torch_col)
        print("\n- device ms: median over runs of the sum of all kernel times; wall ms: `cm.run` "
              "(with copies); convs: 3x3 convs left direct / F(2,3) / F(4,3), (n/a) convs Winograd cannot take")
        for r in models:
            if r["model"] == "vgg" and not r.get("error"):
                print(f"- vgg: VGG-{args.vgg}, {args.vgg_size}x{args.vgg_size} input, classifier {args.vgg_classifier}")
    ns = notes(layers, models)
    if ns:
        print("\nNotes:")
        for n in ns:
            print(f"- {n}")
    print(f"\n- device: {dev}; plan/target: {target_used}; reference: {ref.describe()}"
          + (f"; torch: {torch_ref.describe()}" if torch_ref else ""))
    print(f"- median of {args.repeat} runs after {args.warmup} warm-up runs; seed {args.seed}; "
          f"host {platform.node()} ({platform.platform()}); {time.perf_counter() - t_start:.0f} s")

    if args.json:
        payload = {
            "config": {k: getattr(args, k) for k in vars(args)},
            "device": dev,
            "reference": ref.describe(),
            "torch": torch_ref.describe() if torch_ref else None,
            "layers": layers,
            "models": models,
            "notes": ns,
        }
        Path(args.json).write_text(json.dumps(payload, indent=2, default=str))
        log(f"wrote {args.json}")

    failed = any(v.get("error") or v.get("ok") is False
                 for r in layers + models for vs in r.get("plans", {}).values() for v in vs) \
        or any(r.get("error") for r in layers + models)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
