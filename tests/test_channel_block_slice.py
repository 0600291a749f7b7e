"""Channel slices of whole NCHW4c blocks (issue 30: timm's mixnet_s spent much of its time
in unpack -> slice -> pack around every channel split): convert-layout-nchw4c keeps a
slice of whole channel blocks on NCHW4c (graph.SliceOp.channel_block_slice), lowered to a
block copy from the input's channel offset; any other slice stays NCHW. Numerics against
onnxruntime on buffers and images."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

pytest.importorskip("pyopencl")

PLANS = {"images": {"textures": True, "layout": "nchw4c"}, "buffers": {"textures": False, "layout": "nchw4c"}}


def _split_model(sizes: list[int], *, act: str | None = None) -> onnx.ModelProto:
    """x (1, 8, 14, 14) -> 1x1 conv to sum(sizes) channels [-> act] -> Split(sizes) ->
    one depthwise conv per part (3x3, 5x5, ...) -> Concat: MixNet's mixed convolution."""
    rng = np.random.default_rng(0)
    c = sum(sizes)
    inits = [numpy_helper.from_array((rng.standard_normal((c, 8, 1, 1)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array(np.array(sizes, np.int64), "split")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="pw")]
    src = "c"
    if act:
        nodes.append(helper.make_node(act, ["c"], ["ca"], name="act"))
        src = "ca"
    nodes.append(helper.make_node("Split", [src, "split"], [f"s{i}" for i in range(len(sizes))], name="split", axis=1))
    outs = []
    for i, s in enumerate(sizes):
        k = 3 + 2 * (i % 2)
        inits.append(numpy_helper.from_array((rng.standard_normal((s, 1, k, k)) * 0.3).astype(np.float32), f"d{i}"))
        nodes.append(helper.make_node("Conv", [f"s{i}", f"d{i}"], [f"a{i}"], name=f"dw{i}", group=s, pads=[k // 2] * 4))
        outs.append(f"a{i}")
    nodes.append(helper.make_node("Concat", outs, ["y"], name="cat", axis=1))
    g = helper.make_graph(nodes, "mixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 14, 14])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _kernels(cm) -> list[str]:
    return re.findall(r"__kernel void (\w+)", cm.source)


def _check(model: onnx.ModelProto, cm) -> None:
    import onnxruntime as ort

    x = np.random.default_rng(1).standard_normal((1, 8, 14, 14)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    # fp32 kernels on the CPU devices of the suite: the default tolerance of the layout tests
    np.testing.assert_allclose(cm.run({"x": x})["y"], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("sizes, act", [([8, 16], None), ([8, 16], "Sigmoid"), ([4, 8, 12], None)])
def test_aligned_split_stays_in_nchw4c(plan, sizes, act):
    model = _split_model(sizes, act=act)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    names = _kernels(cm)
    # one pack of the input, one unpack of the output: no round trip around the split
    assert sum(k.startswith("pack_nchw4c") for k in names) == 1, names
    assert sum(k.startswith("unpack_nchw4c") for k in names) == 1, names
    assert not any(k.startswith("slice") for k in names), names
    assert "graph.slice" in cm.stage_ir["layout"] and "!texture.tensor" in _slice_types(cm.stage_ir["layout"])
    _check(model, cm)


def test_block_slices_false_keeps_every_slice_nchw():
    model = _split_model([8, 16])
    edit = lambda p: p.replace("convert-layout-nchw4c{", "convert-layout-nchw4c{block_slices=false ")  # noqa: E731
    cm = adreno_mlir.compile(model, keep_ir=True, pipeline=edit, **PLANS["images"])
    assert "block_slices=false" in cm.pipeline
    assert sum(k.startswith("slice") for k in _kernels(cm)) == 2, _kernels(cm)
    _check(model, cm)


def _slice_types(ir: str) -> str:
    return " ".join(line for line in ir.splitlines() if "graph.slice" in line)


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_last_part_with_a_partial_block_is_a_block_slice_too(plan):
    """[8, 6]: the second part starts at a block and runs to the end (its last block holds
    the input's padding); its concat, with 6 channels, is the NCHW one."""
    model = _split_model([8, 6])
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    slices = [line for line in cm.stage_ir["layout"].splitlines() if "graph.slice" in line]
    assert len(slices) == 2 and all("!texture.tensor" in line for line in slices), slices
    _check(model, cm)


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_unaligned_split_stays_nchw(plan):
    """[6, 8]: the first part ends inside a block, the second starts inside one."""
    model = _split_model([6, 8])
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    slices = [line for line in cm.stage_ir["layout"].splitlines() if "graph.slice" in line]
    assert len(slices) == 2 and not any("!texture.tensor" in line.split("->")[-1] for line in slices), slices
    _check(model, cm)


def test_channel_block_slice_reads_the_slice():
    from xdsl.dialects.builtin import DenseArrayBase, TensorType, f32, i64

    from adreno_mlir.dialects import graph

    from xdsl.ir import Block

    def op(shape, starts, out, steps=None):
        block = Block(arg_types=[TensorType(f32, shape)])
        return graph.SliceOp.create(operands=[block.args[0]], result_types=[TensorType(f32, out)],
                                    properties={"starts": DenseArrayBase.from_list(i64, starts),
                                                "steps": DenseArrayBase.from_list(i64, steps or [1] * len(shape))})

    assert op([1, 24, 7, 7], [0, 8, 0, 0], [1, 16, 7, 7]).channel_block_slice()
    assert op([1, 24, 7, 7], [0, 16, 0, 0], [1, 8, 7, 7]).channel_block_slice()
    assert op([1, 22, 7, 7], [0, 16, 0, 0], [1, 6, 7, 7]).channel_block_slice()  # to the end
    assert not op([1, 24, 7, 7], [0, 6, 0, 0], [1, 8, 7, 7]).channel_block_slice()  # starts inside a block
    assert not op([1, 24, 7, 7], [0, 8, 0, 0], [1, 6, 7, 7]).channel_block_slice()  # ends inside one
    assert not op([1, 24, 7, 7], [0, 8, 1, 0], [1, 8, 6, 7]).channel_block_slice()  # rows too
    assert not op([1, 24, 8, 8], [0, 0, 0, 0], [1, 12, 8, 8], [1, 2, 1, 1]).channel_block_slice()  # a step
    assert not op([24, 7, 7], [8, 0, 0], [8, 7, 7]).channel_block_slice()  # not 4-D


# --------------------------------------------------------------------------- grouped convs


def _grouped_model(groups: int, c: int, o: int) -> onnx.ModelProto:
    """x (1, 8, 14, 14) -> 1x1 conv to c channels -> 3x3 conv of `groups` groups (c -> o,
    bias) -> ReLU: ResNeSt's radix-2 conv when groups is 2."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((c, 8, 1, 1)) * 0.2).astype(np.float32), "w0"),
             numpy_helper.from_array((rng.standard_normal((o, c // groups, 3, 3)) * 0.2).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(o) * 0.2).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="pw"),
             helper.make_node("Conv", ["c0", "w", "b"], ["c"], name="gconv", group=groups, pads=[1] * 4),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "grouped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, o, 14, 14])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _check_grouped(model: onnx.ModelProto, cm) -> None:
    import onnxruntime as ort

    x = np.random.default_rng(1).standard_normal((1, 8, 14, 14)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    # the per-group 3x3 convs may be Winograd F(4,3) (conv-winograd's rule): its tolerance
    np.testing.assert_allclose(cm.run({"x": x})["y"], ref, rtol=1e-4, atol=5e-5)


def _nchw_convs(cm) -> list[str]:
    """The plain NCHW conv kernels (`conv3x3_relu`; NCHW4c ones say `_4c`, Winograd ones `winograd`)."""
    return [k for k in _kernels(cm) if k.startswith("conv") and "_4c" not in k]


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("groups, c, o", [(2, 32, 32), (4, 32, 64)])
def test_grouped_conv_of_whole_blocks_is_one_dense_nchw4c_conv_per_group(plan, groups, c, o):
    model = _grouped_model(groups, c, o)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    assert not _nchw_convs(cm), _kernels(cm)
    names = _kernels(cm)
    assert sum(k.startswith("pack_nchw4c") for k in names) == 1 and sum(k.startswith("unpack") for k in names) == 1
    layout = cm.stage_ir["layout"]
    convs = [line for line in layout.splitlines() if "graph.conv2d" in line and 'loc("gconv")' in line]
    assert len(convs) == groups and not any("groups" in line for line in convs), convs
    _check_grouped(model, cm)


@pytest.mark.parametrize("groups, c, o, option, split", [
    (8, 64, 64, "", False),                       # more groups than split_groups (4)
    (8, 64, 64, "split_groups=8", True),
    (2, 32, 32, "split_groups=0", False),
    (2, 12, 12, "", False),                       # 6 channels a group: not whole blocks
])
def test_other_grouped_convs_stay_nchw(groups, c, o, option, split):
    model = _grouped_model(groups, c, o)
    edit = (lambda p: p.replace("convert-layout-nchw4c{", f"convert-layout-nchw4c{{{option} ")) if option else None
    cm = adreno_mlir.compile(model, keep_ir=True, pipeline=edit, **PLANS["images"])
    assert bool(_nchw_convs(cm)) != split, _kernels(cm)
    _check_grouped(model, cm)
