"""Choosing the OpenCL device.

Default: PoCL's CPU device (installed by `pyopencl[pocl]`), so everything runs on a
machine without a GPU. `PYOPENCL_CTX` or an explicit `device=` string selects another
one: `"pocl"`, `"nvidia"`, `"gpu"`, a platform/device name fragment, or pyopencl's
`"P:D"` index form.
"""

from __future__ import annotations

import os
from functools import cache

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


def find_device(spec: str | None = None) -> cl.Device:
    devices = _all_devices()
    if not devices:
        raise DeviceError("no OpenCL devices found")
    spec = spec if spec is not None else os.environ.get("PYOPENCL_CTX")
    if not spec:
        for d in devices:
            if "portable computing language" in d.platform.name.lower():
                return d
        return devices[0]
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
