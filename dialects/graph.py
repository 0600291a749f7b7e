"""The `graph` dialect: tensor-level ops imported from ONNX.

Every value is a statically shaped ranked tensor (`tensor<1x64x112x112xf32>`): the
frontend folds shape subgraphs away, so each op can verify that its result shape is
exactly what its operands and attributes imply. Verifiers name the offending
attribute and the expected shape, so hand-edited IR fails with a usable message.

Weights are kept out of line: `graph.constant @name` refers to an array held by the
module's weight store (see `adreno_mlir.weights`); only small constants are inline
`dense<...>` literals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    VectorType,
    f16,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    lazy_traits_def,
    opt_result_def,
    region_def,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait, HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from adreno_mlir.dialects.texture import TextureTensorType
from adreno_mlir.dialects.traits import (  # noqa: F401 (re-exported: graph.Elementwise, ...)
    Elementwise,
    EpilogueHead,
    ImageOperands,
    LoadedByReader,
    NCHW4cConvertible,
    is_elementwise,
    is_epilogue_head,
)

if TYPE_CHECKING:
    from xdsl.pattern_rewriter import RewritePattern


# --------------------------------------------------------------------------- helpers


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    """Static logical shape of a tensor value or type.

    A `!texture.tensor` in NCHW4c layout has the logical shape [N, 4*C4, H, W]: after
    the layout pass, channels are padded to a multiple of 4 (the padding is zeros
    where it matters: weights of padded input channels are zero)."""
    t = value.type if isinstance(value, SSAValue) else value
    if isinstance(t, TextureTensorType):
        if t.layout_name != "nchw4c":
            raise VerifyException(f"graph ops read NCHW4c texture tensors only, got {t}")
        n, c4, h, w, _ = t.shape
        return (n, 4 * c4, h, w)
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a ranked tensor, got {t}")
    shape = tuple(t.get_shape())
    if any(d < 0 for d in shape):
        raise VerifyException(f"expected a static shape, got {t}")
    return shape


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def ints(attr: DenseArrayBase | None) -> tuple[int, ...]:
    return () if attr is None else tuple(int(v) for v in attr.get_values())


def f32_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f32)


def _expect_shape(op: Operation, got: Sequence[int], want: Sequence[int]) -> None:
    if tuple(got) != tuple(want):
        raise VerifyException(
            f"'{op.name}' result shape {list(got)} does not match the shape implied by "
            f"its operands and attributes: {list(want)}"
        )


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy (multidirectional) broadcasting, as ONNX defines it."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise VerifyException(
                f"shapes {[list(s) for s in shapes]} are not broadcast-compatible"
            )
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def pool_out_dim(size: int, k: int, s: int, p0: int, p1: int, d: int, ceil: bool) -> int:
    eff = d * (k - 1) + 1
    num = size + p0 + p1 - eff
    if ceil:
        out = -(-num // s) + 1
        # ONNX/PyTorch: the last window must start inside the input or left padding
        if (out - 1) * s >= size + p0:
            out -= 1
        return out
    return num // s + 1


def conv_out_shape(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, ...]:
    return (
        x[0],
        w[0],
        *(
            pool_out_dim(x[2 + i], w[2 + i], strides[i], pads[i], pads[i + 2], dilations[i], False)
            for i in range(2)
        ),
    )


AnyTensor = base(TensorType) | base(TextureTensorType)
"""Graph ops take plain tensors, or NCHW4c texture tensors after convert-layout-nchw4c."""


def weight_shape(value: SSAValue) -> tuple[int, ...]:
    """OIHW shape of conv weights; 5-D weights are OIHW4o-packed ([O/4, I, KH, KW, 4])."""
    s = shape_of(value)
    if len(s) == 5:
        if s[4] != 4:
            raise VerifyException(f"packed OIHW4o weights must end in 4, got {list(s)}")
        return (s[0] * 4, s[1], s[2], s[3])
    return s


class GraphOp(IRDLOperation):
    """Base of graph ops: all results are static ranked tensors."""

    irdl_options = (ParsePropInAttrDict(),)

    def verify_(self) -> None:
        try:
            for r in self.results:
                shape_of(r)
            for o in self.operands:
                shape_of(o)
            self.verify_shapes()
        except VerifyException as e:
            desc = getattr(self.location, "desc", None)
            if desc is None:
                raise
            raise VerifyException(f'{e} (at loc("{desc.data}"))') from None
        if "kernel_config" in self.attributes:
            verify_kernel_config(self)  # its messages name the op and its location

    def verify_shapes(self) -> None:
        """Check the result shape implied by operands and attributes."""


def verify_kernel_config(op: Operation) -> None:
    """The `kernel_config` attribute of a kernel (a `graph.fused` region, or an op not in
    one yet) against the schema of its kernel family: unknown keys, values out of range
    and configs the family cannot run are verification errors naming the op. The schema
    lives with each family (`adreno_mlir.lowering.families`, one file per family: its keys,
    choices and rules), which the verifier asks; printed and parsed as a dictionary."""
    from adreno_mlir.lowering.families import verify_config

    error = verify_config(op)
    if error is not None:
        raise VerifyException(error)


# --------------------------------------------------------------------------- traits
#
# What passes need to know about an op is attached to the op (query with
# `op.has_trait(T)` / `op.get_trait(T)`), not kept in tables of op classes per pass.
# Elementwise, EpilogueHead, ImageOperands and NCHW4cConvertible live in
# dialects/traits.py (texture ops can use them too) and are re-exported here.


class ElementwiseHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    """Element-wise ops on constants are evaluated (with the op's `evaluate`); a transpose
    scaled by a scalar moves below the scaling (towards the matmul that can absorb it); a
    reshape of a product moves below the op (which then fuses into the product)."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import (
            FoldConstantElementwise,
            SinkReshapeBelowElementwise,
            SinkTransposeBelowScalarOp,
        )

        return (FoldConstantElementwise(), SinkTransposeBelowScalarOp(), SinkReshapeBelowElementwise())


class ClipHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import RemoveNoOpClip

        return (RemoveNoOpClip(),)


class ReshapeHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import (
            FoldConstantElementwise,
            HoistUnitReshapeAboveTranspose,
            RemoveIdentityReshape,
        )

        return (RemoveIdentityReshape(), HoistUnitReshapeAboveTranspose(), FoldConstantElementwise())


class TransposeHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import FoldChannelLayerNorm, RemoveIdentityTranspose

        return (RemoveIdentityTranspose(), FoldChannelLayerNorm())


class ConcatHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import RemoveSingleConcat

        return (RemoveSingleConcat(),)


class GatherHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import GatherToSlice

        return (GatherToSlice(),)


class MatMulHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    """A transpose feeding only a matmul becomes the matmul's `lhs_perm` / `rhs_perm`; a
    scalar multiply of an operand moves after the matmul."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import FoldTransposeIntoMatMul, HoistScalarMulThroughMatMul

        return (FoldTransposeIntoMatMul(), HoistScalarMulThroughMatMul())


# --------------------------------------------------------------------------- constants


@irdl_op_definition
class ConstantOp(GraphOp):
    """A constant tensor: `@name` refers to the weight store; small ones are inline."""

    name = "graph.constant"
    ref = opt_prop_def(SymbolRefAttr)
    value = opt_prop_def(DenseIntOrFPElementsAttr)
    result = result_def(AnyTensor)
    traits = traits_def(Pure())

    def __init__(
        self,
        result_type: TensorType,
        ref: str | None = None,
        value: DenseIntOrFPElementsAttr | None = None,
    ):
        props: dict[str, Attribute] = {}
        if ref is not None:
            props["ref"] = SymbolRefAttr(ref)
        if value is not None:
            props["value"] = value
        super().__init__(properties=props, result_types=[result_type])

    @property
    def weight_name(self) -> str | None:
        return None if self.ref is None else self.ref.root_reference.data

    def verify_shapes(self) -> None:
        if (self.ref is None) == (self.value is None):
            raise VerifyException(
                "'graph.constant' needs exactly one of a weight reference (@name) or an "
                "inline dense<...> value"
            )
        if self.value is not None and self.value.type != self.result.type:
            raise VerifyException(
                f"'graph.constant' inline value has type {self.value.type}, result is "
                f"{self.result.type}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        # `@name : tensor<...>` or `dense<...> : tensor<...>` (the literal carries its type)
        ref = parser.parse_optional_symbol_name()
        if ref is not None:
            parser.parse_punctuation(":")
            t = parser.parse_type()
            if not isinstance(t, TensorType):
                parser.raise_error(f"expected a tensor type, got {t}")
            op = cls(t, ref=ref.data)
        else:
            value = parser.parse_attribute()
            if not isinstance(value, DenseIntOrFPElementsAttr):
                parser.raise_error("expected @weight_name or a dense<...> literal")
            op = cls(value.type, value=value)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.ref is not None:
            printer.print_attribute(self.ref)
            printer.print_string(" : ")
            printer.print_attribute(self.result.type)
        else:
            assert self.value is not None
            printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)


# --------------------------------------------------------------------------- element-wise

_T = VarConstraint("T", AnyTensor)


class UnaryOp(GraphOp):
    """Element-wise op with one operand; the result has the operand's shape.

    `graph.relu %x : tensor<...>` when the result type equals the operand type, else
    `: T -> U` (packed tensors may change memory scope or storage element type).

    Each subclass says once what it computes: `KIND` (its name in expressions,
    `lowering.expr.Un(kind, x, params)`), `emit` (the OpenCL computation through a
    kernel builder: `kb.fmax`, `kb.exp`, ...; the builder is duck-typed, the dialect
    does not import the lowering), `evaluate` (numpy, for constant folding) and, for ops
    with attributes, `expr_params` (the attributes as the `params` of both).
    """

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(
        Pure(), Elementwise(), ImageOperands(), NCHW4cConvertible(),
        ElementwiseHasCanonicalizationPatterns(),
    )

    KIND: ClassVar[str]
    """Short name of the computation, e.g. "relu", "hard_swish" (key of ELEMENTWISE_BY_KIND;
    xDSL wants op class constants upper-case, `op.kind` reads it on an instance)."""

    @property
    def kind(self) -> str:
        return self.KIND

    @classmethod
    def emit(cls, kb, x: SSAValue, params: tuple[float, ...] = ()) -> SSAValue:
        """Append the computation of one element (a float or float4 value `x`) to the
        kernel builder `kb` and return the result."""
        raise NotImplementedError(f"{cls.__name__} has no OpenCL emission")

    @classmethod
    def evaluate(cls, x: np.ndarray, *, params: tuple[float, ...] = ()) -> np.ndarray:
        """The op on a numpy array (constant folding)."""
        raise NotImplementedError(f"{cls.__name__} has no numpy evaluation")

    def expr_params(self) -> tuple[float, ...]:
        """The op's attributes as the `params` of `emit`/`evaluate`/`Un`."""
        return ()

    def __init__(self, x: SSAValue | Operation, result_type: Attribute | None = None, **props: Attribute):
        super().__init__(
            operands=[x],
            result_types=[result_type or SSAValue.get(x).type],
            properties=props,
        )

    def verify_shapes(self) -> None:
        _expect_shape(self, shape_of(self.result), shape_of(self.input))

    @classmethod
    def parse(cls, parser: Parser) -> UnaryOp:
        x = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_type = parser.parse_type()
        out_type = parser.parse_type() if parser.parse_optional_punctuation("->") else in_type
        (operand,) = parser.resolve_operands([x], [in_type], parser.pos)
        op = cls.create(operands=[operand], result_types=[out_type])
        for k, v in attrs.items():
            if k in cls.get_irdl_definition().properties:
                op.properties[k] = v
            else:
                op.attributes[k] = v
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_op_attributes({**self.properties, **self.attributes},
                                    reserved_attr_names=self._default_props())
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        if self.result.type != self.input.type:
            printer.print_string(" -> ")
            printer.print_attribute(self.result.type)

    def _default_props(self) -> list[str]:
        """Properties at their default value are not printed."""
        defs = self.get_irdl_definition().properties
        return [k for k, v in self.properties.items() if getattr(defs[k], "default_value", None) == v]


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "graph.relu"
    KIND: ClassVar[str] = "relu"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.fmax(x, 0.0)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.maximum(x, 0)


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "graph.sigmoid"
    KIND: ClassVar[str] = "sigmoid"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.fdiv(1.0, kb.fadd(1.0, kb.exp(kb.fneg(x))))

    @classmethod
    def evaluate(cls, x, *, params=()):
        return 1 / (1 + np.exp(-x))


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "graph.tanh"
    KIND: ClassVar[str] = "tanh"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.tanh(x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.tanh(x)


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "graph.exp"
    KIND: ClassVar[str] = "exp"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.exp(x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.exp(x)


@irdl_op_definition
class NegOp(UnaryOp):
    name = "graph.neg"
    KIND: ClassVar[str] = "neg"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.fneg(x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return -x


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "graph.abs"
    KIND: ClassVar[str] = "abs"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.absf(x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.abs(x)


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "graph.sqrt"
    KIND: ClassVar[str] = "sqrt"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.sqrt(x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.sqrt(x)


@irdl_op_definition
class ErfOp(UnaryOp):
    """The Gauss error function (ONNX Erf; GELU is x * 0.5 * (1 + erf(x / sqrt 2)))."""

    name = "graph.erf"
    KIND: ClassVar[str] = "erf"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.erf(x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.vectorize(math.erf, otypes=[np.float64])(x)


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """x * max(0, min(1, x/6 + 1/2)), as ONNX HardSwish."""

    name = "graph.hard_swish"
    KIND: ClassVar[str] = "hard_swish"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.fmul(x, kb.fmin(kb.fmax(kb.fadd(kb.fmul(x, 1.0 / 6.0), 0.5), 0.0), 1.0))

    @classmethod
    def evaluate(cls, x, *, params=()):
        return x * np.clip(x / 6 + 0.5, 0, 1)


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"
    KIND: ClassVar[str] = "hard_sigmoid"
    alpha = prop_def(FloatAttr[Float32Type], default_value=f32_attr(0.2))
    beta = prop_def(FloatAttr[Float32Type], default_value=f32_attr(0.5))

    def expr_params(self) -> tuple[float, ...]:
        return (self.alpha.value.data, self.beta.value.data)

    @classmethod
    def emit(cls, kb, x, params=()):
        a, b = params
        return kb.fmin(kb.fmax(kb.fadd(kb.fmul(x, a), b), 0.0), 1.0)

    @classmethod
    def evaluate(cls, x, *, params=()):
        a, b = params
        return np.clip(x * a + b, 0, 1)


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    name = "graph.leaky_relu"
    KIND: ClassVar[str] = "leaky_relu"
    alpha = prop_def(FloatAttr[Float32Type], default_value=f32_attr(0.01))

    def expr_params(self) -> tuple[float, ...]:
        return (self.alpha.value.data,)

    @classmethod
    def emit(cls, kb, x, params=()):
        (a,) = params  # max(x, 0) + a * min(x, 0): no compare, so it works on float4 too
        return kb.fadd(kb.fmax(x, 0.0), kb.fmul(kb.fmin(x, 0.0), a))

    @classmethod
    def evaluate(cls, x, *, params=()):
        (a,) = params
        return np.where(x >= 0, x, x * a)


@irdl_op_definition
class EluOp(UnaryOp):
    """ONNX Elu: x where x > 0, else alpha * (exp(x) - 1).

    Emitted as max(x, 0) + alpha * expm1(min(x, 0)): expm1, because exp(x) - 1 cancels
    to nothing near 0 (Elu(-1e-7) would be -1.19e-7 in f32, not -1e-7); no comparison, so
    float4 and half4 work as float (as leaky_relu); NaN stays NaN (maximumf/minimumf
    propagate it). alpha must be finite: an infinite alpha times expm1(0) = 0 would make
    every positive x NaN."""

    name = "graph.elu"
    KIND: ClassVar[str] = "elu"
    alpha = prop_def(FloatAttr[Float32Type], default_value=f32_attr(1.0))

    def expr_params(self) -> tuple[float, ...]:
        return (self.alpha.value.data,)

    @classmethod
    def emit(cls, kb, x, params=()):
        (a,) = params
        negative = kb.expm1(kb.fmin(x, 0.0))
        return kb.fadd(kb.fmax(x, 0.0), negative if a == 1.0 else kb.fmul(negative, a))

    @classmethod
    def evaluate(cls, x, *, params=()):
        (a,) = params
        x = np.asarray(x)
        return np.maximum(x, 0) + np.expm1(np.minimum(x, 0)) * np.asarray(a, x.dtype)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if not math.isfinite(self.alpha.value.data):
            raise VerifyException(f"'graph.elu' alpha ({self.alpha.value.data}) must be finite")


@irdl_op_definition
class ClipOp(UnaryOp):
    """min(max(x, min), max); ReLU6 is clip{min = 0, max = 6}."""

    name = "graph.clip"
    KIND: ClassVar[str] = "clip"
    min = prop_def(FloatAttr[Float32Type], default_value=f32_attr(-math.inf))
    max = prop_def(FloatAttr[Float32Type], default_value=f32_attr(math.inf))
    traits = traits_def(ClipHasCanonicalizationPatterns())

    def expr_params(self) -> tuple[float, ...]:
        return (self.min.value.data, self.max.value.data)

    @classmethod
    def emit(cls, kb, x, params=()):
        lo, hi = params
        if lo != float("-inf"):
            x = kb.fmax(x, lo)
        if hi != float("inf"):
            x = kb.fmin(x, hi)
        return x

    @classmethod
    def evaluate(cls, x, *, params=()):
        lo, hi = params
        return np.clip(x, lo, hi)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if self.min.value.data > self.max.value.data:
            raise VerifyException(
                f"'graph.clip' min ({self.min.value.data}) is greater than max "
                f"({self.max.value.data})"
            )


@irdl_op_definition
class LogOp(UnaryOp):
    """The natural logarithm (-inf at 0, NaN below)."""

    name = "graph.log"
    KIND: ClassVar[str] = "log"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.log(x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.log(x)


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """1 / x."""

    name = "graph.reciprocal"
    KIND: ClassVar[str] = "reciprocal"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.fdiv(1.0, x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.reciprocal(x)


@irdl_op_definition
class PowOp(UnaryOp):
    """x ** exponent for one constant exponent (ONNX Pow whose exponent input is a
    constant holding a single value; `graph.pow_tensor` takes a tensor of exponents).

    The exponent being known, common ones are specialised in `emit` instead of calling
    OpenCL's `pow` (slow on GPUs, and allowed 16 ulp of error): 2 -> x * x, 3 ->
    x * x * x, 0.5 -> sqrt(x), 1 -> x, 0 -> 1, -1 -> 1 / x. These agree with pow except
    that sqrt(-inf) is NaN (pow gives +inf) and sqrt(-0) is -0; `evaluate` specialises
    the same way, so folded constants match the kernels."""

    name = "graph.pow"
    KIND: ClassVar[str] = "pow"
    exponent = prop_def(FloatAttr[Float32Type])

    def expr_params(self) -> tuple[float, ...]:
        return (self.exponent.value.data,)

    @classmethod
    def emit(cls, kb, x, params=()):
        (e,) = params
        if e == 0.0:
            return kb.const_like(1.0, x.type)
        if e == 1.0:
            return x
        if e == 2.0:
            return kb.fmul(x, x)
        if e == 3.0:
            return kb.fmul(kb.fmul(x, x), x)
        if e == 0.5:
            return kb.sqrt(x)
        if e == -1.0:
            return kb.fdiv(1.0, x)
        return kb.pow(x, e)

    @classmethod
    def evaluate(cls, x, *, params=()):
        (e,) = params
        x = np.asarray(x)
        special = {0.0: lambda: np.ones_like(x), 1.0: lambda: x, 2.0: lambda: x * x, 3.0: lambda: x * x * x,
                   0.5: lambda: np.sqrt(x), -1.0: lambda: np.reciprocal(x)}
        return special[e]() if e in special else np.power(x, np.float32(e))


@irdl_op_definition
class GeluOp(UnaryOp):
    """ONNX Gelu (opset 20): x/2 * (1 + erf(x / sqrt 2)), or with approximate = "tanh"
    x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). One op, not its decomposition:
    one expression node, and the importer needs no constants for it."""

    name = "graph.gelu"
    KIND: ClassVar[str] = "gelu"
    approximate = prop_def(StringAttr, default_value=StringAttr("none"))

    APPROXIMATIONS: ClassVar[tuple[str, ...]] = ("none", "tanh")

    def expr_params(self) -> tuple[float, ...]:
        return (1.0,) if self.approximate.data == "tanh" else ()

    @classmethod
    def emit(cls, kb, x, params=()):
        if params and params[0]:
            cube = kb.fmul(kb.fmul(x, x), x)
            inner = kb.fmul(kb.fadd(x, kb.fmul(cube, 0.044715)), math.sqrt(2.0 / math.pi))
            gate = kb.tanh(inner)
        else:
            gate = kb.erf(kb.fmul(x, 1.0 / math.sqrt(2.0)))
        return kb.fmul(kb.fmul(x, 0.5), kb.fadd(1.0, gate))

    @classmethod
    def evaluate(cls, x, *, params=()):
        x = np.asarray(x, np.float64)
        if params and params[0]:
            gate = np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))
        else:
            gate = np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0))
        return 0.5 * x * (1.0 + gate)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if self.approximate.data not in self.APPROXIMATIONS:
            raise VerifyException(
                f"'graph.gelu' approximate = \"{self.approximate.data}\" is not one of "
                f"{', '.join(self.APPROXIMATIONS)}"
            )


class BinaryOp(GraphOp):
    """Element-wise op with numpy broadcasting between its two operands.

    Like `UnaryOp`, each subclass has a `KIND` (`lowering.expr.Bin(kind, a, b)`), `emit`
    (OpenCL through a kernel builder) and `evaluate` (numpy)."""

    lhs = operand_def(AnyTensor)
    rhs = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(
        Pure(), Elementwise(), ImageOperands(), NCHW4cConvertible(),
        ElementwiseHasCanonicalizationPatterns(),
    )

    KIND: ClassVar[str]

    @property
    def kind(self) -> str:
        return self.KIND

    @classmethod
    def emit(cls, kb, a: SSAValue, b: SSAValue) -> SSAValue:
        raise NotImplementedError(f"{cls.__name__} has no OpenCL emission")

    @classmethod
    def evaluate(cls, a: np.ndarray, b: np.ndarray, *, params: tuple[float, ...] = ()) -> np.ndarray:
        raise NotImplementedError(f"{cls.__name__} has no numpy evaluation")

    def expr_params(self) -> tuple[float, ...]:
        return ()
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[a, b], result_types=[result_type])

    def verify_shapes(self) -> None:
        _expect_shape(
            self, shape_of(self.result), broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        )


@irdl_op_definition
class AddOp(BinaryOp):
    name = "graph.add"
    KIND: ClassVar[str] = "add"

    @classmethod
    def emit(cls, kb, a, b):
        return kb.fadd(a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.add(a, b)


@irdl_op_definition
class SubOp(BinaryOp):
    name = "graph.sub"
    KIND: ClassVar[str] = "sub"

    @classmethod
    def emit(cls, kb, a, b):
        return kb.fsub(a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.subtract(a, b)


class MulHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    """Constant folding, the exported GELU pattern (which ends in a multiply), the
    element-wise transpose sinking (attention scales its transposed keys) and chains of
    scalar multiplies."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import (
            FoldConstantElementwise,
            FoldScalarMulChain,
            FoldScaleIntoRmsNorm,
            RecognizeGelu,
            RecognizeRmsNorm,
            SinkReshapeBelowElementwise,
            SinkTransposeBelowScalarOp,
        )

        return (FoldConstantElementwise(), RecognizeGelu(), RecognizeRmsNorm(), FoldScaleIntoRmsNorm(),
                SinkTransposeBelowScalarOp(), FoldScalarMulChain(), SinkReshapeBelowElementwise())


@irdl_op_definition
class MulOp(BinaryOp):
    name = "graph.mul"
    KIND: ClassVar[str] = "mul"
    traits = traits_def(
        Pure(), Elementwise(), ImageOperands(), NCHW4cConvertible(), MulHasCanonicalizationPatterns(),
    )

    @classmethod
    def emit(cls, kb, a, b):
        return kb.fmul(a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.multiply(a, b)


@irdl_op_definition
class DivOp(BinaryOp):
    name = "graph.div"
    KIND: ClassVar[str] = "div"

    @classmethod
    def emit(cls, kb, a, b):
        return kb.fdiv(a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.divide(a, b)


@irdl_op_definition
class MaxOp(BinaryOp):
    """The larger operand; NaN if either is NaN (ONNX Max, numpy's maximum and
    onnxruntime propagate NaN; OpenCL's fmax would return the other operand)."""

    name = "graph.max"
    KIND: ClassVar[str] = "max"

    @classmethod
    def emit(cls, kb, a, b):
        return kb.fmax(a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.maximum(a, b)


@irdl_op_definition
class MinOp(BinaryOp):
    """The smaller operand; NaN if either is NaN (as `graph.max`)."""

    name = "graph.min"
    KIND: ClassVar[str] = "min"

    @classmethod
    def emit(cls, kb, a, b):
        return kb.fmin(a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.minimum(a, b)


@irdl_op_definition
class PowTensorOp(BinaryOp):
    """lhs ** rhs element by element (ONNX Pow whose exponent is a tensor computed at run
    time, or a constant of several values): OpenCL's `pow`. A single constant exponent
    is `graph.pow`, which specialises common exponents."""

    name = "graph.pow_tensor"
    KIND: ClassVar[str] = "pow_tensor"

    @classmethod
    def emit(cls, kb, a, b):
        return kb.pow(a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.power(a, b)


@irdl_op_definition
class PReluOp(BinaryOp):
    """ONNX PRelu: x where x >= 0, else slope * x; `rhs` (the slope) broadcasts to the
    shape of `lhs` (x), e.g. one slope per channel as [C, 1, 1]."""

    name = "graph.prelu"
    KIND: ClassVar[str] = "prelu"

    @classmethod
    def emit(cls, kb, a, b):
        # max(x, 0) + slope * min(x, 0): no comparison, so float4 works as float (as leaky_relu)
        return kb.fadd(kb.fmax(a, 0.0), kb.fmul(kb.fmin(a, 0.0), b))

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        return np.where(a < 0, a * b, a)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        x, slope = shape_of(self.lhs), shape_of(self.rhs)
        if broadcast_shapes(x, slope) != x:
            raise VerifyException(
                f"'graph.prelu' slope of shape {list(slope)} does not broadcast to the input's shape {list(x)}"
            )



# --------------------------------------------------------------------------- booleans
#
# A boolean tensor is a float tensor of 0s and 1s (compute tensors are float; 0 and 1 are
# exact in half too). Comparisons and logical ops write such masks, `graph.where` selects
# by them, and a float tensor read as a boolean is "not 0" (ONNX Cast to bool).


@irdl_op_definition
class IsNaNOp(UnaryOp):
    """ONNX IsNaN: 1 where x is NaN, else 0."""

    name = "graph.is_nan"
    KIND: ClassVar[str] = "is_nan"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.mask("uno", x)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.isnan(x).astype(np.asarray(x).dtype)


@irdl_op_definition
class IsInfOp(UnaryOp):
    """ONNX IsInf: 1 where x is +inf (`detect_positive`) or -inf (`detect_negative`), else
    0; NaN is neither."""

    name = "graph.is_inf"
    KIND: ClassVar[str] = "is_inf"
    detect_positive = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, 64))
    detect_negative = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, 64))

    def expr_params(self) -> tuple[float, ...]:
        return (float(self.detect_positive.value.data), float(self.detect_negative.value.data))

    @classmethod
    def emit(cls, kb, x, params=(1.0, 1.0)):
        pos, neg = params
        inf = float("inf")
        if pos and neg:
            return kb.mask("oeq", kb.absf(x), inf)
        if pos:
            return kb.mask("oeq", x, inf)
        if neg:
            return kb.mask("oeq", x, -inf)
        return kb.mask("false", x)

    @classmethod
    def evaluate(cls, x, *, params=(1.0, 1.0)):
        pos, neg = params
        x = np.asarray(x)
        return (((x == np.inf) & bool(pos)) | ((x == -np.inf) & bool(neg))).astype(x.dtype)


@irdl_op_definition
class NotOp(UnaryOp):
    """ONNX Not on a mask: 1 where x is 0, else 0 (any non-zero value counts as true)."""

    name = "graph.not"
    KIND: ClassVar[str] = "not"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.mask("oeq", x, 0.0)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return (np.asarray(x) == 0).astype(np.asarray(x).dtype)


@irdl_op_definition
class ToBoolOp(UnaryOp):
    """ONNX Cast of a float tensor to bool: 1 where x is not 0 (NaN included, as in
    numpy and onnxruntime), else 0."""

    name = "graph.to_bool"
    KIND: ClassVar[str] = "to_bool"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.mask("une", x, 0.0)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return (np.asarray(x) != 0).astype(np.asarray(x).dtype)


class CompareOp(BinaryOp):
    """A comparison writing a mask: 1 where `lhs PRED rhs`, else 0. Every predicate but
    not-equal is ordered (false when either side is NaN), as IEEE 754, numpy and
    onnxruntime compare."""

    PREDICATE: ClassVar[str]
    """arith.cmpf's predicate."""
    NUMPY: ClassVar[Any]

    @classmethod
    def emit(cls, kb, a, b):
        return kb.mask(cls.PREDICATE, a, b)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        a = np.asarray(a)
        return cls.NUMPY(a, b).astype(a.dtype if a.dtype.kind == "f" else np.float32)


@irdl_op_definition
class EqualOp(CompareOp):
    name = "graph.equal"
    KIND: ClassVar[str] = "equal"
    PREDICATE: ClassVar[str] = "oeq"
    NUMPY: ClassVar[Any] = np.equal


@irdl_op_definition
class LessOp(CompareOp):
    name = "graph.less"
    KIND: ClassVar[str] = "less"
    PREDICATE: ClassVar[str] = "olt"
    NUMPY: ClassVar[Any] = np.less


@irdl_op_definition
class LessOrEqualOp(CompareOp):
    name = "graph.less_equal"
    KIND: ClassVar[str] = "less_equal"
    PREDICATE: ClassVar[str] = "ole"
    NUMPY: ClassVar[Any] = np.less_equal


@irdl_op_definition
class GreaterOp(CompareOp):
    name = "graph.greater"
    KIND: ClassVar[str] = "greater"
    PREDICATE: ClassVar[str] = "ogt"
    NUMPY: ClassVar[Any] = np.greater


@irdl_op_definition
class GreaterOrEqualOp(CompareOp):
    name = "graph.greater_equal"
    KIND: ClassVar[str] = "greater_equal"
    PREDICATE: ClassVar[str] = "oge"
    NUMPY: ClassVar[Any] = np.greater_equal


class LogicalOp(BinaryOp):
    """A logical op on masks (a non-zero operand is true), writing a mask."""

    NUMPY: ClassVar[Any]

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        a = np.asarray(a)
        return cls.NUMPY(a != 0, np.asarray(b) != 0).astype(a.dtype if a.dtype.kind == "f" else np.float32)


@irdl_op_definition
class AndOp(LogicalOp):
    name = "graph.and"
    KIND: ClassVar[str] = "and"
    NUMPY: ClassVar[Any] = np.logical_and

    @classmethod
    def emit(cls, kb, a, b):
        return kb.select_nonzero(a, kb.mask("une", b, 0.0), kb.mask("false", b, 0.0))


@irdl_op_definition
class OrOp(LogicalOp):
    name = "graph.or"
    KIND: ClassVar[str] = "or"
    NUMPY: ClassVar[Any] = np.logical_or

    @classmethod
    def emit(cls, kb, a, b):
        return kb.select_nonzero(a, kb.mask("true", b, 0.0), kb.mask("une", b, 0.0))


@irdl_op_definition
class XorOp(LogicalOp):
    name = "graph.xor"
    KIND: ClassVar[str] = "xor"
    NUMPY: ClassVar[Any] = np.logical_xor

    @classmethod
    def emit(cls, kb, a, b):
        return kb.select_nonzero(a, kb.mask("oeq", b, 0.0), kb.mask("une", b, 0.0))


# --------------------------------------------------------------------------- integers
#
# An integer tensor computed at run time (int64 / int32 in ONNX: position ids, a mask cast
# to int, a cumulative sum of it) is a float32 tensor holding integer values, exact for
# |v| < 2**24 (the same representation as the boolean masks). Add, Sub, Mul, comparisons,
# Where and data movement are the float ops unchanged; what differs from float arithmetic
# has ops of its own: `graph.trunc` (Cast of a float to an integer type), `graph.int_div`
# and `graph.int_mod` / `graph.int_fmod` (integer Div and Mod, computed on `int`s, so exact).
# A model input of integer type reaches them through `graph.int_to_float` (its i32 buffer
# converted once, on device; the runtime checks its values against [-2**24, 2**24)).

FLOAT_EXACT_INT = 1 << 24
"""Integers held in float32 are exact below this magnitude."""


@irdl_op_definition
class TruncOp(UnaryOp):
    """Rounding toward zero (ONNX Cast of a float to an integer type: 2.7 -> 2, -2.7 -> -2;
    values of magnitude 2**24 and more are integers already)."""

    name = "graph.trunc"
    KIND: ClassVar[str] = "trunc"

    @classmethod
    def emit(cls, kb, x, params=()):
        return kb.fadd(kb.trunc(x), 0.0)  # + 0: -0.5 -> 0, not -0 (an integer has no sign of zero)

    @classmethod
    def evaluate(cls, x, *, params=()):
        return np.trunc(x) + np.zeros((), np.asarray(x).dtype)


class IntBinaryOp(BinaryOp):
    """An integer op on float-held integers (see "integers" above): each lane converted to
    `int` (exact below 2**24), computed with OpenCL's integer arithmetic, converted back.
    A zero divisor gives 0 (numpy's result; onnxruntime leaves it undefined). Plain tensors
    only (no NCHW4c kernel: integer tensors are masks and positions, not image data)."""

    traits = traits_def(Pure(), Elementwise(), ElementwiseHasCanonicalizationPatterns())

    @classmethod
    def int_emit(cls, kb, a, b):
        """The i32 result of the op on two i32 lanes, `b` not 0."""
        raise NotImplementedError

    @classmethod
    def int_evaluate(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The int64 result of the op, `b` not 0 (numpy)."""
        raise NotImplementedError

    @classmethod
    def emit(cls, kb, a, b):
        a, b = kb._floats(a, b)
        if isinstance(a.type, VectorType) or isinstance(b.type, VectorType):
            lanes = (a.type if isinstance(a.type, VectorType) else b.type).get_shape()[0]
            a, b = (x if isinstance(x.type, VectorType) else kb.splat(x, lanes) for x in (a, b))
            return kb.vec([cls.emit(kb, kb.lane(a, k), kb.lane(b, k)) for k in range(lanes)])
        ai, bi = kb.exact_int(a), kb.exact_int(b)
        zero = kb.cmp("eq", bi, 0)
        r = cls.int_emit(kb, ai, kb.select(zero, kb.i(1), bi))
        return kb.cast(kb.to_float(kb.select(zero, kb.i(0), r)), a.type)

    @classmethod
    def evaluate(cls, a, b, *, params=()):
        a, b = np.asarray(a), np.asarray(b)
        dtype = a.dtype if a.dtype.kind == "f" else np.float32
        with np.errstate(all="ignore"):  # as `kb.exact_int`: outside [-2**24, 2**24] counts as 0
            ai, bi = (np.where(np.abs(x) <= FLOAT_EXACT_INT, np.trunc(x), 0).astype(np.int64) for x in (a, b))
            ai, bi = np.broadcast_arrays(ai, bi)
            zero = bi == 0
            r = cls.int_evaluate(ai, np.where(zero, 1, bi))
        return np.where(zero, 0, r).astype(dtype)


@irdl_op_definition
class IntDivOp(IntBinaryOp):
    """ONNX Div of integer tensors: the quotient truncated toward zero (-7 / 2 = -3)."""

    name = "graph.int_div"
    KIND: ClassVar[str] = "int_div"

    @classmethod
    def int_emit(cls, kb, a, b):
        return kb.div(a, b)

    @classmethod
    def int_evaluate(cls, a, b):
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q)


@irdl_op_definition
class IntModOp(IntBinaryOp):
    """ONNX Mod of integer tensors with fmod = 0: the remainder has the divisor's sign
    (Python's %, -7 mod 2 = 1)."""

    name = "graph.int_mod"
    KIND: ClassVar[str] = "int_mod"

    @classmethod
    def int_emit(cls, kb, a, b):
        return kb.rem(kb.add(kb.rem(a, b), b), b)  # ((a % b) + b) % b: |a|, |b| < 2**24, no overflow

    @classmethod
    def int_evaluate(cls, a, b):
        return np.mod(a, b)


@irdl_op_definition
class IntFmodOp(IntBinaryOp):
    """ONNX Mod of integer tensors with fmod = 1: the remainder has the dividend's sign
    (C's %, -7 fmod 2 = -1)."""

    name = "graph.int_fmod"
    KIND: ClassVar[str] = "int_fmod"

    @classmethod
    def int_emit(cls, kb, a, b):
        return kb.rem(a, b)

    @classmethod
    def int_evaluate(cls, a, b):
        return np.fmod(a, b)


class TernaryOp(GraphOp):
    """Element-wise op with numpy broadcasting among its three operands.

    Like `BinaryOp`, each subclass has a `KIND` (`lowering.expr.Tern(kind, a, b, c)`),
    `emit` (OpenCL through a kernel builder) and `evaluate` (numpy)."""

    a = operand_def(AnyTensor)
    b = operand_def(AnyTensor)
    c = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(
        Pure(), Elementwise(), ImageOperands(), NCHW4cConvertible(),
        ElementwiseHasCanonicalizationPatterns(),
    )
    assembly_format = "$a `,` $b `,` $c attr-dict `:` functional-type(operands, results)"

    KIND: ClassVar[str]

    @property
    def kind(self) -> str:
        return self.KIND

    @classmethod
    def emit(cls, kb, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        raise NotImplementedError(f"{cls.__name__} has no OpenCL emission")

    @classmethod
    def evaluate(cls, a: np.ndarray, b: np.ndarray, c: np.ndarray, *,
                 params: tuple[float, ...] = ()) -> np.ndarray:
        raise NotImplementedError(f"{cls.__name__} has no numpy evaluation")

    def expr_params(self) -> tuple[float, ...]:
        return ()

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, c: SSAValue | Operation,
                 result_type: Attribute):
        super().__init__(operands=[a, b, c], result_types=[result_type])

    def verify_shapes(self) -> None:
        _expect_shape(
            self, shape_of(self.result), broadcast_shapes(shape_of(self.a), shape_of(self.b), shape_of(self.c))
        )


@irdl_op_definition
class WhereOp(TernaryOp):
    """ONNX Where: `b` where the condition `a` is not 0, else `c`. The condition is a
    float tensor of 0s and 1s: compute tensors are float32, and the frontend turns ONNX's
    boolean condition (a constant) into one. A select, never a blend such as
    a * b + (1 - a) * c, which is NaN wherever the value not chosen is inf or NaN."""

    name = "graph.where"
    KIND: ClassVar[str] = "where"

    @classmethod
    def emit(cls, kb, a, b, c):
        return kb.select_nonzero(a, b, c)

    @classmethod
    def evaluate(cls, a, b, c, *, params=()):
        return np.where(np.asarray(a) != 0, b, c)


# --------------------------------------------------------------------------- convolution


def _check_len(op: Operation, attr: str, values: Sequence[int], n: int) -> None:
    if len(values) != n:
        raise VerifyException(f"'{op.name}' {attr} must have {n} values, got {list(values)}")


@irdl_op_definition
class Conv2dOp(GraphOp):
    """2-D convolution, NCHW input and OIHW weights (ONNX Conv)."""

    name = "graph.conv2d"
    input = operand_def(AnyTensor)
    weight = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    strides = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))
    pads = prop_def(DenseArrayBase, default_value=i64_array([0, 0, 0, 0]))
    dilations = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))
    groups = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, 64))
    irdl_options = (AttrSizedOperandSegments(), ParsePropInAttrDict())
    traits = traits_def(Pure(), EpilogueHead(), ImageOperands(operands=("input",)), NCHW4cConvertible())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight) "
        "(`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self,
        x: SSAValue,
        w: SSAValue,
        b: SSAValue | None,
        result_type: Attribute,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        groups: int = 1,
    ):
        super().__init__(
            operands=[x, w, [] if b is None else [b]],
            result_types=[result_type],
            properties={
                "strides": i64_array(strides),
                "pads": i64_array(pads),
                "dilations": i64_array(dilations),
                "groups": IntegerAttr(groups, 64),
            },
        )

    def verify_shapes(self) -> None:
        x, w = shape_of(self.input), weight_shape(self.weight)
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(
                f"'graph.conv2d' expects a 4-D input and 4-D weights, got {list(x)} and {list(w)}"
            )
        strides, pads, dil = ints(self.strides), ints(self.pads), ints(self.dilations)
        _check_len(self, "strides", strides, 2)
        _check_len(self, "pads", pads, 4)
        _check_len(self, "dilations", dil, 2)
        if min(strides + dil) < 1 or min(pads) < 0:
            raise VerifyException("'graph.conv2d' strides/dilations must be >= 1, pads >= 0")
        g = self.groups.value.data
        if g < 1 or x[1] % g or w[0] % g:
            raise VerifyException(
                f"'graph.conv2d' groups = {g} must divide input channels ({x[1]}) and "
                f"output channels ({w[0]})"
            )
        if w[1] * g != x[1]:
            raise VerifyException(
                f"'graph.conv2d' weight has {w[1]} input channels per group but the input "
                f"has {x[1]} channels in {g} group(s)"
            )
        if self.bias is not None and shape_of(self.bias) != (w[0],):
            raise VerifyException(
                f"'graph.conv2d' bias must have shape [{w[0]}], got {list(shape_of(self.bias))}"
            )
        _expect_shape(self, shape_of(self.result), conv_out_shape(x, w, strides, pads, dil))


def conv_transpose_out_dim(size: int, k: int, s: int, p0: int, p1: int, d: int, out_pad: int) -> int:
    """ONNX ConvTranspose's output extent along one axis."""
    return s * (size - 1) + out_pad + (k - 1) * d + 1 - p0 - p1


@irdl_op_definition
class ConvTranspose2dOp(GraphOp):
    """2-D transposed convolution (ONNX ConvTranspose): NCHW input, weights
    [C_in, C_out / groups, KH, KW] (ONNX's order, in channels first). Input pixel (iy, ix)
    of channel ci adds x * w[ci, co, kh, kw] to output pixel
    (iy * stride - pad_begin + kh * dilation, ...) of channel co of ci's group, so
    the output extent is stride * (in - 1) + output_padding + (k - 1) * dilation + 1 -
    pad_begin - pad_end.

    An ONNX output_shape larger than the input reaches becomes output_padding (extra rows
    and columns at the end, as onnxruntime places them); output pixels no input pixel
    reaches hold the bias. No NCHW4cConvertible trait: its one kernel reads plain NCHW
    tensors, so the op stays on them on every plan."""

    name = "graph.conv_transpose2d"
    input = operand_def(AnyTensor)
    weight = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    strides = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))
    pads = prop_def(DenseArrayBase, default_value=i64_array([0, 0, 0, 0]))
    dilations = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))
    output_padding = prop_def(DenseArrayBase, default_value=i64_array([0, 0]))
    groups = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, 64))
    irdl_options = (AttrSizedOperandSegments(), ParsePropInAttrDict())
    traits = traits_def(Pure(), EpilogueHead())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight) "
        "(`,` type($bias)^)? `->` type($result)"
    )

    def verify_shapes(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(
                f"'graph.conv_transpose2d' expects a 4-D input and 4-D weights, got {list(x)} and {list(w)}"
            )
        strides, pads, dil = ints(self.strides), ints(self.pads), ints(self.dilations)
        out_pad = ints(self.output_padding)
        _check_len(self, "strides", strides, 2)
        _check_len(self, "pads", pads, 4)
        _check_len(self, "dilations", dil, 2)
        _check_len(self, "output_padding", out_pad, 2)
        if min(strides + dil) < 1 or min(pads + out_pad) < 0:
            raise VerifyException(
                "'graph.conv_transpose2d' strides/dilations must be >= 1, pads and output_padding >= 0")
        g = self.groups.value.data
        if g < 1 or x[1] % g:
            raise VerifyException(f"'graph.conv_transpose2d' groups = {g} must divide input channels ({x[1]})")
        if w[0] != x[1]:
            raise VerifyException(
                f"'graph.conv_transpose2d' weight [C_in, C_out / groups, KH, KW] has {w[0]} input channels "
                f"but the input has {x[1]}"
            )
        co = w[1] * g
        if self.bias is not None and shape_of(self.bias) != (co,):
            raise VerifyException(
                f"'graph.conv_transpose2d' bias must have shape [{co}], got {list(shape_of(self.bias))}"
            )
        spatial = [conv_transpose_out_dim(x[2 + i], w[2 + i], strides[i], pads[i], pads[i + 2], dil[i], out_pad[i])
                   for i in range(2)]
        if min(spatial) < 1:
            raise VerifyException(
                f"'graph.conv_transpose2d' pads {list(pads)} leave an empty output ({spatial[0]} x {spatial[1]})"
            )
        _expect_shape(self, shape_of(self.result), (x[0], co, *spatial))


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference-mode batch normalization over channel axis 1."""

    name = "graph.batch_norm"
    input = operand_def(AnyTensor)
    scale = operand_def(AnyTensor)
    bias = operand_def(AnyTensor)
    mean = operand_def(AnyTensor)
    var = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    epsilon = prop_def(FloatAttr[Float32Type], default_value=f32_attr(1e-5))
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` "
        "functional-type(operands, results)"
    )

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        if len(x) < 2:
            raise VerifyException("'graph.batch_norm' input must have a channel axis")
        for n in ("scale", "bias", "mean", "var"):
            s = shape_of(getattr(self, n))
            if s != (x[1],):
                raise VerifyException(
                    f"'graph.batch_norm' {n} must have shape [{x[1]}], got {list(s)}"
                )
        _expect_shape(self, shape_of(self.result), x)


# --------------------------------------------------------------------------- pooling


class PoolOp(GraphOp):
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))
    pads = prop_def(DenseArrayBase, default_value=i64_array([0, 0, 0, 0]))
    ceil_mode = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))
    traits = traits_def(Pure(), EpilogueHead(), ImageOperands(), NCHW4cConvertible())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def dilation_values(self) -> tuple[int, int]:
        return (1, 1)

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        if len(x) != 4:
            raise VerifyException(f"'{self.name}' expects a 4-D NCHW input, got {list(x)}")
        k, s, p, d = ints(self.kernel_shape), ints(self.strides), ints(self.pads), self.dilation_values()
        _check_len(self, "kernel_shape", k, 2)
        _check_len(self, "strides", s, 2)
        _check_len(self, "pads", p, 4)
        if min(k + s) < 1 or min(p) < 0:
            raise VerifyException(f"'{self.name}' kernel/strides must be >= 1 and pads >= 0")
        for i in range(2):
            if p[i] >= k[i] * d[i] or p[i + 2] >= k[i] * d[i]:
                raise VerifyException(f"'{self.name}' pads {list(p)} must be smaller than the window")
        ceil = bool(self.ceil_mode.value.data)
        want = (x[0], x[1], *(pool_out_dim(x[2 + i], k[i], s[i], p[i], p[i + 2], d[i], ceil) for i in range(2)))
        _expect_shape(self, shape_of(self.result), want)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "graph.max_pool"
    dilations = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))

    def dilation_values(self) -> tuple[int, int]:
        d = ints(self.dilations)
        _check_len(self, "dilations", d, 2)
        return d  # type: ignore[return-value]


@irdl_op_definition
class AvgPoolOp(PoolOp):
    name = "graph.avg_pool"
    count_include_pad = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))


@irdl_op_definition
class GlobalAvgPoolOp(GraphOp):
    name = "graph.global_avg_pool"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), EpilogueHead(), ImageOperands(), NCHW4cConvertible())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        if len(x) < 3:
            raise VerifyException("'graph.global_avg_pool' expects an N x C x spatial input")
        _expect_shape(self, shape_of(self.result), (x[0], x[1]) + (1,) * (len(x) - 2))


class ReduceOp(GraphOp):
    """Base of the ONNX reductions (ReduceMean, ReduceSum, ReduceMax, ...): one value per
    kept position, from the elements along `axes` (distinct, in [0, rank)); `keepdims` = 1
    keeps the reduced axes as 1s. Empty `axes` reduce over nothing: each output is the
    reduction of its one element (ONNX's `noop_with_empty_axes` for ReduceL2 gives |x|,
    ReduceSumSquare x * x; the frontend drops the op where that is x itself).

    The subclasses differ only in `KIND` (`op.kind`): what the kernel accumulates
    (`ReduceSpec` in lowering/kernels/pool.py), so one kernel generator, one fusion rule
    (a reduction takes a fused element-wise tail when it keeps its dims) and one
    select-kernel-config rule (the row family's work-items per output) serves them all."""

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axes = prop_def(DenseArrayBase)
    keepdims = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, 64))
    traits = traits_def(Pure(), EpilogueHead())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    KIND: ClassVar[str]
    """The reduction, a key of `REDUCTIONS` (lowering/kernels/pool.py): "mean", "sum", "max", "min", "prod",
    "l1", "l2", "sum_square", "log_sum", "log_sum_exp"."""

    @property
    def kind(self) -> str:
        return self.KIND

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        axes = ints(self.axes)
        if any(not 0 <= a < len(x) for a in axes) or len(set(axes)) != len(axes):
            raise VerifyException(
                f"'{self.name}' axes {list(axes)} must be distinct and in [0, {len(x)})"
            )
        keep = bool(self.keepdims.value.data)
        want = tuple(
            1 if i in axes else d for i, d in enumerate(x) if keep or i not in axes
        )
        _expect_shape(self, shape_of(self.result), want)


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """The mean; the one reduction with NCHW4c kernels (the spatial mean, axes [2, 3]
    with keepdims, as a global average pool: convert-layout-nchw4c checks the axes)."""

    name = "graph.reduce_mean"
    KIND: ClassVar[str] = "mean"
    traits = traits_def(ImageOperands(), NCHW4cConvertible())


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "graph.reduce_sum"
    KIND: ClassVar[str] = "sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """The maximum; NaN if any element is NaN (as numpy; onnxruntime's CPU kernel
    depends on where the NaN lies)."""

    name = "graph.reduce_max"
    KIND: ClassVar[str] = "max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """The minimum; NaN if any element is NaN."""

    name = "graph.reduce_min"
    KIND: ClassVar[str] = "min"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    name = "graph.reduce_prod"
    KIND: ClassVar[str] = "prod"


@irdl_op_definition
class ReduceL1Op(ReduceOp):
    """The sum of |x|."""

    name = "graph.reduce_l1"
    KIND: ClassVar[str] = "l1"


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    """sqrt of the sum of x * x."""

    name = "graph.reduce_l2"
    KIND: ClassVar[str] = "l2"


@irdl_op_definition
class ReduceSumSquareOp(ReduceOp):
    name = "graph.reduce_sum_square"
    KIND: ClassVar[str] = "sum_square"


@irdl_op_definition
class ReduceLogSumOp(ReduceOp):
    """log of the sum."""

    name = "graph.reduce_log_sum"
    KIND: ClassVar[str] = "log_sum"


@irdl_op_definition
class ReduceLogSumExpOp(ReduceOp):
    """log(sum(exp(x))), computed as log(sum(exp(x - m))) + m with m the maximum, so that
    large elements do not overflow exp."""

    name = "graph.reduce_log_sum_exp"
    KIND: ClassVar[str] = "log_sum_exp"


REDUCE_OPS = (
    ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceL1Op, ReduceL2Op,
    ReduceSumSquareOp, ReduceLogSumOp, ReduceLogSumExpOp,
)


# --------------------------------------------------------------------------- data movement


@irdl_op_definition
class ReshapeOp(GraphOp):
    """Reshape (also Flatten, Squeeze, Unsqueeze): the result type is the new shape."""

    name = "graph.reshape"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), ReshapeHasCanonicalizationPatterns())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        a, b = shape_of(self.input), shape_of(self.result)
        if math.prod(a) != math.prod(b):
            raise VerifyException(
                f"'graph.reshape' cannot reshape {list(a)} ({math.prod(a)} elements) to "
                f"{list(b)} ({math.prod(b)} elements)"
            )


@irdl_op_definition
class TransposeOp(GraphOp):
    name = "graph.transpose"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    perm = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), TransposeHasCanonicalizationPatterns())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        x, perm = shape_of(self.input), ints(self.perm)
        if sorted(perm) != list(range(len(x))):
            raise VerifyException(
                f"'graph.transpose' perm {list(perm)} is not a permutation of 0..{len(x) - 1}"
            )
        _expect_shape(self, shape_of(self.result), tuple(x[p] for p in perm))


@irdl_op_definition
class ConcatOp(GraphOp):
    name = "graph.concat"
    inputs = var_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    # Reads images, but writes stay buffers: a concat is one copy per input, write-bound;
    # on the H200 its copies took 1.6x longer into images than into buffers (DenseNet-121,
    # docs/measurements.md).
    traits = traits_def(
        Pure(), ImageOperands(writes=False), NCHW4cConvertible(), ConcatHasCanonicalizationPatterns()
    )
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        shapes = [shape_of(v) for v in self.inputs]
        if not shapes:
            raise VerifyException("'graph.concat' needs at least one input")
        axis = self.axis.value.data
        rank = len(shapes[0])
        if not 0 <= axis < rank:
            raise VerifyException(f"'graph.concat' axis {axis} out of range for rank {rank}")
        for s in shapes:
            if len(s) != rank or any(s[i] != shapes[0][i] for i in range(rank) if i != axis):
                raise VerifyException(
                    f"'graph.concat' inputs {[list(s) for s in shapes]} differ outside axis {axis}"
                )
        want = list(shapes[0])
        want[axis] = sum(s[axis] for s in shapes)
        _expect_shape(self, shape_of(self.result), want)


@irdl_op_definition
class SliceOp(GraphOp):
    """Static strided slice; starts/ends already clamped to [0, dim] by the frontend.

    On NCHW4c tensors (convert-layout-nchw4c, `channel_block_slice`) only a slice of whole
    channel blocks: channels from a multiple of 4, all of the other axes; its kernel copies
    the blocks, from and to images or buffers (MixNet's and GhostNet's channel splits, which
    on NCHW cost an unpack, the slice and a pack each)."""

    name = "graph.slice"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    starts = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), ImageOperands(), NCHW4cConvertible())

    def channel_block_slice(self) -> bool:
        """Whether the slice takes whole channel blocks of a 4-D tensor and nothing else:
        steps 1, every axis but the channels whole, the channels from a multiple of 4 for
        a multiple of 4 or up to the end (its last block then holds the input's padding)."""
        x, out = shape_of(self.input), shape_of(self.result)
        starts, steps = ints(self.starts), ints(self.steps)
        if len(x) != 4 or any(s != 1 for s in steps):
            return False
        if any(starts[d] != 0 or out[d] != x[d] for d in (0, 2, 3)):
            return False
        c0, c = starts[1], out[1]
        return c0 % 4 == 0 and (c % 4 == 0 or c0 + c == x[1])
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        x, out = shape_of(self.input), shape_of(self.result)
        starts, steps = ints(self.starts), ints(self.steps)
        if not len(starts) == len(steps) == len(x) == len(out):
            raise VerifyException(
                "'graph.slice' starts/steps must have one value per input dimension"
            )
        for d in range(len(x)):
            if steps[d] == 0:
                raise VerifyException("'graph.slice' steps must be non-zero")
            last = starts[d] + (out[d] - 1) * steps[d]
            if out[d] > 0 and not (0 <= starts[d] < x[d] and 0 <= last < x[d]):
                raise VerifyException(
                    f"'graph.slice' dimension {d} reads outside the input (start {starts[d]}, "
                    f"step {steps[d]}, {out[d]} elements, size {x[d]})"
                )


class PadHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import RemoveIdentityPad

        return (RemoveIdentityPad(),)


class ExpandHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import RemoveIdentityExpand

        return (RemoveIdentityExpand(),)


@irdl_op_definition
class PadOp(GraphOp):
    """ONNX Pad on any axes: `pads` = [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}].

    A negative pad crops. As in onnxruntime, each axis is cropped first (to `kept`
    elements, see `axis_geometry`) and the crop is then padded, so reflect/edge/wrap
    read the cropped extent. Modes: `constant` (out of range reads `value`), `reflect`
    (mirrored without repeating the edge; pads must be smaller than the kept extent,
    as onnxruntime requires), `edge` (clamped), `wrap` (periodic). Canonicalization
    removes a pad whose pads are all 0 (swin_t's window padding of sizes that divide
    evenly)."""

    name = "graph.pad"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    pads = prop_def(DenseArrayBase)
    mode = prop_def(StringAttr, default_value=StringAttr("constant"))
    value = prop_def(FloatAttr[Float32Type], default_value=f32_attr(0.0))
    traits = traits_def(Pure(), PadHasCanonicalizationPatterns())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    MODES: ClassVar = ("constant", "reflect", "edge", "wrap")

    def axis_geometry(self) -> list[tuple[int, int, int]]:
        """Per axis (first, kept, before): the crop keeps input elements
        [first, first + kept) (kept <= 0: nothing), and output element o reads element
        o - before of the crop (`mode` decides outside [0, kept))."""
        x, pads = shape_of(self.input), ints(self.pads)
        r = len(x)
        return [(max(0, -pads[d]), x[d] - max(0, -pads[d]) - max(0, -pads[r + d]), max(0, pads[d]))
                for d in range(r)]

    def verify_shapes(self) -> None:
        x, pads = shape_of(self.input), ints(self.pads)
        r, mode = len(x), self.mode.data
        if mode not in self.MODES:
            raise VerifyException(f"'graph.pad' mode '{mode}' is not one of {list(self.MODES)}")
        if len(pads) != 2 * r:
            raise VerifyException(
                f"'graph.pad' pads {list(pads)} must have 2 * rank = {2 * r} values (begins, then ends)")
        for d, (_, kept, _) in enumerate(self.axis_geometry()):
            if mode != "constant" and kept < 1:
                raise VerifyException(
                    f"'graph.pad' pads {list(pads)} crop away all of axis {d} (size {x[d]}); mode '{mode}' "
                    "needs at least one element to read")
            big = [p for p in (pads[d], pads[r + d]) if p >= kept]
            if mode == "reflect" and big:
                raise VerifyException(
                    f"'graph.pad' reflect pads {big} on axis {d} must be smaller than the {kept} element(s) "
                    "left after cropping (one reflection)")
        _expect_shape(self, shape_of(self.result), tuple(x[d] + pads[d] + pads[r + d] for d in range(r)))


@irdl_op_definition
class ExpandOp(GraphOp):
    """ONNX Expand (and Tile, as reshape + expand + reshape): the input broadcast to
    the result shape (numpy rules: the input's shape aligned to the right, its size-1
    axes repeated). A copy kernel whose input strides are 0 on the broadcast axes."""

    name = "graph.expand"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), ExpandHasCanonicalizationPatterns())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        x, out = shape_of(self.input), shape_of(self.result)
        ok = len(x) <= len(out)
        if ok:
            try:
                ok = broadcast_shapes(x, out) == tuple(out)
            except VerifyException:
                ok = False
        if not ok:
            raise VerifyException(f"'graph.expand' cannot broadcast {list(x)} to {list(out)}")


@irdl_op_definition
class ResizeOp(GraphOp):
    """ONNX Resize on the spatial axes of NCHW tensors (nearest / linear / cubic).

    `cubic_coeff_a` and `exclude_outside` are ONNX's: the cubic kernel's A (-0.75, as
    PyTorch exports it; -0.5 is Keys' / TensorFlow's) and whether taps outside the input
    get weight 0 (the others renormalised) instead of the edge pixel. Linear taps
    clamped to the edge equal the excluded ones, so exclude_outside changes nothing there;
    nearest has no weights to exclude."""

    name = "graph.resize"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    mode = prop_def(StringAttr, default_value=StringAttr("nearest"))
    coordinate_transformation_mode = prop_def(StringAttr, default_value=StringAttr("half_pixel"))
    nearest_mode = prop_def(StringAttr, default_value=StringAttr("round_prefer_floor"))
    cubic_coeff_a = prop_def(FloatAttr[Float32Type], default_value=f32_attr(-0.75))
    exclude_outside = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))
    scales = opt_prop_def(ArrayAttr[FloatAttr])
    traits = traits_def(Pure(), EpilogueHead(), ImageOperands(), NCHW4cConvertible())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def spatial_scales(self) -> tuple[float, float]:
        """(h, w) scale factors: the `scales` attribute, else output / input extent."""
        if self.scales is not None:
            return tuple(float(s.value.data) for s in self.scales.data[-2:])  # type: ignore[return-value]
        x, y = shape_of(self.input), shape_of(self.result)
        return (y[-2] / x[-2], y[-1] / x[-1])

    MODES: ClassVar = ("nearest", "linear", "cubic")
    COORDS: ClassVar = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                        "half_pixel_symmetric")
    NEAREST: ClassVar = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

    def verify_shapes(self) -> None:
        x, y = shape_of(self.input), shape_of(self.result)
        for attr, allowed in (
            ("mode", self.MODES),
            ("coordinate_transformation_mode", self.COORDS),
            ("nearest_mode", self.NEAREST),
        ):
            v = getattr(self, attr).data
            if v not in allowed:
                raise VerifyException(f"'graph.resize' {attr} '{v}' is not one of {list(allowed)}")
        if len(x) != len(y) or any(a != b for a, b in zip(x[:-2], y[:-2])):
            raise VerifyException(
                f"'graph.resize' only resizes the last two axes: {list(x)} -> {list(y)}"
            )
        if self.scales is not None and len(self.scales.data) != len(x):
            raise VerifyException("'graph.resize' scales must have one value per axis")
        a, exclude = self.cubic_coeff_a.value.data, self.exclude_outside.value.data
        if not math.isfinite(a):
            raise VerifyException(f"'graph.resize' cubic_coeff_a ({a}) must be finite")
        if exclude not in (0, 1):
            raise VerifyException(f"'graph.resize' exclude_outside must be 0 or 1, got {exclude}")
        if exclude and self.mode.data == "nearest":
            raise VerifyException("'graph.resize' exclude_outside = 1 needs mode 'linear' or 'cubic', not 'nearest'")


@irdl_op_definition
class SoftmaxOp(GraphOp):
    name = "graph.softmax"
    input = operand_def(_T)
    result = result_def(_T)
    axis = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, 64))
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"

    def verify_shapes(self) -> None:
        r = len(shape_of(self.input))
        if not -r <= self.axis.value.data < r:
            raise VerifyException(f"'graph.softmax' axis {self.axis.value.data} out of range")


@irdl_op_definition
class LogSoftmaxOp(GraphOp):
    """ONNX LogSoftmax along `axis`: x - max - log(sum(exp(x - max))), never the log of a
    softmax (which is -inf wherever exp underflows). Its own op rather than a flag on
    `graph.softmax`: the IR says which one it is, and the kernel differs only in its
    last step (SoftmaxSpec.log)."""

    name = "graph.log_softmax"
    input = operand_def(_T)
    result = result_def(_T)
    axis = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, 64))
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"

    def verify_shapes(self) -> None:
        r = len(shape_of(self.input))
        if not -r <= self.axis.value.data < r:
            raise VerifyException(f"'graph.log_softmax' axis {self.axis.value.data} out of range for rank {r}")


@irdl_op_definition
class LayerNormOp(GraphOp):
    """ONNX LayerNormalization: each row over the trailing axes `[axis, rank)` becomes
    `(x - mean) / sqrt(var + epsilon) * scale + bias` (biased variance, as ONNX and
    PyTorch). `scale` and the optional `bias` broadcast to those trailing axes.

    `center = 0` is the RMS normalization of T5, Llama and their kin (ONNX
    RMSNormalization, com.microsoft SimplifiedLayerNormalization, or the decomposed
    `x * 1/sqrt(mean(x^2) + eps) * w` that graph-canonicalize recognizes):
    `x / sqrt(mean(x^2) + epsilon) * scale (+ bias)`, no mean subtracted."""

    name = "graph.layer_norm"
    input = operand_def(AnyTensor)
    scale = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, 64))
    epsilon = prop_def(FloatAttr[Float32Type], default_value=f32_attr(1e-5))
    center = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, 64))
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` type($scale) (`,` type($bias)^)? "
        "`->` type($result)"
    )

    def norm_axis(self) -> int:
        """The first normalized axis, in [0, rank)."""
        return self.axis.value.data % len(shape_of(self.input))

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        axis = self.axis.value.data
        if not -len(x) <= axis < len(x):
            raise VerifyException(f"'graph.layer_norm' axis {axis} out of range for rank {len(x)}")
        trailing = x[axis % len(x):]
        for what, v in (("scale", self.scale), ("bias", self.bias)):
            if v is None:
                continue
            try:
                fits = len(shape_of(v)) <= len(trailing) and broadcast_shapes(shape_of(v), trailing) == tuple(trailing)
            except VerifyException:
                fits = False
            if not fits:
                raise VerifyException(
                    f"'graph.layer_norm' {what} of shape {list(shape_of(v))} does not broadcast to the "
                    f"normalized axes {list(trailing)}"
                )
        if self.epsilon.value.data < 0:
            raise VerifyException(f"'graph.layer_norm' epsilon {self.epsilon.value.data} is negative")
        if self.center.value.data not in (0, 1):
            raise VerifyException(f"'graph.layer_norm' center must be 0 (RMS normalization) or 1, got "
                                  f"{self.center.value.data}")
        _expect_shape(self, shape_of(self.result), x)


@irdl_op_definition
class ChannelNormOp(GraphOp):
    """A normalization over the channels of each pixel of an NCHW tensor (axis 1 alone):
    for every (n, h, w), `(x - mean) / sqrt(var + epsilon) * scale + bias` over its C
    channels (biased variance; `center = 0`: RMS, as graph.layer_norm's). `scale` and the
    optional `bias` have shape [C].

    ConvNeXt's LayerNorm2d: ONNX has no such op, so exporters write a transpose to NHWC,
    LayerNormalization over the last axis and a transpose back, which graph-canonicalize
    folds into this op (three kernels and, on NCHW4c, an unpack and a pack: five launches
    per normalization, 90 of convnextv2_atto's 206 on the H200). Its NCHW kernel is the
    row normalization with a row's channels H*W apart (one pixel a work-item: neighbouring
    work-items read neighbouring floats); its NCHW4c kernel reads a pixel's channel blocks
    as float4s (channels a multiple of 4: the padding lanes would enter the sums)."""

    name = "graph.channel_norm"
    input = operand_def(AnyTensor)
    scale = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    epsilon = prop_def(FloatAttr[Float32Type], default_value=f32_attr(1e-5))
    center = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, 64))
    traits = traits_def(Pure(), ImageOperands(operands=("input",)), NCHW4cConvertible())
    assembly_format = (
        "$input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` type($scale) (`,` type($bias)^)? "
        "`->` type($result)"
    )

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        if len(x) != 4:
            raise VerifyException(f"'graph.channel_norm' expects a 4-D NCHW input, got {list(x)}")
        for what, v in (("scale", self.scale), ("bias", self.bias)):
            if v is not None and shape_of(v) != (x[1],):
                raise VerifyException(
                    f"'graph.channel_norm' {what} must have shape [{x[1]}] (one per channel), got {list(shape_of(v))}")
        if self.epsilon.value.data < 0:
            raise VerifyException(f"'graph.channel_norm' epsilon {self.epsilon.value.data} is negative")
        if self.center.value.data not in (0, 1):
            raise VerifyException(f"'graph.channel_norm' center must be 0 (RMS normalization) or 1, got "
                                  f"{self.center.value.data}")
        _expect_shape(self, shape_of(self.result), x)


@irdl_op_definition
class TakeOp(GraphOp):
    """Gather with run-time indices (an embedding lookup: token ids into a table):
    `result = input.take(indices, axis)`, of shape `input[:axis] + indices + input[axis+1:]`.
    A negative id counts from the end, as in ONNX. The indices are either

    - an `i32` tensor: a model input (the frontend narrows int64 token ids; the runtime
      checks every id against the table's extent before it uploads them), or
    - an `f32` tensor of float-held integers computed at run time (RoBERTa's position ids
      from a cumulative sum of the padding mask): no host sees them, so the kernel makes
      them safe itself: an id outside [-extent, extent) (or not a number) reads row 0.
      ONNX leaves such ids undefined (onnxruntime refuses them); no read ever leaves the
      table."""

    name = "graph.take"
    input = operand_def(AnyTensor)
    indices = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = "$input `,` $indices attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        x, idx = shape_of(self.input), shape_of(self.indices)
        axis = self.axis.value.data
        if not 0 <= axis < len(x):
            raise VerifyException(f"'graph.take' axis {axis} out of range for rank {len(x)}")
        element = self.indices.type.get_element_type()
        if element not in (i32, f32):
            raise VerifyException(f"'graph.take' indices must be an i32 or f32 tensor, got {self.indices.type}")
        if self.input.type.get_element_type() != f32:
            raise VerifyException(f"'graph.take' reads an f32 tensor, got {self.input.type}")
        _expect_shape(self, shape_of(self.result), (*x[:axis], *idx, *x[axis + 1:]))


@irdl_op_definition
class GatherOp(GraphOp):
    """ONNX Gather with constant indices: the result is `input.take(indices, axis)`,
    of shape `input[:axis] + indices_shape + input[axis+1:]` (indices already made
    non-negative by the frontend). Canonicalization turns evenly spaced indices (one
    index, a range, a strided range) into `graph.slice` (+ `graph.reshape`)."""

    name = "graph.gather"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    indices = prop_def(DenseArrayBase)
    indices_shape = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), GatherHasCanonicalizationPatterns())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        axis = self.axis.value.data
        if not 0 <= axis < len(x):
            raise VerifyException(f"'graph.gather' axis {axis} out of range for rank {len(x)}")
        idx, ishape = ints(self.indices), ints(self.indices_shape)
        if math.prod(ishape) != len(idx):
            raise VerifyException(
                f"'graph.gather' has {len(idx)} indices for indices_shape {list(ishape)}"
            )
        bad = [i for i in idx if not 0 <= i < x[axis]]
        if bad:
            raise VerifyException(
                f"'graph.gather' indices {bad[:8]} are outside [0, {x[axis]}) along axis {axis}"
            )
        _expect_shape(self, shape_of(self.result), (*x[:axis], *ishape, *x[axis + 1:]))


@irdl_op_definition
class IntToFloatOp(GraphOp):
    """An integer model input (an `i32` tensor: attention_mask, token_type_ids, input_ids
    compared with a padding id) as the float-held integers every other op computes on
    (see "integers"): one element-wise kernel, once per input. The runtime checks the
    input's values against [-2**24, 2**24) (its `bound`), so the conversion is exact."""

    name = "graph.int_to_float"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_shapes(self) -> None:
        if self.input.type.get_element_type() != i32 or self.result.type.get_element_type() != f32:
            raise VerifyException(f"'graph.int_to_float' converts an i32 tensor to an f32 tensor, got "
                                  f"{self.input.type} -> {self.result.type}")
        _expect_shape(self, shape_of(self.result), shape_of(self.input))


@irdl_op_definition
class GroupQueryAttentionOp(GraphOp):
    """com.microsoft GroupQueryAttention over a KV cache that lives on the device (onnxruntime's
    shared-buffer form): one op, so its kernels can rotate, write the cache and attend in
    three launches instead of the dozens of the written-out graph (lowering/kernels/gqa.py).

    - `query`: [B, S, H * D], or [B, S, (H + 2 KVH) * D] with q, k and v packed (no `key`
      and `value` operands); `key` / `value`: [B, S, KVH * D].
    - `k_cache` / `v_cache`: [B, KVH, L, D] (heads, then rows by position: each head's rows
      contiguous, so a work-group reads one head's split as one range), state (model inputs
      that live on the device, `graph.state`): the op writes the S new rows into them in
      place, at positions start[b] + s (rows at or past L are not written), before it
      attends; so no other op may read them (its order against the write would decide what
      it sees). Their element type is the storage: f32 (the ONNX model's), or f16 after
      `kv-cache-storage{element=f16}` (half the bytes; the kernels still compute in f32).
    - `start`: [B, 1] float-held integers, the position of the first new token.
    - `cos` / `sin` (optional: rotary embedding of q and k): [P, D / 2], rows by position;
      `interleaved` 1 rotates pairs (2i, 2i + 1), 0 halves (i, i + D / 2), as onnxruntime.
    - `output`: [B, S, H * D]; query head h reads KV head h // (H / KVH); token s attends
      to cache rows j <= start[b] + s; `scale` multiplies q.k (onnxruntime's 0 means
      1 / sqrt(D), resolved at import)."""

    name = "graph.group_query_attention"
    query = operand_def(AnyTensor)
    key = opt_operand_def(AnyTensor)
    value = opt_operand_def(AnyTensor)
    k_cache = operand_def(AnyTensor)
    v_cache = operand_def(AnyTensor)
    start = operand_def(AnyTensor)
    cos = opt_operand_def(AnyTensor)
    sin = opt_operand_def(AnyTensor)
    output = result_def(AnyTensor)
    num_heads = prop_def(IntegerAttr[I64])
    kv_num_heads = prop_def(IntegerAttr[I64])
    scale = prop_def(FloatAttr[Float32Type])
    interleaved = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))
    irdl_options = (AttrSizedOperandSegments(), ParsePropInAttrDict())
    assembly_format = (
        "$query (`key` $key^)? (`value` $value^)? `cache` $k_cache `,` $v_cache `at` $start "
        "(`cos` $cos^)? (`sin` $sin^)? attr-dict `:` type($query) (`key` type($key)^)? (`value` type($value)^)? "
        "`cache` type($k_cache) `,` type($v_cache) `at` type($start) (`cos` type($cos)^)? (`sin` type($sin)^)? "
        "`->` type($output)"
    )

    @property
    def heads(self) -> int:
        return self.num_heads.value.data

    @property
    def kv_heads(self) -> int:
        return self.kv_num_heads.value.data

    @property
    def packed(self) -> bool:
        return self.key is None

    @property
    def cache_storage(self) -> str:
        """"f32" or "f16": the caches' element type (`kv-cache-storage` decides it)."""
        return "f16" if self.k_cache.type.get_element_type() == f16 else "f32"

    @property
    def geometry(self) -> tuple[int, int, int, int, int]:
        """(B, S, L, D, table rows (0 without rotary))."""
        b, _, length, d = shape_of(self.k_cache)
        return b, shape_of(self.query)[1], length, d, (shape_of(self.cos)[0] if self.cos is not None else 0)

    def verify_shapes(self) -> None:
        h, kvh = self.heads, self.kv_heads
        if h <= 0 or kvh <= 0 or h % kvh:
            raise VerifyException(f"'graph.group_query_attention' num_heads = {h} must be a positive multiple of "
                                  f"kv_num_heads = {kvh}")
        if (self.key is None) != (self.value is None):
            raise VerifyException("'graph.group_query_attention' takes key and value together (or neither: packed)")
        if (self.cos is None) != (self.sin is None):
            raise VerifyException("'graph.group_query_attention' takes cos and sin together")
        for what in ("query", "key", "value", "start", "cos", "sin"):
            v = getattr(self, what)
            if v is not None and v.type.get_element_type() != f32:
                raise VerifyException(f"'graph.group_query_attention' {what} must be an f32 tensor, got {v.type}")
        for what in ("k_cache", "v_cache"):
            element = getattr(self, what).type.get_element_type()
            if element not in (f32, f16):
                raise VerifyException(f"'graph.group_query_attention' {what} must be an f32 or f16 (storage) tensor, "
                                      f"got {getattr(self, what).type}")
        if self.v_cache.type.get_element_type() != self.k_cache.type.get_element_type():
            raise VerifyException("'graph.group_query_attention' k_cache and v_cache must have one storage type, got "
                                  f"{self.k_cache.type} and {self.v_cache.type}")
        if self.k_cache is self.v_cache:
            raise VerifyException("'graph.group_query_attention' k_cache and v_cache are one value; each needs its own "
                                  "buffer")
        kc = shape_of(self.k_cache)
        if len(kc) != 4 or kc[1] != kvh or tuple(shape_of(self.v_cache)) != tuple(kc):
            raise VerifyException(f"'graph.group_query_attention' caches must both be [B, {kvh}, L, D], got "
                                  f"{list(kc)} and {list(shape_of(self.v_cache))}")
        b, _, length, d = kc
        if d % 2:
            raise VerifyException(f"'graph.group_query_attention' head size {d} must be even (its kernels move "
                                  "pairs of elements)")
        q = shape_of(self.query)
        width = (h + 2 * kvh) * d if self.packed else h * d
        if len(q) != 3 or q[0] != b or q[2] != width:
            raise VerifyException(f"'graph.group_query_attention' query must be [{b}, S, {width}], got {list(q)}")
        if not 1 <= q[1] <= length:
            raise VerifyException(f"'graph.group_query_attention' {q[1]} new tokens do not fit a cache of {length}")
        for what, v in (("key", self.key), ("value", self.value)):
            if v is not None and tuple(shape_of(v)) != (b, q[1], kvh * d):
                raise VerifyException(f"'graph.group_query_attention' {what} must be [{b}, {q[1]}, {kvh * d}], "
                                      f"got {list(shape_of(v))}")
        if math.prod(shape_of(self.start)) != b:
            raise VerifyException(f"'graph.group_query_attention' start must hold {b} positions")
        if self.cos is not None:
            for what, v in (("cos", self.cos), ("sin", self.sin)):
                t = shape_of(v)
                if len(t) != 2 or t[1] * 2 != d:
                    raise VerifyException(f"'graph.group_query_attention' {what} must be [P, {d // 2}] (rotary over "
                                          f"all of D = {d}), got {list(t)}")
        _expect_shape(self, shape_of(self.output), (b, q[1], h * d))
        for what, cache in (("k_cache", self.k_cache), ("v_cache", self.v_cache)):
            if not isinstance(cache, BlockArgument):
                raise VerifyException(f"'graph.group_query_attention' writes its caches in place: {what} must be a "
                                      "function argument (state kept on the device), not a computed value")
            readers = [u.operation for u in cache.uses if u.operation is not self]
            if readers:
                raise VerifyException(f"'graph.group_query_attention' writes its caches in place, but '{readers[0].name}'"
                                      f" reads its {what} too (it would see the rows written or not depending on the "
                                      "launch order)")

    def evaluate(self, query, key, value, k_cache, v_cache, start, cos, sin):
        """numpy reference: (output, the caches after the write)."""
        h, kvh = self.heads, self.kv_heads
        b, s, length, d, _ = self.geometry
        if key is None:
            heads = query.reshape(b, s, h + 2 * kvh, d)
            q, k, v = heads[:, :, :h], heads[:, :, h:h + kvh], heads[:, :, h + kvh:]
        else:
            q, k, v = query.reshape(b, s, h, d), key.reshape(b, s, kvh, d), value.reshape(b, s, kvh, d)
        first = np.asarray(start).reshape(b).astype(np.int64)
        pos = first[:, None] + np.arange(s)[None, :]  # [B, S]

        def rotate(x):
            if cos is None:
                return x
            idx = np.clip(pos, 0, cos.shape[0] - 1)
            c, sn = cos[idx][:, :, None, :], sin[idx][:, :, None, :]
            if self.interleaved.value.data:
                x1, x2 = x[..., 0::2], x[..., 1::2]
                out = np.empty_like(x)
                out[..., 0::2], out[..., 1::2] = x1 * c - x2 * sn, x2 * c + x1 * sn
                return out
            half = d // 2
            x1, x2 = x[..., :half], x[..., half:]
            return np.concatenate([x1 * c - x2 * sn, x2 * c + x1 * sn], -1)

        q, k = rotate(q), rotate(k)
        kp, vp = np.array(k_cache, np.float32, copy=True), np.array(v_cache, np.float32, copy=True)
        store = np.float16 if self.cache_storage == "f16" else np.float32  # rows as the caches hold them
        for bi in range(b):
            for si in range(s):
                if 0 <= pos[bi, si] < length:
                    kp[bi, :, pos[bi, si]] = k[bi, si].astype(store)
                    vp[bi, :, pos[bi, si]] = v[bi, si].astype(store)
        g = h // kvh
        out = np.zeros((b, s, h, d), np.float32)
        scale = self.scale.value.data
        for bi in range(b):
            for si in range(s):
                n = min(int(pos[bi, si]) + 1, length)
                for hi in range(h):
                    sc = kp[bi, hi // g, :n] @ q[bi, si, hi] * scale
                    p = np.exp(sc - sc.max())
                    out[bi, si, hi] = p @ vp[bi, hi // g, :n] / p.sum()
        return out.reshape(b, s, h * d), kp.astype(store), vp.astype(store)


class CumSumHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

        from adreno_mlir.graph_constants import constant_value
        from adreno_mlir.passes.graph_canonicalize import make_constant

        class FoldConstantCumSum(RewritePattern):
            """A cumulative sum of a constant is evaluated (`CumSumOp.evaluate`)."""

            def match_and_rewrite(self, op, rewriter: PatternRewriter, /):
                if isinstance(op, CumSumOp) and isinstance(op.input.owner, ConstantOp):
                    make_constant(rewriter, op, op.evaluate(constant_value(op.input), **op.params()), "folded")

        return (FoldConstantCumSum(),)


@irdl_op_definition
class CumSumOp(GraphOp):
    """ONNX CumSum along `axis`: element i is the sum of elements 0..i (`exclusive`:
    0..i-1; `reverse`: i..n-1, or i+1..n-1 with both). Added in order, as a serial scan
    (onnxruntime's order too); on float-held integers (a cumulative sum of a mask:
    RoBERTa's position ids) exact below 2**24."""

    name = "graph.cumsum"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    exclusive = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))
    reverse = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))
    traits = traits_def(Pure(), CumSumHasCanonicalizationPatterns())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def params(self) -> dict[str, int]:
        return {"axis": self.axis.value.data, "exclusive": bool(self.exclusive.value.data),
                "reverse": bool(self.reverse.value.data)}

    @staticmethod
    def evaluate(x: np.ndarray, *, axis: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
        """The op on a numpy array (constant folding), summed in the kernel's order."""
        x = np.asarray(x, np.float32)
        if reverse:
            x = np.flip(x, axis)
        y = np.cumsum(x, axis=axis, dtype=np.float32)
        if exclusive:
            y = np.concatenate([np.zeros_like(np.take(y, [0], axis)), np.take(y, range(x.shape[axis] - 1), axis)],
                               axis)
        return np.flip(y, axis) if reverse else y

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        if not 0 <= self.axis.value.data < len(x):
            raise VerifyException(f"'graph.cumsum' axis {self.axis.value.data} out of range for rank {len(x)}")
        _expect_shape(self, shape_of(self.result), x)


# --------------------------------------------------------------------------- matrix products


class GemmHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from adreno_mlir.passes.graph_canonicalize import PretransposeGemmWeight

        return (PretransposeGemmWeight(),)


@irdl_op_definition
class GemmOp(GraphOp):
    """alpha * op(A) @ op(B) + beta * C, ONNX Gemm on 2-D tensors."""

    name = "graph.gemm"
    a = operand_def(AnyTensor)
    b = operand_def(AnyTensor)
    c = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    alpha = prop_def(FloatAttr[Float32Type], default_value=f32_attr(1.0))
    beta = prop_def(FloatAttr[Float32Type], default_value=f32_attr(1.0))
    trans_a = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))
    trans_b = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, 64))
    irdl_options = (AttrSizedOperandSegments(), ParsePropInAttrDict())
    traits = traits_def(Pure(), EpilogueHead(), GemmHasCanonicalizationPatterns())
    assembly_format = (
        "$a `,` $b (`,` $c^)? attr-dict `:` type($a) `,` type($b) (`,` type($c)^)? "
        "`->` type($result)"
    )

    def verify_shapes(self) -> None:
        a, b = shape_of(self.a), shape_of(self.b)
        if len(a) != 2 or len(b) != 2:
            raise VerifyException(f"'graph.gemm' expects 2-D operands, got {list(a)} and {list(b)}")
        m, k = a[::-1] if self.trans_a.value.data else a
        k2, n = b[::-1] if self.trans_b.value.data else b
        if k != k2:
            raise VerifyException(
                f"'graph.gemm' inner dimensions differ: A gives {k}, B gives {k2}"
            )
        if self.c is not None:
            c = shape_of(self.c)
            if broadcast_shapes(c, (m, n)) != (m, n):
                raise VerifyException(
                    f"'graph.gemm' C of shape {list(c)} does not broadcast to [{m}, {n}]"
                )
        _expect_shape(self, shape_of(self.result), (m, n))


QUANT_BITS = (2, 4, 8)
"""`graph.matmul_nbits` widths: those whose values tile a 32-bit word."""


@irdl_op_definition
class MatMulNBitsOp(GraphOp):
    """y[..., n] = sum_k a[..., k] * w[n, k] (+ bias[n]) with W held quantized, as
    com.microsoft MatMulNBits: `bits`-bit unsigned integers q in blocks of `block_size`
    along K, w = (q - zero_point) * scale per (n, block); a quantized matmul stays one op
    (its kernel dequantizes in registers, lowering/kernels/qmatmul.py), never a float W.

    - `packed`: tensor<N x blocks x words, i32>, the blocks as little-endian 32-bit words
      (ORT's uint8 blob read four bytes at a time): value j of a block is bits
      [bits * (j % per_word), ...) of word j // per_word, per_word = 32 / bits.
    - `scales`: tensor<N x blocks, f32>.
    - `zero_points` (optional): tensor<N x blocks, f32> (unpacked at import); without it
      2**(bits - 1), as ORT.
    - `bias` (optional): tensor<N, f32>.
    - `norm_scale` (optional): tensor<K, f32>, with `norm_epsilon`: `a` is RMS-normalized
      first, a * norm_scale / sqrt(mean(a^2 over K) + norm_epsilon) (`fuse-rms-norm` moves a
      decoder's RMS normalization into the products that read it: the kernel sums a's
      squares as it reads a anyway, so the normalization costs no kernel of its own).
    K is `a`'s last extent: blocks = ceil(K / block_size); the values of a last, partial
    block past K are never read."""

    name = "graph.matmul_nbits"
    a = operand_def(AnyTensor)
    packed = operand_def(AnyTensor)
    scales = operand_def(AnyTensor)
    zero_points = opt_operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    norm_scale = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    bits = prop_def(IntegerAttr[I64])
    block_size = prop_def(IntegerAttr[I64])
    norm_epsilon = opt_prop_def(FloatAttr[Float32Type])
    irdl_options = (AttrSizedOperandSegments(), ParsePropInAttrDict())
    traits = traits_def(Pure(), EpilogueHead())
    assembly_format = (
        "$a `,` $packed `,` $scales (`zero_points` $zero_points^)? (`bias` $bias^)? (`norm` $norm_scale^)? attr-dict `:` "
        "type($a) `,` type($packed) `,` type($scales) (`zero_points` type($zero_points)^)? (`bias` type($bias)^)? "
        "(`norm` type($norm_scale)^)? "
        "`->` type($result)"
    )

    @property
    def k(self) -> int:
        return int(shape_of(self.a)[-1])

    @property
    def n(self) -> int:
        return int(shape_of(self.packed)[0])

    @property
    def blocks(self) -> int:
        return int(shape_of(self.packed)[1])

    @property
    def rows(self) -> int:
        """Rows of the product: a's leading extents as one axis."""
        return math.prod(shape_of(self.a)[:-1])

    @property
    def words(self) -> int:
        """32-bit words per block."""
        return self.block_size.value.data * self.bits.value.data // 32

    def verify_shapes(self) -> None:
        bits, bs = self.bits.value.data, self.block_size.value.data
        if bits not in QUANT_BITS:
            raise VerifyException(f"'graph.matmul_nbits' bits must be one of {QUANT_BITS}, got {bits}")
        if bs < 16 or bs & (bs - 1):
            raise VerifyException(f"'graph.matmul_nbits' block_size must be a power of two >= 16, got {bs}")
        for what, v in (("packed", self.packed), ("scales", self.scales), ("zero_points", self.zero_points)):
            if v is not None and isinstance(v.type, TensorType) and v.type.element_type != (
                    i32 if what == "packed" else f32):
                raise VerifyException(f"'graph.matmul_nbits' {what} must be a tensor of "
                                      f"{'i32' if what == 'packed' else 'f32'}, got {v.type}")
        packed = shape_of(self.packed)
        if len(packed) != 3 or packed[2] != self.words:
            raise VerifyException(f"'graph.matmul_nbits' packed must be [N, blocks, {self.words}] (block_size "
                                  f"{bs} x {bits} bits in 32-bit words), got {list(packed)}")
        n, blocks = packed[0], packed[1]
        a = shape_of(self.a)
        if not a:
            raise VerifyException("'graph.matmul_nbits' a must have rank >= 1")
        if -(-a[-1] // bs) != blocks:
            raise VerifyException(f"'graph.matmul_nbits' K = {a[-1]} needs {-(-a[-1] // bs)} blocks of {bs}, "
                                  f"packed has {blocks}")
        for what, v in (("scales", self.scales), ("zero_points", self.zero_points)):
            if v is not None and tuple(shape_of(v)) != (n, blocks):
                raise VerifyException(f"'graph.matmul_nbits' {what} must be [{n}, {blocks}], got {list(shape_of(v))}")
        if self.bias is not None and tuple(shape_of(self.bias)) != (n,):
            raise VerifyException(f"'graph.matmul_nbits' bias must be [{n}], got {list(shape_of(self.bias))}")
        if (self.norm_scale is None) != (self.norm_epsilon is None):
            raise VerifyException("'graph.matmul_nbits' norm_scale and norm_epsilon go together (the RMS normalization "
                                  "of a)")
        if self.norm_scale is not None and tuple(shape_of(self.norm_scale)) != (a[-1],):
            raise VerifyException(f"'graph.matmul_nbits' norm_scale must be [K = {a[-1]}], got "
                                  f"{list(shape_of(self.norm_scale))}")
        _expect_shape(self, shape_of(self.result), (*a[:-1], n))

    @staticmethod
    def unpack(packed: np.ndarray, bits: int, k: int) -> np.ndarray:
        """The integers of `packed` ([N, blocks, words] int32) as [N, K] (reference)."""
        words = np.ascontiguousarray(packed).view(np.uint32)
        per = 32 // bits
        shifts = (np.arange(per, dtype=np.uint32) * bits)
        q = (words[..., None] >> shifts) & np.uint32((1 << bits) - 1)
        return q.reshape(packed.shape[0], -1)[:, :k].astype(np.float32)

    @classmethod
    def evaluate(cls, a: np.ndarray, packed: np.ndarray, scales: np.ndarray, zero_points: np.ndarray | None,
                 bias: np.ndarray | None, *, bits: int, block_size: int, norm_scale: np.ndarray | None = None,
                 norm_epsilon: float = 0.0) -> np.ndarray:
        """numpy reference: (RMS-normalize a,) dequantize W and multiply."""
        k = a.shape[-1]
        if norm_scale is not None:
            a = a / np.sqrt(np.mean(np.square(a), axis=-1, keepdims=True) + norm_epsilon) * norm_scale
        q = cls.unpack(packed, bits, k)
        zp = zero_points if zero_points is not None else np.full(scales.shape, 2.0 ** (bits - 1), np.float32)
        w = (q - np.repeat(zp, block_size, axis=1)[:, :k]) * np.repeat(scales, block_size, axis=1)[:, :k]
        y = a @ w.T
        return y + bias if bias is not None else y


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    if len(a) < 1 or len(b) < 1:
        raise VerifyException("'graph.matmul' operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise VerifyException(
            f"'graph.matmul' inner dimensions differ: {list(a)} @ {list(b)}"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


@irdl_op_definition
class MatMulOp(GraphOp):
    """ONNX MatMul (numpy matmul semantics). `lhs_perm` / `rhs_perm` (absent: identity)
    say the operand is read as `transpose(operand, perm)`: the operand is the tensor as
    stored, and the kernel reads it through permuted strides instead of a transpose
    kernel copying it first (graph-canonicalize's FoldTransposeIntoMatMul sets them)."""

    name = "graph.matmul"
    lhs = operand_def(AnyTensor)
    rhs = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    lhs_perm = opt_prop_def(DenseArrayBase)
    rhs_perm = opt_prop_def(DenseArrayBase)
    traits = traits_def(Pure(), EpilogueHead(), MatMulHasCanonicalizationPatterns())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def lhs_permutation(self) -> tuple[int, ...]:
        return ints(self.lhs_perm) if self.lhs_perm is not None else tuple(range(len(shape_of(self.lhs))))

    def rhs_permutation(self) -> tuple[int, ...]:
        return ints(self.rhs_perm) if self.rhs_perm is not None else tuple(range(len(shape_of(self.rhs))))

    def lhs_shape(self) -> tuple[int, ...]:
        """The shape of the left operand as the product reads it (after `lhs_perm`)."""
        s = shape_of(self.lhs)
        return tuple(s[p] for p in self.lhs_permutation())

    def rhs_shape(self) -> tuple[int, ...]:
        """The shape of the right operand as the product reads it (after `rhs_perm`)."""
        s = shape_of(self.rhs)
        return tuple(s[p] for p in self.rhs_permutation())

    def verify_shapes(self) -> None:
        for side, perm, value in (("lhs", self.lhs_perm, self.lhs), ("rhs", self.rhs_perm, self.rhs)):
            rank = len(shape_of(value))
            if perm is not None and sorted(ints(perm)) != list(range(rank)):
                raise VerifyException(
                    f"'graph.matmul' {side}_perm {list(ints(perm))} is not a permutation of 0..{rank - 1} "
                    f"(the {side} operand has rank {rank})")
        _expect_shape(self, shape_of(self.result), matmul_shape(self.lhs_shape(), self.rhs_shape()))


@irdl_op_definition
class AttentionOp(GraphOp):
    """softmax(scale * (Q @ K) + bias, axis=-1) @ V as one op (`fuse-attention` forms it
    from the MatMul -> scale -> add -> Softmax -> MatMul chain), so the [..., M, L] score
    matrix never reaches global memory: one kernel keeps each query row's scores in local
    memory. Q is read as [..., M, D], K as [..., D, L] (the first product's right operand,
    i.e. already the keys transposed), V as [..., L, Dv]; `q_perm` / `k_perm` / `v_perm`
    (absent: identity) read an operand as `transpose(stored, perm)`, as graph.matmul's
    perms do. Batch axes broadcast as numpy's matmul; `bias` (optional) broadcasts to the
    scores' shape [..., M, L] without widening it.

    `q_view` / `k_view` / `v_view` (optional, `array<i64: offset, d0.., s0..>`): the
    operand is not the stored tensor itself but a strided view of it, of shape `d` (what
    the perm then applies to), element `i` at `offset + sum(i * s)` of the operand's
    elements. fuse-attention writes them where Q, K and V are slices, transposes and
    reshapes of one projection (PyTorch's packed in_proj: reshape, transpose, select 0 /
    1 / 2): the kernel reads the projection directly and those copies disappear.
    `out_perm` (optional): the result is stored as `transpose(softmax(..) @ V, out_perm)`
    (the heads put back in token order, [B, H, M, Dv] -> [M, B, H, Dv], as the output
    projection reads them), written so by the kernel instead of a transpose kernel."""

    name = "graph.attention"
    q = operand_def(AnyTensor)
    k = operand_def(AnyTensor)
    v = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    scale = prop_def(FloatAttr[Float32Type], default_value=f32_attr(1.0))
    q_perm = opt_prop_def(DenseArrayBase)
    k_perm = opt_prop_def(DenseArrayBase)
    v_perm = opt_prop_def(DenseArrayBase)
    q_view = opt_prop_def(DenseArrayBase)
    k_view = opt_prop_def(DenseArrayBase)
    v_view = opt_prop_def(DenseArrayBase)
    out_perm = opt_prop_def(DenseArrayBase)
    traits = traits_def(Pure())
    assembly_format = (
        "$q `,` $k `,` $v (`,` $bias^)? attr-dict `:` type($q) `,` type($k) `,` type($v) (`,` type($bias)^)? "
        "`->` type($result)"
    )

    def view(self, which: str) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
        """(offset, shape, element strides) of operand `which`'s view, None without one."""
        view = getattr(self, f"{which}_view")
        if view is None:
            return None
        v = ints(view)
        rank = (len(v) - 1) // 2
        return v[0], tuple(v[1:1 + rank]), tuple(v[1 + rank:])

    def stored_shape(self, which: str) -> tuple[int, ...]:
        """The shape the perm of operand `which` applies to: its view's, else the operand's."""
        view = self.view(which)
        return view[1] if view is not None else shape_of(getattr(self, which))

    def permutation(self, which: str) -> tuple[int, ...]:
        """`q_perm` / `k_perm` / `v_perm`, the identity when absent."""
        perm = getattr(self, f"{which}_perm")
        return ints(perm) if perm is not None else tuple(range(len(self.stored_shape(which))))

    def read_shape(self, which: str) -> tuple[int, ...]:
        """The shape of operand `which` ("q", "k" or "v") as the products read it (after its perm)."""
        s = self.stored_shape(which)
        return tuple(s[p] for p in self.permutation(which))

    def scores_shape(self) -> tuple[int, ...]:
        """[..., M, L]: the shape of scale * (Q @ K) (+ bias)."""
        return matmul_shape(self.read_shape("q"), self.read_shape("k"))

    def product_shape(self) -> tuple[int, ...]:
        """[..., M, Dv]: the shape of softmax(..) @ V, before `out_perm`."""
        return matmul_shape(self.scores_shape(), self.read_shape("v"))

    def verify_shapes(self) -> None:
        for which in ("q", "k", "v"):
            raw = getattr(self, f"{which}_view")
            if raw is not None:
                v = ints(raw)
                if len(v) < 3 or len(v) % 2 == 0:
                    raise VerifyException(f"'graph.attention' {which}_view must be [offset, dims..., strides...], "
                                          f"got {list(v)}")
                offset, dims, strides = self.view(which)
                if offset < 0 or min(dims) < 1 or min(strides) < 0:
                    raise VerifyException(f"'graph.attention' {which}_view {list(v)} needs an offset >= 0, dims >= 1 "
                                          "and strides >= 0")
                last = offset + sum((d - 1) * st for d, st in zip(dims, strides))
                size = math.prod(shape_of(getattr(self, which)))
                if last >= size:
                    raise VerifyException(f"'graph.attention' {which}_view {list(v)} reads element {last} of an "
                                          f"operand of {size}")
            rank = len(self.stored_shape(which))
            perm = getattr(self, f"{which}_perm")
            if perm is not None and sorted(ints(perm)) != list(range(rank)):
                raise VerifyException(
                    f"'graph.attention' {which}_perm {list(ints(perm))} is not a permutation of 0..{rank - 1} "
                    f"(the {which} operand has rank {rank})")
            if rank < 2:
                raise VerifyException(f"'graph.attention' {which} must have rank >= 2, got rank {rank}")
        q, k, v = self.read_shape("q"), self.read_shape("k"), self.read_shape("v")
        if q[-1] != k[-2]:
            raise VerifyException(
                f"'graph.attention' Q [..., M, D] = {list(q)} and K [..., D, L] = {list(k)} differ in D")
        if k[-1] != v[-2]:
            raise VerifyException(
                f"'graph.attention' K [..., D, L] = {list(k)} and V [..., L, Dv] = {list(v)} differ in L")
        scores = self.scores_shape()
        if self.bias is not None:
            b = shape_of(self.bias)
            try:
                widened = broadcast_shapes(b, scores)
            except VerifyException:
                widened = None
            if len(b) > len(scores) or widened != scores:
                raise VerifyException(
                    f"'graph.attention' bias of shape {list(b)} does not broadcast to the scores' shape "
                    f"{list(scores)}")
        product = matmul_shape(scores, v)
        if self.out_perm is not None:
            perm = ints(self.out_perm)
            if sorted(perm) != list(range(len(product))):
                raise VerifyException(f"'graph.attention' out_perm {list(perm)} is not a permutation of "
                                      f"0..{len(product) - 1} (the product has rank {len(product)})")
            product = tuple(product[p] for p in perm)
        _expect_shape(self, shape_of(self.result), product)


# --------------------------------------------------------------------------- kernels in IR


@irdl_op_definition
class FusedOp(IRDLOperation):
    """Ops computed by one kernel: a head (a convolution, gemm, pool, reduction, resize,
    Winograd output transform, or an element-wise op) and the element-wise ops fused
    after it, ending in `graph.yield`. `graph-fuse` forms these regions; the lowering
    turns each into exactly one kernel (two with split-K) and never fuses by itself.

    The region is not isolated from above: the ops inside read outside values (weights,
    residual inputs) directly, as IREE's `flow.dispatch.region` does. Values defined
    inside are private to the kernel; only the yielded value is materialised. Every
    kernel is one (a lone op gets a region of one op), and its `kernel_config` (from
    `select-kernel-config`, checked by the verifier against its kernel family) and
    plan-memory's `storage` sit on this op.

    A second result, `partials`, is the region's `graph.pool_partials` of the value it
    computes (`fuse-pool-partials`): the kernel that writes the value also writes its
    per-tile means, so a squeeze-excite block's global average pool needs no kernel of
    its own. The region then yields two values, the stored one and the partials.

    With the unit attribute `on_load` (`fuse-depthwise-load`) the region has no kernel
    and no storage: it is a depthwise convolution (and its element-wise activation)
    whose one reader, a groups-1 1x1 convolution, computes each pixel of it as it loads
    that pixel. Delete the attribute to give the region a kernel of its own again.
    """

    name = "graph.fused"
    result = result_def(AnyTensor)
    partials = opt_result_def(AnyTensor)
    on_load = opt_attr_def(UnitAttr)
    body = region_def("single_block")
    assembly_format = "attr-dict `->` type($result) (`,` type($partials)^)? $body"

    def __init__(self, result_type: Attribute, body: Region, partials_type: Attribute | None = None):
        super().__init__(result_types=[result_type, [] if partials_type is None else [partials_type]],
                         regions=[body])

    @staticmethod
    def wrap(chain: Sequence[Operation], rewriter) -> FusedOp:
        """Move `chain` (a head and its element-wise tail, in program order, one block) into
        a new region placed where its last op stood, which takes over the last op's value,
        location and name; a `kernel_config` written on the head and a `storage` on the last
        op (plan-memory's) move to the region: they describe its kernel. graph-fuse forms every kernel's region with this, and the
        passes that make a new kernel after it (split-k's partial sums) too."""
        from xdsl.rewriter import InsertPoint

        last = chain[-1]
        block = Block()
        fused = FusedOp(last.results[0].type, Region(block))
        fused.location = last.location
        rewriter.insert(fused, InsertPoint.after(last))
        last.results[0].replace_all_uses_with(fused.result)
        for o in chain:
            o.detach()
            block.add_op(o)
        block.add_op(YieldOp(last.results[0]))
        fused.result.name_hint = last.results[0].name_hint
        for kernel_attr, op in (("kernel_config", chain[0]), ("storage", last)):
            value = op.attributes.pop(kernel_attr, None)
            if value is not None:
                fused.attributes[kernel_attr] = value
        return fused

    @property
    def ops(self) -> list[Operation]:
        """The fused ops in order, without the terminator and the `graph.pool_partials`
        that rides along: `ops[0]` is the head, the rest its element-wise tail."""
        return [o for o in self.body.block.ops if not isinstance(o, (YieldOp, PoolPartialsOp))]

    @property
    def pool_partials(self) -> PoolPartialsOp | None:
        """The region's `graph.pool_partials`, if it has one."""
        return next((o for o in self.body.block.ops if isinstance(o, PoolPartialsOp)), None)

    @property
    def head(self) -> Operation:
        return self.ops[0]

    @property
    def yielded(self) -> SSAValue:
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last.values[0]

    def tail_reads_only_region(self) -> bool:
        """Whether the element-wise tail reads nothing from outside the region (an
        activation such as ReLU, hard-swish or x * sigmoid(x), not a residual add)."""
        inside = set(self.ops)
        return all(v.owner in inside for o in self.ops[1:] for v in o.operands)

    def outside_reads(self) -> list[SSAValue]:
        """The values from outside the region that its ops read, in first-use order."""
        inside = set(self.body.block.ops)
        reads: list[SSAValue] = []
        for o in self.body.block.ops:
            reads += [v for v in o.operands if v.owner not in inside and v not in reads]
        return reads

    def verify_(self) -> None:
        last = self.body.block.last_op
        count = 1 if self.partials is None else 2
        if not isinstance(last, YieldOp) or len(last.values) != count:
            raise VerifyException(f"'graph.fused' body must end in 'graph.yield' of {count} value"
                                  + ("s (the result and its pool partials)" if count == 2 else ""))
        if last.values[0].type != self.result.type:
            raise VerifyException(
                f"'graph.fused' yields {last.values[0].type} but its result is {self.result.type}")
        pool = self.pool_partials
        if count == 2:
            if pool is None or last.values[1] is not pool.result or pool.input is not last.values[0]:
                raise VerifyException("'graph.fused' with partials must yield, second, the graph.pool_partials "
                                      "of the value it yields first")
            if pool.result.type != self.partials.type:
                raise VerifyException(
                    f"'graph.fused' partials are {self.partials.type} but the region yields {pool.result.type}")
            head = self.ops[0] if self.ops else None
            if not (isinstance(head, Conv2dOp) and head.groups.value.data > 1
                    and shape_of(head.input)[1] == head.groups.value.data):
                raise VerifyException("'graph.fused' with partials must be headed by a depthwise graph.conv2d "
                                      "(the only kernel that writes graph.pool_partials)")
        elif pool is not None:
            raise VerifyException("'graph.fused' holds a graph.pool_partials but has no partials result")
        if self.on_load is not None and (count == 2 or not self.ops or not is_depthwise_load(self.ops[0])
                                         or not self.tail_reads_only_region()):
            raise VerifyException(
                "'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors (one output channel "
                "per input channel) and element-wise ops that read only values of the region, with no partials: "
                "its reader computes it pixel by pixel")
        ops = self.ops
        if len(ops) < 1:
            raise VerifyException("'graph.fused' needs at least one op before its yield")
        if last.values[0].owner is not ops[-1] or len(ops[-1].results) != 1:
            raise VerifyException("'graph.fused' must yield the result of its last op (the kernel stores that value)")
        head = ops[0]
        if len(ops) > 1 and not (is_epilogue_head(head) or is_elementwise(head)):
            raise VerifyException(f"'graph.fused' head '{head.name}' cannot take a fused element-wise epilogue")
        shape = shape_of(self.result)
        for o in ops[1:]:
            if not is_elementwise(o):
                raise VerifyException(
                    f"'graph.fused' may hold one head op followed by element-wise ops only; '{o.name}' is not "
                    "element-wise (give it a region of its own)")
            if shape_of(o.results[0]) != shape:
                raise VerifyException(
                    f"'graph.fused' element-wise op '{o.name}' has shape {list(shape_of(o.results[0]))}, not the "
                    f"region's {list(shape)}: an epilogue runs once per output element of its head")
        if len(ops) > 1 and not is_elementwise(head) and shape_of(head.results[0]) != shape:
            raise VerifyException(
                f"'graph.fused' head '{head.name}' has shape {list(shape_of(head.results[0]))}, not the region's "
                f"{list(shape)}")
        for o in self.ops:
            if not o.name.startswith(("graph.", "texture.")) or isinstance(o, (FusedOp, ConstantOp)):
                raise VerifyException(f"'graph.fused' cannot hold '{o.name}' (graph/texture compute ops only)")
            for r in o.results:
                if r is last.values[0]:
                    continue
                for use in r.uses:
                    if use.operation.parent_op() is not self:
                        raise VerifyException(
                            f"'graph.fused': the result of '{o.name}' is used outside the region; "
                            "only the yielded value may leave it")
        if "kernel_config" in self.attributes:
            verify_kernel_config(self)


def is_depthwise_load(op: Operation | None) -> bool:
    """Whether `op` is a depthwise convolution that a `graph.fused {on_load}` region can
    hold: one output channel per input channel (groups = C), on NCHW4c tensors."""
    return (isinstance(op, Conv2dOp) and isinstance(op.result.type, TextureTensorType)
            and op.groups.value.data > 1 and shape_of(op.input)[1] == op.groups.value.data
            and shape_of(op.result)[1] == op.groups.value.data)


def reads_on_load(conv: Operation) -> bool:
    """Whether `conv` can read a `graph.fused {on_load}` region's value, computing each
    pixel as it loads it: a groups-1 1x1 convolution (direct or split-K) with stride 1
    and no padding, whose every load is one pixel of its input."""
    return SumPartialsOp.readable_by(conv)


def loaded_by_reader(op: Operation) -> bool:
    """The op has no kernel: its reader computes its value as it loads it (the
    `LoadedByReader` trait, or a `graph.fused {on_load}` region)."""
    return op.has_trait(LoadedByReader) or (isinstance(op, FusedOp) and op.on_load is not None)


def on_load_region(value: SSAValue) -> FusedOp | None:
    """The `graph.fused {on_load}` region whose value `value` is (fuse-depthwise-load), or None."""
    owner = value.owner
    return owner if isinstance(owner, FusedOp) and owner.on_load is not None else None


def kernel_op(op: Operation) -> Operation:
    """The op that is the kernel `op` belongs to (and carries its `kernel_config`): the
    enclosing `graph.fused`, else `op` itself."""
    parent = op.parent_op()
    return parent if isinstance(parent, FusedOp) else op


def head_of(op: Operation) -> Operation:
    """The op that decides a kernel's family: a region's head, else the op."""
    return op.head if isinstance(op, FusedOp) else op


def is_packed_value(value: SSAValue) -> bool:
    """Whether `value` is an NCHW4c `!texture.tensor` (the texture level)."""
    return isinstance(value.type, TextureTensorType)


def is_kernel(op: Operation) -> bool:
    """Whether `op`, an op of a function body, becomes a kernel of its own: the one answer
    select-kernel-config, the tuner, analyze and the lowering share. Not kernels: constants,
    views (reshape), terminators, ops (and on_load regions) their reader computes as it
    loads them, the members of a `graph.fused` region (the region is the kernel), and the
    packing of a constant (done at compile time)."""
    from adreno_mlir.dialects import texture

    if isinstance(op, (ConstantOp, ReshapeOp, YieldOp)) or loaded_by_reader(op):
        return False
    if isinstance(op, FusedOp):
        return True
    if isinstance(op.parent_op(), FusedOp):
        return False
    if isinstance(op, texture.PackOp) and isinstance(op.input.owner, ConstantOp):
        return False
    return op.name.startswith(("graph.", "texture."))


def kernel_reads(op: Operation) -> list[SSAValue]:
    """The values the kernel of `op` (its region, or an op not in one yet) reads, each once in
    first-use order. Values without a kernel of their own are read through: the kernel
    loads their operands (a fused region's outside values) instead."""
    reads = op.outside_reads() if isinstance(op, FusedOp) else list(op.operands)
    out: dict[SSAValue, None] = {}
    for v in reads:
        through = isinstance(v.owner, Operation) and loaded_by_reader(v.owner)
        out.update(dict.fromkeys(kernel_reads(v.owner) if through else (v,)))
    return list(out)


@irdl_op_definition
class PoolPartialsOp(GraphOp):
    """Per-tile means of an NCHW4c tensor x (N, C, H, W), written by the kernel that
    computes x (inside its `graph.fused` region, yielded as the region's `partials`):
    result[n, c, t, 0] = sum of x[n, c] over the t-th run of `ceil(H*W / tiles)` pixels
    (row-major), divided by H*W. So the tiles add up to x's mean over H and W, and a
    kernel that needs that mean (`graph.sum_partials`) reads `tiles` values per channel
    instead of a pool kernel reading H*W. One work-group per tile and channel block sums
    in local memory; `tiles` is chosen by `fuse-pool-partials` to give the GPU enough
    work-groups."""

    name = "graph.pool_partials"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    tiles = prop_def(IntegerAttr[I64])
    traits = lazy_traits_def(lambda: (Pure(), HasParent(FusedOp)))
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_shapes(self) -> None:
        x = shape_of(self.input)
        if not isinstance(self.input.type, TextureTensorType) or len(x) != 4:
            raise VerifyException("'graph.pool_partials' reads an NCHW4c texture tensor")
        tiles = self.tiles.value.data
        if not 1 <= tiles <= x[2] * x[3]:
            raise VerifyException(f"'graph.pool_partials' tiles must be in 1..{x[2] * x[3]} (the pixels), got {tiles}")
        _expect_shape(self, shape_of(self.result), (x[0], x[1], tiles, 1))
        t = self.result.type
        if not isinstance(t, TextureTensorType) or t.is_image or t.element != f32:
            raise VerifyException("'graph.pool_partials' result must be an f32 NCHW4c tensor in a global buffer")


@irdl_op_definition
class SumPartialsOp(GraphOp):
    """The mean over H and W that `graph.pool_partials` tiles add up to: result[n, c, 0, 0]
    = the sum over t of partials[n, c, t, 0]. No kernel computes it: the convolution
    that reads it (a 1x1 conv on the 1x1 mean, a squeeze-excite block's first FC) adds
    the tiles as it loads its input. `fuse-pool-partials` puts it where a
    `graph.global_avg_pool` was."""

    name = "graph.sum_partials"
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), LoadedByReader())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @staticmethod
    def readable_by(conv: Operation) -> bool:
        """Whether `conv` can read a sum of tiles as its input: a groups-1 1x1 convolution
        (direct or split-K) with stride 1 and no padding, which is what a squeeze-excite
        block's first FC is."""
        groups = getattr(conv, "groups", None)
        return (isinstance(conv, (Conv2dOp, Conv2dSplitKOp)) and tuple(weight_shape(conv.weight)[2:]) == (1, 1)
                and ints(conv.strides) == (1, 1) and not any(ints(conv.pads))
                and (groups is None or groups.value.data == 1))

    def verify_shapes(self) -> None:
        p = shape_of(self.input)
        if len(p) != 4 or p[3] != 1:
            raise VerifyException("'graph.sum_partials' reads graph.pool_partials tiles (N x C x tiles x 1)")
        _expect_shape(self, shape_of(self.result), (p[0], p[1], 1, 1))


@irdl_op_definition
class ScaleChannelsOp(GraphOp):
    """x (N, C, H, W) times a per-channel scale (N or 1, C, 1, 1): a squeeze-excite
    block's output, `graph.mul` of the two with the scale broadcast over H and W. No
    kernel computes it: the convolution that reads it (`fuse-channel-scale`) multiplies
    each input pixel it loads by the scale of its channel block, so the scaled tensor is
    never written to memory."""

    name = "graph.scale_channels"
    input = operand_def(AnyTensor)
    scale = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), LoadedByReader())
    assembly_format = "$input `,` $scale attr-dict `:` type($input) `,` type($scale) `->` type($result)"

    def verify_shapes(self) -> None:
        x, s = shape_of(self.input), shape_of(self.scale)
        if len(x) != 4 or len(s) != 4 or s[1] != x[1] or s[2:] != (1, 1) or s[0] not in (1, x[0]):
            raise VerifyException(f"'graph.scale_channels' scale must have shape [1 or {x[0] if x else 'N'}, "
                                  f"{x[1] if len(x) > 1 else 'C'}, 1, 1] for input {list(x)}, got {list(s)}")
        _expect_shape(self, shape_of(self.result), x)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The value a `graph.fused` region computes."""

    name = "graph.yield"
    values = var_operand_def(AnyTensor)
    assembly_format = "$values attr-dict `:` type($values)"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusedOp)))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class Conv2dSplitKOp(GraphOp):
    """The partial sums of a split-K convolution (NCHW4c only): input channel blocks are
    cut into `parts` ranges, each summed by its own work-items into
    `result[part * N + n]` (no bias). `graph.split_k_sum` adds the parts. The `split-k`
    pass creates this pair from a convolution whose `kernel_config` asks for
    asks for split-K: late 7x7 layers otherwise launch too few work-items to fill a GPU."""

    name = "graph.conv2d_split_k"
    input = operand_def(AnyTensor)
    weight = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    parts = prop_def(IntegerAttr[I64])
    strides = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))
    pads = prop_def(DenseArrayBase, default_value=i64_array([0, 0, 0, 0]))
    dilations = prop_def(DenseArrayBase, default_value=i64_array([1, 1]))
    traits = traits_def(Pure())
    assembly_format = "$input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)"

    def verify_shapes(self) -> None:
        x, w = shape_of(self.input), weight_shape(self.weight)
        if not isinstance(self.input.type, TextureTensorType) or len(x) != 4:
            raise VerifyException("'graph.conv2d_split_k' reads an NCHW4c texture tensor")
        parts = self.parts.value.data
        if parts < 2:
            raise VerifyException(f"'graph.conv2d_split_k' parts must be >= 2, got {parts}")
        out = conv_out_shape(x, w, ints(self.strides), ints(self.pads), ints(self.dilations))
        _expect_shape(self, shape_of(self.result), (parts * out[0], *out[1:]))


@irdl_op_definition
class SplitKSumOp(GraphOp):
    """Adds the `parts` partial sums of `graph.conv2d_split_k` (and the bias): the head
    of the kernel that also runs the convolution's fused epilogue."""

    name = "graph.split_k_sum"
    partial = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    parts = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), EpilogueHead())
    assembly_format = (
        "$partial (`,` $bias^)? attr-dict `:` type($partial) (`,` type($bias)^)? `->` type($result)"
    )

    def verify_shapes(self) -> None:
        p, out = shape_of(self.partial), shape_of(self.result)
        parts = self.parts.value.data
        _expect_shape(self, out, (p[0] // max(parts, 1), *p[1:]))
        if p[0] % max(parts, 1):
            raise VerifyException(f"'graph.split_k_sum' partial batch {p[0]} is not a multiple of parts {parts}")
        if self.bias is not None and shape_of(self.bias) != (out[1],):
            raise VerifyException(f"'graph.split_k_sum' bias must have shape [{out[1]}]")


UNARY_OPS = (
    ReluOp, SigmoidOp, TanhOp, ExpOp, NegOp, AbsOp, SqrtOp, ErfOp, HardSwishOp, HardSigmoidOp,
    LeakyReluOp, ClipOp, LogOp, ReciprocalOp, PowOp, GeluOp, EluOp, IsNaNOp, IsInfOp, NotOp, ToBoolOp, TruncOp,
)
BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowTensorOp, PReluOp, EqualOp, LessOp, LessOrEqualOp,
              GreaterOp, GreaterOrEqualOp, AndOp, OrOp, XorOp, IntDivOp, IntModOp, IntFmodOp)
TERNARY_OPS = (WhereOp,)

ELEMENTWISE_BY_KIND: dict[str, type[UnaryOp] | type[BinaryOp] | type[TernaryOp]] = {
    op.KIND: op for op in (*UNARY_OPS, *BINARY_OPS, *TERNARY_OPS)
}
"""The element-wise op class of each expression kind (`Un(kind, ...)`, `Bin(kind, ...)`,
`Tern(kind, ...)`)."""


def elementwise_expr(op: Operation) -> tuple[str, tuple[float, ...]]:
    """(kind, params) of an element-wise op: what `lowering.expr.Un`/`Bin`/`Tern` record of it."""
    assert isinstance(op, UnaryOp | BinaryOp | TernaryOp), op.name
    return op.kind, op.expr_params()

Graph = Dialect(
    "graph",
    [
        ConstantOp,
        *UNARY_OPS,
        *BINARY_OPS,
        *TERNARY_OPS,
        Conv2dOp,
        ConvTranspose2dOp,
        BatchNormOp,
        MaxPoolOp,
        AvgPoolOp,
        GlobalAvgPoolOp,
        *REDUCE_OPS,
        ReshapeOp,
        TransposeOp,
        ConcatOp,
        SliceOp,
        PadOp,
        ExpandOp,
        ResizeOp,
        SoftmaxOp,
        LogSoftmaxOp,
        LayerNormOp,
        ChannelNormOp,
        GatherOp,
        TakeOp,
        IntToFloatOp,
        GroupQueryAttentionOp,
        CumSumOp,
        GemmOp,
        MatMulNBitsOp,
        MatMulOp,
        AttentionOp,
        FusedOp,
        YieldOp,
        Conv2dSplitKOp,
        SplitKSumOp,
        PoolPartialsOp,
        SumPartialsOp,
        ScaleChannelsOp,
    ],
    [],
)
