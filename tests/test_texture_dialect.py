"""Tests of the texture dialect: layout/image helpers, type and op verifiers."""

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, TensorType, f16, f32, i8
from xdsl.dialects import test as xdsl_test
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from adreno_mlir.dialects.texture import (
    AllocOp,
    CastScopeOp,
    ImageAttr,
    LayoutAttr,
    PackOp,
    PackWeightsOp,
    ScopeAttr,
    Texture,
    TextureTensorType,
    UnpackOp,
    image_extent,
    packed_shape,
)


# ---- packed_shape -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "layout, logical, expected",
    [
        ("nchw4c", [1, 3, 224, 224], (1, 1, 224, 224, 4)),
        ("nchw4c", [1, 64, 112, 112], (1, 16, 112, 112, 4)),
        ("nchw4c", [2, 5, 7, 9], (2, 2, 7, 9, 4)),
        ("nchw4c", [1, 1000, 1, 1], (1, 250, 1, 1, 4)),
        ("nhwc4c", [1, 3, 224, 224], (1, 224, 224, 1, 4)),
        ("nchw", [1, 3, 8, 9], (1, 3, 8, 9)),
        ("nhwc", [1, 3, 8, 9], (1, 8, 9, 3)),
        ("oihw", [64, 3, 7, 7], (64, 3, 7, 7)),
        ("oihw4o", [64, 3, 7, 7], (16, 3, 7, 7, 4)),
        ("oihw4o", [10, 16, 3, 3], (3, 16, 3, 3, 4)),
        ("hwio4o", [64, 32, 3, 3], (3, 3, 32, 16, 4)),
    ],
)
def test_packed_shape(layout, logical, expected):
    assert packed_shape(layout, logical) == expected
    assert packed_shape(LayoutAttr(layout), logical) == expected


def test_packed_shape_errors():
    with pytest.raises(ValueError, match="unknown layout 'nchw8c'"):
        packed_shape("nchw8c", [1, 3, 4, 4])
    with pytest.raises(ValueError, match="4-D"):
        packed_shape("nchw4c", [3, 4, 4])


# ---- image_extent -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "scope, shape, expected",
    [
        ("texture", [1, 16, 112, 112, 4], (112, 1792)),  # w = W, h = N*C4*H
        ("texture", [1, 1, 224, 224, 4], (224, 224)),
        ("texture", [2, 8, 7, 9, 4], (9, 112)),
        ("texture-nhwc", [1, 16, 112, 112, 4], (12544, 16)),  # w = H*W, h = N*C4
        ("texture-nhwc", [2, 3, 4, 5, 4], (20, 6)),
        ("texture-weight", [16, 3, 7, 7, 4], (147, 16)),  # w = I*H*W, h = O4
        ("texture-weight", [128, 512, 1, 1, 4], (512, 128)),
    ],
)
def test_image_extent(scope, shape, expected):
    assert image_extent(scope, shape) == expected
    assert image_extent(ScopeAttr(scope), shape) == expected
    img = ImageAttr.for_shape(scope, shape)
    assert img.extent == expected and (img.width, img.height) == expected


def test_image_extent_errors():
    with pytest.raises(ValueError, match="no image extent"):
        image_extent("global", [1, 1, 4, 4, 4])
    with pytest.raises(ValueError, match="last dimension is 4"):
        image_extent("texture", [1, 1, 4, 4, 8])
    with pytest.raises(ValueError, match="5-D"):
        image_extent("texture", [1, 4, 4, 4])


# ---- attributes and the type ------------------------------------------------------------
def test_make_with_image_scope_computes_extent():
    t = TextureTensorType.make([1, 16, 112, 112, 4], f32, "nchw4c", ScopeAttr("texture"))
    assert t.memory == ImageAttr("texture", 1792, 112)


def test_type_make_and_properties():
    t = TextureTensorType.make([1, 16, 112, 112, 4], f32, "nchw4c", "texture")
    assert t.shape == (1, 16, 112, 112, 4)
    assert t.element_type == f32
    assert t.layout_name == "nchw4c"
    assert t.scope_name == "texture"
    assert t.image_extent == (112, 1792)
    assert t.is_image
    assert str(t) == (
        "!texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>>"
    )
    g = t.with_memory("global")
    assert g.scope_name == "global" and g.image_extent is None and not g.is_image
    assert str(g) == "!texture.tensor<1x16x112x112x4xf32, nchw4c, global>"
    n = t.with_memory(ImageAttr("texture-nhwc", 16, 12544))
    assert n.image_extent == (12544, 16)
    h = TextureTensorType.make([1, 1, 8, 8, 4], f16, LayoutAttr("nchw4c"), ScopeAttr("global"))
    assert h.element_type == f16


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: LayoutAttr("nchw8c"), "unknown layout 'nchw8c'"),
        (lambda: ScopeAttr("shared"), "unknown memory scope 'shared'"),
        (lambda: ImageAttr("global", 4, 4), "image scope must be one of"),
        (lambda: ImageAttr("texture", 0, 4), "image extent must be positive"),
        (
            lambda: TextureTensorType.make([1, 16, 112, 112, 8], f32, "nchw4c"),
            "expects last dimension 4, got 8",
        ),
        (
            lambda: TextureTensorType.make([1, 16, 112, 4], f32, "nchw4c"),
            "expects a rank-5 shape",
        ),
        (
            lambda: TextureTensorType.make([1, 16, 112, 112, 4], i8, "nchw4c"),
            "element type must be f32 or f16",
        ),
        (
            lambda: TextureTensorType.make(
                [1, 16, 112, 112, 4], f32, "nchw4c", ImageAttr("texture", 1791, 112)
            ),
            "image extent mismatch",
        ),
        (
            lambda: TextureTensorType(
                ArrayAttr([IntAttr(d) for d in (1, 16, 112, 112, 4)]),
                f32,
                LayoutAttr("nchw4c"),
                ScopeAttr("texture"),
            ),
            "needs an image extent",
        ),
        (
            lambda: TextureTensorType.make([1, 3, 8, 8], f32, "nchw", ImageAttr("texture", 8, 8)),
            "image memory needs a packed layout",
        ),
        (
            lambda: TextureTensorType.make([1, 0, 8, 8, 4], f32, "nchw4c"),
            "static and positive",
        ),
    ],
)
def test_type_verifier(build, message):
    with pytest.raises(VerifyException, match=message):
        build()


# ---- ops --------------------------------------------------------------------------------
def _value(t):
    return xdsl_test.TestOp(result_types=[t]).results[0]


def _verify(*ops):
    for op in ops:
        op.verify()


NCHW = TensorType(f32, [1, 3, 224, 224])
PACKED = TextureTensorType.make([1, 1, 224, 224, 4], f32, "nchw4c", "texture")


def test_valid_ops():
    x = _value(NCHW)
    p = PackOp(x, PACKED)
    p16 = PackOp(x, TextureTensorType.make([1, 1, 224, 224, 4], f16, "nchw4c", "global"))
    u = UnpackOp(p.result, NCHW)
    u16 = UnpackOp(p16.result, NCHW)
    a = AllocOp(TextureTensorType.make([1, 16, 112, 112, 4], f32, "nchw4c", "global"))
    c = CastScopeOp(a.result, a.result.type.with_memory("texture-nhwc"))
    w = _value(TensorType(f32, [64, 3, 7, 7]))
    pw = PackWeightsOp(w, "oihw4o")
    assert pw.result.type == TensorType(f32, [16, 3, 7, 7, 4])
    pw2 = PackWeightsOp(w, "hwio4o", TensorType(f16, [7, 7, 3, 16, 4]))
    _verify(p, p16, u, u16, a, c, pw, pw2)


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: PackOp(
                _value(NCHW), TextureTensorType.make([1, 2, 224, 224, 4], f32, "nchw4c")
            ),
            r"layout nchw4c maps logical shape \[1, 3, 224, 224\] to \[1, 1, 224, 224, 4\]",
        ),
        (
            lambda: PackOp(
                _value(TensorType(f16, [1, 3, 224, 224])),
                TextureTensorType.make([1, 1, 224, 224, 4], f32, "nchw4c"),
            ),
            "element type may only change f32 -> f16",
        ),
        (
            lambda: PackOp(
                _value(TensorType(f32, [3, 224, 224])),
                TextureTensorType.make([1, 1, 224, 224, 4], f32, "nchw4c"),
            ),
            "static 4-D tensor",
        ),
        (
            lambda: PackOp(
                _value(TensorType(f32, [1, -1, 224, 224])),
                TextureTensorType.make([1, 1, 224, 224, 4], f32, "nchw4c"),
            ),
            "static 4-D tensor",
        ),
        (
            lambda: UnpackOp(_value(PACKED), TensorType(f32, [1, 8, 224, 224])),
            r"texture.unpack: layout nchw4c maps logical shape \[1, 8, 224, 224\]",
        ),
        (
            lambda: UnpackOp(_value(PACKED), TensorType(f16, [1, 3, 224, 224])),
            "element type may only change f16 -> f32",
        ),
        (
            lambda: PackWeightsOp(
                _value(TensorType(f32, [64, 3, 7, 7])), "oihw4o", TensorType(f32, [64, 3, 7, 7, 4])
            ),
            r"maps logical shape \[64, 3, 7, 7\] to \[16, 3, 7, 7, 4\]",
        ),
        (
            lambda: PackWeightsOp(_value(TensorType(f32, [64, 3, 7, 7])), "nchw4c"),
            "needs a weight layout",
        ),
        (
            lambda: CastScopeOp(
                _value(PACKED), TextureTensorType.make([1, 1, 224, 224, 4], f16, "nchw4c")
            ),
            "may only change memory",
        ),
    ],
)
def test_op_verifier(build, message):
    op = build()
    with pytest.raises(VerifyException, match=message):
        op.verify()


# ---- text round trip --------------------------------------------------------------------
def test_parse_print_round_trip():
    ctx = Context(allow_unregistered=True)
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(Texture)
    src = """
func.func @f(%x: tensor<1x3x224x224xf32>) -> tensor<1x3x224x224xf32> {
  %p = texture.pack %x : tensor<1x3x224x224xf32> -> !texture.tensor<1x1x224x224x4xf32, nchw4c, #texture.image<texture-nhwc, h = 1, w = 50176>>
  %g = texture.cast_scope %p : !texture.tensor<1x1x224x224x4xf32, nchw4c, #texture.image<texture-nhwc, h = 1, w = 50176>> -> !texture.tensor<1x1x224x224x4xf32, nchw4c, global>
  %u = texture.unpack %g : !texture.tensor<1x1x224x224x4xf32, nchw4c, global> -> tensor<1x3x224x224xf32>
  func.return %u : tensor<1x3x224x224xf32>
}
"""
    module = Parser(ctx, src).parse_module()
    module.verify()
    text = str(module)
    assert "#texture.image<texture-nhwc, h = 1, w = 50176>" in text
    again = Parser(ctx, text).parse_module()
    assert str(again) == text
    assert isinstance(again, ModuleOp)
