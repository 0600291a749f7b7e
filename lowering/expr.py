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

from adreno_mlir.dialects import graph
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
    """A unary op: the `KIND` of a graph element-wise op class (relu, clip(lo, hi),
    hard_sigmoid(a, b), leaky_relu(a), erf, ...; params are its `expr_params()`), or the
    internal `scale(s)` (Gemm's beta)."""

    kind: str
    x: Expr
    params: tuple[float, ...] = ()


@dataclass(frozen=True)
class Bin(Expr):
    """The `KIND` of a binary graph op (add, sub, mul, div) on two expressions."""

    kind: str
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Tern(Expr):
    """The `KIND` of a ternary graph op (where: `b` where `a` is not 0, else `c`) on three
    expressions."""

    kind: str
    a: Expr
    b: Expr
    c: Expr


UNARY_KINDS = {k for k, op in graph.ELEMENTWISE_BY_KIND.items() if issubclass(op, graph.UnaryOp)} | {"scale"}
BINARY_KINDS = {k for k, op in graph.ELEMENTWISE_BY_KIND.items() if issubclass(op, graph.BinaryOp)}
TERNARY_KINDS = {k for k, op in graph.ELEMENTWISE_BY_KIND.items() if issubclass(op, graph.TernaryOp)}


def describe(e: Expr, seen: set[Expr] | None = None) -> str:
    """A short name fragment for kernel names, e.g. `relu` or `add_relu`. A
    subexpression read twice (SiLU's x in `x * sigmoid(x)`) is named once, as the
    kernel computes it once."""
    seen = set() if seen is None else seen
    if e in seen:
        return ""
    seen.add(e)
    if isinstance(e, Un):
        inner = describe(e.x, seen)
        return f"{inner}_{e.kind}" if inner else e.kind
    if isinstance(e, Bin):
        parts = [p for p in (describe(e.a, seen), describe(e.b, seen)) if p]
        return "_".join(parts + [e.kind])
    if isinstance(e, Tern):
        parts = [p for p in (describe(e.a, seen), describe(e.b, seen), describe(e.c, seen)) if p]
        return "_".join(parts + [e.kind])
    return ""


def emit_unary(kb: KernelBuilder, kind: str, x: SSAValue, params: tuple[float, ...]) -> SSAValue:
    """The unary op `kind` on `x`: the graph op class of that kind emits it."""
    if kind == "scale":  # internal (Gemm's beta), no graph op
        (s,) = params
        return x if s == 1.0 else kb.fmul(x, s)
    op = graph.ELEMENTWISE_BY_KIND.get(kind)
    if op is None or not issubclass(op, graph.UnaryOp):
        raise ValueError(f"unknown unary kind {kind}")
    return op.emit(kb, x, params)


def emit_binary(kb: KernelBuilder, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
    """The binary op `kind` on `a` and `b`: the graph op class of that kind emits it."""
    op = graph.ELEMENTWISE_BY_KIND.get(kind)
    if op is None or not issubclass(op, graph.BinaryOp):
        raise ValueError(f"unknown binary kind {kind}")
    return op.emit(kb, a, b)


def emit_ternary(kb: KernelBuilder, kind: str, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    """The ternary op `kind` on `a`, `b` and `c`: the graph op class of that kind emits it."""
    op = graph.ELEMENTWISE_BY_KIND.get(kind)
    if op is None or not issubclass(op, graph.TernaryOp):
        raise ValueError(f"unknown ternary kind {kind}")
    return op.emit(kb, a, b, c)


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
        return emit_binary(kb, e.kind, a, b)
    if isinstance(e, Tern):
        a, b, c = (emit_expr(kb, x, src, load_input) for x in (e.a, e.b, e.c))
        return emit_ternary(kb, e.kind, a, b, c)
    raise TypeError(e)


def memo_loader(load: Callable[[int], SSAValue]) -> Callable[[int], SSAValue]:
    cache: dict[int, SSAValue] = {}

    def get(k: int) -> SSAValue:
        if k not in cache:
            cache[k] = load(k)
        return cache[k]

    return get
