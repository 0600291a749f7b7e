"""Regression tests for issue 11's wrong answers, silent acceptances and raw tracebacks:
each test is named after the bug it caught and failed before its fix."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import adreno_mlir
from adreno_mlir.cli_run import compare_outputs

PLANS = {
    "nchw": {"layout": "nchw"},
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
    "fp16-acc32": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
}


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=300, **kw)


def _opt(*args):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.opt", *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=300)


# --------------------------------------------------------------------------- NaN semantics


def _nan_model():
    """Conv (no padding, so onnxruntime and the ONNX reference agree on NaN) with a NaN in
    its weights and NaN inputs, then Relu, Clip(0, 6), HardSigmoid and LeakyRelu."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    w[0, 0, 1, 1] = np.nan
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Clip", ["r", "lo", "hi"], ["y"]),
             helper.make_node("HardSigmoid", ["c"], ["h"]),
             helper.make_node("LeakyRelu", ["c"], ["l"], alpha=0.1)]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]
    return _model(nodes, [_f("x", [1, 3, 10, 10])], [_f("y", [1, 8, 8, 8]), _f("h", [1, 8, 8, 8]),
                                                      _f("l", [1, 8, 8, 8])], inits)


@pytest.mark.parametrize("plan", list(PLANS))
def test_relu_and_clip_keep_nan(plan):
    """Bug: Relu/Clip were printed as OpenCL fmax/fmin, which return the other operand for
    NaN, so NaN weights or inputs gave 0 where ONNX gives NaN."""
    m = _nan_model()
    x = np.random.default_rng(1).standard_normal((1, 3, 10, 10)).astype(np.float32)
    x[0, 2, 5, 5] = np.nan
    ref = dict(zip(["y", "h", "l"], ort.InferenceSession(m.SerializeToString(),
                                                          providers=["CPUExecutionProvider"]).run(None, {"x": x})))
    ref2 = dict(zip(["y", "h", "l"], ReferenceEvaluator(m).run(None, {"x": x})))
    out = adreno_mlir.compile(m, **PLANS[plan]).run({"x": x})
    tol = 5e-2 if "fp16" in plan else 1e-4
    for name in ("y", "h", "l"):
        assert np.isnan(ref[name]).sum() > 60  # the weight's whole channel, and the input's neighbourhood
        assert np.array_equal(np.isnan(ref[name]), np.isnan(ref2[name]))
        assert np.array_equal(np.isnan(out[name]), np.isnan(ref[name])), f"{plan}: NaN positions of {name} differ"
        ok, line = compare_outputs(out[name], ref[name], name, tol)
        assert ok, line


@pytest.mark.parametrize("plan", list(PLANS))
def test_max_pool_window_with_a_nan_is_nan(plan):
    """Bug (issue 25): max pooling compared with IEEE maxNum (OpenCL fmax), which skips a
    NaN tap, so a Conv -> Relu -> MaxPool with a NaN gave no NaN where PyTorch gives NaN.
    A window holding a NaN is now NaN (IEEE 754-2019 maximum). Here the NaN is at tap
    (0, 1) of every window, where onnxruntime and the ONNX reference evaluator both skip
    it; tests/test_nan_pooling.py checks every tap position and plan against the NaN mask."""
    m = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
               [_f("x", [1, 4, 4, 4])], [_f("y", [1, 4, 2, 2])])
    x = np.arange(64, dtype=np.float32).reshape(1, 4, 4, 4) / 8 - 4
    x[:, :, 0::2, 1::2] = np.nan
    cm = adreno_mlir.compile(m, **PLANS[plan])
    out = cm.run({"x": x})["y"]
    assert np.isnan(out).all(), out
    x[:, :, 0, 1] = 1.0  # the windows of row 0, column 0 hold no NaN any more
    out = cm.run({"x": x})["y"]
    assert np.isnan(out).sum() == 4 * 3 and not np.isnan(out[:, :, 0, 0]).any()
    rtol = 5e-2 if "fp16" in plan else 1e-6
    assert np.allclose(out[:, :, 0, 0], np.nanmax(x[:, :, 0:2, 0:2], axis=(2, 3)), rtol=rtol)


# --------------------------------------------------------------------------- --compare


def test_compare_is_not_blind_to_nan():
    """Bug: `--compare` printed `max abs error nan ... OK` (Python's max drops NaN)."""
    ref = np.array([1.0, 2.0, 3.0], np.float32)
    assert not compare_outputs(np.array([1.0, np.nan, 3.0], np.float32), ref, "y", 1e-4)[0]
    assert not compare_outputs(ref, np.array([1.0, np.nan, 3.0], np.float32), "y", 1e-4)[0]
    assert not compare_outputs(np.array([1.0, np.inf, 3.0], np.float32), ref, "y", 1e-4)[0]
    assert not compare_outputs(np.array([-np.inf, 2, 3], np.float32), np.array([np.inf, 2, 3], np.float32), "y",
                               1e-4)[0]
    ok, line = compare_outputs(np.array([np.nan, 2.0, 3.0]), np.array([np.nan, 2.0, 3.00001]), "y", 1e-4)
    assert ok and "NaN/inf positions match" in line and "nan" not in line.split("(")[0]
    assert not compare_outputs(np.zeros(3), np.zeros(4), "y", 1.0)[0]


@pytest.mark.parametrize("tolerance", ["nan", "-1", "inf", "abc"])
def test_tolerance_must_be_a_finite_non_negative_number(tolerance, tiny_path):
    proc = _cli("run", tiny_path, "--compare", "onnxruntime", "--tolerance", tolerance)
    assert proc.returncode == 1 and "--tolerance" in proc.stderr and "Traceback" not in proc.stderr


def test_compare_fails_on_nan_mismatch(tmp_path):
    """End to end: a model whose output is NaN where onnxruntime's is not must fail
    `run --compare` (here onnxruntime skips a padded tap that carries a NaN weight, which
    the ONNX reference and adreno-mlir multiply: a documented divergence, caught)."""
    w = np.ones((1, 1, 3, 3), np.float32)
    w[0, 0, 0, 0] = np.nan
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [_f("x", [1, 1, 4, 4])],
               [_f("y", [1, 1, 4, 4])], [numpy_helper.from_array(w, "w")])
    path = tmp_path / "padnan.onnx"
    onnx.save(m, str(path))
    proc = _cli("run", path, "--compare", "onnxruntime", "--repeat", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NaN at 16 positions in ours, 9 in the reference" in proc.stdout


def test_compare_names_a_model_onnxruntime_refuses(tmp_path):
    """Bug: a model onnxruntime cannot load made `run --compare` report an internal
    compiler error; now it says the reference runtime refused the model, and why."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="same"), helper.make_node("Relu", ["a"], ["y"], name="same")]
    path = tmp_path / "dup.onnx"
    onnx.save(_model(nodes, [_f("x", [1, 4])], [_f("y", [1, 4])]), str(path))
    proc = _cli("run", path, "--compare", "onnxruntime", "--repeat", "1")
    assert proc.returncode == 1
    assert "onnxruntime refused" in proc.stderr and "internal compiler error" not in proc.stderr


# --------------------------------------------------------------------------- silent acceptance


def test_newer_opset_than_onnx_knows_is_refused(tmp_path):
    """Bug: an opset-99 model compiled and ran (exit 0)."""
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_f("x", [1, 4])], [_f("y", [1, 4])], opset=99)
    with pytest.raises(adreno_mlir.CompileError, match="opset 99"):
        adreno_mlir.compile(m)
    onnx.save(m, str(tmp_path / "o99.onnx"))
    proc = _cli("run", tmp_path / "o99.onnx")
    assert proc.returncode == 1 and "opset 99" in proc.stderr


def test_empty_model_is_refused():
    """Bug: an empty onnx.ModelProto() compiled."""
    with pytest.raises(adreno_mlir.CompileError, match="holds no graph"):
        adreno_mlir.compile(onnx.ModelProto())


@pytest.mark.parametrize("bad", [123, 4.5, b"model.onnx", ["a.onnx"]])
def test_compile_of_a_non_model_is_a_compile_error(bad):
    """Bug: compile(123) raised pathlib's TypeError."""
    with pytest.raises(adreno_mlir.CompileError, match="the model must be a path"):
        adreno_mlir.compile(bad)


def test_truthy_textures_value_is_refused(tiny_path):
    with pytest.raises(adreno_mlir.CompileError, match="textures='no'"):
        adreno_mlir.compile(str(tiny_path), textures="no")


def test_zero_stride_names_the_attribute():
    """Bug: a Conv with stride 0 said "no static shape after shape inference"."""
    w = numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "w")
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], strides=[0, 0])], [_f("x", [1, 3, 8, 8])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    with pytest.raises(adreno_mlir.CompileError, match=r"strides \[0, 0\] are invalid"):
        adreno_mlir.compile(m)


def test_ir_version_3_model_with_initializers_as_inputs_runs():
    """Bug: an IR-version-3 model listing its initializers as graph inputs (valid, and
    onnxruntime runs it) was refused: shape inference ignored the constants."""
    w = np.random.default_rng(0).standard_normal((2, 3, 3, 3)).astype(np.float32)
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"])], [_f("x", [1, 3, 8, 8]), _f("w", [2, 3, 3, 3])],
               [_f("y", [1, 2, 6, 6])], [numpy_helper.from_array(w, "w")], opset=8)
    m.ir_version = 3
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    cm = adreno_mlir.compile(m)
    assert cm.input_names == ["x"]
    assert np.abs(cm.run({"x": x})["y"] - ref).max() <= 1e-4 * np.abs(ref).max()


@pytest.mark.parametrize("n_inputs", [0, 2])
def test_run_without_input_uses_random_data_for_every_input(n_inputs, tmp_path):
    """Bug: `adreno-mlir run` without --input refused models with several inputs or none,
    although --help says inputs default to random data."""
    if n_inputs == 2:
        m = _model([helper.make_node("Add", ["a", "b"], ["y"])], [_f("a", [1, 4]), _f("b", [1, 4])],
                   [_f("y", [1, 4])])
    else:
        c = numpy_helper.from_array(np.ones((1, 4), np.float32), "c")
        m = _model([helper.make_node("Relu", ["c"], ["y"])], [], [_f("y", [1, 4])], [c])
    path = tmp_path / f"in{n_inputs}.onnx"
    onnx.save(m, str(path))
    proc = _cli("run", path, "--repeat", "1")
    assert "--input" not in proc.stderr
    # With no input every value is a constant, folded at compile time: the output is
    # returned as a constant (tests/test_constant_outputs.py).
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- adreno-opt


@pytest.fixture(scope="module")
def graph_ir(tiny_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("ir") / "tiny.mlir"
    proc = _cli("import", tiny_path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_opt_opencl_target_on_unlowered_ir_is_an_error(graph_ir):
    """Bug: `adreno-opt -t opencl` on IR that had not been lowered printed an empty program
    and exited 0."""
    proc = _opt(graph_ir, "-t", "opencl")
    assert proc.returncode == 1 and "no opencl.kernel" in proc.stderr and "convert-graph-to-opencl" in proc.stderr


def test_opt_unterminated_pass_options_are_an_error(graph_ir):
    """Bug: `-p 'pass{opt=4'` printed a full traceback (xDSL's ArgSpecParseError is a
    BaseException)."""
    proc = _opt(graph_ir, "-p", "graph-canonicalize{opt=4")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "Malformed pass arguments" in proc.stderr


def test_opt_output_under_a_regular_file_is_an_error(graph_ir, tmp_path):
    """Bug: `-o FILE/x.mlir` under a regular file reported an internal error."""
    (tmp_path / "afile").write_text("x")
    proc = _opt(graph_ir, "-o", tmp_path / "afile" / "x.mlir")
    assert proc.returncode == 1 and "cannot write" in proc.stderr and "internal" not in proc.stderr


def test_opt_binary_input_names_the_problem(tmp_path):
    """Bug: binary bytes in a .mlir file gave `error: utf-8`."""
    path = tmp_path / "bin.mlir"
    path.write_bytes(b"\xff\xfe\x00binary")
    proc = _opt(path)
    assert proc.returncode == 1 and "is not UTF-8 text (byte 0xff at offset 0)" in proc.stderr


# --------------------------------------------------------------------------- fp16 range guard


def _overflowing_model():
    """x * 1e4 -> conv -> relu -> conv: the intermediate activations reach ~1.4e5, beyond
    fp16's 65504, while input, weights and output are ordinary."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Mul", ["x", "s"], ["big"], name="scale"),
             helper.make_node("Conv", ["big", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    inits = [numpy_helper.from_array(np.array(1e4, np.float32), "s"),
             numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((4, 8, 3, 3)).astype(np.float32), "w2")]
    return _model(nodes, [_f("x", [1, 3, 8, 8])], [_f("y", [1, 4, 8, 8])], inits)


@pytest.mark.parametrize("plan", ["nchw4c-textures", "nchw4c-buffers"])
def test_fp16_storage_overflow_is_refused(plan):
    """Bug: with fp16 storage, activations above 65504 silently became inf (254 of the 256
    outputs of this model without the guard)."""
    m = _overflowing_model()
    kw = {k: v for k, v in PLANS[plan].items() if k != "precision"}
    with pytest.raises(adreno_mlir.CompileError, match=r"fp16 storage would overflow .*tensor 'c' \(node 'conv1'\)"):
        adreno_mlir.compile(m, precision="fp16-acc32", **kw)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    unguarded = adreno_mlir.compile(m, precision="fp16-acc32", calibration=False, **kw).run({"x": x})["y"]
    assert (~np.isfinite(unguarded)).sum() > 100  # what the guard prevents
    assert np.isfinite(adreno_mlir.compile(m, **kw).run({"x": x})["y"]).all()  # fp32 is fine


def test_fp16_guard_uses_the_given_calibration_inputs():
    m = _overflowing_model()
    small = {"x": np.full((1, 3, 8, 8), 1e-3, np.float32)}  # keeps every value far below 65504
    cm = adreno_mlir.compile(m, precision="fp16-acc32", textures=True, target="adreno-740", calibration=small)
    assert np.isfinite(cm.run(small)["y"]).all()
    with pytest.raises(adreno_mlir.CompileError, match="calibration= names inputs the model does not have"):
        adreno_mlir.compile(m, precision="fp16-acc32", textures=True, target="adreno-740",
                            calibration={"nope": small["x"]})


# --------------------------------------------------------------------------- one error family


def test_errors_are_one_family(tiny_path):
    """Run-time input errors were bare ValueErrors while the README promised CompileErrors;
    now every deliberate error is an AdrenoError: CompileError for the model, options and
    device, InputError (also a ValueError) for bad feeds."""
    from adreno_mlir.errors import AdrenoError, InputError
    from adreno_mlir.frontend.onnx_importer import FrontendError
    from adreno_mlir.range_guard import RangeError
    from adreno_mlir.runtime.native import NativeRuntimeError

    for cls in (FrontendError, RangeError, NativeRuntimeError, adreno_mlir.CompileError):
        assert issubclass(cls, AdrenoError)
    assert issubclass(InputError, ValueError) and adreno_mlir.InputError is InputError
    cm = adreno_mlir.compile(str(tiny_path))
    for feeds in ({}, {"input": np.zeros((1, 3, 8, 8), np.float32)}, {"input": np.zeros((1, 3, 64, 64))},
                  {"input": np.zeros((1, 3, 64, 64), np.float32), "other": np.zeros(1, np.float32)}):
        with pytest.raises(InputError):
            cm.run(feeds)
    with pytest.raises(AdrenoError):
        adreno_mlir.compile(str(tiny_path), precision="fp8")


def test_tensor_beyond_the_device_allocation_limit_is_named():
    """Bug: a 1x3x20000x20000 input raised pyopencl's raw `LogicError: create_buffer failed:
    INVALID_BUFFER_SIZE`; now the compile names the tensor and the device's limit."""
    from adreno_mlir.runtime.device import find_device

    limit = int(find_device().max_mem_alloc_size)
    side = int((limit / 12) ** 0.5) + 64  # 3 float channels of side x side: just above the limit
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_f("x", [1, 3, side, side])], [_f("y", [1, 3, side, side])])
    with pytest.raises(adreno_mlir.CompileError, match=rf"input 'x' \[1, 3, {side}, {side}\] needs .* more than .*largest "
                                                       "allocation"):
        adreno_mlir.compile(m)


def _imported(tiny_path, tmp_path):
    out = tmp_path / "t.mlir"
    proc = _cli("import", tiny_path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out, tmp_path / "t.weights" / "w_1.npy"


def test_weight_file_of_the_wrong_shape_names_the_weight_and_file(tiny_path, tmp_path):
    """Bug: a weights .npy of the wrong shape gave numpy's reshape message, without the
    weight's name or file."""
    ir, npy = _imported(tiny_path, tmp_path)
    np.save(npy, np.zeros(np.load(npy).size + 5, np.float32))
    proc = _opt(ir, "-p", "graph-canonicalize,fold-batchnorm,graph-canonicalize,graph-fuse,select-kernel-config,"
                "convert-graph-to-opencl", "-t", "opencl")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"weight @w_1 ({npy}) has shape [437], but its graph.constant says [16, 3, 3, 3]" in proc.stderr


def test_corrupted_weight_file_names_the_weight_and_file(tiny_path, tmp_path):
    ir, npy = _imported(tiny_path, tmp_path)
    npy.write_bytes(b"\x93NUMPY garbage")
    proc = _opt(ir, "-p", "graph-canonicalize,fold-batchnorm", "-t", "mlir")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"weight @w_1: {npy} is not a readable .npy file" in proc.stderr


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("coord, nearest_mode", [("half_pixel_symmetric", "floor"), ("half_pixel", "round_prefer_ceil"),
                                                 ("asymmetric", "floor")])
def test_resize_nearest_exact_coordinates_round_like_onnxruntime(plan, coord, nearest_mode):
    """Bug (fuzzer, graph 502 of seed 0): a 1.5x nearest Resize of 61 rows picked the wrong
    source row every third output row (scaled error 1.1 on every plan). Its source
    coordinate (y + 0.5) / 1.5 + 1/6 - 0.5 is an integer in real arithmetic; the offset was
    added in another order and rounded in float64, so floor() fell the other way. The
    kernel now follows onnxruntime's f32 order with correctly rounded divisions."""
    m = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                                 coordinate_transformation_mode=coord, nearest_mode=nearest_mode)],
               [_f("x", [1, 8, 61, 24])], [_f("y", None)],
               [numpy_helper.from_array(np.array([1, 1, 1.5, 1.5], np.float32), "scales")])
    x = np.random.default_rng(0).standard_normal((1, 8, 61, 24)).astype(np.float32)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = adreno_mlir.compile(m, **PLANS[plan]).run({"x": x})["y"]
    tol = 5e-2 if "fp16" in plan else 0.0
    assert got.shape == ref.shape and np.abs(got - ref).max() <= tol * np.abs(ref).max()
