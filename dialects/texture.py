"""The `texture` dialect: where tensors live and how they are laid out.

This is the memory-level vocabulary of adreno-mlir (level 2 of the three IR levels, see
shared/design/ir-levels.md). It follows the design of Apache TVM's Adreno texture work
(`annotate_texture_storage`, the `texture*` storage scopes).

Why textures
------------
On Adreno GPUs the L1 cache only caches reads through the texture path: `read_imagef` on an
`image2d_t` is cached, plain `__global` buffer loads are not. An activation that is read many
times (every conv input pixel is read by K*K*O/4 work items) is therefore much faster in an
image. TVM reports 147.6 vs 115.4 GFLOP/s (VGG 3x3) for texture reads versus shared-memory
reads. An image pixel is RGBA, i.e. 4 values, so tensors are packed so that their last
dimension is 4 (a block of 4 channels), and the packed 5-D tensor is folded onto a 2-D image.

Layouts (`#texture.layout<...>`)
--------------------------------
Logical shapes are NCHW for activations and OIHW for weights. ``packed_shape`` maps them:

  nchw   [N,C,H,W]        -> [N, C, H, W]              (unpacked, identity)
  nhwc   [N,C,H,W]        -> [N, H, W, C]              (unpacked)
  nchw4c [N,C,H,W]        -> [N, ceil(C/4), H, W, 4]
  nhwc4c [N,C,H,W]        -> [N, H, W, ceil(C/4), 4]
  oihw   [O,I,H,W]        -> [O, I, H, W]              (unpacked, identity)
  oihw4o [O,I,H,W]        -> [ceil(O/4), I, H, W, 4]
  hwio4o [O,I,H,W]        -> [H, W, I, ceil(O/4), 4]   (Winograd-transformed weights)

Channels that are not a multiple of 4 are zero-padded when packing (as TVM does for the input
channels of the first conv, e.g. RGB 3 -> 4).

Memory scopes (`#texture.scope<...>`) and image extents
------------------------------------------------------
A packed 5-D tensor [d0, d1, d2, d3, 4] maps onto a width x height RGBA image:

  global          a plain `__global` buffer; no image
  texture         height = d0*d1*d2, width = d3          (NCHW4c: height = N*C4*H, width = W)
  texture-nhwc    height = d0*d1,    width = d2*d3       (NCHW4c: height = N*C4, width = H*W)
  texture-weight  height = d0,       width = d1*d2*d3    (OIHW4o: height = O4, width = I*H*W)

These are TVM's scope mappings (the axis separators of its `texture`, `texture-nhwc` and
`texture-weight` storage scopes). Which mapping is used, and whether a tensor goes to an image
at all (images are limited to 16384 per side on Adreno, see adreno_mlir/target.py), is decided
by the annotate-texture-scope pass; this dialect only checks that a type is self-consistent.

Types and ops
-------------
  !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>>
  !texture.tensor<1x16x112x112x4xf32, nchw4c, global>

  texture.pack %t : tensor<1x3x224x224xf32> -> !texture.tensor<1x1x224x224x4xf32, nchw4c, ...>
  texture.unpack %p : !texture.tensor<...> -> tensor<1x3x224x224xf32>
  texture.alloc : !texture.tensor<...>
  texture.pack_weights %w : tensor<64x3x7x7xf32> -> tensor<16x3x7x7x4xf32>
                        {layout = #texture.layout<oihw4o>}
  texture.cast_scope %x : !texture.tensor<..., global> -> !texture.tensor<..., #texture.image<...>>

Element types are f32 or f16 (fp16 storage: pack may convert f32 -> f16, unpack f16 -> f32).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f16,
    f32,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import MemoryAllocEffect, Pure
from xdsl.utils.exceptions import VerifyException

from adreno_mlir.dialects.traits import EpilogueHead, ImageOperands

# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------

#: All layout names, in the order they are documented.
LAYOUTS: tuple[str, ...] = ("nchw", "nhwc", "nchw4c", "nhwc4c", "oihw", "oihw4o", "hwio4o")
#: Layouts whose last dimension is the 4-wide RGBA block.
PACKED_LAYOUTS: frozenset[str] = frozenset({"nchw4c", "nhwc4c", "oihw4o", "hwio4o"})
#: Weight layouts (logical shape OIHW).
WEIGHT_LAYOUTS: frozenset[str] = frozenset({"oihw", "oihw4o", "hwio4o"})

#: All memory scope names.
SCOPES: tuple[str, ...] = ("global", "texture", "texture-nhwc", "texture-weight")
#: Scopes that live in a 2-D image.
IMAGE_SCOPES: frozenset[str] = frozenset({"texture", "texture-nhwc", "texture-weight"})

#: Channels per image pixel (RGBA).
BLOCK = 4


def _ceil4(x: int) -> int:
    return (x + BLOCK - 1) // BLOCK


def packed_shape(layout: str | LayoutAttr, logical_shape: Sequence[int]) -> tuple[int, ...]:
    """Shape of a 4-D logical tensor (NCHW activations, OIHW weights) stored in `layout`.

    >>> packed_shape("nchw4c", [1, 3, 224, 224])
    (1, 1, 224, 224, 4)
    >>> packed_shape("oihw4o", [64, 3, 7, 7])
    (16, 3, 7, 7, 4)
    """
    name = layout.layout_name if isinstance(layout, LayoutAttr) else layout
    if name not in LAYOUTS:
        raise ValueError(f"unknown layout '{name}', expected one of {', '.join(LAYOUTS)}")
    if len(logical_shape) != 4:
        raise ValueError(f"expected a 4-D logical shape, got {list(logical_shape)}")
    a, b, h, w = (int(d) for d in logical_shape)
    match name:
        case "nchw" | "oihw":
            return (a, b, h, w)
        case "nhwc":
            return (a, h, w, b)
        case "nchw4c":
            return (a, _ceil4(b), h, w, BLOCK)
        case "nhwc4c":
            return (a, h, w, _ceil4(b), BLOCK)
        case "oihw4o":
            return (_ceil4(a), b, h, w, BLOCK)
        case "hwio4o":
            return (h, w, b, _ceil4(a), BLOCK)
    raise AssertionError(name)  # pragma: no cover


def packed_rank(layout: str) -> int:
    """Rank of a tensor stored in `layout` (5 for packed layouts, 4 otherwise)."""
    return 5 if layout in PACKED_LAYOUTS else 4


def image_extent(scope: str | ScopeAttr, shape: Sequence[int]) -> tuple[int, int]:
    """(width, height) in pixels of the image holding a packed 5-D tensor in `scope`.

    >>> image_extent("texture", [1, 16, 112, 112, 4])
    (112, 1792)
    >>> image_extent("texture-weight", [16, 3, 7, 7, 4])
    (147, 16)
    """
    name = scope.scope_name if isinstance(scope, ScopeAttr) else scope
    if name not in IMAGE_SCOPES:
        raise ValueError(
            f"scope '{name}' has no image extent, expected one of "
            f"{', '.join(sorted(IMAGE_SCOPES))}"
        )
    dims = [int(d) for d in shape]
    if len(dims) != 5 or dims[-1] != BLOCK:
        raise ValueError(
            f"an image holds a packed 5-D tensor whose last dimension is {BLOCK}, got {dims}"
        )
    d0, d1, d2, d3, _ = dims
    match name:
        case "texture":
            return (d3, d0 * d1 * d2)
        case "texture-nhwc":
            return (d2 * d3, d0 * d1)
        case "texture-weight":
            return (d1 * d2 * d3, d0)
    raise AssertionError(name)  # pragma: no cover


def _parse_dashed_identifier(parser: AttrParser, what: str) -> str:
    """Parse `texture-nhwc`: the lexer splits it into `texture`, `-`, `nhwc`."""
    name = parser.parse_identifier(f" ({what})")
    while parser.parse_optional_punctuation("-") is not None:
        name += "-" + parser.parse_identifier(f" ({what})")
    return name


# --------------------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class LayoutAttr(ParametrizedAttribute):
    """`#texture.layout<nchw4c>`: how a tensor's elements are ordered."""

    name = "texture.layout"

    value: StringAttr

    def __init__(self, value: str | StringAttr):
        super().__init__(StringAttr(value) if isinstance(value, str) else value)

    @property
    def layout_name(self) -> str:
        return self.value.data

    @property
    def is_packed(self) -> bool:
        return self.value.data in PACKED_LAYOUTS

    @property
    def rank(self) -> int:
        return packed_rank(self.value.data)

    def verify(self) -> None:
        if self.value.data not in LAYOUTS:
            raise VerifyException(
                f"unknown layout '{self.value.data}', expected one of {', '.join(LAYOUTS)}"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parser.parse_identifier(" (layout name)")),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.value.data)


@irdl_attr_definition
class ScopeAttr(ParametrizedAttribute):
    """`#texture.scope<texture-nhwc>`: a memory scope (global buffer or an image mapping)."""

    name = "texture.scope"

    value: StringAttr

    def __init__(self, value: str | StringAttr):
        super().__init__(StringAttr(value) if isinstance(value, str) else value)

    @property
    def scope_name(self) -> str:
        return self.value.data

    @property
    def is_image(self) -> bool:
        return self.value.data in IMAGE_SCOPES

    def verify(self) -> None:
        if self.value.data not in SCOPES:
            raise VerifyException(
                f"unknown memory scope '{self.value.data}', expected one of {', '.join(SCOPES)}"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(_parse_dashed_identifier(parser, "memory scope")),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.value.data)


@irdl_attr_definition
class ImageAttr(ParametrizedAttribute):
    """`#texture.image<texture, h = 1792, w = 112>`: an image scope with its extent.

    The scope may be omitted when parsing (`#texture.image<h = 224, w = 224>` means `texture`).
    """

    name = "texture.image"

    scope: ScopeAttr
    h: IntAttr
    w: IntAttr

    def __init__(self, scope: str | ScopeAttr, height: int | IntAttr, width: int | IntAttr):
        super().__init__(
            ScopeAttr(scope) if isinstance(scope, str) else scope,
            IntAttr(height) if isinstance(height, int) else height,
            IntAttr(width) if isinstance(width, int) else width,
        )

    @staticmethod
    def for_shape(scope: str | ScopeAttr, shape: Sequence[int]) -> ImageAttr:
        """The image of `scope` that holds a packed tensor of `shape`."""
        width, height = image_extent(scope, shape)
        return ImageAttr(scope, height, width)

    @property
    def scope_name(self) -> str:
        return self.scope.scope_name

    @property
    def height(self) -> int:
        return self.h.data

    @property
    def width(self) -> int:
        return self.w.data

    @property
    def extent(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return (self.w.data, self.h.data)

    def verify(self) -> None:
        if not self.scope.is_image:
            raise VerifyException(
                f"image scope must be one of {', '.join(sorted(IMAGE_SCOPES))}, "
                f"got '{self.scope.scope_name}'"
            )
        if self.h.data <= 0 or self.w.data <= 0:
            raise VerifyException(
                f"image extent must be positive, got h = {self.h.data}, w = {self.w.data}"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            if parser.parse_optional_keyword("h") is not None:
                scope = "texture"
            else:
                scope = _parse_dashed_identifier(parser, "image scope")
                parser.parse_punctuation(",")
                parser.parse_keyword("h")
            parser.parse_punctuation("=")
            height = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(",")
            parser.parse_keyword("w")
            parser.parse_punctuation("=")
            width = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (ScopeAttr(scope), IntAttr(height), IntAttr(width))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(
                f"{self.scope.scope_name}, h = {self.h.data}, w = {self.w.data}"
            )


# --------------------------------------------------------------------------------------
# Type
# --------------------------------------------------------------------------------------

_ELEMENT_TYPES = (Float32Type, Float16Type)


def _is_storage_element(t: Attribute) -> bool:
    return isinstance(t, _ELEMENT_TYPES)


@irdl_attr_definition
class TextureTensorType(ParametrizedAttribute, TypeAttribute):
    """`!texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>>`.

    A tensor value with its layout and its memory: either the `global` scope (a `__global`
    buffer, printed bare) or an `#texture.image<...>` (an image scope with its extent).
    """

    name = "texture.tensor"

    dims: ArrayAttr[IntAttr]
    element: Attribute
    layout: LayoutAttr
    memory: Attribute  # ScopeAttr("global") | ImageAttr

    def __init__(
        self,
        dims: ArrayAttr[IntAttr],
        element: Attribute,
        layout: LayoutAttr,
        memory: ScopeAttr | ImageAttr,
    ):
        super().__init__(dims, element, layout, memory)

    @staticmethod
    def make(
        shape: Sequence[int],
        element_type: Attribute = f32,
        layout: str | LayoutAttr = "nchw4c",
        memory: str | ScopeAttr | ImageAttr = "global",
    ) -> TextureTensorType:
        """Build a type. `memory` is `"global"`, an image scope name (its extent is computed
        from `shape`), a `ScopeAttr` or an `ImageAttr`."""
        lay = LayoutAttr(layout) if isinstance(layout, str) else layout
        if isinstance(memory, str):
            memory = ScopeAttr(memory)
        if isinstance(memory, ScopeAttr) and memory.is_image:
            memory = ImageAttr.for_shape(memory, shape)
        return TextureTensorType(
            ArrayAttr(IntAttr(int(d)) for d in shape), element_type, lay, memory
        )

    def with_memory(self, memory: str | ScopeAttr | ImageAttr) -> TextureTensorType:
        """The same tensor placed in another memory (see `make` for `memory`)."""
        return TextureTensorType.make(self.shape, self.element, self.layout, memory)

    # ---- accessors ----
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.dims.data)

    @property
    def element_type(self) -> Attribute:
        return self.element

    def get_shape(self) -> tuple[int, ...]:
        return self.shape

    def get_element_type(self) -> Attribute:
        return self.element

    @property
    def layout_name(self) -> str:
        return self.layout.layout_name

    @property
    def scope_name(self) -> str:
        m = self.memory
        return m.scope_name if isinstance(m, ScopeAttr | ImageAttr) else "?"

    @property
    def is_image(self) -> bool:
        return isinstance(self.memory, ImageAttr)

    @property
    def image_extent(self) -> tuple[int, int] | None:
        """(width, height) of the image, or None for a global buffer."""
        return self.memory.extent if isinstance(self.memory, ImageAttr) else None

    @property
    def num_elements(self) -> int:
        return prod(self.shape)

    # ---- verification ----
    def verify(self) -> None:
        shape = [d.data for d in self.dims.data]
        lay = self.layout.layout_name
        if not _is_storage_element(self.element):
            raise VerifyException(
                f"texture tensor element type must be f32 or f16, got {self.element}"
            )
        if any(d <= 0 for d in shape):
            raise VerifyException(
                f"texture tensor dimensions must be static and positive, got {shape}"
            )
        rank = packed_rank(lay)
        if len(shape) != rank:
            raise VerifyException(
                f"layout {lay} expects a rank-{rank} shape, got rank {len(shape)} ({shape})"
            )
        if lay in PACKED_LAYOUTS and shape[-1] != BLOCK:
            raise VerifyException(
                f"packed layout {lay} expects last dimension {BLOCK}, got {shape[-1]}"
            )
        m = self.memory
        if isinstance(m, ScopeAttr):
            if m.scope_name != "global":
                raise VerifyException(
                    f"memory scope '{m.scope_name}' needs an image extent: "
                    f"use #texture.image<{m.scope_name}, h = ..., w = ...>"
                )
        elif isinstance(m, ImageAttr):
            if lay not in PACKED_LAYOUTS:
                raise VerifyException(
                    f"image memory needs a packed layout "
                    f"({', '.join(sorted(PACKED_LAYOUTS))}), got {lay}"
                )
            width, height = image_extent(m.scope_name, shape)
            if (m.height, m.width) != (height, width):
                raise VerifyException(
                    f"image extent mismatch: scope {m.scope_name} maps shape {shape} to "
                    f"h = {height}, w = {width}, got h = {m.height}, w = {m.width}"
                )
        else:
            raise VerifyException(
                f"texture tensor memory must be 'global' or #texture.image<...>, got {m}"
            )

    # ---- syntax ----
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims, element = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            layout = parser.parse_identifier(" (layout name)")
            parser.parse_punctuation(",")
            if (ident := parser.parse_optional_identifier()) is not None:
                # a bare scope name: only `global` verifies, others get a helpful error
                while parser.parse_optional_punctuation("-") is not None:
                    ident += "-" + parser.parse_identifier(" (memory scope)")
                memory: Attribute = ScopeAttr(ident)
            else:
                memory = parser.parse_attribute()
        return (
            ArrayAttr(IntAttr(d) for d in dims),
            element,
            LayoutAttr(layout),
            memory,
        )

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_dimension_list(self.shape)
            printer.print_string("x")
            printer.print_attribute(self.element)
            printer.print_string(f", {self.layout.layout_name}, ")
            if isinstance(self.memory, ScopeAttr) and self.memory.scope_name == "global":
                printer.print_string("global")
            else:
                printer.print_attribute(self.memory)


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------


def _static_4d_tensor(t: Attribute, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what} must be a ranked builtin tensor, got {t}")
    shape = list(t.get_shape())
    if len(shape) != 4 or any(d < 0 for d in shape):
        raise VerifyException(f"{what} must be a static 4-D tensor, got {t}")
    return t


def _check_element_change(src: Attribute, dst: Attribute, allowed: tuple[Attribute, Attribute]):
    if src == dst:
        return
    if (src, dst) != allowed:
        raise VerifyException(
            f"element type may only change {allowed[0]} -> {allowed[1]}, got {src} -> {dst}"
        )


def _check_packed(layout: str, logical: Sequence[int], packed: Sequence[int], what: str):
    expected = packed_shape(layout, logical)
    if tuple(packed) != expected:
        raise VerifyException(
            f"{what}: layout {layout} maps logical shape {list(logical)} to "
            f"{list(expected)}, got {list(packed)}"
        )


@irdl_op_definition
class PackOp(IRDLOperation):
    """Pack a logical NCHW/OIHW tensor into a texture tensor (zero-pads channels to 4)."""

    name = "texture.pack"

    input = operand_def(TensorType)
    result = result_def(TextureTensorType)

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TextureTensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        src = _static_4d_tensor(self.input.type, "texture.pack input")
        dst = self.result.type
        assert isinstance(dst, TextureTensorType)
        _check_packed(dst.layout_name, src.get_shape(), dst.shape, "texture.pack")
        _check_element_change(src.element_type, dst.element, (f32, f16))


@irdl_op_definition
class UnpackOp(IRDLOperation):
    """Unpack a texture tensor back into a logical NCHW/OIHW tensor (drops channel padding)."""

    name = "texture.unpack"

    input = operand_def(TextureTensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        src = self.input.type
        assert isinstance(src, TextureTensorType)
        dst = _static_4d_tensor(self.result.type, "texture.unpack result")
        _check_packed(src.layout_name, dst.get_shape(), src.shape, "texture.unpack")
        _check_element_change(src.element, dst.element_type, (f16, f32))


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Allocate an (uninitialised) texture tensor: an image or a global buffer."""

    name = "texture.alloc"

    result = result_def(TextureTensorType)

    traits = traits_def(MemoryAllocEffect())

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: TextureTensorType):
        super().__init__(result_types=[result_type])


@irdl_op_definition
class PackWeightsOp(IRDLOperation):
    """Pack constant weights at compile time; the result is a builtin tensor in packed shape."""

    name = "texture.pack_weights"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    layout = prop_def(LayoutAttr)

    traits = traits_def(Pure())

    assembly_format = "$input `:` type($input) `->` type($result) attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, input: SSAValue, layout: str | LayoutAttr, result_type: Attribute | None = None):
        lay = LayoutAttr(layout) if isinstance(layout, str) else layout
        if result_type is None:
            src = SSAValue.get(input).type
            assert isinstance(src, TensorType)
            result_type = TensorType(src.element_type, packed_shape(lay, src.get_shape()))
        super().__init__(
            operands=[input], result_types=[result_type], properties={"layout": lay}
        )

    def verify_(self) -> None:
        src = _static_4d_tensor(self.input.type, "texture.pack_weights input")
        dst = self.result.type
        assert isinstance(dst, TensorType)
        lay = self.layout.layout_name
        if lay not in WEIGHT_LAYOUTS:
            raise VerifyException(
                f"texture.pack_weights needs a weight layout "
                f"({', '.join(sorted(WEIGHT_LAYOUTS))}), got {lay}"
            )
        _check_packed(lay, src.get_shape(), dst.get_shape(), "texture.pack_weights")
        _check_element_change(src.element_type, dst.element_type, (f32, f16))


@irdl_op_definition
class CastScopeOp(IRDLOperation):
    """Move a texture tensor to another memory (global buffer <-> image, or another mapping)."""

    name = "texture.cast_scope"

    input = operand_def(TextureTensorType)
    result = result_def(TextureTensorType)

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TextureTensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        src = self.input.type
        dst = self.result.type
        assert isinstance(src, TextureTensorType) and isinstance(dst, TextureTensorType)
        if (src.shape, src.element, src.layout) != (dst.shape, dst.element, dst.layout):
            raise VerifyException(
                "texture.cast_scope may only change memory: shape, element type and layout "
                f"must match, got {src} -> {dst}"
            )


# ======================================================================================
# Winograd convolution ops (F(2x2,3x3) and F(4x4,3x3)); created by the conv-winograd pass
# (passes/conv_winograd.py), lowered by lowering/winograd_lowering.py.
# ======================================================================================
#
#   %v = texture.winograd_input %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>}
#        : !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
#        -> !texture.tensor<16x16x1x49x4xf32, nchw4c, global>
#   %m = texture.winograd_matmul %v, %u
#        : !texture.tensor<16x16x1x49x4xf32, nchw4c, global>, tensor<16x16x64x4xf32>
#        -> !texture.tensor<16x16x1x49x4xf32, nchw4c, global>
#   %y = texture.winograd_output %m, %b {tile = 2 : i64}
#        : !texture.tensor<16x16x1x49x4xf32, nchw4c, global>, tensor<64xf32>
#        -> !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
#
# V and M are NCHW4c-typed so that they can live in images or buffers like any
# activation: "batch" = the alpha^2 positions xi of a transformed tile, channel blocks,
# one row, P = N * ceil(OH/tile) * ceil(OW/tile) tiles wide (tile p = (n*TH + th)*TW + tw).
# The filter U is a constant [alpha^2, K/4, C, 4] (OIHW4o per xi, see
# lowering/kernels/winograd.py); the bias a constant [K]. All three ops read their
# `input` from and write their result to images or buffers alike (trait ImageOperands,
# for annotate-texture-scope); filter and bias stay buffers. The output transform is an
# EpilogueHead (graph-fuse fuses the element-wise ops after it into its kernel).


WINOGRAD_TILES: tuple[int, ...] = (2, 4)
"""Output tile sizes m of F(m x m, 3 x 3); the transformed tile is alpha = m + 2 wide."""


def winograd_tile_count(batch: int, out_h: int, out_w: int, tile: int) -> int:
    """P: tiles covering an N x OH x OW output (the last row/column may hang over)."""
    return batch * (-(-out_h // tile)) * (-(-out_w // tile))


class _WinogradOp(IRDLOperation):
    """Shared checks of the three Winograd ops (`tile` is a property of two of them).
    Each reads `input` from an image or a buffer and writes its result to either
    (`ImageOperands(("input",))`: the kernels go through `Packed`)."""

    irdl_options = (ParsePropInAttrDict(),)

    def reads_images(self, value: SSAValue) -> bool:
        """Whether `value`, an operand of this op, may be an image."""
        trait = self.get_trait(ImageOperands)
        return trait is not None and trait.reads(self, value)

    def _fail(self, message: str):
        desc = getattr(self.location, "desc", None)
        where = f' (at loc("{desc.data}"))' if desc is not None else ""
        raise VerifyException(f"'{self.name}' {message}{where}")

    def _nchw4c(self, value: SSAValue, what: str) -> tuple[int, ...]:
        t = value.type
        if not isinstance(t, TextureTensorType) or t.layout_name != "nchw4c":
            self._fail(f"{what} must be an NCHW4c !texture.tensor, got {t}")
        return t.shape

    def _tile_of(self, attr) -> int:
        tile = attr.value.data
        if tile not in WINOGRAD_TILES:
            self._fail(f"tile must be 2 or 4 (F(2x2,3x3) or F(4x4,3x3)), got {tile}")
        return tile

    def _expect(self, what: str, got: Sequence[int], want: Sequence[int], why: str) -> None:
        if tuple(got) != tuple(want):
            self._fail(f"{what} shape {list(got)} does not match the expected {list(want)} ({why})")


@irdl_op_definition
class WinogradInputOp(_WinogradOp):
    """Input transform: V[xi][c4][0][p] = (B^T d B)[xi] for the alpha x alpha patch d of
    tile p (zeros in the padding). x is (N, C4, H, W); V is (alpha^2, C4, 1, P) with
    OH = H + top + bottom - 2, OW = W + left + right - 2 (stride 1, 3x3)."""

    name = "texture.winograd_input"

    input = operand_def(TextureTensorType)
    result = result_def(TextureTensorType)
    tile = prop_def(IntegerAttr[I64])
    pads = prop_def(DenseArrayBase)
    """Top, left, bottom, right zero padding of the convolution."""

    traits = traits_def(Pure(), ImageOperands(operands=("input",)))

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TextureTensorType, tile: int, pads: Sequence[int]):
        from xdsl.dialects.builtin import i64

        super().__init__(
            operands=[input], result_types=[result_type],
            properties={"tile": IntegerAttr(tile, 64), "pads": DenseArrayBase.from_list(i64, list(pads))},
        )

    @property
    def tile_size(self) -> int:
        return self.tile.value.data

    @property
    def pad_values(self) -> tuple[int, int, int, int]:
        return tuple(int(v) for v in self.pads.get_values())  # type: ignore[return-value]

    def output_extent(self) -> tuple[int, int]:
        """(OH, OW) of the convolution this transform feeds."""
        _, _, h, w, _ = self.input.type.shape
        t, l, b, r = self.pad_values
        return h + t + b - 2, w + l + r - 2

    def verify_(self) -> None:
        n, c4, _, _, _ = self._nchw4c(self.input, "input")
        self._nchw4c(self.result, "result")
        tile = self._tile_of(self.tile)
        pads = self.pad_values
        if len(pads) != 4 or min(pads) < 0:
            self._fail(f"pads must be 4 values >= 0 (top, left, bottom, right), got {list(pads)}")
        oh, ow = self.output_extent()
        if oh < 1 or ow < 1:
            self._fail(f"a 3x3 window does not fit the padded input: output would be {oh}x{ow}")
        alpha = tile + 2
        p = winograd_tile_count(n, oh, ow, tile)
        self._expect("result", self.result.type.shape, (alpha * alpha, c4, 1, p, BLOCK),
                      f"alpha^2 = {alpha * alpha}, {c4} channel blocks, 1, "
                      f"{p} tiles of {tile}x{tile} over N = {n}, {oh}x{ow} output")


@irdl_op_definition
class WinogradMatmulOp(_WinogradOp):
    """Batched product over input channels: M[xi][k][p] = sum_c U[xi][k][c] V[xi][c][p].
    V is (alpha^2, C4, 1, P), the constant filter U is [alpha^2, K4, 4*C4, 4] and M is
    (alpha^2, K4, 1, P)."""

    name = "texture.winograd_matmul"

    input = operand_def(TextureTensorType)
    filter = operand_def(TensorType)
    result = result_def(TextureTensorType)

    traits = traits_def(Pure(), ImageOperands(operands=("input",)))

    assembly_format = "$input `,` $filter attr-dict `:` type($input) `,` type($filter) `->` type($result)"

    def __init__(self, input: SSAValue, filter: SSAValue, result_type: TextureTensorType):
        super().__init__(operands=[input, filter], result_types=[result_type])

    @property
    def tile_size(self) -> int:
        """m, from alpha^2 = (m + 2)^2 (the verifier checks it is 16 or 36)."""
        return int(round(self.input.type.shape[0] ** 0.5)) - 2

    def verify_(self) -> None:
        a2, c4, one, p, _ = self._nchw4c(self.input, "input")
        if a2 not in (16, 36) or one != 1:
            self._fail(f"input must be (alpha^2, C4, 1, P, 4) with alpha^2 = 16 (tile 2) or 36 (tile 4), "
                       f"got {list(self.input.type.shape)}")
        u = self.filter.type
        u_shape = list(u.get_shape())
        if len(u_shape) != 4:
            self._fail(f"filter must be a 4-D constant [alpha^2, K4, C, 4], got {u}")
        k4 = u_shape[1]
        self._expect("filter", u_shape, (a2, k4, 4 * c4, BLOCK),
                      f"[alpha^2, K4, C, 4] with alpha^2 = {a2} and C = 4 * {c4} input channel blocks")
        self._nchw4c(self.result, "result")
        self._expect("result", self.result.type.shape, (a2, k4, 1, p, BLOCK),
                      f"alpha^2 = {a2}, K4 = {k4} from the filter, 1, P = {p} tiles")


@irdl_op_definition
class WinogradOutputOp(_WinogradOp):
    """Output transform: Y = A^T M_p A per tile p and output channel block, plus bias.
    M is (alpha^2, K4, 1, P); the result is the convolution's NCHW4c (N, K4, OH, OW).

    An epilogue head: the lowering fuses element-wise ops that follow it into its
    kernel (`PackedEpilogue`), like a convolution's."""

    name = "texture.winograd_output"

    input = operand_def(TextureTensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TextureTensorType)
    tile = prop_def(IntegerAttr[I64])

    traits = traits_def(Pure(), EpilogueHead(), ImageOperands(operands=("input",)))

    assembly_format = (
        "$input (`,` $bias^)? attr-dict `:` type($input) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(self, input: SSAValue, bias: SSAValue | None, result_type: TextureTensorType, tile: int):
        super().__init__(
            operands=[input, [] if bias is None else [bias]], result_types=[result_type],
            properties={"tile": IntegerAttr(tile, 64)},
        )

    @property
    def tile_size(self) -> int:
        return self.tile.value.data

    def verify_(self) -> None:
        a2, k4, one, p, _ = self._nchw4c(self.input, "input")
        n, k4_out, oh, ow, _ = self._nchw4c(self.result, "result")
        tile = self._tile_of(self.tile)
        alpha = tile + 2
        want_p = winograd_tile_count(n, oh, ow, tile)
        self._expect("input", (a2, k4, one, p, BLOCK), (alpha * alpha, k4_out, 1, want_p, BLOCK),
                      f"alpha^2 = {alpha * alpha}, K4 = {k4_out} of the result, 1, "
                      f"{want_p} tiles of {tile}x{tile} over N = {n}, {oh}x{ow} output")
        if self.bias is not None:
            self._expect("bias", self.bias.type.get_shape(), (BLOCK * k4_out,),
                          f"one value per (padded) output channel, {k4_out} blocks of 4")


Texture = Dialect(
    "texture",
    [PackOp, UnpackOp, AllocOp, PackWeightsOp, CastScopeOp, WinogradInputOp, WinogradMatmulOp, WinogradOutputOp],
    [LayoutAttr, ScopeAttr, ImageAttr, TextureTensorType],
)

__all__ = [
    "BLOCK",
    "IMAGE_SCOPES",
    "LAYOUTS",
    "PACKED_LAYOUTS",
    "SCOPES",
    "WEIGHT_LAYOUTS",
    "AllocOp",
    "CastScopeOp",
    "ImageAttr",
    "LayoutAttr",
    "PackOp",
    "PackWeightsOp",
    "ScopeAttr",
    "Texture",
    "TextureTensorType",
    "UnpackOp",
    "WINOGRAD_TILES",
    "WinogradInputOp",
    "WinogradMatmulOp",
    "WinogradOutputOp",
    "image_extent",
    "packed_rank",
    "packed_shape",
    "winograd_tile_count",
]
