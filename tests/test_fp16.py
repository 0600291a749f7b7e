"""precision="fp16": half arithmetic in every NCHW4c kernel (issue 11), on a device with
cl_khr_fp16 (Intel's CPU OpenCL runtime from PyPI, registered by tests/conftest.py).

What fp16 means here (docs/robustness.md): activations stored in half (images or
buffers), weights and biases uploaded in half, every NCHW4c kernel computes in half4;
reductions keep their long sums in f32 (a convolution sums each input channel block in
half and the blocks in f32, global means sum in f32). Each kernel's arithmetic is its
`kernel_config` key `compute` ("f16"), visible in the IR and changeable per op.

Tolerance: 5e-2 max|ours - ort| / max|ort| per output, the fp16-acc32 tolerance of
tests/test_texture_models.py (half has 11 significant bits; deep networks compound the
rounding). Measured on the ten shared models: 2e-4 to 1.7e-2 (docs/robustness.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import adreno_mlir
from adreno_mlir.cli_run import compare_outputs
from tests.conftest import MODEL_NAMES, slow_unless
from tests.test_models import scaled_error
from tests.test_no_wrong_answers import _cli, _f, _model, _nan_model, _overflowing_model

TOLERANCE = 5e-2

FP16 = {"precision": "fp16", "textures": True, "target": "adreno-740"}
"""The plan under test (textures; the Adreno profile, whose rules use split-K and Winograd)."""


def _ort(model, feeds):
    return ort.InferenceSession(model if isinstance(model, str) else model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _feeds(cm, seed=2):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}


def _half_kernels(source: str) -> tuple[list[str], list[str]]:
    """(kernels whose body uses half4, kernels that do not), by name."""
    half, other = [], []
    for m in re.finditer(r"__kernel void (\w+)\((.*?)\n}\n", source, re.S):
        # half4 values, or pixels converted to half4 (not vstore_half4: f32 math, half storage)
        (half if re.search(r"\bhalf4\b|convert_half4|_imageh", m.group(2)) else other).append(m.group(1))
    return half, other


@pytest.mark.parametrize("name", slow_unless(MODEL_NAMES, fast={"mobilenet_v3_small"}))
def test_fp16_matches_onnxruntime(name, model_path, half_device):
    path = str(model_path(name))
    cm = adreno_mlir.compile(path, device=half_device, **FP16)
    assert "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" in cm.source and "read_imageh" in cm.source
    half, other = _half_kernels(cm.source)
    # Every NCHW4c kernel computes in half; only pack (f32 NCHW input) and the NCHW
    # classifier heads (plain f32 tensors) do not.
    assert len(half) >= 10 and all(k.startswith("pack_nchw4c") or "4c" not in k for k in other), other
    feeds = _feeds(cm)
    for (out, got), ref in zip(cm.run(feeds).items(), _ort(path, feeds)):
        assert np.isfinite(got).all()
        err = scaled_error(got, ref)
        print(f"{name}:{out} fp16 error {err:.2e}")
        assert err <= TOLERANCE, f"{name}:{out} fp16 error {err:.2e}"


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_fp16_buffer_plan_matches_onnxruntime(name, model_path, half_device):
    """Half buffers: `vload4`/`vstore4` of half, no images."""
    path = str(model_path(name))
    cm = adreno_mlir.compile(path, device=half_device, precision="fp16", textures=False, target="adreno-740")
    assert "image2d_t" not in cm.source and "__global const half* input" in cm.source
    feeds = _feeds(cm)
    for got, ref in zip(cm.run(feeds).values(), _ort(path, feeds)):
        assert scaled_error(got, ref) <= TOLERANCE


def test_compute_is_a_kernel_config_key(tiny_path, half_device, tmp_path):
    """The arithmetic is per kernel in the IR: select-kernel-config{compute=f16} writes
    `compute = "f16"`, and an override file can keep one layer in f32 (its kernel then
    reads and writes the half tensors around it in float4)."""
    cm = adreno_mlir.compile(str(tiny_path), device=half_device, keep_ir=True, **FP16)
    assert "select-kernel-config{target=adreno-740 compute=f16}" in cm.pipeline
    config_ir = cm.stage_ir["config"]
    assert config_ir.count('compute = "f16"') >= 10
    feeds = _feeds(cm)
    ref = _ort(str(tiny_path), feeds)[0]
    base = list(cm.run(feeds).values())[0]
    assert scaled_error(base, ref) <= TOLERANCE

    overrides = tmp_path / "tuning.json"
    overrides.write_text(json.dumps({"loc:/conv_19": {"compute": "f32"}}))
    kept = adreno_mlir.compile(str(tiny_path), device=half_device, keep_ir=True, **FP16,
                               pipeline=lambda p: p.replace("compute=f16", f'compute=f16 overrides="{overrides}"'))
    assert 'compute = "f32"' in kept.stage_ir["select-kernel-config"]  # a custom pipeline: stages named by pass
    _, other = _half_kernels(kept.source)
    assert any(k.startswith("conv3x3_4c") for k in other), other  # that conv computes in float4
    got = list(kept.run(feeds).values())[0]
    assert scaled_error(got, ref) <= TOLERANCE

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"loc:/conv_19": {"compute": "f64"}}))
    with pytest.raises(adreno_mlir.CompileError, match='kernel_config compute must be "f32" or "f16", got \'f64\''):
        adreno_mlir.compile(str(tiny_path), device=half_device, **FP16,
                            pipeline=lambda p: p.replace("compute=f16", f'compute=f16 overrides="{bad}"'))


def test_fp16_is_refused_without_cl_khr_fp16(tiny_path):
    """PoCL's CPU device has no cl_khr_fp16: half arithmetic is refused before any work,
    naming the device and the alternative; a profile without fp16 is refused too."""
    with pytest.raises(adreno_mlir.CompileError,
                       match=r"needs the cl_khr_fp16 extension; device .* does not have it.*'fp16-acc32'"):
        adreno_mlir.compile(str(tiny_path), device="pocl", **FP16)
    with pytest.raises(adreno_mlir.CompileError, match="target profile 'pocl-cpu' does not support"):
        adreno_mlir.compile(str(tiny_path), device="pocl", precision="fp16", target="pocl-cpu")
    proc = _cli("run", tiny_path, "--precision", "fp16", "--target", "adreno-740", "--device", "pocl")
    assert proc.returncode == 1 and "cl_khr_fp16" in proc.stderr and "Traceback" not in proc.stderr


def test_fp16_artifact_refused_on_a_device_without_half(tiny_path, half_device, tmp_path):
    """A saved fp16 model runs where it was compiled and is refused clearly elsewhere."""
    cm = adreno_mlir.compile(str(tiny_path), device=half_device, **FP16)
    art = tmp_path / "tiny16.adreno"
    cm.save(art)
    feeds = _feeds(cm)
    loaded = adreno_mlir.load(art, device=half_device)
    np.testing.assert_array_equal(list(loaded.run(feeds).values())[0], list(cm.run(feeds).values())[0])
    with pytest.raises(adreno_mlir.CompileError, match="cl_khr_fp16"):
        adreno_mlir.load(art, device="pocl")


@pytest.mark.parametrize("runtime", ["pyopencl", "native"])
def test_fp16_keeps_nan(runtime, half_device):
    """Relu/Clip/HardSigmoid/LeakyRelu propagate NaN in half as in f32 (arith.maximumf as
    `adreno_fmax_half4`)."""
    m = _nan_model()
    x = np.random.default_rng(1).standard_normal((1, 3, 10, 10)).astype(np.float32)
    x[0, 2, 5, 5] = np.nan
    ref = dict(zip(["y", "h", "l"], _ort(m, {"x": x})))
    cm = adreno_mlir.compile(m, device=half_device, runtime=runtime, **FP16)
    assert "adreno_fmax_half4" in cm.source
    out = cm.run({"x": x})
    for name in ("y", "h", "l"):
        assert np.array_equal(np.isnan(out[name]), np.isnan(ref[name])), f"NaN positions of {name} differ"
        ok, line = compare_outputs(out[name], ref[name], name, TOLERANCE)
        assert ok, line


def test_fp16_range_guard(half_device):
    """The range guard protects half arithmetic as it protects half storage."""
    m = _overflowing_model()
    with pytest.raises(adreno_mlir.CompileError, match=r"fp16 storage would overflow .*tensor 'c' \(node 'conv1'\)"):
        adreno_mlir.compile(m, device=half_device, **FP16)


def test_weight_beyond_half_range_is_an_error(half_device):
    """With the guard off, a weight half cannot hold is still an error naming it, never
    an inf in the kernel's weights."""
    w = np.ones((4, 3, 3, 3), np.float32)
    w[1, 2, 0, 0] = 1e6
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="big_conv", pads=[1, 1, 1, 1])],
               [_f("x", [1, 3, 8, 8])], [_f("y", [1, 4, 8, 8])], [numpy_helper.from_array(w, "w")])
    with pytest.raises(adreno_mlir.CompileError, match=r"weight '.*' reaches 1e\+06, beyond fp16's largest value"):
        adreno_mlir.compile(m, device=half_device, calibration=False, **FP16)


def test_global_mean_sums_in_f32(half_device):
    """A 128x128 mean of values near 5 sums to 81920, beyond half's 65504: the mean
    kernel accumulates in f32, so the answer is finite and exact to half precision."""
    m = _model([helper.make_node("GlobalAveragePool", ["x"], ["y"])],
               [_f("x", [1, 4, 128, 128])], [_f("y", [1, 4, 1, 1])])
    x = (5 + 0.1 * np.random.default_rng(0).standard_normal((1, 4, 128, 128))).astype(np.float32)
    got = adreno_mlir.compile(m, device=half_device, **FP16).run({"x": x})["y"]
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    assert np.isfinite(got).all() and scaled_error(got, ref) <= 1e-3


def test_long_reduction_sums_blocks_in_f32(half_device):
    """A 1x1 convolution over 1024 channels: half products, f32 sums across channel blocks
    (pure half accumulation gave 4.4e-2 on LRASPP's 960-channel head)."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((8, 1024, 1, 1)) / 32).astype(np.float32)
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"])], [_f("x", [1, 1024, 6, 6])], [_f("y", [1, 8, 6, 6])],
               [numpy_helper.from_array(w, "w")])
    x = (np.abs(rng.standard_normal((1, 1024, 6, 6))) + 1).astype(np.float32)  # same-signed: sums grow
    cm = adreno_mlir.compile(m, device=half_device, **FP16)
    assert "convert_float4" in cm.source  # the half block sums widened into f32 accumulators
    got = cm.run({"x": x})["y"]
    assert scaled_error(got, _ort(m, {"x": x})[0]) <= 5e-3


def test_fp16_input_tensor_types_stay_float(half_device):
    """Inputs and outputs are float32 whatever the precision (half lives inside)."""
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_f("x", [1, 8, 4, 4])], [_f("y", [1, 8, 4, 4])])
    cm = adreno_mlir.compile(m, device=half_device, **FP16)
    x = np.linspace(-3, 3, 128, dtype=np.float32).reshape(1, 8, 4, 4)
    y = cm.run({"x": x})["y"]
    assert y.dtype == np.float32 and np.array_equal(y, np.maximum(x, 0).astype(np.float16).astype(np.float32))
    assert TensorProto.FLOAT == m.graph.output[0].type.tensor_type.elem_type


def test_fp16_artifact_in_the_c_runner(tiny_path, half_device, tmp_path):
    """adreno-run (runtime/c) runs a saved fp16 model on the Intel device, giving what
    Python gives, and refuses it on PoCL with the reason instead of compiler errors."""
    import os
    import subprocess

    from adreno_mlir.runtime import native
    from adreno_mlir.runtime.device import write_intel_icd
    from tests.conftest import NATIVE_BUILD_ERROR

    if NATIVE_BUILD_ERROR is not None:
        pytest.skip(f"the native runtime could not be built here: {NATIVE_BUILD_ERROR}")
    runner = Path(os.environ["ADRENO_MLIR_NATIVE_LIB"]).parent / "adreno-run"
    icd = tmp_path / "icd"
    native.write_pocl_icd(icd)
    write_intel_icd(icd)
    env = native.runner_env({**os.environ, "OCL_ICD_VENDORS": str(icd)})
    cm = adreno_mlir.compile(str(tiny_path), device=half_device, **FP16)
    art = cm.save(tmp_path / "tiny16.adreno")
    feeds = _feeds(cm)
    np.save(tmp_path / "x.npy", feeds["input"])

    def run(device):
        return subprocess.run([str(runner), str(art), "--input", str(tmp_path / "x.npy"), "--output",
                               str(tmp_path / "y.npy"), "--device", device], env=env, capture_output=True, text=True,
                              timeout=600, check=False)

    ok = run("intel")
    assert ok.returncode == 0, ok.stderr
    expected = list(cm.run(feeds).values())[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy").reshape(expected.shape), expected, rtol=1e-6, atol=1e-6)
    refused = run("portable")
    assert refused.returncode != 0 and "computes in half" in refused.stderr and "cl_khr_fp16" in refused.stderr
    assert "error:" in refused.stderr and "Compilation" not in refused.stderr


def test_cli_compare_uses_the_fp16_tolerance(tiny_path, half_device):
    """`adreno-mlir run --precision fp16 --compare onnxruntime` checks against the fp16
    tolerance by default (it failed against fp32's 1e-4 with an error of 3.9e-4)."""
    proc = _cli("run", tiny_path, "--device", half_device, "--precision", "fp16", "--target", "adreno-740",
                "--compare", "onnxruntime")
    assert proc.returncode == 0 and "OK: within tolerance 0.05" in proc.stdout, proc.stderr
    strict = _cli("run", tiny_path, "--device", half_device, "--precision", "fp16", "--target", "adreno-740",
                  "--compare", "onnxruntime", "--tolerance", "1e-6")
    assert strict.returncode == 1 and "outputs differ from onnxruntime (tolerance 1e-06)" in strict.stderr
