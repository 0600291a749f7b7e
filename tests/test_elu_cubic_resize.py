"""ONNX Elu and Resize(mode="cubic") (issue 25, part 5) against onnxruntime on every plan:
NCHW buffers (the default plan on PoCL), NCHW4c buffers and NCHW4c images on the Adreno
740 profile, and half storage (fp16-acc32) and half arithmetic (fp16) on the device with
cl_khr_fp16 (Intel's CPU runtime, the `half_device` fixture of tests/conftest.py).

Elu is max(x, 0) + alpha * expm1(min(x, 0)) (graph.elu): alone, after a convolution (its
fused epilogue), on negative, positive, near-zero, zero and NaN inputs, alpha 1, 0.3 and
2. Cubic Resize (graph.resize {mode = "cubic"}): upscale x2, 1.5, sizes 7 -> 10,
downscale 0.6 and 0.5, each coordinate_transformation_mode the linear mode supports,
exclude_outside 0 and 1, cubic_coeff_a -0.75 (PyTorch's) and -0.5. Six channels, so the
NCHW4c plans carry two padding channels.

Tolerances (max |ours - onnxruntime| / max |onnxruntime| over the finite outputs, NaNs at
the same places): 1e-5 in fp32 (measured: at most 1e-6; a few f32 roundings of
coordinates, weights and the 16-tap sum, which onnxruntime orders the same way: rows
first). 4e-3 on the fp16 plans: the input is stored in half (relative rounding 2**-11 =
4.9e-4 of each pixel), the result again, and a cubic output is a sum of 16 taps whose
weights' absolute values add up to at most 1.375**2 = 1.9 (A = -0.75, t = 0.5), so about
1.4e-3 of max |x| at worst (measured: 4e-4); a convolution before Elu sums 54 half
products (measured 1.2e-3). Near zero Elu
is compared with float64 expm1 instead (4 ulp): onnxruntime computes exp(x) - 1, which
cancels (Elu(-1e-7) = -1.19e-7 there); against onnxruntime those elements are within its
own error, 2.5e-7 absolute (twice the ulp of 1).
"""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import adreno_mlir

RNG_SEED = 25
SHAPE = (1, 6, 5, 7)
OPSET = 19

PLANS = {
    "buffers": {},
    "buffer4c": {"layout": "nchw4c", "textures": False, "target": "adreno-740"},
    "textures": {"textures": True, "target": "adreno-740"},
    "fp16-acc32": {"precision": "fp16-acc32", "textures": True, "target": "adreno-740"},
    "fp16": {"precision": "fp16", "textures": True, "target": "adreno-740"},
}
HALF_PLANS = {"fp16", "fp16-acc32"}
TOLERANCE = 1e-5
HALF_TOLERANCE = 4e-3


def _model(nodes, inits=(), shape=SHAPE):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def _const(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype), name)


def _x(shape=SHAPE, seed=0, scale=2.0):
    return (scale * np.random.default_rng(RNG_SEED + seed).standard_normal(shape)).astype(np.float32)


# --------------------------------------------------------------------------- Elu


def _elu(alpha=None):
    attrs = {} if alpha is None else {"alpha": alpha}
    return _model([helper.make_node("Elu", ["x"], ["y"], name="elu", **attrs)])


def _elu_inputs():
    """Both signs, magnitudes 1e-7 .. 10, exact zeros (both signs) and NaNs."""
    x = _x()
    x[0, 0, 0, :] = [-1e-7, 1e-7, -3e-6, 0.0, -0.0, -10.0, 10.0]
    x[0, 1, 1, :3] = np.nan
    return x


def _conv_elu(alpha):
    """A 3x3 convolution (bias, padding) with Elu as its epilogue."""
    rng = np.random.default_rng(RNG_SEED)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Elu", ["c"], ["y"], name="elu", alpha=alpha)]
    return _model(nodes, [_const("w", rng.standard_normal((6, 6, 3, 3)) * 0.3),
                          _const("b", rng.standard_normal(6) * 0.5)])


ELU_CASES = {
    "elu_default_alpha": lambda: (_elu(), _elu_inputs()),
    "elu_alpha_0.3": lambda: (_elu(0.3), _elu_inputs()),
    "elu_alpha_2": lambda: (_elu(2.0), _elu_inputs()),
    "conv_elu_epilogue": lambda: (_conv_elu(0.7), _x()),
}

# --------------------------------------------------------------------------- cubic Resize


def _cubic(scales=None, sizes=None, shape=SHAPE, **attrs):
    inputs, inits = ["x", ""], []
    if scales is not None:
        inputs.append("scales")
        inits.append(_const("scales", [1.0, 1.0, *scales]))
    else:
        inputs += ["", "sizes"]
        inits.append(_const("sizes", [shape[0], shape[1], *sizes], np.int64))
    node = helper.make_node("Resize", inputs, ["y"], name="resize", mode="cubic", **attrs)
    return _model([node], inits, shape)


SQUARE = (1, 6, 7, 7)

# name -> (model, input): every coordinate mode the linear mode supports, exclude_outside
# 0 and 1, A = -0.75 and -0.5, up x2, 1.5, sizes 7 -> 10, down 0.6 and 0.5. (align_corners
# only with scales that divide the length: otherwise onnxruntime and the ONNX reference
# disagree with each other, as for linear, tests/fuzz_graphs.py.)
CUBIC_CASES = {
    "up2_half_pixel": lambda: (_cubic([2.0, 2.0]), _x()),
    "up2_half_pixel_a-0.5_exclude": lambda: (
        _cubic([2.0, 2.0], cubic_coeff_a=-0.5, exclude_outside=1), _x()),
    "up1.5_pytorch_half_pixel": lambda: (
        _cubic([1.5, 1.5], coordinate_transformation_mode="pytorch_half_pixel"), _x()),
    "up1.5_pytorch_half_pixel_exclude": lambda: (
        _cubic([1.5, 1.5], coordinate_transformation_mode="pytorch_half_pixel", exclude_outside=1), _x()),
    "sizes_7to10_half_pixel": lambda: (_cubic(sizes=[10, 10], shape=SQUARE), _x(SQUARE)),
    "sizes_7to10_align_corners_a-0.5": lambda: (
        _cubic(sizes=[10, 10], shape=SQUARE, coordinate_transformation_mode="align_corners", cubic_coeff_a=-0.5),
        _x(SQUARE)),
    "up2_align_corners_exclude": lambda: (
        _cubic([2.0, 2.0], coordinate_transformation_mode="align_corners", exclude_outside=1), _x()),
    "up2x1.5_asymmetric": lambda: (_cubic([2.0, 1.5], coordinate_transformation_mode="asymmetric"), _x()),
    "down0.6_asymmetric_exclude_a-0.5": lambda: (
        _cubic([0.6, 0.6], coordinate_transformation_mode="asymmetric", exclude_outside=1, cubic_coeff_a=-0.5),
        _x()),
    "down0.5_half_pixel": lambda: (_cubic(sizes=[3, 3], shape=SQUARE), _x(SQUARE)),
    "down0.6_half_pixel_exclude": lambda: (_cubic([0.6, 0.6], exclude_outside=1), _x()),
    "up1.5_half_pixel_symmetric": lambda: (
        _cubic([1.5, 1.5], coordinate_transformation_mode="half_pixel_symmetric"), _x()),
    "down0.6_half_pixel_symmetric_exclude": lambda: (
        _cubic([0.6, 0.6], coordinate_transformation_mode="half_pixel_symmetric", exclude_outside=1), _x()),
}

CASES = {**ELU_CASES, **CUBIC_CASES}


@functools.cache
def _case(name):
    """(model, feeds, onnxruntime's output), built once per case."""
    model, x = CASES[name]()
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    return model, {"x": x}, ref


def _check(got, ref, tol):
    """NaNs at the same places; finite values within `tol` of max |ref|."""
    assert got.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    finite = ~np.isnan(ref)
    err = float(np.abs(got[finite] - ref[finite]).max()) / max(float(np.abs(ref[finite]).max()), 1e-30)
    assert err <= tol, f"error {err:.2e} > {tol:.0e}"
    return err


def _compile(model, plan, request):
    options = dict(PLANS[plan])
    if plan in HALF_PLANS:
        options["device"] = request.getfixturevalue("half_device")
    return adreno_mlir.compile(model, **options)


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("case", list(CASES))
def test_matches_onnxruntime(case, plan, request):
    model, feeds, ref = _case(case)
    cm = _compile(model, plan, request)
    _check(cm.run(feeds)["y"], ref, HALF_TOLERANCE if plan in HALF_PLANS else TOLERANCE)
    if plan == "textures":
        assert "image2d_t" in cm.source
    if plan == "fp16":
        assert "half4" in cm.source


REFERENCE_OFF_BY_ONE = {"up1.5_half_pixel_symmetric"}
"""Cases where onnx.reference (1.23) is wrong: output 3 of 7 -> 10 (scale 1.5) maps to
x = 2 in real arithmetic, 2.0000000000000004 in float64; the reference's weights are
those of t = 4e-16 on taps 1..4, but it places the window with floor(x + 2), which
rounds to 4 exactly, on taps 0..3: it returns input 1 instead of input 2 (onnxruntime,
and these kernels, return input 2)."""


@pytest.mark.parametrize("case", sorted(set(CUBIC_CASES) - REFERENCE_OFF_BY_ONE))
def test_onnxruntime_agrees_with_the_onnx_reference(case):
    """The cases' reference is onnxruntime; ONNX's reference evaluator (the spec's
    semantics) gives the same numbers for them (but REFERENCE_OFF_BY_ONE)."""
    model, feeds, ref = _case(case)
    spec = ReferenceEvaluator(model).run(None, feeds)[0]
    assert float(np.abs(spec - ref).max() / np.abs(ref).max()) <= 2e-6


@pytest.mark.parametrize("plan", ["buffers", "textures"])
def test_elu_near_zero_is_expm1_accurate(plan, request):
    """Where exp(x) - 1 cancels, Elu is expm1(x) within 4 ulp (onnxruntime's own
    exp(x) - 1 is off by up to 1.2e-7 there: compared with it, within 2.5e-7)."""
    x = -np.logspace(-8, -1, 6 * 5 * 7).astype(np.float32).reshape(SHAPE)
    x[0, ::2] *= -1  # positive ones too: x itself
    model = _elu()
    got = _compile(model, plan, request).run({"x": x})["y"]
    x64 = x.astype(np.float64)
    exact = np.where(x64 > 0, x64, np.expm1(x64))
    np.testing.assert_allclose(got, exact, rtol=4 * 2.0 ** -23, atol=0)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=2.5e-7)


def test_elu_fuses_into_the_convolution():
    """Elu is element-wise like any activation: the convolution's epilogue, one kernel on
    the NCHW plan and no kernel of its own on the NCHW4c plans."""
    model, _, _ = _case("conv_elu_epilogue")
    cm = adreno_mlir.compile(model, textures=False, layout="nchw")
    assert cm.source.count("__kernel") == 1 and "expm1(" in cm.source, cm.source
    cm = adreno_mlir.compile(model, textures=True, target="adreno-740", keep_ir=True)
    regions = cm.stage_ir["fuse"].split("graph.fused")[1:]  # every kernel is a region: the conv's holds the elu
    assert any("graph.conv2d" in r and "graph.elu" in r for r in regions), cm.stage_ir["fuse"]
    assert not [k for k in cm.source.split("__kernel void ")[1:] if k.startswith("elu")]


def test_resize_elu_is_one_kernel():
    """Elu after a cubic Resize is the resize kernel's epilogue."""
    model = _model([helper.make_node("Resize", ["x", "", "scales"], ["r"], mode="cubic"),
                    helper.make_node("Elu", ["r"], ["y"])], [_const("scales", [1, 1, 2, 2])])
    x = _x()
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    cm = adreno_mlir.compile(model, textures=False, layout="nchw")
    assert cm.source.count("__kernel") == 1 and "__kernel void resize_cubic_elu(" in cm.source
    _check(cm.run({"x": x})["y"], ref, TOLERANCE)


def test_evaluate_matches_the_kernel_formula():
    """Constant folding uses graph.elu's numpy `evaluate`: the kernels' formula."""
    from adreno_mlir.dialects import graph

    x = np.array([-np.inf, -3.0, -1e-7, -0.0, 0.0, 1e-7, 2.5, np.inf, np.nan], np.float32)
    got = graph.EluOp.evaluate(x, params=(0.5,))
    assert got.dtype == np.float32
    x64 = x.astype(np.float64)
    want = np.where(x64 > 0, x64, 0.5 * np.expm1(x64))
    np.testing.assert_allclose(got, want, rtol=2 ** -23)
    assert graph.ELEMENTWISE_BY_KIND["elu"] is graph.EluOp


@pytest.mark.parametrize("mode", ["cubic", "linear"])
def test_antialias_is_refused_naming_the_node(mode):
    model = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="aa_resize", mode=mode,
                                     antialias=1)], [_const("scales", [1, 1, 0.5, 0.5])])
    with pytest.raises(adreno_mlir.CompileError, match=r"node 'aa_resize' \(Resize\): antialias = 1 is not supported"):
        adreno_mlir.compile(model, textures=False)


@pytest.mark.parametrize("node, message", [
    (helper.make_node("Elu", ["x"], ["y"], name="bad", alpha=float("inf")), r"'graph.elu' alpha \(inf\) must be finite"),
    (helper.make_node("Resize", ["x", "", "scales"], ["y"], name="bad", mode="cubic", exclude_outside=2),
     r"'graph.resize' exclude_outside must be 0 or 1, got 2"),
    (helper.make_node("Resize", ["x", "", "scales"], ["y"], name="bad", mode="cubic", cubic_coeff_a=float("nan")),
     r"'graph.resize' cubic_coeff_a \(nan\) must be finite"),
], ids=["elu_alpha_inf", "exclude_outside_2", "cubic_coeff_a_nan"])
def test_bad_attributes_are_rejected_at_the_node(node, message):
    model = _model([node], [_const("scales", [1, 1, 2, 2])])
    with pytest.raises(adreno_mlir.CompileError, match=message + r' \(at loc\("bad"\)\)'):
        adreno_mlir.compile(model, textures=False)


def test_exclude_outside_with_nearest_is_refused():
    model = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rs", mode="nearest",
                                     exclude_outside=1)], [_const("scales", [1, 1, 2, 2])])
    with pytest.raises(adreno_mlir.CompileError, match=r"node 'rs' \(Resize\): exclude_outside = 1 is not supported "
                                                       r"with mode 'nearest'"):
        adreno_mlir.compile(model, textures=False)
