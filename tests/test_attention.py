"""Fused attention (fuse-attention + graph.attention's kernel) against onnxruntime on
every plan: q/k/v with K transposed by a Transpose, a scale Mul after the product or on
q before it, Div scales, an additive bias or mask (a row masked to -inf but for one
key), 3-D [H, L, D] operands, broadcast batches, L not a power of two and M != L, and
`reduce_items` overrides (1: a serial row per work-item; 16, 64: more work-items than
keys or columns, which must idle through the barriers).

Tolerance: max |ours - ort| / max |ort| <= 1e-5 (fp32).
"""

from __future__ import annotations


import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import CompileError

RNG = np.random.default_rng(7)
# fuse-attention fuses for GPU target profiles only (on PoCL the tiled matmuls win): the
# plans compile for the Adreno 740 profile and run on the default device.
PLANS = {
    "nchw": dict(layout="nchw", textures=False, target="adreno-740"),
    "nchw4c": dict(layout="nchw4c", textures=False, target="adreno-740"),
    "textures": dict(textures=True, target="adreno-740"),
}


def _attention_model(q_shape, k_shape, v_shape, scale=0.25, scale_at="after", bias=None, softmax_axis=-1):
    """y = softmax(scale * q @ transpose(k) + bias) @ v, k transposed by a Transpose node.
    `scale_at`: "after" (Mul of the scores), "div" (Div of the scores by 1/scale), "q"
    (Mul of q before the product) or None."""
    rank = len(k_shape)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=perm)]
    inits = []
    q = "q"
    if scale_at == "q":
        nodes.append(helper.make_node("Mul", ["q", "c"], ["qs"]))
        q = "qs"
    nodes.append(helper.make_node("MatMul", [q, "kt"], ["s0"], name="mm1"))
    s = "s0"
    if scale_at in ("after", "q", "div"):
        c = scale if scale_at != "div" else 1.0 / scale
        inits.append(numpy_helper.from_array(np.array([c], np.float32), "c"))
    if scale_at in ("after", "div"):
        nodes.append(helper.make_node("Mul" if scale_at == "after" else "Div", [s, "c"], ["s1"]))
        s = "s1"
    if bias is not None:
        inits.append(numpy_helper.from_array(np.asarray(bias, np.float32), "bias"))
        nodes.append(helper.make_node("Add", [s, "bias"], ["s2"]))
        s = "s2"
    nodes.append(helper.make_node("Softmax", [s], ["p"], axis=softmax_axis))
    nodes.append(helper.make_node("MatMul", ["p", "v"], ["y"], name="mm2"))
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh)
           for n, sh in (("q", q_shape), ("k", k_shape), ("v", v_shape))]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "attention", ins, [out], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, plan="nchw", items=None, tolerance=1e-5, config=None):
    """`items`: the row kernel with that many work-items a row; `config`: any
    kernel_config of the attention (an override of node mm2)."""
    options = dict(PLANS[plan])
    if items is not None:
        config = {"reduce_items": items, "tile": 0}
    if config is not None:
        options["overrides"] = {"loc:mm2": config}
    cm = adreno_mlir.compile(model, keep_ir=True, **options)
    feeds = {n: (RNG.standard_normal(s) * 2).astype(np.float32) for n, s in cm.input_shapes.items()}
    (got,) = cm.run(feeds).values()
    (ref,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    assert got.shape == ref.shape
    assert np.isfinite(ref).all()
    err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
    assert err <= tolerance, f"scaled error {err:.2e}"
    return cm


def _mask(shape, masked_row):
    """A causal-style mask: 0 or -inf, with row `masked_row` -inf everywhere but one key."""
    m = np.where(RNG.random(shape) < 0.3, -np.inf, 0.0).astype(np.float32)
    m[..., :, 0] = 0.0  # every row keeps a key
    m[..., masked_row, :] = -np.inf
    m[..., masked_row, 3] = 0.0
    return m


CASES = {
    "4d": ([1, 4, 10, 16], [1, 4, 10, 16], [1, 4, 10, 16], dict()),
    "4d_no_scale": ([1, 4, 10, 16], [1, 4, 10, 16], [1, 4, 10, 16], dict(scale_at=None)),
    "4d_div": ([1, 4, 10, 16], [1, 4, 10, 16], [1, 4, 10, 16], dict(scale_at="div")),
    "4d_scaled_q": ([1, 4, 10, 16], [1, 4, 10, 16], [1, 4, 10, 16], dict(scale_at="q")),
    "4d_bias": ([1, 4, 10, 16], [1, 4, 10, 16], [1, 4, 10, 16],
                dict(bias=RNG.standard_normal([1, 4, 10, 10]))),
    "4d_mask": ([1, 4, 10, 16], [1, 4, 10, 16], [1, 4, 10, 16], dict(bias=_mask([1, 1, 10, 10], 6))),
    "3d": ([4, 10, 16], [4, 10, 16], [4, 10, 16], dict()),
    "3d_bias_rows": ([4, 10, 16], [4, 10, 16], [4, 10, 16], dict(bias=RNG.standard_normal([10]))),
    "cross": ([2, 7, 16], [2, 37, 16], [2, 37, 24], dict(bias=_mask([7, 37], 2))),
    "broadcast_batch": ([2, 3, 5, 8], [3, 11, 8], [3, 11, 5], dict(scale_at="q")),
}


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_attention_matches_onnxruntime(case, plan):
    q, k, v, kw = CASES[case]
    cm = _check(_attention_model(q, k, v, **kw), plan)
    assert "attention" in cm.source
    assert "softmax" not in cm.source and "matmul" not in cm.source


@pytest.mark.parametrize("items", [1, 16, 64])
@pytest.mark.parametrize("case", ["4d_mask", "cross", "broadcast_batch"])
def test_attention_reduce_items(case, items):
    q, k, v, kw = CASES[case]
    cm = _check(_attention_model(q, k, v, **kw), "nchw", items=items)
    assert ("attention_bias" if "bias" in kw else "attention") + (f"_wg{items}" if items > 1 else "") in cm.source


def test_softmax_off_the_last_axis_is_not_fused():
    model = _attention_model([4, 10, 10], [4, 10, 10], [4, 10, 16], softmax_axis=1)
    cm = _check(model, "nchw")
    assert "attention" not in cm.source and "softmax" in cm.source


# (tile, key_split, kv_tile) of the tiled kernel: one work-item a row, shares of 2-8 keys,
# tiles smaller than the keys (several tiles, a ragged last one), tiles larger than the
# keys, work-groups wider than the rows (2 rows, 8 shares), more shares than keys.
TILED = [(4, 1, 4), (8, 4, 16), (2, 8, 8), (16, 2, 32), (32, 4, 4), (1, 16, 16)]


@pytest.mark.parametrize("tiled", TILED, ids=lambda c: "t{}_s{}_kv{}".format(*c))
@pytest.mark.parametrize("case", ["4d_mask", "cross", "broadcast_batch", "3d_bias_rows"])
def test_attention_tiled_kernel(case, tiled):
    """The tiled kernel (AttentionTiledSpec) for each (tile, key_split, kv_tile): masks
    with -inf, keys not a multiple of the tile, M != L, broadcast batches."""
    q, k, v, kw = CASES[case]
    tile, split, kv_tile = tiled
    cm = _check(_attention_model(q, k, v, **kw), "nchw",
                config={"tile": tile, "key_split": split, "kv_tile": kv_tile})
    assert f"_t{tile}_s{split}_kv{kv_tile}" in cm.source


def test_attention_defaults_row_kernel_and_tiled_keys_completed():
    """A GPU profile's default is the row kernel (the tiled one is not yet timed on a GPU);
    a `tile` given gets the tiled kernel's other keys from its defaults (the Adreno
    profiles give no compute units: key_split 4 for 40 keys, kv_tile 32)."""
    model = _attention_model([1, 4, 40, 16], [1, 4, 40, 16], [1, 4, 40, 16])
    cm = _check(model, "nchw")
    assert "reduce_items = 16 : i64, tile = 0 : i64" in cm.stage_ir["config"]
    assert "attention_wg16" in cm.source
    cm = _check(model, "nchw", config={"tile": 8})
    assert "tile = 8 : i64, key_split = 4 : i64, kv_tile = 32 : i64" in cm.stage_ir["config"]
    assert "attention_t8_s4_kv32" in cm.source


def test_more_keys_than_the_row_kernel_holds():
    """Fused (max-keys=0: any length), 4100 keys: the default is the tiled kernel (no row of
    scores in local memory), which matches onnxruntime; the row kernel is refused, naming
    the tiled one."""
    model = _attention_model([1, 2, 1], [1, 4100, 1], [1, 4100, 1])
    fuse_all = lambda p: p.replace("fuse-attention{", "fuse-attention{max-keys=0 ")  # noqa: E731
    options = dict(PLANS["nchw"], pipeline=fuse_all)
    cm = adreno_mlir.compile(model, **options)
    assert "attention_t" in cm.source
    rng = np.random.default_rng(0)  # its own: the shared RNG's state depends on the tests run before
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in cm.input_shapes.items()}
    (got,) = cm.run(feeds).values()
    (ref,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
    with pytest.raises(CompileError, match=r"mm2.*4100 scores.*tiled kernel"):
        adreno_mlir.compile(model, overrides={"loc:mm2": {"reduce_items": 16, "tile": 0}}, **options)


def test_tiled_kernel_config_errors_name_the_key():
    model = _attention_model([1, 4, 40, 16], [1, 4, 40, 16], [1, 4, 40, 16])
    for config, message in [({"tile": 32, "key_split": 16}, "exceed 256 work-items"),
                            ({"tile": 4, "key_split": 8, "kv_tile": 4}, "kv_tile >= key_split"),
                            ({"tile": 4, "key_split": 1, "kv_tile": 32}, "exceed 16"),
                            ({"tile": 4, "key_split": 4, "kv_tile": 64}, "local memory")]:
        if message == "local memory":  # 64 keys of K and V rows of 64: 8192 floats
            model = _attention_model([1, 2, 40, 64], [1, 2, 40, 64], [1, 2, 40, 64])
        with pytest.raises(CompileError, match=f"mm2.*{message}"):
            _check(model, "nchw", config=config)


def test_long_attention_rows_stay_unfused():
    """Over more than max-keys (128) keys the chain stays two products and a softmax
    (whisper's 1500 keys: the fused kernel was 15.8 of 18.5 ms on the H200), and matches."""
    model = _attention_model([1, 2, 200, 8], [1, 2, 200, 8], [1, 2, 200, 8])
    cm = adreno_mlir.compile(model, layout="nchw", textures=False, target="adreno-740")
    assert "__kernel void attention" not in cm.source and "softmax" in cm.source
    short = adreno_mlir.compile(_attention_model([1, 2, 64, 8], [1, 2, 64, 8], [1, 2, 64, 8]), layout="nchw",
                                textures=False, target="adreno-740")
    assert "__kernel void attention" in short.source
    _check(model, "nchw")


def test_cpu_targets_keep_the_unfused_chain():
    """On a CPU profile (PoCL's, the default here) fuse-attention leaves the two matmuls
    and the softmax: the fused kernel was 5% slower there; `enabled=false` does the same
    on a GPU profile."""
    model = _attention_model([1, 4, 10, 16], [1, 4, 10, 16], [1, 4, 10, 16])
    cpu = adreno_mlir.compile(model, layout="nchw", textures=False, target="pocl-cpu")
    assert "fuse-attention{target=pocl-cpu}" in cpu.pipeline
    assert "attention" not in cpu.source and "softmax" in cpu.source
    off = adreno_mlir.compile(model, layout="nchw", textures=False, target="adreno-740",
                              pipeline=lambda p: p.replace("fuse-attention{", "fuse-attention{enabled=false "))
    assert "attention" not in off.source and "softmax" in off.source
