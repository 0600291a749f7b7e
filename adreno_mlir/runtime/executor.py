"""Runs a launch plan with pyopencl (PoCL on the CPU by default).

Two steps, so that a compiled model can be saved and run without the compiler:

1. `adreno_mlir.runtime.plan.plan_from_module` walks the lowered host function once
   and writes down a `Plan` (allocations with memory reuse resolved, weights, inputs,
   outputs, launches) plus the weight arrays: plain data.
2. `Executable` instantiates a plan on a pyopencl context: builds the program (through
   the program binary cache), checks the device's image limits, uploads every weight
   once, creates every allocation and turns the launches into a flat list of
   (kernel, global size, local size) with arguments already set. `run()` then only
   copies inputs in, enqueues that list and reads outputs back.

`Executable(module, source, store, context)` does both steps (what `compile()` uses);
`Executable.from_plan` does only the second (what `adreno_mlir.load` uses, with no IR).
This module imports no xDSL at module level.

Two launch paths: the native runtime (`adreno_mlir.runtime.native`, the C library of
runtime/c, one call per inference) when it is built and `runtime` allows it, else
pyopencl (one call per kernel). With the native path, pyopencl only gets the program;
the C library owns the memory and kernels, and pyopencl's copies are created only if
a pyopencl run is asked for (`run(..., runtime="pyopencl")`), so device memory is not
doubled.

Threads: `run` and `profile` may be called from several threads at once, on one
`Executable` or on several of one device. The pyopencl path shares one queue and one set
of memory objects per `Executable`, so its calls are serialized by a lock per
`Executable` (uncontended, taking it costs about 0.5 us, against ~1 ms for a tinynet
run); the native path serializes in `NativeModel`. Different `Executable`s run
concurrently.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from adreno_mlir.errors import CompileError
from adreno_mlir.runtime.device import HALF_PRAGMA, DeviceError, check_half_support, is_pocl, pocl_build_error
from adreno_mlir.runtime.native import open_native, resolve_runtime
from adreno_mlir.runtime.plan import (
    DEFAULT_BUILD_OPTIONS,
    BufferAlloc,
    Plan,
    PlanError,
    image_limit_problem,
    memory_limit_problem,
    plan_from_module,
    weight_chunks,
)
from adreno_mlir.runtime.program_cache import CacheArg, build_program

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from adreno_mlir.weights import WeightStore

MF = cl.mem_flags


class RuntimeError_(CompileError):
    pass


class ImageLimitError(CompileError):
    """The compiled texture plan does not fit the device's image limits."""


@dataclass
class Launch:
    kernel: cl.Kernel
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    name: str


class MemoryLimitError(CompileError):
    """A buffer (or the whole plan) exceeds the device's allocation or memory limit."""


def check_device_limits(plan: Plan, device: cl.Device) -> None:
    """Refuse a plan whose images or buffers the device cannot hold (before any CL call
    fails with a bare INVALID_BUFFER_SIZE)."""
    problem = image_limit_problem(plan, bool(device.image_support), device.image2d_max_width,
                                  device.image2d_max_height, device.name) if plan.images else None
    if problem:
        raise ImageLimitError(problem)
    problem = memory_limit_problem(plan, int(device.max_mem_alloc_size), int(device.global_mem_size), device.name)
    if problem:
        raise MemoryLimitError(problem)


class DeviceMemory:
    """Weights and state on one OpenCL context that several executables share: a
    decoder's prefill and decode programs upload each weight once (the same name, type and
    values: one buffer) and read and write one KV cache (`Plan.states`, by input name).

    State buffers are created zero-filled (a cache row nothing has written yet is finite:
    attention multiplies it by a zero probability) and `reset_states` zeroes them again
    (a new conversation). `transfers` counts the bytes every run of a sharing executable
    copies between host and device (`Executable.run`, pyopencl path): per decode step that
    is the token and the position in, the logits out."""

    def __init__(self, context: cl.Context):
        self.context = context
        self._weights: dict[tuple[str, str, int], tuple[np.ndarray, cl.Buffer]] = {}
        self.states: dict[str, cl.Buffer] = {}
        self._state_kind: dict[str, tuple[int, str]] = {}  # name -> (bytes, element type)
        self.transfers = {"to_device": 0, "to_host": 0}

    def weight(self, w, arr: np.ndarray) -> cl.Buffer:
        key = (w.name, w.dtype, w.count)
        hit = self._weights.get(key)
        if hit is not None and (hit[0] is arr or np.array_equal(hit[0], arr)):
            return hit[1]
        buf = cl.Buffer(self.context, MF.READ_ONLY | MF.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(arr))
        if hit is None:  # a same-named weight with other values keeps its own buffer
            self._weights[key] = (arr, buf)
        return buf

    def state(self, name: str, nbytes: int, dtype: str = "f32") -> cl.Buffer:
        """The buffer of state `name` (created zero-filled on first use): `nbytes` bytes of
        `dtype` elements ("f32", or "f16" for a cache kept in halves)."""
        if name in self.states:
            if self._state_kind[name] != (nbytes, dtype):
                had, had_dtype = self._state_kind[name]
                raise RuntimeError_(f"state '{name}' is {had} bytes of {had_dtype} in "
                                    f"one program and {nbytes} of {dtype} in another; programs sharing it must be "
                                    "compiled for the same cache shape and storage")
            return self.states[name]
        buf = cl.Buffer(self.context, MF.READ_WRITE, nbytes)
        self.states[name], self._state_kind[name] = buf, (nbytes, dtype)
        self.reset_states(names=[name])
        return buf

    def reset_states(self, queue: cl.CommandQueue | None = None, names: Sequence[str] | None = None) -> None:
        """Zero the state buffers (all, or `names`)."""
        q = queue or cl.CommandQueue(self.context)
        for name in (self.states if names is None else names):
            cl.enqueue_copy(q, self.states[name], np.zeros(self._state_kind[name][0], np.uint8))
        q.finish()

    def release(self) -> None:
        """Forget every weight and state buffer (their device memory goes back once no
        executable holds them): `Executable.release_device_memory` on every sharer first;
        later runs create them again, the states zero-filled."""
        self._weights.clear()
        self.states.clear()
        self._state_kind.clear()

    def read_state(self, name: str, queue: cl.CommandQueue | None = None) -> np.ndarray:
        """A host copy of a state buffer (flat: float32, or float16 for a cache kept in
        halves), for tests and debugging."""
        q = queue or cl.CommandQueue(self.context)
        nbytes, element = self._state_kind[name]
        dtype = np.float16 if element == "f16" else np.float32
        out = np.empty(nbytes // np.dtype(dtype).itemsize, dtype)
        cl.enqueue_copy(q, out, self.states[name])
        q.finish()
        return out


class Executable:
    """A plan instantiated on one OpenCL context: program, memory and set-up kernels.

    Attributes worth knowing: `plan` (the `Plan`), `program` and `build_info` (how the
    program was obtained: seconds, cache hit/miss/off; see program_cache.BuildInfo),
    `launches` (the flat launch list), `device`.

    `run` and `profile` are thread-safe: calls on one instance are serialized (see the
    module's docstring)."""

    def __init__(self, module: ModuleOp, source: str, store: WeightStore, context: cl.Context,
                 options: Sequence[str] = DEFAULT_BUILD_OPTIONS, *, cache: CacheArg = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 output_shapes: Mapping[str, Sequence[int]] | None = None, runtime: str | None = None,
                 memory: DeviceMemory | None = None):
        runtime = resolve_runtime(runtime)
        try:
            plan, weights = plan_from_module(module, store, input_shapes=input_shapes,
                                             output_shapes=output_shapes, build_options=options)
        except PlanError as e:
            raise RuntimeError_(str(e)) from None
        self._instantiate(plan, weights, source, context, cache, None, runtime, None, memory)

    @classmethod
    def from_plan(cls, plan: Plan, weights: Sequence[np.ndarray], source: str, context: cl.Context, *,
                  cache: CacheArg = None, binary: bytes | None = None, runtime: str | None = None,
                  blob: bytes | None = None, memory: DeviceMemory | None = None) -> Executable:
        """Instantiate a plan that was made earlier (e.g. read from an artifact);
        `binary` is a program binary to try before the cache and the source; `blob` the
        weights blob the `weights` are views of (saves re-joining it for the native path)."""
        runtime = resolve_runtime(runtime)
        self = cls.__new__(cls)
        self._instantiate(plan, weights, source, context, cache, binary, runtime, blob, memory)
        return self

    # ------------------------------------------------------------------ set-up

    def _instantiate(self, plan: Plan, weights: Sequence[np.ndarray], source: str, context: cl.Context,
                     cache: CacheArg, binary: bytes | None, runtime: str, blob: bytes | None,
                     memory: DeviceMemory | None) -> None:
        if plan.states:
            if runtime == "native":
                raise RuntimeError_("this model keeps state on the device (a decoder's KV cache), which the native "
                                    "runtime does not run yet; use runtime='pyopencl' (or 'auto')")
            runtime = "pyopencl"
        if memory is not None and memory.context is not context:
            raise RuntimeError_("memory= belongs to another OpenCL context than the one this model is built for")
        self.memory = memory if memory is not None else DeviceMemory(context)
        """Where the weights and the state live (shared with other executables given the same one)."""
        self._lock = threading.Lock()
        """Serializes the pyopencl path: its queue, its memory and its lazy set-up."""
        self.plan = plan
        self.source = source
        self.context = context
        self.device = context.devices[0]
        # Before building: a plan that cannot fit fails fast (compile() then falls back
        # to the buffer plan without paying for a program it will not use).
        check_device_limits(plan, self.device)
        if HALF_PRAGMA in source:  # a saved precision="fp16" model loaded on another device
            check_half_support(self.device)
        self.queue = cl.CommandQueue(context)
        try:
            self.program, self.build_info = build_program(context, source, plan.build_options,
                                                          cache=cache, binary=binary)
        except cl.RuntimeError as e:
            if is_pocl(self.device) and (why := pocl_build_error(self.device)) is not None:
                raise DeviceError(  # not the program: PoCL builds nothing on this CPU
                    f"PoCL's CPU device cannot compile OpenCL C on this machine ({why}): its LLVM 14 does not "
                    "know this CPU. Use another device (device=... or PYOPENCL_CTX; with no device named, "
                    "adreno-mlir takes Intel's CPU runtime when intel-opencl-rt is installed)") from None
            raise RuntimeError_(f"the OpenCL compiler rejected the generated program:\n{e}") from None
        self.input_names = [t.name for t in plan.fed_inputs]
        self.output_names = [t.name for t in plan.outputs]
        self._output_counts = [t.count for t in plan.computed_outputs]
        self.weight_arrays = list(weights)
        """The host copies of the weights, then of the constant outputs' values
        (`Plan.blob_entries` order: what `CompiledModel.save` writes)."""
        self._constants = {i: np.asarray(a, dtype=a.dtype.newbyteorder("=")) for i, a in zip(
            (i for i, t in enumerate(plan.outputs) if t.constant is not None),
            self.weight_arrays[len(plan.weights):], strict=True)}
        """Output index -> value of each constant output: returned by `run` (a copy each
        time), never computed or held on the device."""
        self.native = None
        """The `NativeModel` that runs this plan, or None (pyopencl launches)."""
        if runtime != "pyopencl" and plan.computed_outputs:  # nothing to launch: no native model
            if blob is None:
                blob = b"".join(weight_chunks(plan, self.weight_arrays))
            # the C runtime sees the computed outputs only; run() adds the constants
            device_plan = dataclasses.replace(plan, outputs=plan.computed_outputs) if self._constants else plan
            self.native = open_native(runtime, device_plan, source, blob, context, self.program)
        self._launches: list[Launch] | None = None
        self._profiling_queue: cl.CommandQueue | None = None
        if self.native is None:
            self._setup_pyopencl()

    @property
    def runtime(self) -> str:
        """Which launch path `run` takes: "native" or "pyopencl"."""
        return "native" if self.native is not None else "pyopencl"

    @property
    def launches(self) -> list[Launch]:
        """The pyopencl launch list (memory and kernels created on first use)."""
        if self._launches is None:
            with self._lock:
                if self._launches is None:
                    self._setup_pyopencl()
        return self._launches

    def _setup_pyopencl(self) -> None:
        """pyopencl's own memory objects and kernels, for the pyopencl launch path
        (called at construction, or on first use with `_lock` held). `_launches` is set
        last: once it is not None, everything else here is in place."""
        plan, context = self.plan, self.context
        self.weights: list[cl.Buffer] = [self.memory.weight(w, arr)
                                         for w, arr in zip(plan.weights, self.weight_arrays[:len(plan.weights)])]
        states = {st.allocation: st for st in plan.states}
        dtypes = {t.name: t.dtype for t in plan.inputs}
        self.allocations: list[cl.MemoryObject] = [
            self.memory.state(states[i].input, a.nbytes, dtypes[states[i].input]) if i in states
            else cl.Buffer(context, MF.READ_WRITE, a.nbytes) if isinstance(a, BufferAlloc) else self._image(a)
            for i, a in enumerate(plan.allocations)]
        self.inputs = [self.allocations[t.allocation] for t in plan.fed_inputs]
        self.outputs = [(self.allocations[t.allocation], t.count) for t in plan.computed_outputs]
        launches: list[Launch] = []
        for launch in plan.launches:
            kernel = cl.Kernel(self.program, launch.kernel)
            for k, arg in enumerate(launch.args):
                if arg.kind == "allocation":
                    kernel.set_arg(k, self.allocations[arg.index])
                elif arg.kind == "weight":
                    kernel.set_arg(k, self.weights[arg.index])
                elif arg.kind == "i32":
                    kernel.set_arg(k, np.int32(arg.value))
                else:
                    kernel.set_arg(k, np.float32(arg.value))
            local = launch.local_size
            if local is not None:
                limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device)
                required = kernel.get_work_group_info(cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, self.device)
                if int(np.prod(local)) > limit and any(required):
                    # reqd_work_group_size: the kernel computes right with this work-group only
                    raise RuntimeError(
                        f"kernel {launch.kernel} needs work-groups of {list(local)} work-items, but this device "
                        f"runs at most {limit} for it; give it a smaller work-group in its kernel_config (the keys of its "
                        "kernel family that set the work-group: docs/passes.md lists each family's keys)")
                if int(np.prod(local)) > limit:
                    local = None  # this kernel cannot take the planned size here: driver's choice
            launches.append(Launch(kernel, launch.global_size, local, launch.kernel))
        # Kernel arguments do not keep memory objects alive: hold every one for our lifetime.
        self.buffers = self.allocations + self.weights
        self._launches = launches

    def release_device_memory(self) -> None:
        """Give back the pyopencl path's memory objects and kernels (another runtime takes over:
        a decoder's C loop). The plan, host weights and program stay; the next pyopencl run
        creates them again (`launches` is None until then)."""
        with self._lock:
            self._launches = None
            for attr in ("weights", "allocations", "inputs", "outputs", "buffers"):
                self.__dict__.pop(attr, None)

    def _image(self, a) -> cl.Image:
        fmt = cl.ImageFormat(cl.channel_order.RGBA,
                             cl.channel_type.HALF_FLOAT if a.format == "rgba_f16" else cl.channel_type.FLOAT)
        return cl.create_image(self.context, MF.READ_WRITE, fmt, shape=(a.width, a.height))

    # ------------------------------------------------------------------ running

    def profile(self, inputs: list[np.ndarray], repeat: int = 5, runtime: str | None = None,
                by: str = "kernel") -> dict[str, float]:
        """Device time (ms, each launch's median over `repeat` runs, summed) per kernel
        name (`by="kernel"`) or per ONNX node (`by="node"`: `Launch.node`, `<kernel>` for
        a launch without one, the rows of `adreno-mlir profile`), from OpenCL profiling
        events on a separate profiling queue."""
        if by not in ("kernel", "node"):
            raise ValueError(f"profile(by=...) takes 'kernel' or 'node', not {by!r}")
        if self.native is not None and runtime != "pyopencl":
            medians = self.native.profile(inputs, repeat)[0]
        else:
            medians = [float(ms) for ms in np.median(self.profile_launches(inputs, repeat), axis=0)]
        totals: dict[str, float] = {}
        for launch, ms in zip(self.plan.launches, medians):
            key = launch.kernel if by == "kernel" else launch.row
            totals[key] = totals.get(key, 0.0) + ms
        return totals

    def profile_launches(self, inputs: list[np.ndarray], repeat: int = 5, warmup: int = 1) -> np.ndarray:
        """Device milliseconds of every launch in every run: an array [repeat, launches]
        (pyopencl path, OpenCL events on a profiling queue; `warmup` runs first, untimed).
        The tuner reads the spread between runs, not only the median."""
        starts, ends = self.profile_events(inputs, repeat, warmup)
        return (ends - starts) * 1e-6

    def profile_events(self, inputs: list[np.ndarray], repeat: int = 5,
                       warmup: int = 1, back_to_back: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """CL_PROFILING_COMMAND_START and _END (device nanoseconds, int64 arrays
        [repeat, launches]) of every launch in every run, on a profiling queue after
        `warmup` untimed runs: the timeline of each inference (adreno_mlir.profiler).
        `back_to_back`: the timed runs are enqueued together and waited for once, so the
        device goes from one to the next without the host in between; (last end - first
        start) / repeat is then a run's time without the per-event overhead a lone short
        kernel shows (bench/qmatmul.py)."""
        arrays = self._input_arrays(inputs)
        with self._lock:  # the same memory as run(): no run of another thread in between
            if self._launches is None:
                self._setup_pyopencl()
            launches = self._launches
            if self._profiling_queue is None:  # one per executable: the tuner calls this once per inference
                self._profiling_queue = cl.CommandQueue(self.context,
                                                        properties=cl.command_queue_properties.PROFILING_ENABLE)
            q = self._profiling_queue
            for buf, arr in zip(self.inputs, arrays):
                cl.enqueue_copy(q, buf, arr)
            starts = np.zeros((repeat, len(launches)), np.int64)
            ends = np.zeros((repeat, len(launches)), np.int64)
            timed = []
            for r in range(-warmup, repeat):
                events = [cl.enqueue_nd_range_kernel(q, l.kernel, l.global_size, l.local_size) for l in launches]
                if r < 0 or not back_to_back:
                    q.finish()
                if r >= 0:
                    timed.append(events)
            q.finish()
            for r, events in enumerate(timed):
                starts[r] = [ev.profile.start for ev in events]
                ends[r] = [ev.profile.end for ev in events]
        return starts, ends

    def _input_arrays(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Each input as its buffer holds it: float32, or int32 token ids (the caller,
        `CompiledModel.run`, has checked them against their bound)."""
        return [np.ascontiguousarray(arr, dtype=np.int32 if t.dtype == "i32" else np.float32)
                for t, arr in zip(self.plan.fed_inputs, inputs, strict=True)]

    def run(self, inputs: list[np.ndarray], runtime: str | None = None) -> list[np.ndarray]:
        """Outputs (flat arrays: float32, a constant output in its own dtype) for
        `inputs`; `runtime="pyopencl"` forces the pyopencl path even when the native one
        is open. Thread-safe: the pyopencl path holds this instance's lock from the input
        copies to the last output copy, since every call uses the same queue and memory."""
        computed = self._run_computed(inputs, runtime) if self._output_counts else []
        if not self._constants:
            return computed
        it = iter(computed)
        return [self._constants[i].copy() if i in self._constants else next(it) for i in range(len(self.output_names))]

    def _run_computed(self, inputs: list[np.ndarray], runtime: str | None) -> list[np.ndarray]:
        """The outputs that launches compute (`Plan.computed_outputs`), in order."""
        if self.native is not None and runtime != "pyopencl":
            return self.native.run(inputs)
        arrays = self._input_arrays(inputs)
        results = [np.empty(size, np.float32) for size in self._output_counts]
        with self._lock:
            if self._launches is None:
                self._setup_pyopencl()
            q = self.queue
            for buf, arr in zip(self.inputs, arrays):
                cl.enqueue_copy(q, buf, arr, is_blocking=False)
            for launch in self._launches:
                cl.enqueue_nd_range_kernel(q, launch.kernel, launch.global_size, launch.local_size)
            for (buf, _), out in zip(self.outputs, results):
                cl.enqueue_copy(q, out, buf, is_blocking=False)
            q.finish()
            self.memory.transfers["to_device"] += sum(a.nbytes for a in arrays)
            self.memory.transfers["to_host"] += sum(r.nbytes for r in results)
        return results
