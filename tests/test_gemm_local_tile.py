"""The gemm family's `local_tile` (lowering/kernels/matmul.py::_local_tile_body): T x T
output tiles per work-group of (T / tile_n) x (T / tile_m) work-items with A and B staged
in local memory, K slices of `k_tile`, K split over `k_groups` work-groups (their partial
sums added by MatMulKSumSpec), against onnxruntime on PoCL for every T, ragged M/N/K,
batches, operands read transposed in place (attention's keys), a Gemm with a constant
transposed B and a fused epilogue; the default rules (GPUs with a known compute-unit count
only) and the keys' refusals."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.lowering.families.base import DEFAULT_RULES
from adreno_mlir.lowering.families.gemm import GEMM

RNG = np.random.default_rng(4)

CASES = {
    "square": ([64, 64], [64, 64], {}),
    "ragged": ([50, 70], [70, 33], {}),
    "batched_runtime_b": ([2, 3, 37, 20], [2, 3, 20, 45], dict(const_b=False)),
    "gemm_trans_b": ([40, 96], [80, 96], dict(gemm=True, transpose_b=True)),
    "keys_read_transposed": ([1, 4, 40, 64], [1, 4, 50, 64], dict(transpose_b=True, const_b=False)),
    "broadcast_b": ([3, 31, 17], [17, 29], {}),
}


def _model(ashape, bshape, transpose_b=False, const_b=True, gemm=False):
    ins = [helper.make_tensor_value_info("a", TensorProto.FLOAT, ashape)]
    inits = []
    if const_b:
        inits.append(numpy_helper.from_array(RNG.standard_normal(bshape).astype(np.float32), "b"))
    else:
        ins.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, bshape))
    nodes = []
    if gemm:
        nodes.append(helper.make_node("Gemm", ["a", "b"], ["c"], name="mm", transB=int(transpose_b)))
    elif transpose_b:
        perm = list(range(len(bshape) - 2)) + [len(bshape) - 1, len(bshape) - 2]
        nodes += [helper.make_node("Transpose", ["b"], ["bt"], perm=perm),
                  helper.make_node("MatMul", ["a", "bt"], ["c"], name="mm")]
    else:
        nodes.append(helper.make_node("MatMul", ["a", "b"], ["c"], name="mm"))
    nodes.append(helper.make_node("Relu", ["c"], ["y"], name="act"))  # fused into the product's epilogue
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


LOCAL_CONFIGS = {  # name: (override, work-group)
    "t16": ({"local_tile": 16}, (16, 16)),
    "t32": ({"local_tile": 32}, (8, 8)),
    "t64": ({"local_tile": 64}, (16, 8)),
    "t128": ({"local_tile": 128}, (16, 16)),
    "t32_2x8_k16_g2": ({"local_tile": 32, "tile_m": 2, "tile_n": 8, "k_tile": 16, "k_groups": 2}, (4, 16)),
    "t64_8x8_g4": ({"local_tile": 64, "tile_m": 8, "tile_n": 8, "k_groups": 4}, (8, 8)),
    "t16_1x2_g16": ({"local_tile": 16, "tile_m": 1, "tile_n": 2, "k_tile": 16, "k_groups": 16}, (8, 16)),
}


@pytest.mark.parametrize("config", sorted(LOCAL_CONFIGS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_local_tile_matches_onnxruntime(case, config):
    """Every register tile, K slice and K-group split on ragged, batched, transposed and
    broadcast operands (float4 copies where aligned, scalar ones elsewhere), the fused
    Relu applied once (by the partial-sum kernel when K is split over work-groups)."""
    ashape, bshape, kw = CASES[case]
    override, (wx, wy) = LOCAL_CONFIGS[config]
    model = _model(ashape, bshape, **kw)
    feeds = {"a": RNG.standard_normal(ashape).astype(np.float32)}
    if not kw.get("const_b", True):
        feeds["b"] = RNG.standard_normal(bshape).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    cm = adreno_mlir.compile(model, textures=False, layout="nchw", overrides={"loc:act": override})
    assert f"__kernel void matmul_lt{override['local_tile']}_" in cm.source
    assert f"reqd_work_group_size({wx}, {wy}, 1)" in cm.source
    groups = override.get("k_groups", 1)
    assert ("matmul_ksum" in cm.source) == (groups > 1)
    got = cm.run(feeds)["y"]
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-5


@pytest.mark.parametrize(("override", "message"), [
    ({"local_tile": 32, "k_split": 4}, r"local_tile shares K over work-groups \(k_groups\), not inside one"),
    ({"local_tile": 16, "tile_m": 8, "tile_n": 8}, r"work-groups of 4 work-items; they must hold 32 to 1024"),
    ({"local_tile": 16, "tile_m": 1, "tile_n": 16}, r"tile_n"),
    ({"tile_n": 2, "local_tile": 0}, r"tile_n = 2 needs local_tile"),
    ({"k_groups": 4, "local_tile": 0}, r"k_groups splits a local tile's reduction over work-groups: it needs local_tile"),
    ({"local_tile": 32, "k_groups": 3}, r"k_groups"),
])
def test_local_tile_refusals_name_the_keys(override, message):
    model = _model([64, 64], [64, 64])
    with pytest.raises(adreno_mlir.CompileError, match=message):
        adreno_mlir.compile(model, textures=False, layout="nchw", overrides={"loc:act": override})


def test_a_given_local_tile_takes_its_register_tile():
    """`{"local_tile": 64}` alone gets that tile's default register tile and K slices,
    not the 1 x 1 tiles of the kernel it replaces."""
    import dataclasses

    rules = dataclasses.replace(DEFAULT_RULES, compute_units=132)
    cfg = GEMM.complete(_head([1, 50, 3072], [3072, 768]), {"local_tile": 64})
    assert (cfg["tile_m"], cfg["tile_n"], cfg["k_tile"], cfg["k_split"]) == (8, 4, 32, 1)
    assert GEMM.defaults(_head([1, 50, 3072], [3072, 768]), rules, {"local_tile": 128})["tile_n"] == 8


def _head(ashape, bshape):
    from adreno_mlir.dialects import graph
    from adreno_mlir.frontend import import_onnx

    module = import_onnx(_model(ashape, bshape))
    return next(op for op in module.walk() if isinstance(op, graph.MatMulOp))


@pytest.mark.parametrize(("ashape", "bshape", "units", "expected"), [
    ([2048, 2048], [2048, 2048], 132, 128),  # 256 work-groups of 128 x 128
    ([1500, 384], [384, 1536], 132, 64),  # 144 of 128 x 128 (below 1.5 per unit), 576 of 64 x 64
    ([1024, 1024], [1024, 1024], 132, 64),  # 64 of 128 x 128 (too few), 256 of 64 x 64
    ([128, 768], [768, 768], 132, 64),  # 24 of 64 x 64 in up to 8 K groups: 192
    ([64, 768], [768, 768], 132, 32),  # 12 of 64 x 64 in 8 groups: 96; 48 of 32 x 32: 384
    ([1, 1280], [1280, 1000], 132, 0),  # a GEMV: 63 of 16 x 16, split-K instead
    ([16384, 128], [128, 32], 132, 32),  # segformer's stage-1 MLP down: 64 x 64 tiles would be half empty
    ([1, 50, 768], [768, 768], 132, 32),  # ViT-B/32's 50 rows: 12 tiles of 64 x 64 (96 with K groups) too few
    ([2048, 2048], [2048, 2048], 0, 0),  # compute units unknown (the named Adreno profiles)
    ([2048, 2048], [2048, 2048], 6, 0),  # a mobile GPU's few compute units: not measured there
])
def test_default_local_tile_rule(ashape, bshape, units, expected):
    import dataclasses

    rules = dataclasses.replace(DEFAULT_RULES, compute_units=units)
    assert GEMM.defaults(_head(ashape, bshape), rules, {})["local_tile"] == expected
    cpu = dataclasses.replace(rules, gpu=False)
    assert GEMM.defaults(_head(ashape, bshape), cpu, {})["local_tile"] == 0


def test_a_given_local_tile_of_0_keeps_the_other_rules():
    """`{"local_tile": 0}` asks for the schedules without local tiles (split-K on a long
    K), not for the plain one-output-per-work-item kernel."""
    import dataclasses

    rules = dataclasses.replace(DEFAULT_RULES, compute_units=132)
    head = _head([128, 3072], [3072, 768])
    assert GEMM.defaults(head, rules, {})["local_tile"] == 64
    assert GEMM.defaults(head, rules, {"local_tile": 0}) == GEMM.defaults(head, DEFAULT_RULES, {})


def test_no_default_local_tile_where_the_work_group_or_local_memory_does_not_fit():
    import dataclasses

    head = _head([2048, 2048], [2048, 2048])
    rules = dataclasses.replace(DEFAULT_RULES, compute_units=132, max_work_group_size=128)
    assert GEMM.defaults(head, rules, {})["local_tile"] == 64  # 128's 256 work-items do not fit
    rules = dataclasses.replace(DEFAULT_RULES, compute_units=132, max_work_group_size=32)
    assert GEMM.defaults(head, rules, {})["local_tile"] == 0
    small = dataclasses.replace(DEFAULT_RULES, compute_units=132, local_memory_bytes=12 * 1024)
    assert GEMM.defaults(head, small, {})["local_tile"] == 32  # 128's and 64's slices (33, 17 KB) do not fit


@pytest.mark.parametrize(("ashape", "bshape", "tile", "groups"), [
    ([1, 50, 3072], [3072, 768], 32, 8),  # vit_b_32's MLP down projection: 48 tiles of 32 x 32
    ([128, 768], [768, 768], 64, 8),  # distilbert's projections: 24 tiles (H200: 0.049 -> 0.021 ms)
    ([1500, 384], [384, 384], 64, 4),  # whisper's: 144 tiles in 4 groups reach 4 per compute unit
    ([1500, 384], [384, 1536], 64, 1),  # 576 tiles: enough without
    ([128, 96], [96, 768], 16, 1),  # K = 96: no K groups (two 32-deep slices each), 384 tiles of 16 x 16
])
def test_few_tiles_share_their_reduction_over_k_groups(ashape, bshape, tile, groups):
    import dataclasses

    rules = dataclasses.replace(DEFAULT_RULES, compute_units=132)
    cfg = GEMM.defaults(_head(ashape, bshape), rules, {})
    assert (cfg["local_tile"], cfg["k_groups"], cfg["k_split"]) == (tile, groups, 1)
