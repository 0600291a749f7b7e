"""An ONNX backend (`onnx.backend.base.Backend`) over `adreno_mlir.compile`.

    from adreno_mlir.onnx_backend import AdrenoBackend
    rep = AdrenoBackend.prepare(model)          # compiles for the default OpenCL device
    outputs = rep.run([x, y])                    # positional, in graph-input order
    outputs = rep.run({"x": x, "y": y})          # or by name

This is what `onnx.backend.test.BackendTest` drives (see tests/test_onnx_backend.py).
The ONNX device "CPU" means the default OpenCL device (PoCL's CPU device unless
PYOPENCL_CTX says otherwise); an `opencl_device=` keyword picks another one, and
`target=`, `textures=`, `precision=`, `layout=` are passed to `compile`. Boolean
and integer model outputs come back in their type (the compiled model returns float32
only: the backend adds a Cast to float and converts back, `!= 0` or rounding). Models
the compiler cannot run correctly are rejected by `prepare` with a `CompileError`
(usually a `FrontendError` naming the node and the reason), never run with wrong
results.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from adreno_mlir.api import CompiledModel
from adreno_mlir.api import compile as _compile
from adreno_mlir.errors import CompileError

COMPILE_OPTIONS = ("target", "textures", "precision", "layout")
"""`prepare` keywords passed on to `adreno_mlir.compile` (besides `opencl_device`)."""


class AdrenoBackendRep(BackendRep):
    """A compiled model; `run` takes inputs by position (graph-input order) or by name.

    With `bind_inputs`, those graph inputs are not run-time tensors: the model is
    compiled at the first `run` with their values as constants (and again whenever
    they change). The compiler itself only accepts constant shapes, axes, slice
    bounds, clip bounds and resize scales; this is how an ONNX model that passes
    them as graph inputs can still be run.
    """

    def __init__(self, model: onnx.ModelProto, output_names: Sequence[str],
                 compiled: CompiledModel | None = None, bind_inputs: Sequence[str] = (),
                 compile_options: Mapping[str, Any] | None = None,
                 cast_outputs: Mapping[str, np.dtype] | None = None):
        init_names = {i.name for i in model.graph.initializer}
        self.model = model
        self.input_names = [i.name for i in model.graph.input if i.name not in init_names]
        self.output_names = list(output_names)
        self.cast_outputs = dict(cast_outputs or {})
        """Boolean and integer model outputs, with their numpy types: the compiled model
        returns them as floats (`_compile_outputs`); `run` gives them back in their type."""
        self.bind_inputs = list(bind_inputs)
        unknown = [b for b in self.bind_inputs if b not in self.input_names]
        if unknown:
            raise ValueError(f"bind_inputs {unknown} are not graph inputs; inputs are {self.input_names}")
        self.compile_options = dict(compile_options or {})
        self.compiled = compiled
        self._bound_key: bytes | None = None
        self._outputs_type = namedtupledict("Outputs", self.output_names)

    def _specialize(self, bound: dict[str, np.ndarray]) -> CompiledModel:
        key = b"".join(
            name.encode() + str(a.dtype).encode() + repr(a.shape).encode() + a.tobytes()
            for name, a in sorted(bound.items())
        )
        if self.compiled is None or key != self._bound_key:
            m = onnx.ModelProto()
            m.CopyFrom(self.model)
            keep = [i for i in m.graph.input if i.name not in bound]
            del m.graph.input[:]
            m.graph.input.extend(keep)
            for name, a in bound.items():
                m.graph.initializer.append(onnx.numpy_helper.from_array(a, name))
            self.compiled, self.cast_outputs = _compile_outputs(m, self.compile_options)
            self._bound_key = key
        return self.compiled

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        names = self.input_names
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            inputs = list(inputs)
            if len(inputs) != len(names):
                raise ValueError(f"the model takes {len(names)} input(s) {names}, got {len(inputs)}")
            feeds = dict(zip(names, inputs))
        feeds = {k: np.asarray(v) for k, v in feeds.items()}
        if self.bind_inputs:
            missing = [b for b in self.bind_inputs if b not in feeds]
            if missing:
                raise ValueError(f"missing bound input(s) {missing}")
            compiled = self._specialize({b: feeds.pop(b) for b in self.bind_inputs})
        else:
            compiled = self.compiled
        assert compiled is not None
        results = compiled.run(feeds)
        return self._outputs_type(*[_from_float(results[n + AS_FLOAT], self.cast_outputs[n])
                                    if n in self.cast_outputs else results[n] for n in self.output_names])


AS_FLOAT = "__as_float"
"""Suffix of the float32 output the backend adds for each boolean or integer model output."""

_CAST_BACK = {onnx.TensorProto.BOOL, onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
              onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32,
              onnx.TensorProto.UINT64}


def _from_float(a, dtype: np.dtype) -> np.ndarray:
    a = np.asarray(a)
    return a != 0 if dtype == np.bool_ else np.rint(a).astype(dtype)


_RUN_TIME_OUTPUT = re.compile(
    r"model output '([^']+)' (?:is a boolean computed at run time|has element type \w+ and is computed at run time)")
"""The compiler's refusal of a boolean or integer model output computed at run time."""


def _with_float_outputs(model: onnx.ModelProto, names) -> onnx.ModelProto:
    """A copy of `model` whose outputs `names` are instead `o__as_float` = Cast(o, to=FLOAT)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for o in m.graph.output:
        if o.name in names:
            m.graph.node.append(onnx.helper.make_node("Cast", [o.name], [o.name + AS_FLOAT],
                                                      to=onnx.TensorProto.FLOAT))
            o.name += AS_FLOAT
            o.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    return m


def _compile_outputs(model: onnx.ModelProto, options: Mapping[str, Any]) -> tuple[CompiledModel, dict]:
    """`compile(model)`, and the outputs whose type the backend restores. The compiler
    returns float32 outputs only: a boolean computed at run time is a 0/1 float mask
    inside it, an integer a float holding it exactly (below 2**24), and it refuses such a
    model output ("add a Cast to float at the end of the model"). The backend does just
    that for each output refused so (a constant boolean or integer output keeps its type
    and is not touched) and turns the floats back into the output's type (`!= 0` for
    booleans, rounding for integers), so models with boolean outputs (Less, IsNaN, ...)
    or integer ones run as ONNX defines them."""
    types = {o.name: o.type.tensor_type.elem_type for o in model.graph.output if o.type.HasField("tensor_type")}
    cast: dict[str, np.dtype] = {}
    m = model
    while True:
        try:
            return _compile(m, **options), cast
        except CompileError as e:
            found = _RUN_TIME_OUTPUT.search(str(e))
            name = found[1] if found else None
            if name is None or name in cast or types.get(name) not in _CAST_BACK:
                raise
            cast[name] = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(types[name]))
            m = _with_float_outputs(model, cast)


class AdrenoBackend(Backend):
    """ONNX backend that compiles models to OpenCL C with adreno-mlir."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except Exception:
            return False

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> AdrenoBackendRep:
        if not cls.supports_device(device):
            raise NotImplementedError(f"adreno-mlir's ONNX backend runs on device 'CPU' only, not '{device}'")
        super().prepare(model, device, **kwargs)  # onnx.checker.check_model
        outputs = [o.name for o in model.graph.output]
        bind = list(kwargs.get("bind_inputs", ()))
        options = {k: kwargs[k] for k in COMPILE_OPTIONS if k in kwargs}
        options["device"] = kwargs.get("opencl_device")
        if bind:  # compiled at the first run, when the bound values are known
            return AdrenoBackendRep(model, outputs, bind_inputs=bind, compile_options=options)
        compiled, cast_outputs = _compile_outputs(model, options)
        return AdrenoBackendRep(model, outputs, compiled=compiled, compile_options=options,
                                cast_outputs=cast_outputs)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Run one node by wrapping it in a one-node model (float32 inputs; output
        types from `outputs_info` or shape inference)."""
        super().run_node(node, inputs, device=device, outputs_info=outputs_info, **kwargs)
        if isinstance(inputs, Mapping):
            arrays = [np.asarray(inputs[n]) for n in node.input if n]
        else:
            arrays = [np.asarray(x) for x in inputs]
        names = [n for n in node.input if n]
        if len(arrays) != len(names):
            raise ValueError(f"node '{node.name}' has {len(names)} inputs, got {len(arrays)}")
        graph_inputs = [
            onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, arrays)
        ]
        if outputs_info is not None:
            graph_outputs = [
                onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape)
                for n, (dt, shape) in zip(node.output, outputs_info)
            ]
        else:
            graph_outputs = [onnx.helper.make_empty_tensor_value_info(n) for n in node.output if n]
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = onnx.helper.make_model(
            onnx.helper.make_graph([node], "run_node", graph_inputs, graph_outputs),
            opset_imports=[onnx.helper.make_opsetid("", opset)],
        )
        if outputs_info is None:
            model = onnx.shape_inference.infer_shapes(model)
            inferred = {vi.name: vi for vi in model.graph.value_info}
            outs = [inferred.get(o.name, o) for o in model.graph.output]
            del model.graph.output[:]
            model.graph.output.extend(outs)
        return cls.prepare(model, device).run(arrays)


prepare = AdrenoBackend.prepare
run_model = AdrenoBackend.run_model
run_node = AdrenoBackend.run_node
supports_device = AdrenoBackend.supports_device
