"""Zero-copy channel concat (`plan-memory`): producers write into their slice of the
concat's storage, so the concat copies nothing. Each graph must match onnxruntime on
the NCHW4c plans (buffers, images, fp16 storage), where the pass applies, and on the
NCHW plan, where concats keep their copies; the tests also count the copy launches
that remain and read the decision in the pass's IR."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx.helper as h
import onnx.numpy_helper as nh
import onnxruntime as ort
import pytest
from xdsl.passes import ModulePass

import adreno_mlir
from adreno_mlir.dialects import graph
from adreno_mlir.dialects.texture import TextureTensorType
from adreno_mlir.frontend import import_onnx
from adreno_mlir.passes.annotate_texture_scope import reads_images
from adreno_mlir.dialects.storage import STORAGE_ATTR, read_storage, stored_value
from adreno_mlir.passes.plan_memory import retype

PLANS = {
    "buffer4c": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "texture": {"textures": True, "target": "adreno-740"},
    "texture-fp16": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
    "nchw": {"layout": "nchw"},
}
PACKED = [p for p in PLANS if p != "nchw"]
WINOGRAD_F2 = "conv-winograd{target=adreno-740 tile=2}"

rng = np.random.default_rng(0)


def _rand(*shape, scale=0.3):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


class Net:
    """A small ONNX graph under construction (input x, 8x8 pixels unless told)."""

    def __init__(self, channels=16, hw=8):
        self.nodes, self.inits, self.n = [], {}, 0
        self.shape = [1, channels, hw, hw]
        self.channels = {"x": channels}

    def _name(self, kind):
        self.n += 1
        return f"{kind}{self.n}"

    def node(self, kind, inputs, channels, **attrs):
        out = self._name(kind.lower())
        self.nodes.append(h.make_node(kind, inputs, [out], **attrs))
        self.channels[out] = channels
        return out

    def const(self, arr):
        name = self._name("c")
        self.inits[name] = arr
        return name

    def conv(self, x, co, k=1, relu=False):
        w, b = self.const(_rand(co, self.channels[x], k, k)), self.const(_rand(co))
        y = self.node("Conv", [x, w, b], co, pads=[k // 2] * 4)
        return self.node("Relu", [y], co) if relu else y

    def bn_relu(self, x):
        c = self.channels[x]
        s, t = self.const(1 + _rand(1, c, 1, 1)), self.const(_rand(1, c, 1, 1))
        return self.node("Relu", [self.node("Add", [self.node("Mul", [x, s], c), t], c)], c)

    def concat(self, *xs):
        return self.node("Concat", list(xs), sum(self.channels[v] for v in xs), axis=1)

    def model(self, *outputs):
        outs = [h.make_tensor_value_info(o, 1, None) for o in outputs]
        g = h.make_graph(self.nodes, "g", [h.make_tensor_value_info("x", 1, self.shape)], outs,
                         [nh.from_array(v, k) for k, v in self.inits.items()])
        return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def dense_block(layers=4, growth=8, bottleneck=64):
    """DenseNet's pattern: layer k reads concat(f0, ..., f_k-1) (BN, ReLU, 1x1 conv,
    ReLU, 3x3 conv of `growth` channels); the block ends in the concat of all. With a
    64-channel bottleneck the 3x3 convs split K on adreno-740 (split-K sums write the
    slices), with Winograd forced their output transforms do."""
    n = Net()
    feats = [n.conv("x", 16, 3, relu=True)]
    for _ in range(layers):
        cat = n.concat(*feats) if len(feats) > 1 else feats[0]
        feats.append(n.conv(n.conv(n.bn_relu(cat), bottleneck, 1, relu=True), growth, 3))
    return n.model(n.conv(n.bn_relu(n.concat(*feats)), 8))


def inception():
    """GoogLeNet's inception block: four branches (1x1; 1x1-3x3; 1x1-3x3-3x3; 3x3 max
    pool-1x1), concatenated, read by the next block's 1x1 conv and 3x3 max pool."""
    n = Net()
    s = n.conv("x", 16, 1, relu=True)
    b1 = n.conv(s, 8, 1, relu=True)
    b2 = n.conv(n.conv(s, 8, 1, relu=True), 16, 3, relu=True)
    b3 = n.conv(n.conv(n.conv(s, 4, 1, relu=True), 8, 3, relu=True), 8, 3, relu=True)
    b4 = n.conv(n.node("MaxPool", [s], 16, kernel_shape=[3, 3], pads=[1, 1, 1, 1]), 8, 1, relu=True)
    cat = n.concat(b1, b2, b3, b4)
    nxt = n.concat(n.conv(cat, 8, 1, relu=True),
                   n.node("MaxPool", [cat], 40, kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    return n.model(n.conv(nxt, 8))


def used_elsewhere(first: bool):
    """A concat input that another kernel reads too: at offset 0 (`first`) it is placed
    (the reader reads channel block 0 of the storage), else it keeps its copy."""
    n = Net()
    a, b = n.conv("x", 8, 3, relu=True), n.conv("x", 8, 3)
    cat = n.concat(a, b) if first else n.concat(b, a)
    return n.model(n.node("Add", [n.conv(cat, 8), n.node("Sigmoid", [a], 8)], 8))


def odd_channels():
    """6-channel inputs: the concat stays NCHW (the layout pass packs multiples of 4)."""
    n = Net()
    return n.model(n.conv(n.concat(n.conv("x", 6, 3, relu=True), n.conv("x", 6, 1)), 8))


def graph_input():
    """concat(x, conv(x)): the model input keeps its copy, the conv writes in place."""
    n = Net()
    return n.model(n.conv(n.concat("x", n.conv("x", 8, 3, relu=True)), 8))


def two_offsets():
    """b and a in two concats at different offsets: the later concat holds them, the
    earlier copies them (a from channel block 4 of the other's storage); a concat that
    reads c twice copies it twice."""
    n = Net()
    a, b, c = n.conv("x", 8, 3, relu=True), n.conv("x", 8, 1, relu=True), n.conv("x", 8, 1)
    c1, c2, c3 = n.concat(a, b), n.concat(b, c, a), n.concat(c, c)
    return n.model(n.node("Add", [n.node("Add", [n.conv(c1, 8), n.conv(c2, 8)], 8), n.conv(c3, 8)], 8))


def writers():
    """Every kind of kernel that can write at a channel offset: direct conv, max and
    average pool, element-wise, resize; and (1x1 pixels) global average pool and mean."""
    n = Net()
    a = n.conv("x", 8, 3, relu=True)
    small = n.conv(n.node("MaxPool", ["x"], 16, kernel_shape=[2, 2], strides=[2, 2]), 8, 1)
    scales = n.const(np.array([1, 1, 2, 2], np.float32))
    cat = n.concat(
        a,
        n.node("MaxPool", [a], 8, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n.node("AveragePool", [a], 8, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n.node("Add", [a, n.conv("x", 8, 1)], 8),
        n.node("Resize", [small, "", scales], 8, mode="linear"),
    )
    pooled = n.concat(n.node("GlobalAveragePool", [cat], 40),
                      n.node("ReduceMean", [n.conv(cat, 16, 1, relu=True)], 16, axes=[2, 3], keepdims=1))
    return n.model(n.node("Add", [n.conv(cat, 8), n.conv(pooled, 8)], 8))


MODELS = {
    "dense": (dense_block, None),
    "dense-winograd": (dense_block, lambda p: p.replace("conv-winograd{target=adreno-740}", WINOGRAD_F2)),
    "inception": (inception, None),
    "used-elsewhere-first": (lambda: used_elsewhere(True), None),
    "used-elsewhere-second": (lambda: used_elsewhere(False), None),
    "odd-channels": (odd_channels, None),
    "graph-input": (graph_input, None),
    "two-offsets": (two_offsets, None),
    "writers": (writers, None),
}
COPIES_LEFT = {  # copy launches the packed plans keep
    "dense": 0, "dense-winograd": 0, "inception": 0, "used-elsewhere-first": 0, "used-elsewhere-second": 1,
    "odd-channels": 0, "graph-input": 1, "two-offsets": 4, "writers": 0,
}
_built: dict[str, object] = {}


def _model(name):
    if name not in _built:
        _built[name] = MODELS[name][0]()
    return _built[name]


def _copies(cm) -> int:
    return sum(launch.kernel.startswith("copy_4c") for launch in cm.launch_plan.launches)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("name", MODELS)
def test_concat_in_place_matches_onnxruntime(name, plan):
    model = _model(name)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    edit = MODELS[name][1]
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan], **({"pipeline": edit} if edit else {}))
    out = next(iter(cm.run(feeds).values()))
    err = np.abs(out - ref).max() / np.abs(ref).max()
    assert err <= (5e-2 if "fp16" in plan else 1e-4), f"{name} on {plan}: error {err:.2e}"
    ir = cm.stage_ir["memory" if edit is None else "plan-memory"]  # a custom pipeline names stages by pass
    if plan == "nchw" or name == "odd-channels":
        assert f"{STORAGE_ATTR} = " not in ir  # NCHW concats keep their copies
        assert _copies(cm) == 0
        assert any("concat_copy" in k for k in cm.launch_plan.kernel_names)
        return
    assert _copies(cm) == COPIES_LEFT[name], cm.launch_plan.kernel_names
    assert f"{STORAGE_ATTR} = {{alloc = 0 : i64, c4_offset = 0 : i64}}" in ir
    if name.startswith("dense"):
        # one allocation holds the block: every concat (a prefix of the last) and every f_k
        assert ir.count("graph.concat") == ir.count(f"{STORAGE_ATTR} = {{alloc = 0 : i64, c4_offset = 0 : i64}}") - 1
        assert "alloc = 1 " not in ir
        kernel = "winograd_output_f2_4c" if name == "dense-winograd" else "conv_split_sum_4c"
        assert any(k.startswith(kernel) for k in cm.launch_plan.kernel_names), cm.launch_plan.kernel_names
        assert f"kernel void {kernel}" in cm.source and "int c4_offset" in cm.source


@pytest.mark.parametrize("plan", ["buffer4c", "texture"])
def test_dense_block_shares_one_allocation_and_kernels(plan):
    """DenseNet's block without plan-memory copies every feature into every later
    concat; with it, no copies, fewer allocations, and the 3x3 convs writing at
    different offsets share one kernel (the offset is a launch argument)."""
    model = _model("dense")
    before = adreno_mlir.compile(model, **PLANS[plan], pipeline=lambda p: p.replace(",plan-memory", ""))
    after = adreno_mlir.compile(model, **PLANS[plan])
    assert _copies(before) == 2 + 3 + 4 + 5 and _copies(after) == 0
    assert len(after.launch_plan.allocations) < len(before.launch_plan.allocations)
    sums = [launch for launch in after.launch_plan.launches if launch.kernel.startswith("conv_split_sum_4c")]
    assert len(sums) == 4 and len({launch.kernel for launch in sums}) == 1
    assert sorted(launch.args[-1].value for launch in sums) == [4, 6, 8, 10]  # c4_offset: 16 + 8k channels


def test_plan_memory_ir_is_read_back_and_checked():
    """The decision is printed IR: adreno-opt-style round trip, the lowering reads it, and
    a hand edit that the lowering cannot honour is an error naming the op."""
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context
    from adreno_mlir.errors import CompileError
    from adreno_mlir.pipeline import run_pipeline, stages_for
    from adreno_mlir.printing import module_to_text

    ctx = make_context()
    m = import_onnx(_model("inception"))
    for _, spec in stages_for("nchw4c", True, "f32", "adreno-740")[:-1]:
        run_pipeline(ctx, m, spec)
    text = module_to_text(m)
    again = Parser(ctx, text).parse_module()
    fn = next(iter(again.body.block.ops))
    st = read_storage(fn.body.block)
    concats = [op for op in fn.body.block.ops if isinstance(op, graph.ConcatOp)]
    assert all(op.result in st.slots for op in concats)
    assert st.types[0].shape == (1, 10, 8, 8, 4)
    # a slot overlapping another value's is refused
    victim = next(op for op in fn.body.block.ops if STORAGE_ATTR in op.attributes and not isinstance(op, graph.ConcatOp)
                  and op.attributes[STORAGE_ATTR].data["c4_offset"].value.data > 0)
    victim.attributes[STORAGE_ATTR] = DictionaryAttr({"alloc": IntegerAttr(0, 64), "c4_offset": IntegerAttr(0, 64)})
    with pytest.raises(CompileError, match="a value at a non-zero c4_offset|overlap|storage attribute"):
        run_pipeline(ctx, again, "convert-graph-to-opencl")


@dataclass(frozen=True)
class ConcatsToImages(ModulePass):
    """Test pass: concat results go to images of one mapping (annotate-texture-scope
    keeps them buffers), so plan-memory shares image allocations."""

    name = "concats-to-images"
    mapping: str = "texture"

    def apply(self, ctx, op) -> None:
        concats = [o for o in op.walk()
                   if isinstance(o, graph.ConcatOp) and isinstance(o.result.type, TextureTensorType)]
        for o in concats:  # the concat's region's value (graph-fuse), read by the kernels after it
            value = stored_value(o)
            if all(reads_images(u.operation, value) for u in value.uses):
                retype(value, value.type.with_memory(self.mapping))


@pytest.mark.parametrize("mapping", ["texture", "texture-nhwc"])
@pytest.mark.parametrize("name", ["dense", "inception", "two-offsets", "writers"])
def test_shared_images(name, mapping):
    """Allocations that are images (both mappings: a prefix of the channel blocks is a
    prefix of the image's rows): members move to the image, and a kernel that would
    read and write one image keeps its copy instead."""
    model = _model(name)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    cm = adreno_mlir.compile(model, **PLANS["texture"], keep_ir=True, passes=[ConcatsToImages],
                             pipeline=lambda p: p.replace(",plan-memory", f",concats-to-images{{mapping={mapping}}},"
                                                          "plan-memory"))
    out = next(iter(cm.run(feeds).values()))
    err = np.abs(out - ref).max() / np.abs(ref).max()
    assert err <= 1e-4, f"{name} in {mapping} images: error {err:.2e}"
    ir = cm.stage_ir["plan-memory"]
    assert f"{STORAGE_ATTR} = {{alloc = 0 : i64, c4_offset = 0 : i64}}" in ir
    assert f"nchw4c, #texture.image<{mapping}, h = " in ir
    if name in ("dense", "inception"):
        assert _copies(cm) == 0
    if name == "writers":  # the pools and the add read `a` from the image they would write
        assert _copies(cm) == 3
