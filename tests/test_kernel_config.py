"""Kernel configs end to end: `select-kernel-config{overrides=FILE}` (what an autotuner
writes) through `adreno_mlir.compile(pipeline=...)`, on a small ONNX model run on the
default OpenCL device and compared with onnxruntime.

The model: conv1 (3x3, 16 -> 16, pad 1) + ReLU, conv2 (1x1, 16 -> 8) + ReLU; graph-fuse
makes one region (one kernel) of each conv and its ReLU, whose config sits on the region.
Overrides are keyed by `loc:<ONNX node name>` (the region's head, the conv) or by
`kernel_signature` of the region. Outputs must match onnxruntime to 1e-4 relative to
the largest output (fp32).

The last tests (models from tests/test_custom_pipelines.py) check configs that a
caller's pass writes into the IR: a string split_k is a CompileError naming it, a config
set on a conv before graph-fuse is kept on its region, and a `loc:` override with a
matmul's keys tunes a conv that becomes Winograd.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.parser import Parser
from xdsl.passes import ModulePass

import adreno_mlir
from adreno_mlir.context import make_context
from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError
from adreno_mlir.passes.select_kernel_config import config_of, head_of, is_kernel, kernel_signature, set_config
from tests.test_custom_pipelines import assert_matches, conv_relu_model, reference, two_conv_model, x_for

ort = pytest.importorskip("onnxruntime")

RTOL = 1e-4
PLAN = dict(target="adreno-740", layout="nchw4c", textures=False)


def small_model():
    rng = np.random.default_rng(0)

    def init(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c2"], ["y"], name="relu2"),
    ]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
        [init("w1", (16, 16, 3, 3)), init("b1", (16,)), init("w2", (8, 16, 1, 1)), init("b2", (8,))],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def model():
    return small_model()


@pytest.fixture(scope="module")
def feeds_and_reference(model):
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return {"x": x}, sess.run(None, {"x": x})[0]


def with_overrides(path):
    """A pipeline function: the default pipeline with `overrides="PATH"` added to
    select-kernel-config (the path quoted: the pipeline syntax does not take a bare one)."""
    return lambda p: p.replace("select-kernel-config{", f'select-kernel-config{{overrides="{path}" ')


def compile_with(model, path, **kw):
    return adreno_mlir.compile(model, keep_ir=True, pipeline=with_overrides(path), **{**PLAN, **kw})


def kernels_by_node(ir: str) -> dict[str, tuple[dict, str]]:
    """{ONNX node name of a kernel's head: (its kernel_config, its kernel_signature)}."""
    module = Parser(make_context(), ir).parse_module()
    out = {}
    for op in module.walk():
        if is_kernel(op):
            desc = getattr(head_of(op).location, "desc", None)
            if desc is not None:
                out[desc.data] = (config_of(op), kernel_signature(op))
    return out


def assert_matches_onnxruntime(cm, feeds_and_reference):
    feeds, ref = feeds_and_reference
    got = cm.run(feeds)["y"]
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    assert err < RTOL, f"max error {err:.3g} relative to the largest output"


# --------------------------------------------------------------------------- overrides


def test_overrides_by_loc_and_signature(model, feeds_and_reference, tmp_path):
    default = adreno_mlir.compile(model, keep_ir=True, **PLAN)
    before = kernels_by_node(default.stage_ir["config"])
    # complete: every key of the conv4c family (those not in use at their "off" value)
    assert before["conv1"][0] == {"x_block": 4, "co_blocks": 1, "split_k": 1, "dw_rows": 0, "reduce_items": 1, "dw_tile": 0}
    assert before["conv2"][0] == {"x_block": 4, "co_blocks": 1, "split_k": 1, "dw_rows": 0, "reduce_items": 1, "dw_tile": 0}
    assert "_x2" not in default.source
    conv2_signature = before["conv2"][1]
    assert conv2_signature.startswith("graph.conv2d(") and conv2_signature.endswith("+relu")

    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({
        "loc:conv1": {"x_block": 2},
        conv2_signature: {"x_block": 1, "co_blocks": 2},
    }))
    cm = compile_with(model, path)
    assert f'overrides="{path}"' in cm.pipeline
    after = kernels_by_node(cm.stage_ir["select-kernel-config"])
    # override keys replace the defaults; the others stay
    assert after["conv1"][0] == {"x_block": 2, "co_blocks": 1, "split_k": 1, "dw_rows": 0, "reduce_items": 1, "dw_tile": 0}
    assert after["conv2"][0] == {"x_block": 1, "co_blocks": 2, "split_k": 1, "dw_rows": 0, "reduce_items": 1, "dw_tile": 0}
    config_ir = cm.stage_ir["select-kernel-config"]
    assert ("kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, "
            "reduce_items = 1 : i64, dw_tile = 0 : i64}") in config_ir
    # the lowering follows: two output channel blocks per work-item for conv2
    assert "__kernel void conv1x1_4c_x2_relu(" in cm.source
    assert_matches_onnxruntime(cm, feeds_and_reference)


def test_signature_override_applies_to_every_equal_layer(tmp_path):
    """Two identical conv + ReLU layers share a signature: one entry configures both."""
    rng = np.random.default_rng(2)
    w = [numpy_helper.from_array((rng.standard_normal((16, 16, 1, 1)) * 0.2).astype(np.float32), f"w{i}")
         for i in range(2)]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], name="a"), helper.make_node("Relu", ["c0"], ["r0"], name="ra"),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], name="b"), helper.make_node("Relu", ["c1"], ["y"], name="rb"),
    ]
    graph = helper.make_graph(nodes, "twice", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])], w)
    twice = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sig = kernels_by_node(adreno_mlir.compile(twice, keep_ir=True, **PLAN).stage_ir["config"])["a"][1]
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({sig: {"x_block": 1}}))
    cm = compile_with(twice, path)
    configs = kernels_by_node(cm.stage_ir["select-kernel-config"])
    assert configs["a"][0]["x_block"] == configs["b"][0]["x_block"] == 1
    x = np.random.default_rng(3).standard_normal((1, 16, 4, 4)).astype(np.float32)
    ref = ort.InferenceSession(twice.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert_matches_onnxruntime(cm, ({"x": x}, ref))


def test_nchw_overrides(model, feeds_and_reference, tmp_path):
    """The NCHW plan's keys: the scalar kernel for conv1, 2-pixel blocks for conv2."""
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"loc:conv1": {"kernel": "scalar", "co_block": 4},
                                "loc:conv2": {"x_block": 2}}))
    cm = compile_with(model, path, layout="nchw")
    configs = kernels_by_node(cm.stage_ir["select-kernel-config"])
    assert configs["conv1"][0]["kernel"] == "scalar" and configs["conv1"][0]["co_block"] == 4
    assert configs["conv2"][0] == {"kernel": "vec4", "co_block": 8, "x_block": 2}
    assert "__kernel void conv1x1_c8x2_relu(" in cm.source
    assert_matches_onnxruntime(cm, feeds_and_reference)


def test_scalar_conv_sixteen_channels_per_item(model, feeds_and_reference, tmp_path):
    """co_block = 16 (the scalar kernel only): the shape PoCL's work-group vectorizer
    liked best in a microbenchmark; the float4 kernel refuses it with its own limits."""
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"loc:conv1": {"kernel": "scalar", "co_block": 16}}))
    cm = compile_with(model, path, layout="nchw")
    assert kernels_by_node(cm.stage_ir["select-kernel-config"])["conv1"][0]["co_block"] == 16
    assert_matches_onnxruntime(cm, feeds_and_reference)
    path.write_text(json.dumps({"loc:conv1": {"kernel": "vec4", "co_block": 16}}))
    with pytest.raises(CompileError, match=r"co_block = 16 must be 4 or 8"):
        compile_with(model, path, layout="nchw")


# --------------------------------------------------------------------------- bad files


@pytest.mark.parametrize("text, expected", [
    ('{"loc:conv1": {"x_block": 2,}}', ["{path}", "is not valid JSON"]),
    ('[{"x_block": 2}]', ["{path}", "must be a JSON object"]),
    ('{"loc:conv1": 4}', ["{path}", "must be a JSON object"]),
    ('{"loc:conv1": {"xblock": 2}}', ["{path}", "'loc:conv1'", "xblock", "known keys", "x_block"]),
    ('{"loc:conv2": {"x_block": 7}}', ["'graph.conv2d' at loc(\"conv2\")", "x_block = 7", "[1, 2, 3, 4]"]),
    ('{"loc:conv2": {"split_k": 0}}', ["'graph.conv2d' at loc(\"conv2\")", "split_k = 0"]),
    ('{"loc:conv1": {"work_group": [0, 4]}}', ["loc(\"conv1\")", "work_group"]),
], ids=["json-syntax", "not-an-object", "entry-not-an-object", "unknown-key", "bad-x-block", "bad-split-k",
        "bad-work-group"])
def test_bad_override_file(model, tmp_path, text, expected):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CompileError) as err:
        compile_with(model, path)
    message = str(err.value)
    for fragment in expected:
        assert fragment.format(path=path) in message, message


def test_missing_override_file(model, tmp_path):
    path = tmp_path / "absent.json"
    with pytest.raises(CompileError, match="cannot read overrides file") as err:
        compile_with(model, path)
    assert str(path) in str(err.value)


def test_errors_and_notes_name_the_users_overrides_file(model, tmp_path):
    """Regression (noticed in issue 13's session 3): `compile(overrides=FILE)` and
    `tuning_db=` hand select-kernel-config a merged copy in the cache folder, and its
    errors and warnings named only that copy. They now name the user's file too."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"loc:conv2": {"x_block": 9}}))
    with pytest.raises(CompileError, match=r"x_block = 9") as err:
        adreno_mlir.compile(model, overrides=str(bad), **PLAN)
    assert f"{bad} (merged into " in str(err.value), str(err.value)
    unused = tmp_path / "unused.json"
    unused.write_text(json.dumps({"loc:nothere": {"x_block": 2}}))
    with pytest.warns(UserWarning, match=r"matched no op: loc:nothere") as notes:
        adreno_mlir.compile(model, overrides=str(unused), **PLAN)
    assert any(f"{unused} (merged into " in str(n.message) for n in notes), [str(n.message) for n in notes]


# --------------------------------------------------------------------------- split-K


@pytest.mark.parametrize("textures", [False, True], ids=["buffers", "images"])
def test_split_k_forced_by_override(model, feeds_and_reference, tmp_path, textures):
    """select-kernel-config never splits these convs (too few input channel blocks); forced
    through the overrides it becomes a partial-sum kernel and a summing kernel that
    also runs the ReLU. conv1 has 4 input channel blocks, split 3 ways (uneven)."""
    path = tmp_path / "split.json"
    path.write_text(json.dumps({"loc:conv1": {"split_k": 3}, "loc:conv2": {"split_k": 2, "x_block": 2}}))
    cm = compile_with(model, path, textures=textures)
    configs = kernels_by_node(cm.stage_ir["select-kernel-config"])
    assert configs["conv1"][0]["split_k"] == 3 and configs["conv2"][0]["split_k"] == 2
    split_ir = cm.stage_ir["split-k"]
    assert "graph.conv2d_split_k" in split_ir and "graph.split_k_sum" in split_ir
    assert "parts = 3 : i64" in split_ir and "parts = 2 : i64" in split_ir
    assert "graph.conv2d " not in split_ir  # every conv was split
    # the partial-sum op keeps the blocking keys, its own split (split_k) at 1
    assert ("kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, "
            "reduce_items = 1 : i64, dw_tile = 0 : i64}") in split_ir
    assert "__kernel void conv3x3_4c_split3(" in cm.source
    assert "__kernel void conv1x1_4c_split2(" in cm.source
    assert "__kernel void conv_split_sum_4c_relu" in cm.source
    assert_matches_onnxruntime(cm, feeds_and_reference)


def test_conv4c_co_blocks_refused_by_the_config_check(tmp_path):
    """co_blocks = 2 on an NCHW4c conv with 3 output channel blocks: refused when the
    config is checked (validate_config, which the autotuner prunes with), naming the op,
    not later by the lowering."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((12, 8, 1, 1)) * 0.2).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv12")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12, 4, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"loc:conv12": {"co_blocks": 2}}))
    with pytest.raises(CompileError, match=r"loc\(\"conv12\"\).*co_blocks = 2 must divide the output channel "
                                           r"blocks \(3\).*overrides file"):
        compile_with(model, path)
    path.write_text(json.dumps({"loc:conv12": {"co_blocks": 1}}))
    compile_with(model, path)


# --------------------------------------------------------------------------- configs a caller's pass writes


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
    """A string split_k (written by a pass of the user's) once reached split-k, whose
    `parts <= 1` raised a TypeError reported as an internal compiler error. The IR
    verifier (kernel_config against its family) now refuses it after the stage that
    wrote it: a CompileError naming the stage, the conv and the allowed values."""
    model = two_conv_model()
    with pytest.raises(CompileError, match=r"^the IR after stage 'string-split-k' \(string-split-k\) does not verify: "
                                           r"'graph.conv2d' at loc\(\"conv1\"\): kernel_config split_k = '2' is not one "):
        adreno_mlir.compile(model, target="adreno-740", layout="nchw4c", textures=False, passes=[StringSplitK],
                            pipeline=lambda p: p.replace(",split-k", ",string-split-k,split-k"))


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
