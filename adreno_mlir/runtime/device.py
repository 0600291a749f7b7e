"""Choosing the OpenCL device.

Default: PoCL's CPU device (installed by `pyopencl[pocl]`), so everything runs on a
machine without a GPU. `PYOPENCL_CTX` or an explicit `device=` string selects another
one: `"pocl"`, `"nvidia"`, `"gpu"`, a platform/device name fragment, or pyopencl's
`"P:D"` index form.

Where PoCL cannot compile for the host CPU (pyopencl's PoCL is built on LLVM 14, which
does not know CPUs newer than itself, such as AMD's Zen 5: it asks for target CPU
"generic", and every build fails with "unknown target CPU 'generic'"), the default is
Intel's CPU runtime from PyPI (`intel-opencl-rt`, a test dependency) when it is
installed, and otherwise an error that says so: see `pocl_build_error`.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

import pyopencl as cl

from adreno_mlir.errors import CompileError


class DeviceError(CompileError):
    pass


POCL_STARTUP_DEFAULTS = {"POCL_WORK_GROUP_SPECIALIZATION": "0"}
"""PoCL settings applied (to this process's environment, so subprocesses inherit them)
unless the user set them, whenever OpenCL devices are looked up; PoCL reads this one at
each kernel's first launch, so it takes effect even if PoCL was started earlier.

PoCL's program binaries (what our program cache and saved artifacts keep) hold each
kernel compiled for any local size. With work-group specialization on (PoCL's default)
PoCL still recompiles every kernel for its local size at its first launch, about 8 s
for MobileNetV2's 32 kernels when its own kernel cache is cold or off, so a cached
binary started no faster than source. Off, the first inference of a loaded MobileNetV2
takes 0.12 s instead of 8 s, and steady-state latency was unchanged within noise on
MobileNetV2, ResNet-18, SqueezeNet, GoogLeNet and EfficientNet-B0 (docs/startup.md).
Set POCL_WORK_GROUP_SPECIALIZATION=1 to get PoCL's default back."""


def _apply_driver_defaults() -> None:
    for key, value in POCL_STARTUP_DEFAULTS.items():
        os.environ.setdefault(key, value)


def _all_devices() -> list[cl.Device]:
    _apply_driver_defaults()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise DeviceError(
            f"no OpenCL platform found ({e}); install an OpenCL driver, e.g. pip install 'pyopencl[pocl]'"
        ) from None
    return [d for p in platforms for d in p.get_devices()]


def devices_like(spec: str | None = None) -> list[str]:
    """Specs (`platform:device` indices) of every device of this machine with the same
    platform and name as `find_device(spec)`: the local devices a tuning run can spread
    over, one worker each (e.g. both GPUs of a two-GPU machine)."""
    first = find_device(spec)
    key = (first.platform.name, first.name)
    return [f"{p}:{d}" for p, plat in enumerate(cl.get_platforms()) for d, dev in enumerate(plat.get_devices())
            if (plat.name, dev.name) == key]


def is_pocl(device: cl.Device) -> bool:
    return "portable computing language" in device.platform.name.lower()


_POCL_PROBE = "__kernel void probe(__global float *a) { a[get_global_id(0)] = 1.0f; }"

_pocl_errors: dict[int, str | None] = {}


def pocl_build_error(device: cl.Device) -> str | None:
    """Why PoCL's CPU device cannot build OpenCL C on this machine, or None when it can.

    PoCL names the host CPU as LLVM reports it, in its version string's `HSTR:` part.
    LLVM 14 (pyopencl's PoCL) reports a CPU it does not know, such as AMD's Zen 5, as
    "generic", and then refuses that name as a target CPU, so every build fails. Only
    then (a version string ending in `-generic`) is a one-line kernel built to be sure;
    the answer is kept per device for the process."""
    key = device.int_ptr
    if key not in _pocl_errors:
        error = None
        if device.version.strip().endswith("-generic"):
            try:
                cl.Program(_context_for(device), _POCL_PROBE).build()
            except cl.Error as e:
                lines = [ln.strip() for ln in str(e).splitlines() if "error:" in ln]
                error = lines[0] if lines else type(e).__name__
        _pocl_errors[key] = error
    return _pocl_errors[key]


def is_intel_cpu(device: cl.Device) -> bool:
    """Intel's CPU OpenCL runtime (`use_intel_cpu_runtime`)."""
    return "intel" in device.platform.name.lower() and bool(device.type & cl.device_type.CPU)


def default_device() -> cl.Device:
    """The device when none is named: PoCL's CPU device, or where PoCL cannot build for
    this CPU (`pocl_build_error`) Intel's CPU runtime if installed; else the first
    device listed."""
    use_intel_cpu_runtime()  # the fallback, registered before the platforms are first listed
    devices = _all_devices()
    if not devices:
        raise DeviceError("no OpenCL devices found")
    pocl = next((d for d in devices if is_pocl(d)), None)
    if pocl is None:
        return devices[0]
    why = pocl_build_error(pocl)
    if why is None:
        return pocl
    intel = next((d for d in devices if is_intel_cpu(d)), None)
    if intel is not None:
        return intel
    raise DeviceError(
        f"PoCL's CPU device ({pocl.name.strip()}) cannot compile OpenCL C on this machine: {why}. pyopencl's "
        "PoCL is built on LLVM 14, which does not know this CPU. Install Intel's CPU OpenCL runtime "
        "(pip install intel-opencl-rt intel-cmplr-lib-rt; adreno-mlir then uses it by default), or name "
        "another device with device=... or PYOPENCL_CTX")


def find_device(spec: str | None = None) -> cl.Device:
    spec = spec if spec is not None else os.environ.get("PYOPENCL_CTX")
    if not spec:
        return default_device()
    if "intel" in spec.lower():
        use_intel_cpu_runtime()  # pip's Intel CPU runtime, if installed (before platforms are listed)
    devices = _all_devices()
    if not devices:
        raise DeviceError("no OpenCL devices found")
    names = ", ".join(f"{d.platform.name} / {d.name}" for d in devices)
    if ":" in spec and spec.replace(":", "").isdigit():
        p, _, d = spec.partition(":")
        plats = cl.get_platforms()
        try:
            return plats[int(p)].get_devices()[int(d or 0)]
        except IndexError:
            raise DeviceError(f"no OpenCL device '{spec}' (platform:device); available: {names}") from None
    key = spec.lower()
    if key == "gpu":
        for d in devices:
            if d.type & cl.device_type.GPU:
                return d
    name_part, _, index = key.partition(":")
    if name_part == "pocl":
        name_part = "portable computing language"
    matches = [d for d in devices if name_part in d.platform.name.lower() or name_part in d.name.lower()]
    k = int(index) if index.isdigit() else 0
    if k < len(matches):
        return matches[k]
    raise DeviceError(f"no OpenCL device matches '{spec}'; available: {names}")


@cache
def _context_for(device: cl.Device) -> cl.Context:
    return cl.Context([device])


def default_context(spec: str | None = None) -> cl.Context:
    return _context_for(find_device(spec))


def describe_device(device: cl.Device) -> str:
    return f"{device.platform.name} / {device.name} ({device.version.strip()})"


HALF_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable"
"""What the OpenCL C printer writes when a kernel computes in half."""


def check_half_support(device: cl.Device) -> None:
    """Refuse half arithmetic (precision="fp16") on a device without cl_khr_fp16, whose
    compiler would reject every `half4` of the program."""
    if "cl_khr_fp16" not in device.extensions.split():
        raise DeviceError(
            f"precision='fp16' computes in half, which needs the cl_khr_fp16 extension; device '{device.name.strip()}' "
            f"({device.platform.name.strip()}) does not have it. Use precision='fp16-acc32' (fp16 storage, fp32 "
            "arithmetic: no extension needed) or a device that lists cl_khr_fp16")


def write_icd(folder: str | Path, name: str, library: str | Path) -> Path:
    """Write `folder/name.icd` naming `library`'s absolute path (atomically, unchanged
    when it already says so): an OpenCL ICD loader given `OCL_ICD_VENDORS=folder` then
    lists that driver."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    icd = folder / f"{name}.icd"
    text = f"{Path(library).resolve()}\n"
    if not icd.is_file() or icd.read_text() != text:
        tmp = folder / f".{name}.icd.{os.getpid()}"
        tmp.write_text(text)
        tmp.replace(icd)
    return icd


def intel_cpu_library() -> Path | None:
    """`libintelocl.so` of Intel's CPU OpenCL runtime installed from PyPI
    (`pip install intel-opencl-rt`, which puts it in the environment's lib/), or None."""
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix]):
        lib = Path(prefix) / "lib" / "libintelocl.so"
        if lib.is_file():
            return lib
    return None


def write_intel_icd(folder: str | Path) -> Path | None:
    """Register Intel's CPU OpenCL runtime from PyPI with the ICD loader: its wheel ships
    an `.icd` file holding a placeholder path, so write `folder/intel.icd` naming the
    installed `libintelocl.so` and return `folder`, for `OCL_ICD_VENDORS=folder` (set
    before the process first lists OpenCL platforms; pyopencl's bundled loader keeps
    listing PoCL and Oclgrind beside it). None when the runtime is not installed.

    Intel's CPU device is the one here with cl_khr_fp16, so precision="fp16" (half
    arithmetic) is tested on it (`device="intel"`)."""
    lib = intel_cpu_library()
    if lib is None:
        return None
    write_icd(folder, "intel", lib)
    return Path(folder)


def use_intel_cpu_runtime() -> Path | None:
    """Make Intel's CPU OpenCL runtime (if installed from PyPI) visible to this process
    and its children: unless OCL_ICD_VENDORS is set already, write its `.icd` (and copies
    of the system's) into `cache_root("icd")/<hash of them>` once and set
    OCL_ICD_VENDORS to it. Call it before the first OpenCL
    platform query (the ICD loader reads the variable once). Returns the folder, or None
    when nothing was done."""
    lib = intel_cpu_library()
    if "OCL_ICD_VENDORS" in os.environ or lib is None:
        return None
    import hashlib
    import shutil
    import tempfile

    from adreno_mlir.runtime.program_cache import cache_root

    # OCL_ICD_VENDORS replaces the system's vendor folder: keep its drivers listed. The
    # folder is named by what it holds, so every process shares one (none left in /tmp).
    system = Path("/etc/OpenCL/vendors")
    icds = sorted(system.glob("*.icd")) if system.is_dir() else []
    key = hashlib.sha256("\0".join([str(lib), *(f"{i.name}={i.read_text(errors='replace')}" for i in icds)])
                         .encode()).hexdigest()[:16]
    root = cache_root("icd")
    folder = root / key
    if not (folder / "intel.icd").is_file():
        root.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
        try:
            write_intel_icd(partial)
            for icd in icds:
                if not (partial / icd.name).exists():
                    shutil.copyfile(icd, partial / icd.name)
            try:
                partial.rename(folder)
            except OSError:  # another process made it first: the same files
                if not (folder / "intel.icd").is_file():
                    raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return folder
