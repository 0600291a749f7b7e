"""Transposes folded into `graph.matmul` (`lhs_perm` / `rhs_perm`): the kernel reads the
stored operand through permuted strides instead of a transpose kernel copying it first.

Small ONNX graphs with Transpose -> MatMul on either or both sides (3-D and 4-D,
attention's key transpose and head splits, a bias and residual epilogue) against
onnxruntime on every plan and under kernel_config overrides of tile_m / tile_n /
k_split; the folded programs hold no transpose kernel and name the strided matmul
(`_tA`, `_tB`, `_tAB`).

Tolerance: max |ours - ort| / max |ort| <= 1e-5 (fp32).
"""

from __future__ import annotations

import json
import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

RNG = np.random.default_rng(7)
PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "nchw4c": dict(layout="nchw4c", textures=False),
    "textures": dict(textures=True),
}


def _const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def _model(nodes, inputs, inits, out_shape):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    g = helper.make_graph(nodes, "g", ins, [out], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, plan="nchw", overrides=None, tmp_path=None, tolerance=1e-5, **kw):
    options = {**PLANS[plan], **kw}
    if overrides is not None:
        path = tmp_path / "overrides.json"
        path.write_text(json.dumps(overrides))
        options["pipeline"] = lambda p: p.replace("select-kernel-config{", f'select-kernel-config{{overrides="{path}" ')
    cm = adreno_mlir.compile(model, **options)
    feeds = {n: RNG.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    got = cm.run(feeds)["y"]
    # The reference runs unoptimised: onnxruntime 1.32's own Transpose -> MatMul fusion
    # computes transpose(x) @ vector wrongly (the vector_rhs case).
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert got.shape == ref.shape
    err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
    assert err <= tolerance, f"scaled error {err:.2e}"
    return cm


def _transposes(source: str) -> int:
    return source.count("__kernel void transpose")


def _epilogue(nodes, inits, out_shape, mm="mm"):
    """A bias along N, then a residual add of an output-shaped constant: y."""
    inits += [_const("bias", RNG.standard_normal(out_shape[-1])), _const("res", RNG.standard_normal(out_shape))]
    nodes += [helper.make_node("Add", [mm, "bias"], ["biased"]), helper.make_node("Add", ["biased", "res"], ["y"])]


# Each case: inputs {name: shape}, the transposes ((input, perm, output)), the MatMul's
# operands, constant operands, the output shape, the kernel's name and layout suffix, and whether
# B's rows can be float4s (tile_n = 4: columns contiguous, N % 4 == 0, aligned rows).
CASES = {
    # attention scores: q [B, H, L, D] @ transpose(k, (0, 1, 3, 2)): B K-contiguous
    "key_4d": (dict(q=[1, 4, 10, 16], k=[1, 4, 10, 16]), [("k", (0, 1, 3, 2), "kt")], ("q", "kt"), {},
               [1, 4, 10, 10], "matmul", "tB", False),
    # head split [L, H, D] -> [H, L, D] on the left, weights with a batch on the right
    "head_split_lhs_3d": (dict(x=[10, 4, 16]), [("x", (1, 0, 2), "xt")], ("xt", "w"), dict(w=[4, 16, 12]),
                          [4, 10, 12], "matmul", "tA", True),
    # both sides: [L, H, D] -> [H, L, D] @ [L, H, D] -> [H, D, L]
    "both_3d": (dict(x=[9, 3, 8], z=[9, 3, 8]), [("x", (1, 0, 2), "xt"), ("z", (1, 2, 0), "zt")], ("xt", "zt"),
                {}, [3, 9, 9], "matmul", "tAB", False),
    # probabilities @ head-split values: B's columns contiguous, its rows strided
    "values_4d": (dict(p=[1, 2, 7, 7], v=[1, 7, 2, 8]), [("v", (0, 2, 1, 3), "vt")], ("p", "vt"), {},
                  [1, 2, 7, 8], "matmul", "tB", True),
    # a transposed A whose batch and rows still nest: read as 10 rows of row stride 1
    "lhs_rows_collapse": (dict(x=[16, 2, 5]), [("x", (1, 2, 0), "xt")], ("xt", "w"), dict(w=[16, 12]),
                          [2, 5, 12], "matmul", "tA", True),
    # a transposed A against a shared B, whose batch cannot become rows
    "lhs_4d_shared_b": (dict(x=[1, 6, 3, 8]), [("x", (0, 2, 1, 3), "xt")], ("xt", "w"), dict(w=[8, 12]),
                        [1, 3, 6, 12], "matmul", "tA", True),
    # 2-D, A transposed (K stride M): scalar A loads even with tile_n = 4
    "lhs_2d": (dict(x=[12, 5]), [("x", (1, 0), "xt")], ("xt", "w"), dict(w=[12, 8]), [5, 8], "matmul", "tA", True),
    # a 1-D right operand: transposed A times a vector
    "vector_rhs": (dict(x=[12, 5]), [("x", (1, 0), "xt")], ("xt", "w"), dict(w=[12]), [5], "matmul", "tA", False),
}


def _case_model(name, epilogue=True):
    inputs, transposes, (lhs, rhs), consts, out_shape, *_ = CASES[name]
    nodes = [helper.make_node("Transpose", [src], [dst], perm=list(perm)) for src, perm, dst in transposes]
    inits = [_const(n, RNG.standard_normal(s)) for n, s in consts.items()]
    nodes.append(helper.make_node("MatMul", [lhs, rhs], ["mm" if epilogue else "y"], name="mm"))
    if epilogue:
        _epilogue(nodes, inits, out_shape)
    return _model(nodes, inputs, inits, out_shape)


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_folded_matmul_matches_onnxruntime(name, plan):
    cm = _check(_case_model(name), plan)
    assert _transposes(cm.source) == 0, "every transpose here feeds only the matmul: none may be copied"
    assert _kernel(cm.source, CASES[name][5], CASES[name][6])


SCHEDULES = [(1, 1, 1), (4, 1, 1), (8, 1, 1), (2, 1, 1), (1, 1, 2), (1, 1, 8)]
"""(tile_m, tile_n, k_split) every case takes; (.., 4, 1) too where B's rows are float4s."""
FLOAT4_SCHEDULES = [(1, 4, 1), (4, 4, 1), (8, 4, 1)]


@pytest.mark.parametrize("name,schedule", [
    (n, t) for n in sorted(CASES) for t in SCHEDULES + (FLOAT4_SCHEDULES if CASES[n][7] else [])])
def test_folded_matmul_schedules(name, schedule, tmp_path):
    """Register tiles (ragged M for every tile_m > 1 here), float4 B rows where B's
    columns are contiguous, and split-K on strided operands."""
    tm, tn, ks = schedule
    cm = _check(_case_model(name), overrides={"loc:mm": {"tile_m": tm, "tile_n": tn, "k_split": ks}},
                tmp_path=tmp_path)
    assert _transposes(cm.source) == 0
    if ks > 1:
        assert "matmul_ksplit_t" in cm.source
    elif (tm, tn) != (1, 1):
        assert f"matmul_{tm}x{tn}_t" in cm.source


@pytest.mark.parametrize("perm", [(0, 1, 3, 2), (0, 3, 1, 2)])
def test_tile_n_needs_contiguous_columns(perm, tmp_path):
    """B read transposed (column stride K, N % 4 == 0): float4 rows would read the wrong
    elements, so tile_n = 4 is an error naming the op, and the default CPU schedule picks
    tile_n = 1."""
    k_shape = [1, 2, 8, 16] if perm == (0, 1, 3, 2) else [1, 16, 8, 2]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=list(perm)),
             helper.make_node("MatMul", ["q", "kt"], ["y"], name="mm")]
    model = _model(nodes, dict(q=[1, 2, 8, 16], k=k_shape), [], [1, 2, 8, 8])
    with pytest.raises(adreno_mlir.CompileError, match=r'at loc\("mm"\).*tile_n = 4 reads B\'s rows as float4s'):
        _check(model, overrides={"loc:mm": {"tile_n": 4}}, tmp_path=tmp_path)
    cm = _check(model)
    assert "matmul_4x1_tB" in cm.source


def _kernel(source: str, name: str, layout: str) -> bool:
    """Whether `source` has a `name` kernel (any register tile) reading `layout` (tA/tB/tAB)."""
    return re.search(rf"__kernel void {name}(_panel)?(_\d+x\d+)?_{layout}[_(]", source) is not None


def test_attention_block():
    """PyTorch's exported attention on [L, H, D] heads: q and k scaled by a scalar, the key
    transposed after a unit reshape, softmax, then probabilities @ values. Every transpose
    reaches a matmul (through the reshape and the scaling) and folds."""
    L, H, D = 10, 4, 16
    nodes = []
    for t in "qkv":
        nodes += [helper.make_node("Transpose", [t], [f"{t}h"], perm=[1, 0, 2]),
                  helper.make_node("Reshape", [f"{t}h", "shape4"], [f"{t}4"])]
    nodes += [
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("Mul", ["q4", "scale"], ["qs"]),
        helper.make_node("Mul", ["kt", "scale"], ["ks"]),
        helper.make_node("MatMul", ["qs", "ks"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v4"], ["mm"]),
    ]
    inits = [numpy_helper.from_array(np.asarray([1, H, L, D], np.int64), "shape4"),
             _const("scale", [D ** -0.25])]
    _epilogue(nodes, inits, [1, H, L, D])
    model = _model(nodes, dict(q=[L, H, D], k=[L, H, D], v=[L, H, D]), inits, [1, H, L, D])
    for plan in sorted(PLANS):
        cm = _check(model, plan, target="adreno-740")
        assert _transposes(cm.source) == 0
        # fuse-attention (GPU profiles) takes the perms over: one attention kernel, no matmul
        assert "__kernel void attention" in cm.source and "__kernel void matmul" not in cm.source
        # without it (CPU profiles), the two matmuls read the transposes through their perms
        unfused = adreno_mlir.compile(model, **PLANS[plan], target="pocl-cpu")
        assert _transposes(unfused.source) == 0
        assert _kernel(unfused.source, "matmul", "tAB")  # scores: q's head split, the composed key transposes
        assert _kernel(unfused.source, "matmul", "tB")  # probabilities @ head-split values


def test_transpose_with_two_users_is_kept():
    """A transpose that something else reads too is materialised anyway: the matmul reads
    that copy and keeps no perm."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("ReduceSum", ["kt"], ["ksum"], keepdims=1),
             helper.make_node("Add", ["s", "ksum"], ["y"])]
    model = _model(nodes, dict(q=[2, 5, 8], k=[2, 5, 8]), [], [2, 5, 5])
    cm = _check(model)
    assert _transposes(cm.source) == 1
    assert "matmul_t" not in cm.source


def test_fold_removes_transpose_kernels():
    """The same model without graph-canonicalize keeps its transpose kernels."""
    model = _case_model("both_3d")
    unfolded = adreno_mlir.compile(model, layout="nchw", textures=False,
                                   pipeline=lambda p: p.replace("graph-canonicalize,", ""))
    folded = adreno_mlir.compile(model, layout="nchw", textures=False)
    assert _transposes(unfolded.source) == 2
    assert _transposes(folded.source) == 0
