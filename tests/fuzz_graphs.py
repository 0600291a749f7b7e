"""Random ONNX graphs for the differential fuzzer (tests/test_fuzz.py, bench/fuzz.py).

A graph is drawn by Hypothesis as a `GraphSpec`: plain data (model inputs, a list of
`Step`s, the output values and a weight seed) that `build_model` turns into a float32
opset-17 ONNX model and `make_feeds` into inputs. Specs are JSON-serialisable
(`GraphSpec.to_json` / `from_json`), so a failing graph can be replayed and shrunk.

What is drawn (the attribute variety of PyTorch/TF exporters):

- Conv: groups 1, grouped and depthwise (multiplier 1 or 2), square and non-square
  kernels 1-7, strides 1-3, dilations 1-3, symmetric / asymmetric / zero pads and
  auto_pad SAME_UPPER / SAME_LOWER / VALID, with and without bias; 64-128 output
  channels now and then (split-K on the Adreno plans), and a 1x1-then-3x3 block of 128
  or 132 channels (`WideBlock`: Winograd F(2,3)/F(4,3) on the Adreno plans);
- MaxPool (dilations too) / AveragePool (count_include_pad) with ceil_mode, pads,
  strides, auto_pad; GlobalAveragePool; ReduceMean (spatial, channel, keepdims 0/1);
- BatchNormalization (constant statistics, 4-D and 2-D);
- activations: Relu, Clip (both, min-only, max-only bounds), Sigmoid, HardSwish,
  HardSigmoid, LeakyRelu, Elu, Tanh, Neg, Abs, Erf, Sqrt(Abs), Exp (of a bounded value),
  Identity, and the exporters' decompositions GELU (Div/Erf/Add/Mul/Mul), SiLU
  (Sigmoid/Mul) and HardSwish (Add/Clip/Mul/Div), which use one value twice;
- Add/Sub/Mul/Div with broadcasting: per-channel [C,1,1] / [1,C,1,1], scalar, [1],
  row [W], plane [H,W] / [1,1,H,W], full constants (either operand order), another
  value of the graph (e.g. an SE gate [N,C,1,1] times a [N,C,H,W] map), or the value
  itself;
- Concat on channels (of 2-3 values, possibly the same value twice);
- Resize (nearest with every nearest_mode, linear, cubic (cubic_coeff_a, exclude_outside);
  scales or sizes; the coordinate
  transformation modes, including ones the importer refuses);
- channel shuffle (Reshape 5-D / Transpose / Reshape), Slice (channels, crops, steps,
  negative steps), Transpose, Flatten (axis 1 or 2) / Reshape / Squeeze to 2-D and
  Reshape / Unsqueeze back to [N,F,1,1]; 1-D MaxPool/AveragePool on [N,C,L] (Conv1d-style
  models: the importer's 1-D pooling path);
- heads: Gemm (transB, alpha, beta, bias [M] / [1,M] / [N,M] / [1] / none), MatMul
  (2-D and 4-D x 2-D weights, with an optional bias Add), a Gram matrix
  (x @ x^T: a value used twice), Softmax;
- DAGs: every step reads any earlier value (shared values), every value nobody reads
  is an output and other values may be outputs too (multiple outputs); batch 1 or 2;
  odd channel counts (1, 3, 5, 7); spatial sizes 1..72, which cross the 64x64 image
  limit of the `tiny-test` target; sometimes a second model input (possibly unused).

Weights come from `numpy.random.default_rng(spec.seed)` (He/LeCun scaled so values
stay O(1): the fp16 plan must not overflow), inputs from `make_feeds`.

`check_plan` compiles a model on one plan of `PLANS`, runs it and compares it with
onnxruntime (CPUExecutionProvider); when they differ it asks
`onnx.reference.ReferenceEvaluator`: if ours differs from onnxruntime only at elements
where onnxruntime and the ONNX reference disagree with each other (e.g. Resize
align_corners with a scale that does not divide the length, nearest-mode rounding ties
with a scale float32 cannot represent), it is a *divergence* of the references, not a
failure.
"""

from __future__ import annotations

import json
import math
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808

PLANS: dict[str, dict] = {
    "nchw": {"layout": "nchw"},
    "buffer4c": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "textures": {"textures": True, "target": "adreno-740"},
    "tiny-test": {"textures": True, "target": "tiny-test"},
    "fp16-acc32": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
    "fp16": {"textures": True, "precision": "fp16", "target": "adreno-740", "device": "intel"},
}
"""The plans every graph is compiled on (keyword arguments of adreno_mlir.compile). The
fp16 plan (half arithmetic) needs cl_khr_fp16: Intel's CPU runtime from PyPI."""

TOLERANCE = {name: 5e-2 if plan.get("precision", "fp32").startswith("fp16") else 1e-4 for name, plan in PLANS.items()}
"""max|ours - ref| / max|ref| per output."""

REF_AGREE = 1e-4
"""onnxruntime and the ONNX reference 'disagree' above this scaled error."""

MAG_CAP = 150.0
"""Largest estimated |value| a step may produce (fp16 storage holds 65504; products of
two values must stay far below it)."""

MAX_SIDE = 96
MAX_CHANNELS = 160
MAX_FEATURES = 8192
MAX_ELEMENTS = 1 << 19
WIDE_MAX_PIXELS = 24 * 24
"""Largest input (pixels) of a conv drawn with 64-128 output channels."""


class InvalidSpec(ValueError):
    """A step does not apply to its inputs (shapes); raised by `infer`."""


# ------------------------------------------------------------------------------ specs


@dataclass
class Step:
    """One generator step: an op kind (which may emit several ONNX nodes), the value ids
    it reads and its parameters (plain JSON data)."""

    op: str
    inputs: list[int]
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"op": self.op, "inputs": list(self.inputs), "params": self.params}

    @staticmethod
    def from_dict(d: dict) -> Step:
        return Step(d["op"], list(d["inputs"]), dict(d["params"]))


@dataclass
class GraphSpec:
    """A random graph: value ids 0..len(inputs)-1 are the model inputs, step i
    produces value len(inputs)+i; `outputs` are value ids (steps only)."""

    inputs: list[list[int]]
    steps: list[Step]
    outputs: list[int]
    seed: int

    def to_dict(self) -> dict:
        return {"inputs": [list(s) for s in self.inputs], "steps": [s.to_dict() for s in self.steps],
                "outputs": list(self.outputs), "seed": self.seed}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @staticmethod
    def from_dict(d: dict) -> GraphSpec:
        return GraphSpec([list(s) for s in d["inputs"]], [Step.from_dict(s) for s in d["steps"]],
                         list(d["outputs"]), int(d["seed"]))

    @staticmethod
    def from_json(text: str) -> GraphSpec:
        return GraphSpec.from_dict(json.loads(text))


@dataclass
class Value:
    shape: tuple[int, ...]
    mag: float
    """Rough bound of |value| (inputs are standard normal: 4)."""
    bounded: bool = False
    """In [-1, 1]-ish (sigmoid, tanh, clip with both bounds ...): Exp may follow."""


# ------------------------------------------------------------------------------ shapes


def _pair(v) -> tuple[int, int]:
    return (int(v[0]), int(v[1])) if isinstance(v, (list, tuple)) else (int(v), int(v))


def _conv_dim(size, k, s, d, p0, p1, auto):
    return _pool_dim(size, k, s, d, p0, p1, auto, ceil=False)


def _pool_dim(size, k, s, d, p0, p1, auto, ceil):
    eff = d * (k - 1) + 1
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return -(-size // s)
    if auto == "VALID":
        p0 = p1 = 0
    num = size + p0 + p1 - eff
    if num < 0:
        raise InvalidSpec(f"window {eff} larger than padded size {size + p0 + p1}")
    if ceil:
        out = -(-num // s) + 1
        if (out - 1) * s >= size + p0:  # onnxruntime / ONNX reference drop such a window
            out -= 1
        return out
    return num // s + 1


def _const_shape(pattern: str, shape: tuple[int, ...]) -> list[int]:
    """A broadcasting constant's shape for a value of `shape` (4-D NCHW or 2-D NF)."""
    if len(shape) == 4:
        n, c, h, w = shape
        table = {"scalar": [], "1": [1], "C11": [c, 1, 1], "1C11": [1, c, 1, 1], "W": [w],
                 "HW": [h, w], "11HW": [1, 1, h, w], "H1": [h, 1], "full": [n, c, h, w],
                 "1CHW": [1, c, h, w], "CHW": [c, h, w]}
    elif len(shape) == 2:
        n, f = shape
        table = {"scalar": [], "1": [1], "C11": [f], "1C11": [1, f], "W": [f], "HW": [n, f],
                 "11HW": [1, f], "H1": [n, 1], "full": [n, f], "1CHW": [1, f], "CHW": [n, f]}
    else:
        table = {"scalar": [], "1": [1], "full": list(shape), "W": [shape[-1]]}
    if pattern not in table:
        raise InvalidSpec(f"constant pattern {pattern} for rank {len(shape)}")
    return table[pattern]


def _broadcast(a, b) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise InvalidSpec(f"{a} and {b} do not broadcast") from None


ACTS_BOUNDED = {"Sigmoid", "HardSigmoid", "Tanh", "Erf", "ClipBoth"}


def infer(step: Step, ins: list[Value]) -> Value:
    """The value `step` produces from `ins` (raises InvalidSpec when it does not apply)."""
    p, op = step.params, step.op
    x = ins[0]
    s = x.shape
    rank = len(s)

    def need_rank(*ranks):
        if rank not in ranks:
            raise InvalidSpec(f"{op} needs rank {ranks}, got {s}")

    if op == "Act":
        kind = p["kind"]
        if kind == "Exp" and not x.bounded:
            raise InvalidSpec("Exp of an unbounded value")
        if kind == "Clip":
            lo, hi = p.get("min"), p.get("max")
            bounded = lo is not None and hi is not None
            mag = max(abs(lo) if lo is not None else 0, abs(hi) if hi is not None else 0) if bounded else x.mag
            return Value(s, mag, bounded)
        if kind in ACTS_BOUNDED:
            return Value(s, 1.0, True)
        if kind == "Exp":
            return Value(s, math.exp(x.mag), False)
        if kind == "Elu":  # x above 0, down to -alpha below
            return Value(s, max(x.mag, p["alpha"]), x.bounded)
        if kind in ("HardSwish", "HardSwishDecomp", "Gelu", "SiLU", "LeakyRelu", "Relu", "Neg", "Abs",
                    "Identity"):
            return Value(s, x.mag, x.bounded and kind in ("Relu", "Neg", "Abs", "Identity", "LeakyRelu"))
        if kind == "Sqrt":
            return Value(s, math.sqrt(x.mag) + 1, False)
        raise InvalidSpec(f"unknown activation {kind}")
    if op == "BatchNorm":
        need_rank(2, 4)
        return Value(s, x.mag * 1.4 + 0.4)
    if op == "Binary":
        kind, other = p["kind"], p["other"]
        if other == "const":
            cs = _const_shape(p["pattern"], s)
            out = _broadcast(s, cs)
            if out != s:
                raise InvalidSpec("constant widens the value")
            cmag = {"Add": 1.0, "Sub": 1.0, "Mul": 1.5, "Div": 2.0}[kind]
            mag = x.mag + 3 if kind in ("Add", "Sub") else x.mag * cmag
            return Value(s, mag)
        if other == "self":
            if kind == "Div":
                raise InvalidSpec("Div by itself")
            mag = {"Add": 2 * x.mag, "Sub": 0.0, "Mul": x.mag * x.mag}[kind]
            return Value(s, mag, kind == "Sub" or (kind == "Mul" and x.bounded))
        y = ins[1]
        if kind == "Div":
            raise InvalidSpec("Div by a value")
        out = _broadcast(s, y.shape)
        mag = x.mag * y.mag if kind == "Mul" else x.mag + y.mag
        return Value(out, mag, kind == "Mul" and x.bounded and y.bounded)
    if op == "Conv":
        need_rank(4)
        n, c, h, w = s
        g = c if p["group"] == "dw" else int(p["group"])
        cout = c * int(p["cout"]) if p["group"] == "dw" else int(p["cout"])
        if c % g or cout % g:
            raise InvalidSpec(f"group {g} does not divide {c} -> {cout}")
        kh, kw = _pair(p["kernel"])
        sh, sw = _pair(p["strides"])
        dh, dw = _pair(p["dilations"])
        auto = p.get("auto_pad", "NOTSET")
        pt, pl, pb, pr = p.get("pads", [0, 0, 0, 0])
        oh = _conv_dim(h, kh, sh, dh, pt, pb, auto)
        ow = _conv_dim(w, kw, sw, dw, pl, pr, auto)
        if auto in ("SAME_UPPER", "SAME_LOWER") and (dh, dw) != (1, 1):
            raise InvalidSpec("onnxruntime: dilation not supported with auto_pad SAME")
        return Value((n, cout, oh, ow), x.mag * 1.15 + (0.3 if p.get("bias") else 0))
    if op in ("MaxPool", "AveragePool"):
        need_rank(4)
        n, c, h, w = s
        kh, kw = _pair(p["kernel"])
        sh, sw = _pair(p["strides"])
        dh, dw = _pair(p.get("dilations", [1, 1]))
        auto = p.get("auto_pad", "NOTSET")
        pt, pl, pb, pr = p.get("pads", [0, 0, 0, 0])
        if auto == "NOTSET" and (max(pt, pb) >= kh or max(pl, pr) >= kw):
            raise InvalidSpec("onnxruntime: pad should be smaller than kernel")
        if auto in ("SAME_UPPER", "SAME_LOWER") and ((dh, dw) != (1, 1) or sh > kh or sw > kw):
            # onnxruntime: no dilations with SAME; a stride above the kernel gives it
            # negative pads ("padding values must be non-negative")
            raise InvalidSpec("onnxruntime cannot run this auto_pad SAME pool")
        ceil = bool(p.get("ceil_mode", 0))
        oh = _pool_dim(h, kh, sh, dh, pt, pb, auto, ceil)
        ow = _pool_dim(w, kw, sw, dw, pl, pr, auto, ceil)
        if oh < 1 or ow < 1:
            raise InvalidSpec("empty pool output")
        return Value((n, c, oh, ow), x.mag, x.bounded)
    if op == "GlobalAveragePool":
        need_rank(4)
        return Value((s[0], s[1], 1, 1), x.mag, x.bounded)
    if op == "ReduceMean":
        need_rank(4)
        axes = [a % 4 for a in p["axes"]]
        keep = p["keepdims"]
        out = tuple((1 if i in axes else d) for i, d in enumerate(s) if keep or i not in axes)
        return Value(out, x.mag, x.bounded)
    if op == "Concat":
        for y in ins[1:]:
            if len(y.shape) != rank or y.shape[:1] != s[:1] or y.shape[2:] != s[2:]:
                raise InvalidSpec(f"cannot concat {s} and {y.shape} on axis 1")
        cs = sum(y.shape[1] for y in ins)
        return Value((s[0], cs, *s[2:]), max(y.mag for y in ins), all(y.bounded for y in ins))
    if op == "Resize":
        need_rank(4)
        n, c, h, w = s
        if "sizes" in p:
            oh, ow = _pair(p["sizes"])
        else:
            fh, fw = p["scales"]
            oh, ow = math.floor(h * fh), math.floor(w * fw)
        if oh < 1 or ow < 1:
            raise InvalidSpec("empty resize output")
        # (bicubic weights have negative lobes: their |w| add up to 1.375 per axis for A = -0.75)
        grow = 1.9 if p["mode"] == "cubic" else 1.3 if p["mode"] == "linear" and min(p.get("scales", [1, 1])) < 1 else 1
        return Value((n, c, oh, ow), x.mag * grow, x.bounded)
    if op == "Shuffle":
        need_rank(4)
        if s[1] % p["groups"] or p["groups"] < 2:
            raise InvalidSpec("groups do not divide the channels")
        return Value(s, x.mag, x.bounded)
    if op == "Slice":
        axis = p["axis"]
        if axis >= rank:
            raise InvalidSpec("slice axis")
        length = len(range(*slice(p["start"], p["end"], p["step"]).indices(s[axis])))
        if length < 1:
            raise InvalidSpec("empty slice")
        out = list(s)
        out[axis] = length
        return Value(tuple(out), x.mag, x.bounded)
    if op == "Transpose":
        perm = p["perm"]
        if sorted(perm) != list(range(rank)):
            raise InvalidSpec("perm")
        return Value(tuple(s[i] for i in perm), x.mag, x.bounded)
    if op == "Flatten":
        need_rank(4)
        style = p.get("style", "flatten")
        if style == "flatten2":  # Flatten(axis=2): [N*C, H*W]
            out = (s[0] * s[1], s[2] * s[3])
        elif style == "squeeze":
            if s[2:] != (1, 1):
                raise InvalidSpec("squeeze of a non-unit spatial axis")
            out = (s[0], s[1])
        else:
            out = (s[0], s[1] * s[2] * s[3])
        if max(out) > MAX_FEATURES:
            raise InvalidSpec("too many features")
        return Value(out, x.mag, x.bounded)
    if op == "Pool1d":  # [N, C*H, W] pooled over W, back to [N, C, H, W']
        need_rank(4)
        n, c, h, w = s
        k, st_, (p0, p1) = p["kernel"], p["stride"], p["pads"]
        if max(p0, p1) >= k:
            raise InvalidSpec("onnxruntime: pad should be smaller than kernel")
        out = _pool_dim(w, k, st_, 1, p0, p1, "NOTSET", bool(p.get("ceil_mode")))
        if out < 1:
            raise InvalidSpec("empty pool output")
        return Value((n, c, h, out), x.mag, x.bounded)
    if op == "Head":
        need_rank(4)
        return Value((s[0], p["m"]), x.mag * 1.3 + 0.3)
    if op == "WideBlock":  # 1x1 conv to `width` channels, ReLU, 3x3 stride-1 conv
        need_rank(4)
        if s[2] * s[3] > WIDE_MAX_PIXELS:
            raise InvalidSpec("too many pixels for a wide block")
        return Value((s[0], p["width"], s[2], s[3]), x.mag * 1.3 + 0.3)
    if op == "Unflatten":
        need_rank(2)
        return Value((s[0], s[1], 1, 1), x.mag, x.bounded)
    if op == "Gemm":
        need_rank(2)
        return Value((s[0], p["m"]), (x.mag * 1.3 * p["alpha"] + p["beta"] * 0.3))
    if op == "MatMul":
        need_rank(2, 4)
        return Value((*s[:-1], p["m"]), x.mag * 1.3 + 0.3)
    if op == "Gram":
        need_rank(4)
        return Value((s[0], s[1], s[2], s[2]), x.mag * x.mag * math.sqrt(s[3]) * 0.6)
    if op == "Softmax":
        if not -rank <= p["axis"] < rank:
            raise InvalidSpec("softmax axis")
        return Value(s, 1.0, True)
    raise InvalidSpec(f"unknown op {op}")


def too_large(v: Value) -> bool:
    """Values the generator keeps away from: big enough to make a graph slow, or large
    enough in magnitude to overflow fp16 storage."""
    dims = v.shape[1:] if len(v.shape) == 2 else v.shape
    return (v.mag > MAG_CAP or math.prod(v.shape) > MAX_ELEMENTS
            or max(dims) > (MAX_FEATURES if len(v.shape) == 2 else 2 * MAX_SIDE))


def values_of(spec: GraphSpec) -> list[Value]:
    """Every value of the spec (inputs then steps); raises InvalidSpec."""
    vals = [Value(tuple(s), 4.0) for s in spec.inputs]
    for st_ in spec.steps:
        if any(i >= len(vals) for i in st_.inputs):
            raise InvalidSpec("step reads a later value")
        v = infer(st_, [vals[i] for i in st_.inputs])
        if not all(d >= 1 for d in v.shape):
            raise InvalidSpec(f"empty value {v.shape}")
        if too_large(v):
            raise InvalidSpec(f"value too large {v.shape}")
        vals.append(v)
    n_in = len(spec.inputs)
    if not spec.outputs or any(o < n_in or o >= len(vals) for o in spec.outputs) or \
            len(set(spec.outputs)) != len(spec.outputs):
        raise InvalidSpec("outputs")
    return vals


def leaves(spec: GraphSpec) -> list[int]:
    used = {i for st_ in spec.steps for i in st_.inputs}
    n_in = len(spec.inputs)
    return [n_in + i for i in range(len(spec.steps)) if n_in + i not in used]


def has_ceil_pool(spec: GraphSpec) -> bool:
    return any(st_.op in ("MaxPool", "AveragePool", "Pool1d") and st_.params.get("ceil_mode") for st_ in spec.steps)


# ------------------------------------------------------------------------------ description


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    return str(v)


def describe(spec: GraphSpec) -> str:
    """One line per value: `v3 = Conv(v1) kernel=[3,3] ... -> [1,8,16,16]`."""
    try:
        vals = values_of(spec)
    except InvalidSpec as e:
        return f"<invalid spec: {e}>"
    lines = [f"seed={spec.seed}"]
    for i, s in enumerate(spec.inputs):
        lines.append(f"v{i} = input {list(s)}")
    n_in = len(spec.inputs)
    for k, st_ in enumerate(spec.steps):
        params = " ".join(f"{a}={_fmt(b)}" for a, b in st_.params.items())
        ins = ", ".join(f"v{i}" for i in st_.inputs)
        lines.append(f"v{n_in + k} = {st_.op}({ins}) {params} -> {list(vals[n_in + k].shape)}")
    lines.append("outputs: " + ", ".join(f"v{o}" for o in spec.outputs))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ ONNX building


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, arr: np.ndarray, base: str = "c") -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def normal(self, shape, std: float) -> str:
        return self.const(self.rng.normal(0.0, std, shape).astype(np.float32), "w")

    def uniform(self, shape, lo: float, hi: float) -> str:
        return self.const(self.rng.uniform(lo, hi, shape).astype(np.float32), "w")

    def node(self, op: str, inputs: list[str], out: str | None = None, **attrs) -> str:
        out = out or self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"/{out}/{op}", **attrs))
        return out


def _emit(b: _Builder, st_: Step, names: list[str], ins: list[Value], out: str, result: Value) -> None:
    p, op, x = st_.params, st_.op, names[0]
    s = ins[0].shape
    f32 = np.float32
    if op == "Act":
        kind = p["kind"]
        if kind == "Clip":
            args = [x, b.const(np.array(p["min"], f32)) if p.get("min") is not None else ""]
            if p.get("max") is not None:
                args.append(b.const(np.array(p["max"], f32)))
            while args[-1] == "":
                args.pop()
            b.node("Clip", args, out)
        elif kind == "HardSigmoid":
            b.node("HardSigmoid", [x], out, alpha=float(p["alpha"]), beta=float(p["beta"]))
        elif kind == "LeakyRelu":
            b.node("LeakyRelu", [x], out, alpha=float(p["alpha"]))
        elif kind == "Elu":
            b.node("Elu", [x], out, alpha=float(p["alpha"]))
        elif kind == "Sqrt":
            b.node("Sqrt", [b.node("Abs", [x])], out)
        elif kind == "Gelu":  # torch.onnx (opset < 20): x * 0.5 * (1 + erf(x / sqrt(2)))
            e = b.node("Erf", [b.node("Div", [x, b.const(np.array(1.4142135381698608, f32))])])
            m = b.node("Mul", [x, b.node("Add", [e, b.const(np.array(1.0, f32))])])
            b.node("Mul", [m, b.const(np.array(0.5, f32))], out)
        elif kind == "SiLU":
            b.node("Mul", [x, b.node("Sigmoid", [x])], out)
        elif kind == "HardSwishDecomp":  # x * clip(x + 3, 0, 6) / 6
            c = b.node("Clip", [b.node("Add", [x, b.const(np.array(3.0, f32))]),
                                b.const(np.array(0.0, f32)), b.const(np.array(6.0, f32))])
            b.node("Div", [b.node("Mul", [x, c]), b.const(np.array(6.0, f32))], out)
        else:
            b.node(kind, [x], out)
    elif op == "BatchNorm":
        c = s[1]
        b.node("BatchNormalization", [x, b.uniform((c,), 0.5, 1.5), b.normal((c,), 0.1), b.normal((c,), 0.1),
                                      b.uniform((c,), 0.5, 1.5)], out, epsilon=float(p["epsilon"]))
    elif op == "Binary":
        kind, other = p["kind"], p["other"]
        if other == "const":
            cs = _const_shape(p["pattern"], s)
            if kind == "Div":
                arr = b.rng.uniform(0.5, 2.0, cs) * b.rng.choice([-1.0, 1.0], cs)
            elif kind == "Mul":
                arr = b.rng.normal(1.0, 0.5, cs)
            else:
                arr = b.rng.normal(0.0, 1.0, cs)
            c = b.const(np.asarray(arr, f32))
            args = [c, x] if p.get("const_first") and kind != "Div" else [x, c]
        elif other == "self":
            args = [x, x]
        else:
            args = [x, names[1]] if not p.get("swap") else [names[1], x]
        b.node(kind, args, out)
    elif op == "Conv":
        c = s[1]
        g = c if p["group"] == "dw" else int(p["group"])
        cout = result.shape[1]
        kh, kw = _pair(p["kernel"])
        fan_in = (c // g) * kh * kw
        args = [x, b.normal((cout, c // g, kh, kw), math.sqrt(1.0 / fan_in))]
        if p.get("bias"):
            args.append(b.normal((cout,), 0.2))
        attrs = {"kernel_shape": [kh, kw], "strides": list(_pair(p["strides"])),
                 "dilations": list(_pair(p["dilations"]))}
        if g != 1:
            attrs["group"] = g
        if p.get("auto_pad", "NOTSET") != "NOTSET":
            attrs["auto_pad"] = p["auto_pad"]
        else:
            attrs["pads"] = list(p["pads"])
        b.node("Conv", args, out, **attrs)
    elif op in ("MaxPool", "AveragePool"):
        attrs = {"kernel_shape": list(_pair(p["kernel"])), "strides": list(_pair(p["strides"]))}
        if p.get("auto_pad", "NOTSET") != "NOTSET":
            attrs["auto_pad"] = p["auto_pad"]
        elif any(p.get("pads", [0] * 4)):
            attrs["pads"] = list(p["pads"])
        if p.get("ceil_mode"):
            attrs["ceil_mode"] = 1
        if op == "MaxPool" and _pair(p.get("dilations", [1, 1])) != (1, 1):
            attrs["dilations"] = list(_pair(p["dilations"]))
        if op == "AveragePool" and p.get("count_include_pad"):
            attrs["count_include_pad"] = 1
        b.node(op, [x], out, **attrs)
    elif op == "GlobalAveragePool":
        b.node("GlobalAveragePool", [x], out)
    elif op == "ReduceMean":
        b.node("ReduceMean", [x], out, axes=list(p["axes"]), keepdims=int(p["keepdims"]))
    elif op == "Concat":
        b.node("Concat", names, out, axis=int(p.get("axis", 1)))
    elif op == "Resize":
        attrs = {"mode": p["mode"]}
        if p.get("coord", "half_pixel") != "half_pixel":
            attrs["coordinate_transformation_mode"] = p["coord"]
        if p["mode"] == "nearest" and p.get("nearest_mode", "round_prefer_floor") != "round_prefer_floor":
            attrs["nearest_mode"] = p["nearest_mode"]
        if p["mode"] == "cubic":
            attrs["cubic_coeff_a"] = float(p["cubic_coeff_a"])
            attrs["exclude_outside"] = int(p["exclude_outside"])
        if "sizes" in p:
            sizes = b.const(np.array([s[0], s[1], *_pair(p["sizes"])], np.int64), "sizes")
            b.node("Resize", [x, "", "", sizes], out, **attrs)
        else:
            scales = b.const(np.array([1.0, 1.0, *p["scales"]], f32), "scales")
            b.node("Resize", [x, "", scales], out, **attrs)
    elif op == "Shuffle":  # ShuffleNet's channel shuffle as torch exports it
        n, c, h, w = s
        g = p["groups"]
        r = b.node("Reshape", [x, b.const(np.array([n, g, c // g, h, w], np.int64), "shape")])
        t = b.node("Transpose", [r], perm=[0, 2, 1, 3, 4])
        b.node("Reshape", [t, b.const(np.array([n, c, h, w], np.int64), "shape")], out)
    elif op == "Slice":
        args = [x, b.const(np.array([p["start"]], np.int64), "starts"),
                b.const(np.array([p["end"]], np.int64), "ends"),
                b.const(np.array([p["axis"]], np.int64), "axes")]
        if p["step"] != 1:
            args.append(b.const(np.array([p["step"]], np.int64), "steps"))
        b.node("Slice", args, out)
    elif op == "Transpose":
        b.node("Transpose", [x], out, perm=list(p["perm"]))
    elif op == "Flatten":
        style = p.get("style", "flatten")
        if style == "reshape":
            b.node("Reshape", [x, b.const(np.array([s[0], -1], np.int64), "shape")], out)
        elif style == "flatten2":
            b.node("Flatten", [x], out, axis=2)
        elif style == "squeeze":
            b.node("Squeeze", [x, b.const(np.array([2, 3], np.int64), "axes")], out)
        else:
            b.node("Flatten", [x], out, axis=1)
    elif op == "Pool1d":  # a Conv1d-style model's pooling on [N, C, L]
        n, c, h, w = s
        flat = b.node("Reshape", [x, b.const(np.array([n, c * h, w], np.int64), "shape")])
        attrs = {"kernel_shape": [p["kernel"]], "strides": [p["stride"]]}
        if any(p["pads"]):
            attrs["pads"] = list(p["pads"])
        if p.get("ceil_mode"):
            attrs["ceil_mode"] = 1
        if p["op"] == "AveragePool" and p.get("count_include_pad"):
            attrs["count_include_pad"] = 1
        pooled = b.node(p["op"], [flat], **attrs)
        b.node("Reshape", [pooled, b.const(np.array(result.shape, np.int64), "shape")], out)
    elif op == "WideBlock":  # a ResNet bottleneck's first half: the 3x3 conv qualifies for Winograd
        c, width = s[1], p["width"]
        expand = b.node("Conv", [x, b.normal((width, c, 1, 1), math.sqrt(1.0 / c)), b.normal((width,), 0.2)],
                        kernel_shape=[1, 1], pads=[0, 0, 0, 0])
        b.node("Conv", [b.node("Relu", [expand]), b.normal((width, width, 3, 3), math.sqrt(1.0 / (9 * width))),
                        b.normal((width,), 0.2)], out, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    elif op == "Head":  # torchvision's classifier: pool, flatten, linear
        if p["pool"] == "gap":
            pooled = b.node("GlobalAveragePool", [x])
        else:
            pooled = b.node("ReduceMean", [x], axes=[2, 3], keepdims=1)
        flat = b.node("Flatten", [pooled], axis=1)
        c, m = s[1], p["m"]
        b.node("Gemm", [flat, b.normal((m, c), math.sqrt(1.0 / c)), b.normal((m,), 0.3)], out, transB=1)
    elif op == "Unflatten":
        if p.get("style") == "unsqueeze":
            b.node("Unsqueeze", [x, b.const(np.array([2, 3], np.int64), "axes")], out)
        else:
            b.node("Reshape", [x, b.const(np.array([s[0], s[1], 1, 1], np.int64), "shape")], out)
    elif op == "Gemm":
        k, m = s[1], p["m"]
        w = b.normal((m, k) if p["transB"] else (k, m), math.sqrt(1.0 / k))
        args = [x, w]
        bias = p.get("bias", "none")
        if bias != "none":
            args.append(b.normal({"M": (m,), "1M": (1, m), "NM": (s[0], m), "1": (1,)}[bias], 0.3))
        attrs = {}
        if p["transB"]:
            attrs["transB"] = 1
        if p["alpha"] != 1.0:
            attrs["alpha"] = float(p["alpha"])
        if p["beta"] != 1.0 and bias != "none":
            attrs["beta"] = float(p["beta"])
        b.node("Gemm", args, out, **attrs)
    elif op == "MatMul":
        k, m = s[-1], p["m"]
        w = b.normal((k, m), math.sqrt(1.0 / k))
        if p.get("bias"):
            b.node("Add", [b.node("MatMul", [x, w]), b.normal((m,), 0.3)], out)
        else:
            b.node("MatMul", [x, w], out)
    elif op == "Gram":
        b.node("MatMul", [x, b.node("Transpose", [x], perm=[0, 1, 3, 2])], out)
    elif op == "Softmax":
        b.node("Softmax", [x], out, axis=int(p["axis"]))
    else:
        raise InvalidSpec(f"unknown op {op}")


def value_name(spec: GraphSpec, i: int) -> str:
    if i < len(spec.inputs):
        return "input" if i == 0 else f"input_{i}"
    return f"v{i}"


def build_model(spec: GraphSpec, check: bool = True) -> onnx.ModelProto:
    """The ONNX model of `spec` (float32, opset 17, weights from spec.seed).

    With `check`, the model is checked (onnx.checker) and its shapes are compared with
    ONNX's shape inference, which must agree with `infer` except after a ceil_mode pool
    (where ONNX's inference may keep a window that onnxruntime drops)."""
    vals = values_of(spec)
    b = _Builder(spec.seed)
    for k, st_ in enumerate(spec.steps):
        i = len(spec.inputs) + k
        _emit(b, st_, [value_name(spec, j) for j in st_.inputs], [vals[j] for j in st_.inputs],
              value_name(spec, i), vals[i])
    inputs = [helper.make_tensor_value_info(value_name(spec, i), TensorProto.FLOAT, list(s))
              for i, s in enumerate(spec.inputs)]
    outputs = [helper.make_tensor_value_info(value_name(spec, o), TensorProto.FLOAT, list(vals[o].shape))
               for o in spec.outputs]
    graph = helper.make_graph(b.nodes, "fuzz", inputs, outputs, initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                              producer_name="adreno-mlir-fuzz")
    if check:
        onnx.checker.check_model(model)
        if not has_ceil_pool(spec):
            bare = onnx.ModelProto()
            bare.CopyFrom(model)
            for o in bare.graph.output:
                o.type.tensor_type.ClearField("shape")
            inferred = onnx.shape_inference.infer_shapes(bare, strict_mode=True)
            got = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
                   for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
            for i, v in enumerate(vals):
                name = value_name(spec, i)
                if name in got and got[name] != list(v.shape):
                    raise AssertionError(f"generator bug: {name} has shape {list(v.shape)} but ONNX infers "
                                         f"{got[name]}\n{describe(spec)}")
    return model


def make_feeds(spec: GraphSpec) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec.seed ^ 0x5EED)
    return {value_name(spec, i): rng.standard_normal(s).astype(np.float32) for i, s in enumerate(spec.inputs)}


# ------------------------------------------------------------------------------ Hypothesis strategy

CHANNELS_IN = [3, 1, 5, 7, 4, 8, 2, 6, 16]
CHANNELS_OUT = [8, 1, 3, 5, 7, 4, 12, 16, 24, 2, 6]
KERNELS = [(3, 3), (1, 1), (5, 5), (1, 3), (3, 1), (2, 2), (7, 7), (1, 7), (7, 1), (3, 5)]
STRIDES = [(1, 1), (1, 1), (2, 2), (2, 2), (1, 2), (2, 1), (3, 3)]
DILATIONS = [(1, 1), (1, 1), (1, 1), (2, 2), (1, 2), (2, 1), (3, 3)]
ACT_KINDS = ["Relu", "Clip", "Sigmoid", "HardSwish", "HardSigmoid", "LeakyRelu", "Tanh", "Neg", "Abs", "Erf",
             "Sqrt", "Exp", "Gelu", "SiLU", "HardSwishDecomp", "Identity", "Elu"]
CONST_PATTERNS_4D = ["C11", "1C11", "scalar", "1", "W", "HW", "11HW", "H1", "full", "1CHW", "CHW"]
CONST_PATTERNS_2D = ["C11", "1C11", "scalar", "1", "H1", "full"]
OPS_4D = ["Act", "Conv", "Conv", "Conv", "Binary", "Binary", "BatchNorm", "MaxPool", "AveragePool",
          "GlobalAveragePool", "Concat", "Concat", "Resize", "ReduceMean", "Slice", "Shuffle", "Transpose",
          "Flatten", "MatMul", "Gram", "Softmax", "Conv", "Act", "Head", "Binary", "Resize", "Pool1d",
          "WideBlock"]
OPS_2D = ["Act", "Gemm", "Gemm", "Gemm", "MatMul", "MatMul", "Binary", "Binary", "BatchNorm", "Softmax",
          "Unflatten", "Concat", "Slice", "Transpose"]


def _strategies():
    from hypothesis import strategies as st

    return st


def _draw_pads(draw, st, kernel, dilations, allow_auto: bool, limit_kernel: bool):
    """(pads [t, l, b, r], auto_pad) in the styles exporters produce."""
    style = draw(st.sampled_from(["same", "zero", "asym", "same", "SAME_UPPER", "SAME_LOWER", "VALID"]
                                 if allow_auto else ["same", "zero", "asym", "same"]))
    kh, kw = kernel
    dh, dw = dilations
    # pools: pads must stay below the kernel (onnxruntime); convs: below the window
    mh = kh - 1 if limit_kernel else dh * (kh - 1)
    mw = kw - 1 if limit_kernel else dw * (kw - 1)
    if style == "same":
        return [min(dh * (kh - 1) // 2, mh), min(dw * (kw - 1) // 2, mw)] * 2, "NOTSET"
    if style == "zero":
        return [0, 0, 0, 0], "NOTSET"
    if style == "asym":
        raw = draw(st.lists(st.integers(0, 3), min_size=4, max_size=4))
        return [min(raw[0], mh), min(raw[1], mw), min(raw[2], mh), min(raw[3], mw)], "NOTSET"
    return [0, 0, 0, 0], style


def _fit_window(size: int, pad: int, k: int, d: int) -> tuple[int, int]:
    """A (kernel, dilation) that fits `size + pad` (shrinks the dilation, then the kernel)."""
    while d > 1 and d * (k - 1) + 1 > size + pad:
        d -= 1
    while k > 1 and d * (k - 1) + 1 > size + pad:
        k -= 1
    return k, d


def _draw_conv(draw, st, x: Value) -> dict | None:
    _, c, h, w = x.shape
    kind = draw(st.sampled_from(["plain", "plain", "dw", "grouped", "plain", "dw", "wide"]))
    divisors = [g for g in range(2, c) if c % g == 0]
    if kind == "wide" and h * w <= WIDE_MAX_PIXELS:
        # >= 64 input channels: split-K on GPU targets; 128 in and out: Winograd
        group, cout = 1, 128 if c < 64 else draw(st.sampled_from([c, 128, 64]))
    elif kind == "dw" and c > 1:
        group, cout = "dw", draw(st.sampled_from([1, 2]))
    elif kind == "grouped" and divisors:
        group = draw(st.sampled_from(divisors))
        cout = group * draw(st.sampled_from([1, 2, 3]))
    else:
        group, cout = 1, draw(st.sampled_from(CHANNELS_OUT))
    kernel = draw(st.sampled_from(KERNELS))
    strides = draw(st.sampled_from(STRIDES))
    dil = draw(st.sampled_from(DILATIONS))
    pads, auto = _draw_pads(draw, st, kernel, dil, True, False)
    if auto == "NOTSET":
        kh, dh = _fit_window(h, pads[0] + pads[2], kernel[0], dil[0])
        kw, dw = _fit_window(w, pads[1] + pads[3], kernel[1], dil[1])
        pads = [min(pads[0], dh * (kh - 1)), min(pads[1], dw * (kw - 1)),
                min(pads[2], dh * (kh - 1)), min(pads[3], dw * (kw - 1))]
    elif auto == "VALID":
        kh, dh = _fit_window(h, 0, kernel[0], dil[0])
        kw, dw = _fit_window(w, 0, kernel[1], dil[1])
    else:  # onnxruntime refuses dilations with auto_pad SAME
        (kh, kw), (dh, dw) = kernel, (1, 1)
    params = {"group": group, "cout": cout, "kernel": [kh, kw], "strides": list(strides),
              "dilations": [dh, dw], "bias": draw(st.booleans())}
    if auto == "NOTSET":
        params["pads"] = pads
    else:
        params["auto_pad"] = auto
    return params


def _draw_pool(draw, st, x: Value, op: str) -> dict | None:
    _, _, h, w = x.shape
    kernel = draw(st.sampled_from([(2, 2), (3, 3), (3, 3), (2, 2), (1, 2), (3, 1), (5, 5), (2, 3)]))
    stride_kind = draw(st.sampled_from(["kernel", "one", "two", "asym"]))
    strides = {"kernel": kernel, "one": (1, 1), "two": (2, 2), "asym": (1, 2)}[stride_kind]
    dil = (1, 1)
    if op == "MaxPool":
        dil = draw(st.sampled_from([(1, 1), (1, 1), (1, 1), (2, 2), (1, 2)]))
    pads, auto = _draw_pads(draw, st, kernel, dil, True, True)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        dil = (1, 1)
    kh, dh = _fit_window(h, 0 if auto != "NOTSET" else pads[0] + pads[2], kernel[0], dil[0])
    kw, dw = _fit_window(w, 0 if auto != "NOTSET" else pads[1] + pads[3], kernel[1], dil[1])
    pads = [min(pads[0], kh - 1), min(pads[1], kw - 1), min(pads[2], kh - 1), min(pads[3], kw - 1)]
    params = {"kernel": [kh, kw], "strides": list(strides)}
    if op == "MaxPool" and (dh, dw) != (1, 1):
        params["dilations"] = [dh, dw]
    if auto == "NOTSET":
        params["pads"] = pads
        params["ceil_mode"] = int(draw(st.booleans()))
    else:
        params["auto_pad"] = auto
    if op == "AveragePool":
        params["count_include_pad"] = int(draw(st.booleans()))
    return params


def _draw_act(draw, st, x: Value) -> dict:
    kind = draw(st.sampled_from(ACT_KINDS))
    if kind == "Exp" and not x.bounded:
        kind = "Tanh"
    p: dict[str, Any] = {"kind": kind}
    if kind == "Clip":
        lo, hi = draw(st.sampled_from([(0.0, 6.0), (0.0, None), (None, 0.5), (-1.0, 1.0), (-0.5, 2.0),
                                       (0.0, 1.0)]))
        p["min"], p["max"] = lo, hi
    elif kind == "HardSigmoid":
        p["alpha"], p["beta"] = draw(st.sampled_from([(1 / 6, 0.5), (0.2, 0.5), (0.5, 0.25)]))
    elif kind == "LeakyRelu":
        p["alpha"] = draw(st.sampled_from([0.01, 0.1, 0.2, 1.5]))
    elif kind == "Elu":
        p["alpha"] = draw(st.sampled_from([1.0, 0.5, 2.0]))
    return p


def _draw_binary(draw, st, x: Value, xi: int, vals: list[Value]) -> tuple[dict, list[int]]:
    kind = draw(st.sampled_from(["Add", "Mul", "Sub", "Div"]))
    other = draw(st.sampled_from(["const", "value", "self", "value"]))
    if kind == "Div":
        other = "const"
    if other == "value":
        cands = []
        for j, y in enumerate(vals):
            if j == xi or y.mag * (x.mag if kind == "Mul" else 1) > MAG_CAP:
                continue
            try:
                out = _broadcast(x.shape, y.shape)
            except InvalidSpec:
                continue
            if out in (x.shape, y.shape):
                cands.append(j)
        if cands:
            j = cands[draw(st.integers(0, len(cands) - 1))]
            return {"kind": kind, "other": "value", "swap": draw(st.booleans())}, [xi, j]
        other = "const"
    if other == "self":
        if kind == "Mul" and x.mag * x.mag > MAG_CAP:
            kind = "Add"
        return {"kind": kind, "other": "self"}, [xi]
    patterns = CONST_PATTERNS_4D if len(x.shape) == 4 else CONST_PATTERNS_2D
    return ({"kind": kind, "other": "const", "pattern": draw(st.sampled_from(patterns)),
             "const_first": draw(st.booleans())}, [xi])


def _draw_step(draw, st, vals: list[Value]) -> Step:
    back = draw(st.one_of(st.just(0), st.integers(0, len(vals) - 1)))
    xi = len(vals) - 1 - back
    x = vals[xi]
    rank = len(x.shape)
    ops = OPS_4D if rank == 4 else OPS_2D
    op = draw(st.sampled_from(ops))
    inputs = [xi]
    params: dict[str, Any] | None = None
    if op == "Act":
        params = _draw_act(draw, st, x)
    elif op == "Conv":
        params = _draw_conv(draw, st, x)
    elif op == "Binary":
        params, inputs = _draw_binary(draw, st, x, xi, vals)
    elif op == "BatchNorm":
        params = {"epsilon": draw(st.sampled_from([1e-5, 1e-3, 0.1]))}
    elif op in ("MaxPool", "AveragePool"):
        params = _draw_pool(draw, st, x, op)
    elif op == "GlobalAveragePool":
        params = {}
    elif op == "ReduceMean":
        axes, keep = draw(st.sampled_from([([2, 3], 1), ([2, 3], 0), ([-1, -2], 1), ([1], 1), ([3], 1),
                                           ([2, 3], 0)]))
        params = {"axes": axes, "keepdims": keep}
    elif op == "Concat":
        cands = [j for j, y in enumerate(vals) if len(y.shape) == rank and y.shape[0] == x.shape[0]
                 and y.shape[2:] == x.shape[2:]]
        extra = draw(st.lists(st.sampled_from(cands), min_size=1, max_size=2))
        if x.shape[1] + sum(vals[j].shape[1] for j in extra) > MAX_CHANNELS:
            extra = extra[:1]
        if x.shape[1] + sum(vals[j].shape[1] for j in extra) <= MAX_CHANNELS:
            params = {"axis": 1}
            inputs = [xi, *extra]
            if draw(st.booleans()):
                inputs = inputs[::-1]
    elif op == "Resize":
        mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
        coords = (["asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"] if mode == "nearest" else
                  ["half_pixel", "align_corners", "pytorch_half_pixel", "asymmetric", "half_pixel_symmetric"])
        params = {"mode": mode, "coord": draw(st.sampled_from(coords))}
        if mode == "nearest":
            params["nearest_mode"] = draw(st.sampled_from(["floor", "round_prefer_floor", "round_prefer_ceil",
                                                           "ceil"]))
        if mode == "cubic":
            params["cubic_coeff_a"] = draw(st.sampled_from([-0.75, -0.5]))
            params["exclude_outside"] = draw(st.sampled_from([0, 1]))
        h, w = x.shape[2:]
        if draw(st.integers(0, 3)) == 0:
            params["sizes"] = [draw(st.integers(1, min(2 * h + 1, MAX_SIDE))),
                               draw(st.integers(1, min(2 * w + 1, MAX_SIDE)))]
        else:
            sc = draw(st.sampled_from([(2.0, 2.0), (0.5, 0.5), (2.0, 1.0), (1.5, 1.5), (3.0, 3.0), (0.75, 0.75),
                                       (1.0, 2.0), (0.6, 0.6)]))
            sc = [s if math.floor(d * s) >= 1 and d * s <= MAX_SIDE else 1.0 for s, d in zip(sc, (h, w))]
            params["scales"] = sc
    elif op == "Shuffle":
        divs = [g for g in range(2, x.shape[1]) if x.shape[1] % g == 0]
        if divs:
            params = {"groups": draw(st.sampled_from(divs))}
    elif op == "Slice":
        axis = draw(st.sampled_from([1, 1, 2, 3] if rank == 4 else [1, 1, 0]))
        d = x.shape[axis]
        style = draw(st.sampled_from(["range", "tail", "neg", "flip", "step"]))
        if style == "range":
            a = draw(st.integers(0, d - 1))
            params = {"axis": axis, "start": a, "end": draw(st.integers(a + 1, d)), "step": 1}
        elif style == "tail":
            params = {"axis": axis, "start": draw(st.integers(0, d - 1)), "end": INT64_MAX, "step": 1}
        elif style == "neg":
            params = {"axis": axis, "start": -draw(st.integers(1, d)), "end": INT64_MAX, "step": 1}
        elif style == "flip":
            params = {"axis": axis, "start": -1, "end": INT64_MIN, "step": -1}
        else:
            params = {"axis": axis, "start": draw(st.integers(0, d - 1)), "end": d, "step": draw(st.integers(2, 3))}
    elif op == "Transpose":
        if rank == 4:
            perm = draw(st.sampled_from([[0, 2, 3, 1], [0, 3, 1, 2], [0, 1, 3, 2], [1, 0, 2, 3], [0, 2, 1, 3]]))
        else:
            perm = [1, 0]
        params = {"perm": perm}
    elif op == "Flatten":
        styles = ["flatten", "reshape", "flatten2"] + (["squeeze", "squeeze"] if x.shape[2:] == (1, 1) else [])
        params = {"style": draw(st.sampled_from(styles))}
    elif op == "Pool1d":
        k = draw(st.sampled_from([3, 2, 5]))
        params = {"op": draw(st.sampled_from(["MaxPool", "AveragePool"])), "kernel": k,
                  "stride": draw(st.sampled_from([1, 2, k])),
                  "pads": [draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))],
                  "ceil_mode": int(draw(st.booleans())), "count_include_pad": int(draw(st.booleans()))}
    elif op == "Unflatten":
        if x.shape[1] <= MAX_CHANNELS * 4:
            params = {"style": draw(st.sampled_from(["reshape", "unsqueeze"]))}
    elif op == "Gemm":
        params = {"m": draw(st.sampled_from([10, 1, 3, 5, 7, 16, 32])), "transB": int(draw(st.booleans())),
                  "alpha": draw(st.sampled_from([1.0, 1.0, 0.5])), "beta": draw(st.sampled_from([1.0, 1.0, 0.5])),
                  "bias": draw(st.sampled_from(["M", "none", "1M", "NM", "1"]))}
    elif op == "WideBlock":
        if x.shape[2] * x.shape[3] <= WIDE_MAX_PIXELS:
            params = {"width": draw(st.sampled_from([128, 132]))}
    elif op == "Head":
        params = {"pool": draw(st.sampled_from(["gap", "reducemean"])),
                  "m": draw(st.sampled_from([10, 1, 3, 5, 7, 16]))}
    elif op == "MatMul":
        params = {"m": draw(st.sampled_from([10, 1, 3, 5, 7, 16])), "bias": draw(st.booleans())}
    elif op == "Gram":
        if x.mag * x.mag * math.sqrt(x.shape[3]) * 0.6 <= MAG_CAP and x.shape[2] <= MAX_SIDE:
            params = {}
    elif op == "Softmax":
        params = {"axis": draw(st.sampled_from([1, -1] if rank == 2 else [1, -1, 2]))}
    if params is None:  # the drawn op does not apply here: a ReLU instead
        op, params, inputs = "Act", {"kind": "Relu"}, [xi]
    step = Step(op, inputs, params)
    try:
        v = infer(step, [vals[i] for i in inputs])
        if too_large(v) or (len(v.shape) == 4 and max(v.shape[2:]) > MAX_SIDE):
            raise InvalidSpec("too large")
    except InvalidSpec:
        step = Step("Act", [xi], {"kind": "Relu"})
    return step


def graph_specs(max_steps: int = 8):
    """Hypothesis strategy of `GraphSpec`s with 1..max_steps steps."""
    st = _strategies()

    @st.composite
    def draw_spec(draw) -> GraphSpec:
        n = draw(st.sampled_from([1, 1, 2]))
        c = draw(st.sampled_from(CHANNELS_IN))
        side = st.one_of(st.integers(1, 24), st.integers(8, 40), st.integers(56, 72))
        h, w = draw(side), draw(side)
        inputs = [[n, c, h, w]]
        if draw(st.integers(0, 7)) == 7:  # (shrinks towards one input)
            inputs.append([n, draw(st.sampled_from(CHANNELS_IN)), h, w])
        vals = [Value(tuple(s), 4.0) for s in inputs]
        steps: list[Step] = []
        for _ in range(draw(st.integers(1, max_steps))):
            step = _draw_step(draw, st, vals)
            steps.append(step)
            vals.append(infer(step, [vals[i] for i in step.inputs]))
        spec = GraphSpec(inputs, steps, [], draw(st.integers(0, 2**31 - 1)))
        outs = leaves(spec)
        n_in = len(inputs)
        if len(steps) > 1:
            extra = draw(st.lists(st.integers(n_in, n_in + len(steps) - 1), max_size=2, unique=True))
            outs += [e for e in extra if e not in outs]
        spec.outputs = outs
        return spec

    return draw_spec()


# ------------------------------------------------------------------------------ checking


def scaled_error(ours: np.ndarray, ref: np.ndarray) -> float:
    """max|ours - ref| / max|ref| (as tests/test_models.py), inf on shape or NaN mismatch."""
    if ours.shape != ref.shape:
        return math.inf
    ours = ours.astype(np.float64)
    ref = ref.astype(np.float64)
    if not np.array_equal(np.isnan(ours), np.isnan(ref)):
        return math.inf
    ours, ref = np.nan_to_num(ours, nan=0.0), np.nan_to_num(ref, nan=0.0)
    if np.isinf(ref).any() or np.isinf(ours).any():
        same = np.array_equal(np.isinf(ours), np.isinf(ref)) and np.array_equal(ours[np.isinf(ref)],
                                                                                 ref[np.isinf(ref)])
        if not same:
            return math.inf
        fin = ~np.isinf(ref)
        ours, ref = ours[fin], ref[fin]
        if ref.size == 0:
            return 0.0
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-30))


def ort_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # no shape warnings for ceil_mode pools (see has_ceil_pool)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def onnx_reference_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)]


INTERNAL_MARKERS = ("internal", "rejected the generated program", "does not verify", "Traceback",
                    "object has no attribute", "KeyError", "IndexError", "AssertionError", "TypeError",
                    "imported result type", "is used before it is defined", "clBuildProgram",
                    "CL_INVALID", "CL_OUT_OF", "not a valid")


def is_clear_refusal(exc: BaseException) -> bool:
    """A CompileError that refuses an unsupported combination in words (names the node or
    op and what is not supported), not a compiler bug in disguise."""
    import adreno_mlir

    if not isinstance(exc, adreno_mlir.CompileError):
        return False
    msg = str(exc)
    return bool(msg.strip()) and not any(m in msg for m in INTERNAL_MARKERS)


@dataclass
class PlanOutcome:
    plan: str
    status: str
    """ok | refused (clear CompileError) | divergence (ours differs from onnxruntime only
    where onnxruntime and onnx.reference disagree) | mismatch | crash (any other
    exception, or an unclear CompileError)."""
    detail: str = ""
    errors: dict[str, float] = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)
    """The kernels launched (first-launch order), when it compiled."""
    images: int = 0
    """Image allocations of the launch plan (tensors in textures)."""
    buffers: int = 0

    @property
    def failed(self) -> bool:
        return self.status in ("mismatch", "crash")


class LazyReference:
    """onnx.reference outputs, computed at most once and only when asked."""

    def __init__(self, model, feeds):
        self.model, self.feeds = model, feeds
        self._outs: list[np.ndarray] | None = None
        self.error: str | None = None

    def get(self) -> list[np.ndarray] | None:
        if self._outs is None and self.error is None:
            try:
                self._outs = onnx_reference_outputs(self.model, self.feeds)
            except Exception as e:  # noqa: BLE001 - the reference may not implement a case
                self.error = f"{type(e).__name__}: {e}"
        return self._outs


def _explained_by_divergence(got: np.ndarray, ort_ref: np.ndarray, onnx_ref: np.ndarray, tol: float) -> str | None:
    """Why ours may differ from onnxruntime: they differ only where onnxruntime and
    onnx.reference disagree with each other (elementwise, REF_AGREE of max|ort|). None
    when ours differs from onnxruntime anywhere the two references agree."""
    if got.shape != ort_ref.shape or onnx_ref.shape != ort_ref.shape:
        return None
    ort64, ref64, got64 = (a.astype(np.float64) for a in (ort_ref, onnx_ref, got))
    if not (np.isfinite(ort64).all() and np.isfinite(got64).all()):
        return None
    scale = max(np.abs(ort64).max(), 1e-30)
    disagree = ~(np.abs(ref64 - ort64) <= REF_AGREE * scale)
    if not disagree.any():
        return None
    off = np.abs(got64 - ort64) > tol * scale
    if (off & ~disagree).any():
        return None
    vs_ref = scaled_error(got, onnx_ref)
    kind = "matches onnx.reference" if vs_ref <= tol else "matches neither reference"
    return (f"ours {kind} (ours vs onnx.reference {vs_ref:.2e}); onnxruntime and onnx.reference disagree at "
            f"{int(disagree.sum())} of {disagree.size} elements (ort vs onnx.reference "
            f"{scaled_error(onnx_ref.astype(np.float32), ort_ref):.2e}), and ours differs from onnxruntime only there")


def check_plan(model: onnx.ModelProto, feeds: dict, refs: list[np.ndarray], plan: str,
               reference: LazyReference, runtime: str = "pyopencl") -> PlanOutcome:
    """Compile `model` on `plan`, run it on `feeds` and compare with onnxruntime's `refs`."""
    import adreno_mlir

    try:
        cm = adreno_mlir.compile(model, runtime=runtime, **PLANS[plan])
    except adreno_mlir.CompileError as e:
        if is_clear_refusal(e):
            return PlanOutcome(plan, "refused", f"{type(e).__name__}: {e}")
        return PlanOutcome(plan, "crash", f"unclear CompileError at compile: {type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001 - an internal compiler error
        return PlanOutcome(plan, "crash", f"compile raised {type(e).__name__}: {e}\n"
                                          + "".join(traceback.format_exception(e)[-6:]))
    launch_plan = cm.launch_plan
    info = {"kernels": list(launch_plan.kernel_names), "images": len(launch_plan.images),
            "buffers": len(launch_plan.allocations) - len(launch_plan.images)}
    try:
        ours = cm.run(feeds)
    except Exception as e:  # noqa: BLE001
        return PlanOutcome(plan, "crash", f"run raised {type(e).__name__}: {e}\n"
                                          + "".join(traceback.format_exception(e)[-6:]), **info)
    finally:
        del cm
    names = [o.name for o in model.graph.output]
    if list(ours) != names:
        return PlanOutcome(plan, "crash", f"outputs {list(ours)} instead of {names}", **info)
    tol = TOLERANCE[plan]
    errors: dict[str, float] = {}
    bad: list[str] = []
    diverged: list[str] = []
    for i, (name, ref) in enumerate(zip(names, refs)):
        got = np.asarray(ours[name])
        err = scaled_error(got, np.asarray(ref))
        errors[name] = err
        if err <= tol:
            continue
        ref2 = reference.get()
        if ref2 is not None:
            why = _explained_by_divergence(got, np.asarray(ref), np.asarray(ref2[i]), tol)
            if why:
                diverged.append(f"{name}: ours vs ort {err:.2e}; {why}")
                continue
        shape = f" (shape {list(got.shape)} vs {list(np.shape(ref))})" if got.shape != np.shape(ref) else ""
        bad.append(f"{name}: scaled error {err:.3e} > {tol:g}{shape}")
    if bad:
        return PlanOutcome(plan, "mismatch", "; ".join(bad), errors, **info)
    if diverged:
        return PlanOutcome(plan, "divergence", "; ".join(diverged), errors, **info)
    return PlanOutcome(plan, "ok", "", errors, **info)


def references_diverge(refs: list[np.ndarray], reference: LazyReference) -> str | None:
    """A description of where onnxruntime and onnx.reference disagree (None if they agree)."""
    ref2 = reference.get()
    if ref2 is None:
        return None
    diffs = []
    for i, (a, b) in enumerate(zip(refs, ref2)):
        e = scaled_error(np.asarray(b).astype(np.float32), np.asarray(a))
        if e > REF_AGREE:
            diffs.append(f"output {i}: {e:.3e}")
    return "; ".join(diffs) or None


# ------------------------------------------------------------------------------ minimising


def _drop_step(spec: GraphSpec, k: int, replacement: int | None) -> GraphSpec | None:
    """`spec` without step k; its readers read `replacement` instead (None: it must be unread)."""
    n_in = len(spec.inputs)
    vid = n_in + k

    def remap(i: int) -> int:
        if i == vid:
            assert replacement is not None
            return replacement
        return i - 1 if i > vid else i

    steps = []
    for j, st_ in enumerate(spec.steps):
        if j == k:
            continue
        if replacement is None and vid in st_.inputs:
            return None
        steps.append(Step(st_.op, [remap(i) for i in st_.inputs], dict(st_.params)))
    outs = []
    for o in spec.outputs:
        if o == vid and (replacement is None or replacement < n_in):
            continue
        outs.append(remap(o))
    outs = list(dict.fromkeys(outs))
    new = GraphSpec([list(s) for s in spec.inputs], steps, outs, spec.seed)
    for leaf in leaves(new):
        if leaf not in new.outputs:
            new.outputs.append(leaf)
    return new


def shrink_candidates(spec: GraphSpec):
    """Smaller variants of `spec` (may be invalid: callers check with values_of)."""
    n_in = len(spec.inputs)
    for k in reversed(range(len(spec.steps))):  # drop a step, or bypass it
        yield _drop_step(spec, k, None)
        for i in spec.steps[k].inputs:
            yield _drop_step(spec, k, i)
    for o in spec.outputs:  # fewer outputs
        if len(spec.outputs) > 1 and o not in leaves(spec):
            yield GraphSpec(spec.inputs, spec.steps, [x for x in spec.outputs if x != o], spec.seed)
    for idx in range(len(spec.inputs)):  # smaller inputs
        s = spec.inputs[idx]
        for dim in range(len(s)):
            for smaller in sorted({1, s[dim] // 2, (s[dim] // 2) | 1, s[dim] - 2, s[dim] - 1}):
                if 1 <= smaller < s[dim] and not (dim == 1 and idx == 0 and smaller < 1):
                    shapes = [list(x) for x in spec.inputs]
                    shapes[idx][dim] = smaller
                    yield GraphSpec(shapes, spec.steps, spec.outputs, spec.seed)
    for k, st_ in enumerate(spec.steps):  # simpler parameters
        for key, val in st_.params.items():
            for simple in _simpler(key, val):
                params = dict(st_.params)
                params[key] = simple
                steps = list(spec.steps)
                steps[k] = Step(st_.op, list(st_.inputs), params)
                yield GraphSpec(spec.inputs, steps, spec.outputs, spec.seed)
    if spec.seed:
        yield GraphSpec(spec.inputs, spec.steps, spec.outputs, 0)
    del n_in


def _simpler(key: str, val):
    if isinstance(val, bool):
        return [False] if val else []
    if isinstance(val, int) and key in ("cout", "m", "groups") and val > 1:
        return sorted({1, val // 2, val - 1} - {val})
    if isinstance(val, list) and key in ("kernel", "strides", "dilations", "pads") and any(v > (0 if key == "pads" else 1) for v in val):
        base = 0 if key == "pads" else 1
        return [[base] * len(val)]
    if key == "count_include_pad" and val:
        return [0]
    if key == "ceil_mode" and val:
        return [0]
    if key == "bias" and val not in (False, "none"):
        return ["none"] if isinstance(val, str) else [False]
    return []


def minimize(spec: GraphSpec, still_fails, max_tries: int = 400) -> GraphSpec:
    """Greedy shrinking: take any smaller valid variant for which `still_fails(spec)`
    holds, until none does (or `max_tries` candidates were tried)."""
    tries = 0
    progress = True
    while progress and tries < max_tries:
        progress = False
        for cand in shrink_candidates(spec):
            if cand is None:
                continue
            try:
                values_of(cand)
                build_model(cand)
            except (InvalidSpec, AssertionError, onnx.checker.ValidationError,
                    onnx.shape_inference.InferenceError):
                continue
            tries += 1
            if still_fails(cand):
                spec, progress = cand, True
                break
            if tries >= max_tries:
                break
    return spec
