"""The compile options, checked up front.

`compile()` and the CLI take the documented strings (`precision="fp32"`, `layout="nchw4c"`,
`work_group="driver"`, ...) or the enum members below (which are those strings:
`Precision.FP16_ACC32 == "fp16-acc32"`). `adreno_mlir.plan.make_plan`, the one place that
checks them, turns them into a `CompilePlan`; anything else is a `CompileError` that names the
parameter, the value and the choices, before any work is done.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import numpy as np

from adreno_mlir.errors import CompileError

__all__ = [
    "Layout",
    "Precision",
    "WorkGroup",
    "check_device",
    "check_layout",
    "check_precision",
    "check_target",
    "check_textures",
    "check_work_group",
    "textures_from_flag",
    "work_group_from_flag",
]


class Precision(StrEnum):
    """Element type of stored activations, and of the arithmetic of NCHW4c kernels."""

    FP32 = "fp32"
    FP16_ACC32 = "fp16-acc32"
    """fp16 storage (half images, `vload_half4` buffers), fp32 arithmetic; no cl_khr_fp16 needed."""
    FP16 = "fp16"
    """fp16 storage and half arithmetic in every NCHW4c kernel (weights in half too; global
    means sum in fp32); needs a device with cl_khr_fp16."""

    @property
    def storage(self) -> str:
        """The `storage=` option of convert-layout-nchw4c (`f32` or `f16`)."""
        return "f32" if self is Precision.FP32 else "f16"

    @property
    def compute(self) -> str:
        """The `compute=` option of select-kernel-config (`f32` or `f16`)."""
        return "f16" if self is Precision.FP16 else "f32"


class Layout(StrEnum):
    """Activation layout: plain NCHW buffers (fp32 only) or NCHW4c (the texture-level pipeline)."""

    NCHW = "nchw"
    NCHW4C = "nchw4c"


class WorkGroup(StrEnum):
    """Local sizes: the driver's choice, or the target profile's preferred size on GPUs."""

    DRIVER = "driver"
    AUTO = "auto"


def _choices(enum: type[StrEnum]) -> str:
    return ", ".join(repr(m.value) for m in enum)


def _bad(param: str, value: Any, choices: str, extra: str = "") -> CompileError:
    return CompileError(f"invalid {param}={value!r}; choose one of {choices}{extra}")


def check_precision(value: Any) -> Precision:
    if isinstance(value, str):
        try:
            return Precision(value)
        except ValueError:
            pass
    raise CompileError(f"unknown precision {value!r} (parameter precision); choose one of "
                       f"{_choices(Precision)}")


def check_layout(value: Any) -> Layout | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return Layout(value)
        except ValueError:
            pass
    raise CompileError(f"unknown layout {value!r} (parameter layout); choose one of "
                       f"{_choices(Layout)} or None (nchw4c with textures or fp16 storage, else nchw)")


def check_textures(value: Any) -> bool | None:
    """True, False or None; nothing else (no truthy strings such as "no")."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    raise _bad("textures", value, "True, False, None (images on GPU targets)",
               "; the CLI's --textures on/off/auto map to True/False/None")


def check_work_group(value: Any) -> WorkGroup | tuple[int, ...]:
    """'driver', 'auto' or a preferred local size of 1 to 3 positive ints."""
    if isinstance(value, str):
        try:
            return WorkGroup(value)
        except ValueError:
            pass
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3 and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in value
    ):
        return tuple(int(d) for d in value)
    raise _bad("work_group", value, f"{_choices(WorkGroup)} or a tuple of 1 to 3 positive ints, e.g. (16, 4, 4)")


def check_target(value: Any) -> str:
    """A profile name (whether it exists is checked by `get_profile`)."""
    if isinstance(value, str) and value:
        return value
    from adreno_mlir.target import list_profiles

    raise _bad("target", value, ", ".join(repr(n) for n in [*list_profiles(), "auto"]))


def check_device(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise CompileError(f"invalid device={value!r}; pass None (PYOPENCL_CTX, else PoCL) or a string such as "
                       "'pocl', 'nvidia', 'gpu', a device name fragment or 'P:D'")


# ------------------------------------------------------------------------------------------
# CLI flags
# ------------------------------------------------------------------------------------------

TEXTURE_FLAGS = {"auto": None, "on": True, "off": False}


def textures_from_flag(flag: str) -> bool | None:
    """The `--textures` flag of the CLI commands (`auto`, `on`, `off`; see TEXTURE_FLAGS)
    as compile()'s `textures` argument (None, True, False); another value is a CompileError."""
    try:
        return TEXTURE_FLAGS[flag]
    except KeyError:
        raise CompileError(f"invalid --textures {flag!r}; choose one of {', '.join(TEXTURE_FLAGS)}") from None


def work_group_from_flag(flag: str) -> WorkGroup | tuple[int, ...]:
    """`driver`, `auto`, or a local size written `16,4,4` (or `16x4x4`)."""
    if flag in tuple(WorkGroup):
        return WorkGroup(flag)
    parts = flag.replace("x", ",").split(",")
    if all(p.strip().isdigit() for p in parts):
        try:
            return check_work_group(tuple(int(p) for p in parts))
        except CompileError:
            pass
    raise CompileError(f"invalid --work-group {flag!r}; choose one of {_choices(WorkGroup)} or a local size "
                       "such as 16,4,4 (1 to 3 positive ints)")


def positive_int(text: str) -> int:
    """argparse `type=` of counts (--repeat, --top): a whole number >= 1; a bad value is
    a usage error naming the flag (exit 1, see cli.main)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {text}")
    return value
