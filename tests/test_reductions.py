"""Work-group reductions (issue 13): global average pooling and ReduceMean.

On GPU targets select-kernel-config gives each mean `reduce_items` work-items per output
(`Rules.reduce`: the most of 16-256 that leave each work-item two elements, 1 under 32
elements); the kernels (lowering/kernels/packed_pool.py PackedMeanSpec for NCHW4c tensors,
lowering/kernels/pool.py ReduceSpec for plain ones) then sum strided shares of the
reduced extent per work-item and add the partial sums as a tree in local memory. CPU
targets keep one work-item per output looping over the whole extent.

The models run on the test device (PoCL, and Intel's CPU runtime for precision fp16)
with the Adreno profile's rules, so the work-group kernels really execute: a kernel that
assumed another work-group size, skipped a barrier or dropped the elements of a partial
work-group would give wrong means. Shapes cover both schedules and the edges: 112x112 and
56x56 (256 work-items; 3136 pixels do not divide by 256), 13x17 with batch 2 and 6
channels (a partial channel block), 7x7 (16 work-items for 49 pixels), 1x1 and 4x4
(serial), ReduceMean with and without keepdims, over the channels (a non-trailing axis)
and over the last axis of a 3-D tensor, and fused epilogues (Relu, HardSigmoid, an Add
of a per-channel constant).
"""

from __future__ import annotations

import json
import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from tests.test_models import scaled_error

PLANS = {
    "nchw": {"layout": "nchw"},
    "nchw-gpu": {"layout": "nchw", "textures": False, "target": "adreno-740"},
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
    "fp16-acc32": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
}
"""The plans of tests/test_artifact.py, plus the NCHW buffer plan on the Adreno profile
(the plain-tensor kernel's work-group schedule). `{}` compiles for the default device
(PoCL, a CPU: serial loops)."""

TOLERANCE = {"fp32": 1e-4, "fp16-acc32": 5e-2, "fp16": 5e-2}


def expected_items(extent: int, gpu: bool) -> int:
    """select-kernel-config's rule for `reduce_items`."""
    if not gpu:
        return 1
    return max((n for n in (16, 32, 64, 128, 256) if 2 * n <= extent), default=1)


def _model(shape, op: str = "gap", axes=(2, 3), keepdims: int = 1, tail: str | None = None):
    """One mean ("/pool": GlobalAveragePool or ReduceMean) with an optional element-wise
    tail that graph-fuse fuses into its kernel: relu, hardsigmoid, or an add of a
    per-channel constant (broadcast over the reduced axes)."""
    f = TensorProto.FLOAT
    if op == "gap":
        nodes = [helper.make_node("GlobalAveragePool", ["input"], ["m"], name="/pool")]
        out_shape = [*shape[:2], *[1] * (len(shape) - 2)]
    else:
        nodes = [helper.make_node("ReduceMean", ["input"], ["m"], axes=list(axes), keepdims=keepdims, name="/pool")]
        out_shape = [1 if d in axes else s for d, s in enumerate(shape) if keepdims or d not in axes]
    inits = []
    if tail == "relu":
        nodes.append(helper.make_node("Relu", ["m"], ["t"], name="/relu"))
    elif tail == "hardsigmoid":
        nodes.append(helper.make_node("HardSigmoid", ["m"], ["t"], name="/hsig"))
    elif tail == "add":
        bias = np.random.default_rng(5).standard_normal([1, shape[1], *[1] * (len(shape) - 2)]).astype(np.float32)
        inits.append(numpy_helper.from_array(bias, "bias"))
        nodes.append(helper.make_node("Add", ["m", "bias"], ["t"], name="/add"))
    nodes[-1].output[0] = "output"
    g = helper.make_graph(nodes, "mean", [helper.make_tensor_value_info("input", f, list(shape))],
                          [helper.make_tensor_value_info("output", f, out_shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


# name: (input shape, _model keywords, reduced extent)
MODELS = {
    "gap-112x112-relu": ((1, 16, 112, 112), {"tail": "relu"}, 112 * 112),
    "gap-56x56-add": ((1, 24, 56, 56), {"tail": "add"}, 56 * 56),
    "gap-13x17-batch2": ((2, 6, 13, 17), {}, 13 * 17),
    "gap-7x7-hardsigmoid": ((1, 40, 7, 7), {"tail": "hardsigmoid"}, 49),
    "gap-4x4": ((1, 8, 4, 4), {}, 16),
    "gap-1x1-relu": ((1, 8, 1, 1), {"tail": "relu"}, 1),
    "mean-keepdims-relu": ((1, 12, 20, 20), {"op": "mean", "tail": "relu"}, 400),
    "mean-no-keepdims": ((1, 12, 20, 20), {"op": "mean", "keepdims": 0}, 400),
    "mean-channels": ((1, 64, 5, 5), {"op": "mean", "axes": (1,)}, 64),
    "mean-last-axis-3d": ((2, 6, 300), {"op": "mean", "axes": (2,), "keepdims": 0}, 300),
}


def _feeds(shape, seed: int = 0, offset: float = 0.3) -> dict[str, np.ndarray]:
    # An offset keeps the means away from 0, so the scaled error measures the sum.
    return {"input": (np.random.default_rng(seed).standard_normal(shape) + offset).astype(np.float32)}


def _ort(model, feeds) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _uses_work_group(source: str) -> bool:
    return "barrier(CLK_LOCAL_MEM_FENCE)" in source and "__local float" in source


def _config_ir(cm) -> str:
    """The IR after select-kernel-config (a custom pipeline names its stages by pass)."""
    return cm.stage_ir.get("config") or cm.stage_ir["select-kernel-config"]


def _with_overrides(tmp_path, entries: dict, target: str = "adreno-740"):
    """A `pipeline=` that gives select-kernel-config an overrides file of `entries`."""
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps(entries))
    return lambda p: p.replace(f"select-kernel-config{{target={target}",
                               f'select-kernel-config{{target={target} overrides="{path}"')


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("name", list(MODELS))
def test_mean_matches_onnxruntime(name, plan):
    shape, kwargs, extent = MODELS[name]
    model = _model(shape, **kwargs)
    options = PLANS[plan]
    cm = adreno_mlir.compile(model, **options)
    feeds = _feeds(shape)
    err = scaled_error(cm.run(feeds)["output"], _ort(model, feeds))
    assert err <= TOLERANCE[options.get("precision", "fp32")], f"{name}, plan {plan}: error {err:.2e}"
    # The schedule the rule picks (GPU targets only), seen in the printed kernels.
    items = expected_items(extent, gpu="target" in options)
    assert _uses_work_group(cm.source) == (items > 1), cm.source
    if items > 1:
        assert f"__local float4 partial[{items}]" in cm.source or f"__local float partial[{items}]" in cm.source


@pytest.mark.parametrize("name", ["gap-112x112-relu", "gap-56x56-add", "gap-13x17-batch2", "gap-7x7-hardsigmoid",
                                  "gap-1x1-relu", "mean-keepdims-relu", "mean-channels"])
def test_fp16_mean_matches_onnxruntime(name, half_device):
    """precision fp16: the kernel reads half pixels and applies its epilogue in half, but
    sums (and keeps its local partial sums) in f32."""
    shape, kwargs, extent = MODELS[name]
    model = _model(shape, **kwargs)
    cm = adreno_mlir.compile(model, device=half_device, precision="fp16", textures=True, target="adreno-740")
    feeds = _feeds(shape)
    err = scaled_error(cm.run(feeds)["output"], _ort(model, feeds))
    assert err <= TOLERANCE["fp16"], f"{name}: fp16 error {err:.2e}"
    if expected_items(extent, gpu=True) > 1 and "4c" in " ".join(re.findall(r"__kernel void (\w+)", cm.source)):
        assert "__local float4 partial[" in cm.source and "half4" in cm.source


@pytest.mark.parametrize("items", [1, 256])
def test_fp16_mean_of_large_values_sums_in_f32(items, half_device, tmp_path):
    """12544 pixels of about 100 sum to 1.25e6, far past half's 65504: the sum and the
    partial sums in local memory must be f32 in a half kernel, in both schedules."""
    shape = (1, 8, 112, 112)
    model = _model(shape)
    cm = adreno_mlir.compile(model, device=half_device, precision="fp16", textures=True, target="adreno-740",
                             pipeline=_with_overrides(tmp_path, {"loc:/pool": {"reduce_items": items}}))
    assert _uses_work_group(cm.source) == (items > 1)
    feeds = _feeds(shape, offset=100.0)
    got = cm.run(feeds)["output"]
    assert np.isfinite(got).all()
    assert scaled_error(got, _ort(model, feeds)) <= 1e-3


@pytest.mark.parametrize("plan", ["nchw-gpu", "nchw4c-buffers", "nchw4c-textures"])
def test_nan_reaches_only_its_mean(plan):
    """One NaN pixel makes its channel's mean NaN (in whichever work-item's share it
    lies) and no other."""
    shape = (1, 8, 56, 56)
    model = _model(shape)
    cm = adreno_mlir.compile(model, **PLANS[plan])
    assert _uses_work_group(cm.source)
    feeds = _feeds(shape)
    feeds["input"][0, 5, 30, 17] = np.nan
    got = cm.run(feeds)["output"].reshape(8)
    assert np.isnan(got[5]) and np.isfinite(np.delete(got, 5)).all(), got
    ref = _ort(model, feeds).reshape(8)
    assert np.allclose(np.delete(got, 5), np.delete(ref, 5), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape, target, items", [
    ((1, 16, 112, 112), "adreno-740", 256), ((1, 16, 56, 56), "adreno-740", 256), ((1, 16, 13, 17), "adreno-740", 64),
    ((1, 16, 7, 7), "adreno-740", 16), ((1, 16, 4, 4), "adreno-740", 1), ((1, 16, 1, 1), "adreno-740", 1),
    ((1, 16, 112, 112), "pocl-cpu", 1),
])
def test_config_shows_reduce_items(shape, target, items):
    """The rule's choice is the op's kernel_config in the IR, and the kernel follows it."""
    cm = adreno_mlir.compile(_model(shape, tail="relu"), target=target, textures=True, keep_ir=True)
    assert f"kernel_config = {{reduce_items = {items} : i64}}" in _config_ir(cm)
    suffix = f"_wg{items}" if items > 1 else ""
    assert re.search(rf"__kernel void global_avgpool_4c{suffix}_relu\(", cm.source), cm.source
    assert _uses_work_group(cm.source) == (items > 1)


@pytest.mark.parametrize("plan", ["nchw-gpu", "nchw4c-textures"])
@pytest.mark.parametrize("name, items", [("gap-56x56-add", 1), ("gap-56x56-add", 16), ("gap-1x1-relu", 256),
                                         ("gap-13x17-batch2", 128)])
def test_override_changes_the_kernel(name, items, plan, tmp_path):
    """An overrides entry for the node sets reduce_items: 1 gives the serial loop (no
    local memory, no barrier), any other size a work-group of that size, also one larger
    than the extent (255 of 256 work-items add nothing to a 1x1 mean)."""
    shape, kwargs, _ = MODELS[name]
    model = _model(shape, **kwargs)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan],
                             pipeline=_with_overrides(tmp_path, {"loc:/pool": {"reduce_items": items}}))
    assert f"reduce_items = {items} : i64" in _config_ir(cm)
    assert _uses_work_group(cm.source) == (items > 1)
    if items > 1:
        assert re.search(rf"partial\[{items}\];", cm.source)
    feeds = _feeds(shape)
    assert scaled_error(cm.run(feeds)["output"], _ort(model, feeds)) <= 1e-4


def test_work_groups_on_the_cpu_profile(tmp_path):
    """The CPU rule keeps the loop; an override still gets the work-group kernel there."""
    shape, kwargs, _ = MODELS["mean-no-keepdims"]
    model = _model(shape, **kwargs)
    plan = {"layout": "nchw", "textures": False, "target": "pocl-cpu"}
    assert not _uses_work_group(adreno_mlir.compile(model, **plan).source)
    cm = adreno_mlir.compile(model, **plan, pipeline=_with_overrides(tmp_path, {"loc:/pool": {"reduce_items": 64}},
                                                                     target="pocl-cpu"))
    assert "reduce_mean_wg64" in cm.source
    feeds = _feeds(shape)
    assert scaled_error(cm.run(feeds)["output"], _ort(model, feeds)) <= 1e-4


def test_work_group_launch_sizes():
    """Each mean's launch names the work-group size its kernel is written for."""
    cm = adreno_mlir.compile(_model((2, 6, 13, 17)), keep_ir=True, **PLANS["nchw4c-buffers"])
    assert re.search(r"opencl.launch @global_avgpool_4c_wg64\(.*\) global \[64, 1, 4\] local \[64, 1, 1\]",
                     cm.stage_ir["opencl"]), cm.stage_ir["opencl"]
    cm = adreno_mlir.compile(_model((2, 6, 300), op="mean", axes=(2,), keepdims=0), keep_ir=True, **PLANS["nchw-gpu"])
    assert re.search(r"opencl.launch @reduce_mean_wg128\(.*\) global \[128, 12\] local \[128, 1\]",
                     cm.stage_ir["opencl"]), cm.stage_ir["opencl"]
