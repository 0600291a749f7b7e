"""What a compiled model and a loaded artifact have in common: running an `Executable`.

`CompiledModel` (adreno_mlir.api, made by `compile()`) and `LoadedModel`
(adreno_mlir.artifact, made by `load()`) both inherit this, so `run`, `profile` and the
input checks behave identically whether the model came from the compiler or from disk.
No xDSL here: `load()` must not import the compiler.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from adreno_mlir.errors import InputError


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
                    raise InputError(f"input '{name}' has ids {bad} outside [-{t.bound}, {t.bound}), the "
                                     "extent of the table they index")
            elif x.dtype != np.float32:
                raise InputError(f"input '{name}' has dtype {x.dtype}; expected float32")
            if tuple(x.shape) != self.input_shapes[name]:
                raise InputError(
                    f"input '{name}' has shape {list(x.shape)}; expected {list(self.input_shapes[name])}"
                )
            arrays.append(x)
        return arrays

    def profile(self, feeds: Mapping[str, np.ndarray], repeat: int = 5, *,
                runtime: str | None = None) -> dict[str, float]:
        """Device milliseconds per kernel (summed over its launches), from OpenCL events."""
        return self.executable.profile(self._check_inputs(feeds), repeat, runtime=runtime)

    def run(self, feeds: Mapping[str, np.ndarray], *, runtime: str | None = None) -> dict[str, np.ndarray]:
        """{output name: array of its ONNX shape} for {input name: float32 array}.
        `runtime="pyopencl"` takes the pyopencl launch path even when the native one is open."""
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
