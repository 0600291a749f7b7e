"""ONNX -> `graph` dialect.

The importer makes the graph static before it builds IR: onnx shape inference gives
every tensor a type, and shape subgraphs (Shape, Gather, Unsqueeze, Concat, Cast,
Constant, ...) are evaluated with onnx's reference evaluator and folded into
constants, repeatedly, until nothing foldable is left. Identity nodes are dropped.
Every op keeps its ONNX node name as its `loc(...)`.

Errors are `ImportError_`s (a `CompileError`) that name nodes and say what to do; a
model with unsupported ops reports every unsupported op type with all its nodes.

Integer (int64 / int32) tensors computed at run time (masks, position ids, comparisons on
token ids) are float32 tensors holding integers, exact for |v| < 2**24, as booleans are
0/1 float masks (dialects/graph.py, "integers"). An integer model input keeps its i32
buffer for the Gathers that take it as indices (`graph.take`); any other reader reads
it through `graph.int_to_float` (converted once, on device), and the runtime checks its
values against [-2**24, 2**24) (`INT_TENSOR_OPS`, `OnnxImporter._check_int_inputs`).
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
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    f32,
    i32,
)
from xdsl.ir import Attribute, Block, BlockArgument, Region, SSAValue

from adreno_mlir import constant_outputs
from adreno_mlir.constant_outputs import ATTR as CONSTANT_OUTPUTS_ATTR
from adreno_mlir.errors import CompileError
from adreno_mlir.weights import WeightStore, attach, symbol_name
from adreno_mlir.dialects import graph
from adreno_mlir.frontend.einsum import EinsumBuilder, EinsumError

from adreno_mlir.graph_constants import INLINE_LIMIT

NOT_FOLDABLE = {
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli", "If", "Loop", "Scan", "SequenceConstruct", "SequenceInsert", "SequenceAt",
    "SequenceEmpty", "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalGetElement",
    "OptionalHasElement",
}
"""Op types never evaluated at import time: random ones (a model asks for fresh values each run),
control flow and sequences (the graph dialect has no values of those kinds). Every other
standard op whose inputs are all constants is evaluated with `onnx.reference` and folded."""

INDEX_INPUT_TYPES = (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
"""Element types of integer model inputs (token ids, attention masks, token type ids) and of
integer tensors computed at run time (held as float32, exact below 2**24)."""
INDEX_RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
"""Ops that only reshape token ids on their way to a Gather (`OnnxImporter.int_aliases`)."""

FLOAT_EXACT_INT = graph.FLOAT_EXACT_INT
"""Integers computed at run time are float32, exact below this magnitude: the `bound` of an
integer model input read other than as Gather indices (the runtime checks it)."""

INT_TENSOR_OPS = frozenset({
    "Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Relu", "Max", "Min", "Sum", "Clip",
    "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where",
    "Cast", "CastLike", "CumSum", "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Slice", "Expand",
    "Concat", "Transpose", "Tile", "Split", "Pad", "Gather", "GatherElements",
    "ReduceSum", "ReduceMax", "ReduceMin",
    "GroupQueryAttention",  # its seqlens_k: the valid length - 1, read as a float (contrib_ops.py)
    "GatherBlockQuantized",  # its indices, as a Gather's
})
"""Ops that compute on integer tensors computed at run time (float-held, see the module
docstring): float arithmetic gives the integer result for these (exactly, below 2**24;
Div and Mod have integer ops of their own, Cast to an integer type truncates). Any other
op reading or writing such a tensor is refused, naming the node (`OnnxImporter.build`)."""

def _fold_gather_elements(node: onnx.NodeProto, data: np.ndarray, indices: np.ndarray) -> list[np.ndarray]:
    """GatherElements on constants. ONNX's reference (onnx 1.23) gathers with np.choose,
    which takes at most 32 choices; along a longer axis it falls back to a 2-D special case
    that reads one index per row: folding HF BERT's buffered token_type_ids
    (`GatherElements(token_type_ids [1, 512], position_ids [1, 128], axis=1)`) failed with
    "cannot reshape array of size 1 into shape (1,128)"."""
    data, idx = np.asarray(data), np.asarray(indices).astype(np.int64)
    axis = _attr(node, "axis", 0) % max(data.ndim, 1)
    size = data.shape[axis]
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise ValueError(f"indices outside [-{size}, {size}) along axis {axis}")
    if idx.ndim != data.ndim:
        raise ValueError(f"indices of rank {idx.ndim} for data of rank {data.ndim}")
    idx = np.where(idx < 0, idx + size, idx)
    window = tuple(slice(0, d) if k != axis else slice(None) for k, d in enumerate(idx.shape))
    return [np.take_along_axis(data[window], idx, axis)]


NUMPY_FOLDS: dict[str, Callable[..., list[np.ndarray]]] = {"GatherElements": _fold_gather_elements}
"""Ops folded with numpy instead of `onnx.reference` (whose implementation is wrong for them)."""

FOLD_LIMIT = 1 << 16
"""Largest constant (elements) given to shape inference as a value; bigger ones go in as typed inputs."""

FOLD_RESULT_LIMIT = 1 << 22
"""Largest float result (elements, 16 MB) folded; integer and boolean results fold at any size.
Swin's attention masks (64x49x49) and transposed weight matrices fall under it."""


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
        return _attr(self.proto, key, default)

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


class OnnxImporter:
    def __init__(self, model: onnx.ModelProto, store: WeightStore | None = None, initializers=None,
                 shared_kv: bool = False):
        self.model = model
        self.shared_kv = shared_kv
        """GroupQueryAttention in onnxruntime's shared-buffer form: past and present are one
        cache of the maximum context, the new rows written in place (`graph.kv_cache_write`;
        adreno_mlir/frontend/decoder.py binds a decoder so)."""
        self.bound_overrides: dict[str, int] = {}
        """Integer inputs whose valid values the caller knows to be fewer (a decoder's run-time
        position: [0, L - S]): their `bound` is at most this."""
        self.shared_values: dict[tuple, SSAValue] = {}
        """Values importers compute once for every node that needs them (the cache position
        every layer's attention reads), by a key of their own."""
        self.state: dict[str, str] = {}
        """{present output: past input} of the caches written in place: the function's
        `graph.state` attribute (state that lives on the device between runs). The presents
        are no outputs of the function: their values are the inputs' buffers after the run."""
        self.initializers = model.graph.initializer if initializers is None else initializers
        """The weights (read only): the caller's model's own, so they are never copied."""
        self.store = store or WeightStore()
        self.consts: dict[str, np.ndarray] = {}
        self.values: dict[str, SSAValue] = {}
        self.types: dict[str, TensorType] = {}
        self.builder: Builder | None = None
        self.const_ops: dict[str, SSAValue] = {}
        self.int_inputs: set[str] = set()
        """Integer model inputs; `i32` tensors in the IR (the function's arguments)."""
        self.int_aliases: dict[str, str] = {}
        """Reshaped views of integer inputs that Gathers read (tensor name -> the input)."""
        self.float_int_inputs: set[str] = set()
        """Integer model inputs read other than as Gather indices: `graph.int_to_float`
        converts them (the name's value), their i32 argument stays for the Gathers."""
        self.float_aliases: set[str] = set()
        """The `int_aliases` that are also read as tensors: imported as reshapes of the
        converted input."""
        self.int_args: dict[str, SSAValue] = {}
        """The i32 function argument of each integer model input (Gather indices)."""
        self.index_bounds: dict[str, int] = {}
        """Per integer input, the smallest table extent its ids index (the runtime checks
        every id against it)."""

    def is_used(self, name: str) -> bool:
        """Whether a tensor is read by a node or is a model output."""
        if not hasattr(self, "_used"):
            g = self.model.graph
            self._used = {i for node in g.node for i in node.input} | {o.name for o in g.output}
        return name in self._used

    # ----------------------------------------------------------------- preparation

    def prepare(self) -> None:
        g = self.model.graph
        init_names = {i.name for i in self.initializers}
        for init in self.initializers:
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
            if tt.elem_type in INDEX_INPUT_TYPES:
                dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
                if 0 in dims:  # no ids at all: nothing an embedding lookup could use
                    dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
                    raise FrontendError(f"model input '{vi.name}' has element type {dt} and shape {dims} with no "
                                        "elements; empty tensors are not supported")
                self.int_inputs.add(vi.name)  # its readers: _check_int_inputs
            elif tt.elem_type != onnx.TensorProto.FLOAT:
                dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
                raise FrontendError(
                    f"model input '{vi.name}' has element type {dt}; only float32, int32 and int64 inputs are "
                    "supported (cast the input in the model or export it as float32)"
                )
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            if all(d is not None for d in dims) and 0 in dims:
                raise FrontendError(
                    f"model input '{vi.name}' has shape {dims} with no elements; empty tensors "
                    "are not supported"
                )
            if any(d is None or d <= 0 for d in dims):
                from adreno_mlir.frontend.shapes import dynamic_input_message

                raise FrontendError(dynamic_input_message(vi.name, tt.shape.dim))
        self._fold_to_fixpoint()
        self._check_int_inputs()

    def _check_int_inputs(self) -> None:
        """Sort the readers of each integer model input. A Gather taking it as its indices
        (an embedding lookup, `graph.take` on the i32 argument), possibly through ops that
        only reshape it (Reshape, Flatten, Squeeze, Unsqueeze, Identity with constant
        shapes, and a Cast to int32/int64: `int_aliases`; the Gather then reshapes its
        result instead), reads the ids as they are. Any other reader (a Cast of
        attention_mask, an Equal of input_ids and a padding id, arithmetic on
        token_type_ids) reads the input as float-held integers:
        the input is in `float_int_inputs` (`graph.int_to_float`; its bound becomes at most
        2**24) and the reshapes on the way in `float_aliases`. An integer input (or a
        reshape of it) that is a model output is refused: outputs are float32."""
        g = self.model.graph
        outputs = {o.name for o in g.output}
        readers: dict[str, list[onnx.NodeProto]] = {}
        for node in g.node:
            for name in dict.fromkeys(node.input):
                readers.setdefault(name, []).append(node)
        for root in sorted(self.int_inputs):
            dt = onnx.helper.tensor_dtype_to_np_dtype(
                next(vi for vi in self.graph_inputs if vi.name == root).type.tensor_type.elem_type)
            parent: dict[str, str] = {}
            pending = [root]
            while pending:
                name = pending.pop()
                if name in outputs:
                    raise FrontendError(f"model input '{root}' has element type {dt} and is (reshaped) a model output; "
                                        "adreno-mlir returns float32 outputs: add a Cast to float in the model")
                for node in readers.get(name, []):
                    if node.op_type == "Gather" and node.input[0] != name and list(node.input[1:]) == [name]:
                        continue
                    if (node.op_type == "GatherBlockQuantized" and node.domain == CONTRIB_DOMAIN
                            and list(node.input).index(name) == 1 and list(node.input).count(name) == 1):
                        continue  # a quantized embedding's ids: read as they are, as a Gather's
                    int_cast = node.op_type == "Cast" and _attr(node, "to") in INDEX_INPUT_TYPES
                    if ((node.op_type in INDEX_RESHAPES or int_cast) and node.input[0] == name
                            and all(i in self.consts for i in node.input[1:] if i)
                            and self._static_shape(node.output[0]) is not None):
                        self.int_aliases[node.output[0]] = root
                        parent[node.output[0]] = name
                        pending.append(node.output[0])
                        continue
                    # read as a tensor: the float-held integers, and every reshape on the way
                    self.float_int_inputs.add(root)
                    view = name
                    while view != root:
                        self.float_aliases.add(view)
                        view = parent[view]

    def _light_model(self) -> onnx.ModelProto:
        """The graph with only small constants as initializers: big weights become typed
        inputs, so shape inference never serializes megabytes of weights."""
        g = self.model.graph
        used = {n for node in g.node for n in node.input} | {o.name for o in g.output}
        nodes, extra = [], []
        for node in g.node:
            stand_ins, inputs = _shape_stand_ins(node, self.shared_kv, self._init_dims)
            nodes += stand_ins
            extra += inputs
        light = onnx.helper.make_model(
            onnx.helper.make_graph(nodes, g.name, list(self.graph_inputs) + extra, list(g.output)),
            opset_imports=list(self.model.opset_import),
            # IR version 4 is the first whose initializers need not be graph inputs (how the
            # small constants are listed here); shape inference ignores them before it.
            ir_version=max(self.model.ir_version, 4),
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

    def _init_dims(self, name: str) -> list[int] | None:
        """The dims of initializer `name` (None if it is none)."""
        arr = self.consts.get(name)
        return None if arr is None else list(np.shape(arr))

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
        for _ in range(100):  # each round folds what the last shape inference made static
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
            if (node.op_type not in NOT_FOLDABLE and node.domain in ("", "ai.onnx")
                    and all(n in self.consts for n in ins)):
                try:
                    if node.op_type in NUMPY_FOLDS:
                        outs = NUMPY_FOLDS[node.op_type](node, *[self.consts[n] for n in node.input])
                    else:
                        outs = ReferenceEvaluator(node).run(None, {n: self.consts[n] for n in ins})
                except Exception as e:
                    raise FrontendError(
                        f"node '{node.name}' ({node.op_type}): constant folding failed: {e}"
                    ) from None
                # Integer and boolean results are shape or mask arithmetic: fold them at any
                # size (the graph dialect computes in float only).
                small = all(np.asarray(o).size <= FOLD_RESULT_LIMIT or np.asarray(o).dtype.kind in "biu"
                            for o in outs)
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
            if node is not None and (why := _bad_window_attributes(node.proto)):
                raise FrontendError(f"{where}: {why}")
            raise FrontendError(
                f"{where}: output '{name}' has no static shape after shape inference"
            )
        if 0 in shape:
            where = f"node '{node.name}' ({node.proto.op_type})" if node else f"tensor '{name}'"
            raise FrontendError(f"{where}: tensor '{name}' has shape {shape} with no elements; "
                                "empty tensors are not supported")
        if name in self.int_inputs:
            t = TensorType(i32, shape)
            self.types[name] = t
            return t
        if tt.elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL, *INDEX_INPUT_TYPES):
            where = f"node '{node.name}' ({node.proto.op_type})" if node else f"tensor '{name}'"
            dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
            raise FrontendError(
                f"{where}: tensor '{name}' has element type {dt}; only float32, bool, int32 and int64 tensors "
                "are computed at run time (other types only in folded constant computations)"
            )
        # A boolean computed at run time is a float32 mask of 0s and 1s (graph.is_nan, ...);
        # an integer one a float32 tensor of integers, exact below 2**24 (module docstring).
        t = TensorType(f32, shape)
        self.types[name] = t
        return t

    def _run_time_int(self, name: str):
        """The numpy element type of tensor `name` when it is an integer tensor computed at
        run time (or an integer model input), else None."""
        if not name or name in self.consts:
            return None
        tt = self.onnx_types.get(name)
        if tt is None or tt.elem_type not in INDEX_INPUT_TYPES:
            return None
        return onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)

    def value(self, name: str, node: _Node | None = None) -> SSAValue:
        if name in self.values:
            return self.values[name]
        if name in self.consts:
            return self.constant(name, self.consts[name], node)
        raise FrontendError(f"tensor '{name}' is used before it is defined")

    def constant(self, name: str, arr: np.ndarray, node: _Node | None = None) -> SSAValue:
        if arr.dtype != np.float32:
            big = arr.dtype.kind in "iu" and arr.size and int(np.abs(arr.astype(np.float64)).max()) >= FLOAT_EXACT_INT
            if arr.dtype.kind in "fb" or (arr.dtype.kind in "iu" and not big):
                # a boolean constant is a 0/1 mask and an integer one float-held integers,
                # as the computed ones (exact: checked just above)
                arr = arr.astype(np.float32)
            else:
                where = f"node '{node.name}' ({node.proto.op_type})" if node else "a node"
                extra = (f" with values up to {int(np.abs(arr.astype(np.float64)).max())}, beyond 2**24 (integer "
                         "tensors are held as float32, exact below 2**24)") if big else ""
                raise FrontendError(
                    f"{where} uses the constant '{name}' ({arr.dtype}){extra} as a tensor operand; only float32, "
                    "bool and integer tensors (below 2**24) are supported"
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

    def int32_constant(self, name: str, arr: np.ndarray) -> SSAValue:
        """A constant kept as int32 words (a quantized weight's packed blocks): never
        converted to floats, always a weight of the store."""
        t = TensorType(i32, list(arr.shape))
        op = graph.ConstantOp(t, ref=self.store.add(name, np.ascontiguousarray(arr, np.int32)))
        assert self.builder is not None
        self.builder.insert(op)
        op.result.name_hint = _hint(name)
        return op.result

    def _constant_outputs(self) -> dict[str, Attribute]:
        """The model outputs that are constants of an element type other than float32
        (a Shape is int64, a comparison bool): no graph tensor can hold them, so they
        travel in the function attribute graph.constant_outputs, in their ONNX type."""
        out: dict[str, Attribute] = {}
        for o in self.model.graph.output:
            if o.name not in self.consts or o.name in self.int_inputs:
                continue
            arr = np.asarray(self.consts[o.name])
            declared = o.type.tensor_type.elem_type if o.type.HasField("tensor_type") else 0
            dtype = onnx.helper.tensor_dtype_to_np_dtype(declared) if declared else arr.dtype
            if dtype == np.float32:
                continue  # a graph.constant the function returns
            if not constant_outputs.supported(dtype):
                raise FrontendError(f"model output '{o.name}' is a constant of element type {dtype}, which "
                                    "adreno-mlir cannot return (bool, integers and float16/32/64 only)")
            out[o.name] = constant_outputs.to_attr(arr.astype(dtype), self.store, o.name)
        return out

    def build(self) -> ModuleOp:
        g = self.model.graph
        nodes = [_Node(n, self) for n in g.node]
        unsupported: dict[str, list[str]] = {}
        for n in nodes:
            if _importer_of(n.proto) is None:
                op = n.proto.op_type if n.proto.domain in ("", "ai.onnx") else f"{n.proto.domain}.{n.proto.op_type}"
                unsupported.setdefault(op, []).append(n.name)
        if unsupported:
            lines = [
                f"  {op} ({len(ns)} node{'s' if len(ns) > 1 else ''}): " + ", ".join(ns)
                for op, ns in sorted(unsupported.items())
            ]
            raise FrontendError(
                "the model uses operators adreno-mlir does not support:\n" + "\n".join(lines)
                + f"\nsupported operators: {', '.join(sorted(IMPORTERS))}; of the com.microsoft domain (onnxruntime's "
                f"contrib operators): {', '.join(sorted(CONTRIB_IMPORTERS))}"
            )

        in_types = [self.tensor_type(vi.name) for vi in self.graph_inputs]
        block = Block(arg_types=in_types)
        self.builder = Builder(InsertPoint.at_end(block))
        for arg, vi in zip(block.args, self.graph_inputs):
            arg.name_hint = _hint(vi.name)
            self.values[vi.name] = arg
            if vi.name in self.int_inputs:
                self.int_args[vi.name] = arg
            if vi.name in self.float_int_inputs:  # the one conversion every other reader shares
                self.index_bounds[vi.name] = FLOAT_EXACT_INT  # the runtime checks |v| < 2**24 (Gathers: less)
                conv = graph.IntToFloatOp(operands=[arg], result_types=[TensorType(f32, graph.shape_of(arg))])
                conv.location = NameLoc(StringAttr(vi.name), NoneAttr())
                self.builder.insert(conv)
                conv.result.name_hint = _hint(vi.name) + "_float"
                self.values[vi.name] = conv.result
        for n in nodes:
            if n.proto.output[0] in self.int_aliases and n.proto.output[0] not in self.float_aliases:
                continue  # reshaped token ids: the Gather reading them reshapes its result
            if n.proto.op_type not in INT_TENSOR_OPS:
                ints = [(t, dt) for t in [*n.proto.input, *n.proto.output] if (dt := self._run_time_int(t)) is not None]
                if ints:
                    t, dt = ints[0]
                    n.fail(f"{n.proto.op_type} of integer tensors is not supported: tensor '{t}' has element type {dt} "
                           "and is computed at run time (integer tensors are held as float32, exact below 2**24, "
                           "and computed by " + ", ".join(sorted(INT_TENSOR_OPS)) + " only; parameters such as "
                           "shapes and axes must be constants)")
            before = len(block.ops)
            results = _importer_of(n.proto)(n)
            if not isinstance(results, (list, tuple)):
                results = [results]
            for name, r in zip(n.proto.output, results):
                if not name or r is None:  # an optional output the model leaves out (or never reads)
                    continue
                self.values[name] = r
                r.name_hint = _hint(name)
                if r.type != self.tensor_type(name, n):
                    n.fail(f"imported result type {r.type} differs from ONNX's {self.tensor_type(name, n)}")
            loc = NameLoc(StringAttr(n.name), NoneAttr())
            for op in list(block.ops)[before:]:
                if not isinstance(op, graph.ConstantOp):
                    op.location = loc
        for name in self.int_inputs - set(self.index_bounds):  # read by nothing: any value below 2**24
            self.index_bounds[name] = FLOAT_EXACT_INT
        for name, bound in self.bound_overrides.items():  # narrower ranges the caller knows (a decoder's position)
            if name in self.index_bounds:
                self.index_bounds[name] = min(bound, self.index_bounds[name])
        for o in g.output:
            if (dt := self._run_time_int(o.name)) is not None:
                raise FrontendError(f"model output '{o.name}' has element type {dt} and is computed at run time; "
                                    "adreno-mlir returns float32 outputs (integers are held as floats, exact below "
                                    "2**24): add a Cast to float at the end of the model")
            tt = self.onnx_types.get(o.name)
            if o.name not in self.consts and tt is not None and tt.elem_type == onnx.TensorProto.BOOL:
                raise FrontendError(f"model output '{o.name}' is a boolean computed at run time; adreno-mlir returns "
                                    "float32 outputs (booleans are held as 0/1 floats): add a Cast to float at the "
                                    "end of the model")
        outs = []
        constants_out = self._constant_outputs()
        for o in g.output:
            if o.name in constants_out or o.name in self.state:
                continue  # returned from graph.constant_outputs / state kept on the device, not by the function
            if o.name in self.values or o.name in self.consts:
                outs.append(self.value(o.name))
            else:
                raise FrontendError(f"model output '{o.name}' is not produced by any node")
        returned = [o for o in g.output if o.name not in constants_out and o.name not in self.state]
        for i, (o, v) in enumerate(zip(returned, outs)):
            if isinstance(v, BlockArgument):
                # An output that is an input (Identity, no-op Transpose/Clip/Slice ...)
                # gets its own buffer: a full-range slice is a plain copy.
                rank = len(graph.shape_of(v))
                copy = graph.SliceOp(operands=[v], result_types=[v.type], properties={
                    "starts": graph.i64_array([0] * rank), "steps": graph.i64_array([1] * rank)})
                copy.location = NameLoc(StringAttr(o.name), NoneAttr())
                self.builder.insert(copy)
                copy.result.name_hint = _hint(o.name)
                outs[i] = copy.result
        self.builder.insert(func.ReturnOp(*outs))
        fn = func.FuncOp(
            "main",
            ([a.type for a in block.args], [v.type for v in outs]),
            Region(block),
        )
        fn.attributes["graph.inputs"] = ArrayAttr([StringAttr(vi.name) for vi in self.graph_inputs])
        fn.attributes["graph.outputs"] = ArrayAttr([StringAttr(o.name) for o in g.output if o.name not in self.state])
        if self.index_bounds:  # what the runtime checks integer inputs against
            fn.attributes["graph.index_bounds"] = DictionaryAttr(
                {k: IntegerAttr(v, 64) for k, v in sorted(self.index_bounds.items())})
        if self.state:  # caches written in place: state on the device (adreno_mlir/runtime/plan.py)
            fn.attributes["graph.state"] = DictionaryAttr({k: StringAttr(v) for k, v in sorted(self.state.items())})
        if constants_out:  # non-float32 constant outputs (adreno_mlir/constant_outputs.py)
            fn.attributes[CONSTANT_OUTPUTS_ATTR] = DictionaryAttr(constants_out)
        module = ModuleOp([fn])
        attach(module, self.store)
        return module


def _attr(node: onnx.NodeProto, key: str, default=None):
    for a in node.attribute:
        if a.name == key:
            return onnx.helper.get_attribute_value(a)
    return default


def _hint(name: str) -> str:
    """SSA name hint for an ONNX tensor: the same spelling as its weight symbol."""
    return symbol_name(name)


# --------------------------------------------------------------------------- op importers

Importer = Callable[[_Node], SSAValue]
IMPORTERS: dict[str, Importer] = {}


CONTRIB_IMPORTERS: dict[str, Importer] = {}
"""Importers of onnxruntime's contrib operators (domain com.microsoft, docs/ContribOperators.md)."""
CONTRIB_DOMAIN = "com.microsoft"


def importer(*op_types: str):
    def register(fn: Importer) -> Importer:
        for t in op_types:
            IMPORTERS[t] = fn
        return fn

    return register


def contrib_importer(*op_types: str):
    def register(fn: Importer) -> Importer:
        for t in op_types:
            CONTRIB_IMPORTERS[t] = fn
        return fn

    return register


def _importer_of(node: onnx.NodeProto) -> Importer | None:
    if node.domain in ("", "ai.onnx"):
        return IMPORTERS.get(node.op_type)
    if node.domain == CONTRIB_DOMAIN:
        return CONTRIB_IMPORTERS.get(node.op_type)
    return None


def _emit(n: _Node, op):
    assert n.imp.builder is not None
    n.imp.builder.insert(op)
    return op.results[0]


_UNARY = {
    "Relu": graph.ReluOp, "Sigmoid": graph.SigmoidOp, "Tanh": graph.TanhOp, "Exp": graph.ExpOp,
    "Neg": graph.NegOp, "Abs": graph.AbsOp, "Sqrt": graph.SqrtOp, "HardSwish": graph.HardSwishOp,
    "Erf": graph.ErfOp, "Log": graph.LogOp, "Reciprocal": graph.ReciprocalOp,
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


@importer("Elu")
def _elu(n: _Node):
    return _emit(n, graph.EluOp(n.input(0), alpha=graph.f32_attr(n.attr("alpha", 1.0))))


@importer("Clip")
def _clip(n: _Node):
    lo, hi = -math.inf, math.inf
    if _opset(n) < 11:  # Clip-1/6: bounds are attributes
        lo, hi = float(n.attr("min", -math.inf)), float(n.attr("max", math.inf))
    if n.has_input(1):
        lo = float(n.const_input(1, "Clip min"))
    if n.has_input(2):
        hi = float(n.const_input(2, "Clip max"))
    if lo == -math.inf and hi == math.inf:
        return n.input(0)
    # ONNX: with min > max every output is max (min(max(x, lo), hi) with lo := hi).
    lo = min(lo, hi)
    return _emit(n, graph.ClipOp(n.input(0), min=graph.f32_attr(lo), max=graph.f32_attr(hi)))


_BINARY = {"Add": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "Div": graph.DivOp}


def _is_int(n: _Node, name: str) -> bool:
    """Whether tensor `name` has an integer element type in ONNX (held as floats here)."""
    tt = n.imp.onnx_types.get(name)
    return tt is not None and tt.elem_type in INDEX_INPUT_TYPES


@importer(*_BINARY)
def _binary(n: _Node):
    """Add, Sub, Mul and Div; integer Div truncates toward zero (`graph.int_div`)."""
    op = _BINARY[n.proto.op_type]
    if op is graph.DivOp and _is_int(n, n.proto.output[0]):
        op = graph.IntDivOp
    return _emit(n, op(n.input(0), n.input(1), n.out_type()))


@importer("Mod")
def _mod(n: _Node):
    """Integer Mod: the remainder with the divisor's sign (fmod = 0, `graph.int_mod`) or
    the dividend's (fmod = 1, `graph.int_fmod`), computed on ints (exact). Mod of float
    tensors (fmod = 1 only, C's fmod) is not supported."""
    fmod = int(n.attr("fmod", 0))
    if not _is_int(n, n.proto.output[0]):
        n.fail("Mod of float tensors is not supported (integer tensors only)")
    op = graph.IntFmodOp if fmod else graph.IntModOp
    return _emit(n, op(n.input(0), n.input(1), n.out_type()))


@importer("CumSum")
def _cumsum(n: _Node):
    """`graph.cumsum` along the constant `axis` (a scalar or one-element tensor), with
    ONNX's `exclusive` and `reverse` attributes."""
    x = n.input(0)
    rank = len(graph.shape_of(x))
    axis = np.asarray(n.const_input(1, "CumSum axis")).reshape(-1)
    if axis.size != 1 or axis.dtype.kind not in "iu" or not -rank <= int(axis[0]) < rank:
        n.fail(f"axis {axis.tolist()} must be one integer in [-{rank}, {rank})")
    return _emit(n, graph.CumSumOp(operands=[x], result_types=[n.out_type()], properties={
        "axis": graph.IntegerAttr(int(axis[0]) % rank, 64),
        "exclusive": graph.IntegerAttr(int(bool(n.attr("exclusive", 0))), 64),
        "reverse": graph.IntegerAttr(int(bool(n.attr("reverse", 0))), 64)}))


_VARIADIC = {"Max": graph.MaxOp, "Min": graph.MinOp, "Sum": graph.AddOp}


@importer(*_VARIADIC)
def _variadic(n: _Node):
    """ONNX Max, Min and Sum take any number of inputs: a chain of the binary op, left to
    right, each step broadcasting; a single input is the result itself."""
    op = _VARIADIC[n.proto.op_type]
    ins = [n.input(i) for i in range(len(n.proto.input)) if n.has_input(i)]
    if not ins:
        n.fail("needs at least one input")
    acc = ins[0]
    for v in ins[1:]:
        shape = graph.broadcast_shapes(graph.shape_of(acc), graph.shape_of(v))
        acc = _emit(n, op(acc, v, TensorType(f32, shape)))
    return acc


def _as_float_constant(n: _Node, name: str, arr: np.ndarray) -> SSAValue:
    """The float32 version of the non-float ONNX constant `name` (compute tensors are
    float32), made once: other nodes reading the same constant share it."""
    key = f"{name}_as_float"
    if key not in n.imp.values:
        n.imp.constant(key, arr.astype(np.float32), n)
    return n.imp.values[key]


def _float_const_input(n: _Node, i: int) -> SSAValue:
    """Input `i`, a constant, as a float32 operand (an integer constant is converted)."""
    name = n.proto.input[i]
    arr = np.asarray(n.imp.consts[name])
    return n.input(i) if arr.dtype.kind == "f" else _as_float_constant(n, name, arr)


@importer("Pow")
def _pow(n: _Node):
    """A constant exponent holding one value (that does not enlarge the result by
    broadcasting) is `graph.pow`, which specialises 2, 3, 0.5, ...; any other exponent,
    computed at run time or not, is `graph.pow_tensor` (OpenCL's pow per element)."""
    x, t = n.input(0), n.out_type()
    name = n.proto.input[1]
    if name not in n.imp.consts:
        return _emit(n, graph.PowTensorOp(x, n.input(1), t))
    e = np.asarray(n.imp.consts[name]).astype(np.float32).reshape(-1)
    if e.size and np.all(e == e[0]) and graph.shape_of(x) == graph.shape_of(t):
        return _emit(n, graph.PowOp(x, exponent=graph.f32_attr(float(e[0]))))
    return _emit(n, graph.PowTensorOp(x, _float_const_input(n, 1), t))


@importer("PRelu")
def _prelu(n: _Node):
    """The slope broadcasts to X, never X to the slope (ONNX's unidirectional
    broadcasting): checked here so that the error names the node."""
    x, slope = n.input(0), n.input(1)
    xs, ss = graph.shape_of(x), graph.shape_of(slope)
    if len(ss) > len(xs) or any(s not in (1, d) for s, d in zip(ss[::-1], xs[::-1])):
        n.fail(f"slope of shape {list(ss)} does not broadcast to the input's shape {list(xs)} "
               "(numpy rules: a per-channel slope of an NCHW input is [C, 1, 1])")
    return _emit(n, graph.PReluOp(x, slope, n.out_type()))


@importer("Gelu")
def _gelu(n: _Node):
    approximate = _str_attr(n, "approximate", "none")
    if approximate not in graph.GeluOp.APPROXIMATIONS:
        n.fail(f"approximate = '{approximate}' is not one of {', '.join(graph.GeluOp.APPROXIMATIONS)}")
    return _emit(n, graph.GeluOp(n.input(0), approximate=StringAttr(approximate)))


@importer("Where")
def _where(n: _Node):
    """The condition is a float 0/1 mask, the first operand of `graph.where`: a constant
    one (an attention mask stored in the model, or computed from constants and folded at
    import), or one computed at run time by a comparison or logical op."""
    name = n.proto.input[0]
    if name in n.imp.consts:
        mask = _as_float_constant(n, name, np.asarray(n.imp.consts[name]) != 0)
    else:
        mask = n.input(0)
    return _emit(n, graph.WhereOp(mask, n.input(1), n.input(2), n.out_type()))


@importer("IsNaN", "Not")
def _mask_unary(n: _Node):
    """IsNaN and Not write masks (booleans as float 0/1, see graph.IsNaNOp)."""
    op = {"IsNaN": graph.IsNaNOp, "Not": graph.NotOp}[n.proto.op_type]
    return _emit(n, op(n.input(0), n.out_type()))


@importer("IsInf")
def _is_inf(n: _Node):
    pos, neg = int(n.attr("detect_positive", 1)), int(n.attr("detect_negative", 1))
    return _emit(n, graph.IsInfOp(n.input(0), n.out_type(), detect_positive=graph.IntegerAttr(pos, 64),
                                  detect_negative=graph.IntegerAttr(neg, 64)))


_COMPARE = {"Equal": graph.EqualOp, "Less": graph.LessOp, "LessOrEqual": graph.LessOrEqualOp,
            "Greater": graph.GreaterOp, "GreaterOrEqual": graph.GreaterOrEqualOp,
            "And": graph.AndOp, "Or": graph.OrOp, "Xor": graph.XorOp}


@importer(*_COMPARE)
def _compare(n: _Node):
    """Comparisons of float tensors and logical ops on masks, writing masks (ordered
    comparisons: false where either side is NaN). An integer constant operand (a
    padding id, a position) is compared as float32, exactly below 2**24."""
    ins = [_float_const_input(n, i) if n.proto.input[i] in n.imp.consts else n.input(i) for i in range(2)]
    return _emit(n, _COMPARE[n.proto.op_type](ins[0], ins[1], n.out_type()))


def _explicit_pads(n: _Node, in_hw, kernel, strides, dilations) -> list[int]:
    """ONNX pads [begin..., end...] for the spatial dims `in_hw`, resolving auto_pad."""
    rank = len(in_hw)
    auto_pad = n.attr("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("NOTSET", ""):
        pads = list(n.attr("pads", [0] * (2 * rank)))
        if len(pads) != 2 * rank:
            n.fail(f"pads {pads} must have {2 * rank} values for {rank} spatial dimension(s)")
        return pads
    if auto_pad == "VALID":
        return [0] * (2 * rank)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * rank)
        for i in range(rank):
            out = -(-in_hw[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_hw[i])
            small, big = total // 2, total - total // 2
            pads[i], pads[i + rank] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        return pads
    n.fail(f"auto_pad '{auto_pad}' is not supported")


def _conv_operands(n: _Node, what: str):
    """(x, its shape, w, its shape, spatial rank, strides, dilations) of a Conv or
    ConvTranspose: 1-D (N x C x L) or 2-D (N x C x H x W) only, weights of the same rank."""
    x, w = n.input(0), n.input(1)
    xs, ws = graph.shape_of(x), graph.shape_of(w)
    if len(xs) not in (3, 4) or len(ws) != len(xs):
        n.fail(f"only 1-D and 2-D {what} (3-D NCL / 4-D NCHW inputs) are supported, got input shape "
               f"{list(xs)} and weight shape {list(ws)}")
    rank = len(xs) - 2
    return x, xs, w, ws, rank, list(n.attr("strides", [1] * rank)), list(n.attr("dilations", [1] * rank))


@importer("Conv")
def _conv(n: _Node):
    """2-D; 1-D (N x C x L: audio encoders, temporal models) as 2-D over N x C x 1 x L
    with a 1 x K window, the weights reshaped to O x C x 1 x K (folded at import), so
    every conv schedule (NCHW4c, images, Winograd does not apply to 1-row windows) serves it."""
    x, xs, w, ws, rank, strides, dil = _conv_operands(n, "convolutions")
    if not len(strides) == len(dil) == rank:
        n.fail(f"strides {strides} and dilations {dil} must have {rank} values")
    pads = _explicit_pads(n, xs[2:], ws[2:], strides, dil)
    b = n.input(2) if n.has_input(2) else None
    t = n.out_type()
    if rank == 2:
        return _emit(n, graph.Conv2dOp(x, w, b, t, strides, pads, dil, n.attr("group", 1)))
    ts = graph.shape_of(t)
    x = _emit(n, graph.ReshapeOp(operands=[x], result_types=[TensorType(f32, [*xs[:2], 1, xs[2]])]))
    w = _emit(n, graph.ReshapeOp(operands=[w], result_types=[TensorType(f32, [*ws[:2], 1, ws[2]])]))
    y = _emit(n, graph.Conv2dOp(x, w, b, TensorType(f32, [*ts[:2], 1, ts[2]]), [1, *strides],
                                [0, pads[0], 0, pads[1]], [1, *dil], n.attr("group", 1)))
    return _emit(n, graph.ReshapeOp(operands=[y], result_types=[t]))


@importer("BatchNormalization")
def _bn(n: _Node):
    if n.attr("training_mode", 0):
        n.fail("training-mode batch normalization is not supported; export the model in eval mode")
    if len([o for o in n.proto.output if o]) > 1:
        n.fail("batch normalization with running-statistics outputs is not supported")
    params = [n.proto.input[i] if n.has_input(i) else "" for i in range(1, 5)]
    if not all(p in n.imp.consts for p in params):
        return _bn_runtime_params(n)
    ops = [n.input(i) for i in range(5)]
    return _emit(n, graph.BatchNormOp(
        operands=ops, result_types=[n.out_type()],
        properties={"epsilon": graph.f32_attr(n.attr("epsilon", 1e-5))}))


def _bn_runtime_params(n: _Node):
    """Batch norm whose scale/bias/mean/var are computed at run time (so fold-batchnorm
    cannot fold them): y = scale * (x - mean) / sqrt(var + eps) + bias, in the order
    ONNX's reference computes it, with the per-channel vectors shaped to broadcast
    over axis 1."""
    x = n.input(0)
    xs = graph.shape_of(x)
    if len(xs) < 2:
        n.fail(f"the input must have a channel axis, got shape {list(xs)}")
    c, t = xs[1], n.out_type()
    pshape = [c] + [1] * (len(xs) - 2)
    ptype = TensorType(f32, pshape)

    def per_channel(i: int) -> SSAValue:
        v = n.input(i)
        if graph.shape_of(v) != (c,):
            n.fail(f"input {i} must have shape [{c}], got {list(graph.shape_of(v))}")
        if len(pshape) == 1:
            return v
        return _emit(n, graph.ReshapeOp(operands=[v], result_types=[ptype]))

    scale, bias, mean, var = (per_channel(i) for i in range(1, 5))
    eps = np.full([1] * len(pshape), n.attr("epsilon", 1e-5), np.float32)
    eps_v = n.imp.constant(f"{n.name}_epsilon", eps, n)
    std = _emit(n, graph.SqrtOp(_emit(n, graph.AddOp(var, eps_v, ptype))))
    centered = _emit(n, graph.SubOp(x, mean, t))
    scaled = _emit(n, graph.MulOp(centered, scale, t))
    return _emit(n, graph.AddOp(_emit(n, graph.DivOp(scaled, std, t)), bias, t))


def _pool_props(n: _Node, with_dilations: bool) -> dict:
    """Properties of a 2-D pool; a 1-D pool (N x C x L input) is imported as a 2-D one
    over N x C x 1 x L (see `_pool`)."""
    xs = graph.shape_of(n.input(0))
    if len(xs) not in (3, 4):
        n.fail(f"only 1-D and 2-D pooling (3-D NCL / 4-D NCHW inputs) is supported, got {list(xs)}")
    rank = len(xs) - 2
    k = list(n.attr("kernel_shape"))
    s = list(n.attr("strides", [1] * rank))
    d = list(n.attr("dilations", [1] * rank))
    if not len(k) == len(s) == len(d) == rank:
        n.fail(f"kernel_shape {k}, strides {s} and dilations {d} must have {rank} values")
    if not with_dilations and d != [1] * rank:
        n.fail("dilated average pooling is not supported")
    pads = _explicit_pads(n, xs[2:], k, s, d)
    if rank == 1:
        k, s, d, pads = [1] + k, [1] + s, [1] + d, [0, pads[0], 0, pads[1]]
    props = {
        "kernel_shape": graph.i64_array(k),
        "strides": graph.i64_array(s),
        "pads": graph.i64_array(pads),
        "ceil_mode": graph.IntegerAttr(n.attr("ceil_mode", 0), 64),
    }
    if with_dilations:
        props["dilations"] = graph.i64_array(d)
    return props


def _pool(n: _Node, op_type, props: dict):
    x, t = n.input(0), n.out_type()
    xs, ts = graph.shape_of(x), graph.shape_of(t)
    k, s, p = graph.ints(props["kernel_shape"]), graph.ints(props["strides"]), graph.ints(props["pads"])
    d = graph.ints(props["dilations"]) if "dilations" in props else (1, 1)
    ceil = bool(props["ceil_mode"].value.data)
    spatial = [graph.pool_out_dim(([1] + list(xs[2:]))[-2:][i], k[i], s[i], p[i], p[i + 2], d[i], ceil)
               for i in range(2)]
    if list(ts[2:]) != spatial[2 - len(ts[2:]):]:
        n.fail(f"ONNX shape inference gives output shape {list(ts)}, but the pooling computes "
               f"{[*ts[:2], *spatial[2 - len(ts[2:]):]]} (with ceil_mode, a last window that would "
               "start in the end padding is dropped, as in onnxruntime and ONNX's reference); "
               "the model's shapes cannot be trusted")
    if len(xs) == 4:
        return _emit(n, op_type(operands=[x], result_types=[t], properties=props))
    x4 = _emit(n, graph.ReshapeOp(operands=[x], result_types=[TensorType(f32, [*xs[:2], 1, xs[2]])]))
    y4 = _emit(n, op_type(operands=[x4], result_types=[TensorType(f32, [*ts[:2], 1, ts[2]])],
                          properties=props))
    return _emit(n, graph.ReshapeOp(operands=[y4], result_types=[t]))


@importer("MaxPool")
def _maxpool(n: _Node):
    if len([o for o in n.proto.output if o]) > 1:
        n.fail("MaxPool with an Indices output is not supported")
    if n.attr("storage_order", 0):
        n.fail("MaxPool storage_order = 1 is not supported")
    return _pool(n, graph.MaxPoolOp, _pool_props(n, True))


@importer("AveragePool")
def _avgpool(n: _Node):
    props = _pool_props(n, False)
    props["count_include_pad"] = graph.IntegerAttr(n.attr("count_include_pad", 0), 64)
    return _pool(n, graph.AvgPoolOp, props)


@importer("GlobalAveragePool")
def _gap(n: _Node):
    return _emit(n, graph.GlobalAvgPoolOp(operands=[n.input(0)], result_types=[n.out_type()]))


_REDUCE = {
    "ReduceMean": graph.ReduceMeanOp, "ReduceSum": graph.ReduceSumOp, "ReduceMax": graph.ReduceMaxOp,
    "ReduceMin": graph.ReduceMinOp, "ReduceProd": graph.ReduceProdOp, "ReduceL1": graph.ReduceL1Op,
    "ReduceL2": graph.ReduceL2Op, "ReduceSumSquare": graph.ReduceSumSquareOp, "ReduceLogSum": graph.ReduceLogSumOp,
    "ReduceLogSumExp": graph.ReduceLogSumExpOp,
}

_REDUCE_OF_ONE_IS_ITSELF = {"mean", "sum", "max", "min", "prod"}
"""Kinds whose reduction of a single element is that element: with noop_with_empty_axes
and no axes the node is its input. The others (L1, L2, SumSquare, LogSum, LogSumExp)
still transform each element (|x|, x * x, log x ...), as onnxruntime and ONNX's
reference do: a `graph.reduce_*` over no axes."""


@importer(*_REDUCE)
def _reduce(n: _Node):
    """Axes come from the `axes` attribute (ReduceSum before opset 13, the others before
    18) or the constant second input; absent or empty axes mean all axes, or none with
    noop_with_empty_axes."""
    op_type, cls = n.proto.op_type, _REDUCE[n.proto.op_type]
    x = n.input(0)
    rank = len(graph.shape_of(x))
    axes = n.attr("axes")
    if axes is None and n.has_input(1):
        axes = n.const_input(1, f"{op_type} axes").reshape(-1).tolist()
    axes = list(axes or [])
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            if cls.KIND in _REDUCE_OF_ONE_IS_ITSELF:
                return x
        else:
            axes = list(range(rank))
    bad = [a for a in axes if not -rank <= a < rank]
    if bad:
        n.fail(f"axes {bad} are out of range for an input of rank {rank}")
    if len({a % rank for a in axes}) != len(axes):
        n.fail(f"axes {axes} name an axis twice")
    axes = sorted(a % rank for a in axes)
    return _emit(n, cls(operands=[x], result_types=[n.out_type()], properties={
        "axes": graph.i64_array(axes), "keepdims": graph.IntegerAttr(n.attr("keepdims", 1), 64)}))


def _reshaped_shape(n: _Node, xs: tuple[int, ...]) -> list[int]:
    """The result shape Flatten/Reshape/Squeeze/Unsqueeze compute from their
    (constant) parameters, independent of the shape the model declares."""
    op, rank = n.proto.op_type, len(xs)
    if op == "Flatten":
        axis = n.attr("axis", 1)
        axis = axis + rank if axis < 0 else axis
        return [math.prod(xs[:axis]), math.prod(xs[axis:])]
    if op == "Reshape":
        if _opset(n) < 5:
            shape = list(n.attr("shape"))
        else:
            shape = n.const_input(1, "Reshape shape").reshape(-1).tolist()
        allowzero = n.attr("allowzero", 0)
        out = [xs[i] if d == 0 and not allowzero else d for i, d in enumerate(shape)]
        if out.count(-1) == 1:
            known = math.prod(d for d in out if d != -1)
            out[out.index(-1)] = math.prod(xs) // known if known else 0
        return out
    if _opset(n) < 13:
        axes = n.attr("axes")
    else:
        axes = n.const_input(1, f"{op} axes").reshape(-1).tolist() if n.has_input(1) else None
    if op == "Squeeze":
        if axes is None:
            return [d for d in xs if d != 1]
        drop = {a % rank for a in axes}
        return [d for i, d in enumerate(xs) if i not in drop]
    out_rank = rank + len(axes)
    ones = {a % out_rank for a in axes}
    it = iter(xs)
    return [1 if i in ones else next(it) for i in range(out_rank)]


@importer("Flatten", "Reshape", "Squeeze", "Unsqueeze")
def _reshape(n: _Node):
    x = n.input(0)
    t = n.out_type()
    want = _reshaped_shape(n, graph.shape_of(x))
    if list(graph.shape_of(t)) != want:
        n.fail(f"the model declares shape {list(graph.shape_of(t))} for '{n.proto.output[0]}', "
               f"but the node computes {want}")
    if x.type == t:
        return x
    return _emit(n, graph.ReshapeOp(operands=[x], result_types=[t]))


@importer("Identity")
def _identity(n: _Node):
    return n.input(0)


@importer("Cast", "CastLike")
def _cast(n: _Node):
    """Casts between the element types computed at run time, all held as float32 (casts of
    constants were folded before this): float32 -> float32 (what exporters and ONNX's
    function bodies write around mixed-precision code), integer -> float32, bool -> any,
    and integer -> integer (int32 <-> int64: the values are below 2**24) are the tensor
    itself; float32 -> int32/int64 truncates toward zero (`graph.trunc`, as onnxruntime
    and numpy convert in-range values); anything -> bool is "not 0" (`graph.to_bool`).
    Other target types (float16, float64, int8, ...) are refused."""
    if n.proto.op_type == "Cast":
        to = n.attr("to")
    else:
        like = n.imp.onnx_types.get(n.proto.input[1])
        to = like.elem_type if like is not None else None
        if n.proto.input[1] in n.imp.consts:
            to = onnx.helper.np_dtype_to_tensor_dtype(n.imp.consts[n.proto.input[1]].dtype)
    source = n.imp.onnx_types.get(n.proto.input[0])
    from_bool = source is not None and source.elem_type == onnx.TensorProto.BOOL
    if to == onnx.TensorProto.BOOL:  # not 0 -> 1 (a mask stays a mask)
        return n.input(0) if from_bool else _emit(n, graph.ToBoolOp(n.input(0), n.out_type()))
    if to not in (onnx.TensorProto.FLOAT, *INDEX_INPUT_TYPES):
        name = onnx.TensorProto.DataType.Name(to) if to is not None else "an unknown type"
        n.fail(f"casts a computed tensor to {name}; only float32, bool, int32 and int64 tensors are computed at run "
               "time (casts of constants and shape arithmetic fold at import)")
    if to in INDEX_INPUT_TYPES and source is not None and source.elem_type == onnx.TensorProto.FLOAT:
        return _emit(n, graph.TruncOp(n.input(0), n.out_type()))  # 2.7 -> 2, -2.7 -> -2
    # float32 -> float32, a bool mask -> its 0/1 floats, integers -> their float-held values
    return n.input(0)


@importer("Transpose")
def _transpose(n: _Node):
    x = n.input(0)
    rank = len(graph.shape_of(x))
    perm = list(n.attr("perm", list(range(rank))[::-1]))
    if perm == list(range(rank)):
        return x
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
    if _opset(n) < 10:  # Slice-1: starts/ends/axes are attributes, no steps
        starts, ends = list(n.attr("starts")), list(n.attr("ends"))
        axes = list(n.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = n.const_input(1, "Slice starts").tolist()
        ends = n.const_input(2, "Slice ends").tolist()
        axes = n.const_input(3, "Slice axes").tolist() if n.has_input(3) else list(range(len(starts)))
        steps = n.const_input(4, "Slice steps").tolist() if n.has_input(4) else [1] * len(starts)
    full_starts, full_steps = [0] * len(shape), [1] * len(shape)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= len(shape)
        if st == 0:
            n.fail(f"steps {steps} must be non-zero")
        # ONNX clamps a start to [0, dim - 1] for negative steps (Python's slice to -1,
        # an empty range: starts = -100 on an axis of 5 reads element 0 in ONNX).
        begin = s + shape[a] if s < 0 else s
        begin = min(max(begin, 0), shape[a] if st > 0 else shape[a] - 1)
        full_starts[a], full_steps[a] = begin, st
    t = n.out_type()
    if t == x.type and all(s == 0 for s in full_starts) and all(s == 1 for s in full_steps):
        return x
    return _emit(n, graph.SliceOp(operands=[x], result_types=[t], properties={
        "starts": graph.i64_array(full_starts), "steps": graph.i64_array(full_steps)}))


# ------------------------------------------------------------------ data movement: Pad, Split, Expand, Tile, ...


def _checked(n: _Node, op):
    """Emit `op` after running its verifier, so an invalid node fails here naming the
    node (reflect pads too large, a crop that leaves nothing, ...)."""
    from xdsl.utils.exceptions import VerifyException

    try:
        op.verify_shapes()
    except VerifyException as e:
        n.fail(str(e))
    return _emit(n, op)


@importer("Pad")
def _pad(n: _Node):
    x = n.input(0)
    rank = len(graph.shape_of(x))
    mode = _str_attr(n, "mode", "constant")
    if _opset(n) < 11:  # Pad-1 (`paddings`) and Pad-2 (`pads`): attributes, every axis
        pads = list(n.attr("pads", n.attr("paddings", [])))
        value, axes = float(n.attr("value", 0.0)), list(range(rank))
    else:
        pads = n.const_input(1, "Pad pads").reshape(-1).astype(np.int64).tolist()
        value = 0.0
        if n.has_input(2):
            v = np.asarray(n.const_input(2, "Pad constant_value")).reshape(-1)
            value = float(v[0]) if v.size else 0.0
        axes = n.const_input(3, "Pad axes").reshape(-1).tolist() if n.has_input(3) else list(range(rank))
    if mode not in graph.PadOp.MODES:
        n.fail(f"mode '{mode}' is not supported (supported: {', '.join(graph.PadOp.MODES)})")
    if len(pads) != 2 * len(axes):
        n.fail(f"pads {pads} must have two values (begin, end) per padded axis {axes}")
    if any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        n.fail(f"axes {axes} must be distinct and in [-{rank}, {rank})")
    full = [0] * (2 * rank)
    for i, a in enumerate(axes):
        full[a % rank], full[rank + a % rank] = pads[i], pads[len(axes) + i]
    if not any(full):
        return x
    return _checked(n, graph.PadOp(operands=[x], result_types=[n.out_type()], properties={
        "pads": graph.i64_array(full), "mode": StringAttr(mode), "value": graph.f32_attr(value)}))


def _slice_along(n: _Node, x: SSAValue, axis: int, start: int, size: int) -> SSAValue:
    """`size` elements of `x` from `start` along `axis` (x itself when that is all of it)."""
    shape = graph.shape_of(x)
    if size == shape[axis]:
        return x
    starts = [0] * len(shape)
    starts[axis] = start
    out = TensorType(f32, [*shape[:axis], size, *shape[axis + 1:]])
    return _emit(n, graph.SliceOp(operands=[x], result_types=[out], properties={
        "starts": graph.i64_array(starts), "steps": graph.i64_array([1] * len(shape))}))


@importer("Split")
def _split(n: _Node):
    """Split is a slice per output (outputs nobody reads are erased by graph-canonicalize)."""
    x = n.input(0)
    shape = graph.shape_of(x)
    rank, count = len(shape), len(n.proto.output)
    axis = n.attr("axis", 0)
    if not -rank <= axis < rank:
        n.fail(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    dim = shape[axis]
    if n.has_input(1):  # Split-13 (and Split-1's optional input)
        sizes = n.const_input(1, "Split split").reshape(-1).astype(np.int64).tolist()
    elif n.attr("split") is not None:  # Split-1/2/11
        sizes = list(n.attr("split"))
    else:
        parts = n.attr("num_outputs", count)  # Split-18; before it, one part per output
        if parts != count:
            n.fail(f"num_outputs = {parts} but the node has {count} outputs")
        chunk = -(-dim // parts)  # ONNX: equal parts of ceil(dim / n), the last one smaller
        sizes = [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
        if _opset(n) < 18 and dim % parts:
            n.fail(f"axis {axis} of size {dim} cannot be split into {parts} equal parts")
    if len(sizes) != count or sum(sizes) != dim or min(sizes) < 0:
        n.fail(f"split sizes {sizes} must be {count} non-negative sizes that add up to {dim} (axis {axis})")
    if 0 in sizes:
        n.fail(f"split sizes {sizes} give an output with no elements; empty tensors are not supported")
    starts = np.cumsum([0, *sizes[:-1]]).tolist()
    return [_slice_along(n, x, axis, s, size) for s, size in zip(starts, sizes)]


@importer("Expand")
def _expand(n: _Node):
    x = n.input(0)
    xs = graph.shape_of(x)
    shape = n.const_input(1, "Expand shape").reshape(-1).astype(np.int64).tolist()
    from xdsl.utils.exceptions import VerifyException

    try:
        out = graph.broadcast_shapes(xs, shape)
    except VerifyException:
        n.fail(f"input shape {list(xs)} cannot be expanded to {shape} (numpy broadcasting)")
    return _broadcast_to(n, x, out)


def _broadcast_to(n: _Node, x: SSAValue, out) -> SSAValue:
    """`x` broadcast to `out`: itself, a reshape when no element repeats (only leading
    1s are added), else a `graph.expand` copy."""
    t = TensorType(f32, list(out))
    if x.type == t:
        return x
    if math.prod(out) == math.prod(graph.shape_of(x)):
        return _emit(n, graph.ReshapeOp(operands=[x], result_types=[t]))
    return _emit(n, graph.ExpandOp(operands=[x], result_types=[t]))


@importer("Tile")
def _tile(n: _Node):
    """Tile is a broadcast: x reshaped to [1, d] on each repeated axis, expanded to
    [r, d] and reshaped to [r * d] (reshapes are free; one copy kernel)."""
    if _opset(n) < 6:
        n.fail(f"Tile from opset {_opset(n)} (inputs tiles and axis) is not supported; use opset 6 or later")
    x = n.input(0)
    xs = graph.shape_of(x)
    reps = n.const_input(1, "Tile repeats").reshape(-1).astype(np.int64).tolist()
    if len(reps) != len(xs) or min(reps) < 0:
        n.fail(f"repeats {reps} must be one non-negative count per axis of the input {list(xs)}")
    if 0 in reps:
        n.fail(f"repeats {reps} give a result with no elements; empty tensors are not supported")
    split, wide = [], []
    for d, r in zip(xs, reps):
        if r == 1 or d == 1:
            split.append(d)
            wide.append(d * r)
        else:
            split += [1, d]
            wide += [r, d]
    y = x
    if list(split) != list(xs):
        y = _emit(n, graph.ReshapeOp(operands=[x], result_types=[TensorType(f32, split)]))
    y = _broadcast_to(n, y, wide)
    t = TensorType(f32, [d * r for d, r in zip(xs, reps)])
    return y if y.type == t else _emit(n, graph.ReshapeOp(operands=[y], result_types=[t]))


def _reshape_transpose_reshape(n: _Node, x: SSAValue, tmp, perm, final) -> SSAValue:
    """ONNX's own definition of DepthToSpace / SpaceToDepth: a 6-D view, a transpose, a 4-D view."""
    v = _emit(n, graph.ReshapeOp(operands=[x], result_types=[TensorType(f32, list(tmp))]))
    tshape = [tmp[p] for p in perm]
    v = _emit(n, graph.TransposeOp(operands=[v], result_types=[TensorType(f32, tshape)],
                                   properties={"perm": graph.i64_array(perm)}))
    return _emit(n, graph.ReshapeOp(operands=[v], result_types=[TensorType(f32, list(final))]))


def _block_args(n: _Node) -> tuple[tuple[int, ...], int, str]:
    x = graph.shape_of(n.input(0))
    if len(x) != 4:
        n.fail(f"the input must be 4-D (N, C, H, W), got {list(x)}")
    bs = n.attr("blocksize")
    if bs is None or bs < 1:
        n.fail(f"blocksize must be a positive integer, got {bs}")
    mode = _str_attr(n, "mode", "DCR")
    if mode not in ("DCR", "CRD"):
        n.fail(f"mode '{mode}' is not supported (supported: DCR, CRD)")
    return x, bs, mode


@importer("DepthToSpace")
def _depth_to_space(n: _Node):
    (b, c, h, w), bs, mode = _block_args(n)
    if c % (bs * bs):
        n.fail(f"{c} channels are not a multiple of blocksize^2 = {bs * bs}")
    if mode == "DCR":
        tmp, perm = (b, bs, bs, c // (bs * bs), h, w), [0, 3, 4, 1, 5, 2]
    else:
        tmp, perm = (b, c // (bs * bs), bs, bs, h, w), [0, 1, 4, 2, 5, 3]
    return _reshape_transpose_reshape(n, n.input(0), tmp, perm, (b, c // (bs * bs), h * bs, w * bs))


@importer("SpaceToDepth")
def _space_to_depth(n: _Node):
    (b, c, h, w), bs, mode = _block_args(n)
    if h % bs or w % bs:
        n.fail(f"height {h} and width {w} must be multiples of blocksize {bs}")
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    return _reshape_transpose_reshape(n, n.input(0), (b, c, h // bs, bs, w // bs, bs), perm,
                                      (b, c * bs * bs, h // bs, w // bs))


def _str_attr(n: _Node, key: str, default: str) -> str:
    v = n.attr(key, default)
    return v.decode() if isinstance(v, bytes) else v


def _opset(n: _Node) -> int:
    for o in n.imp.model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return onnx.defs.onnx_opset_version()


@importer("Resize")
def _resize(n: _Node):
    x = n.input(0)
    xs = graph.shape_of(x)
    if _opset(n) < 11:
        n.fail(f"Resize from opset {_opset(n)} (before 11, inputs X and scales) is not supported; "
               "export the model with opset 11 or later")
    mode = _str_attr(n, "mode", "nearest")
    coord = _str_attr(n, "coordinate_transformation_mode", "half_pixel")
    nearest = _str_attr(n, "nearest_mode", "round_prefer_floor")
    policy = _str_attr(n, "keep_aspect_ratio_policy", "stretch")
    if mode not in graph.ResizeOp.MODES:
        n.fail(f"mode '{mode}' is not supported (supported: {', '.join(graph.ResizeOp.MODES)})")
    if coord not in graph.ResizeOp.COORDS:
        n.fail(f"coordinate_transformation_mode '{coord}' is not supported "
               f"(supported: {', '.join(graph.ResizeOp.COORDS)})")
    if mode == "nearest" and nearest not in graph.ResizeOp.NEAREST:
        n.fail(f"nearest_mode '{nearest}' is not supported "
               f"(supported: {', '.join(graph.ResizeOp.NEAREST)})")
    if n.attr("antialias", 0):
        n.fail("antialias = 1 is not supported")
    exclude_outside = int(n.attr("exclude_outside", 0))
    if exclude_outside and mode == "nearest":
        # (for linear taps, excluding outside pixels equals the edge clamp we do)
        n.fail(f"exclude_outside = 1 is not supported with mode '{mode}'")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        n.fail(f"keep_aspect_ratio_policy '{policy}' is not supported")
    if len(xs) != 4:
        n.fail(f"only 4-D NCHW inputs are supported, got {list(xs)}")
    rank = len(xs)
    axes = n.attr("axes")
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    scales = n.const_input(2, "Resize scales").astype(float).reshape(-1).tolist() if n.has_input(2) else []
    sizes = n.const_input(3, "Resize sizes").astype(int).reshape(-1).tolist() if n.has_input(3) else []
    full_scales: list[float] | None = None
    if scales:
        if len(scales) != len(axes):
            n.fail(f"scales {scales} must have one value per axis {axes}")
        full_scales = [1.0] * rank
        for a, sc in zip(axes, scales):
            full_scales[a] = sc
    elif sizes:
        if len(sizes) != len(axes):
            n.fail(f"sizes {sizes} must have one value per axis {axes}")
        if policy != "stretch":
            ratios = [sz / xs[a] for a, sz in zip(axes, sizes)]
            sc = min(ratios) if policy == "not_larger" else max(ratios)
            full_scales = [sc if a in axes else 1.0 for a in range(rank)]
    else:
        n.fail("needs constant scales or sizes")
    out = graph.shape_of(n.out_type())
    if out[:2] != xs[:2] or (full_scales is not None and full_scales[:2] != [1.0, 1.0]):
        n.fail(f"only the spatial axes (2 and 3) of an NCHW tensor can be resized: {list(xs)} -> {list(out)}")
    props = {
        "mode": StringAttr(mode),
        "coordinate_transformation_mode": StringAttr(coord),
        "nearest_mode": StringAttr(nearest),
    }
    if mode == "cubic":
        props["cubic_coeff_a"] = graph.f32_attr(n.attr("cubic_coeff_a", -0.75))
        props["exclude_outside"] = IntegerAttr(exclude_outside, 64)
    if full_scales is not None:
        props["scales"] = ArrayAttr([FloatAttr(sc, f32) for sc in full_scales])
    return _emit(n, graph.ResizeOp(operands=[x], result_types=[n.out_type()], properties=props))


@importer("Softmax", "LogSoftmax")
def _softmax(n: _Node):
    x = n.input(0)
    rank = len(graph.shape_of(x))
    op_class = graph.LogSoftmaxOp if n.proto.op_type == "LogSoftmax" else graph.SoftmaxOp
    if _opset(n) < 13:
        # Softmax-1/11: the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])]
        # and normalised over the second dimension; default axis 1.
        xs = graph.shape_of(x)
        axis = n.attr("axis", 1) % rank if rank else 0
        inner = math.prod(xs[axis:])
        if inner == xs[-1]:  # dims after the last axis are all 1: same as axis = -1
            return _emit(n, op_class(operands=[x], result_types=[x.type],
                                     properties={"axis": graph.IntegerAttr(rank - 1, 64)}))
        t2 = TensorType(f32, [math.prod(xs[:axis]), inner])
        x2 = _emit(n, graph.ReshapeOp(operands=[x], result_types=[t2]))
        y2 = _emit(n, op_class(operands=[x2], result_types=[t2],
                               properties={"axis": graph.IntegerAttr(1, 64)}))
        return _emit(n, graph.ReshapeOp(operands=[y2], result_types=[x.type]))
    axis = n.attr("axis", -1) % rank
    return _emit(n, op_class(operands=[x], result_types=[x.type],
                             properties={"axis": graph.IntegerAttr(axis, 64)}))


@importer("RMSNormalization")
def _rms_norm(n: _Node):
    """ONNX RMSNormalization (opset 23): x / sqrt(mean(x^2 over [axis, rank)) + epsilon) *
    scale, a `graph.layer_norm {center = 0}`; `stash_type` is float32 here anyway."""
    x = n.input(0)
    rank = len(graph.shape_of(x))
    axis = n.attr("axis", -1)
    if not -rank <= axis < rank:
        n.fail(f"axis {axis} is out of range for an input of rank {rank}")
    return _emit(n, graph.LayerNormOp(
        operands=[x, n.input(1), []], result_types=[n.out_type()],
        properties={"axis": graph.IntegerAttr(axis % rank, 64), "epsilon": graph.f32_attr(float(n.attr("epsilon", 1e-5))),
                    "center": graph.IntegerAttr(0, 64)}))


@importer("LayerNormalization")
def _layer_norm(n: _Node):
    x = n.input(0)
    rank = len(graph.shape_of(x))
    axis = n.attr("axis", -1) % rank
    eps = float(n.attr("epsilon", 1e-5))
    bias = [n.input(2)] if n.has_input(2) else []
    y = _emit(n, graph.LayerNormOp(
        operands=[x, n.input(1), bias], result_types=[n.out_type()],
        properties={"axis": graph.IntegerAttr(axis, 64), "epsilon": graph.f32_attr(eps)}))
    used = [i for i in (1, 2) if len(n.proto.output) > i and n.proto.output[i] and n.imp.is_used(n.proto.output[i])]
    if not used:
        return y
    # The statistics outputs (Mean, InvStdDev; kept for training) are rarely read at
    # inference: when they are, they are computed beside the fused kernel with the ops
    # of ONNX's own function definition (reduce_mean, sub, mul, add, sqrt, div).
    stat_type = n.out_type(1 if 1 in used else 2)
    axes = graph.i64_array(list(range(axis, rank)))
    mean = _emit(n, graph.ReduceMeanOp(operands=[x], result_types=[stat_type], properties={"axes": axes}))
    d = _emit(n, graph.SubOp(x, mean, x.type))
    var = _emit(n, graph.ReduceMeanOp(operands=[_emit(n, graph.MulOp(d, d, x.type))], result_types=[stat_type],
                                      properties={"axes": axes}))
    eps_c = n.imp.constant(f"{n.name}_epsilon", np.full([1] * rank, eps, np.float32), n)
    one = n.imp.constant(f"{n.name}_one", np.ones([1] * rank, np.float32), n)
    inv = _emit(n, graph.DivOp(one, _emit(n, graph.SqrtOp(_emit(n, graph.AddOp(var, eps_c, stat_type)))), stat_type))
    return [y, mean, inv][: max(used) + 1]


@importer("InstanceNormalization")
def _instance_norm(n: _Node):
    """y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c], the statistics per
    (n, c) over the spatial axes: a `graph.layer_norm` over axes [2, rank) with scale 1
    (its kernel normalises contiguous rows, which each (n, c) plane is), then a multiply
    by `scale` and an add of `bias`, both reshaped to [C, 1, ...] to broadcast over the
    plane. The two element-wise ops fuse into one kernel; constant scale/bias fold at
    graph-canonicalize, computed ones are read as they are."""
    x = n.input(0)
    xs = graph.shape_of(x)
    if len(xs) < 3:
        n.fail(f"the input must be N x C x D1 x ... (rank >= 3), got shape {list(xs)}")
    c, t = xs[1], n.out_type()
    ptype = TensorType(f32, [c] + [1] * (len(xs) - 2))

    def per_channel(i: int, what: str) -> SSAValue:
        v = n.input(i)
        if graph.shape_of(v) != (c,):
            n.fail(f"{what} (input {i}) must have shape [{c}], got {list(graph.shape_of(v))}")
        return _emit(n, graph.ReshapeOp(operands=[v], result_types=[ptype]))

    scale, bias = per_channel(1, "scale"), per_channel(2, "B")
    one = n.imp.constant(f"{n.name}_one", np.ones([1], np.float32), n)
    y = _emit(n, graph.LayerNormOp(
        operands=[x, one, []], result_types=[t],
        properties={"axis": graph.IntegerAttr(2, 64), "epsilon": graph.f32_attr(n.attr("epsilon", 1e-5))}))
    return _emit(n, graph.AddOp(_emit(n, graph.MulOp(y, scale, t)), bias, t))


_SAME_SHAPE_AS_INPUT = {"GroupNormalization"}
"""Ops whose output has their first input's shape and type, but which ONNX's shape
inference leaves without a shape (GroupNormalization-18/21 have no inference function):
shape inference sees an Identity in their place (`_shape_stand_ins`)."""


def _shape_stand_ins(node: onnx.NodeProto, shared_kv: bool = False,
                     init_dims=None) -> tuple[list[onnx.NodeProto], list[onnx.ValueInfoProto]]:
    """`node`, or for shape inference the nodes (and extra typed inputs) that give its
    outputs their shapes: an Identity of the first input for the ops of
    _SAME_SHAPE_AS_INPUT and the RMS normalizations of onnxruntime (one per output),
    a MatMul by a [K, N] input standing for the quantized weights of MatMulNBits."""
    if node.domain in ("", "ai.onnx") and node.input and (
            node.op_type in _SAME_SHAPE_AS_INPUT or node.op_type == "SimplifiedLayerNormalization"):
        return [onnx.helper.make_node("Identity", [node.input[0]], [node.output[0]], name=node.name)], []
    if node.domain == CONTRIB_DOMAIN and node.op_type == "SkipSimplifiedLayerNormalization" and node.input:
        outs = [o for i, o in enumerate(node.output) if o and i in (0, 3)]
        return [onnx.helper.make_node("Identity", [node.input[0]], [o], name=f"{node.name}_{o}") for o in outs], []
    if node.domain == CONTRIB_DOMAIN and node.op_type == "GroupQueryAttention" and len(node.input) > 4:
        return _gqa_stand_ins(node, shared_kv), []
    if node.domain == CONTRIB_DOMAIN and node.op_type == "GatherBlockQuantized" and len(node.input) > 1:
        cols = _gather_block_quantized_table(node, init_dims) if init_dims is not None else None
        if cols is not None:  # a Gather of a float [rows, cols] table standing for the quantized one
            t = f"{node.output[0]}__table_stand_in"
            return ([onnx.helper.make_node("Gather", [t, node.input[1]], [node.output[0]], name=node.name, axis=0)],
                    [onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, list(cols))])
    if node.domain == CONTRIB_DOMAIN and node.op_type == "MatMulNBits" and node.input:
        k, n = _attr(node, "K"), _attr(node, "N")
        if isinstance(k, int) and isinstance(n, int) and k > 0 and n > 0:
            b = f"{node.output[0]}__weights_stand_in"
            return ([onnx.helper.make_node("MatMul", [node.input[0], b], [node.output[0]], name=node.name)],
                    [onnx.helper.make_tensor_value_info(b, onnx.TensorProto.FLOAT, [k, n])])
    return [node], []


def _gather_block_quantized_table(node: onnx.NodeProto, init_dims) -> tuple[int, int] | None:
    """(rows, columns) of GatherBlockQuantized's dequantized table: its uint8 data [rows,
    columns * bits / 8] (an initializer: `init_dims(name)` gives its dims); None where that
    is not so (the importer then says what is wrong)."""
    dims = init_dims(node.input[0])
    bits = _attr(node, "bits", 4)
    if dims is None or len(dims) != 2 or bits not in (4, 8):
        return None
    return int(dims[0]), int(dims[1]) * 8 // bits


def _gqa_stand_ins(node: onnx.NodeProto, shared_kv: bool = False) -> list[onnx.NodeProto]:
    """GroupQueryAttention's output shapes for shape inference: output [B, S, H * D] (the query's
    extent), present_key/value = past (axis 2) + the new keys/values as [B, KVH, S, D], or with
    `shared_kv` (one buffer of the maximum context) the past's shape."""
    h, kvh = _attr(node, "num_heads"), _attr(node, "kv_num_heads")
    q, k, v, past_k, past_v = (node.input[i] if len(node.input) > i else "" for i in range(5))
    p = f"{node.name}__stand_in"
    nodes = []

    def const(name: str, values) -> str:
        nodes.append(onnx.helper.make_node("Constant", [], [f"{p}_{name}"], value=onnx.helper.make_tensor(
            f"{p}_{name}", onnx.TensorProto.INT64, [len(values)], values)))
        return f"{p}_{name}"

    def heads_of(src: str, begin: int, count: int, total: int, out: str) -> str:
        """[B, S, count, D]: heads [begin, begin + count) of [B, S, total * D] (a Split's part)."""
        split = f"{p}_{out}_split"
        nodes.append(onnx.helper.make_node("Reshape", [src, const(f"{out}_heads", [0, 0, total, -1])], [split]))
        nodes.append(onnx.helper.make_node("Slice", [split, const(f"{out}_b", [begin]), const(f"{out}_e", [begin + count]),
                                                     const(f"{out}_a", [2])], [f"{p}_{out}"]))
        return f"{p}_{out}"

    outs = list(node.output) + [""] * 3
    if k:  # separate query [B, S, H * D], key and value [B, S, KVH * D]
        query = q
        key = heads_of(k, 0, kvh, kvh, "k")
        value = heads_of(v, 0, kvh, kvh, "v")
    else:  # packed [B, S, (H + 2 KVH) * D]
        total = h + 2 * kvh
        qh = heads_of(q, 0, h, total, "q")
        query = f"{p}_query"
        nodes.append(onnx.helper.make_node("Reshape", [qh, const("q_flat", [0, 0, -1])], [query]))
        key = heads_of(q, h, kvh, total, "k")
        value = heads_of(q, h + kvh, kvh, total, "v")
    if outs[0]:
        nodes.append(onnx.helper.make_node("Identity", [query], [outs[0]]))
    for new, past, out in ((key, past_k, outs[1]), (value, past_v, outs[2])):
        if out and shared_kv:
            nodes.append(onnx.helper.make_node("Identity", [past], [out]))
        elif out:
            moved = f"{p}_{out}_moved"
            nodes.append(onnx.helper.make_node("Transpose", [new], [moved], perm=[0, 2, 1, 3]))
            nodes.append(onnx.helper.make_node("Concat", [past, moved] if past else [moved], [out], axis=2))
    return nodes


@importer("GroupNormalization")
def _group_norm(n: _Node):
    """y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c], the statistics per
    (n, group of C / num_groups channels): x reshaped to [N, G, C / G * D1 * ...] (each
    group's channels are contiguous), a `graph.layer_norm` over axis 2 with scale 1,
    reshaped back, then a multiply by `scale` and an add of `bias` reshaped to [C, 1, ...],
    as InstanceNormalization. GroupNormalization-21 has one scale/bias per channel; the
    deprecated GroupNormalization-18 one per group, repeated here over the group's
    channels. stash_type (21) only names the precision of the statistics: float32 here."""
    x = n.input(0)
    xs = graph.shape_of(x)
    if len(xs) < 2:
        n.fail(f"the input must be N x C x D1 x ... (rank >= 2), got shape {list(xs)}")
    groups = n.attr("num_groups")
    c, t = xs[1], n.out_type()
    if groups is None or groups <= 0 or c % groups:
        n.fail(f"num_groups = {groups} must be positive and divide the {c} channels")
    per_group = _opset(n) < 21
    want = groups if per_group else c
    ptype = TensorType(f32, [c] + [1] * (len(xs) - 2))

    def per_channel(i: int, what: str) -> SSAValue:
        v = n.input(i)
        if graph.shape_of(v) != (want,):
            n.fail(f"{what} (input {i}) must have shape [{want}] (one value per "
                   f"{'group' if per_group else 'channel'} at opset {_opset(n)}), got {list(graph.shape_of(v))}")
        if per_group and groups != c:  # [G] -> [G, 1] -> [G, C / G] -> [C]
            v = _emit(n, graph.ReshapeOp(operands=[v], result_types=[TensorType(f32, [groups, 1])]))
            v = _broadcast_to(n, v, [groups, c // groups])
        return _emit(n, graph.ReshapeOp(operands=[v], result_types=[ptype]))

    scale, bias = per_channel(1, "scale"), per_channel(2, "bias")
    grouped = TensorType(f32, [xs[0], groups, math.prod(xs[1:]) // groups])
    xg = _emit(n, graph.ReshapeOp(operands=[x], result_types=[grouped]))
    one = n.imp.constant(f"{n.name}_one", np.ones([1], np.float32), n)
    yg = _emit(n, graph.LayerNormOp(
        operands=[xg, one, []], result_types=[grouped],
        properties={"axis": graph.IntegerAttr(2, 64), "epsilon": graph.f32_attr(n.attr("epsilon", 1e-5))}))
    y = _emit(n, graph.ReshapeOp(operands=[yg], result_types=[t]))
    return _emit(n, graph.AddOp(_emit(n, graph.MulOp(y, scale, t)), bias, t))


def run_time_lookup(n: _Node, x: SSAValue, axis: int) -> SSAValue:
    """Rows of `x` along `axis` at the run-time indices of n's input 1: `graph.take` on the
    i32 ids of an integer model input (through reshapes of it; the runtime checks each id
    against the table), or on float-held integers computed on device, which the kernel keeps
    inside the table itself."""
    shape = graph.shape_of(x)
    ids = n.imp.int_aliases.get(n.proto.input[1], n.proto.input[1])
    if ids not in n.imp.int_inputs:  # integers computed on device
        return _emit(n, graph.TakeOp(operands=[x, n.input(1)], result_types=[n.out_type()],
                                     properties={"axis": graph.IntegerAttr(axis, 64)}))
    n.imp.index_bounds[ids] = min(n.imp.index_bounds.get(ids, shape[axis]), shape[axis])
    indices = n.imp.int_args[ids]
    out = n.out_type()
    if ids == n.proto.input[1]:
        return _emit(n, graph.TakeOp(operands=[x, indices], result_types=[out],
                                     properties={"axis": graph.IntegerAttr(axis, 64)}))
    # the ids were reshaped first: look them up as given, then reshape the rows
    taken = TensorType(f32, [*shape[:axis], *graph.shape_of(indices), *shape[axis + 1:]])
    rows = _emit(n, graph.TakeOp(operands=[x, indices], result_types=[taken],
                                 properties={"axis": graph.IntegerAttr(axis, 64)}))
    return rows if taken == out else _emit(n, graph.ReshapeOp(operands=[rows], result_types=[out]))


@importer("Gather")
def _gather(n: _Node):
    """Constant indices: `graph.gather`. Run-time ones: `graph.take`, on the i32 ids of
    an integer model input (through reshapes of it; the runtime checks each id against
    the table), or on float-held integers computed on device (position ids), which the
    kernel keeps inside the table itself (graph.TakeOp)."""
    x = n.input(0)
    shape = graph.shape_of(x)
    axis = n.attr("axis", 0) % len(shape)
    ids = n.imp.int_aliases.get(n.proto.input[1], n.proto.input[1])
    if ids in n.imp.int_inputs or ids not in n.imp.consts:
        return run_time_lookup(n, x, axis)
    idx = np.asarray(n.const_input(1, "Gather indices"))
    if idx.dtype.kind not in "iu":
        n.fail(f"indices have element type {idx.dtype}; ONNX Gather takes int32 or int64 indices")
    flat = idx.reshape(-1).astype(np.int64)
    bad = flat[(flat < -shape[axis]) | (flat >= shape[axis])]
    if bad.size:
        n.fail(f"indices {bad[:8].tolist()} are outside [-{shape[axis]}, {shape[axis]}) along axis {axis}")
    if flat.size == 0:
        n.fail("indices are empty: the result would have no elements; empty tensors are not supported")
    flat = np.where(flat < 0, flat + shape[axis], flat)
    return _emit(n, graph.GatherOp(operands=[x], result_types=[n.out_type()], properties={
        "axis": graph.IntegerAttr(axis, 64), "indices": graph.i64_array(flat.tolist()),
        "indices_shape": graph.i64_array(list(idx.shape))}))


@importer("GatherElements")
def _gather_elements(n: _Node):
    """out[..., j, ...] = data[..., indices[..., j, ...], ...] along `axis`: a gather from
    the data viewed as one row, of the flat index of each element. Constant indices are
    checked and become one `graph.gather`; run-time ones (float-held integers) get their
    flat index computed on device (negative ones count from the end) and a `graph.take`,
    which never reads outside the data (an index outside the axis reads another element of
    the data, or its first: ONNX leaves such indices undefined)."""
    x = n.input(0)
    xs = graph.shape_of(x)
    rank = len(xs)
    axis = n.attr("axis", 0)
    if not -rank <= axis < rank:
        n.fail(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    out = n.out_type()
    ishape = graph.shape_of(out)
    if len(ishape) != rank or any(i > d for k, (i, d) in enumerate(zip(ishape, xs)) if k != axis):
        n.fail(f"indices of shape {list(ishape)} do not fit data of shape {list(xs)} along axis {axis}")
    flat_x = _emit(n, graph.ReshapeOp(operands=[x], result_types=[TensorType(f32, [math.prod(xs)])]))
    coords = np.indices(ishape, dtype=np.int64)
    strides = np.array([math.prod(xs[k + 1:]) for k in range(rank)], np.int64).reshape([rank] + [1] * rank)
    if n.proto.input[1] in n.imp.consts:
        idx = np.asarray(n.imp.consts[n.proto.input[1]]).astype(np.int64).reshape(ishape)
        bad = idx[(idx < -xs[axis]) | (idx >= xs[axis])]
        if bad.size:
            n.fail(f"indices {bad[:8].tolist()} are outside [-{xs[axis]}, {xs[axis]}) along axis {axis}")
        coords[axis] = np.where(idx < 0, idx + xs[axis], idx)
        flat = (coords * strides).sum(axis=0)
        return _emit(n, graph.GatherOp(operands=[flat_x], result_types=[out], properties={
            "axis": graph.IntegerAttr(0, 64), "indices": graph.i64_array(flat.reshape(-1).tolist()),
            "indices_shape": graph.i64_array(list(ishape))}))
    idx = n.input(1)
    coords[axis] = 0
    base = n.imp.constant(f"{n.name}_base", (coords * strides).sum(axis=0).astype(np.float32), n)
    extent = n.imp.constant(f"{n.name}_extent", np.full([1] * rank, xs[axis], np.float32), n)
    stride = n.imp.constant(f"{n.name}_stride", np.full([1] * rank, math.prod(xs[axis + 1:]), np.float32), n)
    zero = n.imp.constant(f"{n.name}_zero", np.zeros([1] * rank, np.float32), n)
    negative = _emit(n, graph.LessOp(idx, zero, out))
    wrapped = _emit(n, graph.AddOp(idx, _emit(n, graph.MulOp(negative, extent, out)), out))
    flat = _emit(n, graph.AddOp(_emit(n, graph.MulOp(wrapped, stride, out)), base, out))
    return _emit(n, graph.TakeOp(operands=[flat_x, flat], result_types=[out],
                                 properties={"axis": graph.IntegerAttr(0, 64)}))


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


@importer("Einsum")
def _einsum(n: _Node):
    """Written out in transposes, reshapes, matmuls, multiplies, sums and gathers
    (frontend/einsum.py): no einsum op, so nothing new to lower."""
    eq = _str_attr(n, "equation", "")
    values = [n.input(i) for i in range(len(n.proto.input))]
    try:
        return EinsumBuilder(lambda op: _emit(n, op)).build(eq, values)
    except EinsumError as e:
        n.fail(f"equation '{eq}': {e}")


@importer("ConvTranspose")
def _conv_transpose(n: _Node):
    """2-D; 1-D as 2-D over N x C x 1 x L. Pads come from output_shape when it is given
    (and from auto_pad SAME_*, whose output is input * stride), split as ONNX's spec,
    its reference and onnxruntime split them: SAME_UPPER puts the smaller half first,
    otherwise the larger. An output_shape beyond what the input reaches adds rows at
    the end (output_padding), as onnxruntime does."""
    x, xs, w, ws, rank, strides, dil = _conv_operands(n, "transposed convolutions")
    out_pad = list(n.attr("output_padding", [0] * rank))
    kernel = list(n.attr("kernel_shape", ws[2:]))
    if not len(strides) == len(dil) == len(out_pad) == rank:
        n.fail(f"strides {strides}, dilations {dil} and output_padding {out_pad} must have {rank} values")
    if kernel != list(ws[2:]):
        n.fail(f"kernel_shape {kernel} differs from the weights' window {list(ws[2:])}")
    if min(strides + dil) < 1 or min(out_pad) < 0:
        n.fail(f"strides {strides} and dilations {dil} must be >= 1, output_padding {out_pad} >= 0")
    auto_pad = _str_attr(n, "auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        n.fail(f"auto_pad '{auto_pad}' is not supported")
    natural = [s * (i - 1) + p + (k - 1) * d + 1 for i, s, p, k, d in zip(xs[2:], strides, out_pad, ws[2:], dil)]
    output_shape = n.attr("output_shape")
    if output_shape is None and auto_pad.startswith("SAME"):
        output_shape = [i * s for i, s in zip(xs[2:], strides)]
    if output_shape is not None:
        output_shape = list(output_shape)[-rank:]
        pads = [0] * (2 * rank)
        for i, total in enumerate(a - b for a, b in zip(natural, output_shape)):
            small, large = total // 2, total - total // 2
            if total < 0:
                # An output larger than the input reaches: onnxruntime (and ONNX's reference
                # without auto_pad) put the extra rows at the end; for SAME_* the reference
                # splits them as the spec's formula does, onnxruntime does not.
                if auto_pad.startswith("SAME") and (small if auto_pad == "SAME_UPPER" else large):
                    n.fail(f"output_shape {output_shape} is larger than the input reaches ({natural}) with auto_pad "
                           f"{auto_pad}: ONNX's reference and onnxruntime place the extra rows differently")
                out_pad[i] -= total
            else:
                pads[i], pads[i + rank] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * rank)
    else:
        pads = list(n.attr("pads", [0] * (2 * rank)))
        if len(pads) != 2 * rank or min(pads) < 0:
            n.fail(f"pads {pads} must be {2 * rank} non-negative values for {rank} spatial dimension(s)")
    group = n.attr("group", 1)
    if group < 1 or xs[1] % group or ws[0] != xs[1]:
        n.fail(f"weights {list(ws)} ([C_in, C_out / group, ...]) and group = {group} do not fit an input with "
               f"{xs[1]} channels")
    t = n.out_type()
    computed = [xs[0], ws[1] * group, *[
        graph.conv_transpose_out_dim(xs[2 + i], ws[2 + i], strides[i], pads[i], pads[i + rank], dil[i], out_pad[i])
        for i in range(rank)]]
    if list(graph.shape_of(t)) != computed:
        n.fail(f"ONNX shape inference gives output shape {list(graph.shape_of(t))}, but the node computes "
               f"{computed}")
    if min(computed[2:]) < 1:
        n.fail(f"the output {computed} would have no elements")
    b = [n.input(2)] if n.has_input(2) else []
    if rank == 1:
        strides, dil, out_pad, pads = [1, *strides], [1, *dil], [0, *out_pad], [0, pads[0], 0, pads[1]]
        x = _emit(n, graph.ReshapeOp(operands=[x], result_types=[TensorType(f32, [*xs[:2], 1, xs[2]])]))
        w = _emit(n, graph.ReshapeOp(operands=[w], result_types=[TensorType(f32, [*ws[:2], 1, ws[2]])]))
    t4 = TensorType(f32, [*computed[:2], 1, computed[2]]) if rank == 1 else t
    y = _emit(n, graph.ConvTranspose2dOp(operands=[x, w, b], result_types=[t4], properties={
        "strides": graph.i64_array(strides), "pads": graph.i64_array(pads), "dilations": graph.i64_array(dil),
        "output_padding": graph.i64_array(out_pad), "groups": graph.IntegerAttr(group, 64)}))
    return y if rank == 2 else _emit(n, graph.ReshapeOp(operands=[y], result_types=[t]))


# --------------------------------------------------------------------------- entry point


def _bad_window_attributes(node: onnx.NodeProto) -> str | None:
    """Why a Conv/pool node's window attributes are invalid (strides, dilations, kernel
    sizes < 1, negative pads), or None. ONNX shape inference gives such a node no output
    shape; this names the actual cause."""
    attrs = {a.name: list(a.ints) for a in node.attribute if a.type == onnx.AttributeProto.INTS}
    for key, low in (("strides", 1), ("dilations", 1), ("kernel_shape", 1), ("pads", 0)):
        values = attrs.get(key)
        if values and min(values) < low:
            need = "positive" if low == 1 else "non-negative"
            return f"{key} {values} are invalid: every entry must be {need}"
    return None


def _check_opsets(m: onnx.ModelProto, where: str) -> None:
    """A model whose default-domain opset is newer than the installed onnx knows would be
    read with the wrong operator semantics: refuse it."""
    newest = onnx.defs.onnx_opset_version()
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx") and o.version > newest:
            raise FrontendError(
                f"{where}: the model uses ONNX opset {o.version}, but the newest opset this onnx "
                f"({onnx.__version__}) knows is {newest}; export the model with opset {newest} or older "
                "(or update onnx)")


def load_model(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    """Read an ONNX file with clear errors for missing, truncated or invalid files."""
    if isinstance(model, onnx.ModelProto):
        if not model.graph.node and not model.graph.output:
            raise FrontendError("the ModelProto holds no graph (no nodes, no outputs): an empty "
                                "onnx.ModelProto()?")
        _check_opsets(model, "the ModelProto")
        return model
    if not isinstance(model, (str, Path)):
        raise FrontendError(f"the model must be a path (str or pathlib.Path), an onnx.ModelProto or an "
                            f"imported graph module, not {type(model).__name__}")
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
    _check_opsets(m, str(path))
    try:
        # Checked from the file: given the proto, the checker first serializes it again
        # (0.2 s of ResNet-50's import).
        onnx.checker.check_model(str(path))
    except Exception as e:
        if not _only_onnxruntime_ops(path, e):
            raise FrontendError(f"{path}: invalid ONNX model: {str(e).splitlines()[0]}") from None
    return m


ORT_DEFAULT_DOMAIN_OPS = {"SimplifiedLayerNormalization"}
"""Operators onnxruntime registers in the default ONNX domain that ONNX itself does not
define (onnxruntime-genai's decoders use them); onnx's checker refuses them."""


def _only_onnxruntime_ops(path: Path, error: Exception) -> bool:
    """Whether the checker's `error` is about an op of ORT_DEFAULT_DOMAIN_OPS and the model
    is otherwise valid: checked again with those nodes as Identities (weights not loaded)."""
    import re

    found = re.match(r"No Op registered for (\w+) with domain_version", str(error))
    if not found or found.group(1) not in ORT_DEFAULT_DOMAIN_OPS:
        return False
    light = onnx.load(str(path), load_external_data=False)
    for node in light.graph.node:
        if node.domain in ("", "ai.onnx") and node.op_type in ORT_DEFAULT_DOMAIN_OPS:
            inputs, outputs = node.input[:1], [o for o in node.output[:1]]
            node.Clear()
            node.op_type = "Identity"
            node.input.extend(inputs)
            node.output.extend(outputs)
    # the checker reads no external data of a proto: those weights become typed graph inputs
    external = [i for i in light.graph.initializer if i.data_location == onnx.TensorProto.EXTERNAL]
    kept = [i for i in light.graph.initializer if i.data_location != onnx.TensorProto.EXTERNAL]
    del light.graph.initializer[:]
    light.graph.initializer.extend(kept)
    light.graph.input.extend(onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in external)
    try:
        onnx.checker.check_model(light)
    except Exception as e:  # noqa: BLE001 - another problem: reported as the model's
        raise FrontendError(f"{path}: invalid ONNX model: {str(e).splitlines()[0]}") from None
    return True


def _graph_copy(m: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the graph's nodes, inputs and outputs the importer may rewrite, sharing
    nothing mutable with `m`; without the initializers (read from `m` itself: copying a
    protobuf copies its bytes, 100 MB for ResNet-50)."""
    g = m.graph
    graph = onnx.helper.make_graph(list(g.node), g.name, list(g.input), list(g.output),
                                   initializer=[])
    graph.node.clear()
    for node in g.node:
        graph.node.add().CopyFrom(node)
    return onnx.helper.make_model(graph, opset_imports=list(m.opset_import), ir_version=m.ir_version)


def import_onnx(model: str | Path | onnx.ModelProto, store: WeightStore | None = None, *,
                input_shapes=None, dims=None, decoder=None) -> ModuleOp:
    """Import an ONNX model (path or ModelProto) as a verified `graph`-dialect module.

    input_shapes / dims: static sizes for inputs with dynamic dims ({input: shape},
    {dim_param: size}; adreno_mlir.frontend.shapes), bound in the importer's own copy of
    the graph (the caller's model and its weights are not copied or changed).
    decoder: (DecoderSignature, max_context, tokens) imports an onnxruntime-genai decoder
    in its generation form (adreno_mlir.frontend.decoder.bind_decoder): caches of
    max_context rows written in place, the mask computed from a run-time position."""
    m = load_model(model)
    copy = _graph_copy(m)
    if decoder is not None:
        from adreno_mlir.frontend.decoder import bind_decoder

        if input_shapes or dims:
            raise FrontendError("decoder= binds every input itself; input_shapes= and dims= do not apply")
        bind_decoder(copy, *decoder)
    elif input_shapes or dims:
        from adreno_mlir.frontend.shapes import bind_in_place

        bind_in_place(copy, input_shapes, dims, initializer_names=[i.name for i in m.graph.initializer])
    imp = OnnxImporter(copy, store, initializers=m.graph.initializer, shared_kv=decoder is not None)
    if decoder is not None:
        from adreno_mlir.frontend.decoder import POSITION

        _, max_context, tokens = decoder
        imp.bound_overrides[POSITION] = max_context - tokens + 1  # the run's tokens all fit the cache
    imp.prepare()
    module = imp.build()
    try:
        module.verify()
    except Exception as e:
        raise FrontendError(f"imported IR does not verify: {e}") from None
    return module


from adreno_mlir.frontend import contrib_ops  # noqa: E402,F401 - registers the com.microsoft importers
