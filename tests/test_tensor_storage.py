"""How tensors are stored, on every plan (NCHW buffers, NCHW4c buffers, textures): a
buffer that one launch reads twice is released once (else two live tensors share its
memory), and the padding lanes of NCHW4c channel blocks stay finite through a division
(0 / 0 there once made every later output NaN). Small graphs, each must match
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx.helper as h
import onnx.numpy_helper as nh
import onnxruntime as ort
import pytest

import adreno_mlir

PLANS = [dict(layout="nchw"), dict(layout="nchw4c", textures=False), dict(textures=True)]
rng = np.random.default_rng(0)


def _rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _model(nodes, inputs, output, inits):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info(n, 1, s) for n, s in inputs],
                     [h.make_tensor_value_info(output[0], 1, output[1])],
                     [nh.from_array(v, k) for k, v in inits.items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def _check(model, feeds, plan, rtol=1e-4):
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    out = next(iter(adreno_mlir.compile(model, target="pocl-cpu", **plan).run(feeds).values()))
    assert np.isfinite(out).all()
    err = np.abs(out - ref).max() / np.abs(ref).max()
    assert err <= rtol, f"{plan}: error {err:.2e}"


@pytest.mark.parametrize("plan", PLANS)
def test_value_read_twice_by_one_launch_is_not_freed_twice(plan):
    """`a` is read twice by the fused conv+add launch; releasing its buffer twice once
    gave two later tensors the same memory (both concat halves came out equal)."""
    w = {k: _rand(8, 8, 1, 1) for k in ("W1", "W2", "W3", "W4")}
    nodes = [h.make_node("Conv", ["x", "W1"], ["a"]), h.make_node("Conv", ["a", "W2"], ["a2"]),
             h.make_node("Add", ["a2", "a"], ["b"]), h.make_node("Conv", ["b", "W3"], ["c"]),
             h.make_node("Conv", ["b", "W4"], ["d"]), h.make_node("Concat", ["c", "d"], ["z"], axis=1)]
    _check(_model(nodes, [("x", [1, 8, 6, 6])], ("z", [1, 16, 6, 6]), w), {"x": _rand(1, 8, 6, 6)}, plan)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("divisor", ["constant", "tensor"])
def test_division_before_conv_keeps_channel_padding_finite(plan, divisor):
    """x / 255 (3 channels, padded to 4 in NCHW4c) and conv(x) / conv(x) (6 channels)
    before a conv: 0 / 0 in the padding lanes once made every output NaN."""
    if divisor == "constant":
        nodes = [h.make_node("Div", ["x", "s"], ["y"]), h.make_node("Conv", ["y", "W"], ["z"], pads=[1, 1, 1, 1])]
        inits = {"W": _rand(8, 3, 3, 3), "s": np.array(255.0, np.float32)}
        model = _model(nodes, [("x", [1, 3, 8, 8])], ("z", [1, 8, 8, 8]), inits)
        feeds = {"x": _rand(1, 3, 8, 8)}
    else:
        nodes = [h.make_node("Conv", ["x", "W1"], ["a"]), h.make_node("Conv", ["x", "W2"], ["b"]),
                 h.make_node("Div", ["a", "b"], ["d"]), h.make_node("Conv", ["d", "W3"], ["z"])]
        inits = {"W1": _rand(6, 4, 1, 1), "W2": _rand(6, 4, 1, 1), "W3": _rand(4, 6, 1, 1)}
        model = _model(nodes, [("x", [1, 4, 5, 5])], ("z", [1, 4, 5, 5]), inits)
        feeds = {"x": _rand(1, 4, 5, 5)}
    _check(model, feeds, plan)

