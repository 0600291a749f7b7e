"""onnxruntime's InferenceSession API on a compiled model and on a loaded artifact
(issue 27): the same code runs against onnxruntime and against adreno-mlir.

Tolerance: outputs agree with onnxruntime's CPU provider to 1e-4 relative (1e-5
absolute, for values near zero)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import adreno_mlir
from adreno_mlir.errors import InputError

RTOL, ATOL = 1e-4, 1e-5


def _model() -> onnx.ModelProto:
    """Conv+Relu ("main"), a second output computed from it ("second", a global average
    pool) and a constant int64 one ("shape", the input's Shape)."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3],
                           rng.standard_normal((4, 3, 3, 3)).astype(np.float32).ravel())
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], rng.standard_normal(4).astype(np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["main"]),
        helper.make_node("GlobalAveragePool", ["main"], ["second"]),
        helper.make_node("Shape", ["x"], ["shape"]),
    ]
    g = helper.make_graph(
        nodes, "ort_api",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("main", TensorProto.FLOAT, [1, 4, 8, 8]),
         helper.make_tensor_value_info("second", TensorProto.FLOAT, [1, 4, 1, 1]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [4])],
        initializer=[w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("ort_api") / "m.onnx"
    onnx.save(_model(), path)
    return path


@pytest.fixture(scope="module")
def reference(model_path):
    return ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def compiled(model_path):
    return adreno_mlir.compile(str(model_path))


@pytest.fixture(scope="module")
def loaded(compiled, tmp_path_factory):
    return adreno_mlir.load(compiled.save(tmp_path_factory.mktemp("ort_api_art") / "m.adreno"))


def infer(sess, x):
    """Code written for onnxruntime: nothing in it knows which session it runs on."""
    name = sess.get_inputs()[0].name
    return sess.run(None, {name: x})


def _x(seed=1):
    return np.random.default_rng(seed).standard_normal((1, 3, 8, 8)).astype(np.float32)


def _io(args):
    return [(a.name, list(a.shape), a.type) for a in args]


@pytest.mark.parametrize("which", ["compiled", "loaded"])
def test_same_code_as_onnxruntime(which, request, reference):
    sess = request.getfixturevalue(which)
    x = _x()
    ours, theirs = infer(sess, x), infer(reference, x)
    assert isinstance(ours, list) and len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert _io(sess.get_inputs()) == _io(reference.get_inputs()) == [("x", [1, 3, 8, 8], "tensor(float)")]
    assert _io(sess.get_outputs()) == _io(reference.get_outputs())
    assert [a.type for a in sess.get_outputs()] == ["tensor(float)", "tensor(float)", "tensor(int64)"]
    assert sess.get_providers() == ["OpenCLExecutionProvider"]


@pytest.mark.parametrize("which", ["compiled", "loaded"])
def test_output_names_and_forms(which, request, reference):
    sess = request.getfixturevalue(which)
    x = _x(2)
    (second,) = sess.run(["second"], {"x": x})
    np.testing.assert_allclose(second, reference.run(["second"], {"x": x})[0], rtol=RTOL, atol=ATOL)
    # the order asked, not the graph's; run_options accepted (and ignored) as onnxruntime's third parameter
    shape, main = sess.run(["shape", "main"], {"x": x}, None)
    assert shape.tolist() == [1, 3, 8, 8] and main.shape == (1, 4, 8, 8)
    kw = sess.run(output_names=["main"], input_feed={"x": x}, run_options=None)
    np.testing.assert_array_equal(kw[0], main)
    # the dict form stays: run(feeds) and run(feeds=...)
    d = sess.run({"x": x})
    assert isinstance(d, dict) and list(d) == ["main", "second", "shape"]
    np.testing.assert_array_equal(d["main"], main)
    assert list(sess.run(feeds={"x": x})) == ["main", "second", "shape"]


@pytest.mark.parametrize("which", ["compiled", "loaded"])
def test_errors(which, request):
    sess = request.getfixturevalue(which)
    x = _x()
    with pytest.raises(InputError, match=r"unknown output name \['nope'\].*\['main', 'second', 'shape'\]"):
        sess.run(["main", "nope"], {"x": x})
    with pytest.raises(InputError, match="list of output names"):
        sess.run("main", {"x": x})
    with pytest.raises(InputError, match="takes a dict of inputs"):
        sess.run(None)
    with pytest.raises(InputError, match="twice"):
        sess.run(None, {"x": x}, input_feed={"x": x})
    with pytest.raises(InputError, match="wrong input names"):
        sess.run(None, {"y": x})
