"""Quantized weights (issue 29, item 3): com.microsoft MatMulNBits imported as one
`graph.matmul_nbits` whose packed blocks stay integers on the device (i32 words, dequantized in
registers by lowering/kernels/qmatmul.py), against onnxruntime's CPU kernel: 2-, 4- and 8-bit
values, blocks of 16, 32 and 128, without zero points, with uint8-packed and float ones, a
ragged last block, a bias, a fused epilogue; the GEMV's split over work-items (the GPU
default, run here on PoCL) and its other schedules (several columns per work-group, a
block's words in one vload, the unroll pragma: every bit width and block size, ragged K and
N, once under Oclgrind); the artifact (format version 4: i32 weights) through the C
runtime; and the RMS normalizations of onnxruntime (SimplifiedLayerNormalization,
SkipSimplifiedLayerNormalization). Tolerance: 1e-5 of max |ort| (fp32, both accumulate in
float32 from the same dequantized values)."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from tests.test_native_runtime import cache, native_dir, run_c, run_env  # noqa: F401 - fixtures
from tests.test_oclgrind import RUN_ARTIFACT, oclgrind_env, run_under_oclgrind  # noqa: F401 - fixture

REL_TOL = 1e-5


def quantize(w: np.ndarray, bits: int, block: int, zero_points: str | None):
    """W [N, K] as MatMulNBits' initializers (B, scales[, zero_points]) in onnxruntime's layout:
    B [N, blocks, block * bits / 8] uint8, values lowest bits first; uint8 zero points packed the
    same way per column (rows padded to whole bytes), float ones one per block."""
    n, k = w.shape
    blocks = -(-k // block)
    padded = np.zeros((n, blocks * block), np.float32)
    padded[:, :k] = w
    wb = padded.reshape(n, blocks, block)
    top = (1 << bits) - 1
    if zero_points is None:
        zp = np.full((n, blocks), 2 ** (bits - 1))
        scale = np.abs(wb).max(-1) / (2 ** (bits - 1) - 0.5) + 1e-8
    else:
        lo, hi = wb.min(-1), wb.max(-1)
        scale = (hi - lo) / top + 1e-8
        zp = np.clip(np.round(-lo / scale), 0, top)
    q = np.clip(np.round(wb / scale[..., None] + zp[..., None]), 0, top).astype(np.uint8)

    def pack(values: np.ndarray) -> np.ndarray:  # [..., m * per] -> [..., m] bytes
        per = 8 // bits
        v = values.reshape(*values.shape[:-1], -1, per)
        out = np.zeros(v.shape[:-1], np.uint8)
        for i in range(per):
            out |= (v[..., i] << (bits * i)).astype(np.uint8)
        return out

    inits = [numpy_helper.from_array(pack(q), "B"), numpy_helper.from_array(scale.astype(np.float32).reshape(-1), "scales")]
    if zero_points == "u8":
        per = 8 // bits
        row = np.zeros((n, -(-blocks // per) * per), np.uint8)
        row[:, :blocks] = zp
        inits.append(numpy_helper.from_array(pack(row).reshape(-1), "zp"))
    elif zero_points == "f32":
        inits.append(numpy_helper.from_array(zp.astype(np.float32).reshape(-1), "zp"))
    return inits


def nbits_model(rows: tuple[int, ...], k: int, n: int, bits: int, block: int, zero_points: str | None = None,
                bias: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    inits = quantize(rng.standard_normal((n, k)).astype(np.float32), bits, block, zero_points)
    ins = ["A", "B", "scales", "zp" if zero_points else ""]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias"))
        ins += ["", "bias"]
    nodes = [helper.make_node("MatMulNBits", ins, ["y0"], domain="com.microsoft", name="mm", K=k, N=n, bits=bits,
                              block_size=block),
             helper.make_node("Relu", ["y0"], ["y"], name="act")]  # fused into the kernel's epilogue
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [*rows, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def _ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _err(got, ref) -> float:
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / np.abs(ref).max())


CASES = {  # rows, K, N, bits, block, zero points, bias
    "q4_b32_decode": ((1, 1), 512, 64, 4, 32, None, False),
    "q4_b32_rows": ((2, 5), 128, 40, 4, 32, None, False),
    "q4_b32_u8zp_ragged_k": ((3,), 100, 24, 4, 32, "u8", False),
    "q4_b128_f32zp": ((3,), 256, 16, 4, 128, "f32", False),
    "q8_b128_u8zp": ((1,), 256, 16, 8, 128, "u8", False),
    "q8_b32_bias": ((9,), 64, 12, 8, 32, None, True),
    "q2_b16_u8zp": ((7,), 96, 20, 2, 16, "u8", False),
}
PLANS = {
    "nchw": dict(textures=False, layout="nchw"),
    "textures": dict(textures=True),
    "gpu_schedules": dict(textures=True, target="nvidia-h200"),  # the GEMV split over work-items
    "fp16_acc32": dict(textures=True, precision="fp16-acc32", calibration=False),
}
TOLERANCE = {"fp16_acc32": 2e-2}


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_matmul_nbits_matches_onnxruntime(case, plan):
    rows, k, n, bits, block, zp, bias = CASES[case]
    model = nbits_model(rows, k, n, bits, block, zp, bias)
    a = np.random.default_rng(1).standard_normal((*rows, k)).astype(np.float32)
    (ref,) = _ort(model, {"A": a})
    cm = adreno_mlir.compile(model, **PLANS[plan])
    assert f"qmatmul_q{bits}b{block}" in cm.source and "__global const int* packed" in cm.source
    assert _err(cm.run({"A": a})["y"], ref) <= TOLERANCE.get(plan, REL_TOL)


def test_the_weights_stay_packed():
    """The module holds the packed words (K * bits / 32 per column), no float copy of W."""
    from adreno_mlir.dialects import graph
    from adreno_mlir.frontend import import_onnx

    module = import_onnx(nbits_model((1,), 512, 64, 4, 32))
    (op,) = [o for o in module.walk() if isinstance(o, graph.MatMulNBitsOp)]
    assert graph.shape_of(op.packed) == (64, 16, 4) and op.packed.type.element_type == graph.i32
    assert "graph.matmul_nbits" in str(module) and "bits = 4" in str(module)
    floats = [o for o in module.walk() if isinstance(o, graph.ConstantOp) and o.result.type.element_type == graph.f32]
    assert all(np.prod(graph.shape_of(c.result)) < 512 * 64 for c in floats)


def test_gpu_default_splits_the_decode_gemv():
    from adreno_mlir.context import make_context
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.passes.select_kernel_config import config_of, is_kernel
    from adreno_mlir.pipeline import run_stages
    from adreno_mlir.plan import make_plan

    def config(rows, target):
        module = import_onnx(nbits_model(rows, 512, 64, 4, 32))
        run_stages(make_context(), module, make_plan(target=target).stages(until="config"))
        return [config_of(op) for op in module.walk() if is_kernel(op)][0]

    # every GPU: 64 columns are few, so 16 work-items a column (a block each), 8 columns a work-group
    gemv = {"k_split": 16, "tile_m": 1, "cols_per_group": 8, "block_loads": 1, "k_unroll": 0, "interleave": 0}
    assert config((1,), "nvidia-h200") == gemv
    assert config((1,), "adreno-740") == gemv
    assert config((1,), "pocl-cpu") == {"k_split": 1, "tile_m": 1, "cols_per_group": 1, "block_loads": 0,
                                        "k_unroll": 0, "interleave": 0}
    assert config((64,), "nvidia-h200")["k_split"] == 16  # 4096 outputs: still below min-work-items
    assert config((256,), "nvidia-h200") == {"k_split": 1, "tile_m": 4, "cols_per_group": 1, "block_loads": 0,
                                             "k_unroll": 0, "interleave": 0}  # prefill rows


@pytest.mark.parametrize(("k", "n", "bits", "expected"), [
    (1024, 5632, 4, (4, 8, 2, 0)),  # the H200's fastest on K = 1024 .. 4096 (bench/qmatmul.py --sweep wide)
    (1024, 3072, 4, (4, 8, 2, 0)),
    (2816, 1024, 4, (32, 8, 2, 0)),  # 1024 columns: 32 items each (32768 in all)
    (64, 40, 4, (2, 8, 0, 0)),  # two blocks: two items a column, one block each
    (1024, 32000, 4, (1, 32, 4, 1)),  # the lm_head (N >= 16 K): interleaved W, a column an item
    (1024, 5632, 8, (4, 8, 2, 0)),
])
def test_gpu_decode_gemv_defaults(k, n, bits, expected):
    """The decode GEMV's default on the H200 (132 compute units; QGemm._gemv): (k_split,
    cols_per_group, k_unroll, interleave), block loads on unless interleaved."""
    from adreno_mlir.lowering.families.qgemm import QGEMM
    from adreno_mlir.lowering.families.base import Rules
    from adreno_mlir.dialects import graph
    from adreno_mlir.frontend import import_onnx

    module = import_onnx(nbits_model((1,), k, n, bits, 32))
    (op,) = [o for o in module.walk() if isinstance(o, graph.MatMulNBitsOp)]
    rules = Rules(gpu=True, conv_co_block=8, conv_x_block=4, vectorize=True, packed_co_blocks=1,
                  min_work_items=16384, split_k_items=0, work_group=(), compute_units=132)
    cfg = QGEMM.defaults(op, rules, {})
    assert (cfg["k_split"], cfg["cols_per_group"], cfg["k_unroll"], cfg.get("interleave", 0)) == expected
    assert cfg["block_loads"] == 1 - expected[3]
    # an override of k_split keeps it and fits the columns to it
    assert QGEMM.defaults(op, rules, {"k_split": 128})["cols_per_group"] == 2  # 256 work-items at most


SCHEDULES = {  # rows, K, N, bits, block, zero points, bias, (k_split, cols_per_group, block_loads, k_unroll, tile_m)
    "q4_b32_c16_ragged_n": ((1,), 512, 40, 4, 32, None, False, (4, 16, 1, 4, 1)),
    "q4_b32_u8zp_ragged_k": ((1,), 100, 24, 4, 32, "u8", False, (2, 16, 1, 2, 1)),
    "q4_b16_f32zp_vload2": ((1,), 200, 30, 4, 16, "f32", False, (8, 4, 1, 2, 1)),  # 13 blocks over 8 items
    "q4_b128_u8zp_vload16": ((1,), 300, 20, 4, 128, "u8", False, (2, 8, 1, 2, 1)),
    "q4_b32_words_c8": ((1,), 256, 36, 4, 32, "u8", False, (4, 8, 0, 2, 1)),  # word loads, several columns
    "q4_b32_bias_s32_c8": ((1,), 1024, 50, 4, 32, None, True, (32, 8, 1, 0, 1)),  # 256 work-items
    "q4_b32_two_rows": ((2,), 256, 28, 4, 32, "f32", False, (4, 4, 1, 2, 1)),
    "q4_b32_no_split_c8_rows": ((5,), 128, 21, 4, 32, None, False, (1, 8, 1, 4, 2)),  # ragged M and N
    "q8_b128_two_vload16": ((1,), 256, 17, 8, 128, None, False, (2, 4, 1, 0, 1)),
    "q8_b16_u8zp_unroll8": ((1,), 80, 9, 8, 16, "u8", False, (4, 2, 1, 8, 1)),
    "q8_b32_u8zp_scalar_a": ((1,), 94, 13, 8, 32, "u8", False, (2, 8, 1, 2, 1)),  # K % 4 != 0: float loads of A
    "q2_b16_one_word": ((1,), 96, 20, 2, 16, "u8", False, (2, 8, 1, 2, 1)),
    "q2_b32_vload2": ((1,), 160, 11, 2, 32, None, False, (4, 4, 1, 2, 1)),
    "q2_b128_f32zp": ((1,), 300, 10, 2, 128, "f32", False, (2, 2, 1, 2, 1)),
    # interleave: W's words repacked [blocks, words, N] (scales and zero points [blocks, N])
    "q4_b32_u8zp_interleaved": ((1,), 100, 24, 4, 32, "u8", False, (1, 1, 0, 0, 1, 1)),
    "q4_b32_f32zp_interleaved_rows": ((6,), 256, 19, 4, 32, "f32", True, (1, 1, 0, 0, 4, 1)),
    "q8_b16_interleaved_split_c4": ((1,), 200, 30, 8, 16, None, False, (4, 4, 0, 2, 1, 1)),
}


def _schedule(cfg: tuple[int, ...]) -> dict[str, int]:
    return dict(zip(("k_split", "cols_per_group", "block_loads", "k_unroll", "tile_m", "interleave"), cfg))


@pytest.mark.parametrize("case", sorted(SCHEDULES))
def test_gemv_schedules_match_onnxruntime(case):
    """Each qgemm schedule given as an override (the GPU target's rules, run on PoCL) against
    onnxruntime: columns past N in the last work-group, blocks that do not divide among the
    split's items, ragged K, block words in one vload (2, 4, 8, 16 and 2 x 16 words)."""
    rows, k, n, bits, block, zp, bias, cfg = SCHEDULES[case]
    model = nbits_model(rows, k, n, bits, block, zp, bias)
    a = np.random.default_rng(1).standard_normal((*rows, k)).astype(np.float32)
    (ref,) = _ort(model, {"A": a})
    cfg = _schedule(cfg)
    cm = adreno_mlir.compile(model, textures=False, layout="nchw", target="nvidia-h200", overrides={"loc:act": cfg})
    words = bits * block // 32
    name = (f"qmatmul_q{bits}b{block}" + ("_zp" if zp else "") + ("_il" if cfg.get("interleave") else "")
            + ("_ksplit" if cfg["k_split"] > 1 else "")
            + (f"_c{cfg['cols_per_group']}" if cfg["cols_per_group"] > 1 else "")
            + ("_vload" if cfg["block_loads"] and words > 1 else "") + (f"_u{cfg['k_unroll']}" if cfg["k_unroll"] else ""))
    assert name in cm.source, cm.source[:2000]
    if cfg["block_loads"] and words > 1:
        w = min(words, 16)  # the block's words in one load: typed where provably aligned, else vloadN
        assert (f"int{w} words = *((__global const int{w}*)(packed" in cm.source
                or f"int{w} words = vload{w}(0, packed" in cm.source), cm.source
    assert _err(cm.run({"A": a})["y"], ref) <= REL_TOL


def test_gemv_schedules_refuse_oversized_work_groups():
    with pytest.raises(adreno_mlir.CompileError, match="k_split x cols_per_group = 2048 work-items per work-group"):
        adreno_mlir.compile(nbits_model((1,), 8192, 64, 4, 32), target="nvidia-h200",
                            overrides={"loc:act": {"k_split": 256, "cols_per_group": 8}})


@pytest.mark.parametrize("case", ["q4_b32_u8zp_ragged_k", "q8_b128_two_vload16"])
def test_gemv_schedules_under_oclgrind(case, oclgrind_env, tmp_path):  # noqa: F811
    """The several-column GEMV under Oclgrind (every access checked, races between work-items
    too): the last work-group's columns past N, a ragged last block, the local-memory sums of
    several columns sharing one array, a block's words read as two int16."""
    rows, k, n, bits, block, zp, bias, cfg = SCHEDULES[case]
    model = nbits_model(rows, k, n, bits, block, zp, bias)
    cm = adreno_mlir.compile(model, textures=False, layout="nchw", target="nvidia-h200",
                             overrides={"loc:act": _schedule(cfg)})
    art = cm.save(tmp_path / "q.adreno")
    a = np.random.default_rng(1).standard_normal((*rows, k)).astype(np.float32)
    np.savez(tmp_path / "feeds.npz", A=a)
    _, reports = run_under_oclgrind(oclgrind_env, RUN_ARTIFACT, str(art), str(tmp_path / "feeds.npz"),
                                    str(tmp_path / "out.npz"))
    assert not reports, "\n\n".join(reports)
    (ref,) = _ort(model, {"A": a})
    assert _err(np.load(tmp_path / "out.npz")["y"], ref) <= REL_TOL


def test_analyze_counts_the_product_and_the_packed_bytes(tmp_path):
    """analyze: 2*M*N*K FLOPs (plus the fused Relu), and the bytes of the packed words (K * bits / 8 per column), the
    scales and A, not of a float W."""
    from adreno_mlir.analyze import analyze_model

    rows, k, n = 4, 512, 64
    (cost,) = analyze_model(nbits_model((rows,), k, n, 4, 32)).costs
    assert cost.flops == 2 * rows * n * k + rows * n  # the product and the fused Relu
    packed, scales, a, out = n * k // 2, n * (k // 32) * 4, rows * k * 4, rows * n * 4
    assert packed + scales + a + out <= cost.global_bytes < n * k * 4


def test_split_and_row_tiles_exclude_each_other():
    with pytest.raises(adreno_mlir.CompileError, match="k_split > 1 computes one row per work-item: tile_m must be 1"):
        adreno_mlir.compile(nbits_model((4,), 64, 8, 4, 32), overrides={"loc:act": {"k_split": 4, "tile_m": 4}})


@pytest.mark.parametrize(("edit", "message"), [
    (lambda node: node.attribute[2].__setattr__("i", 3), r"bits = 3 is not supported"),
    (lambda node: node.attribute[3].__setattr__("i", 24), r"block_size = 24 must be a power of two >= 16"),
])
def test_bad_matmul_nbits_attributes_name_the_node(edit, message):
    model = nbits_model((1,), 64, 8, 4, 32)
    node = model.graph.node[0]
    assert [a.name for a in node.attribute] == ["K", "N", "bits", "block_size"]
    edit(node)
    with pytest.raises(adreno_mlir.CompileError, match=r"node 'mm' \(MatMulNBits\): " + message):
        adreno_mlir.compile(model)


def test_act_order_g_idx_is_refused():
    model = nbits_model((1,), 64, 8, 4, 32)
    model.graph.initializer.append(numpy_helper.from_array(np.arange(64, dtype=np.int32)[::-1].copy() // 32, "g_idx"))
    node = model.graph.node[0]
    node.input[:] = ["A", "B", "scales", "", "g_idx"]
    with pytest.raises(adreno_mlir.CompileError, match="g_idx reorders the blocks"):
        adreno_mlir.compile(model)


def test_unsupported_contrib_ops_are_listed_with_their_domain():
    from onnx import helper as h

    g = h.make_graph([h.make_node("FusedMatMul", ["a", "a"], ["y"], domain="com.microsoft", name="fm")], "g",
                     [h.make_tensor_value_info("a", TensorProto.FLOAT, [4, 4])],
                     [h.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])
    with pytest.raises(adreno_mlir.CompileError, match=r"com\.microsoft\.FusedMatMul \(1 node\): fm") as e:
        adreno_mlir.compile(model)
    assert "MatMulNBits" in str(e.value)  # the supported contrib operators are named


def test_matmul_nbits_through_the_c_runtime(native_dir, run_env, cache, tmp_path):  # noqa: F811
    model = nbits_model((1, 3), 256, 48, 4, 32, "u8", bias=True)
    path = tmp_path / "q.adreno"
    adreno_mlir.compile(model, cache=cache, runtime="pyopencl").save(path)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == 4
    assert [w["dtype"] for w in manifest["weights"]["entries"]].count("i32") == 1
    a = np.random.default_rng(2).standard_normal((1, 3, 256)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    run_c(native_dir / "adreno-run", path, run_env, "--input", f"A={tmp_path / 'a.npy'}", "--output",
          tmp_path / "y.npy", "--repeat", "1", "--warmup", "0")
    (ref,) = _ort(model, {"A": a})
    assert _err(np.load(tmp_path / "y.npy").reshape(ref.shape), ref) <= REL_TOL


def test_rms_normalizations_of_onnxruntime():
    """SimplifiedLayerNormalization (default domain) and com.microsoft
    SkipSimplifiedLayerNormalization, both outputs of the latter (the normalized sum and the
    sum) read by the model, as onnxruntime-genai's decoders chain them."""
    rng = np.random.default_rng(5)
    d = 48
    inits = [numpy_helper.from_array(rng.standard_normal(d).astype(np.float32), n) for n in ("g1", "g2")]
    nodes = [helper.make_node("SimplifiedLayerNormalization", ["x", "g1"], ["n1"], epsilon=1e-6, axis=-1,
                              stash_type=1, name="norm1"),
             helper.make_node("SkipSimplifiedLayerNormalization", ["n1", "skip", "g2"], ["n2", "", "", "s"],
                              domain="com.microsoft", epsilon=1e-6, name="norm2")]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 7, d]) for n in ("x", "skip")]
    g = helper.make_graph(nodes, "g", vi, [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                            for n in ("n2", "s")], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    feeds = {n: rng.standard_normal((2, 7, d)).astype(np.float32) for n in ("x", "skip")}
    refs = _ort(model, feeds)
    for plan in ({"textures": False, "layout": "nchw"}, {"textures": True}):
        got = adreno_mlir.compile(model, **plan).run(feeds)
        for (name, v), ref in zip(got.items(), refs):
            assert _err(v, ref) <= REL_TOL, name

