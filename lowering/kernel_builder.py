"""A small builder for kernel bodies: `opencl` + arith/math/scf ops, one call each.

Kernel generators (lowering/kernels/*.py) describe their loops and index arithmetic
with these helpers instead of OpenCL strings, so every kernel is real IR that the
printer turns into C. Integer values are i32 (OpenCL `int`). Data floats are the
builder's `ftype`: f32, or f16 in kernels that compute in half (precision fp16,
`kernel_config` compute = "f16"). A float constant written as a Python number takes
the type of the value it meets (`fadd(x, 0.5)` is half when x is, f32 when x is a
coordinate from `to_float`), else the builder's; `cast` converts between the two.

The builder never creates the same pure expression twice: every pure op is looked up
by (op kind, operands, attributes) in a table scoped like the IR's dominance (a nested
block sees its parents' values, never the reverse) *before* the op is constructed. So a
kernel comes out already free of common subexpressions and the pipeline needs no CSE
pass over thousands of ops (constructing an xDSL op costs far more than the lookup).
Loops stay loops: `for_(..., unroll=True)` marks an `scf.for` with `opencl.unroll`
(printed as `#pragma unroll`; `unroll="print"`: the printer writes out the trips)
instead of unrolling taps in the IR.
"""

from __future__ import annotations

import math as math_
import struct
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, StringAttr, VectorType, f16,
                                   f32, i1, i32, i64)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from adreno_mlir.dialects import opencl

Value = SSAValue


_TEMPLATES: dict[tuple, tuple[dict, dict, list[Attribute]]] = {}


def _make(cls: type[Operation], operands: Sequence[SSAValue], attrs: tuple) -> Operation:
    """`cls(*operands, *attrs)`, the fast way. The first op of each (kind, attributes,
    operand types) is built by its constructor, which checks the arguments and derives
    properties and result types; later ones copy those through `Operation.create`,
    three times cheaper than the constructor (kernels are thousands of small ops and
    building them was most of a compile)."""
    key = (cls, attrs, *(o.type for o in operands))
    template = _TEMPLATES.get(key)
    if template is None:
        op = cls(*operands, *attrs)
        # Verified once here: a copy has the same kind, attributes, operand and result
        # types, so the same verdict (kernel bodies are not verified again after a plain
        # compile, see adreno_mlir/pipeline.py: verify_lowered).
        op.verify(verify_nested_ops=False)
        _TEMPLATES[key] = (dict(op.properties), dict(op.attributes), [r.type for r in op.results])
        return op
    props, attributes, result_types = template
    return cls.create(operands=operands, result_types=result_types, properties=dict(props),
                      attributes=dict(attributes))


class _Scope:
    """Pure values already built, by key; a nested block's scope sees its parent's."""

    __slots__ = ("parent", "table")

    def __init__(self, parent: _Scope | None = None):
        self.table: dict[tuple, SSAValue] = {}
        self.parent = parent

    def get(self, key: tuple) -> SSAValue | None:
        scope = self
        while scope is not None:
            v = scope.table.get(key)
            if v is not None:
                return v
            scope = scope.parent
        return None


def _unroll_attr(unroll: bool | int | str) -> Attribute:
    """The `opencl.unroll` value of `for_(unroll=...)`: True is 0 (unroll fully)."""
    if unroll is True:
        return IntegerAttr(0, i64)
    if unroll == opencl.UNROLL_BY_PRINTER:
        return StringAttr(unroll)
    if isinstance(unroll, int):
        return IntegerAttr(unroll, i64)
    raise ValueError(f"unroll must be a bool, an int or {opencl.UNROLL_BY_PRINTER!r}, got {unroll!r}")


class KernelBuilder:
    """Appends ops to a block; nested regions get their own builder."""

    def __init__(self, block: Block, width: int = 1, scope: _Scope | None = None, ftype: Attribute = f32):
        self.block = block
        self.width = width
        """Float width: 1, or 4 when float constants should be float4 splats."""
        self.ftype = ftype
        """Element type of data floats: f32, or f16 for half arithmetic."""
        self._scope = scope if scope is not None else _Scope()

    # ------------------------------------------------------------------ plumbing

    def emit(self, op: Operation, hint: str | None = None, verified: bool = False) -> SSAValue:
        """Append `op`, verified on its own (its regions were verified as they were built),
        unless `verified` says it already was."""
        if not verified:
            op.verify(verify_nested_ops=False)  # before it joins the block (not its terminator yet)
        self.block.add_op(op)
        if op.results:
            if hint:
                op.results[0].name_hint = hint
            return op.results[0]
        return None  # type: ignore[return-value]

    def pure(self, key: tuple, make: Callable[[], Operation], hint: str | None = None,
             verified: bool = False) -> SSAValue:
        """The value of the pure op `make()` identified by `key` (its kind, operands and
        attributes): built once per dominance scope, reused after that."""
        v = self._scope.get(key)
        if v is None:
            v = self.emit(make(), hint, verified)
            self._scope.table[key] = v
        return v

    def _op(self, cls: type[Operation], *operands: SSAValue, attrs: tuple = (), hint: str | None = None) -> SSAValue:
        """`cls(*operands, *attrs)`, a pure op, built once per scope."""
        return self.pure((cls, *operands, *attrs), lambda: _make(cls, operands, attrs), hint, verified=True)

    def child(self, block: Block) -> KernelBuilder:
        # values of enclosing blocks dominate the nested block, not the other way round
        return KernelBuilder(block, self.width, _Scope(self._scope), self.ftype)

    def vector(self, ftype: Attribute | None = None, lanes: int = 4) -> KernelBuilder:
        """A builder on the same block whose float constants are float4 (or half4)
        splats (for element-wise expressions over NCHW4c pixels; `lanes` for other
        widths, e.g. a float8 row of pixels); `ftype` overrides the element type (an
        f32 accumulator in a half kernel)."""
        return KernelBuilder(self.block, lanes, self._scope, ftype or self.ftype)

    @property
    def half(self) -> bool:
        """Whether data floats are half (the kernel computes in fp16)."""
        return self.ftype == f16

    # ------------------------------------------------------------------ constants

    def i(self, v: int | SSAValue) -> SSAValue:
        if isinstance(v, SSAValue):
            return v
        v = int(v)
        return self.pure(("i", v), lambda: arith.ConstantOp(IntegerAttr(v, i32)))

    def f(self, v: float | SSAValue) -> SSAValue:
        if isinstance(v, SSAValue):
            return v
        v = float(v)
        ft = self.ftype
        # -0.0 == 0.0 and NaN != NaN: key on the bits, not the value
        key = ("f", struct.pack("<d", v), self.width, ft)
        if self.width == 1:
            return self.pure(key, lambda: arith.ConstantOp(FloatAttr(v, ft)))
        if not math_.isfinite(v):
            # xDSL 0.74 prints a non-finite splat as `dense<0xff800000>` and parses
            # that back as the integer 4286578688.0: a max pool's -inf start value
            # would change when lowered IR is printed and read again. A splat of the
            # scalar (which round-trips) is the same float4.
            scalar = KernelBuilder(self.block, 1, self._scope, ft).f(v)
            return self.pure(key, lambda: opencl.VecSplatOp(scalar))
        return self.pure(key, lambda: arith.ConstantOp(
            DenseIntOrFPElementsAttr.from_list(VectorType(ft, [self.width]), [v])))

    def const_like(self, v: float | SSAValue, like: Attribute) -> SSAValue:
        """`v` as a constant of type `like` (a float or a vector of floats)."""
        if isinstance(v, SSAValue):
            return v
        if isinstance(like, VectorType):
            return KernelBuilder(self.block, like.get_shape()[0], self._scope, like.element_type).f(v)
        return KernelBuilder(self.block, 1, self._scope, like).f(v)

    def _floats(self, *xs) -> list[SSAValue]:
        """Float operands: Python numbers become constants of the first SSA operand's
        type (the builder's own when there is none)."""
        like = next((x.type for x in xs if isinstance(x, SSAValue)), None)
        if like is None:
            return [self.f(x) for x in xs]
        return [self.const_like(x, like) for x in xs]

    def cast(self, v: SSAValue, element: Attribute) -> SSAValue:
        """`v` (a float or a float vector) with element type `element` (f32 <-> f16:
        `(half)x` / `convert_half4(x)` and back; no op when it already is)."""
        t = v.type
        src = t.element_type if isinstance(t, VectorType) else t
        if src == element:
            return v
        rt = VectorType(element, t.get_shape()) if isinstance(t, VectorType) else element
        return self._op(arith.ExtFOp if element == f32 else arith.TruncFOp, v, attrs=(rt,))

    # ------------------------------------------------------------------ integer math

    # Integer helpers fold Python ints: a result is an int when both operands are.

    def add(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self._op(arith.AddiOp, self.i(a), self.i(b), hint=hint)

    def sub(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if isinstance(b, int) and b == 0:
            return a
        return self._op(arith.SubiOp, self.i(a), self.i(b), hint=hint)

    def mul(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if (isinstance(a, int) and a == 0) or (isinstance(b, int) and b == 0):
            return 0
        if isinstance(b, int) and b == 1:
            return a
        if isinstance(a, int) and a == 1:
            return b
        return self._op(arith.MuliOp, self.i(a), self.i(b), hint=hint)

    def div(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if isinstance(b, int) and b == 1:
            return a
        return self._op(arith.DivSIOp, self.i(a), self.i(b), hint=hint)

    def rem(self, a, b, hint=None):
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        if isinstance(b, int) and b == 1:
            return 0
        return self._op(arith.RemSIOp, self.i(a), self.i(b), hint=hint)

    def min_i(self, a, b) -> SSAValue:
        return self._op(arith.MinSIOp, self.i(a), self.i(b))

    def max_i(self, a, b) -> SSAValue:
        return self._op(arith.MaxSIOp, self.i(a), self.i(b))

    _PREDICATES = {
        "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b,
        "sge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    }

    def cmp(self, pred: str, a, b):
        """A comparison; a Python bool when both sides are Python ints."""
        if isinstance(a, int) and isinstance(b, int):
            return self._PREDICATES[pred](a, b)
        return self._op(arith.CmpiOp, self.i(a), self.i(b), attrs=(pred,))

    def fcmp(self, pred: str, a, b) -> SSAValue:
        """A float comparison (arith.cmpf's predicates: "olt", "oge", ...; ordered ones
        are false when either side is NaN), an i1."""
        a, b = self._floats(a, b)
        return self._op(arith.CmpfOp, a, b, attrs=(pred,))

    def in_bounds(self, v, lo: int, hi: int) -> list[SSAValue]:
        """Conditions lo <= v < hi; none when v is a Python int known to be inside."""
        if isinstance(v, int):
            if not lo <= v < hi:
                raise ValueError(f"index {v} statically outside [{lo}, {hi})")
            return []
        return [self.cmp("sge", v, lo), self.cmp("slt", v, hi)]

    def and_(self, a: SSAValue, b: SSAValue, hint=None) -> SSAValue:
        return self._op(arith.AndIOp, a, b, hint=hint)

    def or_(self, a: SSAValue, b: SSAValue, hint=None) -> SSAValue:
        return self._op(arith.OrIOp, a, b, hint=hint)

    def shr(self, a: SSAValue, bits: int | SSAValue, hint=None) -> SSAValue:
        """`a >> bits` on i32: an arithmetic shift (the sign bit is copied in)."""
        return self._op(arith.ShRSIOp, a, self.i(bits), hint=hint)

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
        return self._op(arith.SelectOp, cond, a, b, hint=hint)

    def to_float(self, v: SSAValue) -> SSAValue:
        return self._op(arith.SIToFPOp, self.i(v), attrs=(f32,))

    def bits_as_float(self, v: SSAValue) -> SSAValue:
        """The 32 bits of an i32 read as an f32 (`as_float`): with 0x4B000000 (2^23) or-ed
        into a small non-negative integer q, as_float gives 2^23 + q exactly, so subtracting
        2^23 converts q with one float add instead of an int-to-float conversion (a quarter
        or less of the float rate on GPUs)."""
        return self._op(arith.BitcastOp, self.i(v), attrs=(f32,))

    def to_int(self, v: SSAValue) -> SSAValue:
        return self._op(arith.FPToSIOp, v, attrs=(i32,))

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
        return self._op(arith.AddfOp, *self._floats(a, b), hint=hint)

    def fsub(self, a, b, hint=None) -> SSAValue:
        return self._op(arith.SubfOp, *self._floats(a, b), hint=hint)

    def fmul(self, a, b, hint=None) -> SSAValue:
        return self._op(arith.MulfOp, *self._floats(a, b), hint=hint)

    def fdiv(self, a, b, hint=None) -> SSAValue:
        return self._op(arith.DivfOp, *self._floats(a, b), hint=hint)

    def fdiv_rounded(self, a, b: float, hint=None) -> SSAValue:
        """a / b (b a constant) rounded as IEEE division rounds it. OpenCL's `/` may be off
        by 2.5 ulp (the default on NVIDIA, Adreno and Intel's CPU runtime), which moves
        floor() or round() of a Resize coordinate that is exactly an integer or a half
        ((3 + 0.5) / 1.5 + 1/6 - 0.5 = 2) to the neighbour. One correction step fixes the
        quotient: q = a / b, r = fma(-q, b, a) (the exact remainder, rounded once),
        q + r * (1 / b)."""
        q = self.fdiv(a, b)
        r = self.fma(self.fneg(q), b, a)
        return self.fma(r, 1.0 / b, q, hint=hint)

    def fmax(self, a, b) -> SSAValue:
        """max(a, b), NaN if either is NaN (arith.maximumf; ONNX Relu, Clip, ... on NaN)."""
        return self._op(arith.MaximumfOp, *self._floats(a, b))

    def fmin(self, a, b) -> SSAValue:
        """min(a, b), NaN if either is NaN (arith.minimumf)."""
        return self._op(arith.MinimumfOp, *self._floats(a, b))

    def maxnum(self, a, b) -> SSAValue:
        """IEEE maxNum: the other operand when one is NaN (arith.maxnumf, OpenCL's fmax).
        Nothing lowered from ONNX uses it: max pooling, ReduceMax, Max and Relu propagate
        NaN (`fmax`)."""
        return self._op(arith.MaxnumfOp, *self._floats(a, b))

    def fneg(self, a) -> SSAValue:
        return self._op(arith.NegfOp, self.f(a))

    def fma(self, a, b, c, hint=None) -> SSAValue:
        return self._op(math.FmaOp, *self._floats(a, b, c), hint=hint)

    def exp(self, a) -> SSAValue:
        return self._op(math.ExpOp, self.f(a))

    def expm1(self, a) -> SSAValue:
        """exp(a) - 1 without the cancellation near 0 (OpenCL `expm1`): ONNX Elu."""
        return self._op(math.ExpM1Op, self.f(a))

    def log(self, a) -> SSAValue:
        """Natural logarithm (OpenCL `log`): LogSoftmax, ReduceLogSum(Exp)."""
        return self._op(math.LogOp, self.f(a))

    def tanh(self, a) -> SSAValue:
        return self._op(math.TanhOp, self.f(a))

    def erf(self, a) -> SSAValue:
        return self._op(math.ErfOp, self.f(a))

    def pow(self, a, b) -> SSAValue:
        """a ** b (OpenCL `pow`: NaN for a negative base and a non-integer exponent)."""
        return self._op(math.PowFOp, *self._floats(a, b))

    def select_nonzero(self, cond: SSAValue, a, b) -> SSAValue:
        """`a` where the float `cond` is not 0, else `b`: exact for every value of `a` and
        `b` (inf, NaN), unlike any arithmetic blend. A floatN `cond` selects lane by lane
        in one `opencl.select_nonzero` (OpenCL's vector `select` takes an integer mask,
        a type the IR's i1 vectors do not carry: the op compares in C); a halfN one, lane
        by lane through scalars."""
        a, b = self._floats(a, b)
        t = cond.type
        if isinstance(t, VectorType) and t.element_type == f32 and a.type == b.type == t:
            return self._op(opencl.SelectNonzeroOp, cond, a, b)
        if isinstance(t, VectorType):
            return self.vec([self.select_nonzero(self.lane(cond, k), self.lane(a, k), self.lane(b, k))
                             for k in range(t.get_shape()[0])])
        nonzero = self._op(arith.CmpfOp, cond, self.const_like(0.0, t), attrs=("une",))
        return self.select(nonzero, a, b)

    def mask(self, pred: str, a, b=None) -> SSAValue:
        """1.0 where the float comparison `pred` (arith.cmpf's: "olt", "oeq", "uno",
        ...) of `a` and `b` holds, else 0.0, in `a`'s type: how boolean tensors are held
        (graph.is_nan, graph.less, ...). Ordered predicates are false when either side
        is NaN (IEEE 754, numpy, onnxruntime). A vector compares lane by lane through
        scalars (the IR's i1 vectors have no OpenCL type). `b` None compares `a` with itself."""
        b = a if b is None else b
        a, b = self._floats(a, b)
        t = a.type
        if pred in ("false", "true"):  # a constant mask
            return self.const_like(1.0 if pred == "true" else 0.0, t)
        if isinstance(t, VectorType):
            return self.vec([self.mask(pred, self.lane(a, k), self.lane(b, k)) for k in range(t.get_shape()[0])])
        holds = self._op(arith.CmpfOp, a, b, attrs=(pred,))
        return self.select(holds, self.const_like(1.0, t), self.const_like(0.0, t))

    def sqrt(self, a) -> SSAValue:
        return self._op(math.SqrtOp, self.f(a))

    def absf(self, a) -> SSAValue:
        return self._op(math.AbsFOp, self.f(a))

    def floor(self, a) -> SSAValue:
        return self._op(math.FloorOp, self.f(a))

    def ceil(self, a) -> SSAValue:
        return self._op(math.CeilOp, self.f(a))

    def trunc(self, a) -> SSAValue:
        """Rounding toward zero (OpenCL `trunc`): ONNX Cast of a float to an integer type."""
        return self._op(math.TruncOp, self.f(a))

    def exact_int(self, x: SSAValue) -> SSAValue:
        """The float-held integer `x` (a scalar) as an i32. A value outside [-2**24, 2**24]
        (the range the runtime admits, where floats hold every integer; NaN and inf too)
        becomes 0 first, so the conversion is always in range: an out-of-range float -> int
        conversion has no defined result (poison in LLVM, which PoCL compiles through)."""
        inside = self.fcmp("ole", self.absf(x), float(1 << 24))
        return self.to_int(self.select(inside, x, self.const_like(0.0, x.type)))

    # ------------------------------------------------------------------ memory and ids

    # ------------------------------------------------------------------ float4

    def splat(self, scalar: SSAValue, lanes: int = 4) -> SSAValue:
        """A float4 (or `lanes` wide vector) of `scalar`, converted to the builder's float
        type first (a count or a coordinate is f32; in a half kernel its splat meets half
        data)."""
        value = self.cast(self.f(scalar), self.ftype)
        return self._op(opencl.VecSplatOp, value, attrs=(VectorType(self.ftype, [lanes]),))

    def vec(self, lanes: Sequence[SSAValue]) -> SSAValue:
        values = self._floats(*lanes)
        return self.pure((opencl.VecMakeOp, *values), lambda: opencl.VecMakeOp(values))

    def lane(self, vector: SSAValue, k: int) -> SSAValue:
        return self._op(opencl.VecExtractOp, vector, attrs=(k,))

    def vload4(self, ptr: SSAValue, index, hint=None) -> SSAValue:
        """Four floats at ptr[4*index .. 4*index+3]."""
        return self.emit(opencl.VLoad4Op(ptr, self.i(index)), hint)

    def vload(self, ptr: SSAValue, offset, lanes: int, hint=None) -> SSAValue:
        """`lanes` elements at ptr[offset .. offset + lanes - 1] (any offset): floats, or
        i32 words (an intN) from an int pointer, taken apart with `lane`."""
        return self.emit(opencl.VLoadOp(ptr, self.i(offset), lanes), hint)

    def vstore(self, value: SSAValue, ptr: SSAValue, offset) -> None:
        """ptr[offset ..] = the lanes of `value`."""
        self.emit(opencl.VStoreOp(value, ptr, self.i(offset)))

    def load_float(self, ptr: SSAValue, index, hint=None) -> SSAValue:
        """ptr[index] as an f32 whatever the buffer stores: a half buffer (fp16 storage, such
        as a decoder's KV cache after `kv-cache-storage{element=f16}`) is read with
        `vload_half`, which needs no cl_khr_fp16."""
        if ptr.type.element == f16 and not self.half:
            return self.emit(opencl.VLoadHalfOp(ptr, self.i(index)), hint)
        return self.load(ptr, index, hint)

    def vload_float(self, ptr: SSAValue, offset, lanes: int, hint=None) -> SSAValue:
        """`vload` as floats whatever the buffer stores (`vload_halfN` from halves)."""
        if ptr.type.element == f16 and not self.half:
            return self.emit(opencl.VLoadHalfOp(ptr, self.i(offset), lanes), hint)
        return self.vload(ptr, offset, lanes, hint)

    def store_float(self, value: SSAValue, ptr: SSAValue, index) -> None:
        """ptr[index] = a float, rounded to a half (`vstore_half`) into a half buffer."""
        if ptr.type.element == f16 and value.type == f32:
            self.emit(opencl.VStoreHalfOp(value, ptr, self.i(index)))
        else:
            self.store(value, ptr, index)

    def global_id(self, dim: int, hint=None) -> SSAValue:
        return self._op(opencl.GlobalIdOp, attrs=(dim,), hint=hint)

    def load(self, ptr: SSAValue, index, hint=None) -> SSAValue:
        return self.emit(opencl.LoadOp(ptr, self.i(index)), hint)

    def store(self, value: SSAValue, ptr: SSAValue, index) -> None:
        """ptr[index] = value, a float converted to the pointer's element type."""
        element = ptr.type.element
        if element in (f32, f16) and value.type != element:
            value = self.cast(value, element)
        self.emit(opencl.StoreOp(value, ptr, self.i(index)))

    def masked_load(self, ptr: SSAValue, index, valid: SSAValue | None) -> SSAValue:
        """ptr[index] where `valid`, else 0; the address is clamped so it stays in bounds."""
        if valid is None or valid is True:
            return self.load(ptr, index)
        if valid is False:
            return self.const_like(0.0, ptr.type.element)
        safe = self.select(valid, self.i(index), self.i(0))
        v = self.load(ptr, safe)
        return self.select(valid, v, self.const_like(0.0, v.type))

    # ------------------------------------------------------------------ control flow

    def for_(
        self,
        lb,
        ub,
        step,
        iter_args: Sequence[SSAValue],
        body: Callable[[KernelBuilder, SSAValue, list[SSAValue]], Sequence[SSAValue]],
        hint: str | None = None,
        unroll: bool | int | str = False,
    ) -> list[SSAValue]:
        """scf.for over i32 with iteration arguments; `body` returns the yielded values.
        `unroll`: True asks the OpenCL compiler to unroll the loop fully, an int N by N
        (the `opencl.unroll` attribute, printed as `#pragma unroll`), "print" has the
        printer write one copy of the body per trip."""
        attributes = {} if unroll is False else {opencl.UNROLL_ATTR: _unroll_attr(unroll)}
        bounds = self.i(lb), self.i(ub), self.i(step)  # before the body, which may reuse them
        block = Block(arg_types=[i32, *[a.type for a in iter_args]])
        if hint:
            block.args[0].name_hint = hint
        kb = self.child(block)
        yielded = body(kb, block.args[0], list(block.args[1:]))
        kb.emit(scf.YieldOp(*yielded))
        op = scf.ForOp(*bounds, list(iter_args), Region(block))
        op.attributes.update(attributes)
        self.emit(op)
        for res, arg in zip(op.results, iter_args):
            if arg.name_hint:
                res.name_hint = arg.name_hint
        return list(op.results)

    def if_(self, cond: SSAValue, then: Callable[[KernelBuilder], None]) -> None:
        """scf.if without results."""
        block = Block()
        kb = self.child(block)
        then(kb)
        kb.emit(scf.YieldOp())
        self.emit(scf.IfOp(cond, [], Region(block), Region(Block([scf.YieldOp()]))))

    def if_else(self, cond: SSAValue, then: Callable[[KernelBuilder], None],
                otherwise: Callable[[KernelBuilder], None]) -> None:
        """scf.if with an else branch, without results."""
        blocks = []
        for branch in (then, otherwise):
            block = Block()
            kb = self.child(block)
            branch(kb)
            kb.emit(scf.YieldOp())
            blocks.append(block)
        self.emit(scf.IfOp(cond, [], Region(blocks[0]), Region(blocks[1])))

    def guard(self, conds: Sequence[SSAValue], then: Callable[[KernelBuilder], None]) -> None:
        """Run `then` only where all `conds` hold (no-op wrapper when there are none)."""
        c = self.all_of(conds)
        if c is None:
            then(self)
        elif c is not False:
            self.if_(c, then)

    # ------------------------------------------------------------------ work-groups

    def local_id(self, dim: int, hint=None) -> SSAValue:
        """`get_local_id(dim)`: the work-item's index inside its work-group."""
        return self._op(opencl.LocalIdOp, attrs=(dim,), hint=hint)

    def group_id(self, dim: int, hint=None) -> SSAValue:
        """`get_group_id(dim)`: the work-group's index in the grid."""
        return self._op(opencl.GroupIdOp, attrs=(dim,), hint=hint)

    def local_alloc(self, size: int, element: Attribute, hint=None) -> SSAValue:
        """A `__local` array of `size` elements shared by the work-group. OpenCL declares
        local memory at kernel scope only: call this on the kernel body's own builder."""
        op = opencl.LocalAllocOp(size, element)
        array = self.emit(op, hint, verified=True)
        op.verify_()  # once in the block, whose last op it is for now: it checks its parent is the kernel
        return array

    def barrier(self, fence: str = "local") -> None:
        """`barrier(CLK_LOCAL_MEM_FENCE)`: every work-item of the group must reach it (never
        inside a branch that some work-items skip)."""
        self.emit(opencl.BarrierOp(fence))


def new_kernel(name: str, args: Sequence[tuple[str, Attribute]],
               ftype: Attribute = f32) -> tuple[opencl.KernelOp, KernelBuilder]:
    """An empty kernel and a builder for its body whose data floats are `ftype`."""
    kernel = opencl.KernelOp(name, args)
    return kernel, KernelBuilder(kernel.body.block, ftype=ftype)


def finish(kb: KernelBuilder) -> None:
    kb.emit(opencl.ReturnOp())


GLOBAL_F32 = opencl.PointerType("global", f32)
GLOBAL_F16 = opencl.PointerType("global", f16)
GLOBAL_I32 = opencl.PointerType("global", i32)
BOOL = i1
