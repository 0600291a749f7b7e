"""Tests of the roofline model (adreno_mlir/analyze.py) and `adreno-mlir analyze`."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from adreno_mlir.analyze import (
    LAUNCH_OVERHEAD_US,
    KernelCost,
    analyze_model,
    estimate_config_us,
    kernel_ops,
    occupancy_target,
    work_items,
)
from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError
from adreno_mlir.target import get_profile


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _init(name: str, shape, seed: int = 0) -> onnx.TensorProto:
    arr = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(arr, name)


def _conv_model(n=1, ci=8, co=16, h=16, w=16, k=3, stride=1, pad=1, groups=1) -> onnx.ModelProto:
    conv = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="the_conv", kernel_shape=[k, k],
                            strides=[stride, stride], pads=[pad] * 4, group=groups)
    ho = (h + 2 * pad - k) // stride + 1
    wo = (w + 2 * pad - k) // stride + 1
    return _model([conv], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, ci, h, w])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, co, ho, wo])],
                  [_init("w", [co, ci // groups, k, k]), _init("b", [co], 1)])


def _only(costs, kind: str) -> KernelCost:
    found = [c for c in costs if c.kind == kind]
    assert len(found) == 1, [(c.name, c.kind) for c in costs]
    return found[0]


@pytest.mark.parametrize("plan, kind, groups, stride", [
    ("nchw", "conv", 1, 1),
    ("nchw", "conv", 2, 1),
    ("buffer4c", "conv4c", 1, 2),  # stride 2: a direct conv (conv-winograd takes stride-1 3x3 convs)
    ("texture", "conv4c", 1, 2),
])
def test_conv_flops_formula(plan, kind, groups, stride):
    n, ci, co, h, w, k = 1, 8, 16, 16, 16, 3
    ho = wo = (h + 2 - k) // stride + 1
    a = analyze_model(_conv_model(n, ci, co, h, w, k, stride, 1, groups), "adreno-740", plan=plan)
    c = _only(a.costs, kind)
    assert c.flops == 2 * n * co * ho * wo * (ci // groups) * k * k
    assert c.name == "the_conv"
    assert c.signature.startswith("graph.conv2d(")
    assert c.config  # select-kernel-config has run


def test_winograd_product_flops():
    """A stride-1 3x3 conv on the NCHW4c plan becomes three Winograd kernels; the product's
    work is 2 * alpha^2 * K * C * P, and the three together do less than the direct conv."""
    n, ci, co, h, w = 1, 256, 256, 14, 14  # conv-winograd takes it on GPU targets (F(2,3) at 14x14)
    a = analyze_model(_conv_model(n, ci, co, h, w), "adreno-740", plan="buffer4c")
    mm = _only(a.costs, "winograd_matmul")
    op = next(graph.head_of(o) for o in kernel_ops(a.module) if graph.head_of(o).name == "texture.winograd_matmul")
    a2, c4, _, p, _ = op.input.type.shape
    assert mm.flops == 2 * a2 * co * (4 * c4) * p
    wino = sum(c.flops for c in a.costs if c.kind.startswith(("winograd", "texture.winograd")))
    assert 0 < wino < 2 * n * co * h * w * ci * 9


def test_matmul_flops_formula():
    b, m, k, n = 6, 8, 16, 12
    mm = helper.make_node("MatMul", ["a", "b"], ["y"], name="the_matmul")
    model = _model([mm], [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3, m, k]),
                          helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3, k, n])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, m, n])])
    c = _only(analyze_model(model, "adreno-740", plan="nchw").costs, "gemm")
    assert c.flops == 2 * m * n * k * b
    assert c.name == "the_matmul"


def test_gemm_flops_formula():
    m, k, n = 4, 32, 10
    gemm = helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="the_gemm")
    model = _model([gemm], [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                   [_init("w", [k, n]), _init("c", [n], 1)])
    c = _only(analyze_model(model, "adreno-660", plan="nchw").costs, "gemm")
    assert c.flops == 2 * m * n * k
    # bytes: A, B, C and the output, 4 bytes each
    assert c.global_bytes == 4 * (m * k + k * n + n + m * n) and c.texture_bytes == 0


@pytest.fixture(scope="module")
def tinynet(tmp_path_factory):
    from adreno_mlir.examples import write_example

    return write_example("tinynet", tmp_path_factory.mktemp("tiny") / "tinynet.onnx", 0)


def test_texture_bytes_only_on_the_texture_plan(tinynet):
    tex = analyze_model(tinynet, "adreno-740", plan="texture")
    buf = analyze_model(tinynet, "adreno-740", plan="buffer4c")
    assert sum(c.texture_bytes for c in tex.costs) > 0
    assert sum(c.texture_bytes for c in buf.costs) == 0
    assert all(c.texture_bytes == 0 for c in analyze_model(tinynet, "adreno-740", plan="nchw").costs)
    # the same tensors move either way: texture + global of one plan = global of the other
    assert sum(c.total_bytes for c in tex.costs) == sum(c.global_bytes for c in buf.costs)
    # fp16 storage halves the activations
    half = analyze_model(tinynet, "adreno-740", plan="buffer4c", precision="fp16-acc32")
    assert sum(c.global_bytes for c in half.costs) < sum(c.global_bytes for c in buf.costs)


@pytest.mark.parametrize("target", ["adreno-660", "adreno-740"])
def test_estimate_is_the_roofline(tinynet, target):
    profile = get_profile(target)
    a = analyze_model(tinynet, target, plan="texture")
    for c in a.costs:
        assert c.compute_us == pytest.approx(c.flops / (profile.peak_gflops_fp32 * 1e3))
        assert c.memory_us == pytest.approx(c.total_bytes / (profile.memory_gbps * 1e3))
        assert c.estimate_us == pytest.approx(max(c.compute_us, c.memory_us) + LAUNCH_OVERHEAD_US["gpu"])
        assert c.bound == ("compute" if c.compute_us >= c.memory_us else "memory")
        assert c.intensity == pytest.approx(c.flops / max(1, c.total_bytes))
    assert a.total_us == pytest.approx(sum(c.estimate_us for c in a.costs))
    # a GPU's peaks are cited: both Adreno profiles have them, the others do not
    assert profile.has_peaks and profile.peak_gflops_fp16 >= profile.peak_gflops_fp32


def test_occupancy_penalty(tinynet):
    """A config with fewer work-items is never estimated cheaper (same traffic, same work)."""
    profile = get_profile("adreno-740")
    a = analyze_model(tinynet, "adreno-740", plan="texture")
    from adreno_mlir.lowering.families import config_of, family_of, head_of

    convs = [k for k in kernel_ops(a.module) if family_of(head_of(k)).name == "conv4c"
             and head_of(k).groups.value.data == 1]
    assert convs
    for k in convs:
        cfg = config_of(k)
        times = []
        for xb in (1, 2, 4):
            c = {**cfg, "x_block": xb}
            times.append((work_items(k, c), estimate_config_us(k, c, profile)))
        for (items_a, t_a), (items_b, t_b) in itertools.pairwise(times):
            assert items_b <= items_a and t_b >= t_a
    # tinynet's layers are far below an Adreno's target: the penalty is strict there
    small = convs[-1]
    few = {**config_of(small), "x_block": 4}
    many = {**config_of(small), "x_block": 1}
    assert work_items(small, many) < occupancy_target(profile)
    if work_items(small, few) < work_items(small, many):
        assert estimate_config_us(small, few, profile) > estimate_config_us(small, many, profile)


def test_no_peaks_is_an_error(tinynet):
    with pytest.raises(CompileError, match="target profile 'tiny-test' has no peak figures"):
        analyze_model(tinynet, "tiny-test")


def test_live_profile_estimates():
    """Live devices get peak figures from the device (estimate_peaks): never zero."""
    import pyopencl as cl

    from adreno_mlir.target import estimate_peaks, live_profile

    device = cl.create_some_context(interactive=False).devices[0]
    p = live_profile(device)
    assert p.has_peaks and p.compute_units == device.max_compute_units
    assert p.peak_source
    fake = type("Device", (), {"name": "NVIDIA H200", "max_compute_units": 132, "max_clock_frequency": 1980,
                               "vendor": "NVIDIA Corporation"})()
    h200 = estimate_peaks(fake, True, False)
    assert h200["peak_gflops_fp32"] == pytest.approx(132 * 128 * 2 * 1.98, rel=1e-3)
    assert h200["memory_gbps"] == 4800
    cpu = type("Device", (), {"name": "some CPU", "max_compute_units": 4, "max_clock_frequency": 3000,
                              "vendor": "x"})()
    est = estimate_peaks(cpu, False, False)
    assert est["peak_gflops_fp32"] == pytest.approx(4 * 3000 * 16 * 2 / 1000) and est["memory_gbps"] == 20
    # A device that reports no clock (Intel's CPU runtime on an AMD CPU says 0 MHz) still
    # gets a peak, from the host's clock or an assumed one, and the source says so.
    for is_gpu in (False, True):
        silent = type("Device", (), {"name": "some device", "max_compute_units": 4, "max_clock_frequency": 0,
                                     "vendor": "x"})()
        est = estimate_peaks(silent, is_gpu, False)
        assert est["peak_gflops_fp32"] > 0 and "reports no clock" in est["peak_source"], est


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *map(str, args)], capture_output=True, text=True,
                          check=False)


def test_cli_table(tinynet, tmp_path):
    out = tmp_path / "a.json"
    r = _cli("analyze", tinynet, "--target", "adreno-740", "--json", out)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("name"))
    for col in ("kind", "GFLOP", "global MB", "texture MB", "FLOP/B", "est us", "bound"):
        assert col in lines[header]
    rows = lines[header + 1:]
    times = [float(line.split()[-2]) for line in rows if line.split()[-1] in ("compute", "memory")]
    assert len(times) > 5 and times == sorted(times, reverse=True)
    assert any(line.startswith("total:") for line in rows)
    assert any(line.startswith("target adreno-740:") and "GB/s" in line for line in rows)
    data = json.loads(out.read_text())
    assert data["target"] == "adreno-740" and len(data["kernels"]) == len(times)
    top = _cli("analyze", tinynet, "--plan", "buffer4c", "--top", "3")
    assert top.returncode == 0, top.stderr
    assert "more kernels (--top 3)" in top.stdout


@pytest.mark.parametrize("args, message", [
    (["analyze", "/nonexistent/model.onnx"], "no such model file"),
    (["analyze", "TINY", "--target", "tiny-test"], "target profile 'tiny-test' has no peak figures"),
    (["analyze", "TINY", "--plan", "nchw", "--precision", "fp16-acc32"], "layout='nchw' is the fp32 buffer path"),
])
def test_cli_errors(tinynet, args, message):
    r = _cli(*[tinynet if a == "TINY" else a for a in args])
    assert r.returncode == 1
    assert "error:" in r.stderr and message in r.stderr
    assert "Traceback" not in r.stderr
