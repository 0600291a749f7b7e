"""Per-node Winograd-or-direct and image-or-buffer choices (issue 30): the `winograd` and
`scope` keys of a `loc:<ONNX node name>` entry in the overrides file, read by conv-winograd
and annotate-texture-scope (their `overrides` option, which adreno_mlir.pipeline passes the
plan's overrides file to). A small two-conv model compiled on the test device in the
NCHW4c image plan: the kernel set and the printed IR change as the entries say, the
results still match onnxruntime (atol 1e-4, on outputs of magnitude about 1; F(4,3)'s
rounding is about 1e-5 relative), and an entry the node cannot take is a CompileError
naming the node and why."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import CompileError
from adreno_mlir.pipeline import stages_for

ATOL = 1e-4
RNG = np.random.default_rng(30)
CONV1, RELU1, CONV2 = "/l1/conv/Conv", "/l1/relu/Relu", "/l2/conv/Conv"


def _model():
    """x [1, 16, 16, 16] -> 3x3 conv (stride 1: Winograd-eligible) -> Relu -> 3x3 conv
    (stride 2: not eligible) -> Relu. On the CPU profiles the rule gives the first conv
    F(4,3) (16 channels >= MIN_CHANNELS_CPU)."""
    def conv_init(name):
        return [numpy_helper.from_array((RNG.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32), f"w{name}"),
                numpy_helper.from_array(RNG.standard_normal(16).astype(np.float32), f"b{name}")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name=CONV1, pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"], name=RELU1),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name=CONV2, pads=[1] * 4, strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["y"], name="/l2/relu/Relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], conv_init(1) + conv_init(2))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


MODEL = _model()
FEEDS = {"x": RNG.standard_normal((1, 16, 16, 16)).astype(np.float32)}
REF = ort.InferenceSession(MODEL.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, FEEDS)[0]


def _compile(overrides=None, model=MODEL):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cm = adreno_mlir.compile(model, layout="nchw4c", textures=True, overrides=overrides, keep_ir=True)
    # select-kernel-config leaves these keys to the other passes: no warning names them.
    noisy = [str(w.message) for w in caught if re.search(r"\b(winograd|scope)\b", str(w.message))]
    assert not noisy, noisy
    return cm


def _kernels(cm) -> list[str]:
    return re.findall(r"__kernel void (\w+)\(", cm.source)


def _check(cm, model=MODEL, feeds=FEEDS, ref=REF):
    got = next(iter(cm.run(feeds).values()))
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=ATOL, rtol=0)


def _line(ir: str, node: str) -> str:
    """The last printed op of ONNX node `node` (its result is the node's tensor)."""
    return [ln for ln in ir.splitlines() if f'loc("{node}")' in ln][-1]


def test_default_takes_winograd_on_the_eligible_conv():
    cm = _compile()
    assert any(k.startswith("winograd_input_f4") for k in _kernels(cm)), _kernels(cm)
    _check(cm)


@pytest.mark.parametrize("tile", [0, 2, 4])
def test_winograd_key_decides_the_conv(tile):
    cm = _compile({f"loc:{CONV1}": {"winograd": tile}})
    kernels = _kernels(cm)
    winograd = [k for k in kernels if k.startswith("winograd_")]
    ir = cm.stage_ir["winograd"]
    if tile == 0:
        assert not winograd, kernels
        assert "graph.conv2d" in _line(ir, CONV1)
    else:
        assert any(k.startswith(f"winograd_input_f{tile}") for k in winograd), kernels
        assert "texture.winograd_output" in _line(ir, CONV1) and f"tile = {tile} : i64" in _line(ir, CONV1)
    assert "winograd = " not in ir  # the file does not write the attribute (signatures stay)
    _check(cm)


def test_scope_key_decides_the_tensor_from_a_file(tmp_path):
    """The first Relu's result (the fused conv kernel's output, the second conv's input):
    an image by default on the image plan, a global buffer with {"scope": "buffer"}; the
    kernel writing it changes with it. A file (not a dict), with keys of all three passes
    in one entry."""
    default = _compile()
    assert "#texture.image" in _line(default.stage_ir["scope"], RELU1).rsplit("->", 1)[-1]
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps({f"loc:{RELU1}": {"scope": "buffer"},
                                f"loc:{CONV1}": {"winograd": 0, "x_block": 2}}))
    cm = _compile(str(path))
    line = _line(cm.stage_ir["scope"], RELU1)
    assert line.rsplit("->", 1)[-1].strip().startswith("!texture.tensor<1x4x16x16x4xf32, nchw4c, global>"), line
    assert cm.source != default.source
    _check(cm)
    back = _compile({f"loc:{RELU1}": {"scope": "image"}, f"loc:{CONV1}": {"winograd": 0}})
    assert "#texture.image<texture" in _line(back.stage_ir["scope"], RELU1).rsplit("->", 1)[-1]
    _check(back)


@pytest.mark.parametrize(("entry", "message"), [
    ({f"loc:{CONV2}": {"winograd": 2}},
     re.escape(f"'graph.conv2d' at loc(\"{CONV2}\"): ") + f".*entry 'loc:{CONV2}' has \"winograd\": 2, which asks for Winograd, "
     r"but stride \[2, 2\] is not 1"),
    ({f"loc:{RELU1}": {"winograd": 4}}, f"conv-winograd: .*node {RELU1} is not a convolution"),
    ({f"loc:{CONV1}": {"winograd": 3}}, f"entry 'loc:{CONV1}' has \"winograd\": 3; it takes 0"),
    ({f"loc:{RELU1}": {"scope": "images"}}, f"entry 'loc:{RELU1}' has \"scope\": 'images'; it takes"),
])
def test_bad_entries_name_the_node(entry, message):
    with pytest.raises(CompileError, match=message):
        _compile(entry)


def test_image_request_a_tensor_cannot_take():
    """A Concat copies into a buffer (it cannot write images): "image" on it is an error
    naming the node and why."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="a"), helper.make_node("Sigmoid", ["x"], ["b"], name="b"),
             helper.make_node("Concat", ["a", "b"], ["c"], name="/cat/Concat", axis=1),
             helper.make_node("Relu", ["c"], ["y"], name="out")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(CompileError, match=r"loc\(\"/cat/Concat\"\).*\"scope\": \"image\", but graph.concat "
                                           "cannot write its result to an image"):
        _compile({"loc:/cat/Concat": {"scope": "image"}}, model)


def test_pipeline_strings():
    """The overrides file goes to all three passes; without one the strings are as before."""
    plain = dict(stages_for("nchw4c", True, "fp32", "adreno-740"))
    assert plain["winograd"] == "conv-winograd{target=adreno-740}"
    assert plain["scope"] == "annotate-texture-scope{target=adreno-740 images=true}"
    given = dict(stages_for("nchw4c", True, "fp32", "adreno-740", overrides="/x/o.json"))
    for stage in ("winograd", "scope", "config"):
        assert 'overrides="/x/o.json"' in given[stage], given[stage]
