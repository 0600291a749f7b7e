"""A small builder for kernel bodies: `opencl` + arith/math/scf ops, one call each.

Kernel generators (lowering/kernels/*.py) describe their loops and index arithmetic
with these helpers instead of OpenCL strings, so every kernel is real IR that the
printer turns into C. Integer values are i32 (OpenCL `int`); floats are f32.
Constants are cached per block so repeated literals do not bloat the IR.
"""

from __future__ import annotations

import math as math_

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, VectorType, f32, i1, i32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from adreno_mlir.dialects import opencl

Value = SSAValue


class KernelBuilder:
    """Appends ops to a block; nested regions get their own builder."""

    def __init__(self, block: Block, width: int = 1):
        self.block = block
        self.width = width
        """Float width: 1, or 4 when float constants should be float4 splats."""
        self._consts: dict[tuple[str, object], SSAValue] = {}

    # ------------------------------------------------------------------ plumbing

    def emit(self, op: Operation, hint: str | None = None) -> SSAValue:
        self.block.add_op(op)
        if op.results:
            if hint:
                op.results[0].name_hint = hint
            return op.results[0]
        return None  # type: ignore[return-value]

    def child(self, block: Block) -> "KernelBuilder":
        kb = KernelBuilder(block, self.width)
        kb._consts = dict(self._consts)  # constants dominate nested blocks
        return kb

    def vector(self) -> "KernelBuilder":
        """A builder on the same block whose float constants are float4 splats
        (for element-wise expressions over NCHW4c pixels)."""
        kb = KernelBuilder(self.block, 4)
        kb._consts = self._consts
        return kb

    # ------------------------------------------------------------------ constants

    def i(self, v: int | SSAValue) -> SSAValue:
        if isinstance(v, SSAValue):
            return v
        key = ("i", int(v))
        if key not in self._consts:
            self._consts[key] = self.emit(arith.ConstantOp(IntegerAttr(int(v), i32)))
        return self._consts[key]

    def f(self, v: float | SSAValue) -> SSAValue:
        if isinstance(v, SSAValue):
            return v
        key = ("f", float(v), self.width)
        if key not in self._consts:
            if self.width == 1:
                self._consts[key] = self.emit(arith.ConstantOp(FloatAttr(float(v), f32)))
            elif not math_.isfinite(v):
                # xDSL 0.74 prints a non-finite splat as `dense<0xff800000>` and parses
                # that back as the integer 4286578688.0: a max pool's -inf start value
                # would change when lowered IR is printed and read again. A splat of the
                # scalar (which round-trips) is the same float4.
                scalar = self.emit(arith.ConstantOp(FloatAttr(float(v), f32)))
                self._consts[key] = self.emit(opencl.VecSplatOp(scalar))
            else:
                attr = DenseIntOrFPElementsAttr.from_list(VectorType(f32, [self.width]), [float(v)])
                self._consts[key] = self.emit(arith.ConstantOp(attr))
        return self._consts[key]

    # ------------------------------------------------------------------ integer math

    # Integer helpers fold Python ints: a result is an int when both operands are.

    def add(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self.emit(arith.AddiOp(self.i(a), self.i(b)), hint)

    def sub(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if isinstance(b, int) and b == 0:
            return a
        return self.emit(arith.SubiOp(self.i(a), self.i(b)), hint)

    def mul(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if (isinstance(a, int) and a == 0) or (isinstance(b, int) and b == 0):
            return 0
        if isinstance(b, int) and b == 1:
            return a
        if isinstance(a, int) and a == 1:
            return b
        return self.emit(arith.MuliOp(self.i(a), self.i(b)), hint)

    def div(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if isinstance(b, int) and b == 1:
            return a
        return self.emit(arith.DivSIOp(self.i(a), self.i(b)), hint)

    def rem(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        if isinstance(b, int) and b == 1:
            return 0
        return self.emit(arith.RemSIOp(self.i(a), self.i(b)), hint)

    def min_i(self, a, b) -> SSAValue:
        return self.emit(arith.MinSIOp(self.i(a), self.i(b)))

    def max_i(self, a, b) -> SSAValue:
        return self.emit(arith.MaxSIOp(self.i(a), self.i(b)))

    _PREDICATES = {
        "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b,
        "sge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    }

    def cmp(self, pred: str, a, b):
        """A comparison; a Python bool when both sides are Python ints."""
        if isinstance(a, int) and isinstance(b, int):
            return self._PREDICATES[pred](a, b)
        return self.emit(arith.CmpiOp(self.i(a), self.i(b), pred))

    def in_bounds(self, v, lo: int, hi: int) -> list[SSAValue]:
        """Conditions lo <= v < hi; none when v is a Python int known to be inside."""
        if isinstance(v, int):
            if not lo <= v < hi:
                raise ValueError(f"index {v} statically outside [{lo}, {hi})")
            return []
        return [self.cmp("sge", v, lo), self.cmp("slt", v, hi)]

    def and_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.AndIOp(a, b))

    def all_of(self, conds: Sequence[SSAValue | bool]) -> SSAValue | bool | None:
        """Conjunction; None when there is nothing to check (all statically true),
        False when one condition is statically false."""
        result = None
        for c in conds:
            if c is True:
                continue
            if c is False:
                return False
            result = c if result is None else self.and_(result, c)
        return result

    def select(self, cond, a, b, hint=None):
        if cond is True or cond is None:
            return a
        if cond is False:
            return b
        return self.emit(arith.SelectOp(cond, a, b), hint)

    def to_float(self, v: SSAValue) -> SSAValue:
        return self.emit(arith.SIToFPOp(self.i(v), f32))

    def to_int(self, v: SSAValue) -> SSAValue:
        return self.emit(arith.FPToSIOp(v, i32))

    def unravel(self, linear: SSAValue, dims: Sequence[int], names: Sequence[str] | None = None) -> list[SSAValue]:
        """Row-major multi-index of `linear` within `dims`. The outermost dimension of
        extent > 1 takes what is left without a modulo, so its extent is never needed
        (kernels may leave it 0 to be shared across sizes)."""
        coords: list = [0] * len(dims)
        first = next((d for d in range(len(dims)) if dims[d] != 1), len(dims))
        rest = linear
        for d in range(len(dims) - 1, first - 1, -1):
            hint = names[d] if names else None
            if dims[d] == 1:
                coords[d] = 0
            elif d == first:
                coords[d] = rest
            else:
                coords[d] = self.rem(rest, dims[d], hint)
                rest = self.div(rest, dims[d])
        return coords

    def linear(self, coords: Sequence[SSAValue | int], strides: Sequence[int], base: int = 0):
        """base + sum(coord * stride), skipping zero strides."""
        acc: SSAValue | int = 0
        for c, s in zip(coords, strides):
            if s != 0:
                acc = self.add(acc, self.mul(c, s))
        return self.add(acc, base)

    # ------------------------------------------------------------------ float math

    def fadd(self, a, b, hint=None) -> SSAValue:
        return self.emit(arith.AddfOp(self.f(a), self.f(b)), hint)

    def fsub(self, a, b, hint=None) -> SSAValue:
        return self.emit(arith.SubfOp(self.f(a), self.f(b)), hint)

    def fmul(self, a, b, hint=None) -> SSAValue:
        return self.emit(arith.MulfOp(self.f(a), self.f(b)), hint)

    def fdiv(self, a, b, hint=None) -> SSAValue:
        return self.emit(arith.DivfOp(self.f(a), self.f(b)), hint)

    def fmax(self, a, b) -> SSAValue:
        return self.emit(arith.MaximumfOp(self.f(a), self.f(b)))

    def fmin(self, a, b) -> SSAValue:
        return self.emit(arith.MinimumfOp(self.f(a), self.f(b)))

    def fneg(self, a) -> SSAValue:
        return self.emit(arith.NegfOp(self.f(a)))

    def fma(self, a, b, c, hint=None) -> SSAValue:
        return self.emit(math.FmaOp(self.f(a), self.f(b), self.f(c)), hint)

    def exp(self, a) -> SSAValue:
        return self.emit(math.ExpOp(self.f(a)))

    def tanh(self, a) -> SSAValue:
        return self.emit(math.TanhOp(self.f(a)))

    def erf(self, a) -> SSAValue:
        return self.emit(math.ErfOp(self.f(a)))

    def sqrt(self, a) -> SSAValue:
        return self.emit(math.SqrtOp(self.f(a)))

    def absf(self, a) -> SSAValue:
        return self.emit(math.AbsFOp(self.f(a)))

    def floor(self, a) -> SSAValue:
        return self.emit(math.FloorOp(self.f(a)))

    def ceil(self, a) -> SSAValue:
        return self.emit(math.CeilOp(self.f(a)))

    # ------------------------------------------------------------------ memory and ids

    # ------------------------------------------------------------------ float4

    def splat(self, scalar: SSAValue) -> SSAValue:
        return self.emit(opencl.VecSplatOp(self.f(scalar)))

    def vec(self, lanes: Sequence[SSAValue]) -> SSAValue:
        return self.emit(opencl.VecMakeOp([self.f(x) for x in lanes]))

    def lane(self, vector: SSAValue, k: int) -> SSAValue:
        return self.emit(opencl.VecExtractOp(vector, k))

    def vload4(self, ptr: SSAValue, index, hint=None) -> SSAValue:
        """Four floats at ptr[4*index .. 4*index+3]."""
        return self.emit(opencl.VLoad4Op(ptr, self.i(index)), hint)

    def global_id(self, dim: int, hint=None) -> SSAValue:
        return self.emit(opencl.GlobalIdOp(dim), hint)

    def load(self, ptr: SSAValue, index, hint=None) -> SSAValue:
        return self.emit(opencl.LoadOp(ptr, self.i(index)), hint)

    def store(self, value: SSAValue, ptr: SSAValue, index) -> None:
        self.emit(opencl.StoreOp(value, ptr, self.i(index)))

    def masked_load(self, ptr: SSAValue, index, valid: SSAValue | None) -> SSAValue:
        """ptr[index] where `valid`, else 0; the address is clamped so it stays in bounds."""
        if valid is None or valid is True:
            return self.load(ptr, index)
        if valid is False:
            return self.f(0.0)
        safe = self.select(valid, self.i(index), self.i(0))
        v = self.load(ptr, safe)
        return self.select(valid, v, self.f(0.0))

    # ------------------------------------------------------------------ control flow

    def for_(
        self,
        lb,
        ub,
        step,
        iter_args: Sequence[SSAValue],
        body: Callable[["KernelBuilder", SSAValue, list[SSAValue]], Sequence[SSAValue]],
        hint: str | None = None,
    ) -> list[SSAValue]:
        """scf.for over i32 with iteration arguments; `body` returns the yielded values."""
        block = Block(arg_types=[i32, *[a.type for a in iter_args]])
        if hint:
            block.args[0].name_hint = hint
        kb = self.child(block)
        yielded = body(kb, block.args[0], list(block.args[1:]))
        kb.emit(scf.YieldOp(*yielded))
        op = scf.ForOp(self.i(lb), self.i(ub), self.i(step), list(iter_args), Region(block))
        self.block.add_op(op)
        for res, arg in zip(op.results, iter_args):
            if arg.name_hint:
                res.name_hint = arg.name_hint
        return list(op.results)

    def if_(self, cond: SSAValue, then: Callable[["KernelBuilder"], None]) -> None:
        """scf.if without results."""
        block = Block()
        kb = self.child(block)
        then(kb)
        kb.emit(scf.YieldOp())
        self.block.add_op(scf.IfOp(cond, [], Region(block), Region(Block([scf.YieldOp()]))))

    def guard(self, conds: Sequence[SSAValue], then: Callable[["KernelBuilder"], None]) -> None:
        """Run `then` only where all `conds` hold (no-op wrapper when there are none)."""
        c = self.all_of(conds)
        if c is None:
            then(self)
        elif c is not False:
            self.if_(c, then)


def new_kernel(name: str, args: Sequence[tuple[str, Attribute]]) -> tuple[opencl.KernelOp, KernelBuilder]:
    kernel = opencl.KernelOp(name, args)
    return kernel, KernelBuilder(kernel.body.block)


def finish(kb: KernelBuilder) -> None:
    kb.emit(opencl.ReturnOp())


GLOBAL_F32 = opencl.PointerType("global", f32)
BOOL = i1
