"""What a compiled model and a loaded artifact have in common: running an `Executable`.

`CompiledModel` (adreno_mlir.api, made by `compile()`) and `LoadedModel`
(adreno_mlir.artifact, made by `load()`) both inherit this, so `run`, `profile` and the
input checks behave identically whether the model came from the compiler or from disk.
No xDSL here: `load()` must not import the compiler.

Besides `run(feeds)` (a dict of outputs), `RunnableModel` speaks onnxruntime's
`InferenceSession` API, so code written for onnxruntime runs with one changed line:
`run(output_names, feeds, run_options=None)` (a list of arrays), `get_inputs()`,
`get_outputs()` (`NodeArg` records: `.name`, `.shape`, `.type`) and `get_providers()`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from adreno_mlir.errors import InputError

ORT_TYPES = {"f32": "tensor(float)", "f16": "tensor(float16)", "f64": "tensor(double)", "bool": "tensor(bool)",
             "i8": "tensor(int8)", "i16": "tensor(int16)", "i32": "tensor(int32)", "i64": "tensor(int64)",
             "u8": "tensor(uint8)", "u16": "tensor(uint16)", "u32": "tensor(uint32)", "u64": "tensor(uint64)"}
"""onnxruntime's type strings (`NodeArg.type`) of the plan's element types (runtime.plan)."""

FLOAT_EXACT_INT = 1 << 24
"""The `bound` of an integer input that the model computes with (not only a Gather's ids):
on device its values are float32 (graph.int_to_float), exact below 2**24 in magnitude."""

PROVIDERS = ["OpenCLExecutionProvider"]
"""What `get_providers()` answers: the one way a compiled model runs (OpenCL)."""


@dataclass(frozen=True)
class NodeArg:
    """A model input or output as onnxruntime's `NodeArg` describes it: `name`, `shape`
    (a list of ints: shapes are static) and `type` (onnxruntime's string, e.g.
    "tensor(float)"; an integer token-id input is "tensor(int32)", and takes int32 or
    int64 arrays)."""

    name: str
    shape: list[int]
    type: str


_UNSET = object()


class RunnableModel:
    """Needs `input_names`, `output_names`, `input_shapes`, `output_shapes` and
    `executable` (an `adreno_mlir.runtime.Executable`) on the instance."""

    input_names: list[str]
    output_names: list[str]
    input_shapes: dict[str, tuple[int, ...]]
    output_shapes: dict[str, tuple[int, ...]]
    executable: object

    @property
    def device_name(self) -> str:
        from adreno_mlir.runtime.device import describe_device

        return describe_device(self.executable.device)

    @property
    def runtime(self) -> str:
        """The launch path `run` takes: "native" (the C library of runtime/c) or "pyopencl"."""
        return self.executable.runtime

    @property
    def build_info(self):
        """How the OpenCL program was obtained (`program_cache.BuildInfo`: seconds,
        cache "binary" (an artifact's) / "hit" / "miss" / "off")."""
        return self.executable.build_info

    @property
    def launch_plan(self):
        """The `adreno_mlir.runtime.plan.Plan` the model runs (plain data)."""
        return self.executable.plan

    def _check_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        if not isinstance(feeds, Mapping):
            raise InputError(  # noqa: TRY004 - run() reports every bad feed as InputError (a ValueError)
                f"run() takes a dict of inputs {{name: array}}; expected names {self.input_names}")
        unknown = sorted(set(feeds) - set(self.input_names))
        missing = [n for n in self.input_names if n not in feeds]
        if unknown or missing:
            raise InputError(
                f"wrong input names: expected {self.input_names}"
                + (f", missing {missing}" if missing else "")
                + (f", unknown {unknown}" if unknown else "")
            )
        arrays = []
        tensors = {t.name: t for t in self.executable.plan.inputs}
        for name in self.input_names:
            x = feeds[name]
            if not isinstance(x, np.ndarray):
                raise InputError(f"input '{name}' must be a numpy array, got {type(x).__name__}")  # noqa: TRY004
            t = tensors.get(name)
            if t is not None and t.dtype == "i32":
                if x.dtype.kind not in "iu":
                    raise InputError(f"input '{name}' has dtype {x.dtype}; expected integer token ids "
                                     "(int32 or int64)")
                if x.size and (int(x.min()) < -t.bound or int(x.max()) >= t.bound):
                    bad = x[(x < -t.bound) | (x >= t.bound)].reshape(-1)[:5].tolist()
                    why = ("integers computed on device are held as float32, exact below 2**24"
                           if t.bound == FLOAT_EXACT_INT else "the extent of the table they index")
                    raise InputError(f"input '{name}' has ids {bad} outside [-{t.bound}, {t.bound}), {why}")
            elif x.dtype != np.float32:
                raise InputError(f"input '{name}' has dtype {x.dtype}; expected float32")
            if tuple(x.shape) != self.input_shapes[name]:
                raise InputError(
                    f"input '{name}' has shape {list(x.shape)}; expected {list(self.input_shapes[name])}"
                )
            arrays.append(x)
        return arrays

    def profile(self, feeds: Mapping[str, np.ndarray], repeat: int = 5, *,
                runtime: str | None = None, by: str = "kernel") -> dict[str, float]:
        """Device milliseconds per kernel name (summed over its launches), or with
        `by="node"` per ONNX node (the key `analyze` and `tune` use; `<kernel>` for
        layout conversions the compiler inserted), from OpenCL events. The full report
        (shares, achieved rates, analyze's estimates, a trace) is
        `adreno_mlir.profiler.profile_model`."""
        return self.executable.profile(self._check_inputs(feeds), repeat, runtime=runtime, by=by)

    def _node_args(self, tensors, names: list[str], shapes: dict[str, tuple[int, ...]]) -> list[NodeArg]:
        dtypes = {t.name: t.dtype for t in tensors}
        return [NodeArg(name, [int(d) for d in shapes[name]], ORT_TYPES.get(dtypes.get(name, "f32"), "tensor(float)"))
                for name in names]

    def get_inputs(self) -> list[NodeArg]:
        """The model inputs, in graph order, as onnxruntime's `InferenceSession.get_inputs()`."""
        return self._node_args(self.executable.plan.inputs, self.input_names, self.input_shapes)

    def get_outputs(self) -> list[NodeArg]:
        """The model outputs, in graph order, as onnxruntime's `InferenceSession.get_outputs()`."""
        return self._node_args(self.executable.plan.outputs, self.output_names, self.output_shapes)

    def get_providers(self) -> list[str]:
        """As onnxruntime's `get_providers()`: ["OpenCLExecutionProvider"]."""
        return list(PROVIDERS)

    def run(self, output_names=_UNSET, feeds=_UNSET, run_options=None, *, input_feed=_UNSET,
            runtime: str | None = None):
        """Run the model, in either of two forms:

        - `run(feeds)` (or `run(feeds=...)`): {output name: array of its ONNX shape}
          for {input name: array} (float32; int32 or int64 token ids for integer inputs).
        - `run(output_names, feeds, run_options=None)`, as onnxruntime's
          `InferenceSession.run`: a list of arrays, one per name of `output_names` in
          that order, or every output in graph order when it is None. `feeds` may also
          be given as `input_feed=` (onnxruntime's keyword); `run_options` is accepted
          and ignored.

        `runtime="pyopencl"` takes the pyopencl launch path even when the native one is open."""
        if input_feed is not _UNSET:  # onnxruntime's keyword: the list form
            if feeds is not _UNSET:
                raise InputError("run() got the inputs twice (as feeds and as input_feed=)")
            feeds = input_feed
            output_names = None if output_names is _UNSET else output_names
        if output_names is _UNSET:  # run(feeds=...): the dict form
            output_names, feeds = feeds, _UNSET
        if feeds is _UNSET:  # run(feeds): the dict form
            if output_names is _UNSET:
                raise InputError(f"run() takes a dict of inputs {{name: array}}; expected names {self.input_names}")
            if run_options is not None:
                raise InputError("run(feeds, run_options): run_options goes third, as in onnxruntime's "
                                 "run(output_names, feeds, run_options)")
            return self._run_dict(output_names, runtime)
        wanted = self._wanted_outputs(output_names)
        outs = self._run_dict(feeds, runtime)
        return [outs[name] for name in wanted]

    def _wanted_outputs(self, output_names) -> list[str]:
        if output_names is None:
            return list(self.output_names)
        if isinstance(output_names, str) or not isinstance(output_names, Sequence):
            raise InputError(f"run(output_names, feeds) takes a list of output names (or None for all), got "
                             f"{type(output_names).__name__}; the outputs are {self.output_names}")
        unknown = [n for n in output_names if n not in self.output_names]
        if unknown:
            raise InputError(f"unknown output name{'s' if len(unknown) > 1 else ''} {unknown}; the model's "
                             f"outputs are {self.output_names}")
        return list(output_names)

    def _run_dict(self, feeds: Mapping[str, np.ndarray], runtime: str | None) -> dict[str, np.ndarray]:
        if runtime is not None and runtime not in ("native", "pyopencl"):
            raise InputError(f"run(runtime=...) takes 'native' or 'pyopencl', not {runtime!r}")
        if runtime == "native" and self.executable.native is None and self.executable.plan.computed_outputs:
            raise InputError("this model runs on pyopencl only (compiled or loaded with runtime='pyopencl', or the "
                             "native runtime is not built); compile or load it with runtime='native'")
        arrays = self._check_inputs(feeds)
        outs = self.executable.run(arrays, runtime=runtime)
        return {
            name: out.reshape(self.output_shapes[name])
            for name, out in zip(self.output_names, outs)
        }
