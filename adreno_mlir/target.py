"""Target profiles: the device facts that compilation decisions depend on.

A `TargetProfile` answers the questions the passes ask: does this image fit (annotate-texture-
scope falls back to a global buffer when it does not), is it a GPU (occupancy schedules, images by
default), what local size to prefer, how large may a work-group be, may we store in fp16.

Named profiles are fixed (their sources are cited per value below; see also
shared/design/anchors.md); `get_profile("auto")` reads the live OpenCL device through pyopencl.

Live devices also have names, `device-<device name>` (`live_profile_name`): `get_profile` resolves
such a name lazily from the OpenCL devices of this machine, so a pipeline string that names one
(`annotate-texture-scope{target=device-...}`) replays under `adreno-opt` on the same machine. They
are never added to the registry (`list_profiles` lists only the fixed profiles); a small bounded
cache keeps the last few.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "TargetProfile",
    "estimate_peaks",
    "get_profile",
    "list_profiles",
    "live_profile",
    "live_profile_name",
    "profile_from_device",
    "register_profile",
]


@dataclass(frozen=True)
class TargetProfile:
    """What the compiler needs to know about a device.

    name: profile name (`adreno-660`, ..., `device-<device name>` for a live device;
        `auto:<device name>` from `profile_from_device`).
    max_image_width / max_image_height: image2d limits in pixels (CL_DEVICE_IMAGE2D_MAX_*).
    preferred_work_group_size: default 3-D local size for kernels without a tuned one.
    max_work_group_size: CL_DEVICE_MAX_WORK_GROUP_SIZE.
    supports_fp16: `cl_khr_fp16` is available (half storage / arithmetic allowed).
    local_memory_bytes: CL_DEVICE_LOCAL_MEM_SIZE.
    is_gpu: CL_DEVICE_TYPE_GPU.
    supports_images: CL_DEVICE_IMAGE_SUPPORT (without it everything lives in buffers).
    peak_gflops_fp32 / peak_gflops_fp16: peak arithmetic in GFLOP/s (an FMA counts 2), and
    memory_gbps: DRAM bandwidth in GB/s, for the roofline model of `adreno-mlir analyze`
        (adreno_mlir/analyze.py); 0 = unknown. Named profiles cite their sources below;
        live devices are estimated by `estimate_peaks`. `peak_source` says where they came from.
    compute_units: CL_DEVICE_MAX_COMPUTE_UNITS (0 = unknown; the analyzer's occupancy target).
    """

    name: str
    max_image_width: int
    max_image_height: int
    preferred_work_group_size: tuple[int, int, int]
    max_work_group_size: int
    supports_fp16: bool
    local_memory_bytes: int
    is_gpu: bool
    supports_images: bool
    peak_gflops_fp32: float = 0.0
    peak_gflops_fp16: float = 0.0
    memory_gbps: float = 0.0
    compute_units: int = 0
    peak_source: str = ""
    split_fma: bool = False
    """Print multiply-adds as `a * b + c` that the compiler may contract
    (convert-graph-to-opencl{fma=contract}): the device's OpenCL compiler does not vectorize
    `fma()` calls. PoCL: a 1x1 convolution ran at 3.1 GFLOP/s with fma() and 20.7 with
    a * b + c under FP_CONTRACT OFF (`split`); letting it contract them took resnet18 from
    62.0 to 52.7 ms and vit_b_32 from 198 to 164 (docs/bench/issue30/fp-contract). Intel's
    CPU runtime was 10% faster with fma() on resnet18, so only PoCL devices set it."""

    @property
    def has_peaks(self) -> bool:
        """Whether the roofline figures (FP32 peak and memory bandwidth) are known."""
        return self.peak_gflops_fp32 > 0 and self.memory_gbps > 0

    def fits_image(self, width: int, height: int) -> bool:
        """Whether a width x height image can be created on this target."""
        return (
            self.supports_images
            and 0 < width <= self.max_image_width
            and 0 < height <= self.max_image_height
        )


# ------------------------------------------------------------------------------------------
# Named profiles
# ------------------------------------------------------------------------------------------

# TVM's Adreno target (python/tvm/target/target.py, `adreno` tag) sets
#   texture_spatial_limit = 16384      -> max image width/height, Adreno 6xx and 7xx alike
_TVM_ADRENO_IMAGE_LIMIT = 16384

_PROFILES: dict[str, TargetProfile] = {}

# Peak figures of the named Adreno profiles (the roofline of adreno_mlir/analyze.py).
# Adreno 660 (Snapdragon 888): "1536 fp32 / clock, 1382.4 gflops; 3072 fp16 / clock, 2764.8
# gflops" at 900 MHz (Adreno 660 core config, github.com/azhirnov/cpu-gpu-arch gpu/Adreno-600.md).
# Memory: LPDDR5-3200, 64-bit = 6400 MT/s x 8 bytes = 51.2 GB/s (nanoreview.net, Snapdragon 888:
# "51.2 GB/s").
_ADRENO_660_PEAKS = {"peak_gflops_fp32": 1382.4, "peak_gflops_fp16": 2764.8, "memory_gbps": 51.2,
                     "peak_source": "published: azhirnov/cpu-gpu-arch Adreno-600.md; LPDDR5-3200 51.2 GB/s"}
# Adreno 740 (Snapdragon 8 Gen 2): ESTIMATE. Qualcomm's Snapdragon XR2 Gen 2 product brief gives
# the same Adreno 740 1.8 TFLOPS FP32 at 600 MHz (quoted in azhirnov/cpu-gpu-arch
# gpu/Adreno-700.md), i.e. 3000 FLOPs per clock; scaled to Snapdragon 8 Gen 2's 680 MHz (base
# clock of primua.com's Adreno 740 spec sheet) = 2040 GFLOP/s. FP16: 2x FP32, the ratio published
# for Adreno 660 and Adreno 750 (same source). Memory: "LPDDR5X up to 4,200MHz" (Qualcomm's launch,
# wccftech.com) = 8400 MT/s x 64-bit bus (8 bytes) = 67.2 GB/s.
_ADRENO_740_PEAKS = {"peak_gflops_fp32": 2040.0, "peak_gflops_fp16": 4080.0, "memory_gbps": 67.2,
                     "peak_source": "estimate: XR2 Gen 2's 1.8 TFLOPS at 600 MHz scaled to 680 MHz; "
                                    "LPDDR5X-4200 x 64-bit = 67.2 GB/s"}


def register_profile(profile: TargetProfile) -> TargetProfile:
    """Add (or replace) a named profile."""
    _PROFILES[profile.name] = profile
    return profile


# Adreno 660 (Snapdragon 888; the device of TVM's reported numbers).
register_profile(
    TargetProfile(
        name="adreno-660",
        max_image_width=_TVM_ADRENO_IMAGE_LIMIT,  # TVM texture_spatial_limit
        max_image_height=_TVM_ADRENO_IMAGE_LIMIT,
        # 16x4x4 = 256 threads: the local size of ir-levels.md's conv example; 256 is also
        # TVM's thread cap for cross-work-group reductions on Adreno.
        preferred_work_group_size=(16, 4, 4),
        max_work_group_size=1024,  # CL_DEVICE_MAX_WORK_GROUP_SIZE reported by Adreno 6xx drivers
        supports_fp16=True,  # Adreno exposes cl_khr_fp16; TVM reports FP16 numbers on it
        local_memory_bytes=32 * 1024,  # CL_DEVICE_LOCAL_MEM_SIZE reported by Adreno 6xx (32 KiB)
        is_gpu=True,
        supports_images=True,
        **_ADRENO_660_PEAKS,  # sources above
    )
)

# Adreno 740 (Snapdragon 8 Gen 2). Same TVM target facts; 7xx drivers report the same
# work-group limit. Local memory: 32 KiB assumed (conservative; not measured here).
register_profile(
    TargetProfile(
        name="adreno-740",
        max_image_width=_TVM_ADRENO_IMAGE_LIMIT,
        max_image_height=_TVM_ADRENO_IMAGE_LIMIT,
        preferred_work_group_size=(16, 4, 4),
        max_work_group_size=1024,
        supports_fp16=True,
        local_memory_bytes=32 * 1024,
        is_gpu=True,
        supports_images=True,
        **_ADRENO_740_PEAKS,  # sources (and what is estimated) above
    )
)

# PoCL on the CPU (the test device of this project). Values measured with pyopencl on
# PoCL 3.x pthread (x86-64): image2d 8192x8192, max work-group 4096, local memory 2 MiB,
# no cl_khr_fp16, image support yes.
register_profile(
    TargetProfile(
        name="pocl-cpu",
        max_image_width=8192,
        max_image_height=8192,
        preferred_work_group_size=(16, 4, 1),  # heuristic: a few SIMD-widths per work-group
        max_work_group_size=4096,
        supports_fp16=False,
        local_memory_bytes=2 * 1024 * 1024,
        is_gpu=False,
        supports_images=True,
        split_fma=True,
    )
)

# NVIDIA's OpenCL driver (Ampere/Hopper class), values as commonly reported by clinfo:
# image2d 32768x32768, max work-group 1024, local memory 48 KiB, no cl_khr_fp16 extension.
register_profile(
    TargetProfile(
        name="nvidia-opencl",
        max_image_width=32768,
        max_image_height=32768,
        preferred_work_group_size=(32, 4, 2),  # a warp wide, 256 threads
        max_work_group_size=1024,
        supports_fp16=False,
        local_memory_bytes=48 * 1024,
        is_gpu=True,
        supports_images=True,
    )
)

# NVIDIA H200 (SXM), the GPU the project's desktop measurements run on (docs/measurements.md):
# 132 streaming multiprocessors; "FP32 67 teraFLOPS", "GPU memory bandwidth 4.8TB/s" (NVIDIA's
# H200 datasheet). Compiling for it on another machine gives the schedules the live H200 gets
# (the gemm family's local tiles and K groups need the compute-unit count; tests check them
# on PoCL: tests/test_hf_models.py).
register_profile(
    TargetProfile(
        name="nvidia-h200",
        max_image_width=32768,
        max_image_height=32768,
        preferred_work_group_size=(32, 4, 2),
        max_work_group_size=1024,
        supports_fp16=False,
        local_memory_bytes=48 * 1024,
        is_gpu=True,
        supports_images=True,
        peak_gflops_fp32=67000.0,
        memory_gbps=4800.0,
        compute_units=132,
        peak_source="published: NVIDIA H200 datasheet (FP32 67 TFLOPS, 4.8 TB/s)",
    )
)

# A deliberately tiny device for tests: any image above 64x64 does not fit, which forces the
# global-buffer fallback of annotate-texture-scope.
register_profile(
    TargetProfile(
        name="tiny-test",
        max_image_width=64,
        max_image_height=64,
        preferred_work_group_size=(4, 4, 1),
        max_work_group_size=256,
        supports_fp16=False,
        local_memory_bytes=16 * 1024,
        is_gpu=True,
        supports_images=True,
    )
)


# ------------------------------------------------------------------------------------------
# Live devices
# ------------------------------------------------------------------------------------------

def _info(device: Any, attr: str, default: Any) -> Any:
    try:
        return getattr(device, attr)
    except Exception:  # noqa: BLE001 - drivers reject queries they do not know
        return default


def _preferred_wg(is_gpu: bool, max_wg: int) -> tuple[int, int, int]:
    """A default local size that respects `max_wg` (16x4x4 on GPUs, 16x4x1 on CPUs)."""
    wg = [16, 4, 4] if is_gpu else [16, 4, 1]
    while wg[0] * wg[1] * wg[2] > max_wg:
        i = max(range(3), key=lambda k: wg[k])
        wg[i] = max(1, wg[i] // 2)
    return (wg[0], wg[1], wg[2])


# Peak figures of live devices. Every number the estimate uses is here, with its source or
# marked as an assumption.
_KNOWN_DEVICES: tuple[tuple[str, float, float, float, str], ...] = (
    # (fragment of CL_DEVICE_NAME, FP32 GFLOP/s, FP16 GFLOP/s, memory GB/s, source)
    # NVIDIA H200 datasheet: 4.8 TB/s HBM3e. FP32 non-tensor: 132 SMs x 128 lanes x 2 x 1.98 GHz
    # = 66.9 TFLOPS (the GH100 SM count and boost clock of NVIDIA's H100 whitepaper, whose table
    # also gives FP16 non-tensor as 2x FP32, 133.8 TFLOPS).
    ("H200", 66_908.0, 133_816.0, 4_800.0,
     "NVIDIA H200 datasheet (4.8 TB/s); FP32 132 SMs x 128 x 2 x 1.98 GHz"),
)
_NVIDIA_LANES = 128  # FP32 lanes per SM (Ampere/Hopper: 4 partitions x 32; NVIDIA whitepapers)
_CPU_LANES = 16  # assumption: AVX2 FMA, 8 float lanes x 2 FMA units per core
_OTHER_GPU_LANES = 64  # assumption: lanes per compute unit of another GPU (an AMD CU's 64)
_CPU_MEMORY_GBPS = 20.0  # assumption: a CPU's DRAM bandwidth when nothing better is known
_GPU_MEMORY_GBPS = 100.0  # assumption: an unknown GPU's memory bandwidth


def estimate_peaks(device: Any, is_gpu: bool, supports_fp16: bool) -> dict[str, Any]:
    """Roofline figures of a `pyopencl.Device` (the `peak_*`, `memory_gbps`, `compute_units`
    and `peak_source` fields of its profile): the `_KNOWN_DEVICES` entry whose fragment is in
    its name, else compute units x max clock (MHz) x lanes x 2 (an FMA is 2 FLOPs) with
    128 lanes on NVIDIA GPUs, 16 on CPUs, 64 on other GPUs, and the assumed memory bandwidth
    above. FP16 is 2x FP32 on a GPU with cl_khr_fp16, else the same as FP32 (assumption: no
    faster half ALUs)."""
    name = str(_info(device, "name", "")).strip()
    units = int(_info(device, "max_compute_units", 0) or 0)
    for fragment, fp32, fp16, gbps, source in _KNOWN_DEVICES:
        if fragment.lower() in name.lower():
            return {"peak_gflops_fp32": fp32, "peak_gflops_fp16": fp16, "memory_gbps": gbps,
                    "compute_units": units, "peak_source": source}
    mhz = int(_info(device, "max_clock_frequency", 0) or 0)
    clock_note = ""
    if mhz <= 0:  # not reported (Intel's CPU runtime on an AMD CPU says 0): the host's clock, or a guess
        mhz, clock_note = _unreported_clock_mhz(is_gpu)
    vendor = str(_info(device, "vendor", "")).lower()
    if not is_gpu:
        lanes, gbps, what = _CPU_LANES, _CPU_MEMORY_GBPS, "CPU"
    elif "nvidia" in vendor or "nvidia" in name.lower():
        lanes, gbps, what = _NVIDIA_LANES, _GPU_MEMORY_GBPS, "NVIDIA GPU"
    else:
        lanes, gbps, what = _OTHER_GPU_LANES, _GPU_MEMORY_GBPS, "GPU"
    fp32 = units * mhz * lanes * 2 / 1000.0
    fp16 = 2 * fp32 if is_gpu and supports_fp16 else fp32
    return {"peak_gflops_fp32": fp32, "peak_gflops_fp16": fp16, "memory_gbps": gbps, "compute_units": units,
            "peak_source": f"estimate: {units} compute units x {mhz} MHz{clock_note} x {lanes} lanes x 2 ({what}); "
                           f"memory {gbps:g} GB/s assumed"}


_ASSUMED_CLOCK_MHZ = {False: 2000, True: 1000}
"""The clock assumed (CPU, GPU) for a device that reports none and whose host says none."""


def _unreported_clock_mhz(is_gpu: bool) -> tuple[int, str]:
    """(MHz, a note for `peak_source`) for a device whose max_clock_frequency is 0: a CPU
    device runs at the host's clock (the fastest core in /proc/cpuinfo, on Linux), anything
    else at an assumed clock."""
    if not is_gpu:
        try:
            with open("/proc/cpuinfo") as f:
                clocks = [float(line.split(":")[1]) for line in f if line.lower().startswith("cpu mhz")]
            if clocks and max(clocks) > 0:
                return int(max(clocks)), " (the device reports no clock: /proc/cpuinfo's)"
        except (OSError, ValueError, IndexError):
            pass
    mhz = _ASSUMED_CLOCK_MHZ[is_gpu]
    return mhz, " (the device reports no clock: assumed)"


def profile_from_device(device: Any) -> TargetProfile:
    """Build a profile from a `pyopencl.Device` (peak figures from `estimate_peaks`)."""
    import pyopencl as cl

    is_gpu = bool(int(device.type) & int(cl.device_type.GPU))
    supports_images = bool(_info(device, "image_support", False))
    supports_fp16 = "cl_khr_fp16" in str(_info(device, "extensions", ""))
    max_wg = int(device.max_work_group_size)
    return TargetProfile(
        name=f"auto:{str(device.name).strip()}",
        max_image_width=int(_info(device, "image2d_max_width", 0)) if supports_images else 0,
        max_image_height=int(_info(device, "image2d_max_height", 0)) if supports_images else 0,
        preferred_work_group_size=_preferred_wg(is_gpu, max_wg),
        max_work_group_size=max_wg,
        supports_fp16=supports_fp16,
        local_memory_bytes=int(_info(device, "local_mem_size", 0)),
        is_gpu=is_gpu,
        supports_images=supports_images,
        split_fma="portable computing language" in str(device.platform.name).lower(),
        **estimate_peaks(device, is_gpu, supports_fp16),
    )


LIVE_PREFIX = "device-"
_LIVE_CACHE_SIZE = 8
_live_profiles: OrderedDict[str, TargetProfile] = OrderedDict()
"""The last few live-device profiles by name (bounded: never grows with the number of compiles)."""


def live_profile_name(device: Any) -> str:
    """The name under which `get_profile` finds the profile of `device` (a `pyopencl.Device`):
    `device-` and the device's name, lower-case, runs of other characters as one `-`."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(device.name).strip().lower()).strip("-")
    return LIVE_PREFIX + (slug or "unnamed")


def _remember(profile: TargetProfile) -> TargetProfile:
    _live_profiles[profile.name] = profile
    _live_profiles.move_to_end(profile.name)
    while len(_live_profiles) > _LIVE_CACHE_SIZE:
        _live_profiles.popitem(last=False)
    return profile


def live_profile(device: Any) -> TargetProfile:
    """The profile of `device`, named `live_profile_name(device)` (cached, not registered)."""
    name = live_profile_name(device)
    cached = _live_profiles.get(name)
    if cached is not None:
        _live_profiles.move_to_end(name)
        return cached
    return _remember(replace(profile_from_device(device), name=name))


def _find_live(name: str) -> TargetProfile:
    """Resolve a `device-...` name against the OpenCL devices of this machine."""
    cached = _live_profiles.get(name)
    if cached is not None:
        _live_profiles.move_to_end(name)
        return cached
    import pyopencl as cl

    seen = []
    for platform in cl.get_platforms():
        try:
            devices = platform.get_devices()
        except cl.Error:  # a platform without devices
            continue
        for device in devices:
            if live_profile_name(device) == name:
                return live_profile(device)
            seen.append(live_profile_name(device))
    raise ValueError(
        f"unknown target profile '{name}': no OpenCL device of this machine has that name "
        f"(live devices: {', '.join(seen) or 'none'}; fixed profiles: {', '.join(_PROFILES)}, auto)"
    )


def list_profiles() -> list[str]:
    """Names of the registered (fixed) profiles. `get_profile` accepts `auto` and the
    `device-<name>` of any OpenCL device of this machine as well; those are never listed."""
    return list(_PROFILES)


def get_profile(name: str, device: Any = None) -> TargetProfile:
    """The profile called `name`, or for `"auto"` the profile of `device` (a
    `pyopencl.Device`; default: the first device of
    `pyopencl.create_some_context(interactive=False)`, which respects PYOPENCL_CTX), or for
    `"device-<name>"` the profile of that OpenCL device of this machine (see `live_profile`)."""
    if name == "auto":
        if device is None:
            import pyopencl as cl

            device = cl.create_some_context(interactive=False).devices[0]
        return profile_from_device(device)
    if name in _PROFILES:
        return _PROFILES[name]
    if name.startswith(LIVE_PREFIX):
        return _find_live(name)
    known = ", ".join([*_PROFILES, "auto", f"{LIVE_PREFIX}<OpenCL device name>"])
    raise ValueError(f"unknown target profile '{name}'; known profiles: {known}")
