"""The operator forms of opsets 18-21 (what the dynamo exporter writes) against onnxruntime.

One small onnx.helper model per form, at the opset that introduced it: Reduce* with
`axes` as an input and `noop_with_empty_axes` (18), Split's `num_outputs` with an even
and an uneven split (18), Pad's `axes` input (18) and `wrap` mode (19), Resize's `axes`
and `keep_aspect_ratio_policy` (18, 19), GroupNormalization (18: scale/bias per group;
21: per channel), ops whose version bump only adds element types (Squeeze, Unsqueeze,
Reshape, Flatten, Transpose, Identity at 21; ReduceMax/Min at 20; Cast with `saturate` at
19, a float32 -> float32 cast). Each runs on the plain NCHW plan and the texture plan and
matches onnxruntime within 1e-5 relative to the largest reference value. The forms that
are refused are refused naming the attribute and its value.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import CompileError

RTOL = 1e-5
PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "textures": dict(textures=True),
}


def _model(nodes, inputs: dict, outputs: list[str], opset: int, inits: dict | None = None):
    g = helper.make_graph(
        nodes, "forms",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _data(shape, seed=0, low=None):
    rng = np.random.default_rng(seed)
    if low is not None:  # positive data (ReduceLogSum, ReduceProd near 1)
        return rng.uniform(low, low + 1.0, shape).astype(np.float32)
    return (rng.standard_normal(shape) + 0.2).astype(np.float32)


def _check(model, feeds: dict[str, np.ndarray], plan: str):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    refs = sess.run(names, feeds)
    got = adreno_mlir.compile(model, **PLANS[plan]).run(feeds)
    for name, ref in zip(names, refs):
        g = np.asarray(got[name])
        assert g.shape == ref.shape, (name, g.shape, ref.shape)
        err = float(np.abs(g - ref).max() / max(np.abs(ref).max(), 1e-30))
        assert err <= RTOL, f"{name} on {plan}: error {err:.2e}"


# ---------------------------------------------------------------- Reduce* with an axes input (18)


def _reduce(op, shape, axes=None, opset=18, **attrs):
    inputs, inits = ["x"], {}
    if axes is not None:
        inits["axes"] = np.array(axes, np.int64)
        inputs.append("axes")
    node = helper.make_node(op, inputs, ["y"], **attrs)
    return _model([node], {"x": shape}, ["y"], opset, inits)


REDUCE_CASES = {
    "mean-axes-input": ("ReduceMean", (2, 6, 5, 4), dict(axes=[1])),
    "mean-axes-input-keepdims0": ("ReduceMean", (2, 6, 5, 4), dict(axes=[2, 3], keepdims=0)),
    "mean-negative-axes": ("ReduceMean", (3, 4, 7), dict(axes=[-1, 0], keepdims=0)),
    "mean-no-axes-all": ("ReduceMean", (2, 3, 4), dict(keepdims=0)),
    "mean-noop-no-axes": ("ReduceMean", (2, 3, 4), dict(noop_with_empty_axes=1)),
    "mean-noop-empty-axes": ("ReduceMean", (2, 3, 4), dict(axes=np.zeros([0], np.int64), noop_with_empty_axes=1)),
    "mean-empty-axes-all": ("ReduceMean", (2, 3, 4), dict(axes=np.zeros([0], np.int64), noop_with_empty_axes=0)),
    "max-axes-input": ("ReduceMax", (2, 5, 6), dict(axes=[1], keepdims=0)),
    "max-opset20": ("ReduceMax", (2, 5, 6), dict(axes=[2], opset=20)),
    "min-axes-input": ("ReduceMin", (4, 3, 5), dict(axes=[0, 2])),
    "min-opset20": ("ReduceMin", (4, 3, 5), dict(axes=[-2], keepdims=0, opset=20)),
    "prod-axes-input": ("ReduceProd", (3, 4, 6), dict(axes=[2], keepdims=0)),
    "l1-axes-input": ("ReduceL1", (2, 9, 3), dict(axes=[1])),
    "l2-axes-input": ("ReduceL2", (3, 4, 10), dict(axes=[-1], keepdims=0)),
    "l2-noop-is-abs": ("ReduceL2", (3, 5), dict(noop_with_empty_axes=1)),
    "log-sum-axes-input": ("ReduceLogSum", (5, 3, 4), dict(axes=[0, 1])),
    "log-sum-exp-axes-input": ("ReduceLogSumExp", (2, 7, 3), dict(axes=[1], keepdims=0)),
    "sum-square-axes-input": ("ReduceSumSquare", (6, 8), dict(axes=[0])),
    "sum-square-noop": ("ReduceSumSquare", (2, 3, 4), dict(noop_with_empty_axes=1)),
}


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("case", list(REDUCE_CASES))
def test_reduce_axes_input(case, plan):
    op, shape, kw = REDUCE_CASES[case]
    low = 0.5 if op in ("ReduceProd", "ReduceLogSum") else None
    _check(_reduce(op, shape, **kw), {"x": _data(shape, low=low)}, plan)


def test_reduce_axes_computed_at_run_time_is_refused():
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="/mean")
    g = helper.make_graph([node], "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                        helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(CompileError, match=r"element type int64|must be a constant"):
        adreno_mlir.compile(model, **PLANS["nchw"])


# ---------------------------------------------------------------- Split num_outputs (18)


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("shape, axis, parts", [
    ((2, 6, 4), 1, 3),        # even: 2, 2, 2
    ((2, 7, 4), 1, 3),        # uneven: ceil(7 / 3) = 3, 3, 1
    ((1, 4, 5, 10), -1, 4),   # uneven on the last axis: 3, 3, 3, 1
    ((9, 2), 0, 2),           # 5, 4
])
def test_split_num_outputs(shape, axis, parts, plan):
    outs = [f"y{i}" for i in range(parts)]
    # each output through a Relu, so every slice is a kernel's input, not only a model output
    nodes = [helper.make_node("Split", ["x"], [f"s{i}" for i in range(parts)], axis=axis, num_outputs=parts)]
    nodes += [helper.make_node("Relu", [f"s{i}"], [o]) for i, o in enumerate(outs)]
    _check(_model(nodes, {"x": shape}, outs, 18), {"x": _data(shape)}, plan)


def test_split_num_outputs_mismatch_is_refused():
    node = helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=3, name="/split")
    model = _model([node], {"x": (6, 2)}, ["a", "b"], 18)
    with pytest.raises(CompileError, match=r"num_outputs = 3 but the node has 2 outputs|/split"):
        adreno_mlir.compile(model, **PLANS["nchw"])


# ---------------------------------------------------------------- Pad axes input (18), wrap (19)


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("mode, axes, pads, opset", [
    ("constant", [2, 3], [1, 2, 0, 1], 18),
    ("constant", [-1], [3, 2], 18),
    ("reflect", [3, 2], [2, 1, 1, 2], 18),
    ("edge", [1], [1, 2], 18),
    ("wrap", [2, 3], [1, 2, 2, 1], 19),
    ("wrap", [-1], [3, 0], 21),
    ("constant", [0, 2], [0, -1, 1, 0], 21),  # a negative pad crops
])
def test_pad_axes_input(mode, axes, pads, opset, plan):
    shape = (1, 3, 5, 6)
    inits = {"pads": np.array(pads, np.int64), "axes": np.array(axes, np.int64),
             "value": np.array(0.5, np.float32)}
    node = helper.make_node("Pad", ["x", "pads", "value" if mode == "constant" else "", "axes"], ["p"], mode=mode)
    model = _model([node, helper.make_node("Relu", ["p"], ["y"])], {"x": shape}, ["y"], opset, inits)
    _check(model, {"x": _data(shape)}, plan)


# ---------------------------------------------------------------- Resize axes / keep_aspect_ratio_policy (18, 19)


def _resize(shape, opset, scales=None, sizes=None, **attrs):
    inits, inputs = {}, ["x", "", ""]
    if scales is not None:
        inits["scales"] = np.array(scales, np.float32)
        inputs[2] = "scales"
    if sizes is not None:
        inits["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["y"], name="/resize", **attrs)
    return _model([node], {"x": shape}, ["y"], opset, inits)


RESIZE_CASES = {
    "scales-axes-2-3": (18, dict(scales=[2.0, 1.5], axes=[2, 3], mode="linear")),
    "scales-axes-3-2": (18, dict(scales=[2.0, 0.5], axes=[3, 2], mode="nearest")),
    "scales-axes-negative": (19, dict(scales=[3.0], axes=[-1], mode="nearest", nearest_mode="floor")),
    "sizes-axes-2-3": (18, dict(sizes=[9, 7], axes=[2, 3], mode="linear", coordinate_transformation_mode="align_corners")),
    "sizes-not-larger": (18, dict(sizes=[7, 7], axes=[2, 3], mode="nearest", keep_aspect_ratio_policy="not_larger")),
    "sizes-not-smaller": (18, dict(sizes=[7, 7], axes=[2, 3], mode="linear", keep_aspect_ratio_policy="not_smaller")),
    "half-pixel-symmetric": (19, dict(scales=[1.0, 1.0, 1.5, 2.0], mode="linear",
                                      coordinate_transformation_mode="half_pixel_symmetric")),
    "cubic-antialias-0": (19, dict(scales=[1.0, 1.0, 2.0, 2.0], mode="cubic", antialias=0)),
}


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("case", list(RESIZE_CASES))
def test_resize_opset18_attributes(case, plan):
    opset, kw = RESIZE_CASES[case]
    shape = (1, 3, 5, 6)
    _check(_resize(shape, opset, **kw), {"x": _data(shape)}, plan)


@pytest.mark.parametrize("kw, message", [
    (dict(scales=[0.5, 0.5], axes=[2, 3], mode="linear", antialias=1), r"antialias = 1 is not supported"),
    (dict(sizes=[4, 4], axes=[2, 3], keep_aspect_ratio_policy="fit"), r"keep_aspect_ratio_policy 'fit' is not supported"),
    (dict(scales=[2.0, 2.0], axes=[1, 2]), r"only the spatial axes"),
])
def test_resize_unsupported_forms_are_refused(kw, message):
    with pytest.raises(CompileError, match=rf"/resize.*{message}"):
        adreno_mlir.compile(_resize((1, 3, 8, 8), 18, **kw), **PLANS["nchw"])


# ---------------------------------------------------------------- GroupNormalization (18, 21)


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("opset, shape, groups", [
    (21, (2, 6, 4, 5), 3),
    (21, (1, 8, 7), 2),
    (21, (2, 4, 3, 3), 4),    # one channel per group: InstanceNormalization
    (21, (1, 6, 2, 3), 1),    # one group: a LayerNormalization over C, H, W
    (18, (2, 6, 4, 5), 3),    # GroupNormalization-18: one scale / bias per group
])
def test_group_normalization(opset, shape, groups, plan):
    c = shape[1]
    n_params = groups if opset < 21 else c
    rng = np.random.default_rng(7)
    inits = {"scale": rng.uniform(0.5, 1.5, n_params).astype(np.float32),
             "bias": rng.standard_normal(n_params).astype(np.float32)}
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=groups, epsilon=1e-3)
    _check(_model([node], {"x": shape}, ["y"], opset, inits), {"x": _data(shape) * 3}, plan)


@pytest.mark.parametrize("plan", list(PLANS))
def test_group_normalization_computed_scale(plan):
    """scale and bias computed at run time (GroupNormalization-18: per group, expanded),
    inside the graph: GroupNorm -> SiLU, as in a diffusion UNet (ONNX's shape inference
    gives GroupNormalization's output no shape; the importer infers it)."""
    shape = (1, 6, 3, 4)
    nodes = [helper.make_node("Relu", ["s"], ["sr"]),
             helper.make_node("GroupNormalization", ["x", "sr", "b"], ["n"], num_groups=3),
             helper.make_node("Sigmoid", ["n"], ["sg"]),
             helper.make_node("Mul", ["n", "sg"], ["y"])]
    model = _model(nodes, {"x": shape, "s": (3,), "b": (3,)}, ["y"], 18)
    _check(model, {"x": _data(shape), "s": _data((3,), 1), "b": _data((3,), 2)}, plan)


def test_group_normalization_bad_groups_is_refused():
    inits = {"scale": np.ones(6, np.float32), "bias": np.zeros(6, np.float32)}
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=4, name="/gn")
    with pytest.raises(CompileError, match=r"/gn.*num_groups = 4 must be positive and divide the 6 channels"):
        adreno_mlir.compile(_model([node], {"x": (1, 6, 2, 2)}, ["y"], 21, inits), **PLANS["nchw"])


# ---------------------------------------------------------------- version bumps that only add types (19-21)


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("opset", [19, 21])
def test_shape_ops_at_newer_opsets(opset, plan):
    """Unsqueeze -> Reshape -> Transpose -> Squeeze -> Flatten -> Identity -> Cast
    (saturate = 1, float32 -> float32) -> LayerNormalization, at opsets 19 and 21."""
    inits = {"ax": np.array([0], np.int64), "shape": np.array([1, 3, 4, 5], np.int64),
             "sq": np.array([0], np.int64), "g": np.linspace(0.5, 1.5, 20).astype(np.float32)}
    nodes = [helper.make_node("Unsqueeze", ["x", "ax"], ["u"]),
             helper.make_node("Reshape", ["u", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 3, 2]),
             helper.make_node("Squeeze", ["t", "sq"], ["s"]),
             helper.make_node("Flatten", ["s"], ["f"], axis=1),
             helper.make_node("Identity", ["f"], ["i"]),
             helper.make_node("Cast", ["i"], ["c"], to=TensorProto.FLOAT, saturate=1),
             helper.make_node("LayerNormalization", ["c", "g"], ["y"], axis=-1)]
    _check(_model(nodes, {"x": (3, 20)}, ["y"], opset, inits), {"x": _data((3, 20))}, plan)
