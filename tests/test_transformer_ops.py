"""The transformer building blocks of issue 12 against onnxruntime on every plan:
LayerNormalization (any axis, with and without bias, its statistics outputs), Gather
with constant indices (evenly spaced: a slice; arbitrary: the index-table kernel),
Softmax and LayerNorm as work-group reductions (`reduce_items` overrides, the GPU
schedule, run on PoCL), and register-tiled MatMul / Gemm (`tile_m`, `tile_n`) with
ragged edges, broadcast batches and fused epilogues.

Tolerance: max |ours - ort| / max |ort| <= 1e-5 (fp32).
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

RNG = np.random.default_rng(12)
PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "nchw4c": dict(layout="nchw4c", textures=False),
    "textures": dict(textures=True),
}


def _const(name, arr, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(arr, dtype), name)


def _model(nodes, inits, x_shape, out_shape, opset=17, extra_outputs=()):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)]
    outs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in extra_outputs]
    g = helper.make_graph(nodes, "g", [x], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, plan="nchw", tolerance=1e-5, overrides=None, tmp_path=None, x=None, **kw):
    options = {**PLANS[plan], **kw}
    if overrides is not None:
        path = tmp_path / "overrides.json"
        path.write_text(json.dumps(overrides))
        options["pipeline"] = lambda p: p.replace("select-kernel-config{", f'select-kernel-config{{overrides="{path}" ')
    cm = adreno_mlir.compile(model, **options)
    if x is None:
        x = RNG.standard_normal(cm.input_shapes["x"]).astype(np.float32)
    ours = cm.run({"x": x})
    refs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for (name, got), ref in zip(ours.items(), refs):
        assert got.shape == ref.shape, name
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
        assert err <= tolerance, f"{name}: scaled error {err:.2e}"
    return cm


# --------------------------------------------------------------------------- LayerNormalization


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("axis,bias", [(-1, True), (2, False), (1, True)])
def test_layer_norm(plan, axis, bias):
    shape = [2, 6, 5, 12]
    trailing = shape[axis % 4:]
    inits = [_const("s", RNG.standard_normal(trailing)), _const("b", RNG.standard_normal(trailing))]
    ins = ["x", "s", "b"] if bias else ["x", "s"]
    node = helper.make_node("LayerNormalization", ins, ["y"], axis=axis, epsilon=1e-3)
    # A large offset: a one-pass E[x^2] - E[x]^2 would cancel (errors near 1e-1); x itself
    # holds only ~40 * 2**-24 absolute precision, 5e-6 of the row's std, hence 1e-4 here.
    x = (RNG.standard_normal(shape) * 0.5 + 40.0).astype(np.float32)
    _check(_model([node], inits if bias else inits[:1], shape, shape), plan, x=x, tolerance=1e-4)


def test_layer_norm_statistics_outputs():
    shape = [3, 10, 16]
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean", "inv_std"], axis=-1)
    _check(_model([node], [_const("s", RNG.standard_normal(16))], shape, shape,
                  extra_outputs=("mean", "inv_std")))


@pytest.mark.parametrize("items", [16, 64])
def test_layer_norm_work_group(items, tmp_path):
    """The GPU schedule (a work-group per row, `work_group_allsum`) on PoCL; 200 is not a
    multiple of the group, so some work-items have one element fewer."""
    shape = [1, 7, 200]
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", axis=-1)
    model = _model([node], [_const("s", RNG.standard_normal(200)), _const("b", RNG.standard_normal(200))],
                   shape, shape)
    cm = _check(model, overrides={"loc:ln": {"reduce_items": items}}, tmp_path=tmp_path)
    assert f"layer_norm_wg{items}" in cm.source


# --------------------------------------------------------------------------- Gather


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("indices,axis", [(1, 0), ([0, 2, 4], 1), ([3, -1, 0, 3], 2), ([[1, 0], [2, 2]], 3)])
def test_gather_constant_indices(plan, indices, axis):
    shape = [3, 6, 5, 4]
    idx = np.asarray(indices, np.int64)
    out = shape[:axis] + list(idx.shape) + shape[axis + 1:]
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    cm = _check(_model([node], [_const("i", idx, np.int64)], shape, out), plan)
    evenly_spaced = idx.ndim <= 1 and (idx.size == 1 or len(set(np.diff(idx.reshape(-1)))) == 1
                                       and np.diff(idx.reshape(-1))[0] > 0)
    assert ("gather" in cm.source) != evenly_spaced


def test_gather_index_out_of_range_is_an_error():
    node = helper.make_node("Gather", ["x", "i"], ["y"], name="g0", axis=1)
    model = _model([node], [_const("i", [0, 6], np.int64)], [1, 6], [1, 2])
    with pytest.raises(adreno_mlir.CompileError, match=r"node 'g0' \(Gather\).*outside \[-6, 6\)"):
        adreno_mlir.compile(model)


# --------------------------------------------------------------------------- Softmax


@pytest.mark.parametrize("items", [16, 32])
@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_work_group(items, axis, tmp_path):
    shape = [2, 50, 3, 50] if axis == 1 else [2, 3, 7, 49]
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=axis)
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    x.reshape(-1)[5] = 80.0  # exp overflows without the max subtraction
    cm = _check(_model([node], [], shape, shape, opset=13), overrides={"loc:sm": {"reduce_items": items}},
                tmp_path=tmp_path, x=x)
    assert f"softmax_wg{items}" in cm.source


# --------------------------------------------------------------------------- MatMul / Gemm tiles


def _matmul_model(a_shape, b_shape, out_shape, epilogue=False):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm" if epilogue else "y"], name="mm")]
    inits = [_const("w", RNG.standard_normal(b_shape))]
    if epilogue:  # bias, then a residual add of the input-shaped tensor r
        inits += [_const("bias", RNG.standard_normal(out_shape[-1])), _const("r", RNG.standard_normal(out_shape))]
        nodes += [helper.make_node("Add", ["mm", "bias"], ["t"]), helper.make_node("Add", ["t", "r"], ["y"])]
    return _model(nodes, inits, a_shape, out_shape)


MATMUL_SHAPES = [
    ([13, 24], [24, 20], [13, 20]),            # ragged M for every tile, K % 4 == 0
    ([2, 3, 9, 10], [2, 3, 10, 8], [2, 3, 9, 8]),  # batched B, K % 4 != 0
    ([11, 1, 16], [16, 12], [11, 1, 12]),      # PyTorch MHA's [L, 1, E]: batch as rows
    ([2, 1, 7, 8], [3, 8, 4], [2, 3, 7, 4]),   # broadcast batch on both sides
    ([5, 9], [9, 7], [5, 7]),                  # N % 4 != 0: tile_n 1 only
    # the CPU panel schedule (tile_n 8 / 16: float8s of B, a work-group per column panel)
    ([13, 24], [24, 32], [13, 32]),            # ragged M, two 16-column panels
    ([2, 3, 9, 10], [2, 3, 10, 16], [2, 3, 9, 16]),  # batched B, K % 4 != 0
    ([2, 1, 7, 8], [3, 8, 24], [2, 3, 7, 24]),  # broadcast batch on both sides, N = 3 x 8
]
TILES = [(1, 1), (4, 4), (8, 4), (2, 1), (4, 8), (4, 16), (1, 16), (8, 16)]


@pytest.mark.parametrize("tiles,a_shape,b_shape,out_shape", [
    (t, *shapes) for shapes in MATMUL_SHAPES for t in TILES if shapes[2][-1] % t[1] == 0])
def test_matmul_tiles(tiles, a_shape, b_shape, out_shape, tmp_path):
    model = _matmul_model(a_shape, b_shape, out_shape, epilogue=True)
    cm = _check(model, overrides={"loc:mm": {"tile_m": tiles[0], "tile_n": tiles[1]}}, tmp_path=tmp_path)
    if tiles[1] >= 8:
        assert f"matmul_panel_{tiles[0]}x{tiles[1]}" in cm.source
    elif tiles != (1, 1):
        assert f"matmul_{tiles[0]}x{tiles[1]}" in cm.source


def test_matmul_tile_n_needs_n_multiple_of_4(tmp_path):
    model = _matmul_model([8, 8], [8, 6], [8, 6])
    with pytest.raises(adreno_mlir.CompileError, match=r"tile_n must be 1, or 4, 8 or 16 dividing N \(N = 6\), got 4"):
        _check(model, overrides={"loc:mm": {"tile_n": 4}}, tmp_path=tmp_path)


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_gemm_trans_b_runs_tiled(plan):
    """A Linear layer (Gemm, transB = 1, constant B, alpha 0.5, beta * C): B is transposed
    at compile time and the default CPU schedule tiles it."""
    node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)
    model = _model([node], [_const("w", RNG.standard_normal((12, 20))), _const("c", RNG.standard_normal(12))],
                   [9, 20], [9, 12])
    cm = _check(model, plan)
    assert "matmul_4x4" in cm.source


def test_matmul_default_schedule_tiles():
    """CPUs: the panel schedule, 4 rows by 16 columns (N = 96) a work-item."""
    model = _matmul_model([1, 50, 64], [64, 96], [1, 50, 96], epilogue=True)
    cm = _check(model)
    assert "matmul_panel_4x16_add_add" in cm.source
