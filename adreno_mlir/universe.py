"""Registers adreno-mlir's dialects, passes and targets with xDSL (`xdsl.universe` entry point).

With the package installed, plain `xdsl-opt` sees them too.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target

from adreno_mlir.context import PROJECT_DIALECTS


def _passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from adreno_mlir.passes import all_passes

    def factory(cls):
        return lambda: cls

    return {cls.name: factory(cls) for cls in all_passes()}


def _opencl_target() -> type[Target]:
    from adreno_mlir.lowering.opencl_printer import OpenCLTarget

    return OpenCLTarget


def _mlir_target() -> type[Target]:
    from adreno_mlir.printing import MLIRWithLocationsTarget

    return MLIRWithLocationsTarget


ADRENO_UNIVERSE = Universe(
    all_dialects=dict(PROJECT_DIALECTS),
    all_passes=_passes(),
    all_targets={"opencl": _opencl_target},
)
