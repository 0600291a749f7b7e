"""NaN through max pooling (issue 25): a window that holds a NaN gives NaN, as PyTorch and
IEEE 754-2019 `maximum` do, on every plan (NCHW buffers, NCHW4c buffers, images, fp16).

Expected outputs are not taken from an engine: onnxruntime and the ONNX reference
evaluator each drop NaN in some window positions and keep it in others
(docs/op_support.md, "NaN in max pooling"). The expected NaN mask is computed here with
numpy from the input's NaN positions alone (a window, or a convolution's receptive field,
that holds a NaN is NaN; padded taps are not part of the window); the values outside the
mask must be finite and match onnxruntime (1e-5 relative to the output's largest
magnitude, 1e-2 for fp16), which is exact there because no NaN reaches those windows.

NaN is placed at the first, a middle or the last in-bounds tap of every third window
(a different set per channel), or at an in-bounds tap of padded border windows, after
Conv -> Relu (Relu fused into the convolution's epilogue: it must keep NaN too) or on
the pool's input directly. Inputs are shifted to mostly negative values so that a padded
tap read as 0 (instead of skipped) would win and be seen.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

PLANS = {
    "nchw": {"layout": "nchw"},
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
    "fp16-acc32": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
    "fp16": {"textures": True, "precision": "fp16", "target": "adreno-740"},
    "fp16-buffers": {"textures": False, "precision": "fp16", "target": "adreno-740"},
}
"""The plans of tests/test_native_runtime.py plus half arithmetic (precision "fp16", on
images and on buffers), which runs on the `half_device` (Intel's CPU runtime)."""

HALF_PLANS = {"fp16", "fp16-buffers"}


def _tolerance(plan: str) -> float:
    return 1e-2 if "fp16" in plan else 1e-5


# name: input shape (N, C, H, W), and what the graph is:
#   pool: MaxPool attributes (kernel k, stride s, pads [t, l, b, r], dilation d, ceil_mode),
#         or "global" (ReduceMax over H, W with keepdims: what GlobalMaxPool computes)
#   conv: a Conv (kernel 1 or 3, "same" padding, bias) + Relu before the pool
#   relu_after: a Relu after the pool (fused into the pool kernel's epilogue)
#   every: NaN at one window in `every` (per channel)
MODELS = {
    "maxpool2-s2": dict(shape=(1, 6, 8, 8), pool=dict(k=2, s=2)),
    "maxpool3-s2": dict(shape=(1, 6, 9, 9), pool=dict(k=3, s=2), every=5),
    "maxpool3-s2-pad1": dict(shape=(1, 6, 9, 9), pool=dict(k=3, s=2, pads=[1, 1, 1, 1]), every=5),
    "maxpool3-s2-pad1-ceil": dict(shape=(1, 6, 8, 8), pool=dict(k=3, s=2, pads=[1, 1, 1, 1], ceil=1), every=5),
    "maxpool3-s1-pad1": dict(shape=(1, 5, 6, 6), pool=dict(k=3, s=1, pads=[1, 1, 1, 1]), every=11),
    "maxpool3-s2-asymmetric-pads": dict(shape=(1, 6, 7, 8), pool=dict(k=3, s=2, pads=[0, 1, 1, 0]), every=5),
    "maxpool2-s1-dilation2": dict(shape=(1, 6, 7, 7), pool=dict(k=2, s=1, d=2), every=5),
    "maxpool3-s2-pad2-dilation2": dict(shape=(1, 6, 9, 9), pool=dict(k=3, s=2, pads=[2, 2, 2, 2], d=2), every=11),
    "maxpool3-s2-pad1-relu": dict(shape=(1, 6, 9, 9), pool=dict(k=3, s=2, pads=[1, 1, 1, 1]), relu_after=True,
                                  every=5),
    "global-max": dict(shape=(1, 6, 5, 7), pool="global"),
    "conv1x1-relu-maxpool3-s2-pad1": dict(shape=(1, 3, 9, 9), conv=1, pool=dict(k=3, s=2, pads=[1, 1, 1, 1]),
                                          every=13),
    "conv3x3-relu-maxpool2-s2": dict(shape=(1, 3, 12, 12), conv=3, pool=dict(k=2, s=2), every=17),
    "conv3x3-relu": dict(shape=(1, 3, 10, 10), conv=3, pool=None, every=29),
}
CONV_CHANNELS = 6


def _pool_params(spec, h: int, w: int) -> dict:
    """The MaxPool attributes with their defaults (a global max: one window of H x W)."""
    p = spec["pool"]
    if p == "global":
        return dict(k=(h, w), s=1, pads=[0, 0, 0, 0], d=1, ceil=0)
    if p is None:  # identity: 1x1 windows
        return dict(k=(1, 1), s=1, pads=[0, 0, 0, 0], d=1, ceil=0)
    k = p["k"]
    return dict(k=(k, k), s=p.get("s", 1), pads=p.get("pads", [0, 0, 0, 0]), d=p.get("d", 1), ceil=p.get("ceil", 0))


def _model(spec):
    n, c, h, w = spec["shape"]
    rng = np.random.default_rng(3)
    nodes, inits, cur = [], [], "x"
    if spec.get("conv"):
        k = spec["conv"]
        inits += [numpy_helper.from_array(rng.standard_normal((CONV_CHANNELS, c, k, k)).astype(np.float32), "w"),
                  numpy_helper.from_array(rng.standard_normal(CONV_CHANNELS).astype(np.float32), "b")]
        nodes += [helper.make_node("Conv", ["x", "w", "b"], ["conv"], name="/conv", kernel_shape=[k, k],
                                   pads=[k // 2] * 4),
                  helper.make_node("Relu", ["conv"], ["relu"], name="/relu")]
        cur = "relu"
    p = spec["pool"]
    if p == "global":
        nodes.append(helper.make_node("ReduceMax", [cur], ["pool"], name="/pool", axes=[2, 3], keepdims=1))
        cur = "pool"
    elif p is not None:
        q = _pool_params(spec, h, w)
        nodes.append(helper.make_node("MaxPool", [cur], ["pool"], name="/pool", kernel_shape=list(q["k"]),
                                      strides=[q["s"]] * 2, pads=q["pads"], dilations=[q["d"]] * 2,
                                      ceil_mode=q["ceil"]))
        cur = "pool"
    if spec.get("relu_after"):
        nodes.append(helper.make_node("Relu", [cur], ["tail"], name="/tail"))
        cur = "tail"
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "nan_pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _taps(q, oy: int, ox: int, h: int, w: int) -> tuple[list[tuple[int, int]], bool]:
    """The in-bounds input pixels of window (oy, ox), row by row, and whether the window
    also covers padding (or the ceil-mode overhang)."""
    (kh, kw), s, d, (pt, pl) = q["k"], q["s"], q["d"], q["pads"][:2]
    taps, padded = [], False
    for a, b in itertools.product(range(kh), range(kw)):
        iy, ix = oy * s - pt + a * d, ox * s - pl + b * d
        if 0 <= iy < h and 0 <= ix < w:
            taps.append((iy, ix))
        else:
            padded = True
    return taps, padded


def _pool_nan_mask(nan: np.ndarray, q, out_hw) -> np.ndarray:
    """Max pooling's NaN positions, from its input's: a window is NaN iff an in-bounds tap is."""
    n, c, h, w = nan.shape
    out = np.zeros((n, c, *out_hw), bool)
    for oy, ox in itertools.product(*map(range, out_hw)):
        taps, _ = _taps(q, oy, ox, h, w)
        assert taps, "a window of padding only (not possible in ONNX)"
        ys, xs = zip(*taps)
        out[:, :, oy, ox] = nan[:, :, list(ys), list(xs)].any(axis=2)
    return out


def _conv_nan_mask(nan: np.ndarray, k: int) -> np.ndarray:
    """A "same" convolution's NaN positions (finite weights): every output channel of a
    pixel whose receptive field holds a NaN of any input channel."""
    n, _, h, w = nan.shape
    anyc = np.pad(nan.any(axis=1), ((0, 0), (k // 2, k // 2), (k // 2, k // 2)))
    out = np.zeros((n, h, w), bool)
    for a, b in itertools.product(range(k), range(k)):
        out |= anyc[:, a:a + h, b:b + w]
    return np.repeat(out[:, None], CONV_CHANNELS, axis=1)


def _out_hw(q, h: int, w: int) -> tuple[int, int]:
    """ONNX's MaxPool output size (with ceil_mode's rule that a window starts inside the
    input or its top/left padding)."""
    sizes = []
    for i, size in enumerate((h, w)):
        pad0, pad1 = q["pads"][i], q["pads"][i + 2]
        span = (q["k"][i] - 1) * q["d"] + 1
        num = size + pad0 + pad1 - span
        o = (-(-num // q["s"]) if q["ceil"] else num // q["s"]) + 1
        if q["ceil"] and (o - 1) * q["s"] >= size + pad0:
            o -= 1
        sizes.append(o)
    return tuple(sizes)


def _feeds(spec, where: str) -> np.ndarray:
    """The input with NaNs placed at tap `where` ("first", "middle", "last": that in-bounds
    tap of every `every`-th window, a different set per channel; "border": the first or
    last in-bounds tap of every fourth padded window, alternating) of the pool's windows (on the
    convolution's output positions, for a 1x1 convolution the same pixels)."""
    n, c, h, w = spec["shape"]
    q = _pool_params(spec, h, w)
    oh, ow = _out_hw(q, h, w)
    every = spec.get("every", 3)
    x = (np.random.default_rng(7).standard_normal((n, c, h, w)) - 1.5).astype(np.float32)
    # The pool's channels: the convolution's outputs (all NaN where an input channel is).
    pool_channels = CONV_CHANNELS if spec.get("conv") else c
    for ch, (oy, ox) in itertools.product(range(pool_channels), itertools.product(range(oh), range(ow))):
        taps, padded = _taps(q, oy, ox, h, w)
        index = oy * ow + ox + ch
        if where == "border":
            if not padded or index % 4:
                continue
            tap = taps[0] if (index // 4) % 2 == 0 else taps[-1]
        else:
            if index % every:
                continue
            tap = taps[{"first": 0, "middle": len(taps) // 2, "last": -1}[where]]
        if spec.get("conv") and ch >= c:  # a convolution spreads every input channel's NaN
            continue
        x[0, ch, tap[0], tap[1]] = np.nan
    return x


def _expected_nan(spec, x: np.ndarray) -> np.ndarray:
    n, c, h, w = spec["shape"]
    nan = np.isnan(x)
    if spec.get("conv"):
        nan = _conv_nan_mask(nan, spec["conv"])
    q = _pool_params(spec, h, w)
    return _pool_nan_mask(nan, q, _out_hw(q, h, w))


def _cases():
    for name, spec in MODELS.items():
        q = _pool_params(spec, *spec["shape"][2:])
        border = any(q["pads"]) or q["ceil"]
        if spec["pool"] is None:  # 1x1 windows: first, middle and last are one tap
            yield name, "first"
            continue
        for where in ("first", "middle", "last") + (("border",) if border else ()):
            yield name, where


@pytest.fixture(scope="module")
def compiled():
    """One compile per (model, plan), shared by the NaN placements."""
    cache = {}

    def get(name: str, plan: str, device: str | None):
        key = (name, plan)
        if key not in cache:
            model = _model(MODELS[name])
            extra = {"device": device} if device else {}
            cache[key] = (model, adreno_mlir.compile(model, **PLANS[plan], **extra))
        return cache[key]

    return get


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("name, where", list(_cases()))
def test_max_pool_is_nan_exactly_where_its_window_holds_a_nan(name, where, plan, compiled, request):
    device = request.getfixturevalue("half_device") if plan in HALF_PLANS else None
    spec = MODELS[name]
    model, cm = compiled(name, plan, device)
    x = _feeds(spec, where)
    expected = _expected_nan(spec, x)
    assert expected.any() and not expected.all(), "the placement must make some windows NaN and leave others"
    got = cm.run({"x": x})["y"]
    assert got.shape == expected.shape
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert ref.shape == expected.shape
    missing, extra = expected & ~np.isnan(got), ~expected & np.isnan(got)
    assert not missing.any() and not extra.any(), (
        f"{name} {where} on {plan}: {int(expected.sum())} NaN expected, {int(np.isnan(got).sum())} given; "
        f"missing at {np.argwhere(missing)[:8].tolist()}, extra at {np.argwhere(extra)[:8].tolist()}")
    # Outside the mask no NaN reaches a window: the values are finite and onnxruntime's.
    finite = ~expected
    assert np.isfinite(ref[finite]).all() and np.isfinite(got[finite]).all()
    tol = _tolerance(plan)
    scale = float(np.abs(ref[finite]).max())
    err = float(np.abs(got[finite] - ref[finite]).max())
    assert err <= tol * max(scale, 1e-30), f"{name} {where} on {plan}: error {err:.3e} of {scale:.3e}"


def test_nan_mask_covers_every_nan_onnxruntime_gives():
    """The mask helper is not blind: wherever onnxruntime gives NaN (it keeps a NaN in
    some tap positions), the mask does too, and every window without a NaN is finite in
    onnxruntime."""
    spec = MODELS["maxpool3-s2-pad1"]
    model = _model(spec)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    kept = 0
    for where in ("first", "middle", "last", "border"):
        x = _feeds(spec, where)
        ref = sess.run(None, {"x": x})[0]
        expected = _expected_nan(spec, x)
        assert not (np.isnan(ref) & ~expected).any()
        kept += int(np.isnan(ref).sum())
    assert kept > 0  # the last-tap NaNs onnxruntime keeps
