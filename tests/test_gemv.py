"""GEMV and small-M GEMM (issue 13, item 2): `k_split` work-items share each output's
reduction (lowering/kernels/matmul.py), chosen by select-kernel-config's `Rules.gemm`
on GPU targets for products with few outputs and a long K (a batch-1 classifier).

Numerics against onnxruntime (max|ours - ort| / max|ort| <= 1e-4) on three plans; the
Gemm runs on plain NCHW tensors in every one, and the Adreno target's rules split it.
The split kernel is also forced on every plan through an overrides file (what an
autotuner writes), including K smaller than k_split and both work-group layouts (K
contiguous in B: Gemm transB = 1; columns contiguous: transB = 0, MatMul).
"""

from __future__ import annotations

import json
import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from tests.test_models import scaled_error

TOLERANCE = 1e-4

PLANS = {
    "nchw": {"layout": "nchw"},
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
}
"""`{}` compiles for the default (PoCL CPU) device's profile, whose rules keep k_split 1."""


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def gemm_model(m: int, k: int, n: int, *, trans_a: bool = False, trans_b: bool = True, alpha: float = 1.0,
               beta: float = 1.0, c_shape: tuple[int, ...] | None = "n", activation: str | None = None):
    """x (M x K, or K x M with transA) times a constant weight, plus beta * C (a constant
    of `c_shape`; "n": the usual bias of N), then an optional Relu or Clip(0, 6)."""
    rng = np.random.default_rng(k * 7 + n)
    w = (rng.standard_normal((n, k) if trans_b else (k, n)) / np.sqrt(k)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if c_shape is not None:
        shape = (n,) if c_shape == "n" else c_shape
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), "c"))
        ins.append("c")
    attrs = {"transA": int(trans_a), "transB": int(trans_b), "alpha": alpha, "beta": beta}
    out = "y" if activation is None else "g"
    nodes = [helper.make_node("Gemm", ins, [out], name="fc", **attrs)]
    if activation == "relu":
        nodes.append(helper.make_node("Relu", ["g"], ["y"], name="act"))
    elif activation == "clip":
        lo, hi = numpy_helper.from_array(np.array(0.0, np.float32), "lo"), numpy_helper.from_array(
            np.array(6.0, np.float32), "hi")
        inits += [lo, hi]
        nodes.append(helper.make_node("Clip", ["g", "lo", "hi"], ["y"], name="act"))
    x_shape = [k, m] if trans_a else [m, k]
    return _model(nodes, [_f("x", x_shape)], [_f("y", [m, n])], inits)


def matmul_model(a_shape: tuple[int, ...], b_shape: tuple[int, ...]):
    """x @ W with W constant; the output shape by numpy's matmul broadcasting."""
    rng = np.random.default_rng(sum(a_shape) + sum(b_shape))
    w = (rng.standard_normal(b_shape) / np.sqrt(a_shape[-1])).astype(np.float32)
    out = np.matmul(np.zeros(a_shape, np.float32), w).shape
    return _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], [_f("x", list(a_shape))],
                  [_f("y", list(out))], [numpy_helper.from_array(w, "w")])


SHAPES = {
    # name: (model, split on a GPU target, split on a CPU target: where float4 loads apply)
    "classifier": (lambda: gemm_model(1, 1280, 1000), True, True),
    "k_not_multiple_of_4": (lambda: gemm_model(1, 1283, 200), True, False),
    "m2": (lambda: gemm_model(2, 512, 300), True, True),
    "m3_trans_a": (lambda: gemm_model(3, 516, 100, trans_a=True), True, False),
    "m1_trans_a": (lambda: gemm_model(1, 1280, 120, trans_a=True), True, True),
    "alpha_beta_row_broadcast": (lambda: gemm_model(2, 300, 64, alpha=0.5, beta=2.0, c_shape=(2, 1)), True, True),
    "beta_col_broadcast_trans_b0": (lambda: gemm_model(1, 640, 50, trans_b=False, beta=-1.5, c_shape=(1, 50)),
                                    True, False),
    "relu": (lambda: gemm_model(1, 1024, 96, activation="relu"), True, True),
    "clip": (lambda: gemm_model(2, 384, 70, activation="clip"), True, True),
    "no_bias_small_k": (lambda: gemm_model(1, 64, 40, c_shape=None), False, False),
    "matmul_1xk": (lambda: matmul_model((1, 768), (768, 100)), True, False),
    "matmul_batched_broadcast": (lambda: matmul_model((2, 1, 512), (512, 30)), True, False),
    "matmul_n1": (lambda: matmul_model((1, 512), (512, 1)), True, True),
}


def _feeds(cm, seed=1):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}


def _check(cm, model):
    feeds = _feeds(cm)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for (name, got), expected in zip(cm.run(feeds).items(), ref):
        err = scaled_error(got, expected)
        assert err <= TOLERANCE, f"{name}: {err:.2e} from onnxruntime"


def _with_overrides(path):
    """The default pipeline with an overrides file for select-kernel-config (any target)."""
    return lambda p: re.sub(r"select-kernel-config\{target=(\S+?)([ }])",
                            lambda m: f'select-kernel-config{{target={m[1]} overrides="{path}"{m[2]}', p)


def _split_kernels(source: str) -> list[str]:
    return re.findall(r"__kernel void (\w*ksplit\w*)\(", source)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_onnxruntime(shape, plan):
    make, gpu_split, cpu_split = SHAPES[shape]
    model = make()
    cm = adreno_mlir.compile(model, **PLANS[plan])
    gpu = PLANS[plan].get("target") == "adreno-740"
    assert bool(_split_kernels(cm.source)) == (gpu_split if gpu else cpu_split), cm.source[-3000:]
    _check(cm, model)


FORCED = {
    # name: (model, k_split)
    "k_smaller_than_split": (lambda: gemm_model(1, 40, 30), 64),
    "k_smaller_than_split_trans_b0": (lambda: gemm_model(2, 40, 30, trans_b=False), 64),
    "k_odd_split2": (lambda: gemm_model(3, 77, 9, trans_a=True, activation="relu"), 2),
    "classifier_split256": (lambda: gemm_model(1, 1280, 1000), 256),
    "matmul_split8": (lambda: matmul_model((3, 2, 100), (3, 100, 33)), 8),
}


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", FORCED)
def test_forced_k_split_matches_onnxruntime(case, plan, tmp_path):
    """k_split set through an overrides file: the split kernel on every plan (on the CPU
    profile too), K below k_split (work-items with no share), split 2 (no tree step)."""
    make, split = FORCED[case]
    model = make()
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps({"loc:fc": {"k_split": split}}))
    cm = adreno_mlir.compile(model, keep_ir=True, pipeline=_with_overrides(path), **PLANS[plan])
    assert f"k_split = {split} : i64" in cm.stage_ir["select-kernel-config"]
    assert _split_kernels(cm.source) and "barrier(CLK_LOCAL_MEM_FENCE)" in cm.source
    _check(cm, model)


def test_config_in_ir_and_override_to_one(tmp_path):
    """The classifier on the Adreno profile: k_split = 64 in the config stage's IR, a
    work-group reduction with float4 loads; `{"loc:fc": {"k_split": 1}}` gives back the
    one-work-item-per-output kernel (no barrier, no local array)."""
    model = gemm_model(1, 1280, 1000)
    plan = PLANS["nchw4c-buffers"]
    cm = adreno_mlir.compile(model, keep_ir=True, **plan)
    assert re.search(r"graph\.fused \{kernel_config = \{k_split = 64 : i64, tile_m = 1 : i64, tile_n = 1 : i64, k_unroll = 0 : i64, local_tile = 0 : i64\}\} "
                     r"-> [^{]*\{\n\s*%\S+ = graph\.gemm .*\{trans_b = 1 : i64\}",
                     cm.stage_ir["config"]), cm.stage_ir["config"]  # on the gemm's region
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in cm.source and "__local float partial[64];" in cm.source
    # float4 loads: typed where aligned (lowering/opencl_printer.py VECTOR_ACCESS_MODES), else vload4
    assert ("float4*)" in cm.source or "vload4(" in cm.source) and "get_group_id(0)" in cm.source
    launch = next(op for op in cm.stage_ir["opencl"].splitlines() if "opencl.launch @gemm" in op)
    assert "global [64000, 1] local [64, 1]" in launch, launch

    path = tmp_path / "overrides.json"
    path.write_text(json.dumps({"loc:fc": {"k_split": 1}}))
    one = adreno_mlir.compile(model, keep_ir=True, pipeline=lambda p: p.replace(
        "select-kernel-config{target=adreno-740", f'select-kernel-config{{target=adreno-740 overrides="{path}"'),
        **plan)
    assert "k_split = 1 : i64" in one.stage_ir["select-kernel-config"]
    assert "barrier" not in one.source and "__local" not in one.source and "ksplit" not in one.source
    _check(one, model)


def test_cpu_profile_rules():
    """pocl-cpu: k_split 8 where the float4 loads apply (what gained on PoCL), else 1,
    written into the config either way (the lowering's defaults are the GPU rules,
    which would split both of these)."""
    cm = adreno_mlir.compile(gemm_model(1, 1280, 1000), target="pocl-cpu", keep_ir=True)
    assert "k_split = 8 : i64" in cm.stage_ir["config"] and "__local float partial[8];" in cm.source
    cm = adreno_mlir.compile(gemm_model(1, 1283, 1000), target="pocl-cpu", keep_ir=True)
    assert "k_split = 1 : i64" in cm.stage_ir["config"] and "barrier" not in cm.source


def test_large_outputs_are_not_split():
    """Enough outputs to fill a GPU (M * N >= min-work-items, 16384): one work-item per
    output, as before."""
    cm = adreno_mlir.compile(gemm_model(32, 1280, 1000), target="adreno-740", textures=False, keep_ir=True)
    assert "k_split = 1 : i64" in cm.stage_ir["config"] and "barrier" not in cm.source


@pytest.mark.parametrize("case", ["gemv-split", "gemm-unsplit", "matmul-tiled"])
def test_k_unroll_pragma_on_the_reduction_loop(case, tmp_path):
    """kernel_config k_unroll = N (the gemm family's key; 0, the default, prints no pragma):
    `#pragma unroll N` before the K loop of the split-K, plain and register-tiled kernels,
    a kernel name of its own (_uN), the same numbers."""
    model, override = {
        "gemv-split": (gemm_model(1, 1280, 1000), {"k_unroll": 4}),
        "gemm-unsplit": (gemm_model(1, 40, 20), {"k_split": 1, "k_unroll": 2}),
        "matmul-tiled": (matmul_model((8, 64), (64, 16)), {"k_split": 1, "tile_m": 2, "tile_n": 4, "k_unroll": 8}),
    }[case]
    plan = PLANS["nchw4c-buffers"]
    plain = adreno_mlir.compile(model, **plan)
    assert "#pragma unroll" not in plain.source
    path = tmp_path / "overrides.json"
    node = model.graph.node[0].name
    path.write_text(json.dumps({f"loc:{node}": override}))
    cm = adreno_mlir.compile(model, keep_ir=True, overrides=str(path), **plan)
    n = override["k_unroll"]
    assert f"k_unroll = {n} : i64" in cm.stage_ir["config"]
    assert f"#pragma unroll {n}\n" in cm.source, cm.source
    assert re.search(rf"__kernel void (gemm|matmul)\w*_u{n}\w*\(", cm.source), cm.source
    _check(cm, model)
