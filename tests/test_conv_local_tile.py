"""The conv4c family's `local_tile` (lowering/kernels/packed_conv.py::PackedConvTileSpec): a
groups-1 1x1 stride-1 unpadded convolution as a GEMM (output channels x pixels) whose
work-groups compute T x T blocks from weight and input slices staged in local memory, with
the bias and the fused packed epilogue (Relu, a residual Add). Against onnxruntime on PoCL
for every T, ragged output channels / pixels / input channels, batches, images and buffers
(f32 and f16 storage); the default rule (GPUs with 16 or more compute units, large convs
only: the `nvidia-h200` profile picks it, the CPU does not) and the refusals naming the key."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnxruntime as ort
import pytest
from adreno_mlir.lowering.families.base import DEFAULT_RULES
from adreno_mlir.lowering.families.conv4c import CONV4C
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

RNG = np.random.default_rng(7)


def _model(n, ci, h, w, co, residual=False, kernel=1, stride=1):
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, ci, h, w])]
    inits = [numpy_helper.from_array(RNG.standard_normal((co, ci, kernel, kernel)).astype(np.float32), "w"),
             numpy_helper.from_array(RNG.standard_normal(co).astype(np.float32), "b")]
    pads = [kernel // 2] * 4
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=pads, strides=[stride, stride]),
             helper.make_node("Relu", ["c"], ["r"], name="act")]
    out = "r"
    if residual:  # fused into the conv's epilogue: the region ends at the Add
        oh, ow = -(-h // stride), -(-w // stride)
        ins.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, [n, co, oh, ow]))
        nodes.append(helper.make_node("Add", ["r", "s"], ["y"], name="add"))
        out = "y"
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _feeds(model):
    return {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


def _check(cm, model, feeds, tol=1e-5):
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = next(iter(cm.run(feeds).values()))
    assert got.shape == ref.shape
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= tol


PLANS = {
    "images": {"textures": True},
    "buffers": {"textures": False, "layout": "nchw4c"},
}

CASES = [  # (n, ci, h, w, co, residual), tile, plan
    # 72 output channels (18 blocks: ragged for every tile), 480 pixels (ragged for 64 and 128)
    ((1, 64, 20, 24, 72, False), 32, "images"),
    ((1, 64, 20, 24, 72, False), 64, "buffers"),
    ((1, 64, 20, 24, 72, True), 128, "images"),
    # 100 input channels (25 blocks: a ragged last K slice), 63 pixels, batch 2
    ((2, 100, 9, 7, 36, True), 64, "images"),
    ((2, 100, 9, 7, 36, True), 32, "buffers"),
    ((2, 100, 9, 7, 36, False), 128, "buffers"),
    # 3 input channels (one padded block), 5 output channels, a one-row plane
    ((1, 3, 1, 40, 5, True), 32, "buffers"),
]


@pytest.mark.parametrize(("shape", "tile", "plan"), CASES)
def test_local_tile_matches_onnxruntime(shape, tile, plan):
    n, ci, h, w, co, residual = shape
    model = _model(n, ci, h, w, co, residual)
    end = "loc:add" if residual else "loc:act"  # the node that ends the fused region
    cm = adreno_mlir.compile(model, overrides={end: {"local_tile": tile}}, **PLANS[plan])
    rows, cols = {32: (4, 4), 64: (8, 4), 128: (8, 8)}[tile]
    assert f"__kernel void conv1x1_lt{tile}_{rows}x{cols}_4c_relu{'_add' if residual else ''}(" in cm.source
    assert f"reqd_work_group_size({tile // cols}, {tile // rows}, 1)" in cm.source
    _check(cm, model, _feeds(model))


def test_local_tile_with_half_storage():
    """fp16 storage (fp16-acc32): half input and output buffers, f32 sums and weights."""
    model = _model(1, 64, 20, 24, 72, True)
    cm = adreno_mlir.compile(model, textures=False, layout="nchw4c", precision="fp16-acc32",
                             overrides={"loc:add": {"local_tile": 64}})
    assert "conv1x1_lt64_" in cm.source
    _check(cm, model, _feeds(model), tol=2e-3)


def test_default_rule_picks_it_on_a_large_gpu_only():
    """target nvidia-h200 (132 compute units): a 256 -> 128 channel conv on a 64 x 68 plane
    takes 64 x 64 blocks (2 x 68 = 136 work-groups); it runs on PoCL and matches. The CPU
    target (PoCL's own profile) keeps the direct kernels. The rules alone (cost_model=None:
    the H200's learned defaults may choose otherwise, tests/test_cost_model.py)."""
    model = _model(1, 256, 64, 68, 128, True)
    feeds = _feeds(model)
    gpu = adreno_mlir.compile(model, target="nvidia-h200", cost_model=None)
    assert "conv1x1_lt64_8x4_4c_relu_add(" in gpu.source
    _check(gpu, model, feeds)
    cpu = adreno_mlir.compile(model)
    assert "conv1x1_lt" not in cpu.source


def _conv_head(n, ci, h, w, co, kernel=1, stride=1):
    """The NCHW4c conv op of a model (after select-kernel-config), lowered without a device."""
    from adreno_mlir.dialects import graph

    from adreno_mlir.api import lower
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.plan import make_plan

    seen = {}

    def keep(name, module):
        if name == "config":
            seen["module"] = module.clone()

    module = import_onnx(_model(n, ci, h, w, co, kernel=kernel, stride=stride))
    lower(module, make_plan("adreno-740", textures=False, layout="nchw4c"), after_stage=keep)
    return next(op for op in seen["module"].walk() if isinstance(op, graph.Conv2dOp))


H200 = dataclasses.replace(DEFAULT_RULES, compute_units=132, max_work_group_size=1024,
                           local_memory_bytes=48 * 1024)


@pytest.mark.parametrize(("shape", "rules", "expected"), [
    ((1, 1024, 128, 128, 256), H200, 64),  # segformer-b0's fuse conv: 4 x 256 blocks of 64 x 64
    ((1, 256, 64, 68, 128), H200, 64),  # 2 x 68 = 136 blocks of 64
    ((1, 1024, 48, 64, 64), H200, 32),  # 48 blocks of 64 (too few), 2 x 96 of 32
    ((1, 1024, 48, 64, 72), H200, 32),  # 72 channels: a 64 block would hang 56 past them; 3 x 96 of 32
    ((1, 256, 56, 56, 128), H200, 0),  # DenseNet-121's first block: 103 M multiply-adds, kept direct
    ((1, 64, 32, 32, 72), H200, 0),  # 3 x 32 blocks of 32: fewer than the compute units
    ((1, 64, 16, 16, 64), H200, 0),  # 256 pixels: too small
    ((1, 32, 64, 64, 64), H200, 0),  # 32 input channels: too few
    ((1, 64, 20, 24, 64), H200, 0),  # 480 pixels: too small
    ((1, 1024, 128, 128, 256), dataclasses.replace(H200, compute_units=6), 0),  # a mobile GPU
    ((1, 1024, 128, 128, 256), dataclasses.replace(H200, compute_units=0), 0),  # units unknown (Adreno profiles)
    ((1, 1024, 128, 128, 256), dataclasses.replace(H200, gpu=False), 0),  # a CPU
    ((1, 1024, 128, 128, 256), dataclasses.replace(H200, max_work_group_size=64), 32),  # 64's 128 items do not fit
])
def test_default_local_tile_rule(shape, rules, expected):
    head = _conv_head(*shape)
    cfg = CONV4C.defaults(head, rules, {})
    assert cfg.get("local_tile", 0) == expected
    if expected:
        assert cfg == {"x_block": 1, "co_blocks": 1, "split_k": 1, "dw_rows": 0, "reduce_items": 1, "dw_tile": 0,
                       "local_tile": expected}
        assert CONV4C.check(head, cfg) is None
    else:
        assert "local_tile" not in cfg  # the direct kernels' configuration reads as before


def test_keys_of_the_direct_kernels_drop_the_default_local_tile():
    """An override asking for a direct kernel's mechanism (split_k, x_block) gets the direct
    kernels, not local_tile; `{"local_tile": 0}` too."""
    head = _conv_head(1, 1024, 128, 128, 256)
    for given in ({"split_k": 2}, {"x_block": 2}, {"co_blocks": 2}, {"local_tile": 0}):
        cfg = CONV4C.merge(CONV4C.defaults(head, H200, given), given)
        assert not cfg.get("local_tile", 0), given
        assert CONV4C.check(head, cfg) is None
    # the tuner's space offers it, and a local_tile point normalizes the other keys off
    dims = dict(CONV4C.space(head, CONV4C.defaults(head, H200, {})))
    assert dims["local_tile"] == (0, 32, 64, 128)
    point = CONV4C.normalize({"x_block": 4, "co_blocks": 2, "split_k": 4, "local_tile": 64, "work_group": (8, 8)},
                             {}, head)
    assert point == {"x_block": 1, "co_blocks": 1, "split_k": 1, "dw_rows": 0, "reduce_items": 1, "dw_tile": 0,
                     "local_tile": 64}
    assert CONV4C.work_items(head, point, None) == 4 * 256 * 128


@pytest.mark.parametrize(("kwargs", "override", "message"), [
    ({"kernel": 3}, {"local_tile": 32},
     r"local_tile = 32 .* needs a groups-1 1x1 convolution with stride 1 and no padding, got groups 1, kernel 3x3"),
    ({"stride": 2}, {"local_tile": 64}, r"local_tile = 64 .*strides \[2, 2\]"),
    ({}, {"local_tile": 64, "x_block": 2}, r"local_tile = 64 sets its own work-group .*x_block = 2"),
    ({}, {"local_tile": 32, "split_k": 2}, r"local_tile = 32 sets its own work-group .*split_k = 2"),
    ({}, {"local_tile": 48}, r"local_tile = 48 is not one of \[0, 32, 64, 128\]"),
])
def test_refusals_name_the_key(kwargs, override, message):
    model = _model(1, 4, 8, 8, 8, **kwargs)  # (too few channels for a Winograd 3x3 conv)
    with pytest.raises(adreno_mlir.CompileError, match=message):
        adreno_mlir.compile(model, textures=False, layout="nchw4c", overrides={"loc:act": override})
