"""The Python API and the CLI: input checking, plans, fallbacks, errors without tracebacks."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import adreno_mlir
from adreno_mlir.errors import CompileError


@pytest.fixture(scope="module")
def tiny(tiny_path):
    return adreno_mlir.compile(str(tiny_path))


def _ref(path, x):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]


def test_session_like_api(tiny, tiny_path):
    assert tiny.input_names == ["input"] and tiny.output_names == ["probabilities"]
    assert "__kernel" in tiny.source
    x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
    out = tiny.run({"input": x})["probabilities"]
    np.testing.assert_allclose(out, _ref(tiny_path, x), rtol=1e-4, atol=1e-6)
    # the same compiled model runs again with new data (nothing stale between runs)
    y = -x
    np.testing.assert_allclose(tiny.run({"input": y})["probabilities"], _ref(tiny_path, y), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "feeds, message",
    [
        ({"image": np.zeros((1, 3, 64, 64), np.float32)}, "wrong input names: expected ['input']"),
        ({"input": np.zeros((1, 3, 32, 32), np.float32)}, "expected [1, 3, 64, 64]"),
        ({"input": np.zeros((1, 3, 64, 64), np.float64)}, "expected float32"),
        ({"input": [[0.0]]}, "must be a numpy array"),
    ],
)
def test_wrong_inputs_raise_value_error(tiny, feeds, message):
    with pytest.raises(ValueError, match=".*" + message.replace("[", r"\[").replace("]", r"\]")):
        tiny.run(feeds)


@pytest.mark.parametrize("plan", [
    dict(textures=True),
    dict(textures=False, layout="nchw4c"),
    dict(textures=True, target="tiny-test"),  # mixed: only small tensors fit 64x64 images
    dict(textures=True, precision="fp16-acc32"),
])
def test_plans_match_onnxruntime(tiny_path, plan):
    cm = adreno_mlir.compile(str(tiny_path), **plan)
    x = np.random.default_rng(3).standard_normal((1, 3, 64, 64)).astype(np.float32)
    tol = 5e-2 if plan.get("precision") == "fp16-acc32" else 1e-4
    ref = _ref(tiny_path, x)
    err = np.abs(cm.run({"input": x})["probabilities"] - ref).max() / np.abs(ref).max()
    assert err <= tol, (plan, err)
    uses_images = "image2d_t" in cm.source
    assert uses_images == bool(plan.get("textures")), cm.plan
    if plan.get("target") == "tiny-test":
        assert "__global float* out" in cm.source  # some tensors fell back to buffers


def _wide_model() -> onnx.ModelProto:
    """A relu on a 1x4x4x9000 tensor: its image (9000 wide) fits Adreno's 16384 limit but
    not PoCL's 8192."""
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="/relu")], "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 9000])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 9000])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_image_limits_fall_back_to_buffers():
    import pyopencl as cl

    from adreno_mlir.runtime import default_context

    dev = default_context().devices[0]
    if dev.image_support and dev.image2d_max_width >= 9000 and dev.image2d_max_height >= 9000:
        pytest.skip(f"{dev.name} holds a 9000-pixel image; the fallback cannot be provoked here")
    cm = adreno_mlir.compile(_wide_model(), target="adreno-740", textures=True)
    assert "buffers" in cm.plan and "image2d_t" not in cm.source
    x = np.random.default_rng(0).standard_normal((1, 4, 4, 9000)).astype(np.float32)
    np.testing.assert_array_equal(cm.run({"x": x})["y"], np.maximum(x, 0))
    del cl


def test_bad_options_are_compile_errors(tiny_path):
    with pytest.raises(CompileError, match="unknown target profile 'adreno-999'"):
        adreno_mlir.compile(str(tiny_path), target="adreno-999")
    with pytest.raises(CompileError, match="precision='fp16' computes in half.*cl_khr_fp16.*'fp16-acc32'"):
        adreno_mlir.compile(str(tiny_path), precision="fp16", device="pocl")  # no half arithmetic on PoCL
    with pytest.raises(CompileError, match="unknown precision"):
        adreno_mlir.compile(str(tiny_path), precision="int8")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *args], capture_output=True, text=True)


def test_cli_run_compare_and_errors(tiny_path, tmp_path):
    ok = _cli("run", str(tiny_path), "--compare", "onnxruntime", "--textures", "on")
    assert ok.returncode == 0, ok.stderr
    assert "OK: within tolerance" in ok.stdout
    bad = _cli("run", str(tiny_path), "--input", f"input={tmp_path / 'missing.npy'}")
    assert bad.returncode == 1 and "error: cannot read input 'input'" in bad.stderr
    assert "Traceback" not in bad.stderr
    tight = _cli("run", str(tiny_path), "--precision", "fp16-acc32", "--textures", "on",
                 "--compare", "onnxruntime", "--tolerance", "1e-9")
    assert tight.returncode == 1 and "differ from onnxruntime" in tight.stderr


def test_cli_compile_writes_every_stage(tiny_path, tmp_path):
    out = tmp_path / "out"
    r = _cli("compile", str(tiny_path), "-o", str(out), "--textures", "on")
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["0-graph.mlir", "1-graph-opt.mlir", "2-layout.mlir", "3-winograd.mlir", "4-scope.mlir",
                            "5-fuse.mlir", "6-pool-partials.mlir", "7-channel-scale.mlir", "8-depthwise-load.mlir",
                            "9-config.mlir", "10-split-k.mlir", "11-memory.mlir", "12-opencl.mlir",
                            "pipeline.txt", "tinynet.adreno", "tinynet.cl", "weights"])
    assert "image2d_t" in (out / "tinynet.cl").read_text()
    # every stage is real IR that adreno-opt reads back
    again = subprocess.run(["adreno-opt", str(out / "4-scope.mlir")], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout == (out / "4-scope.mlir").read_text()
    # the printed pipeline lists every decision as a pass ...
    pipeline = (out / "pipeline.txt").read_text().strip()
    for name in ("graph-fuse", "conv-winograd", "fuse-pool-partials", "fuse-channel-scale", "fuse-depthwise-load",
                 "select-kernel-config",
                 "split-k", "plan-memory", "convert-graph-to-opencl"):
        assert name in pipeline
    # ... and replays the whole compile from the graph IR with adreno-opt
    replay = subprocess.run(["adreno-opt", str(out / "0-graph.mlir"), "-p", pipeline, "-t", "opencl"],
                            capture_output=True, text=True)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.strip() == (out / "tinynet.cl").read_text().strip()
