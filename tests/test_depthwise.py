"""Depthwise NCHW4c convolution, `dw_rows` schedule (issue 13): each work-item reads the
input row segment its `x_block` outputs need once per window row, instead of once per
tap and output pixel. Same multiply-adds in the same order as the per-tap kernel, so
the two schedules agree bit for bit; both are checked against onnxruntime, and the
row schedule's reads (ragged last blocks, padding, strides, dilations) under Oclgrind.
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import adreno_mlir
from tests.test_models import scaled_error
from tests.test_oclgrind import RUN_ARTIFACT, oclgrind_env, run_under_oclgrind  # noqa: F401 - fixture

PLANS = {
    "textures": {"textures": True, "target": "adreno-740"},
    "buffer4c": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "fp16-acc32": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
}

# (channels, height, width, kernel, stride, dilation, pads): ragged blocks (width 17, 11,
# 10 with x_block 4), padding, strides 2, dilation 2, no padding, 5x5, asymmetric pads.
SHAPES = [(8, 13, 17, 3, 1, 1, [1, 1, 1, 1]), (8, 13, 17, 3, 2, 1, [1, 1, 1, 1]),
          (12, 10, 11, 5, 2, 1, [2, 2, 2, 2]), (4, 9, 9, 3, 1, 2, [2, 2, 2, 2]), (8, 7, 7, 3, 1, 1, [0, 0, 0, 0]),
          (16, 14, 14, 5, 1, 1, [2, 2, 2, 2]), (4, 6, 10, 3, 2, 1, [0, 1, 1, 0])]


def _model(c, h, w, k, s, d, pads, seed=0):
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="dw", group=c, kernel_shape=[k, k],
                              strides=[s, s], dilations=[d, d], pads=pads),
             helper.make_node("Relu", ["y"], ["z"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [1, c, h, w])],
                          [helper.make_tensor_value_info("z", 1, None)],
                          [numpy_helper.from_array(rng.standard_normal((c, 1, k, k)).astype(np.float32), "w"),
                           numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _with_override(tmp_path, **cfg):
    path = tmp_path / ("dw" + "".join(f"-{k}{v}" for k, v in cfg.items()) + ".json")
    path.write_text(json.dumps({"loc:dw": cfg}))
    return lambda p: p.replace("select-kernel-config{target=adreno-740",
                               f'select-kernel-config{{target=adreno-740 overrides="{path}"')


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:6])))
def test_depthwise_rows_match_onnxruntime_and_the_tap_schedule(shape, plan, tmp_path):
    m = _model(*shape)
    x = np.random.default_rng(1).standard_normal((1, *shape[:3])).astype(np.float32)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    tol = 5e-2 if "fp16" in plan else 1e-5
    default = adreno_mlir.compile(m, keep_ir=True, **PLANS[plan])  # GPU rule: one pixel per work-item, rows
    assert "x_block = 1 : i64" in default.stage_ir["config"] and "dw_rows = 1" in default.stage_ir["config"]
    assert scaled_error(default.run({"x": x})["z"], ref) <= tol
    # Four pixels per work-item: the row schedule against the per-tap one.
    rows = adreno_mlir.compile(m, pipeline=_with_override(tmp_path, x_block=4, dw_rows=1), **PLANS[plan])
    taps = adreno_mlir.compile(m, pipeline=_with_override(tmp_path, x_block=4, dw_rows=0), **PLANS[plan])
    got_rows, got_taps = rows.run({"x": x})["z"], taps.run({"x": x})["z"]
    assert scaled_error(got_rows, ref) <= tol
    np.testing.assert_array_equal(got_rows, got_taps)  # same fmas, same order
    # Fewer input reads: one per row segment pixel, not one per tap and output pixel.
    # (Windows of more than 9 taps stay a loop in the per-tap kernel: count those by hand.)
    reads = [_input_reads(cm.source) for cm in (rows, taps)]
    if shape[3] ** 2 <= 9:
        assert reads[0] < reads[1], reads


def _input_reads(source: str) -> int:
    kernel = source[source.index("__kernel void dwconv"):]
    kernel = kernel[:kernel.index("\n}\n")]
    # images, or vload4 / vload_half4 of `input`, or its typed float4 loads (VECTOR_ACCESS_MODES)
    return kernel.count("read_image") + kernel.count(", input)") + kernel.count("*)input)[")


@pytest.mark.parametrize("plan", ["textures", "buffer4c"])
def test_depthwise_rows_stay_in_bounds_under_oclgrind(plan, oclgrind_env, tmp_path):  # noqa: F811
    """Ragged last blocks and padding read only inside the input (Oclgrind checks every access)."""
    m = _model(8, 13, 17, 3, 2, 1, [1, 1, 1, 1])
    cm = adreno_mlir.compile(m, **PLANS[plan])
    art = cm.save(tmp_path / "dw.adreno")
    x = np.random.default_rng(1).standard_normal((1, 8, 13, 17)).astype(np.float32)
    np.savez(tmp_path / "feeds.npz", x=x)
    _, reports = run_under_oclgrind(oclgrind_env, RUN_ARTIFACT, str(art), str(tmp_path / "feeds.npz"),
                                    str(tmp_path / "out.npz"))
    assert not reports, "\n\n".join(reports)
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["z"], cm.run({"x": x})["z"], rtol=1e-6, atol=1e-6)
