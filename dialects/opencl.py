"""The `opencl` dialect: OpenCL C 1.2 kernels and a flat host program.

Kernel side: `opencl.kernel` (a function-like op whose block arguments are the
kernel arguments), work-item queries, pointer loads/stores, `vload4`/`vstore4` and
`vload`/`vstore` (2-16 lanes at an element offset), image reads/writes, barriers,
`__local` / private arrays and floatN helpers.
Kernel bodies otherwise use `arith`, `math` and `scf`.

Host side (inside a `func.func`): buffer / image allocation, weights identified by
symbol, kernel launches and buffer copies. `lowering/opencl_printer.py` prints the
kernels as OpenCL C.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    I64,
    ArrayAttr,
    DenseArrayBase,
    FunctionType,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    VectorType,
    f16,
    f32,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    EqAttrConstraint,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

ADDRESS_SPACES = ("global", "local", "constant", "private")
IMAGE_ACCESS = ("read", "write")
IMAGE_FORMATS = ("rgba_f32", "rgba_f16")

UNROLL_ATTR = "opencl.unroll"
"""Discardable attribute of an `scf.for` in a kernel saying who unrolls it. Kernels keep
their window loops as loops in the IR (a 3x3 window is one loop nest, not nine copies of
its body); this attribute decides how the printer writes them:

- an i64 N: `#pragma unroll N` before the loop (0: `#pragma unroll`), the OpenCL compiler
  unrolls;
- `"print"`: the printer writes the body once per trip (constant bounds), loop-carried
  values substituted from trip to trip, so the compiler gets straight-line code with all
  of a window's loads ahead of its multiply-adds.

Which is faster depends on the kernel and the compiler (docs/startup.md); each kernel
builder chooses, and an edited attribute is printed as written."""

UNROLL_BY_PRINTER = "print"

VEC4F32 = VectorType(f32, [4])
VEC4F16 = VectorType(f16, [4])
VECTOR_WIDTHS = (2, 4, 8, 16)
"""Lane counts of the float vectors that private values can have (OpenCL's floatN/halfN;
3 is left out: its loads and stores pad to 4)."""


def is_float_vector(t: Attribute) -> bool:
    """Whether `t` is a floatN or halfN value type (N in VECTOR_WIDTHS)."""
    return (isinstance(t, VectorType) and t.get_num_dims() == 1 and t.get_shape()[0] in VECTOR_WIDTHS
            and t.element_type in (f32, f16))


def is_word_vector(t: Attribute) -> bool:
    """Whether `t` is an intN value type (N in VECTOR_WIDTHS): packed 32-bit words read
    with one `opencl.vload` (a quantized weight's block) and taken apart lane by lane."""
    return (isinstance(t, VectorType) and t.get_num_dims() == 1 and t.get_shape()[0] in VECTOR_WIDTHS
            and t.element_type == i32)
POINTEE_TYPES: tuple[Attribute, ...] = (f32, f16, i32, VEC4F32, VEC4F16)
SCALAR_TYPES: tuple[Attribute, ...] = (f32, f16, i32)


def _str(x: str | StringAttr) -> StringAttr:
    return StringAttr(x) if isinstance(x, str) else x


def _int(x: int | IntAttr) -> IntAttr:
    return IntAttr(x) if isinstance(x, int) else x


def _i64_array(
    values: Sequence[int] | DenseArrayBase | ArrayAttr | None,
) -> DenseArrayBase | None:
    if values is None or isinstance(values, DenseArrayBase):
        return values
    if isinstance(values, ArrayAttr):
        values = [_as_int(v) for v in values.data]
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _as_int(a: Attribute) -> int:
    if isinstance(a, IntegerAttr):
        return a.value.data
    if isinstance(a, IntAttr):
        return a.data
    raise VerifyException(f"expected an integer, got {a}")


def int_list(attr: DenseArrayBase | ArrayAttr | None) -> tuple[int, ...]:
    """The integers of a DenseArrayBase or ArrayAttr of integers (empty if None)."""
    if attr is None:
        return ()
    if isinstance(attr, DenseArrayBase):
        return tuple(int(v) for v in attr.get_values())
    return tuple(_as_int(v) for v in attr.data)


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------


@irdl_attr_definition
class PointerType(ParametrizedAttribute, TypeAttribute):
    """`!opencl.ptr<global, f32>`: a pointer into an OpenCL address space."""

    name = "opencl.ptr"

    space: StringAttr
    element: Attribute

    def __init__(self, space: str | StringAttr, element: Attribute):
        super().__init__(_str(space), element)

    def verify(self) -> None:
        if self.space.data not in ADDRESS_SPACES:
            raise VerifyException(
                f"invalid address space '{self.space.data}' in !opencl.ptr, expected "
                f"one of {', '.join(ADDRESS_SPACES)}"
            )
        if self.element not in POINTEE_TYPES:
            raise VerifyException(
                f"invalid pointee type {self.element} in !opencl.ptr, expected f32, "
                "f16, i32, vector<4xf32> or vector<4xf16>"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            space = parser.parse_identifier()
            parser.parse_punctuation(",")
            element = parser.parse_type()
        return (StringAttr(space), element)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.space.data)
            printer.print_string(", ")
            printer.print_attribute(self.element)


@irdl_attr_definition
class Image2DType(ParametrizedAttribute, TypeAttribute):
    """`!opencl.image2d<read>`: a kernel-side image2d_t argument."""

    name = "opencl.image2d"

    access: StringAttr

    def __init__(self, access: str | StringAttr):
        super().__init__(_str(access))

    def verify(self) -> None:
        if self.access.data not in IMAGE_ACCESS:
            raise VerifyException(
                f"invalid image access '{self.access.data}', expected read or write"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            access = parser.parse_identifier()
        return (StringAttr(access),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.access.data)


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """`!opencl.buffer<1024xf32>`: a host-side cl_mem buffer of `size` elements."""

    name = "opencl.buffer"

    size: IntAttr
    element: Attribute

    def __init__(self, size: int | IntAttr, element: Attribute):
        super().__init__(_int(size), element)

    def verify(self) -> None:
        if self.size.data <= 0:
            raise VerifyException(
                f"!opencl.buffer size must be positive, got {self.size.data}"
            )
        if self.element not in SCALAR_TYPES:
            raise VerifyException(
                f"invalid !opencl.buffer element type {self.element}, expected f32, "
                "f16 or i32"
            )

    @property
    def nbytes(self) -> int:
        return self.size.data * (2 if self.element == f16 else 4)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            size = parser.parse_shape_dimension(allow_dynamic=False)
            parser.parse_shape_delimiter()
            element = parser.parse_type()
        return (IntAttr(size), element)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.size.data}x")
            printer.print_attribute(self.element)


@irdl_attr_definition
class ImageType(ParametrizedAttribute, TypeAttribute):
    """`!opencl.image<224x896, rgba_f32>`: a host-side 2D RGBA image."""

    name = "opencl.image"

    width: IntAttr
    height: IntAttr
    format: StringAttr

    def __init__(
        self, width: int | IntAttr, height: int | IntAttr, format: str | StringAttr
    ):
        super().__init__(_int(width), _int(height), _str(format))

    def verify(self) -> None:
        if self.width.data <= 0 or self.height.data <= 0:
            raise VerifyException(
                f"!opencl.image extent must be positive, got "
                f"{self.width.data}x{self.height.data}"
            )
        if self.format.data not in IMAGE_FORMATS:
            raise VerifyException(
                f"invalid image format '{self.format.data}', expected rgba_f32 or "
                "rgba_f16"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            width = parser.parse_shape_dimension(allow_dynamic=False)
            parser.parse_shape_delimiter()
            height = parser.parse_shape_dimension(allow_dynamic=False)
            parser.parse_punctuation(",")
            fmt = parser.parse_identifier()
        return (IntAttr(width), IntAttr(height), StringAttr(fmt))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(
                f"{self.width.data}x{self.height.data}, {self.format.data}"
            )


# ---------------------------------------------------------------------------
# Kernel-side ops
# ---------------------------------------------------------------------------


def _check_kernel_arg_type(t: Attribute, idx: int) -> None:
    if isinstance(t, PointerType):
        if t.space.data not in ("global", "constant", "local"):
            raise VerifyException(
                f"kernel argument #{idx} has address space '{t.space.data}', expected "
                "global, constant or local"
            )
        return
    if isinstance(t, Image2DType) or t in (i32, f32):
        return
    raise VerifyException(
        f"kernel argument #{idx} has unsupported type {t}, expected !opencl.ptr, "
        "!opencl.image2d, i32 or f32"
    )


@irdl_op_definition
class KernelOp(IRDLOperation):
    """`opencl.kernel @name(%a: T, ...) attributes {...} { ... }`: a __kernel function."""

    name = "opencl.kernel"

    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    arg_names = prop_def(ArrayAttr[StringAttr])
    reqd_work_group_size = opt_prop_def(base(DenseArrayBase) | base(ArrayAttr))

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        args: Sequence[tuple[str, Attribute]],
        body: Region | None = None,
        reqd_work_group_size: Sequence[int] | DenseArrayBase | ArrayAttr | None = None,
    ):
        names = [n for n, _ in args]
        types = [t for _, t in args]
        if body is None:
            body = Region(Block(arg_types=types))
        if body.blocks:
            for arg, n in zip(body.blocks[0].args, names):
                if arg.name_hint is None and SSAValue.is_valid_name(n):
                    arg.name_hint = n
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(types, []),
                "arg_names": ArrayAttr([StringAttr(n) for n in names]),
                "reqd_work_group_size": _i64_array(reqd_work_group_size),
            },
            regions=[body],
        )

    @property
    def args(self):
        return self.body.block.args

    def verify_(self) -> None:
        block = self.body.block
        inputs = self.function_type.inputs.data
        if self.function_type.outputs.data:
            raise VerifyException(
                f"opencl.kernel @{self.sym_name.data} must not have results"
            )
        if tuple(block.arg_types) != tuple(inputs):
            raise VerifyException(
                "expected entry block arguments to have the same types as the kernel "
                "function type inputs"
            )
        if len(self.arg_names.data) != len(inputs):
            raise VerifyException(
                f"arg_names has {len(self.arg_names.data)} entries but the kernel has "
                f"{len(inputs)} arguments"
            )
        for idx, t in enumerate(inputs):
            _check_kernel_arg_type(t, idx)
        if self.reqd_work_group_size is not None:
            sizes = int_list(self.reqd_work_group_size)
            if len(sizes) != 3 or any(s <= 0 for s in sizes):
                raise VerifyException(
                    "reqd_work_group_size must have exactly 3 positive entries, got "
                    f"{list(sizes)}"
                )
        last = block.last_op
        if not isinstance(last, ReturnOp):
            raise VerifyException(
                f"opencl.kernel @{self.sym_name.data} body must end with opencl.return"
            )

    # Custom syntax -----------------------------------------------------------

    def _names_match_hints(self) -> bool:
        return [a.name_hint for a in self.body.block.args] == [
            s.data for s in self.arg_names.data
        ]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(")")
        attrs: dict[str, Attribute] = dict(self.attributes)
        if not self._names_match_hints():
            attrs["arg_names"] = self.arg_names
        if self.reqd_work_group_size is not None:
            attrs["reqd_work_group_size"] = self.reqd_work_group_size
        printer.print_op_attributes(attrs, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        pos = parser.pos
        args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_argument
        )
        if parser.parse_optional_punctuation("->") is not None:
            parser.raise_error("opencl.kernel must not have results", pos)
        extra = parser.parse_optional_attr_dict_with_keyword(
            ("sym_name", "function_type")
        )
        attrs = dict(extra.data) if extra is not None else {}
        region = parser.parse_region(args)
        arg_names_attr = attrs.pop("arg_names", None)
        wgs = attrs.pop("reqd_work_group_size", None)
        if isinstance(arg_names_attr, ArrayAttr):
            names = [
                a.data if isinstance(a, StringAttr) else str(a)
                for a in arg_names_attr.data
            ]
        else:
            names = [
                a.name_hint or f"arg{i}" for i, a in enumerate(region.blocks[0].args)
            ]
        op = KernelOp(
            name,
            list(zip(names, [a.type for a in args])),
            region,
            wgs,  # pyright: ignore[reportArgumentType]
        )
        if isinstance(arg_names_attr, ArrayAttr):
            op.arg_names = arg_names_attr  # keep as written (verified later)
        op.attributes |= attrs
        return op


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`opencl.return`: the terminator of an opencl.kernel."""

    name = "opencl.return"
    assembly_format = "attr-dict"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(KernelOp)))

    def __init__(self):
        super().__init__()


class WorkItemQueryOp(IRDLOperation):
    """Base of `opencl.global_id 0` and friends: an i32 work-item query on one dim."""

    C_FUNCTION: ClassVar[str]

    dim = prop_def(IntegerAttr[I64])
    result = result_def(I32)

    assembly_format = "$dim attr-dict"
    traits = traits_def(Pure())

    def __init__(self, dim: int):
        super().__init__(
            properties={"dim": IntegerAttr(dim, i64)}, result_types=[i32]
        )

    def verify_(self) -> None:
        if not 0 <= self.dim.value.data <= 2:
            raise VerifyException(
                f"{self.name} dimension must be 0, 1 or 2, got {self.dim.value.data}"
            )


@irdl_op_definition
class GlobalIdOp(WorkItemQueryOp):
    name = "opencl.global_id"
    C_FUNCTION: ClassVar[str] = "get_global_id"


@irdl_op_definition
class LocalIdOp(WorkItemQueryOp):
    name = "opencl.local_id"
    C_FUNCTION: ClassVar[str] = "get_local_id"


@irdl_op_definition
class GroupIdOp(WorkItemQueryOp):
    name = "opencl.group_id"
    C_FUNCTION: ClassVar[str] = "get_group_id"


@irdl_op_definition
class GlobalSizeOp(WorkItemQueryOp):
    name = "opencl.global_size"
    C_FUNCTION: ClassVar[str] = "get_global_size"


@irdl_op_definition
class LocalSizeOp(WorkItemQueryOp):
    name = "opencl.local_size"
    C_FUNCTION: ClassVar[str] = "get_local_size"


@irdl_op_definition
class NumGroupsOp(WorkItemQueryOp):
    name = "opencl.num_groups"
    C_FUNCTION: ClassVar[str] = "get_num_groups"


def _parse_ptr_index(
    parser: Parser, nindices: int = 1
) -> tuple[Parser.UnresolvedOperand, list[Parser.UnresolvedOperand]]:
    ptr = parser.parse_unresolved_operand()
    idx = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    if len(idx) != nindices:
        parser.raise_error(f"expected {nindices} index operand(s), got {len(idx)}")
    return ptr, idx


def _print_ptr_index(printer: Printer, ptr: SSAValue, *idx: SSAValue) -> None:
    printer.print_string(" ")
    printer.print_ssa_value(ptr)
    printer.print_string("[")
    printer.print_list(idx, printer.print_ssa_value)
    printer.print_string("]")


def _print_store_head(printer: Printer, op: Operation, value: SSAValue, ptr: SSAValue, index: SSAValue) -> None:
    """` %v, %ptr[%idx] {attrs} : ` of the store ops (the types follow)."""
    printer.print_string(" ")
    printer.print_ssa_value(value)
    printer.print_string(",")
    _print_ptr_index(printer, ptr, index)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")


def _parse_store_head(parser: Parser) -> tuple:
    """(value, ptr, index, attrs) of ` %v, %ptr[%idx] {attrs} :` (unresolved operands)."""
    value = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    ptr, (idx,) = _parse_ptr_index(parser)
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    return value, ptr, idx, attrs


def _parse_attrs_into(parser: Parser, op: Operation) -> None:
    extra = parser.parse_optional_attr_dict()
    op.attributes |= extra


def _parse_ptr_type(parser: Parser) -> PointerType:
    pos = parser.pos
    t = parser.parse_type()
    if not isinstance(t, PointerType):
        parser.raise_error(f"expected !opencl.ptr type, got {t}", pos)
    return t


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`%v = opencl.load %ptr[%idx] : !opencl.ptr<global, f32>` → `ptr[idx]`."""

    name = "opencl.load"

    ptr = operand_def(PointerType)
    index = operand_def(I32)
    result = result_def()

    def __init__(self, ptr: SSAValue | Operation, index: SSAValue | Operation):
        ptr_t = SSAValue.get(ptr).type
        assert isinstance(ptr_t, PointerType)
        super().__init__(operands=[ptr, index], result_types=[ptr_t.element])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.result.type != self.ptr.type.element:
            raise VerifyException(
                f"opencl.load result type {self.result.type} does not match the "
                f"pointee type {self.ptr.type.element}"
            )

    def print(self, printer: Printer) -> None:
        _print_ptr_index(printer, self.ptr, self.index)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        ptr, (idx,) = _parse_ptr_index(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = _parse_ptr_type(parser)
        op = LoadOp(parser.resolve_operand(ptr, t), parser.resolve_operand(idx, i32))
        op.attributes |= attrs
        return op


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`opencl.store %v, %ptr[%idx] : !opencl.ptr<global, f32>` → `ptr[idx] = v;`."""

    name = "opencl.store"

    value = operand_def()
    ptr = operand_def(PointerType)
    index = operand_def(I32)

    def __init__(
        self,
        value: SSAValue | Operation,
        ptr: SSAValue | Operation,
        index: SSAValue | Operation,
    ):
        super().__init__(operands=[value, ptr, index])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.value.type != self.ptr.type.element:
            raise VerifyException(
                f"opencl.store value type {self.value.type} does not match the "
                f"pointee type {self.ptr.type.element}"
            )
        if self.ptr.type.space.data == "constant":
            raise VerifyException("opencl.store into a constant pointer")

    def print(self, printer: Printer) -> None:
        _print_store_head(printer, self, self.value, self.ptr, self.index)
        printer.print_attribute(self.ptr.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value, ptr, idx, attrs = _parse_store_head(parser)
        t = _parse_ptr_type(parser)
        op = StoreOp(
            parser.resolve_operand(value, t.element),
            parser.resolve_operand(ptr, t),
            parser.resolve_operand(idx, i32),
        )
        op.attributes |= attrs
        return op


def known_multiple(value: SSAValue, memo: dict[SSAValue, int] | None = None) -> int:
    """The largest integer the i32 `value` is known to be a multiple of, read off the ops
    that compute it (known bits of an index, as LLVM's alignment analysis does): a constant
    is a multiple of itself, a product of the product of its factors' multiples, a sum or a
    difference of their gcd, a loop's induction variable of the gcd of its start and step,
    a shift left by c of 2^c times its operand's; a work-item id, a kernel argument, a
    division or anything else of 1. 0 means the value is 0 (every integer divides it).

    The printer types a vector access through a pointer of its width only where this proves
    the offset a multiple of its lanes (`vector_access_aligned`)."""
    import math

    from xdsl.dialects import arith, scf
    from xdsl.ir import BlockArgument, OpResult

    memo = {} if memo is None else memo
    if value in memo:
        return memo[value]

    def pow2(x: int) -> int:
        return 0 if x == 0 else x & -x

    result = 1
    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        if isinstance(parent, scf.ForOp) and value.index == 0:
            result = math.gcd(known_multiple(parent.lb, memo), known_multiple(parent.step, memo))
    elif isinstance(value, OpResult):
        op = value.op
        operands = [known_multiple(o, memo) for o in op.operands] if len(op.operands) <= 3 else []
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            result = abs(op.value.value.data)
        elif isinstance(op, arith.MuliOp):
            result = operands[0] * operands[1]
        elif isinstance(op, arith.AddiOp | arith.SubiOp | arith.MinSIOp | arith.MaxSIOp):
            result = math.gcd(operands[0], operands[1])
        elif isinstance(op, arith.SelectOp):
            result = math.gcd(operands[1], operands[2])
        elif isinstance(op, arith.ShLIOp):
            shift = op.rhs.owner
            if isinstance(shift, arith.ConstantOp) and isinstance(shift.value, IntegerAttr) \
                    and 0 <= shift.value.value.data < 31:
                result = operands[0] << shift.value.value.data
        elif isinstance(op, arith.AndIOp):  # low zero bits of either operand stay zero
            result = max(pow2(operands[0]), pow2(operands[1])) if 0 not in operands else 0
        elif isinstance(op, arith.OrIOp):
            result = min(pow2(operands[0]), pow2(operands[1])) if 0 not in operands else max(operands)
        elif isinstance(op, arith.RemSIOp):  # x - c * (x / c)
            result = math.gcd(operands[0], operands[1])
        elif isinstance(op, arith.DivSIOp):
            d = operands[1]
            result = operands[0] // d if d and operands[0] % d == 0 and _is_constant(op.rhs) else 1
        elif isinstance(op, arith.IndexCastOp | arith.ExtSIOp):
            result = operands[0]
    memo[value] = result
    return result


def _is_constant(value: SSAValue) -> bool:
    from xdsl.dialects import arith

    return isinstance(value.owner, arith.ConstantOp)


def aligned_base(ptr: SSAValue) -> bool:
    """Whether `ptr` is the start of an allocation: a kernel argument (a buffer, whose base
    OpenCL aligns to CL_DEVICE_MEM_BASE_ADDR_ALIGN, at least 64 bytes) or a `__local` /
    private array (which the printer declares aligned to its widest typed access)."""
    from xdsl.ir import BlockArgument

    if isinstance(ptr, BlockArgument):
        return isinstance(ptr.block.parent_op(), KernelOp)
    return isinstance(ptr.owner, _ArrayAllocOp)


def vector_access_aligned(op: Operation, memo: dict[SSAValue, int] | None = None) -> bool:
    """Whether a vector load or store (`opencl.vload4` / `vstore4` / `vload` / `vstore`)
    reads or writes at an address aligned to its width: its pointer is an aligned base and
    its offset a multiple of its lanes (`vload4`'s index counts groups of four: always)."""
    if isinstance(op, VLoad4Op | VStore4Op):
        return aligned_base(op.ptr)
    if isinstance(op, VLoadOp | VStoreOp):
        vt = op.result.type if isinstance(op, VLoadOp) else op.value.type
        lanes = vt.get_shape()[0]
        return aligned_base(op.ptr) and known_multiple(op.offset, memo) % lanes == 0
    return False


def _vec4_of(t: Attribute) -> VectorType:
    return VectorType(t, [4])


@irdl_op_definition
class VLoad4Op(IRDLOperation):
    """`%v = opencl.vload4 %ptr[%idx] : !opencl.ptr<global, f32>` → `vload4(idx, ptr)`.

    `idx` counts groups of 4 elements, like C `vload4`."""

    name = "opencl.vload4"

    ptr = operand_def(PointerType)
    index = operand_def(I32)
    result = result_def(VectorType)

    def __init__(self, ptr: SSAValue | Operation, index: SSAValue | Operation):
        ptr_t = SSAValue.get(ptr).type
        assert isinstance(ptr_t, PointerType)
        super().__init__(operands=[ptr, index], result_types=[_vec4_of(ptr_t.element)])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element not in (f32, f16):
            raise VerifyException(
                f"opencl.vload4 needs a pointer to f32 or f16, got {self.ptr.type}"
            )
        if self.result.type != _vec4_of(self.ptr.type.element):
            raise VerifyException(
                f"opencl.vload4 result type {self.result.type} must be "
                f"{_vec4_of(self.ptr.type.element)}"
            )

    print = LoadOp.print  # pyright: ignore

    @classmethod
    def parse(cls, parser: Parser) -> VLoad4Op:
        ptr, (idx,) = _parse_ptr_index(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = _parse_ptr_type(parser)
        op = VLoad4Op(parser.resolve_operand(ptr, t), parser.resolve_operand(idx, i32))
        op.attributes |= attrs
        return op


@irdl_op_definition
class VStore4Op(IRDLOperation):
    """`opencl.vstore4 %v, %ptr[%idx] : !opencl.ptr<global, f32>` → `vstore4(v, idx, ptr)`."""

    name = "opencl.vstore4"

    value = operand_def(VectorType)
    ptr = operand_def(PointerType)
    index = operand_def(I32)

    def __init__(
        self,
        value: SSAValue | Operation,
        ptr: SSAValue | Operation,
        index: SSAValue | Operation,
    ):
        super().__init__(operands=[value, ptr, index])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element not in (f32, f16):
            raise VerifyException(
                f"opencl.vstore4 needs a pointer to f32 or f16, got {self.ptr.type}"
            )
        if self.value.type != _vec4_of(self.ptr.type.element):
            raise VerifyException(
                f"opencl.vstore4 value type {self.value.type} must be "
                f"{_vec4_of(self.ptr.type.element)}"
            )
        if self.ptr.type.space.data == "constant":
            raise VerifyException("opencl.vstore4 into a constant pointer")

    print = StoreOp.print  # pyright: ignore

    @classmethod
    def parse(cls, parser: Parser) -> VStore4Op:
        value, ptr, idx, attrs = _parse_store_head(parser)
        t = _parse_ptr_type(parser)
        op = VStore4Op(
            parser.resolve_operand(value, _vec4_of(t.element)),
            parser.resolve_operand(ptr, t),
            parser.resolve_operand(idx, i32),
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class VLoadOp(IRDLOperation):
    """`%v = opencl.vload %ptr[%off] : !opencl.ptr<global, f32> -> vector<8xf32>` →
    `vload8(0, ptr + off)`: 2, 4, 8 or 16 consecutive elements from element offset `off`
    (any alignment of the element type). Unlike `opencl.vload4`, whose index counts
    groups of four, the offset counts elements: a row of pixels can start anywhere.
    Elements are floats, halves or i32 words (a quantized weight's block of packed
    words in one load: lowering/kernels/qmatmul.py)."""

    name = "opencl.vload"

    ptr = operand_def(PointerType)
    offset = operand_def(I32)
    result = result_def(VectorType)

    def __init__(self, ptr: SSAValue | Operation, offset: SSAValue | Operation, lanes: int):
        ptr_t = SSAValue.get(ptr).type
        assert isinstance(ptr_t, PointerType)
        super().__init__(operands=[ptr, offset], result_types=[VectorType(ptr_t.element, [lanes])])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element not in (f32, f16, i32):
            raise VerifyException(f"opencl.vload needs a pointer to f32, f16 or i32, got {self.ptr.type}")
        rt = self.result.type
        if not (is_float_vector(rt) or is_word_vector(rt)) or rt.element_type != self.ptr.type.element:
            raise VerifyException(
                f"opencl.vload result type {self.result.type} must be a vector of 2, 4, 8 or 16 "
                f"{self.ptr.type.element}")

    def print(self, printer: Printer) -> None:
        _print_ptr_index(printer, self.ptr, self.offset)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> VLoadOp:
        ptr, (off,) = _parse_ptr_index(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = _parse_ptr_type(parser)
        parser.parse_punctuation("->")
        pos = parser.pos
        vt = parser.parse_type()
        if not isinstance(vt, VectorType) or vt.get_num_dims() != 1:
            parser.raise_error(f"expected a 1-D vector type, got {vt}", pos)
        if vt.element_type != t.element:
            parser.raise_error(f"opencl.vload of {t} gives vectors of {t.element}, not {vt}", pos)
        op = VLoadOp(parser.resolve_operand(ptr, t), parser.resolve_operand(off, i32), vt.get_shape()[0])
        op.attributes |= attrs
        return op


@irdl_op_definition
class VStoreOp(IRDLOperation):
    """`opencl.vstore %v, %ptr[%off] : vector<8xf32>, !opencl.ptr<global, f32>` →
    `vstore8(v, 0, ptr + off)`: the lanes of `v` to consecutive elements from element
    offset `off`."""

    name = "opencl.vstore"

    value = operand_def(VectorType)
    ptr = operand_def(PointerType)
    offset = operand_def(I32)

    def __init__(self, value: SSAValue | Operation, ptr: SSAValue | Operation, offset: SSAValue | Operation):
        super().__init__(operands=[value, ptr, offset])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element not in (f32, f16):
            raise VerifyException(f"opencl.vstore needs a pointer to f32 or f16, got {self.ptr.type}")
        if not is_float_vector(self.value.type) or self.value.type.element_type != self.ptr.type.element:
            raise VerifyException(
                f"opencl.vstore value type {self.value.type} must be a vector of 2, 4, 8 or 16 "
                f"{self.ptr.type.element}")
        if self.ptr.type.space.data == "constant":
            raise VerifyException("opencl.vstore into a constant pointer")

    def print(self, printer: Printer) -> None:
        _print_store_head(printer, self, self.value, self.ptr, self.offset)
        printer.print_attribute(self.value.type)
        printer.print_string(", ")
        printer.print_attribute(self.ptr.type)

    @classmethod
    def parse(cls, parser: Parser) -> VStoreOp:
        value, ptr, off, attrs = _parse_store_head(parser)
        vt = parser.parse_type()
        parser.parse_punctuation(",")
        t = _parse_ptr_type(parser)
        op = VStoreOp(parser.resolve_operand(value, vt), parser.resolve_operand(ptr, t),
                      parser.resolve_operand(off, i32))
        op.attributes |= attrs
        return op


@irdl_op_definition
class VLoadHalfOp(IRDLOperation):
    """`%v = opencl.vload_half %ptr[%off] : !opencl.ptr<global, f16> -> f32` → `vload_half(0,
    ptr + off)` (or `vector<4xf32>` → `vload_half4(0, ptr + off)`): 1, 2, 4, 8 or 16 halves
    from element offset `off`, widened to floats. fp16 storage read by an fp32 kernel (a
    decoder's KV cache after `kv-cache-storage{element=f16}`): OpenCL 1.2 core, no
    cl_khr_fp16. Unlike `opencl.vload_half4`, whose index counts groups of four, the
    offset counts halves."""

    name = "opencl.vload_half"

    ptr = operand_def(PointerType)
    offset = operand_def(I32)
    result = result_def(Attribute)

    def __init__(self, ptr: SSAValue | Operation, offset: SSAValue | Operation, lanes: int = 1):
        super().__init__(operands=[ptr, offset], result_types=[f32 if lanes == 1 else VectorType(f32, [lanes])])

    @property
    def lanes(self) -> int:
        return 1 if self.result.type == f32 else self.result.type.get_shape()[0]

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element != f16:
            raise VerifyException(f"opencl.vload_half reads a pointer to f16, got {self.ptr.type}")
        rt = self.result.type
        if not (rt == f32 or (is_float_vector(rt) and rt.element_type == f32)):
            raise VerifyException(f"opencl.vload_half gives f32 or a vector of 2, 4, 8 or 16 f32, got {rt}")

    print = VLoadOp.print  # pyright: ignore

    @classmethod
    def parse(cls, parser: Parser) -> VLoadHalfOp:
        ptr, (off,) = _parse_ptr_index(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = _parse_ptr_type(parser)
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(ptr, t), parser.resolve_operand(off, i32)],
                        result_types=[rt])  # the type as written: verify_ says what is wrong with it
        op.attributes |= attrs
        return op


@irdl_op_definition
class VStoreHalfOp(IRDLOperation):
    """`opencl.vstore_half %v, %ptr[%off] : f32, !opencl.ptr<global, f16>` → `vstore_half(v,
    0, ptr + off)` (a floatN value: `vstore_halfN`): floats rounded to halves (round to
    nearest even), stored from element offset `off`. OpenCL 1.2 core."""

    name = "opencl.vstore_half"

    value = operand_def(Attribute)
    ptr = operand_def(PointerType)
    offset = operand_def(I32)

    def __init__(self, value: SSAValue | Operation, ptr: SSAValue | Operation, offset: SSAValue | Operation):
        super().__init__(operands=[value, ptr, offset])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element != f16:
            raise VerifyException(f"opencl.vstore_half writes through a pointer to f16, got {self.ptr.type}")
        vt = self.value.type
        if not (vt == f32 or (is_float_vector(vt) and vt.element_type == f32)):
            raise VerifyException(f"opencl.vstore_half stores f32 or a vector of 2, 4, 8 or 16 f32, got {vt}")
        if self.ptr.type.space.data == "constant":
            raise VerifyException("opencl.vstore_half into a constant pointer")

    print = VStoreOp.print  # pyright: ignore

    @classmethod
    def parse(cls, parser: Parser) -> VStoreHalfOp:
        value, ptr, off, attrs = _parse_store_head(parser)
        vt = parser.parse_type()
        parser.parse_punctuation(",")
        t = _parse_ptr_type(parser)
        op = cls(parser.resolve_operand(value, vt), parser.resolve_operand(ptr, t), parser.resolve_operand(off, i32))
        op.attributes |= attrs
        return op


@irdl_op_definition
class VLoadHalf4Op(IRDLOperation):
    """`%v = opencl.vload_half4 %ptr[%idx] : !opencl.ptr<global, f16>` → `vload_half4(idx, ptr)`.

    Four halves widened to a float4: fp16 storage with fp32 arithmetic, part of OpenCL
    1.2 core (no cl_khr_fp16 needed)."""

    name = "opencl.vload_half4"

    ptr = operand_def(PointerType)
    index = operand_def(I32)
    result = result_def(VectorType)

    def __init__(self, ptr: SSAValue | Operation, index: SSAValue | Operation):
        super().__init__(operands=[ptr, index], result_types=[_vec4_of(f32)])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element != f16 or self.result.type != _vec4_of(f32):
            raise VerifyException(
                f"opencl.vload_half4 reads a pointer to f16 into vector<4xf32>, got {self.ptr.type}"
            )

    print = LoadOp.print  # pyright: ignore

    @classmethod
    def parse(cls, parser: Parser) -> VLoadHalf4Op:
        ptr, (idx,) = _parse_ptr_index(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = _parse_ptr_type(parser)
        op = cls(parser.resolve_operand(ptr, t), parser.resolve_operand(idx, i32))
        op.attributes |= attrs
        return op


@irdl_op_definition
class VStoreHalf4Op(IRDLOperation):
    """`opencl.vstore_half4 %v, %ptr[%idx] : !opencl.ptr<global, f16>`: float4 rounded to halves."""

    name = "opencl.vstore_half4"

    value = operand_def(VectorType)
    ptr = operand_def(PointerType)
    index = operand_def(I32)

    def __init__(self, value: SSAValue | Operation, ptr: SSAValue | Operation, index: SSAValue | Operation):
        super().__init__(operands=[value, ptr, index])

    def verify_(self) -> None:
        assert isinstance(self.ptr.type, PointerType)
        if self.ptr.type.element != f16 or self.value.type != _vec4_of(f32):
            raise VerifyException(
                f"opencl.vstore_half4 writes a vector<4xf32> through a pointer to f16, got {self.ptr.type}"
            )

    print = StoreOp.print  # pyright: ignore

    @classmethod
    def parse(cls, parser: Parser) -> VStoreHalf4Op:
        value, ptr, idx, attrs = _parse_store_head(parser)
        t = _parse_ptr_type(parser)
        op = cls(parser.resolve_operand(value, _vec4_of(f32)), parser.resolve_operand(ptr, t),
                 parser.resolve_operand(idx, i32))
        op.attributes |= attrs
        return op


@irdl_op_definition
class ReadImageOp(IRDLOperation):
    """`%v = opencl.read_imagef %img[%x, %y] : vector<4xf32>` → `read_imagef(img, sampler, (int2)(x, y))`.

    With a `vector<4xf16>` result it is `read_imageh` (cl_khr_fp16): the pixel as a half4,
    for kernels that compute in half (precision fp16). Either reads any image format."""

    name = "opencl.read_imagef"

    image = operand_def(Image2DType)
    x = operand_def(I32)
    y = operand_def(I32)
    result = result_def(VectorType)

    def __init__(
        self,
        image: SSAValue | Operation,
        x: SSAValue | Operation,
        y: SSAValue | Operation,
        result_type: Attribute = VEC4F32,
    ):
        super().__init__(operands=[image, x, y], result_types=[result_type])

    def verify_(self) -> None:
        assert isinstance(self.image.type, Image2DType)
        if self.image.type.access.data != "read":
            raise VerifyException(
                "opencl.read_imagef needs an image with read access, got "
                f"{self.image.type}"
            )
        if self.result.type not in (VEC4F32, VEC4F16):
            raise VerifyException(
                f"opencl.read_imagef result must be vector<4xf32> or vector<4xf16>, got {self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        _print_ptr_index(printer, self.image, self.x, self.y)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ReadImageOp:
        img, (x, y) = _parse_ptr_index(parser, 2)
        attrs = parser.parse_optional_attr_dict()
        rt: Attribute = VEC4F32
        if parser.parse_optional_punctuation(":") is not None:
            rt = parser.parse_type()
        op = ReadImageOp(
            parser.resolve_operand(img, Image2DType("read")),
            parser.resolve_operand(x, i32),
            parser.resolve_operand(y, i32),
            rt,
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class WriteImageOp(IRDLOperation):
    """`opencl.write_imagef %img[%x, %y], %v : vector<4xf32>` → `write_imagef(img, (int2)(x, y), v)`.

    A `vector<4xf16>` value is written with `write_imageh` (cl_khr_fp16)."""

    name = "opencl.write_imagef"

    image = operand_def(Image2DType)
    x = operand_def(I32)
    y = operand_def(I32)
    value = operand_def(VectorType)

    def __init__(
        self,
        image: SSAValue | Operation,
        x: SSAValue | Operation,
        y: SSAValue | Operation,
        value: SSAValue | Operation,
    ):
        super().__init__(operands=[image, x, y, value])

    def verify_(self) -> None:
        assert isinstance(self.image.type, Image2DType)
        if self.image.type.access.data != "write":
            raise VerifyException(
                "opencl.write_imagef needs an image with write access, got "
                f"{self.image.type}"
            )
        if self.value.type not in (VEC4F32, VEC4F16):
            raise VerifyException(
                f"opencl.write_imagef value must be vector<4xf32> or vector<4xf16>, got {self.value.type}"
            )

    def print(self, printer: Printer) -> None:
        _print_ptr_index(printer, self.image, self.x, self.y)
        printer.print_string(", ")
        printer.print_ssa_value(self.value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> WriteImageOp:
        img, (x, y) = _parse_ptr_index(parser, 2)
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        vt: Attribute = VEC4F32
        if parser.parse_optional_punctuation(":") is not None:
            vt = parser.parse_type()
        op = WriteImageOp(
            parser.resolve_operand(img, Image2DType("write")),
            parser.resolve_operand(x, i32),
            parser.resolve_operand(y, i32),
            parser.resolve_operand(value, vt),
        )
        op.attributes |= attrs
        return op


BARRIER_FENCES = {
    "local": "CLK_LOCAL_MEM_FENCE",
    "global": "CLK_GLOBAL_MEM_FENCE",
    "local_global": "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE",
}


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """`opencl.barrier local` (or `global`, `local_global`) → `barrier(CLK_..._FENCE)`."""

    name = "opencl.barrier"

    fence = prop_def(StringAttr)

    def __init__(self, fence: str = "local"):
        super().__init__(properties={"fence": StringAttr(fence)})

    def verify_(self) -> None:
        if self.fence.data not in BARRIER_FENCES:
            raise VerifyException(
                f"invalid barrier fence '{self.fence.data}', expected local, global or "
                "local_global"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.fence.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> BarrierOp:
        fence = parser.parse_identifier()
        op = BarrierOp(fence)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


class _ArrayAllocOp(IRDLOperation):
    SPACE: ClassVar[str]

    size = prop_def(IntegerAttr[I64])
    result = result_def(PointerType)

    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, size: int, element: Attribute = f32):
        super().__init__(
            properties={"size": IntegerAttr(size, i64)},
            result_types=[PointerType(self.SPACE, element)],
        )

    def verify_(self) -> None:
        assert isinstance(self.result.type, PointerType)
        if self.result.type.space.data != self.SPACE:
            raise VerifyException(
                f"{self.name} must produce a pointer in the {self.SPACE} address "
                f"space, got {self.result.type}"
            )
        if self.size.value.data <= 0:
            raise VerifyException(
                f"{self.name} size must be positive, got {self.size.value.data}"
            )
        if not isinstance(self.parent_op(), KernelOp):
            raise VerifyException(
                f"{self.name} must be directly inside an opencl.kernel body"
            )


@irdl_op_definition
class LocalAllocOp(_ArrayAllocOp):
    """`opencl.local_alloc {size = 256} : !opencl.ptr<local, f32>` → `__local float a[256];`."""

    name = "opencl.local_alloc"
    SPACE: ClassVar[str] = "local"


@irdl_op_definition
class PrivateAllocOp(_ArrayAllocOp):
    """`opencl.private_alloc {size = 8} : !opencl.ptr<private, f32>` → `float a[8];`."""

    name = "opencl.private_alloc"
    SPACE: ClassVar[str] = "private"


_VecT = VarConstraint("V", base(VectorType))


@irdl_op_definition
class SelectNonzeroOp(IRDLOperation):
    """`%r = opencl.select_nonzero %cond, %a, %b : vector<8xf32>` → `(cond != (float8)(0.0f))
    ? a : b`: `a` where `cond` is not 0, else `b`, lane by lane for vectors
    (f32 or floatN). Exact for every value of `a` and `b` (inf, NaN), unlike `a * cond`;
    for vectors it is one blend, where an i1 select would need one per lane (the IR's
    i1 vectors have no OpenCL type)."""

    name = "opencl.select_nonzero"

    cond = operand_def()
    true_value = operand_def()
    false_value = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, cond: SSAValue | Operation, a: SSAValue | Operation, b: SSAValue | Operation):
        super().__init__(operands=[cond, a, b], result_types=[SSAValue.get(a).type])

    def verify_(self) -> None:
        t = self.result.type
        if not (t == f32 or (is_float_vector(t) and t.element_type == f32)):
            raise VerifyException(f"{self.name} works on f32 or vectors of f32, got {t}")
        for v in (self.cond, self.true_value, self.false_value):
            if v.type != t:
                raise VerifyException(f"{self.name} operands must all be {t}, got {v.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> SelectNonzeroOp:
        ops = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if len(ops) != 3:
            parser.raise_error("opencl.select_nonzero takes three operands: cond, a, b")
        op = SelectNonzeroOp(*(parser.resolve_operand(o, t) for o in ops))
        op.attributes |= attrs
        return op


@irdl_op_definition
class VecSplatOp(IRDLOperation):
    """`%v = opencl.vec_splat %s : vector<4xf32>` → `(float4)(s)` (2, 4, 8 or 16 lanes)."""

    name = "opencl.vec_splat"

    scalar = operand_def()
    result = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(self, scalar: SSAValue | Operation, vtype: Attribute | None = None):
        if vtype is None:
            vtype = _vec4_of(SSAValue.get(scalar).type)
        super().__init__(operands=[scalar], result_types=[vtype])

    def verify_(self) -> None:
        assert isinstance(self.result.type, VectorType)
        if not is_float_vector(self.result.type):
            raise VerifyException(
                f"{self.name} result must be a vector of 2, 4, 8 or 16 f32 or f16, got "
                f"{self.result.type}"
            )
        if self.scalar.type != self.result.type.element_type:
            raise VerifyException(
                f"{self.name} operand type {self.scalar.type} does not match the "
                f"element type of {self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def _parse_vec(cls, parser: Parser) -> tuple[list[SSAValue], VectorType, dict]:
        ops = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        vt = parser.parse_type()
        if not isinstance(vt, VectorType):
            parser.raise_error(f"expected a vector type, got {vt}", pos)
        el = vt.element_type
        return [parser.resolve_operand(o, el) for o in ops], vt, attrs

    @classmethod
    def parse(cls, parser: Parser) -> VecSplatOp:
        ops, vt, attrs = cls._parse_vec(parser)
        if len(ops) != 1:
            parser.raise_error("opencl.vec_splat takes exactly one operand")
        op = VecSplatOp(ops[0], vt)
        op.attributes |= attrs
        return op


@irdl_op_definition
class VecMakeOp(IRDLOperation):
    """`%v = opencl.vec_make %a, %b, %c, %d : vector<4xf32>` → `(float4)(a, b, c, d)`
    (2, 4, 8 or 16 lanes)."""

    name = "opencl.vec_make"

    elements = var_operand_def()
    result = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(
        self, elements: Sequence[SSAValue | Operation], vtype: Attribute | None = None
    ):
        if vtype is None:
            vtype = VectorType(SSAValue.get(elements[0]).type, [len(elements)])
        super().__init__(operands=[elements], result_types=[vtype])

    def verify_(self) -> None:
        assert isinstance(self.result.type, VectorType)
        if not is_float_vector(self.result.type):
            raise VerifyException(
                f"{self.name} result must be a vector of 2, 4, 8 or 16 f32 or f16, got "
                f"{self.result.type}"
            )
        lanes = self.result.type.get_shape()[0]
        if len(self.elements) != lanes:
            raise VerifyException(
                f"{self.name} needs exactly {lanes} operands, got {len(self.elements)}"
            )
        for e in self.elements:
            if e.type != self.result.type.element_type:
                raise VerifyException(
                    f"{self.name} operand type {e.type} does not match the element "
                    f"type of {self.result.type}"
                )

    print = VecSplatOp.print  # pyright: ignore

    @classmethod
    def parse(cls, parser: Parser) -> VecMakeOp:
        ops, vt, attrs = VecSplatOp._parse_vec(parser)  # pyright: ignore
        op = VecMakeOp(ops, vt)
        op.attributes |= attrs
        return op


@irdl_op_definition
class VecExtractOp(IRDLOperation):
    """`%s = opencl.vec_extract %v[2] : f32 from vector<4xf32>` → `v.s2` (MLIR's
    vector.extract syntax; without `from`, the vector is read as a float4). Also a word
    of an intN (`i32 from vector<4xi32>`, an `opencl.vload` of packed words)."""

    name = "opencl.vec_extract"

    vector = operand_def(VectorType)
    lane = prop_def(IntegerAttr[I64])
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, vector: SSAValue | Operation, lane: int):
        vt = SSAValue.get(vector).type
        assert isinstance(vt, VectorType)
        super().__init__(
            operands=[vector],
            properties={"lane": IntegerAttr(lane, i64)},
            result_types=[vt.element_type],
        )

    def verify_(self) -> None:
        assert isinstance(self.vector.type, VectorType)
        if not (is_float_vector(self.vector.type) or is_word_vector(self.vector.type)):
            raise VerifyException(
                f"{self.name} operand must be a vector of 2, 4, 8 or 16 f32, f16 or i32, got "
                f"{self.vector.type}"
            )
        lanes = self.vector.type.get_shape()[0]
        if not 0 <= self.lane.value.data < lanes:
            raise VerifyException(
                f"{self.name} lane must be in 0..{lanes - 1}, got {self.lane.value.data}"
            )
        if self.result.type != self.vector.type.element_type:
            raise VerifyException(
                f"{self.name} result type {self.result.type} does not match the "
                f"element type of {self.vector.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.vector)
        printer.print_string(f"[{self.lane.value.data}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
        printer.print_string(" from ")
        printer.print_attribute(self.vector.type)

    @classmethod
    def parse(cls, parser: Parser) -> VecExtractOp:
        v = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        lane = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        el = parser.parse_type()
        vt: Attribute = _vec4_of(el)
        if parser.parse_optional_keyword("from") is not None:  # absent: a float4 (older IR)
            pos = parser.pos
            vt = parser.parse_type()
            if not isinstance(vt, VectorType) or vt.element_type != el:
                parser.raise_error(f"opencl.vec_extract of {el} needs a vector of {el} after 'from', got {vt}", pos)
        op = VecExtractOp(parser.resolve_operand(v, vt), lane)
        op.attributes |= attrs
        return op


# ---------------------------------------------------------------------------
# Host-side ops
# ---------------------------------------------------------------------------


@irdl_op_definition
class AllocBufferOp(IRDLOperation):
    """`%b = opencl.alloc_buffer : !opencl.buffer<1024xf32>`."""

    name = "opencl.alloc_buffer"
    result = result_def(BufferType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type: BufferType):
        super().__init__(result_types=[type])


@irdl_op_definition
class WeightOp(IRDLOperation):
    """`%w = opencl.weight @conv1_weight : !opencl.buffer<9408xf32>`: constant data."""

    name = "opencl.weight"
    symbol = prop_def(SymbolRefAttr)
    result = result_def(BufferType | ImageType)
    assembly_format = "$symbol attr-dict `:` type($result)"

    def __init__(self, symbol: str | SymbolRefAttr, type: BufferType | ImageType):
        if isinstance(symbol, str):
            symbol = SymbolRefAttr(symbol)
        super().__init__(properties={"symbol": symbol}, result_types=[type])


@irdl_op_definition
class AllocImageOp(IRDLOperation):
    """`%i = opencl.alloc_image : !opencl.image<224x896, rgba_f32>`."""

    name = "opencl.alloc_image"
    result = result_def(ImageType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type: ImageType):
        super().__init__(result_types=[type])


def _kernel_arg_kind(t: Attribute) -> str:
    if isinstance(t, PointerType):
        return "buffer"
    if isinstance(t, Image2DType):
        return "image"
    return str(t)


def _host_arg_kind(t: Attribute) -> str:
    if isinstance(t, BufferType):
        return "buffer"
    if isinstance(t, ImageType):
        return "image"
    return str(t)


def _find_kernel(op: Operation, ref: SymbolRefAttr) -> KernelOp | None | bool:
    """The referenced kernel; None if missing; False if op is not inside a module."""
    found = SymbolTable.lookup_symbol(op, ref)
    if isinstance(found, KernelOp):
        return found
    top: Operation = op
    while top.parent_op() is not None:
        top = top.parent_op()  # pyright: ignore
    if not isinstance(top, ModuleOp):
        return False
    name = ref.string_value()
    leaf = ref.nested_references.data[-1].data if ref.nested_references.data else name
    for o in top.walk():
        if isinstance(o, KernelOp) and o.sym_name.data in (name, leaf):
            return o
    return None


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """`opencl.launch @k(%a, %b) global [112, 112, 16] local [16, 4, 4] : (T0, T1)`."""

    name = "opencl.launch"

    kernel = prop_def(SymbolRefAttr)
    args = var_operand_def(base(BufferType) | base(ImageType) | EqAttrConstraint(i32) | EqAttrConstraint(f32))
    global_size = prop_def(base(DenseArrayBase) | base(ArrayAttr))
    local_size = opt_prop_def(base(DenseArrayBase) | base(ArrayAttr))

    def __init__(
        self,
        kernel: str | SymbolRefAttr,
        args: Sequence[SSAValue | Operation],
        global_size: Sequence[int] | DenseArrayBase | ArrayAttr,
        local_size: Sequence[int] | DenseArrayBase | ArrayAttr | None = None,
    ):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)
        super().__init__(
            operands=[args],
            properties={
                "kernel": kernel,
                "global_size": _i64_array(global_size),
                "local_size": _i64_array(local_size),
            },
        )

    @property
    def global_sizes(self) -> tuple[int, ...]:
        return int_list(self.global_size)

    @property
    def local_sizes(self) -> tuple[int, ...] | None:
        return None if self.local_size is None else int_list(self.local_size)

    def verify_(self) -> None:
        gs = self.global_sizes
        kname = self.kernel.string_value()
        if not 1 <= len(gs) <= 3:
            raise VerifyException(
                f"opencl.launch @{kname}: global size must have 1 to 3 dimensions, "
                f"got {len(gs)}"
            )
        if any(g <= 0 for g in gs):
            raise VerifyException(
                f"opencl.launch @{kname}: global size must be positive, got {list(gs)}"
            )
        ls = self.local_sizes
        if ls is not None:
            if len(ls) != len(gs):
                raise VerifyException(
                    f"opencl.launch @{kname}: local size rank {len(ls)} differs from "
                    f"global size rank {len(gs)}"
                )
            for d, (g, l) in enumerate(zip(gs, ls)):
                if l <= 0 or g % l != 0:
                    raise VerifyException(
                        f"opencl.launch @{kname}: global size {g} is not divisible by "
                        f"local size {l} in dimension {d}"
                    )
        kernel = _find_kernel(self, self.kernel)
        if kernel is False:
            return
        if kernel is None:
            raise VerifyException(
                f"opencl.launch refers to unknown kernel @{kname}"
            )
        assert isinstance(kernel, KernelOp)
        kinputs = kernel.function_type.inputs.data
        if len(kinputs) != len(self.args):
            raise VerifyException(
                f"opencl.launch @{kname} passes {len(self.args)} arguments but the "
                f"kernel takes {len(kinputs)}"
            )
        for i, (a, kt) in enumerate(zip(self.args, kinputs)):
            if _host_arg_kind(a.type) != _kernel_arg_kind(kt):
                raise VerifyException(
                    f"opencl.launch @{kname}: argument #{i} of type {a.type} does not "
                    f"match kernel argument type {kt}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel)
        printer.print_string("(")
        printer.print_list(self.args, printer.print_ssa_value)
        printer.print_string(") global [")
        printer.print_list(self.global_sizes, lambda v: printer.print_string(str(v)))
        printer.print_string("]")
        if self.local_sizes is not None:
            printer.print_string(" local [")
            printer.print_list(self.local_sizes, lambda v: printer.print_string(str(v)))
            printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list((a.type for a in self.args), printer.print_attribute)
        printer.print_string(")")

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        kernel = parser.parse_attribute()
        if not isinstance(kernel, SymbolRefAttr):
            parser.raise_error(f"expected a kernel symbol, got {kernel}")
        args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )

        def int_list_p() -> list[int]:
            return parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(False, False)
            )

        parser.parse_keyword("global")
        gs = int_list_p()
        ls = int_list_p() if parser.parse_optional_keyword("local") else None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_type
        )
        if len(types) != len(args):
            parser.raise_error(
                f"opencl.launch has {len(args)} operands but {len(types)} types"
            )
        op = LaunchOp(
            kernel,
            [parser.resolve_operand(a, t) for a, t in zip(args, types)],
            gs,
            ls,
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class CopyOp(IRDLOperation):
    """`opencl.copy %src to %dst : !opencl.buffer<1024xf32>` (same-size buffer copy)."""

    name = "opencl.copy"

    T: ClassVar = VarConstraint("T", base(BufferType))
    source = operand_def(T)
    dest = operand_def(T)

    assembly_format = "$source `to` $dest attr-dict `:` type($source)"

    def __init__(self, source: SSAValue | Operation, dest: SSAValue | Operation):
        super().__init__(operands=[source, dest])


OpenCL = Dialect(
    "opencl",
    [
        VLoadHalf4Op,
        VLoadHalfOp,
        VStoreHalf4Op,
        VStoreHalfOp,
        KernelOp,
        ReturnOp,
        GlobalIdOp,
        LocalIdOp,
        GroupIdOp,
        GlobalSizeOp,
        LocalSizeOp,
        NumGroupsOp,
        LoadOp,
        StoreOp,
        VLoad4Op,
        VStore4Op,
        VLoadOp,
        VStoreOp,
        SelectNonzeroOp,
        ReadImageOp,
        WriteImageOp,
        BarrierOp,
        LocalAllocOp,
        PrivateAllocOp,
        VecSplatOp,
        VecMakeOp,
        VecExtractOp,
        AllocBufferOp,
        WeightOp,
        AllocImageOp,
        LaunchOp,
        CopyOp,
    ],
    [PointerType, Image2DType, BufferType, ImageType],
)
