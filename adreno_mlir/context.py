"""The xDSL context with every dialect adreno-mlir reads and writes."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _graph() -> Dialect:
    from adreno_mlir.dialects.graph import Graph

    return Graph


def _texture() -> Dialect:
    from adreno_mlir.dialects.texture import Texture

    return Texture


def _opencl() -> Dialect:
    from adreno_mlir.dialects.opencl import OpenCL

    return OpenCL


PROJECT_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "graph": _graph,
    "texture": _texture,
    "opencl": _opencl,
}


def make_context() -> Context:
    """Builtin, func, arith, math, scf plus the project's dialects."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.math import Math
    from xdsl.dialects.scf import Scf

    ctx = Context()
    for d in (Builtin, Func, Arith, Math, Scf):
        ctx.load_dialect(d)
    for name, factory in PROJECT_DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx
