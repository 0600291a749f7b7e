"""The native runtime (runtime/c, `libadreno_rt`) from Python: the low-overhead launch path.

`CompiledModel.run` and `LoadedModel.run` go through the C library when it is built:
one ctypes call per inference uploads the inputs, enqueues every launch from C and
downloads the outputs (with the GIL released), instead of one pyopencl call per kernel.
Integer (i32, token-id) inputs travel as int32 through `adreno_run_typed`; the C library
checks every id against the input's [-bound, bound) before it uploads anything.
pyopencl still chooses the device and gets the program (so the program binary cache and
the artifact's binary work as before); the C library receives that context, device and
program (`adreno_options.context/device/program`) and creates the memory, the kernels
and the queue itself. The pyopencl launch path remains the fallback.

Decoders (`NativeDecoder`): `adreno_decoder_open` on a decoder artifact directory, on
pyopencl's context and device; `generate` is one `adreno_decoder_generate` call (the
prompt's prefill, every decode step and the choice of each token in C, sampling with the C
library's splitmix64 generator), `feed` / `step` / `reset` are adreno_decoder_feed / step /
reset. adreno_mlir.generation uses it for `compile_decoder(..., runtime=)` and
`load(DECODER.adreno, runtime=)` (docs/native-runtime.md, "Generation from Python").

Which runtime runs a model: the `runtime=` argument of `compile`/`load`, else the
environment variable ADRENO_MLIR_RUNTIME, else "auto":

* "auto": native when the library is found and opens the model, else pyopencl
  (a failure to open is reported as a `NativeRuntimeWarning`, never a wrong answer);
* "native": native or a `CompileError` saying why not;
* "pyopencl": never native.

How inputs and outputs travel (ADRENO_MLIR_NATIVE_IO): "auto" (pinned staging buffers on
discrete GPUs, direct copies elsewhere), "pinned" or "direct".

Where the library is looked for: ADRENO_MLIR_NATIVE_LIB (a path to libadreno_rt.so),
else runtime/c/build/ of this source checkout (what `adreno-mlir build-native` and the
README's cmake command produce). `build_native()` builds it with CMake (a C compiler and
CMake are all it needs: the library opens OpenCL at run time).

Which OpenCL library the C code uses: libadreno_rt dlopens it once per process. From
Python the binding names pyopencl's own (`pyopencl_opencl_library()`, the ICD loader its
_cl extension links), so the context, device and program pyopencl hands over are used
through the very same loader. `adreno-run`, a separate program, searches for one itself
(docs/native-runtime.md); `runner_opencl_env()` is what to give it (pyopencl's loader in
ADRENO_RT_OPENCL_LIBRARY, with PYOPENCL_HOME) on a machine with no system loader.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from adreno_mlir.errors import CompileError, InputError

RUNTIMES = ("auto", "native", "pyopencl")
SOURCE_DIR = Path(__file__).resolve().parents[2] / "runtime" / "c"
"""runtime/c of this checkout (present in source checkouts and editable installs)."""
DEFAULT_BUILD_DIR = SOURCE_DIR / "build"
LIBRARY_NAME = {"darwin": "libadreno_rt.dylib", "win32": "adreno_rt.dll"}.get(sys.platform, "libadreno_rt.so")


class NativeRuntimeError(CompileError):
    """The native runtime is unavailable or refused the model (the message says why)."""


class NativeRuntimeWarning(UserWarning):
    """runtime="auto" fell back to pyopencl because the native runtime could not open the model."""


def resolve_runtime(runtime: str | None) -> str:
    value = runtime if runtime is not None else os.environ.get("ADRENO_MLIR_RUNTIME", "auto")
    if not isinstance(value, str) or value.lower() not in RUNTIMES:
        where = "runtime=" if runtime is not None else "ADRENO_MLIR_RUNTIME"
        raise CompileError(f"{where} must be one of {', '.join(RUNTIMES)}, not {value!r}")
    return value.lower()


def library_path() -> Path | None:
    """The libadreno_rt to use, or None when it is not built."""
    env = os.environ.get("ADRENO_MLIR_NATIVE_LIB")
    if env:
        return Path(env)
    candidate = DEFAULT_BUILD_DIR / LIBRARY_NAME
    return candidate if candidate.is_file() else None


def build_native(build_dir: str | Path | None = None, *, sanitize: bool = False, quiet: bool = True) -> Path:
    """Configure and build runtime/c with CMake into `build_dir` (default runtime/c/build);
    returns the folder holding libadreno_rt and adreno-run. Raises NativeRuntimeError
    with CMake's output when the C compiler or CMake is missing (nothing of OpenCL is
    needed to build: the library loads it at run time)."""
    if not (SOURCE_DIR / "CMakeLists.txt").is_file():
        raise NativeRuntimeError(f"the native runtime's sources are not at {SOURCE_DIR}: build it from a source "
                                 "checkout of adreno-mlir (runtime/c)")
    cmake = shutil.which("cmake")
    if cmake is None:
        raise NativeRuntimeError("building the native runtime needs CMake (Debian: apt install cmake, or "
                                 "pip install cmake) and a C compiler")
    out = Path(build_dir) if build_dir is not None else DEFAULT_BUILD_DIR
    configure = [cmake, "-S", str(SOURCE_DIR), "-B", str(out), "-DCMAKE_BUILD_TYPE=Release",
                 f"-DADRENO_RT_SANITIZE={'ON' if sanitize else 'OFF'}"]
    for step in (configure, [cmake, "--build", str(out), "--parallel", "2"]):
        proc = subprocess.run(step, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise NativeRuntimeError(
                f"building the native runtime failed at `{' '.join(step)}`:\n{(proc.stdout + proc.stderr)[-3000:]}\n"
                "It needs a C99 compiler and CMake (Debian: apt install cmake gcc), nothing else")
        if not quiet:
            print(proc.stdout, end="")
    return out


def _pyopencl_dir() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("pyopencl")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


@cache
def pyopencl_opencl_library() -> Path | None:
    """The OpenCL ICD loader that pyopencl uses (the libOpenCL its _cl extension links:
    the one its wheel bundles under pyopencl/.libs, or a system one for a pyopencl built
    against it), or None without pyopencl. On Linux it is read from the libraries mapped
    into this process once pyopencl is imported (exactly the file in use); elsewhere, or
    when that fails, from the wheel's library folders."""
    folder = _pyopencl_dir()
    if folder is None:
        return None
    try:
        import pyopencl  # noqa: F401 - maps its _cl extension and the loader it links
    except ImportError:
        return None
    mapped: list[Path] = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and Path(fields[5].strip()).name.startswith("libOpenCL"):
                    path = Path(fields[5].strip())
                    if path not in mapped and path.is_file():
                        mapped.append(path)
    except OSError:
        pass
    ours = [p for p in mapped if folder.resolve() in p.resolve().parents]
    if ours or mapped:
        return (ours or mapped)[0]
    # Wheels keep their libraries in pyopencl/.libs (this one) or pyopencl.libs/ (auditwheel).
    for libs in (folder / ".libs", folder.parent / "pyopencl.libs"):
        found = sorted(libs.glob("libOpenCL*.so*")) + sorted(libs.glob("libOpenCL*.dylib"))
        if found:
            return found[0]
    return None


def system_opencl_library() -> str | None:
    """The OpenCL library the system's dynamic linker finds by name (what adreno-run
    loads without ADRENO_RT_OPENCL_LIBRARY): ctypes.util.find_library("OpenCL")."""
    return ctypes.util.find_library("OpenCL")


def runner_opencl_env() -> dict[str, str]:
    """What to give `adreno-run` (a C program: it cannot ask pyopencl) so that it loads
    pyopencl's ICD loader, when the system has no OpenCL library of its own; else {} (it
    finds one itself).

    ADRENO_RT_OPENCL_LIBRARY names the loader, and PYOPENCL_HOME (pyopencl's folder) must
    come with it: the ocl-icd in pyopencl's wheels is patched to also read the drivers in
    $PYOPENCL_HOME/.libs, and crashes in its first OpenCL call (a strcpy from the NULL
    getenv result) in a process where that variable is unset. Importing pyopencl sets it
    for Python and its children; a shell does not."""
    if system_opencl_library() is not None:
        return {}
    lib = pyopencl_opencl_library()
    if lib is None:
        return {}
    env = {"ADRENO_RT_OPENCL_LIBRARY": str(lib)}
    folder = _pyopencl_dir()
    if folder is not None:
        env["PYOPENCL_HOME"] = str(folder)
    return env


def runner_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default os.environ) plus `runner_opencl_env()` unless `base` names an
    OpenCL library already: the environment to spawn adreno-run in."""
    env = dict(os.environ if base is None else base)
    if not env.get("ADRENO_RT_OPENCL_LIBRARY"):
        for key, value in runner_opencl_env().items():
            env.setdefault(key, value)
    return env


def write_pocl_icd(folder: str | Path) -> Path | None:
    """Make pyopencl's bundled PoCL visible to the OpenCL ICD loader that libadreno_rt
    and adreno-run load (the system's, or pyopencl's own through ADRENO_RT_OPENCL_LIBRARY):
    write `folder/pocl.icd` naming its absolute path and return `folder`, for
    `OCL_ICD_VENDORS=folder`. None when pyopencl carries no PoCL (a system-wide driver
    registered in /etc/OpenCL/vendors needs nothing)."""
    try:
        import pyopencl
    except ImportError:
        return None
    from adreno_mlir.runtime.device import write_icd

    libs = sorted((Path(pyopencl.__file__).parent / ".libs").glob("libpocl*.so*"))
    if not libs:
        return None
    write_icd(folder, "pocl", libs[0])
    return Path(folder)


def write_default_icd(folder: str | Path) -> Path | None:
    """Make the CPU device that adreno_mlir takes when none is named (`find_device(None)`:
    `PYOPENCL_CTX`, else the default) visible to the OpenCL ICD loader adreno-run loads, as
    the only device there: pyopencl's PoCL (`write_pocl_icd`), or Intel's CPU runtime (where
    PoCL cannot compile for this CPU, `device.pocl_build_error`, or where `PYOPENCL_CTX`
    names it). Returns `folder` for `OCL_ICD_VENDORS=folder`, or None when that device needs
    no `.icd` of ours."""
    from adreno_mlir.runtime.device import find_device, is_intel_cpu, is_pocl, write_intel_icd

    device = find_device(None)
    if is_pocl(device):
        return write_pocl_icd(folder)
    if is_intel_cpu(device):
        return write_intel_icd(folder)
    return None


# --------------------------------------------------------------------------- the C API


class _Options(ctypes.Structure):
    _fields_ = [("device_index", ctypes.c_int), ("device_match", ctypes.c_char_p),
                ("verify_checksums", ctypes.c_int), ("io_mode", ctypes.c_int),
                ("context", ctypes.c_void_p), ("device", ctypes.c_void_p), ("program", ctypes.c_void_p),
                ("opencl_library", ctypes.c_char_p)]


IO_MODES = {"auto": 0, "direct": 1, "pinned": 2}


@cache
def _load(path: str) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise NativeRuntimeError(f"cannot load the native runtime {path}: {e}") from None
    p, i, sz, cp, vp = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p
    sig = {
        "adreno_options_init": (None, [ctypes.POINTER(_Options)]),
        "adreno_open": (i, [cp, ctypes.POINTER(_Options), ctypes.POINTER(p), cp, sz]),
        "adreno_open_memory": (i, [cp, sz, cp, sz, vp, sz, ctypes.POINTER(_Options), ctypes.POINTER(p), cp, sz]),
        "adreno_close": (None, [p]),
        "adreno_error": (cp, [p]),
        "adreno_status_name": (cp, [i]),
        "adreno_run_io": (i, [p, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "adreno_run_typed": (i, [p, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "adreno_set_input": (i, [p, i, vp, sz]),
        "adreno_set_input_i32": (i, [p, i, vp, sz]),
        "adreno_input_dtype": (i, [p, i]),
        "adreno_input_bound": (ctypes.c_int64, [p, i]),
        "adreno_run": (i, [p]),
        "adreno_get_output": (i, [p, i, vp, sz]),
        "adreno_num_inputs": (i, [p]),
        "adreno_num_outputs": (i, [p]),
        "adreno_profile": (i, [p, i, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]),
        "adreno_transfer": (i, [p, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "adreno_transfer_typed": (i, [p, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "adreno_measure_launches": (i, [p, i, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]),
        "adreno_num_launches": (i, [p]),
        "adreno_program_origin": (cp, [p]),
        "adreno_io_mode_name": (cp, [p]),
        "adreno_device_name": (cp, [p]),
        "adreno_version": (cp, []),
        "adreno_opencl_library": (cp, []),
    }
    for name, (res, args) in sig.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise NativeRuntimeError(
                f"the native runtime {path} has no {name}: it was built from older sources; rebuild it "
                "(adreno-mlir build-native)") from None
        fn.restype = res
        fn.argtypes = args
    return lib


def library() -> ctypes.CDLL:
    """The loaded native library; NativeRuntimeError when it is not built."""
    path = library_path()
    if path is None:
        raise NativeRuntimeError(
            f"the native runtime is not built: run `adreno-mlir build-native` (or cmake -S {SOURCE_DIR} "
            f"-B {DEFAULT_BUILD_DIR} && cmake --build {DEFAULT_BUILD_DIR}), or set ADRENO_MLIR_NATIVE_LIB")
    if not path.is_file():
        raise NativeRuntimeError(f"ADRENO_MLIR_NATIVE_LIB={path} does not exist: build the native runtime with "
                                 f"`adreno-mlir build-native` (it writes {DEFAULT_BUILD_DIR / LIBRARY_NAME}), or point "
                                 "ADRENO_MLIR_NATIVE_LIB at a libadreno_rt that exists")
    return _load(str(path))


def manifest_for(plan) -> bytes:
    """The manifest fields the C library reads, for a plan held in memory (no files)."""
    from adreno_mlir.runtime.format import FORMAT_NAME, SOURCE_FILE, WEIGHTS_FILE
    from adreno_mlir.runtime.plan import WEIGHT_ALIGNMENT

    body = plan.to_json()
    # The lowest version that holds it: 2 with i32 inputs (token ids, with their bound), else 1
    # (the plan the binding hands over has no constant outputs: the executor returns those).
    version = 2 if any(t.dtype == "i32" for t in plan.inputs) else 1
    return json.dumps({
        "format": FORMAT_NAME, "format_version": version,
        "program": {"source": SOURCE_FILE, "build_options": body["build_options"]},
        "inputs": body["inputs"], "outputs": body["outputs"], "allocations": body["allocations"],
        "weights": {"file": WEIGHTS_FILE, "alignment": WEIGHT_ALIGNMENT, "bytes": plan.weights_nbytes,
                    "entries": body["weights"]},
        "launches": body["launches"],
    }).encode()


class NativeModel:
    """One `adreno_model` of the C library, opened from a plan in memory on a pyopencl
    context/device/program. `run` is one C call; calls are serialized by a lock (a C
    model runs one inference at a time)."""

    def __init__(self, plan, source: str, weights_blob: bytes, context, program=None, *, io: str | None = None):
        io = io or os.environ.get("ADRENO_MLIR_NATIVE_IO", "auto")
        if io not in IO_MODES:
            raise NativeRuntimeError(f"ADRENO_MLIR_NATIVE_IO must be one of {', '.join(IO_MODES)}, not {io!r}")
        lib = library()
        self._lib = lib
        self.plan = plan
        opts = _Options()
        lib.adreno_options_init(ctypes.byref(opts))
        opts.io_mode = IO_MODES[io]
        opts.context = context.int_ptr
        opts.device = context.devices[0].int_ptr
        opts.program = program.int_ptr if program is not None else None
        loader = pyopencl_opencl_library()  # the loader that made `context`: the C code calls through it too
        opts.opencl_library = os.fsencode(loader) if loader is not None else None
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(4096)
        manifest = manifest_for(plan)
        src = source.encode("utf-8")
        status = lib.adreno_open_memory(manifest, len(manifest), src, len(src), weights_blob, len(weights_blob),
                                        ctypes.byref(opts), ctypes.byref(handle), err, len(err))
        if status != 0:
            raise NativeRuntimeError(f"the native runtime refused the model: {err.value.decode(errors='replace')}")
        self._handle = handle
        self._finalizer = weakref.finalize(self, lib.adreno_close, handle)
        self._lock = threading.Lock()
        self.num_launches = lib.adreno_num_launches(handle)
        self.program_origin = lib.adreno_program_origin(handle).decode()
        self.io_mode = lib.adreno_io_mode_name(handle).decode()
        self._counts = [t.count for t in plan.outputs]
        self._int_inputs = [t.dtype == "i32" for t in plan.inputs]
        self._in_ptrs = (ctypes.c_void_p * len(plan.inputs))()
        self._out_ptrs = (ctypes.c_void_p * len(plan.outputs))()

    def close(self) -> None:
        """Release the C model now (waits for a run in progress on another thread); later
        calls raise NativeRuntimeError instead of touching freed memory."""
        with self._lock:
            self._finalizer()

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise NativeRuntimeError("this native model has been closed")

    def _check(self, status: int) -> None:
        if status != 0:
            message = self._lib.adreno_error(self._handle).decode(errors="replace")
            raise NativeRuntimeError(f"native runtime: {message}")

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One inference: flat float32 outputs for the inputs (float32, or integer token
        ids for an i32 input: an id outside its [-bound, bound) is a NativeRuntimeError
        naming the input, and nothing runs) in one C call."""
        return self._call("adreno_run_typed", inputs)

    def transfer(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """`run`'s input and output copies alone (no launches): for measuring overhead."""
        return self._call("adreno_transfer_typed", inputs)

    def _arrays(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each input as the C library takes it: float32, or int32 for an i32 input. Ids
        that int32 cannot hold (from an int64 array) are refused here, as the C library
        refuses the other ids outside [-bound, bound): narrowing them would wrap them into
        range."""
        arrays = []
        for a, t, integer in zip(inputs, self.plan.inputs, self._int_inputs):
            if not integer:
                arrays.append(np.ascontiguousarray(a, dtype=np.float32))
                continue
            a = np.asarray(a)
            if a.dtype.kind not in "iu":
                raise NativeRuntimeError(f"native runtime: input '{t.name}' takes integer token ids, not {a.dtype}")
            if a.dtype.itemsize > 4 or a.dtype == np.uint32:
                wide = (a < np.iinfo(np.int32).min) | (a > np.iinfo(np.int32).max)
                if wide.any():
                    j = int(np.flatnonzero(wide.reshape(-1))[0])
                    raise NativeRuntimeError(
                        f"native runtime: input '{t.name}' has id {int(a.reshape(-1)[j])} at element {j}, "
                        f"outside [-{t.bound}, {t.bound}) (the extent of the table it indexes); nothing was uploaded")
            arrays.append(np.ascontiguousarray(a, dtype=np.int32))
        return arrays

    def measure_launches(self, n: int) -> tuple[float, float]:
        """(host ms spent enqueueing, wall ms until done), per inference, for `n`
        inferences' launches issued back to back with no copies."""
        issue, total = ctypes.c_double(), ctypes.c_double()
        with self._lock:
            self._check_open()
            self._check(self._lib.adreno_measure_launches(self._handle, n, ctypes.byref(issue), ctypes.byref(total)))
        return issue.value, total.value

    def _call(self, fn: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if len(inputs) != len(self.plan.inputs) or any(np.size(a) != t.count for a, t in zip(inputs, self.plan.inputs)):
            raise ValueError(f"expected {len(self.plan.inputs)} inputs of "
                             f"{[t.count for t in self.plan.inputs]} elements, got {[np.size(a) for a in inputs]}")
        arrays = self._arrays(inputs)
        outs = [np.empty(n, np.float32) for n in self._counts]
        with self._lock:
            self._check_open()
            for k, a in enumerate(arrays):
                self._in_ptrs[k] = a.ctypes.data
            for k, o in enumerate(outs):
                self._out_ptrs[k] = o.ctypes.data
            self._check(getattr(self._lib, fn)(self._handle, self._in_ptrs, self._out_ptrs))
        return outs

    def profile(self, inputs: Sequence[np.ndarray], repeat: int) -> tuple[list[float], float]:
        """Median device milliseconds of each launch over `repeat` inferences, and the
        median span from the first launch's start to the last one's end."""
        times = (ctypes.c_double * max(self.num_launches, 1))()
        span = ctypes.c_double()
        arrays = self._arrays(inputs)
        with self._lock:
            self._check_open()
            for k, a in enumerate(arrays):
                setter = self._lib.adreno_set_input_i32 if self._int_inputs[k] else self._lib.adreno_set_input
                self._check(setter(self._handle, k, a.ctypes.data, a.size))
            self._check(self._lib.adreno_profile(self._handle, repeat, times, ctypes.byref(span)))
        return list(times[: self.num_launches]), span.value


def open_native(runtime: str, plan, source: str, weights_blob, context, program) -> NativeModel | None:
    """A NativeModel for `runtime` ("auto" | "native"), or None when "auto" cannot have one."""
    if runtime == "native":
        return NativeModel(plan, source, bytes(weights_blob), context, program)
    if library_path() is None:
        return None
    try:
        return NativeModel(plan, source, bytes(weights_blob), context, program)
    except NativeRuntimeError as e:
        warnings.warn(f"{e}; running with pyopencl instead", NativeRuntimeWarning, stacklevel=3)
        return None


# --------------------------------------------------------------------------- decoders


class _GenerateOptions(ctypes.Structure):
    """adreno_generate_options."""

    _fields_ = [("max_new_tokens", ctypes.c_int), ("stop_at_eos", ctypes.c_int), ("greedy", ctypes.c_int),
                ("temperature", ctypes.c_float), ("top_k", ctypes.c_int), ("seed", ctypes.c_uint64)]


class _Generation(ctypes.Structure):
    """adreno_generation."""

    _fields_ = [("num_tokens", ctypes.c_int), ("prompt_tokens", ctypes.c_int), ("ttft_ms", ctypes.c_double),
                ("prefill_ms", ctypes.c_double), ("decode_ms", ctypes.c_double),
                ("prefill_tok_s", ctypes.c_double), ("decode_tok_s", ctypes.c_double),
                ("stop_reason", ctypes.c_char_p)]


ADRENO_ERR_INPUT = 11
"""adreno_status's ADRENO_ERR_INPUT: ids outside the vocabulary, a prompt longer than the context."""


@cache
def _decoder_api(path: str) -> ctypes.CDLL:
    """The library of `path` with the adreno_decoder_* functions bound (a library built from
    sources older than decoder artifacts lacks them: NativeRuntimeError, rebuild)."""
    lib = _load(path)
    p, i, sz, cp, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int64
    fp = ctypes.POINTER(ctypes.c_float)
    sig = {
        "adreno_decoder_open": (i, [cp, ctypes.POINTER(_Options), ctypes.POINTER(p), cp, sz]),
        "adreno_decoder_close": (None, [p]),
        "adreno_decoder_error": (cp, [p]),
        "adreno_decoder_model": (p, [p, i]),
        "adreno_decoder_vocab": (i64, [p]),
        "adreno_decoder_max_context": (i64, [p]),
        "adreno_decoder_prefill_chunk": (i64, [p]),
        "adreno_decoder_max_positions": (i64, [p]),
        "adreno_decoder_position": (i64, [p]),
        "adreno_decoder_num_eos": (i, [p]),
        "adreno_decoder_eos": (ctypes.POINTER(ctypes.c_int32), [p]),
        "adreno_decoder_reset": (i, [p]),
        "adreno_decoder_feed": (i, [p, ctypes.POINTER(ctypes.c_int32), sz, fp]),
        "adreno_decoder_step": (i, [p, ctypes.c_int32, fp]),
        "adreno_generate_options_init": (None, [ctypes.POINTER(_GenerateOptions)]),
        "adreno_decoder_generate": (i, [p, ctypes.POINTER(ctypes.c_int32), sz, ctypes.POINTER(_GenerateOptions),
                                        ctypes.POINTER(ctypes.c_int32), fp, ctypes.POINTER(_Generation)]),
        "adreno_num_states": (i, [p]),
    }
    for name, (res, args) in sig.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise NativeRuntimeError(
                f"the native runtime {path} has no {name}: it was built from sources older than decoder artifacts; "
                "rebuild it (adreno-mlir build-native)") from None
        fn.restype = res
        fn.argtypes = args
    return lib


def decoder_library() -> ctypes.CDLL:
    """The loaded native library with its decoder API; NativeRuntimeError when it is not built
    (naming `adreno-mlir build-native`) or too old."""
    library()  # the errors of a library that is not built or not there
    return _decoder_api(str(library_path()))


@dataclass(frozen=True)
class NativeGeneration:
    """What one `adreno_decoder_generate` call returned: the tokens, the logits each was chosen
    from ([tokens, vocab] float32) and the loop's own figures (adreno_generation)."""

    tokens: list[int]
    logits: np.ndarray
    prompt_tokens: int
    ttft_ms: float
    prefill_ms: float
    decode_ms: float
    prefill_tok_s: float
    decode_tok_s: float
    stop_reason: str


class NativeDecoder:
    """One `adreno_decoder` of the C library (adreno_decoder_open on a decoder artifact
    directory): both programs on one context, every weight uploaded once, one KV cache; the
    generation loop (prefill chunks, decode steps, greedy or sampled tokens) runs in C.

    `context`: a pyopencl context to run on (its first device), so the device is the one
    adreno_mlir picks (`device=`, PYOPENCL_CTX, PoCL / Intel's CPU runtime); None lets the C
    library choose (the first GPU, else the first device). Either way it calls OpenCL through
    pyopencl's ICD loader, as `NativeModel` does. Calls are serialized by a lock and release
    the GIL. The artifact's files are read by the constructor, which keeps nothing of them
    open: the directory may be deleted afterwards."""

    def __init__(self, path: str | Path, context=None, *, io: str | None = None, verify_checksums: bool = True):
        io = io or os.environ.get("ADRENO_MLIR_NATIVE_IO", "auto")
        if io not in IO_MODES:
            raise NativeRuntimeError(f"ADRENO_MLIR_NATIVE_IO must be one of {', '.join(IO_MODES)}, not {io!r}")
        lib = decoder_library()
        self._lib = lib
        self.path = Path(path)
        opts = _Options()
        lib.adreno_options_init(ctypes.byref(opts))
        opts.io_mode = IO_MODES[io]
        opts.verify_checksums = 1 if verify_checksums else 0
        self._context = context  # kept alive with the decoder (the C library retains it too)
        if context is not None:
            opts.context = context.int_ptr
            opts.device = context.devices[0].int_ptr
        loader = pyopencl_opencl_library()
        opts.opencl_library = os.fsencode(loader) if loader is not None else None
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(4096)
        status = lib.adreno_decoder_open(os.fsencode(self.path), ctypes.byref(opts), ctypes.byref(handle), err,
                                         len(err))
        if status != 0:
            message = err.value.decode(errors="replace")
            name = lib.adreno_status_name(status).decode()
            raise NativeRuntimeError(f"the native runtime refused the decoder artifact {self.path}: {message} ({name})")
        self._handle = handle
        self._finalizer = weakref.finalize(self, lib.adreno_decoder_close, handle)
        self._lock = threading.Lock()
        self.vocab = int(lib.adreno_decoder_vocab(handle))
        self.max_context = int(lib.adreno_decoder_max_context(handle))
        self.prefill_chunk = int(lib.adreno_decoder_prefill_chunk(handle))
        self.max_positions = int(lib.adreno_decoder_max_positions(handle))
        eos = lib.adreno_decoder_eos(handle)
        self.eos_token_ids = tuple(int(eos[k]) for k in range(lib.adreno_decoder_num_eos(handle)))
        models = [lib.adreno_decoder_model(handle, k) for k in (0, 1)]
        self.program_origin = {name: lib.adreno_program_origin(m).decode() for name, m in zip(("prefill", "decode"),
                                                                                                 models)}
        """Where each program came from: "artifact binary" or "built from source"."""
        self.num_launches = {name: int(lib.adreno_num_launches(m)) for name, m in zip(("prefill", "decode"), models)}
        self.num_states = int(lib.adreno_num_states(models[0]))
        self.device_name = lib.adreno_device_name(models[1]).decode(errors="replace")
        self.io_mode = lib.adreno_io_mode_name(models[1]).decode()
        self._logits = np.empty(self.vocab, np.float32)

    def close(self) -> None:
        """Release the C decoder now (its device memory); later calls raise NativeRuntimeError."""
        with self._lock:
            self._finalizer()

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise NativeRuntimeError("this native decoder has been closed")

    def _check(self, status: int) -> None:
        if status != 0:
            message = self._lib.adreno_decoder_error(self._handle).decode(errors="replace")
            if status == ADRENO_ERR_INPUT:
                raise InputError(message)
            raise NativeRuntimeError(f"native runtime: {message}")

    @property
    def position(self) -> int:
        """Tokens in the cache."""
        with self._lock:
            self._check_open()
            return int(self._lib.adreno_decoder_position(self._handle))

    def reset(self) -> None:
        """Position 0 and a zeroed cache."""
        with self._lock:
            self._check_open()
            self._check(self._lib.adreno_decoder_reset(self._handle))

    @staticmethod
    def _ids(ids: Sequence[int]) -> np.ndarray:
        a = np.asarray(ids, dtype=np.int64).reshape(-1)
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            bad = a[(a < np.iinfo(np.int32).min) | (a > np.iinfo(np.int32).max)][:5].tolist()
            raise InputError(f"token ids {bad} do not fit int32")
        return np.ascontiguousarray(a, dtype=np.int32)

    def feed(self, ids: Sequence[int]) -> np.ndarray:
        """adreno_decoder_feed: append `ids` to the cache; the logits after the last one."""
        a = self._ids(ids)
        out = np.empty(self.vocab, np.float32)
        with self._lock:
            self._check_open()
            self._check(self._lib.adreno_decoder_feed(
                self._handle, a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), a.size,
                out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))
        return out

    def step(self, token: int) -> np.ndarray:
        """adreno_decoder_step: one decode step; the next token's logits."""
        token = int(self._ids([token])[0])
        out = np.empty(self.vocab, np.float32)
        with self._lock:
            self._check_open()
            self._check(self._lib.adreno_decoder_step(self._handle, token,
                                                      out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))
        return out

    def generate(self, prompt: Sequence[int], max_new_tokens: int, *, greedy: bool = True, temperature: float = 1.0,
                 top_k: int = 0, seed: int = 0, stop_at_eos: bool = True) -> NativeGeneration:
        """adreno_decoder_generate: the whole loop in one C call, from an empty cache. Sampling
        (greedy=False) uses the C library's generator (splitmix64 seeded by `seed`), not numpy's."""
        a = self._ids(prompt)
        if not 1 <= max_new_tokens:
            raise NativeRuntimeError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        # The loop stops when the cache is full: after a prompt of p tokens it makes at most
        # max_context - p + 1 tokens. Room for one more than that keeps the buffers (and
        # max_new_tokens) small without changing which reason stops it.
        room = max(1, min(int(max_new_tokens), self.max_context - a.size + 2, np.iinfo(np.int32).max))
        opts = _GenerateOptions()
        self._lib.adreno_generate_options_init(ctypes.byref(opts))
        opts.max_new_tokens = room
        opts.stop_at_eos = 1 if stop_at_eos else 0
        opts.greedy = 1 if greedy else 0
        opts.temperature = float(temperature)
        opts.top_k = int(top_k)
        opts.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        tokens = np.zeros(room, np.int32)
        logits = np.empty((room, self.vocab), np.float32)
        result = _Generation()
        with self._lock:
            self._check_open()
            self._check(self._lib.adreno_decoder_generate(
                self._handle, a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), a.size, ctypes.byref(opts),
                tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), ctypes.byref(result)))
        n = result.num_tokens
        return NativeGeneration(tokens=[int(t) for t in tokens[:n]], logits=logits[:n].copy(),
                                prompt_tokens=int(result.prompt_tokens), ttft_ms=float(result.ttft_ms),
                                prefill_ms=float(result.prefill_ms), decode_ms=float(result.decode_ms),
                                prefill_tok_s=float(result.prefill_tok_s), decode_tok_s=float(result.decode_tok_s),
                                stop_reason=(result.stop_reason or b"").decode())
