"""The ONNX reductions (ReduceSum/Max/Min/Mean/Prod/L1/L2/SumSquare/LogSum/LogSumExp),
LogSoftmax and InstanceNormalization against onnxruntime.

Each model is one node (or a small chain) built with onnx.helper, compiled on the three
plans (plain NCHW buffers; NCHW4c buffers; NCHW4c with images where legal) and compared
with onnxruntime at 1e-5 relative to the largest reference value. The cases cover any
axes (leading, middle, trailing, several, all, negative), keepdims 0 and 1,
noop_with_empty_axes (an identity for sum/max/min/mean/prod, the per-element transform
|x|, x * x, log x for the others, as onnxruntime computes it), axes as an attribute
(ReduceSum before opset 13, the others before 18) or as a constant input, and ranks 2-5.

Only ReduceMean has NCHW4c kernels (the spatial mean); every other kind must stay on
plain tensors on the NCHW4c plans (convert-layout-nchw4c leaves ops without the
NCHW4cConvertible trait alone, with unpack/pack around them). The work-group kernels
(`reduce_items` > 1) run through a kernel_config override and the GPU profile's rule;
a NaN makes exactly its own ReduceMax/ReduceMin output NaN (numpy's semantics) in both
schedules.
"""

from __future__ import annotations

import json
import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import CompileError

RTOL = 1e-5
PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "nchw4c": dict(layout="nchw4c", textures=False),
    "textures": dict(textures=True),
}

# The opset that takes axes as an input (ReduceSum: 13, the others: 18).
AXES_INPUT_OPSET = {"ReduceSum": 13}


def _ort(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _scaled_error(got: np.ndarray, ref: np.ndarray) -> float:
    assert got.shape == ref.shape, (got.shape, ref.shape)
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


def reduce_model(op: str, shape, axes=None, keepdims: int | None = None, noop: int | None = None,
                 attr_axes: bool = False, name: str = "/reduce"):
    """One reduction node. `attr_axes`: axes as an attribute (opset 11), else as a
    constant input (opset 13 for ReduceSum, 18 for the others); `axes=None`: none given."""
    attrs = {}
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    inits, inputs = [], ["x"]
    if attr_axes:
        opset = 11
        if axes is not None:
            attrs["axes"] = list(axes)
    else:
        opset = AXES_INPUT_OPSET.get(op, 18)
        if noop is not None:
            attrs["noop_with_empty_axes"] = noop
        if axes is not None:
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            inputs.append("axes")
    node = helper.make_node(op, inputs, ["y"], name=name, **attrs)
    g = helper.make_graph([node], "reduce", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _data(op: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if op in ("ReduceProd", "ReduceLogSum"):  # near 1 (no overflow) / positive sums
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if op == "ReduceLogSumExp":  # large values: exp(x) alone overflows float32
        return (rng.standard_normal(shape) * 3 + 90).astype(np.float32)
    return (rng.standard_normal(shape) + 0.2).astype(np.float32)


# name: (op, shape, reduce_model keywords)
CASES = {
    "sum-axis1-nokeep": ("ReduceSum", (2, 5, 7), dict(axes=[1], keepdims=0)),
    "sum-opset11-attr-negative": ("ReduceSum", (3, 4, 6), dict(axes=[-1], keepdims=1, attr_axes=True)),
    "sum-all-default": ("ReduceSum", (2, 3, 4), dict()),
    "sum-empty-axes-noop": ("ReduceSum", (2, 3, 4), dict(axes=[], noop=1)),
    "sum-empty-axes-all": ("ReduceSum", (2, 3, 4), dict(axes=[], keepdims=0)),
    "max-spatial-4d": ("ReduceMax", (1, 6, 5, 7), dict(axes=[2, 3], keepdims=1)),
    "max-leading-nokeep": ("ReduceMax", (4, 3, 5), dict(axes=[0], keepdims=0)),
    "max-opset13-attr": ("ReduceMax", (2, 8, 3), dict(axes=[1, 2], attr_axes=True)),
    "min-middle-5d": ("ReduceMin", (2, 3, 4, 2, 3), dict(axes=[1, 3], keepdims=0)),
    "min-all-nokeep": ("ReduceMin", (3, 9), dict(keepdims=0)),
    "mean-channels": ("ReduceMean", (1, 12, 4, 4), dict(axes=[1], keepdims=1)),
    "mean-spatial-4d": ("ReduceMean", (2, 6, 5, 5), dict(axes=[2, 3], keepdims=1)),
    "prod-last": ("ReduceProd", (3, 4, 10), dict(axes=[-1], keepdims=0)),
    "prod-noop": ("ReduceProd", (3, 4), dict(axes=[], noop=1)),
    "l1-middle": ("ReduceL1", (2, 9, 3), dict(axes=[1])),
    "l2-last-nokeep": ("ReduceL2", (3, 4, 50), dict(axes=[2], keepdims=0)),
    "l2-noop-is-abs": ("ReduceL2", (3, 5), dict(axes=[], noop=1)),
    "l2-opset11-attr": ("ReduceL2", (2, 3, 4, 5), dict(axes=[0, 2], keepdims=1, attr_axes=True)),
    "sum-square-2d": ("ReduceSumSquare", (6, 33), dict(axes=[0], keepdims=0)),
    "sum-square-noop": ("ReduceSumSquare", (2, 3, 4), dict(axes=[], noop=1)),
    "log-sum-leading": ("ReduceLogSum", (5, 3, 4), dict(axes=[0, 1], keepdims=1)),
    "log-sum-exp-large": ("ReduceLogSumExp", (2, 3, 40), dict(axes=[2], keepdims=0)),
    "log-sum-exp-middle": ("ReduceLogSumExp", (2, 7, 3), dict(axes=[1])),
}


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("case", list(CASES))
def test_reduction_matches_onnxruntime(case, plan):
    op, shape, kw = CASES[case]
    model = reduce_model(op, shape, **kw)
    x = _data(op, shape)
    (ref,) = _ort(model, {"x": x})
    cm = adreno_mlir.compile(model, **PLANS[plan])
    got = cm.run({"x": x})["y"]
    err = _scaled_error(got, ref)
    assert err <= RTOL, f"{case} on {plan}: error {err:.2e}"


@pytest.mark.parametrize("plan", ["nchw4c", "textures"])
def test_only_the_spatial_mean_is_packed(plan):
    """On the NCHW4c plans ReduceMean over the spatial axes becomes the packed global
    mean; ReduceMax over the same axes keeps the plain-tensor kernel (it has no NCHW4c
    kernel, so convert-layout-nchw4c must leave it alone), with the same numbers."""
    shape = (1, 6, 5, 7)
    x = _data("ReduceMax", shape)
    cm = adreno_mlir.compile(reduce_model("ReduceMean", shape, axes=[2, 3]), **PLANS[plan])
    assert "global_avgpool_4c" in cm.source, cm.source
    model = reduce_model("ReduceMax", shape, axes=[2, 3])
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    assert re.search(r"__kernel void reduce_max\(", cm.source), cm.source
    layout_ir = cm.stage_ir["layout"]
    assert re.search(r"graph\.reduce_max %\w+ \{axes = array<i64: 2, 3>\} : \(tensor<", layout_ir), layout_ir
    assert _scaled_error(cm.run({"x": x})["y"], _ort(model, {"x": x})[0]) <= RTOL


def _conv_reduce_relu(op: str):
    """Conv (6 -> 6 channels) -> a reduction over H, W -> Relu: on the NCHW4c plans the
    conv's packed result is unpacked for the reduction; on the NCHW plan the reduction's
    kernel takes the Relu as its fused epilogue."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array((rng.standard_normal((6, 6, 3, 3)) * 0.3).astype(np.float32), "w")
    axes = numpy_helper.from_array(np.array([2, 3], np.int64), "axes")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node(op, ["c", "axes"], ["r"], name="/reduce"),
             helper.make_node("Relu", ["r"], ["y"])]
    g = helper.make_graph(nodes, "conv_reduce", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 9, 9])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 1, 1])], [w, axes])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceL2", "ReduceSum"])
def test_reduction_after_conv_with_fused_relu(op, plan):
    model = _conv_reduce_relu(op)
    x = np.random.default_rng(4).standard_normal((1, 6, 9, 9)).astype(np.float32)
    cm = adreno_mlir.compile(model, **PLANS[plan])
    kind = op.removeprefix("Reduce").lower()
    # On every plan the Relu fuses into the plain-tensor reduction: convert-layout-nchw4c
    # packs an element-wise op only when an operand is already packed (or a model input).
    assert re.search(rf"__kernel void reduce_{kind}_relu\(", cm.source), cm.source
    assert _scaled_error(cm.run({"x": x})["y"], _ort(model, {"x": x})[0]) <= RTOL


def _config_ir(cm) -> str:
    """The IR after select-kernel-config (a custom pipeline names its stages by pass)."""
    return cm.stage_ir.get("config") or cm.stage_ir["select-kernel-config"]


def _with_overrides(tmp_path, entries: dict):
    """A `pipeline=` giving select-kernel-config an overrides file of `entries`."""
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps(entries))
    return lambda p: p.replace("select-kernel-config{", f'select-kernel-config{{overrides="{path}" ')


@pytest.mark.parametrize("items", [16, 64])
@pytest.mark.parametrize("op, shape, axes", [
    ("ReduceMax", (3, 4, 150), [2]), ("ReduceMin", (5, 40, 6), [1]), ("ReduceProd", (2, 3, 37), [2]),
    ("ReduceL2", (4, 100), [1]), ("ReduceLogSumExp", (3, 70), [1]), ("ReduceSum", (2, 3, 20), [0, 2]),
])
def test_work_group_reduction(op, shape, axes, items, tmp_path):
    """reduce_items > 1 from an overrides entry (`loc:` + node name): a work-group per
    output combining its partial results in local memory with the kind's own operation
    (16 work-items for 6 elements leave most of them idle: they contribute the identity)."""
    model = reduce_model(op, shape, axes=axes, keepdims=0)
    cm = adreno_mlir.compile(model, keep_ir=True, layout="nchw", textures=False,
                             pipeline=_with_overrides(tmp_path, {"loc:/reduce": {"reduce_items": items}}))
    kind = op.removeprefix("Reduce")
    kind = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()
    assert f"reduce_items = {items} : i64" in _config_ir(cm)
    assert re.search(rf"__kernel void reduce_{kind}_wg{items}\(", cm.source), cm.source
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in cm.source and f"partial[{items}]" in cm.source
    x = _data(op, shape)
    assert _scaled_error(cm.run({"x": x})["y"], _ort(model, {"x": x})[0]) <= RTOL


def test_gpu_rule_picks_work_groups_for_every_kind():
    """select-kernel-config's rule on a GPU profile: the extent alone decides (300
    elements: 128 work-items), whatever the kind."""
    for op in ("ReduceMax", "ReduceL1", "ReduceLogSumExp"):
        model = reduce_model(op, (2, 300), axes=[1], keepdims=0)
        cm = adreno_mlir.compile(model, keep_ir=True, target="adreno-740", layout="nchw", textures=False)
        assert "reduce_items = 128 : i64" in _config_ir(cm), op
        x = _data(op, (2, 300))
        assert _scaled_error(cm.run({"x": x})["y"], _ort(model, {"x": x})[0]) <= RTOL, op


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("items", [1, 32])
def test_nan_propagates_to_its_output_only(op, items, tmp_path):
    """A NaN anywhere in a row (first, in the middle, last: in any work-item's share)
    makes that row's maximum / minimum NaN, as numpy's does; the other rows are exact.
    (onnxruntime's CPU kernel returns NaN or not depending on where the NaN lies, so the
    reference here is numpy.)"""
    shape = (6, 200)
    model = reduce_model(op, shape, axes=[1], keepdims=0)
    cm = adreno_mlir.compile(model, layout="nchw", textures=False,
                             pipeline=_with_overrides(tmp_path, {"loc:/reduce": {"reduce_items": items}}))
    assert ("barrier(" in cm.source) == (items > 1)
    x = _data(op, shape)
    for row, col in ((0, 0), (2, 117), (4, 199)):
        x[row, col] = np.nan
    x[5, 3] = np.inf if op == "ReduceMax" else -np.inf
    got = cm.run({"x": x})["y"]
    ref = np.max(x, axis=1) if op == "ReduceMax" else np.min(x, axis=1)
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.isnan(got[[0, 2, 4]]).all(), got
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(got[ok], ref[ok])


def test_log_sum_exp_infinities():
    """Infinite elements: a +inf element gives +inf, a row of -inf gives -inf (the
    maximum is clamped to +-FLT_MAX before x - max, so no inf - inf NaN), a NaN gives NaN."""
    model = reduce_model("ReduceLogSumExp", (4, 5), axes=[1], keepdims=0)
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    x[0, 2] = np.inf
    x[1, :] = -np.inf
    x[2, 4] = np.nan
    got = adreno_mlir.compile(model, layout="nchw", textures=False).run({"x": x})["y"]
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    ref = np.log(np.exp(x[3].astype(np.float64)).sum())
    assert abs(got[3] - ref) <= 1e-5 * abs(ref)


def test_bad_axes_are_rejected():
    with pytest.raises(CompileError, match=r"axes \[3\] are out of range for an input of rank 3"):
        adreno_mlir.compile(reduce_model("ReduceMax", (2, 3, 4), axes=[3], attr_axes=True))


# --------------------------------------------------------------------------- LogSoftmax


def softmax_model(op: str, shape, axis: int | None, opset: int):
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node(op, ["x"], ["y"], name="/softmax", **attrs)
    g = helper.make_graph([node], "softmax", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


LOG_SOFTMAX_CASES = {
    "last-axis": ((3, 4, 50), None, 13),
    "axis1-4d": ((2, 5, 3, 4), 1, 13),
    "axis0": ((6, 7), 0, 13),
    "negative": ((2, 3, 9), -2, 13),
    "opset11-coerced-2d": ((2, 3, 4, 5), 1, 11),  # normalised over 3 * 4 * 5 = 60 elements
    "opset11-default-axis": ((3, 4, 5), None, 11),
    "opset11-last": ((4, 6), -1, 11),
}


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("case", list(LOG_SOFTMAX_CASES))
def test_log_softmax_matches_onnxruntime(case, plan):
    shape, axis, opset = LOG_SOFTMAX_CASES[case]
    model = softmax_model("LogSoftmax", shape, axis, opset)
    x = (np.random.default_rng(2).standard_normal(shape) * 4).astype(np.float32)
    x.reshape(-1)[::7] += 60.0  # large entries: exp(x) alone would overflow, log(softmax) underflow
    cm = adreno_mlir.compile(model, **PLANS[plan])
    assert "log_softmax" in cm.source
    (ref,) = _ort(model, {"x": x})
    got = cm.run({"x": x})["y"]
    assert np.isfinite(got).all()
    assert _scaled_error(got, ref) <= RTOL, case


@pytest.mark.parametrize("items", [16, 64])
def test_log_softmax_work_group(items, tmp_path):
    model = softmax_model("LogSoftmax", (4, 3, 100), -1, 13)
    cm = adreno_mlir.compile(model, layout="nchw", textures=False,
                             pipeline=_with_overrides(tmp_path, {"loc:/softmax": {"reduce_items": items}}))
    assert re.search(rf"__kernel void log_softmax_wg{items}\(", cm.source), cm.source
    x = (np.random.default_rng(5).standard_normal((4, 3, 100)) * 5).astype(np.float32)
    assert _scaled_error(cm.run({"x": x})["y"], _ort(model, {"x": x})[0]) <= RTOL


# --------------------------------------------------------------------------- InstanceNormalization


def instance_norm_model(shape, constant_params: bool, epsilon: float | None = None, conv: bool = False):
    """InstanceNormalization with scale/bias as initializers or as graph inputs
    (computed at run time), optionally after a Conv and followed by a Relu."""
    rng = np.random.default_rng(6)
    c = shape[1]
    scale = (rng.standard_normal(c) + 1).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    attrs = {} if epsilon is None else {"epsilon": epsilon}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]
    inits, feeds = [], {}
    if constant_params:
        inits += [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")]
    else:
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [c]) for n in ("s", "b")]
        feeds = {"s": scale, "b": bias}
    nodes, src = [], "x"
    if conv:
        inits.append(numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) * 0.3).astype(np.float32), "w"))
        nodes.append(helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]))
        src = "c"
    nodes.append(helper.make_node("InstanceNormalization", [src, "s", "b"], ["n"], name="/inorm", **attrs))
    nodes.append(helper.make_node("Relu", ["n"], ["y"]))
    g = helper.make_graph(nodes, "inorm", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), feeds


INSTANCE_NORM_CASES = {
    "4d-constant": ((2, 6, 7, 9), True, None, False),
    "4d-runtime-params-eps": ((1, 3, 5, 5), False, 0.01, False),
    "3d-runtime-params": ((2, 4, 30), False, None, False),
    "5d-constant": ((1, 2, 3, 4, 5), True, 1e-3, False),
    "after-conv": ((1, 6, 8, 8), True, None, True),
}


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("case", list(INSTANCE_NORM_CASES))
def test_instance_norm_matches_onnxruntime(case, plan):
    shape, constant, eps, conv = INSTANCE_NORM_CASES[case]
    model, feeds = instance_norm_model(shape, constant, eps, conv)
    x = (np.random.default_rng(7).standard_normal(shape) * 2 + 0.5).astype(np.float32)
    feeds = {"x": x, **feeds}
    cm = adreno_mlir.compile(model, **PLANS[plan])
    assert "layer_norm" in cm.source
    assert _scaled_error(cm.run(feeds)["y"], _ort(model, feeds)[0]) <= RTOL, case


def test_instance_norm_imports_as_layer_norm_and_one_fused_multiply_add():
    """graph.layer_norm over axes [2, rank) with scale 1, then mul/add by [C, 1, 1]
    scale and bias (folded constants) and the Relu: two kernels."""
    model, _ = instance_norm_model((2, 6, 7, 9), True)
    cm = adreno_mlir.compile(model, keep_ir=True, layout="nchw", textures=False)
    ir = cm.stage_ir["graph"]
    assert re.search(r"graph\.layer_norm %x, %\w+ \{axis = 2 : i64\}", ir), ir
    assert cm.source.count("__kernel") == 2, cm.source


def test_instance_norm_rejects_rank_2():
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])
    g = helper.make_graph([node], "inorm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(np.ones(3, np.float32), n) for n in ("s", "b")])
    with pytest.raises(CompileError, match=r"rank >= 3"):
        adreno_mlir.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
