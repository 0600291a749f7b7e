"""Print the `opencl.kernel` ops of a module as one OpenCL C 1.2 program.

Shape follows xDSL's CSL/WGSL printers: a `c_type` mapping, one handler per op kind
(statements) and one expression builder per pure op kind. Pure single-use values
defined in the same block as their use are inlined as parenthesised expressions;
everything else becomes a named `const` temporary. Loads are never inlined.

`scf.for` iteration arguments and `scf.if` results become mutable variables declared
before the construct and assigned at `scf.yield`.
"""

from __future__ import annotations

import math as pymath
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from adreno_mlir.dialects import opencl

SAMPLER_NAME = "smp"

C_KEYWORDS = frozenset(
    """
    auto break case char const continue default do double else enum extern float for
    goto if inline int long register restrict return short signed sizeof static struct
    switch typedef union unsigned void volatile while bool half uchar ushort uint ulong
    kernel __kernel global __global local __local constant __constant private __private
    read_only write_only read_write __read_only __write_only __read_write image2d_t
    image3d_t sampler_t event_t size_t ptrdiff_t intptr_t uintptr_t true false
    float2 float3 float4 float8 float16 int2 int3 int4 int8 int16 half2 half4 half8
    get_global_id get_local_id get_group_id get_global_size get_local_size
    get_num_groups barrier vload4 vstore4 read_imagef write_imagef exp tanh sqrt fabs
    fma mad erf pow floor ceil log rsqrt fmax fmin max min abs rint round trunc sin cos
    tan exp2 log2 log10 isnan select clamp mix dot main smp INFINITY NAN
    CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE
    """.split()
)


class OpenCLPrintError(DiagnosticException):
    """Raised for IR the OpenCL C printer cannot express."""


def _where(op: Operation) -> str:
    loc = getattr(op, "location", None)
    text = str(loc) if loc is not None else ""
    return f" at {text}" if text and text != "loc(unknown)" else ""


def _unsupported(op: Operation, why: str = "") -> OpenCLPrintError:
    msg = f"cannot print operation '{op.name}' as OpenCL C{_where(op)}"
    if why:
        msg += f": {why}"
    return OpenCLPrintError(msg)


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------


def c_type(attr: Attribute) -> str:
    """The OpenCL C spelling of a scalar, vector, pointer or image type."""
    match attr:
        case Float32Type():
            return "float"
        case Float16Type():
            return "half"
        case Float64Type():
            return "double"
        case IntegerType(width=w) if w.data == 1:
            return "int"
        case IntegerType(width=w) if w.data == 32:
            return "int"
        case IntegerType(width=w) if w.data == 64:
            return "long"
        case IndexType():
            return "int"
        case VectorType() if attr.get_num_dims() == 1 and attr.get_shape()[0] in (
            2,
            3,
            4,
            8,
            16,
        ):
            return f"{c_type(attr.element_type)}{attr.get_shape()[0]}"
        case opencl.PointerType():
            space = attr.space.data
            base = c_type(attr.element)
            if space == "private":
                return f"{base}*"
            return f"__{space} {base}*"
        case opencl.Image2DType():
            return f"__{attr.access.data}_only image2d_t"
        case _:
            raise OpenCLPrintError(f"type {attr} has no OpenCL C equivalent")


def _uses_half(attr: Attribute) -> bool:
    if isinstance(attr, Float16Type):
        return True
    if isinstance(attr, VectorType):
        return _uses_half(attr.element_type)
    return False  # a `half*` only read by vload_half/vstore_half needs no cl_khr_fp16


# ---------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------


def float_literal(value: float, type: Attribute = Float32Type()) -> str:
    if isinstance(type, Float32Type | Float16Type) and pymath.isfinite(value):
        try:  # print the exact float value the device will see
            value = struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            value = pymath.copysign(pymath.inf, value)
    if pymath.isnan(value):
        text = "NAN"
    elif pymath.isinf(value):
        text = "INFINITY" if value > 0 else "-INFINITY"
    else:
        text = "%.9g" % value
        if "." not in text and "e" not in text and "n" not in text:
            text += ".0"
        text += "f"
    if isinstance(type, Float16Type):
        return f"(half)({text})"
    return text


def int_literal(value: int, type: Attribute) -> str:
    if isinstance(type, IntegerType) and type.width.data == 1:
        return "1" if value & 1 else "0"
    if isinstance(type, IntegerType) and type.width.data == 64:
        return f"{value}L"
    if value == -(2**31):
        return "(-2147483647 - 1)"
    return str(value)


def constant_literal(op: arith.ConstantOp) -> str:
    value = op.value
    rtype = op.result.type
    if isinstance(value, FloatAttr):
        return float_literal(value.value.data, rtype)
    if isinstance(value, IntegerAttr):
        return int_literal(value.value.data, rtype)
    if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(rtype, VectorType):
        vals = value.get_values()
        el = rtype.element_type
        lit = float_literal if isinstance(el, Float16Type | Float32Type) else int_literal
        parts = [lit(v, el) for v in vals]  # pyright: ignore
        if len(set(parts)) == 1:
            return f"({c_type(rtype)})({parts[0]})"
        return f"({c_type(rtype)})({', '.join(parts)})"
    raise _unsupported(op, f"constant value {value} of type {rtype}")


# ---------------------------------------------------------------------------
# Expression builders for pure ops
# ---------------------------------------------------------------------------

BINARY_OPERATORS: dict[type[Operation], str] = {
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
    arith.DivSIOp: "/",
    arith.RemSIOp: "%",
    arith.AddfOp: "+",
    arith.SubfOp: "-",
    arith.MulfOp: "*",
    arith.DivfOp: "/",
    arith.AndIOp: "&",
    arith.OrIOp: "|",
    arith.XOrIOp: "^",
    arith.ShLIOp: "<<",
    arith.ShRSIOp: ">>",
}

NAN_PROPAGATING: dict[type[Operation], str] = {
    arith.MaximumfOp: "fmax",
    arith.MinimumfOp: "fmin",
}
"""arith.maximumf/minimumf are NaN if either operand is NaN (ONNX Relu(NaN) = NaN); OpenCL's
fmax/fmin return the other operand instead (IEEE maxNum, what arith.maxnumf means). They
print as calls of small helpers defined before the kernels, `adreno_fmax_float4(a, b)`,
so that no operand text is repeated."""


def nan_helper_name(op: Operation) -> str:
    return f"adreno_{NAN_PROPAGATING[type(op)]}_{c_type(op.results[0].type)}"


def nan_helper_definition(op: Operation) -> str:
    """`b` where it wins the comparison or is NaN, else `a` (which is then NaN or the
    winner): compare-and-select, which CPU compilers vectorize (PoCL turned `fmax` plus
    the NaN test into calls that held a float8 1x1 convolution with a Clip epilogue to
    half speed). The sign of a zero result is unspecified, as for OpenCL's fmax/fmin."""
    t = c_type(op.results[0].type)
    wins = "a < b" if isinstance(op, arith.MaximumfOp) else "b < a"
    return f"{t} {nan_helper_name(op)}({t} a, {t} b) {{ return select(a, b, ({wins}) | isnan(b)); }}"


CALLS: dict[type[Operation], str] = {
    arith.MaxnumfOp: "fmax",
    arith.MinnumfOp: "fmin",
    arith.MaxSIOp: "max",
    arith.MinSIOp: "min",
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.TanhOp: "tanh",
    math.SqrtOp: "sqrt",
    math.RsqrtOp: "rsqrt",
    math.AbsFOp: "fabs",
    math.AbsIOp: "abs",
    math.FmaOp: "fma",
    math.ErfOp: "erf",
    math.PowFOp: "pow",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
    math.LogOp: "log",
    math.Log2Op: "log2",
    math.Log10Op: "log10",
    math.Log1pOp: "log1p",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.TanOp: "tan",
    math.RoundOp: "round",
    math.RoundEvenOp: "rint",
    math.TruncOp: "trunc",
    math.ExpM1Op: "expm1",
    math.CopySignOp: "copysign",
    math.Atan2Op: "atan2",
    math.AtanOp: "atan",
}

CMPI: dict[str, str] = {
    "eq": "==",
    "ne": "!=",
    "slt": "<",
    "sle": "<=",
    "sgt": ">",
    "sge": ">=",
}

# Float predicates: ordered ones map to C directly (C comparisons are false on NaN,
# except !=, which is true, i.e. "une").
CMPF: dict[str, str] = {
    "oeq": "{a} == {b}",
    "ogt": "{a} > {b}",
    "oge": "{a} >= {b}",
    "olt": "{a} < {b}",
    "ole": "{a} <= {b}",
    "une": "{a} != {b}",
    "one": "{a} < {b} || {a} > {b}",
    "ueq": "!({a} < {b} || {a} > {b})",
    "ugt": "!({a} <= {b})",
    "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})",
    "ule": "!({a} > {b})",
    "ord": "!isnan({a}) && !isnan({b})",
    "uno": "isnan({a}) || isnan({b})",
    "false": "0",
    "true": "1",
}

VECTOR_LANES = "0123456789abcdef"

PURE_OPENCL_OPS = (
    opencl.WorkItemQueryOp,
    opencl.SelectNonzeroOp,
    opencl.VecSplatOp,
    opencl.VecMakeOp,
    opencl.VecExtractOp,
)


def _is_pure_expr_op(op: Operation) -> bool:
    return (
        type(op) in BINARY_OPERATORS
        or type(op) in CALLS
        or type(op) in NAN_PROPAGATING
        or isinstance(
            op,
            arith.ConstantOp
            | arith.CmpiOp
            | arith.CmpfOp
            | arith.SelectOp
            | arith.NegfOp
            | arith.SIToFPOp
            | arith.FPToSIOp
            | arith.ExtFOp
            | arith.TruncFOp
            | arith.IndexCastOp
            | arith.ExtSIOp
            | arith.TruncIOp
            | arith.ExtUIOp
            | arith.BitcastOp,
        )
        or isinstance(op, PURE_OPENCL_OPS)
    )


# ---------------------------------------------------------------------------
# The printer
# ---------------------------------------------------------------------------

VECTOR_ACCESS_ATTR = "opencl.vector_access"
"""Module attribute (set by `convert-graph-to-opencl{vector_access=...}`) that overrides the
printer's `vector_access` mode for that program."""

VECTOR_ACCESS_MODES = ("typed", "vload")
"""How vector loads and stores (`opencl.vload4`, `vstore4`, `vload`, `vstore`) print:

- `typed` (default): an access whose address is provably aligned to its width
  (`opencl.vector_access_aligned`: a buffer argument or an array, at an offset
  `opencl.known_multiple` proves a multiple of the lanes) goes through a pointer of its
  vector type, `((__global const float4*)a)[i]` or `*(__local float4*)(t + off)`, and the
  arrays such accesses touch are declared `__attribute__((aligned(N)))`; the rest stay
  `vloadN` / `vstoreN`. OpenCL's vloadN asks only for the element's alignment, so a
  compiler that cannot prove more splits it into scalar accesses; a typed access promises
  the vector's alignment and can be one wide load (bench/vector_access.py).
- `vload`: every access as `vloadN` / `vstoreN` (the printer's output before `typed`)."""

DEFAULT_VECTOR_ACCESS = "typed"


def _module_mode(module: Operation, attr: str, modes: tuple[str, ...], default: str) -> str:
    """The printer mode a module attribute (set by convert-graph-to-opencl) asks for, else
    `default`; a value outside `modes` is an error naming the attribute."""
    mode = module.attributes.get(attr) if isinstance(module, ModuleOp) else None
    if not isinstance(mode, StringAttr):
        return default
    if mode.data not in modes:
        raise OpenCLPrintError(f"module attribute {attr} = \"{mode.data}\" is not one of {', '.join(modes)}")
    return mode.data


def _element_bytes(t: Attribute) -> int:
    return 2 if isinstance(t, Float16Type) else 4


def _vector_bytes(op: Operation) -> int:
    """Bytes of a vector load's result or a vector store's value (0 for any other op)."""
    if isinstance(op, opencl.VLoad4Op | opencl.VLoadOp):
        vt = op.result.type
    elif isinstance(op, opencl.VStore4Op | opencl.VStoreOp):
        vt = op.value.type
    else:
        return 0
    return vt.get_shape()[0] * _element_bytes(vt.element_type)


_IDENT = re.compile(r"[^A-Za-z0-9_]")


@dataclass
class _Operand:
    text: str
    atomic: bool


class OpenCLCPrinter:
    """Prints kernels to a stream. One instance per program."""

    def __init__(self, stream: IO[str], fp_contract: bool = False, unroll: str = "ir", fma: str = "call",
                 vector_access: str = DEFAULT_VECTOR_ACCESS):
        if unroll not in UNROLL_MODES:
            raise OpenCLPrintError(f"unroll must be one of {', '.join(UNROLL_MODES)}, got {unroll!r}")
        if fma not in FMA_MODES:
            raise OpenCLPrintError(f"fma must be one of {', '.join(FMA_MODES)}, got {fma!r}")
        if vector_access not in VECTOR_ACCESS_MODES:
            raise OpenCLPrintError(f"vector_access must be one of {', '.join(VECTOR_ACCESS_MODES)}, "
                                   f"got {vector_access!r}")
        self.stream = stream
        self.fp_contract = fp_contract
        self.unroll = unroll
        self.fma = fma
        self.vector_access = vector_access
        self.multiples: dict[SSAValue, int] = {}  # opencl.known_multiple's memo
        self.indent = 0
        self.names: dict[SSAValue, str] = {}
        self.used_names: set[str] = set()
        self.counter = 0

    # -- output helpers ------------------------------------------------------

    def line(self, text: str = "") -> None:
        if text:
            self.stream.write("    " * self.indent + text + "\n")
        else:
            self.stream.write("\n")

    # -- naming --------------------------------------------------------------

    def fresh_name(self, hint: str | None) -> str:
        if hint:
            base = _IDENT.sub("_", hint)
            if base[0].isdigit():
                base = "v" + base
            if base in C_KEYWORDS or base.startswith("__"):
                base = base + "_"
        else:
            base = None
        if base is None:
            while True:
                name = f"v{self.counter}"
                self.counter += 1
                if name not in self.used_names:
                    break
        else:
            name = base
            n = 1
            while name in self.used_names:
                name = f"{base}_{n}"
                n += 1
        self.used_names.add(name)
        return name

    def bind(self, value: SSAValue, hint: str | None = None) -> str:
        name = self.fresh_name(hint if hint is not None else value.name_hint)
        self.names[value] = name
        return name

    # -- expressions ---------------------------------------------------------

    def inlinable(self, value: SSAValue) -> bool:
        if not isinstance(value, OpResult):
            return False
        op = value.op
        if isinstance(op, arith.ConstantOp):
            return True
        if not _is_pure_expr_op(op) or len(op.results) != 1:
            return False
        uses = list(value.uses)
        if len(uses) != 1:
            return False
        user = uses[0].operation
        return user.parent_block() is op.parent_block()

    def operand(self, value: SSAValue) -> _Operand:
        if value in self.names:
            return _Operand(self.names[value], True)
        if isinstance(value, OpResult) and self.inlinable(value):
            text, atomic = self.expr(value.op)
            return _Operand(text, atomic)
        if isinstance(value, OpResult):
            raise _unsupported(
                value.op, "its result is used before it is defined by the printer"
            )
        raise OpenCLPrintError(f"block argument {value} has no C name")

    def arg(self, value: SSAValue) -> str:
        """Operand text, safe to use as an operand of a binary operator."""
        o = self.operand(value)
        return o.text if o.atomic else f"({o.text})"

    def plain(self, value: SSAValue) -> str:
        """Operand text, used where no parentheses are needed (call args, rhs)."""
        return self.operand(value).text

    def expr(self, op: Operation) -> tuple[str, bool]:
        """The C expression of a pure op and whether it is atomic."""
        t = type(op)
        if isinstance(op, arith.ConstantOp):
            text = constant_literal(op)
            return text, not text.startswith("-") and " " not in text
        if t in BINARY_OPERATORS:
            a, b = op.operands
            return f"{self.arg(a)} {BINARY_OPERATORS[t]} {self.arg(b)}", False
        if t is math.FmaOp and self.fma in ("split", "contract"):
            a, b, c = op.operands
            return f"{self.arg(a)} * {self.arg(b)} + {self.arg(c)}", False
        if t in CALLS:
            args = ", ".join(self.plain(o) for o in op.operands)
            return f"{CALLS[t]}({args})", True
        if t in NAN_PROPAGATING:
            args = ", ".join(self.plain(o) for o in op.operands)
            return f"{nan_helper_name(op)}({args})", True
        match op:
            case arith.NegfOp():
                a = self.arg(op.operand)
                return (f"-({a})" if a.startswith("-") else f"-{a}"), False
            case arith.CmpiOp():
                pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
                a, b = self.arg(op.lhs), self.arg(op.rhs)
                if pred in CMPI:
                    return f"{a} {CMPI[pred]} {b}", False
                # unsigned comparison
                cop = {"ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}[pred]
                return f"(uint){a} {cop} (uint){b}", False
            case arith.CmpfOp():
                pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
                a, b = self.arg(op.lhs), self.arg(op.rhs)
                return CMPF[pred].format(a=a, b=b), pred in ("false", "true")
            case arith.SelectOp():
                c = self.arg(op.cond)
                return f"{c} ? {self.arg(op.lhs)} : {self.arg(op.rhs)}", False
            case (
                arith.SIToFPOp()
                | arith.FPToSIOp()
                | arith.ExtFOp()
                | arith.TruncFOp()
                | arith.IndexCastOp()
                | arith.ExtSIOp()
                | arith.TruncIOp()
                | arith.ExtUIOp()
            ):
                (src,) = op.operands
                rt = op.results[0].type
                if isinstance(rt, VectorType):
                    return f"convert_{c_type(rt)}({self.plain(src)})", True
                if c_type(rt) == c_type(src.type):
                    return self.plain(src), self.operand(src).atomic
                return f"({c_type(rt)}){self.arg(src)}", False
            case arith.BitcastOp():  # the same 32 bits read as the other type
                return f"as_{c_type(op.result.type)}({self.plain(op.input)})", True
            case opencl.WorkItemQueryOp():
                return f"(int){op.C_FUNCTION}({op.dim.value.data})", False
            case opencl.SelectNonzeroOp():
                t = op.result.type
                zero = f"({c_type(t)})(0.0f)" if isinstance(t, VectorType) else "0.0f"
                # `?:` with a vector condition picks per lane; PoCL compiled it ~20% faster
                # than the same choice written with select()
                return (f"({self.arg(op.cond)} != {zero}) ? {self.arg(op.true_value)} : "
                        f"{self.arg(op.false_value)}"), False
            case opencl.VecSplatOp():
                return f"({c_type(op.result.type)})({self.plain(op.scalar)})", True
            case opencl.VecMakeOp():
                parts = ", ".join(self.plain(e) for e in op.elements)
                return f"({c_type(op.result.type)})({parts})", True
            case opencl.VecExtractOp():
                return f"{self.arg(op.vector)}.s{VECTOR_LANES[op.lane.value.data]}", True
            case _:
                raise _unsupported(op)

    # -- program -------------------------------------------------------------

    def print_program(self, module: Operation) -> None:
        kernels = [op for op in module.walk() if isinstance(op, opencl.KernelOp)]
        uses_half = any(
            _uses_half(t)
            for k in kernels
            for o in k.walk()
            for t in [*o.result_types, *o.operand_types]
        ) or any(_uses_half(t) for k in kernels for t in k.function_type.inputs)
        uses_images = any(
            isinstance(o, opencl.ReadImageOp) for k in kernels for o in k.walk()
        )
        self.fma = _module_mode(module, FMA_ATTR, FMA_MODES, self.fma)
        self.vector_access = _module_mode(module, VECTOR_ACCESS_ATTR, VECTOR_ACCESS_MODES, self.vector_access)
        contract_off = not self.fp_contract and self.fma != "contract"
        if contract_off:
            # arith.mulf + arith.addf must not be fused into an fma behind our back
            self.line("#pragma OPENCL FP_CONTRACT OFF")
        if uses_half:
            self.line("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
        if uses_half or contract_off:
            self.line()
        if uses_images:
            self.line(
                f"__constant sampler_t {SAMPLER_NAME} = CLK_NORMALIZED_COORDS_FALSE | "
                "CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;"
            )
            self.line()
        helpers = {nan_helper_name(o): nan_helper_definition(o) for k in kernels for o in k.walk()
                   if type(o) in NAN_PROPAGATING}
        if helpers:
            self.line("// max/min that propagate NaN (arith.maximumf/minimumf); OpenCL's fmax/fmin drop it")
            for name in sorted(helpers):
                self.line(helpers[name])
            self.line()
        for i, k in enumerate(kernels):
            if i:
                self.line()
            self.print_kernel(k)

    def print_kernel(self, kernel: opencl.KernelOp) -> None:
        self.names = {}
        self.used_names = set()
        self.counter = 0
        block = kernel.body.block
        params: list[str] = []
        for arg, name_attr in zip(block.args, kernel.arg_names.data):
            name = self.bind(arg, name_attr.data)
            t = arg.type
            ct = c_type(t)
            if isinstance(t, opencl.PointerType) and t.space.data == "global":
                written = any(
                    isinstance(u.operation, opencl.StoreOp | opencl.VStore4Op | opencl.VStoreOp | opencl.VStoreHalf4Op
                                  | opencl.VStoreHalfOp)
                    and u.index == 1
                    for u in arg.uses
                )
                if not written:
                    ct = f"__global const {c_type(t.element)}*"
            params.append(f"{ct} {name}")
        attr = ""
        if kernel.reqd_work_group_size is not None:
            sizes = ", ".join(str(s) for s in opencl.int_list(kernel.reqd_work_group_size))
            attr = f"__attribute__((reqd_work_group_size({sizes})))\n"
        head = f"{attr}__kernel void {kernel.sym_name.data}("
        one_line = head + ", ".join(params) + ") {"
        if len(one_line.split("\n")[-1]) <= 100:
            for part in one_line.split("\n"):
                self.line(part)
        else:
            for part in head.split("\n"):
                self.line(part)
            self.indent += 1
            for i, p in enumerate(params):
                self.line(p + ("," if i + 1 < len(params) else ""))
            self.indent -= 1
            self.line(") {")
        self.indent += 1
        self.print_block(block, top_level=True)
        self.indent -= 1
        self.line("}")

    def print_block(self, block: Block, top_level: bool = False) -> None:
        for op in block.ops:
            if top_level and isinstance(op, opencl.ReturnOp) and op is block.last_op:
                continue
            self.print_op(op)

    # -- statements ----------------------------------------------------------

    def declare(self, value: SSAValue, text: str, const: bool = True) -> None:
        name = self.bind(value)
        q = "const " if const else ""
        self.line(f"{q}{c_type(value.type)} {name} = {text};")

    def print_op(self, op: Operation) -> None:
        handler = STATEMENTS.get(type(op))
        if handler is not None:
            handler(self, op)
            return
        if _is_pure_expr_op(op):
            if len(op.results) != 1:
                raise _unsupported(op)
            res = op.results[0]
            if self.inlinable(res) or not res.uses:
                # printed at its use (or dead)
                if not res.uses:
                    return
                return
            self.declare(res, self.expr(op)[0])
            return
        raise _unsupported(op)

    def print_load(self, op: opencl.LoadOp) -> None:
        self.declare(op.result, f"{self.arg(op.ptr)}[{self.plain(op.index)}]")

    def print_store(self, op: opencl.StoreOp) -> None:
        self.line(f"{self.arg(op.ptr)}[{self.plain(op.index)}] = {self.plain(op.value)};")

    def typed(self, op: Operation) -> bool:
        """Whether this vector access prints through a pointer of its vector type (see
        VECTOR_ACCESS_MODES): in `typed` mode, where its address is provably aligned."""
        return self.vector_access == "typed" and opencl.vector_access_aligned(op, self.multiples)

    def vector_pointer(self, ptr: SSAValue, lanes: int, const: bool) -> str:
        """`(__global const float4*)`: the cast of `ptr` to a pointer of `lanes`-wide vectors."""
        t = ptr.type
        assert isinstance(t, opencl.PointerType)
        space = "" if t.space.data == "private" else f"__{t.space.data} "
        return f"({space}{'const ' if const else ''}{c_type(t.element)}{lanes}*)"

    def print_vload4(self, op: opencl.VLoad4Op) -> None:
        if self.typed(op):
            self.declare(op.result, f"({self.vector_pointer(op.ptr, 4, True)}{self.arg(op.ptr)})"
                                    f"[{self.plain(op.index)}]")
            return
        self.declare(op.result, f"vload4({self.plain(op.index)}, {self.plain(op.ptr)})")

    def print_vstore4(self, op: opencl.VStore4Op) -> None:
        if self.typed(op):
            self.line(f"({self.vector_pointer(op.ptr, 4, False)}{self.arg(op.ptr)})[{self.plain(op.index)}] = "
                      f"{self.plain(op.value)};")
            return
        self.line(
            f"vstore4({self.plain(op.value)}, {self.plain(op.index)}, "
            f"{self.plain(op.ptr)});"
        )

    def print_vload(self, op: opencl.VLoadOp) -> None:
        lanes = op.result.type.get_shape()[0]
        if self.typed(op):
            self.declare(op.result, f"*({self.vector_pointer(op.ptr, lanes, True)}({self.arg(op.ptr)} + "
                                    f"{self.arg(op.offset)}))")
            return
        self.declare(op.result, f"vload{lanes}(0, {self.arg(op.ptr)} + {self.arg(op.offset)})")

    def print_vstore(self, op: opencl.VStoreOp) -> None:
        lanes = op.value.type.get_shape()[0]
        if self.typed(op):
            self.line(f"*({self.vector_pointer(op.ptr, lanes, False)}({self.arg(op.ptr)} + {self.arg(op.offset)})) = "
                      f"{self.plain(op.value)};")
            return
        self.line(f"vstore{lanes}({self.plain(op.value)}, 0, {self.arg(op.ptr)} + {self.arg(op.offset)});")

    def print_vload_half(self, op: opencl.VLoadHalfOp) -> None:
        n = "" if op.lanes == 1 else op.lanes
        self.declare(op.result, f"vload_half{n}(0, {self.arg(op.ptr)} + {self.arg(op.offset)})")

    def print_vstore_half(self, op: opencl.VStoreHalfOp) -> None:
        n = "" if isinstance(op.value.type, Float32Type) else op.value.type.get_shape()[0]
        self.line(f"vstore_half{n}({self.plain(op.value)}, 0, {self.arg(op.ptr)} + {self.arg(op.offset)});")

    def print_vload_half4(self, op: opencl.VLoadHalf4Op) -> None:
        self.declare(op.result, f"vload_half4({self.plain(op.index)}, {self.plain(op.ptr)})")

    def print_vstore_half4(self, op: opencl.VStoreHalf4Op) -> None:
        self.line(f"vstore_half4({self.plain(op.value)}, {self.plain(op.index)}, {self.plain(op.ptr)});")

    def print_read_image(self, op: opencl.ReadImageOp) -> None:
        self.declare(
            op.result,
            f"read_image{'h' if _uses_half(op.result.type) else 'f'}({self.plain(op.image)}, {SAMPLER_NAME}, "
            f"(int2)({self.plain(op.x)}, {self.plain(op.y)}))",
        )

    def print_write_image(self, op: opencl.WriteImageOp) -> None:
        self.line(
            f"write_image{'h' if _uses_half(op.value.type) else 'f'}({self.plain(op.image)}, (int2)({self.plain(op.x)}, "
            f"{self.plain(op.y)}), {self.plain(op.value)});"
        )

    def print_barrier(self, op: opencl.BarrierOp) -> None:
        self.line(f"barrier({opencl.BARRIER_FENCES[op.fence.data]});")

    def print_array_alloc(self, op: opencl._ArrayAllocOp) -> None:  # pyright: ignore
        name = self.bind(op.result)
        ptr = op.result.type
        assert isinstance(ptr, opencl.PointerType)
        q = "__local " if isinstance(op, opencl.LocalAllocOp) else ""
        # aligned to its widest typed vector access (natural alignment is the element's)
        widest = max((_vector_bytes(u.operation) for u in op.result.uses if self.typed(u.operation)), default=0)
        align = f" __attribute__((aligned({widest})))" if widest > _element_bytes(ptr.element) else ""
        self.line(f"{q}{c_type(ptr.element)} {name}[{op.size.value.data}]{align};")

    def print_return(self, op: opencl.ReturnOp) -> None:
        self.line("return;")

    def print_for(self, op: scf.ForOp) -> None:
        body = op.body.block
        iv, *iter_vars = body.args
        unroll = op.attributes.get(opencl.UNROLL_ATTR)
        by_printer = isinstance(unroll, StringAttr) and unroll.data == opencl.UNROLL_BY_PRINTER
        factor = unroll.value.data if isinstance(unroll, IntegerAttr) else (0 if by_printer else None)
        if unroll is not None and factor is None:
            raise _unsupported(op, f"{opencl.UNROLL_ATTR} must be an integer or \"{opencl.UNROLL_BY_PRINTER}\", "
                                   f"got {unroll}")
        trips = _static_range(op)
        write_out = (self.unroll == "print" and factor == 0) or (self.unroll == "ir" and by_printer)
        if write_out and trips is not None and len(trips) <= MAX_PRINTED_TRIPS:
            self.print_unrolled_for(op, trips)
            return
        # loop-carried variables, declared before the loop
        for barg, init, res in zip(iter_vars, op.iter_args, op.res):
            hint = barg.name_hint or res.name_hint
            name = self.bind(barg, hint)
            self.names[res] = name
            self.line(f"{c_type(barg.type)} {name} = {self.plain(init)};")
        i = self.bind(iv, iv.name_hint or "i")
        lb, ub, step = self.plain(op.lb), self.arg(op.ub), self.plain(op.step)
        inc = f"++{i}" if step == "1" else f"{i} += {step}"
        if factor is not None and self.unroll != "none":
            self.line("#pragma unroll" + (f" {factor}" if factor > 0 else ""))
        self.line(f"for ({c_type(iv.type)} {i} = {lb}; {i} < {ub}; {inc}) {{")
        self.indent += 1
        self.print_block(body)
        self.indent -= 1
        self.line("}")

    def print_unrolled_for(self, op: scf.ForOp, trips: range) -> None:
        """The loop written out once per trip, the induction variable a literal.

        Loop-carried values are not variables here: each trip's yielded expressions are
        substituted into the next trip (a value used more than once in the body is
        declared first, so the text never grows exponentially). A 3x3 window's reads thus
        all come first and its multiply-adds form one expression per accumulator: the
        straight-line code the kernels had when taps were unrolled in the IR, which
        NVIDIA's compiler schedules better than its own unrolling of the loop (1.6x on
        NCHW4c 3x3 convs, docs/startup.md)."""
        body = op.body.block
        iv, *iter_vars = body.args
        terminator = body.last_op
        assert isinstance(terminator, scf.YieldOp)
        carried = [self.arg(v) for v in op.iter_args]
        for k in trips:
            self.names[iv] = str(k) if k >= 0 else f"({k})"
            for barg, text in zip(iter_vars, carried):
                if len(list(barg.uses)) > 1:
                    name = self.bind(barg)
                    self.line(f"const {c_type(barg.type)} {name} = {text};")
                else:
                    self.names[barg] = text
            for inner in body.ops:
                if inner is not terminator:
                    self.print_op(inner)
            carried = [self.arg(v) for v in terminator.operands]
        for res, text in zip(op.res, carried):
            uses = list(res.uses)
            if len(uses) == 1 and uses[0].operation.parent_block() is op.parent_block():
                self.names[res] = text  # the one user (often an enclosing trip's yield) takes the text
            elif uses:
                name = self.bind(res)
                self.line(f"const {c_type(res.type)} {name} = {text};")

    def print_if(self, op: scf.IfOp) -> None:
        for res in op.output:
            name = self.bind(res)
            self.line(f"{c_type(res.type)} {name};")
        self.line(f"if ({self.plain(op.cond)}) {{")
        self.indent += 1
        self.print_block(op.true_region.block)
        self.indent -= 1
        if op.false_region.blocks and (
            len(op.false_region.block.ops) > 1 or op.output
        ):
            self.line("} else {")
            self.indent += 1
            self.print_block(op.false_region.block)
            self.indent -= 1
        self.line("}")

    def print_yield(self, op: scf.YieldOp) -> None:
        parent = op.parent_op()
        if isinstance(parent, scf.ForOp):
            targets = [self.names[a] for a in parent.body.block.args[1:]]
        elif isinstance(parent, scf.IfOp):
            targets = [self.names[r] for r in parent.output]
        else:
            raise _unsupported(op, f"scf.yield inside {parent and parent.name}")
        pairs = [
            (t, v)
            for t, v in zip(targets, op.operands)
            if not (v in self.names and self.names[v] == t)
        ]
        if len(pairs) <= 1:
            for t, v in pairs:
                self.line(f"{t} = {self.plain(v)};")
            return
        # several loop-carried values: evaluate all before assigning any
        tmps: list[tuple[str, str]] = []
        for t, v in pairs:
            tmp = self.fresh_name(f"{t}_next")
            self.line(f"const {c_type(v.type)} {tmp} = {self.plain(v)};")
            tmps.append((t, tmp))
        for t, tmp in tmps:
            self.line(f"{t} = {tmp};")


UNROLL_MODES = ("ir", "pragma", "print", "none")
"""How loops marked `opencl.unroll` are printed: `ir` (default: as each loop's attribute
says), `pragma` (all as `#pragma unroll`: the OpenCL compiler unrolls), `print` (the
printer writes out every fully marked loop), `none` (plain loops, no pragma)."""

MAX_PRINTED_TRIPS = 64
"""Fully marked loops with more trips than this keep `#pragma unroll` even in `print` mode."""


def _static_range(op: scf.ForOp) -> range | None:
    """The trips of a loop whose bounds are constants, else None."""
    bounds = []
    for v in (op.lb, op.ub, op.step):
        owner = v.owner if isinstance(v, OpResult) else None
        if not (isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)):
            return None
        bounds.append(owner.value.value.data)
    lb, ub, step = bounds
    return range(lb, ub, step) if step > 0 else None


STATEMENTS: dict[type[Operation], Callable[[OpenCLCPrinter, Operation], None]] = {
    opencl.LoadOp: OpenCLCPrinter.print_load,  # pyright: ignore
    opencl.StoreOp: OpenCLCPrinter.print_store,  # pyright: ignore
    opencl.VLoad4Op: OpenCLCPrinter.print_vload4,  # pyright: ignore
    opencl.VStore4Op: OpenCLCPrinter.print_vstore4,  # pyright: ignore
    opencl.VLoadOp: OpenCLCPrinter.print_vload,  # pyright: ignore
    opencl.VStoreOp: OpenCLCPrinter.print_vstore,  # pyright: ignore
    opencl.VLoadHalf4Op: OpenCLCPrinter.print_vload_half4,  # pyright: ignore
    opencl.VLoadHalfOp: OpenCLCPrinter.print_vload_half,  # pyright: ignore
    opencl.VStoreHalfOp: OpenCLCPrinter.print_vstore_half,  # pyright: ignore
    opencl.VStoreHalf4Op: OpenCLCPrinter.print_vstore_half4,  # pyright: ignore
    opencl.ReadImageOp: OpenCLCPrinter.print_read_image,  # pyright: ignore
    opencl.WriteImageOp: OpenCLCPrinter.print_write_image,  # pyright: ignore
    opencl.BarrierOp: OpenCLCPrinter.print_barrier,  # pyright: ignore
    opencl.LocalAllocOp: OpenCLCPrinter.print_array_alloc,  # pyright: ignore
    opencl.PrivateAllocOp: OpenCLCPrinter.print_array_alloc,  # pyright: ignore
    opencl.ReturnOp: OpenCLCPrinter.print_return,  # pyright: ignore
    scf.ForOp: OpenCLCPrinter.print_for,  # pyright: ignore
    scf.IfOp: OpenCLCPrinter.print_if,  # pyright: ignore
    scf.YieldOp: OpenCLCPrinter.print_yield,  # pyright: ignore
}


FMA_ATTR = "opencl.fma"
"""Module attribute (set by `convert-graph-to-opencl{fma=...}`) that overrides the
printer's `fma` mode for that program."""

FMA_MODES = ("call", "split", "contract")
"""How `math.fma` prints: `call` (default: `fma(a, b, c)`, one rounding; GPUs have the
instruction), `split` (`a * b + c`, two roundings under FP_CONTRACT OFF) or `contract`
(`a * b + c` in a program without the FP_CONTRACT OFF pragma: OpenCL C's default lets the
compiler fuse the multiply-add of one expression into one fused instruction, one rounding
as `fma` says; a multiply and an add the printer writes as one expression contract too).
CPU OpenCL compilers want `split` or `contract`: PoCL's `fma()` is a library call its
work-group vectorizer does not widen, and a 1x1 convolution ran 7x slower with it (3.1
against 20.7 GFLOP/s on a 2-core EPYC). `contract` then gives PoCL's LLVM the vector
multiply-add instructions: the CPU panel GEMM ran 1.22-1.34x faster than with `split` on
the same EPYC, kernels alternated (bench/cpu_gemm_panels.py, docs/bench/issue30/fp-contract);
`compile()` prints `contract` for target profiles with `split_fma` (PoCL). The difference
from `call` is at most one rounding per multiply-add where the compiler does not fuse (far
below the 1e-4 the tests hold every plan to)."""


def print_opencl(
    module: Operation, stream: IO[str], *, fp_contract: bool = False, unroll: str = "ir", fma: str = "call",
    vector_access: str = DEFAULT_VECTOR_ACCESS,
) -> None:
    """Print every opencl.kernel under `module` as one OpenCL C 1.2 program.

    Unless `fp_contract`, the program starts with `#pragma OPENCL FP_CONTRACT OFF` so
    that a*b+c is rounded twice, exactly as the arith ops say. `unroll`: see UNROLL_MODES;
    `fma`: see FMA_MODES; `vector_access`: see VECTOR_ACCESS_MODES."""
    OpenCLCPrinter(stream, fp_contract, unroll, fma, vector_access).print_program(module)


def opencl_source(module: Operation, *, fp_contract: bool = False, unroll: str = "ir", fma: str = "call",
                  vector_access: str = DEFAULT_VECTOR_ACCESS) -> str:
    """The OpenCL C program of `module` as a string."""
    import io

    buf = io.StringIO()
    print_opencl(module, buf, fp_contract=fp_contract, unroll=unroll, fma=fma, vector_access=vector_access)
    return buf.getvalue()


@dataclass(frozen=True)
class OpenCLTarget(Target):
    """`-t opencl`: print the module's kernels as OpenCL C."""

    name = "opencl"

    fp_contract: bool = False
    """Allow the OpenCL compiler to fuse a*b+c (`-t 'opencl{fp-contract=true}'`)."""

    unroll: str = "ir"
    """Loops marked `opencl.unroll`: `ir` (as marked), `pragma`, `print` or `none`
    (`-t 'opencl{unroll=pragma}'`; see UNROLL_MODES)."""

    fma: str = "call"
    """`math.fma` as `fma(a, b, c)` or, for PoCL, `a * b + c`
    (`-t 'opencl{fma=split}'`, `-t 'opencl{fma=contract}'`; see FMA_MODES)."""

    vector_access: str = DEFAULT_VECTOR_ACCESS
    """Vector loads and stores through typed pointers where aligned, or all as vloadN
    (`-t 'opencl{vector_access=vload}'`; see VECTOR_ACCESS_MODES)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if not any(isinstance(op, opencl.KernelOp) for op in module.walk()):
            from adreno_mlir.errors import CompileError

            raise CompileError(
                "-t opencl: the input has no opencl.kernel, so there is no OpenCL program to print; lower it first "
                "(-p '...,convert-graph-to-opencl', or the pipeline in pipeline.txt of `adreno-mlir compile -o DIR`)")
        print_opencl(module, output, fp_contract=self.fp_contract, unroll=self.unroll, fma=self.fma,
                     vector_access=self.vector_access)
