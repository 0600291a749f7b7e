"""Target profiles: the device facts that compilation decisions depend on.

A `TargetProfile` answers the questions the passes ask: does this image fit (annotate-texture-
scope falls back to a global buffer when it does not), how large may a work-group be, may we store
in fp16, how many kernel arguments may a kernel take.

Named profiles are fixed (their sources are cited per value below; see also
shared/design/anchors.md); `get_profile("auto")` reads the live OpenCL device through pyopencl.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "TargetProfile",
    "get_profile",
    "list_profiles",
    "profile_from_device",
    "register_profile",
]


@dataclass(frozen=True)
class TargetProfile:
    """What the compiler needs to know about a device.

    name: profile name (`adreno-660`, ..., `auto:<device name>` for a live device).
    max_image_width / max_image_height: image2d limits in pixels (CL_DEVICE_IMAGE2D_MAX_*).
    image_pitch_alignment: bytes; alignment of an image's base address / row pitch when it is
        created as a view over a buffer (cl_khr_image2d_from_buffer).
    preferred_work_group_size: default 3-D local size for kernels without a tuned one.
    max_work_group_size: CL_DEVICE_MAX_WORK_GROUP_SIZE.
    supports_fp16: `cl_khr_fp16` is available (half storage / arithmetic allowed).
    local_memory_bytes: CL_DEVICE_LOCAL_MEM_SIZE.
    max_kernel_args: most arguments one kernel may take (split or pack beyond it).
    is_gpu: CL_DEVICE_TYPE_GPU.
    supports_images: CL_DEVICE_IMAGE_SUPPORT (without it everything lives in buffers).
    """

    name: str
    max_image_width: int
    max_image_height: int
    image_pitch_alignment: int
    preferred_work_group_size: tuple[int, int, int]
    max_work_group_size: int
    supports_fp16: bool
    local_memory_bytes: int
    max_kernel_args: int
    is_gpu: bool
    supports_images: bool

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
#   max_function_args = 128            -> the Qualcomm driver crashes silently beyond 128 args
#   image_base_address_alignment = 64  -> bytes, base/pitch alignment for images over buffers
_TVM_ADRENO_IMAGE_LIMIT = 16384
_TVM_ADRENO_MAX_ARGS = 128
_TVM_ADRENO_IMAGE_ALIGN = 64

_PROFILES: dict[str, TargetProfile] = {}


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
        image_pitch_alignment=_TVM_ADRENO_IMAGE_ALIGN,  # TVM image_base_address_alignment
        # 16x4x4 = 256 threads: the local size of ir-levels.md's conv example; 256 is also
        # TVM's thread cap for cross-work-group reductions on Adreno.
        preferred_work_group_size=(16, 4, 4),
        max_work_group_size=1024,  # CL_DEVICE_MAX_WORK_GROUP_SIZE reported by Adreno 6xx drivers
        supports_fp16=True,  # Adreno exposes cl_khr_fp16; TVM reports FP16 numbers on it
        local_memory_bytes=32 * 1024,  # CL_DEVICE_LOCAL_MEM_SIZE reported by Adreno 6xx (32 KiB)
        max_kernel_args=_TVM_ADRENO_MAX_ARGS,  # TVM max_function_args
        is_gpu=True,
        supports_images=True,
    )
)

# Adreno 740 (Snapdragon 8 Gen 2). Same TVM target facts; 7xx drivers report the same
# work-group limit. Local memory: 32 KiB assumed (conservative; not measured here).
register_profile(
    TargetProfile(
        name="adreno-740",
        max_image_width=_TVM_ADRENO_IMAGE_LIMIT,
        max_image_height=_TVM_ADRENO_IMAGE_LIMIT,
        image_pitch_alignment=_TVM_ADRENO_IMAGE_ALIGN,
        preferred_work_group_size=(16, 4, 4),
        max_work_group_size=1024,
        supports_fp16=True,
        local_memory_bytes=32 * 1024,
        max_kernel_args=_TVM_ADRENO_MAX_ARGS,
        is_gpu=True,
        supports_images=True,
    )
)

# PoCL on the CPU (the test device of this project). Values measured with pyopencl on
# PoCL 3.x pthread (x86-64): image2d 8192x8192, max work-group 4096, local memory 2 MiB,
# no cl_khr_fp16, image support yes, CL_DEVICE_MEM_BASE_ADDR_ALIGN 1024 bits = 128 bytes,
# CL_DEVICE_MAX_PARAMETER_SIZE 1024 bytes = 128 pointer arguments.
register_profile(
    TargetProfile(
        name="pocl-cpu",
        max_image_width=8192,
        max_image_height=8192,
        image_pitch_alignment=128,
        preferred_work_group_size=(16, 4, 1),  # heuristic: a few SIMD-widths per work-group
        max_work_group_size=4096,
        supports_fp16=False,
        local_memory_bytes=2 * 1024 * 1024,
        max_kernel_args=128,
        is_gpu=False,
        supports_images=True,
    )
)

# NVIDIA's OpenCL driver (Ampere/Hopper class), values as commonly reported by clinfo:
# image2d 32768x32768, max work-group 1024, local memory 48 KiB, no cl_khr_fp16 extension,
# CL_DEVICE_MAX_PARAMETER_SIZE 4352 bytes (we still cap arguments at 128 to keep kernels
# portable to Adreno). Pitch alignment: not measured; 64 bytes like Adreno.
register_profile(
    TargetProfile(
        name="nvidia-opencl",
        max_image_width=32768,
        max_image_height=32768,
        image_pitch_alignment=64,
        preferred_work_group_size=(32, 4, 2),  # a warp wide, 256 threads
        max_work_group_size=1024,
        supports_fp16=False,
        local_memory_bytes=48 * 1024,
        max_kernel_args=128,
        is_gpu=True,
        supports_images=True,
    )
)

# A deliberately tiny device for tests: any image above 64x64 does not fit, which forces the
# global-buffer fallback of annotate-texture-scope.
register_profile(
    TargetProfile(
        name="tiny-test",
        max_image_width=64,
        max_image_height=64,
        image_pitch_alignment=64,
        preferred_work_group_size=(4, 4, 1),
        max_work_group_size=256,
        supports_fp16=False,
        local_memory_bytes=16 * 1024,
        max_kernel_args=128,
        is_gpu=True,
        supports_images=True,
    )
)


# ------------------------------------------------------------------------------------------
# Live devices
# ------------------------------------------------------------------------------------------

# Raw OpenCL 2.0 device-info codes (pyopencl does not name them all).
_CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT = 0x104B


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


def profile_from_device(device: Any) -> TargetProfile:
    """Build a profile from a `pyopencl.Device`."""
    import pyopencl as cl

    is_gpu = bool(int(device.type) & int(cl.device_type.GPU))
    supports_images = bool(_info(device, "image_support", False))
    max_wg = int(device.max_work_group_size)
    try:
        align = int(device.get_info(_CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT))
    except Exception:  # noqa: BLE001 - OpenCL 1.x devices and PoCL do not answer
        align = 0
    if align <= 0:
        align = max(1, int(_info(device, "mem_base_addr_align", 512)) // 8)  # bits -> bytes
    param_bytes = int(_info(device, "max_parameter_size", 1024))
    return TargetProfile(
        name=f"auto:{str(device.name).strip()}",
        max_image_width=int(_info(device, "image2d_max_width", 0)) if supports_images else 0,
        max_image_height=int(_info(device, "image2d_max_height", 0)) if supports_images else 0,
        image_pitch_alignment=align,
        preferred_work_group_size=_preferred_wg(is_gpu, max_wg),
        max_work_group_size=max_wg,
        supports_fp16="cl_khr_fp16" in str(_info(device, "extensions", "")),
        local_memory_bytes=int(_info(device, "local_mem_size", 0)),
        # 8-byte pointers per argument, capped at TVM's 128 (the Adreno driver limit)
        max_kernel_args=max(1, min(_TVM_ADRENO_MAX_ARGS, param_bytes // 8)),
        is_gpu=is_gpu,
        supports_images=supports_images,
    )


def list_profiles() -> list[str]:
    """Names of the registered profiles (`auto` is accepted by `get_profile` as well)."""
    return list(_PROFILES)


def get_profile(name: str, device: Any = None) -> TargetProfile:
    """The profile called `name`, or for `"auto"` the profile of `device` (a
    `pyopencl.Device`; default: the first device of
    `pyopencl.create_some_context(interactive=False)`, which respects PYOPENCL_CTX)."""
    if name == "auto":
        if device is None:
            import pyopencl as cl

            device = cl.create_some_context(interactive=False).devices[0]
        return profile_from_device(device)
    try:
        return _PROFILES[name]
    except KeyError:
        known = ", ".join([*_PROFILES, "auto"])
        raise ValueError(f"unknown target profile '{name}'; known profiles: {known}") from None
