"""The gemm family's `local_tile` (lowering/kernels/matmul.py::_local_tile_body): T x T
output tiles per 16 x 16 work-group with A and B staged in local memory, against
onnxruntime on PoCL for every T, ragged M/N/K, batches, operands read transposed in place
(attention's keys), a Gemm with a constant transposed B and a fused epilogue; the default
rule (GPUs with a known compute-unit count only) and the key's refusals."""

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


@pytest.mark.parametrize("tile", [16, 32, 64, 128])
@pytest.mark.parametrize("case", sorted(CASES))
def test_local_tile_matches_onnxruntime(case, tile):
    ashape, bshape, kw = CASES[case]
    model = _model(ashape, bshape, **kw)
    feeds = {"a": RNG.standard_normal(ashape).astype(np.float32)}
    if not kw.get("const_b", True):
        feeds["b"] = RNG.standard_normal(bshape).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    cm = adreno_mlir.compile(model, textures=False, layout="nchw",
                             overrides={"loc:act": {"local_tile": tile}, "loc:mm": {"local_tile": tile}})
    assert f"__kernel void matmul_lt{tile}" in cm.source
    assert "reqd_work_group_size(16, 16, 1)" in cm.source
    got = cm.run(feeds)["y"]
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-5


def test_local_tile_excludes_the_other_tiles():
    model = _model([64, 64], [64, 64])
    with pytest.raises(adreno_mlir.CompileError, match=r"local_tile sets the work-group and register tiles itself"):
        adreno_mlir.compile(model, textures=False, layout="nchw",
                            overrides={"loc:act": {"local_tile": 32, "tile_m": 4}})


def _head(ashape, bshape):
    from adreno_mlir.dialects import graph
    from adreno_mlir.frontend import import_onnx

    module = import_onnx(_model(ashape, bshape))
    return next(op for op in module.walk() if isinstance(op, graph.MatMulOp))


@pytest.mark.parametrize(("ashape", "bshape", "units", "expected"), [
    ([2048, 2048], [2048, 2048], 132, 128),  # 256 work-groups of 128 x 128
    ([1500, 384], [384, 1536], 132, 64),  # 144 of 128 x 128 (below 1.5 per unit), 576 of 64 x 64
    ([1024, 1024], [1024, 1024], 132, 64),  # 64 of 128 x 128 (too few), 256 of 64 x 64
    ([128, 768], [768, 768], 132, 32),  # 24 of 64 x 64 (too few), 96 of 32 x 32
    ([64, 768], [768, 768], 132, 16),  # 48 of 32 x 32, 192 of 16 x 16
    ([1, 1280], [1280, 1000], 132, 0),  # a GEMV: 63 of 16 x 16, split-K instead
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
    assert GEMM.defaults(head, rules, {})["local_tile"] == 32
    assert GEMM.defaults(head, rules, {"local_tile": 0}) == GEMM.defaults(head, DEFAULT_RULES, {})


def test_no_default_local_tile_where_the_work_group_or_local_memory_does_not_fit():
    import dataclasses

    head = _head([2048, 2048], [2048, 2048])
    rules = dataclasses.replace(DEFAULT_RULES, compute_units=132, max_work_group_size=128)
    assert GEMM.defaults(head, rules, {})["local_tile"] == 0
    small = dataclasses.replace(DEFAULT_RULES, compute_units=132, local_memory_bytes=12 * 1024)
    assert GEMM.defaults(head, small, {})["local_tile"] == 64  # 128's slices (16.5 KB) do not fit


def test_few_tiles_over_a_long_k_take_split_k():
    """vit_b_32's MLP down projection, 50 x 3072 x 768: 16 x 16 tiles would be the rule's
    pick, but over K >= 1024 split-K is faster (H200: 0.68 vs 1.52 ms)."""
    import dataclasses

    rules = dataclasses.replace(DEFAULT_RULES, compute_units=132)
    cfg = GEMM.defaults(_head([1, 50, 3072], [3072, 768]), rules, {})
    assert cfg["local_tile"] == 0 and cfg["k_split"] == 8
