"""merge-split-convs (issue 30: timm's mixnet_s ran 319 launches on the H200, 74 of them
copies of channel slices, 34 concats and a batch-norm kernel after each concat): the
convolutions of a channel split that a concat joins become one convolution, depthwise
parts zero-padded to the largest window, groups-1 parts block-diagonal. Numerics against
onnxruntime on every plan (the merged convolution, and the batch norm after the concat
folded into it), what is merged and what is left, and the cost bound."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

pytest.importorskip("pyopencl")

# a GPU target's pipeline (merges up to max-flop-ratio 4) on the suite's CPU device
PLANS = {"images": {"textures": True, "layout": "nchw4c", "target": "adreno-740"},
         "buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
         "nchw": {"layout": "nchw", "textures": False, "target": "adreno-740"}}
SHAPE = [1, 12, 15, 15]


def _mixed_model(parts: list[tuple[int, int, int, int]], *, stride: int = 1, bn: bool = True,
                 pads: list[list[int]] | None = None, bias: bool = True, extra_reader: bool = False,
                 order: list[int] | None = None) -> onnx.ModelProto:
    """x SHAPE -> Split (channels of each part) -> one Conv per part -> Concat [-> BN -> ReLU].
    A part is (channels, kernel, groups, out channels): groups = channels is depthwise,
    1 dense. `pads` per part (default k // 2 all round); `order` concatenates the parts'
    outputs in another order; `extra_reader` gives the first conv a second reader."""
    rng = np.random.default_rng(0)
    sizes = [p[0] for p in parts]
    inits = [numpy_helper.from_array(np.array(sizes, np.int64), "split")]
    nodes = [helper.make_node("Split", ["x", "split"], [f"s{i}" for i in range(len(parts))], name="split", axis=1)]
    outs = []
    for i, (c, k, g, o) in enumerate(parts):
        inits.append(numpy_helper.from_array((rng.standard_normal((o, c // g, k, k)) * 0.3).astype(np.float32), f"w{i}"))
        ins = [f"s{i}", f"w{i}"]
        if bias and i % 2 == 0:  # some parts with a bias, some without
            inits.append(numpy_helper.from_array((rng.standard_normal(o) * 0.3).astype(np.float32), f"b{i}"))
            ins.append(f"b{i}")
        p = pads[i] if pads else [k // 2] * 4
        nodes.append(helper.make_node("Conv", ins, [f"a{i}"], name=f"conv{i}", group=g, pads=p,
                                      strides=[stride, stride]))
        outs.append(f"a{i}")
    cat = [outs[i] for i in (order or range(len(parts)))]
    nodes.append(helper.make_node("Concat", cat, ["cat"], name="cat", axis=1))
    out, last = sum(p[3] for p in parts), "cat"
    if bn:
        for name, v in (("scale", rng.uniform(0.5, 1.5, out)), ("beta", rng.standard_normal(out) * 0.1),
                        ("mean", rng.standard_normal(out) * 0.1), ("var", rng.uniform(0.5, 1.5, out))):
            inits.append(numpy_helper.from_array(v.astype(np.float32), name))
        nodes += [helper.make_node("BatchNormalization", ["cat", "scale", "beta", "mean", "var"], ["bn"], name="bn"),
                  helper.make_node("Relu", ["bn"], ["y"], name="relu")]
        last = "y"
    outputs = [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)]
    if extra_reader:
        nodes.append(helper.make_node("Sigmoid", ["a0"], ["z"], name="extra"))
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "mixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)], outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _check(model: onnx.ModelProto, cm) -> None:
    import onnxruntime as ort

    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = cm.run({"x": x})
    for o, ref in zip(sess.get_outputs(), sess.run(None, {"x": x})):
        # fp32 on the suite's CPU devices; the merged 3x3s may run as Winograd F(4,3) on NCHW4c
        np.testing.assert_allclose(got[o.name], ref, rtol=1e-4, atol=5e-5, err_msg=o.name)


def _convs(ir: str) -> list[str]:
    return [line for line in ir.splitlines() if "graph.conv2d" in line]


MIXED = {
    # MixNet's depthwise mix: 3x3 / 5x5 / 7x7 on 4 channels each
    "depthwise-3-5-7": [(4, 3, 4, 4), (4, 5, 4, 4), (4, 7, 4, 4)],
    # depthwise with a channel multiplier of 2, parts of unequal width
    "depthwise-x2": [(8, 3, 8, 16), (4, 5, 4, 8)],
    # MixNet's pointwise split: 1x1 dense convs on two halves
    "pointwise-halves": [(6, 1, 1, 8), (6, 1, 1, 12)],
    # dense 3x3 parts of unequal width
    "dense-3x3": [(4, 3, 1, 8), (8, 3, 1, 4)],
}


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("case", sorted(MIXED))
def test_split_convs_merge_into_one_conv_with_the_batch_norm_folded(case, stride, plan):
    model = _mixed_model(MIXED[case], stride=stride)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    ir = cm.stage_ir["graph-opt"]
    convs = _convs(ir)
    assert len(convs) == 1 and "graph.concat" not in ir and "graph.slice" not in ir, ir
    assert "graph.batch_norm" not in ir and "graph.mul" not in ir, ir  # folded into the merged conv
    k = max(p[1] for p in MIXED[case])
    assert re.search(rf"tensor<{sum(p[3] for p in MIXED[case])}x\d+x{k}x{k}xf32>", convs[0]), convs[0]
    assert 'loc("cat")' in convs[0], convs[0]
    _check(model, cm)


def test_merged_window_keeps_each_parts_own_padding():
    """Parts padded differently from k // 2 (a 3x3 padded 0 at the top and 2 at the bottom
    beside a 5x5 padded 2 all round) still read the same rows: their taps go where they
    read, and the merged padding gives the same output extent."""
    parts = [(6, 3, 6, 6), (6, 5, 6, 6)]
    model = _mixed_model(parts, pads=[[0, 1, 2, 1], [2, 2, 2, 2]], bn=False)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS["buffers"])
    assert len(_convs(cm.stage_ir["graph-opt"])) == 1
    _check(model, cm)


@pytest.mark.parametrize("why, kwargs, parts", [
    ("another reader of a part", {"extra_reader": True}, MIXED["depthwise-3-5-7"]),
    ("concat in another order", {"order": [1, 0, 2]}, MIXED["depthwise-3-5-7"]),
    ("depthwise beside dense", {}, [(6, 3, 6, 6), (6, 1, 1, 6)]),
])
def test_other_splits_are_left_as_they_are(why, kwargs, parts):
    model = _mixed_model(parts, **kwargs)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS["images"])
    ir = cm.stage_ir["graph-opt"]
    assert len(_convs(ir)) == len(parts) and "graph.concat" in ir, why
    _check(model, cm)


def test_parts_padded_on_opposite_sides_merge_into_their_span():
    """Two 3x3 parts, one padded only at the bottom and right, one only at the top and
    left: relative to an output pixel they read rows [0, 3) and [-2, 1), so the merged
    window is 5x5 (25 / 9 = 2.8 times the multiply-adds, under the bound of 4) with each
    part's taps in its own corner."""
    parts = [(6, 3, 6, 6), (6, 3, 6, 6)]
    model = _mixed_model(parts, pads=[[0, 0, 2, 2], [2, 2, 0, 0]], bn=False)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS["buffers"])
    convs = _convs(cm.stage_ir["graph-opt"])
    assert len(convs) == 1 and "tensor<12x1x5x5xf32>" in convs[0], convs
    _check(model, cm)


@pytest.mark.parametrize("ratio, merged", [(0, False), (1, False), (2, True), (4, True)])
def test_max_flop_ratio_bounds_the_zero_taps(ratio, merged):
    """3x3 / 5x5 / 7x7 depthwise parts of 4 channels: 3 * 49 / (9 + 25 + 49) = 1.77 times
    the multiply-adds merged."""
    model = _mixed_model(MIXED["depthwise-3-5-7"])
    edit = lambda p: p.replace("merge-split-convs{", f"merge-split-convs{{max-flop-ratio={ratio} ")  # noqa: E731
    cm = adreno_mlir.compile(model, keep_ir=True, pipeline=edit, **PLANS["images"])
    assert f"max-flop-ratio={ratio}" in cm.pipeline
    # a custom pipeline's IR is kept after every pass
    assert (len(_convs(cm.stage_ir["merge-split-convs"])) == 1) == merged
    _check(model, cm)


@pytest.mark.parametrize("parts, merged", [
    (MIXED["depthwise-3-5-7"], False),                   # zero taps: kept split on a CPU
    ([(4, 5, 4, 4), (8, 5, 8, 8)], True),                # equal windows: no zero taps
])
def test_cpu_targets_merge_only_without_zero_taps(parts, merged):
    model = _mixed_model(parts)
    cm = adreno_mlir.compile(model, keep_ir=True, target="pocl-cpu")
    assert "merge-split-convs{target=pocl-cpu}" in cm.pipeline
    assert (len(_convs(cm.stage_ir["graph-opt"])) == 1) == merged
    _check(model, cm)
