"""ONNX -> `graph` dialect.

The importer makes the graph static before it builds IR: onnx shape inference gives
every tensor a type, and shape subgraphs (Shape, Gather, Unsqueeze, Concat, Cast,
Constant, ...) are evaluated with onnx's reference evaluator and folded into
constants, repeatedly, until nothing foldable is left. Identity nodes are dropped.
Every op keeps its ONNX node name as its `loc(...)`.

Errors are `ImportError_`s (a `CompileError`) that name nodes and say what to do; a
model with unsupported ops reports every unsupported op type with all its nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Block, Region, SSAValue

from adreno_mlir.errors import CompileError
from adreno_mlir.weights import WeightStore, attach
from dialects import graph

INLINE_LIMIT = 8
"""Constants with at most this many elements are printed inline as dense<...>."""

FOLDABLE = {
    "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Constant", "Slice",
    "Add", "Sub", "Mul", "Div", "Reshape", "ConstantOfShape", "Range", "Floor", "Ceil",
    "Expand", "Identity", "Size", "Neg", "Equal", "Where", "Min", "Max", "ReduceProd",
    "Transpose", "Sqrt",
}
"""Op types evaluated at import time when all their inputs are constants."""

FOLD_LIMIT = 1 << 16
"""Largest result (elements) folded for compute ops; shape-only ops fold at any size."""


class FrontendError(CompileError):
    """The model cannot be imported; the message says which node and why."""


@dataclass
class _Node:
    """A node being imported: its ONNX proto, and typed access to inputs/attributes."""

    proto: onnx.NodeProto
    imp: "OnnxImporter"

    @property
    def name(self) -> str:
        return self.proto.name or f"{self.proto.op_type}_{self.proto.output[0]}"

    def attr(self, key: str, default=None):
        for a in self.proto.attribute:
            if a.name == key:
                return onnx.helper.get_attribute_value(a)
        return default

    def input(self, i: int) -> SSAValue:
        return self.imp.value(self.proto.input[i], self)

    def has_input(self, i: int) -> bool:
        return len(self.proto.input) > i and self.proto.input[i] != ""

    def const_input(self, i: int, what: str) -> np.ndarray:
        name = self.proto.input[i]
        if name not in self.imp.consts:
            self.fail(f"{what} (input {i}, '{name}') must be a constant; it is computed at run time")
        return self.imp.consts[name]

    def out_type(self, i: int = 0) -> TensorType:
        return self.imp.tensor_type(self.proto.output[i], self)

    def fail(self, msg: str):
        raise FrontendError(f"node '{self.name}' ({self.proto.op_type}): {msg}")


def _np_dtype_ok(arr: np.ndarray) -> bool:
    return arr.dtype in (np.float32, np.float64, np.float16, np.int64, np.int32, np.bool_)


class OnnxImporter:
    def __init__(self, model: onnx.ModelProto, store: WeightStore | None = None):
        self.model = model
        self.store = store or WeightStore()
        self.consts: dict[str, np.ndarray] = {}
        self.values: dict[str, SSAValue] = {}
        self.types: dict[str, TensorType] = {}
        self.builder: Builder | None = None
        self.const_ops: dict[str, SSAValue] = {}

    # ----------------------------------------------------------------- preparation

    def prepare(self) -> None:
        g = self.model.graph
        init_names = {i.name for i in g.initializer}
        for init in g.initializer:
            try:
                arr = numpy_helper.to_array(init)
            except Exception as e:  # external data missing, corrupt tensor ...
                raise FrontendError(
                    f"initializer '{init.name}' cannot be read ({e}); if the model keeps its "
                    "weights in external files, keep them beside the .onnx file"
                ) from None
            self.consts[init.name] = arr
        self.graph_inputs = [i for i in g.input if i.name not in init_names]
        for vi in self.graph_inputs:
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type"):
                raise FrontendError(f"model input '{vi.name}' is not a tensor")
            if tt.elem_type != onnx.TensorProto.FLOAT:
                dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
                raise FrontendError(
                    f"model input '{vi.name}' has element type {dt}; only float32 inputs are "
                    "supported (cast the input in the model or export it as float32)"
                )
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            if any(d is None or d <= 0 for d in dims):
                shown = [d.dim_param if not d.HasField("dim_value") else d.dim_value for d in tt.shape.dim]
                raise FrontendError(
                    f"model input '{vi.name}' has a dynamic shape {shown}; adreno-mlir compiles "
                    "static shapes only: export the model with fixed input dimensions"
                )
        self._fold_to_fixpoint()

    def _light_model(self) -> onnx.ModelProto:
        """The graph with only small constants as initializers: big weights become typed
        inputs, so shape inference never serializes megabytes of weights."""
        g = self.model.graph
        used = {n for node in g.node for n in node.input} | {o.name for o in g.output}
        light = onnx.helper.make_model(
            onnx.helper.make_graph(list(g.node), g.name, list(self.graph_inputs), list(g.output)),
            opset_imports=list(self.model.opset_import),
            ir_version=self.model.ir_version,
        )
        lg = light.graph
        for name in sorted(used & set(self.consts)):
            arr = np.asarray(self.consts[name])
            if arr.size <= FOLD_LIMIT:
                lg.initializer.append(numpy_helper.from_array(arr, name))
            else:
                dt = onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)
                lg.input.append(onnx.helper.make_tensor_value_info(name, dt, arr.shape))
        return light

    def _infer(self) -> None:
        try:
            inferred = onnx.shape_inference.infer_shapes(self._light_model(), strict_mode=False, data_prop=True)
        except Exception as e:
            raise FrontendError(f"ONNX shape inference failed: {e}") from None
        g = inferred.graph
        self.onnx_types = {}
        for vi in list(g.value_info) + list(g.input) + list(g.output):
            if vi.type.HasField("tensor_type"):
                self.onnx_types[vi.name] = vi.type.tensor_type

    def _fold_to_fixpoint(self) -> None:
        for _ in range(8):
            self._infer()
            if not self._fold_once():
                return

    def _static_shape(self, name: str) -> list[int] | None:
        tt = self.onnx_types.get(name)
        if tt is None or not tt.HasField("shape"):
            return None
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
        return None if any(d < 0 for d in dims) else dims

    def _fold_once(self) -> bool:
        g = self.model.graph
        kept: list[onnx.NodeProto] = []
        changed = False
        from onnx.reference import ReferenceEvaluator

        graph_outputs = {o.name for o in g.output}
        renames: dict[str, str] = {}
        for node in g.node:
            for i, name in enumerate(node.input):
                if name in renames:
                    node.input[i] = renames[name]
            ins = [n for n in node.input if n]
            if node.op_type == "Shape" and node.input[0] not in self.consts:
                shape = self._static_shape(node.input[0])
                if shape is not None:
                    start = _attr(node, "start", 0)
                    end = _attr(node, "end", None)
                    self.consts[node.output[0]] = np.array(shape[start:end], dtype=np.int64)
                    changed = True
                    continue
            if node.op_type == "Identity" and ins and ins[0] in self.consts:
                if node.output[0] in graph_outputs:
                    self.consts[node.output[0]] = self.consts[ins[0]]
                else:  # later nodes read the weight under its own name
                    renames[node.output[0]] = ins[0]
                changed = True
                continue
            if node.op_type in FOLDABLE and all(n in self.consts for n in ins):
                try:
                    outs = ReferenceEvaluator(node).run(None, {n: self.consts[n] for n in ins})
                except Exception as e:
                    raise FrontendError(
                        f"node '{node.name}' ({node.op_type}): constant folding failed: {e}"
                    ) from None
                small = all(np.asarray(o).size <= FOLD_LIMIT for o in outs)
                if small or node.op_type in ("Shape", "Constant", "Identity"):
                    for name, o in zip(node.output, outs):
                        self.consts[name] = np.asarray(o)
                    changed = True
                    continue
            kept.append(node)
        if not changed:
            return False
        del g.node[:]
        g.node.extend(kept)
        return True

    # ----------------------------------------------------------------- IR building

    def tensor_type(self, name: str, node: _Node | None = None) -> TensorType:
        if name in self.types:
            return self.types[name]
        tt = self.onnx_types.get(name)
        shape = self._static_shape(name)
        if tt is None or shape is None:
            where = f"node '{node.name}' ({node.proto.op_type})" if node else f"tensor '{name}'"
            raise FrontendError(
                f"{where}: output '{name}' has no static shape after shape inference"
            )
        if tt.elem_type != onnx.TensorProto.FLOAT:
            where = f"node '{node.name}' ({node.proto.op_type})" if node else f"tensor '{name}'"
            dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
            raise FrontendError(
                f"{where}: tensor '{name}' has element type {dt}; only float32 tensors are "
                "supported outside folded shape computations"
            )
        t = TensorType(f32, shape)
        self.types[name] = t
        return t

    def value(self, name: str, node: _Node | None = None) -> SSAValue:
        if name in self.values:
            return self.values[name]
        if name in self.consts:
            return self.constant(name, self.consts[name], node)
        raise FrontendError(f"tensor '{name}' is used before it is defined")

    def constant(self, name: str, arr: np.ndarray, node: _Node | None = None) -> SSAValue:
        if arr.dtype != np.float32:
            if arr.dtype.kind == "f":
                arr = arr.astype(np.float32)
            else:
                where = f"node '{node.name}' ({node.proto.op_type})" if node else "a node"
                raise FrontendError(
                    f"{where} uses the non-float constant '{name}' ({arr.dtype}) as a tensor "
                    "operand; only float32 tensors are supported"
                )
        t = TensorType(f32, list(arr.shape))
        if arr.size <= INLINE_LIMIT:
            dense = DenseIntOrFPElementsAttr.from_list(t, [float(v) for v in arr.reshape(-1)])
            op = graph.ConstantOp(t, value=dense)
        else:
            op = graph.ConstantOp(t, ref=self.store.add(name, arr))
        assert self.builder is not None
        self.builder.insert(op)
        op.result.name_hint = _hint(name)
        self.values[name] = op.result
        return op.result

    def build(self) -> ModuleOp:
        g = self.model.graph
        nodes = [_Node(n, self) for n in g.node]
        unsupported: dict[str, list[str]] = {}
        for n in nodes:
            if n.proto.op_type not in IMPORTERS or n.proto.domain not in ("", "ai.onnx"):
                unsupported.setdefault(n.proto.op_type, []).append(n.name)
        if unsupported:
            lines = [
                f"  {op} ({len(ns)} node{'s' if len(ns) > 1 else ''}): " + ", ".join(ns)
                for op, ns in sorted(unsupported.items())
            ]
            raise FrontendError(
                "the model uses operators adreno-mlir does not support:\n" + "\n".join(lines)
                + f"\nsupported operators: {', '.join(sorted(IMPORTERS))}"
            )

        in_types = [self.tensor_type(vi.name) for vi in self.graph_inputs]
        block = Block(arg_types=in_types)
        for arg, vi in zip(block.args, self.graph_inputs):
            arg.name_hint = _hint(vi.name)
            self.values[vi.name] = arg
        self.builder = Builder(InsertPoint.at_end(block))
        for n in nodes:
            before = len(block.ops)
            results = IMPORTERS[n.proto.op_type](n)
            if not isinstance(results, (list, tuple)):
                results = [results]
            for name, r in zip(n.proto.output, results):
                self.values[name] = r
                r.name_hint = _hint(name)
                if r.type != self.tensor_type(name, n):
                    n.fail(f"imported result type {r.type} differs from ONNX's {self.tensor_type(name, n)}")
            loc = NameLoc(StringAttr(n.name), NoneAttr())
            for op in list(block.ops)[before:]:
                if not isinstance(op, graph.ConstantOp):
                    op.location = loc
        outs = []
        for o in g.output:
            if o.name in self.values or o.name in self.consts:
                outs.append(self.value(o.name))
            else:
                raise FrontendError(f"model output '{o.name}' is not produced by any node")
        self.builder.insert(func.ReturnOp(*outs))
        fn = func.FuncOp(
            "main",
            ([a.type for a in block.args], [v.type for v in outs]),
            Region(block),
        )
        fn.attributes["graph.inputs"] = ArrayAttr([StringAttr(vi.name) for vi in self.graph_inputs])
        fn.attributes["graph.outputs"] = ArrayAttr([StringAttr(o.name) for o in g.output])
        module = ModuleOp([fn])
        attach(module, self.store)
        return module


def _attr(node: onnx.NodeProto, key: str, default=None):
    for a in node.attribute:
        if a.name == key:
            return onnx.helper.get_attribute_value(a)
    return default


def _hint(name: str) -> str | None:
    import re

    s = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")
    if not s or s[0].isdigit():
        return None
    return s


# --------------------------------------------------------------------------- op importers

Importer = Callable[[_Node], SSAValue]
IMPORTERS: dict[str, Importer] = {}


def importer(*op_types: str):
    def register(fn: Importer) -> Importer:
        for t in op_types:
            IMPORTERS[t] = fn
        return fn

    return register


def _emit(n: _Node, op):
    assert n.imp.builder is not None
    n.imp.builder.insert(op)
    return op.results[0]


_UNARY = {
    "Relu": graph.ReluOp, "Sigmoid": graph.SigmoidOp, "Tanh": graph.TanhOp, "Exp": graph.ExpOp,
    "Neg": graph.NegOp, "Abs": graph.AbsOp, "Sqrt": graph.SqrtOp, "HardSwish": graph.HardSwishOp,
}


@importer(*_UNARY)
def _unary(n: _Node):
    return _emit(n, _UNARY[n.proto.op_type](n.input(0)))


@importer("HardSigmoid")
def _hard_sigmoid(n: _Node):
    return _emit(n, graph.HardSigmoidOp(
        n.input(0), alpha=graph.f32_attr(n.attr("alpha", 0.2)), beta=graph.f32_attr(n.attr("beta", 0.5))))


@importer("LeakyRelu")
def _leaky(n: _Node):
    return _emit(n, graph.LeakyReluOp(n.input(0), alpha=graph.f32_attr(n.attr("alpha", 0.01))))


@importer("Clip")
def _clip(n: _Node):
    lo, hi = -math.inf, math.inf
    if n.has_input(1):
        lo = float(n.const_input(1, "Clip min"))
    if n.has_input(2):
        hi = float(n.const_input(2, "Clip max"))
    return _emit(n, graph.ClipOp(n.input(0), min=graph.f32_attr(lo), max=graph.f32_attr(hi)))


_BINARY = {"Add": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "Div": graph.DivOp}


@importer(*_BINARY)
def _binary(n: _Node):
    return _emit(n, _BINARY[n.proto.op_type](n.input(0), n.input(1), n.out_type()))


def _explicit_pads(n: _Node, in_hw, kernel, strides, dilations) -> list[int]:
    auto_pad = n.attr("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("NOTSET", ""):
        pads = list(n.attr("pads", [0, 0, 0, 0]))
        if len(pads) != 4:
            n.fail(f"only 2-D spatial ops are supported (pads {pads})")
        return pads
    if auto_pad == "VALID":
        return [0, 0, 0, 0]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * 4
        for i in range(2):
            out = -(-in_hw[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_hw[i])
            small, big = total // 2, total - total // 2
            pads[i], pads[i + 2] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        return pads
    n.fail(f"auto_pad '{auto_pad}' is not supported")


@importer("Conv")
def _conv(n: _Node):
    x = n.input(0)
    xs = graph.shape_of(x)
    if len(xs) != 4:
        n.fail(f"only 2-D convolutions (4-D NCHW inputs) are supported, got input shape {list(xs)}")
    w = n.input(1)
    ws = graph.shape_of(w)
    strides = list(n.attr("strides", [1, 1]))
    dil = list(n.attr("dilations", [1, 1]))
    pads = _explicit_pads(n, xs[2:], ws[2:], strides, dil)
    b = n.input(2) if n.has_input(2) else None
    return _emit(n, graph.Conv2dOp(x, w, b, n.out_type(), strides, pads, dil, n.attr("group", 1)))


@importer("BatchNormalization")
def _bn(n: _Node):
    if n.attr("training_mode", 0):
        n.fail("training-mode batch normalization is not supported; export the model in eval mode")
    if len([o for o in n.proto.output if o]) > 1:
        n.fail("batch normalization with running-statistics outputs is not supported")
    ops = [n.input(i) for i in range(5)]
    return _emit(n, graph.BatchNormOp(
        operands=ops, result_types=[n.out_type()],
        properties={"epsilon": graph.f32_attr(n.attr("epsilon", 1e-5))}))


def _pool_props(n: _Node, with_dilations: bool) -> dict:
    xs = graph.shape_of(n.input(0))
    if len(xs) != 4:
        n.fail(f"only 2-D pooling (4-D NCHW inputs) is supported, got {list(xs)}")
    k = list(n.attr("kernel_shape"))
    s = list(n.attr("strides", [1, 1]))
    d = list(n.attr("dilations", [1, 1]))
    if not with_dilations and d != [1, 1]:
        n.fail("dilated average pooling is not supported")
    props = {
        "kernel_shape": graph.i64_array(k),
        "strides": graph.i64_array(s),
        "pads": graph.i64_array(_explicit_pads(n, xs[2:], k, s, d)),
        "ceil_mode": graph.IntegerAttr(n.attr("ceil_mode", 0), 64),
    }
    if with_dilations:
        props["dilations"] = graph.i64_array(d)
    return props


@importer("MaxPool")
def _maxpool(n: _Node):
    if len([o for o in n.proto.output if o]) > 1:
        n.fail("MaxPool with an Indices output is not supported")
    if n.attr("storage_order", 0):
        n.fail("MaxPool storage_order = 1 is not supported")
    return _emit(n, graph.MaxPoolOp(operands=[n.input(0)], result_types=[n.out_type()],
                                    properties=_pool_props(n, True)))


@importer("AveragePool")
def _avgpool(n: _Node):
    props = _pool_props(n, False)
    props["count_include_pad"] = graph.IntegerAttr(n.attr("count_include_pad", 0), 64)
    return _emit(n, graph.AvgPoolOp(operands=[n.input(0)], result_types=[n.out_type()], properties=props))


@importer("GlobalAveragePool")
def _gap(n: _Node):
    return _emit(n, graph.GlobalAvgPoolOp(operands=[n.input(0)], result_types=[n.out_type()]))


@importer("ReduceMean")
def _reduce_mean(n: _Node):
    x = n.input(0)
    rank = len(graph.shape_of(x))
    axes = n.attr("axes")
    if axes is None and n.has_input(1):
        axes = n.const_input(1, "ReduceMean axes").tolist()
    if axes is None:
        if n.attr("noop_with_empty_axes", 0):
            return x
        axes = list(range(rank))
    axes = sorted(a % rank for a in axes)
    return _emit(n, graph.ReduceMeanOp(operands=[x], result_types=[n.out_type()], properties={
        "axes": graph.i64_array(axes), "keepdims": graph.IntegerAttr(n.attr("keepdims", 1), 64)}))


@importer("Flatten", "Reshape", "Squeeze", "Unsqueeze")
def _reshape(n: _Node):
    x = n.input(0)
    t = n.out_type()
    if x.type == t:
        return x
    return _emit(n, graph.ReshapeOp(operands=[x], result_types=[t]))


@importer("Identity")
def _identity(n: _Node):
    return n.input(0)


@importer("Transpose")
def _transpose(n: _Node):
    x = n.input(0)
    rank = len(graph.shape_of(x))
    perm = list(n.attr("perm", list(range(rank))[::-1]))
    return _emit(n, graph.TransposeOp(operands=[x], result_types=[n.out_type()],
                                      properties={"perm": graph.i64_array(perm)}))


@importer("Concat")
def _concat(n: _Node):
    ins = [n.input(i) for i in range(len(n.proto.input)) if n.has_input(i)]
    ins = [v for v in ins if math.prod(graph.shape_of(v)) > 0]
    rank = len(graph.shape_of(ins[0]))
    axis = n.attr("axis") % rank
    if len(ins) == 1:
        return ins[0]
    return _emit(n, graph.ConcatOp(operands=[ins], result_types=[n.out_type()],
                                   properties={"axis": graph.IntegerAttr(axis, 64)}))


@importer("Slice")
def _slice(n: _Node):
    x = n.input(0)
    shape = graph.shape_of(x)
    starts = n.const_input(1, "Slice starts").tolist()
    ends = n.const_input(2, "Slice ends").tolist()
    axes = n.const_input(3, "Slice axes").tolist() if n.has_input(3) else list(range(len(starts)))
    steps = n.const_input(4, "Slice steps").tolist() if n.has_input(4) else [1] * len(starts)
    full_starts, full_steps = [0] * len(shape), [1] * len(shape)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= len(shape)
        begin = slice(s, e, st).indices(shape[a])[0]
        full_starts[a], full_steps[a] = begin, st
    t = n.out_type()
    if t == x.type and all(s == 0 for s in full_starts) and all(s == 1 for s in full_steps):
        return x
    return _emit(n, graph.SliceOp(operands=[x], result_types=[t], properties={
        "starts": graph.i64_array(full_starts), "steps": graph.i64_array(full_steps)}))


def _str_attr(n: _Node, key: str, default: str) -> str:
    v = n.attr(key, default)
    return v.decode() if isinstance(v, bytes) else v


@importer("Resize")
def _resize(n: _Node):
    x = n.input(0)
    xs = graph.shape_of(x)
    mode = _str_attr(n, "mode", "nearest")
    coord = _str_attr(n, "coordinate_transformation_mode", "half_pixel")
    nearest = _str_attr(n, "nearest_mode", "round_prefer_floor")
    if mode not in graph.ResizeOp.MODES:
        n.fail(f"mode '{mode}' is not supported (supported: nearest, linear)")
    if coord not in graph.ResizeOp.COORDS:
        n.fail(f"coordinate_transformation_mode '{coord}' is not supported "
               f"(supported: {', '.join(graph.ResizeOp.COORDS)})")
    if n.attr("antialias", 0) or n.attr("axes") is not None or _str_attr(n, "keep_aspect_ratio_policy", "stretch") != "stretch":
        n.fail("antialias, axes and keep_aspect_ratio_policy are not supported")
    if len(xs) != 4:
        n.fail(f"only 4-D NCHW inputs are supported, got {list(xs)}")
    if n.has_input(1) and n.const_input(1, "Resize roi").size and coord == "tf_crop_and_resize":
        n.fail("roi is not supported")
    props = {
        "mode": StringAttr(mode),
        "coordinate_transformation_mode": StringAttr(coord),
        "nearest_mode": StringAttr(nearest),
    }
    if n.has_input(2) and n.const_input(2, "Resize scales").size:
        scales = n.const_input(2, "Resize scales").astype(float).tolist()
        props["scales"] = ArrayAttr([FloatAttr(s, f32) for s in scales])
    elif n.has_input(3):
        n.const_input(3, "Resize sizes")
    return _emit(n, graph.ResizeOp(operands=[x], result_types=[n.out_type()], properties=props))


@importer("Softmax")
def _softmax(n: _Node):
    x = n.input(0)
    rank = len(graph.shape_of(x))
    axis = n.attr("axis", -1) % rank
    return _emit(n, graph.SoftmaxOp(operands=[x], result_types=[x.type],
                                    properties={"axis": graph.IntegerAttr(axis, 64)}))


@importer("Gemm")
def _gemm(n: _Node):
    c = n.input(2) if n.has_input(2) else None
    return _emit(n, graph.GemmOp(
        operands=[n.input(0), n.input(1), [] if c is None else [c]],
        result_types=[n.out_type()],
        properties={
            "alpha": graph.f32_attr(n.attr("alpha", 1.0)),
            "beta": graph.f32_attr(n.attr("beta", 1.0)),
            "trans_a": graph.IntegerAttr(n.attr("transA", 0), 64),
            "trans_b": graph.IntegerAttr(n.attr("transB", 0), 64),
        }))


@importer("MatMul")
def _matmul(n: _Node):
    return _emit(n, graph.MatMulOp(operands=[n.input(0), n.input(1)], result_types=[n.out_type()]))


# --------------------------------------------------------------------------- entry point


def load_model(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    """Read an ONNX file with clear errors for missing, truncated or invalid files."""
    if isinstance(model, onnx.ModelProto):
        return model
    path = Path(model)
    if not path.exists():
        raise FrontendError(f"{path}: no such file")
    try:
        m = onnx.load(str(path))
    except onnx.checker.ValidationError as e:
        if "should be stored in" in str(e):
            raise FrontendError(
                f"{path}: the model's weights live in an external data file that is missing "
                f"({str(e).splitlines()[0]}); keep the data file beside the .onnx file, or "
                "fill the weights (e.g. shared/models/materialize.py) first"
            ) from None
        raise FrontendError(f"{path}: invalid ONNX model: {e}") from None
    except Exception as e:
        raise FrontendError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    if not m.graph.node and not m.graph.output:
        raise FrontendError(f"{path}: the file holds no ONNX graph (empty or truncated?)")
    try:
        onnx.checker.check_model(m)
    except Exception as e:
        raise FrontendError(f"{path}: invalid ONNX model: {str(e).splitlines()[0]}") from None
    return m


def _graph_copy(m: onnx.ModelProto) -> onnx.ModelProto:
    """A copy the importer may rewrite, sharing nothing mutable with `m` (cheap: the
    initializer protos are referenced, not copied)."""
    g = m.graph
    graph = onnx.helper.make_graph(list(g.node), g.name, list(g.input), list(g.output),
                                   initializer=[])
    graph.node.clear()
    for node in g.node:
        graph.node.add().CopyFrom(node)
    copy = onnx.helper.make_model(graph, opset_imports=list(m.opset_import), ir_version=m.ir_version)
    copy.graph.initializer.extend(g.initializer)
    return copy


def import_onnx(model: str | Path | onnx.ModelProto, store: WeightStore | None = None) -> ModuleOp:
    """Import an ONNX model (path or ModelProto) as a verified `graph`-dialect module."""
    m = load_model(model)
    imp = OnnxImporter(_graph_copy(m), store)
    imp.prepare()
    module = imp.build()
    try:
        module.verify()
    except Exception as e:
        raise FrontendError(f"imported IR does not verify: {e}") from None
    return module
