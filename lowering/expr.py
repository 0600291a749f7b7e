"""Element-wise expressions: what a fused epilogue or an element-wise kernel computes.

An `Expr` is a small immutable tree over `Src()` (the value the kernel's main loop
produced, e.g. a convolution sum) and `In(k)` (extra input k, read at the output
coordinate through its own strides, so broadcasting is a zero stride). Being
hashable, an expression is part of a kernel's identity: two launches share one
kernel exactly when their expressions, shapes and strides agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder


class Expr:
    """Base of expression nodes."""


@dataclass(frozen=True)
class Src(Expr):
    """The value computed by the kernel's main body."""


@dataclass(frozen=True)
class In(Expr):
    """Extra input `index`, read at the current output coordinate."""

    index: int


@dataclass(frozen=True)
class Un(Expr):
    """A unary op: relu, clip(lo, hi), sigmoid, hard_sigmoid(a, b), hard_swish, tanh,
    exp, neg, abs, sqrt, leaky_relu(a), scale(s)."""

    kind: str
    x: Expr
    params: tuple[float, ...] = ()


@dataclass(frozen=True)
class Bin(Expr):
    """add, sub, mul or div of two expressions."""

    kind: str
    a: Expr
    b: Expr


UNARY_KINDS = {
    "relu", "clip", "sigmoid", "hard_sigmoid", "hard_swish", "tanh", "exp", "neg", "abs",
    "sqrt", "leaky_relu", "scale",
}
BINARY_KINDS = {"add", "sub", "mul", "div"}


def describe(e: Expr) -> str:
    """A short name fragment for kernel names, e.g. `relu` or `add_relu`."""
    if isinstance(e, Un):
        inner = describe(e.x)
        return f"{inner}_{e.kind}" if inner else e.kind
    if isinstance(e, Bin):
        parts = [p for p in (describe(e.a), describe(e.b)) if p]
        return "_".join(parts + [e.kind])
    return ""


def emit_unary(kb: KernelBuilder, kind: str, x: SSAValue, params: tuple[float, ...]) -> SSAValue:
    if kind == "relu":
        return kb.fmax(x, 0.0)
    if kind == "clip":
        lo, hi = params
        if lo != float("-inf"):
            x = kb.fmax(x, lo)
        if hi != float("inf"):
            x = kb.fmin(x, hi)
        return x
    if kind == "sigmoid":
        return kb.fdiv(1.0, kb.fadd(1.0, kb.exp(kb.fneg(x))))
    if kind == "hard_sigmoid":
        a, b = params
        return kb.fmin(kb.fmax(kb.fadd(kb.fmul(x, a), b), 0.0), 1.0)
    if kind == "hard_swish":
        return kb.fmul(x, kb.fmin(kb.fmax(kb.fadd(kb.fmul(x, 1.0 / 6.0), 0.5), 0.0), 1.0))
    if kind == "tanh":
        return kb.tanh(x)
    if kind == "exp":
        return kb.exp(x)
    if kind == "neg":
        return kb.fneg(x)
    if kind == "abs":
        return kb.absf(x)
    if kind == "sqrt":
        return kb.sqrt(x)
    if kind == "leaky_relu":
        (a,) = params  # max(x, 0) + a * min(x, 0): no compare, so it works on float4 too
        return kb.fadd(kb.fmax(x, 0.0), kb.fmul(kb.fmin(x, 0.0), a))
    if kind == "scale":
        (s,) = params
        return x if s == 1.0 else kb.fmul(x, s)
    raise ValueError(f"unknown unary kind {kind}")


_BINARY = {
    "add": KernelBuilder.fadd,
    "sub": KernelBuilder.fsub,
    "mul": KernelBuilder.fmul,
    "div": KernelBuilder.fdiv,
}


def emit_expr(
    kb: KernelBuilder,
    e: Expr,
    src: SSAValue | None,
    load_input: Callable[[int], SSAValue],
) -> SSAValue:
    """Emit `e`; each extra input is loaded once (memoised by the caller's loader)."""
    if isinstance(e, Src):
        assert src is not None, "expression reads Src() but the kernel has no main value"
        return src
    if isinstance(e, In):
        return load_input(e.index)
    if isinstance(e, Un):
        return emit_unary(kb, e.kind, emit_expr(kb, e.x, src, load_input), e.params)
    if isinstance(e, Bin):
        a = emit_expr(kb, e.a, src, load_input)
        b = emit_expr(kb, e.b, src, load_input)
        return _BINARY[e.kind](kb, a, b)
    raise TypeError(e)


def memo_loader(load: Callable[[int], SSAValue]) -> Callable[[int], SSAValue]:
    cache: dict[int, SSAValue] = {}

    def get(k: int) -> SSAValue:
        if k not in cache:
            cache[k] = load(k)
        return cache[k]

    return get
