"""Regression tests from review 7 of the pass-based pipeline (graph-fuse,
select-kernel-config, split-k, conv-winograd, compile(pipeline=..., passes=...)).

Each test names the bug it pins. Numerical checks compare against onnxruntime on the
default OpenCL device (PoCL); error checks want a CompileError (or a verifier error)
that names the op, not a Python exception from inside a pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException

import adreno_mlir
from adreno_mlir.context import make_context
from adreno_mlir.dialects import graph, texture
from adreno_mlir.errors import CompileError
from adreno_mlir.frontend import import_onnx
from adreno_mlir.passes.select_kernel_config import set_config
from adreno_mlir.pipeline import run_pipeline

ort = pytest.importorskip("onnxruntime")

RTOL = 1e-4
CLEAR_ERRORS = (CompileError, VerifyException, DiagnosticException)


# --------------------------------------------------------------------------- models


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def conv_relu_model(relu: bool = True) -> onnx.ModelProto:
    """x [1, 8, 9, 9] -> 3x3 conv (8 -> 8, pad 1, bias) [-> ReLU] -> y.
    On the pocl-cpu target the conv becomes Winograd F(4,3) (>= 8 channels)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y"], name="conv",
                              pads=[1, 1, 1, 1], kernel_shape=[3, 3])]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"], name="relu"))
    return _model(nodes, [("x", [1, 8, 9, 9])], [("y", [1, 8, 9, 9])],
                  [("w", rng.standard_normal((8, 8, 3, 3)) * 0.2), ("b", rng.standard_normal(8))])


def se_model() -> onnx.ModelProto:
    """x -> GlobalAveragePool -> Sigmoid -> Mul with x (an SE gate)."""
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gap"),
             helper.make_node("Sigmoid", ["g"], ["s"], name="sig"),
             helper.make_node("Mul", ["s", "x"], ["y"], name="mul")]
    return _model(nodes, [("x", [1, 8, 6, 6])], [("y", [1, 8, 6, 6])], [])


def two_conv_model() -> onnx.ModelProto:
    """x -> 1x1 conv (8 -> 8) -> ReLU -> 1x1 conv (8 -> 8) -> y (no Winograd anywhere)."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="conv2", kernel_shape=[1, 1])]
    return _model(nodes, [("x", [1, 8, 5, 5])], [("y", [1, 8, 5, 5])],
                  [("w1", rng.standard_normal((8, 8, 1, 1)) * 0.3), ("b1", rng.standard_normal(8)),
                   ("w2", rng.standard_normal((8, 8, 1, 1)) * 0.3), ("b2", rng.standard_normal(8))])


def reference(model: onnx.ModelProto, feeds: dict) -> dict:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def assert_matches(got: np.ndarray, want: np.ndarray) -> None:
    err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))
    assert err < RTOL, f"relative error {err:.3g} against onnxruntime"


def x_for(model: onnx.ModelProto) -> dict:
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {"x": np.random.default_rng(2).standard_normal(shape).astype(np.float32)}


def graph_after(model: onnx.ModelProto, spec: str) -> ModuleOp:
    module = import_onnx(model)
    run_pipeline(make_context(), module, spec)
    return module


REST = "select-kernel-config{target=pocl-cpu},split-k,convert-graph-to-opencl,cse"
TO_FUSE = ("graph-canonicalize,fold-batchnorm,graph-canonicalize,convert-layout-nchw4c{storage=f32},"
           "conv-winograd{target=pocl-cpu},annotate-texture-scope{target=pocl-cpu images=true},graph-fuse")


def fused_ops(module: ModuleOp) -> list[graph.FusedOp]:
    return [o for o in module.walk() if isinstance(o, graph.FusedOp)]


# --------------------------------------------------------------------------- 1


@dataclass(frozen=True)
class BreakConvPads(ModulePass):
    """A (buggy) research pass: sets every conv's pads to 0 without changing its result
    type, which the conv verifier rejects."""

    name = "break-conv-pads"

    def apply(self, ctx, op):
        for o in op.walk():
            if isinstance(o, graph.Conv2dOp):
                o.pads = DenseArrayBase.from_list(i64, [0, 0, 0, 0])


def test_custom_pipeline_is_verified_before_lowering():
    """run_stages (adreno_mlir/pipeline.py) verifies only after the last two stages.
    A caller's pipeline (string or function) has one stage per pass, so the last two
    are convert-graph-to-opencl and cse: IR broken by a custom pass is never verified
    before it is lowered, and here compiles into a silently wrong model (max abs error ~5)
    instead of the conv's verifier error."""
    model = conv_relu_model()
    with pytest.raises(CLEAR_ERRORS, match="conv2d"):
        cm = adreno_mlir.compile(model, target="pocl-cpu", layout="nchw", passes=[BreakConvPads],
                                 pipeline=lambda p: p.replace("graph-fuse", "break-conv-pads,graph-fuse"))
        feeds = x_for(model)
        out = cm.run(feeds)["y"]
        print("compiled anyway; error vs onnxruntime:", float(np.abs(out - reference(model, feeds)["y"]).max()))


# --------------------------------------------------------------------------- 2-4: graph.fused verifier gaps


def _verify_or_run(module: ModuleOp, model_for_reference: onnx.ModelProto, match: str) -> None:
    """The hand-edited module must be rejected by its verifier (message matching
    `match`), or else compile to what its IR says (compared with onnxruntime)."""
    try:
        module.verify()
    except VerifyException as e:
        assert match in str(e), str(e)
        return
    try:
        cm = adreno_mlir.compile(module, target="pocl-cpu", layout="nchw4c", textures=True, pipeline=REST)
    except CLEAR_ERRORS as e:
        assert match in str(e), str(e)
        return
    feeds = x_for(model_for_reference)
    assert_matches(cm.run(feeds)["y"], reference(model_for_reference, feeds)["y"])


def test_fused_region_yielding_a_value_other_than_its_last_op():
    """graph.fused's verifier accepts a region whose yield is not the last op's result
    (the later ops are dead), but the lowering (Group.result in lowering/groups.py)
    computes the last op's value: the region yields the conv's output but the kernel
    stores relu(conv) -- silently wrong."""
    module = graph_after(conv_relu_model(), TO_FUSE)
    (fused,) = fused_ops(module)
    head, relu = fused.ops
    assert isinstance(head, texture.WinogradOutputOp) and isinstance(relu, graph.ReluOp)
    fused.body.block.last_op.operands = [head.results[0]]  # yield the conv, not the ReLU
    _verify_or_run(module, conv_relu_model(relu=False), "graph.fused")


def test_fused_region_broadcasting_its_head_to_a_larger_shape():
    """A region `gap -> sigmoid -> mul(., x)` (the mul's result is larger than the
    head's) is what graph-fuse refuses to form, but the graph.fused verifier accepts it
    and the lowering runs the mean kernel over the larger output: NaN / garbage."""
    module = graph_after(se_model(), TO_FUSE)
    (fused,) = fused_ops(module)
    (mul,) = [o for o in module.walk() if isinstance(o, graph.MulOp)]
    ret = mul.results[0]
    new = graph.FusedOp(ret.type, Region(Block()))
    fused.parent.insert_op_after(new, mul)
    for o in fused.ops:
        o.detach()
        new.body.block.add_op(o)
    sig = new.ops[-1].results[0]
    mul.operands = [sig if v is fused.result else v for v in mul.operands]
    mul.detach()
    new.body.block.add_op(mul)
    new.body.block.add_op(graph.YieldOp(ret))
    ret.replace_uses_with_if(new.result, lambda use: use.operation.parent_op() is not new)
    fused.detach()
    fused.erase()
    _verify_or_run(module, se_model(), "graph.fused")


def test_fused_region_holding_a_second_convolution():
    """A region `conv -> relu -> conv` verifies (any graph/texture op may sit in a
    region), then the lowering crashes with AttributeError: 'Conv2dOp' object has no
    attribute 'kind' (lowering/groups.py group_expression) instead of a clear error."""
    model = two_conv_model()
    module = graph_after(model, TO_FUSE.replace("images=true", "images=false"))
    first = next(f for f in fused_ops(module) if isinstance(f.head, graph.Conv2dOp))
    conv2 = next(o for o in module.walk() if isinstance(o, graph.Conv2dOp) and o.input is first.result)
    relu = first.ops[-1]
    for v in conv2.operands[1:]:  # conv2's weight and bias constants go before the region
        if v.owner.parent is first.parent:
            v.owner.detach()
            first.parent.insert_op_before(v.owner, first)
    y2 = conv2.results[0]
    y2.replace_all_uses_with(first.result)  # the region's result is conv2's value now
    conv2.operands = [relu.results[0] if v is first.result else v for v in conv2.operands]
    conv2.detach()
    first.body.block.insert_op_before(conv2, first.body.block.last_op)
    first.body.block.last_op.operands = [y2]
    _verify_or_run(module, model, "graph.fused")


# --------------------------------------------------------------------------- 5


@dataclass(frozen=True)
class StringSplitK(ModulePass):
    """Writes `kernel_config = {split_k = "2"}` on every kernel headed by a conv, as a
    hand edit of the IR after select-kernel-config might."""

    name = "string-split-k"

    def apply(self, ctx, op):
        for o in list(op.walk()):
            if isinstance(o, graph.FusedOp) and isinstance(o.head, graph.Conv2dOp):
                set_config(o, {"split_k": "2"})


def test_split_k_given_as_a_string_is_a_clear_error():
    """split-k (passes/split_k.py:48) compares the config value with `parts <= 1`
    before validating it: a string split_k is a TypeError, reported as an internal
    compiler error, instead of the CompileError naming the conv and the allowed values."""
    model = two_conv_model()
    with pytest.raises(CompileError, match="split_k"):
        adreno_mlir.compile(model, target="adreno-740", layout="nchw4c", textures=False, passes=[StringSplitK],
                            pipeline=lambda p: p.replace(",split-k", ",string-split-k,split-k"))


# --------------------------------------------------------------------------- 6


def test_loc_override_can_tune_a_winograd_layer(tmp_path):
    """The three Winograd ops carry the conv's location, so an overrides entry
    `loc:<conv>` with the matmul's keys also lands on winograd_input and the output
    region, which reject them: 'texture.winograd_input' at loc("conv"): kernel_config key
    'tiles_per_item' is not used by this kernel. A Winograd layer cannot be tuned by
    node name (and a loc: entry tuned for the direct conv breaks when the layer turns
    Winograd on another target)."""
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"loc:conv": {"tiles_per_item": 1, "co_blocks": 1}}))
    model = conv_relu_model()
    cm = adreno_mlir.compile(
        model, target="pocl-cpu", layout="nchw4c", textures=True,
        pipeline=lambda p: p.replace("select-kernel-config{", f'select-kernel-config{{overrides="{path}" '))
    assert "winograd_matmul" in cm.source
    feeds = x_for(model)
    assert_matches(cm.run(feeds)["y"], reference(model, feeds)["y"])


# --------------------------------------------------------------------------- 7


def test_pipeline_syntax_error_is_a_compile_error():
    """run_pipeline (adreno_mlir/pipeline.py) wraps PassPipeline.parse_spec in
    `except Exception`, but xDSL's ArgSpecParseError derives from BaseException: an
    unbalanced brace escapes compile() as a raw xDSL traceback."""
    model = conv_relu_model()
    try:
        adreno_mlir.compile(model, target="pocl-cpu", pipeline=lambda p: p.replace("graph-fuse", "graph-fuse{"))
    except BaseException as e:  # noqa: BLE001 - what escapes is the point of the test
        assert isinstance(e, CompileError), f"{type(e).__module__}.{type(e).__name__}: {e}"
        assert "graph-fuse" in str(e)
    else:
        pytest.fail("a pipeline with an unbalanced '{' compiled")


# --------------------------------------------------------------------------- 8


@dataclass(frozen=True)
class SplitConv1(ModulePass):
    """Sets `kernel_config = {split_k = 2}` on conv1 before graph-fuse (as a hand edit of
    the 4-scope IR, or a research pass choosing schedules early, would)."""

    name = "split-conv1"

    def apply(self, ctx, op):
        for o in op.walk():
            if isinstance(o, graph.Conv2dOp) and getattr(o.location, "desc", None) is not None \
                    and o.location.desc.data == "conv1":
                set_config(o, {"split_k": 2})


def test_kernel_config_written_before_graph_fuse_is_kept():
    """select-kernel-config keeps a config already in the IR, but one on a conv that
    graph-fuse then wraps in a region is silently ignored: the region gets the default
    config (split_k = 1) and the conv's own `split_k = 2` stays in the IR unused."""
    model = two_conv_model()
    cm = adreno_mlir.compile(model, target="adreno-740", layout="nchw4c", textures=False, passes=[SplitConv1],
                             pipeline=lambda p: p.replace("graph-fuse", "split-conv1,graph-fuse"))
    assert "_split2" in cm.source, "conv1's kernel_config split_k = 2 was dropped"
    feeds = x_for(model)
    assert_matches(cm.run(feeds)["y"], reference(model, feeds)["y"])
