"""Models whose outputs (some or all) are constants: no graph input reaches them.

An output computed only from initializers, a Constant node's output, an initializer
that is itself an output, a Shape of a static input (int64), a mask of constants (bool),
or a value that graph-canonicalize folds. `run()` returns each with its ONNX dtype and
shape, as onnxruntime does, on every plan, next to computed outputs and when no output
is computed at all (a plan with no launches); the values survive `save` + `load` (an
artifact of format version 3, docs/artifact.md "Constant outputs")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import CompileError
from tests.conftest import NATIVE_BUILD_ERROR

PLANS = {
    "nchw": {"layout": "nchw"},
    "nchw4c-buffers": {"layout": "nchw4c", "textures": False, "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
}

W = np.arange(6, dtype=np.float32).reshape(2, 3) / 2.5  # the mask W > B has both values
B = np.ones((2, 3), np.float32)
SCALE = np.linspace(-1, 1, 48, dtype=np.float32).reshape(1, 3, 4, 4)


def _f(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "constant_outputs", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def mixed_model() -> onnx.ModelProto:
    """Computed outputs between constant ones of five kinds and four dtypes."""
    nodes = [
        helper.make_node("Add", ["W", "B"], ["w_plus_b"]),  # from initializers only
        helper.make_node("Relu", ["x"], ["y"]),  # computed
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array(2.5, np.float32))),
        helper.make_node("Shape", ["x"], ["s"]),  # int64, static
        helper.make_node("Greater", ["W", "B"], ["mask"]),  # bool
        helper.make_node("Mul", ["x", "scale"], ["z"]),  # computed, reads a weight
    ]
    outputs = [_f("w_plus_b", [2, 3]), _f("y", [1, 3, 4, 4]), _f("W", [2, 3]), _f("k", []),
               _f("s", [4], TensorProto.INT64), _f("mask", [2, 3], TensorProto.BOOL), _f("z", [1, 3, 4, 4])]
    return _model(nodes, [_f("x", [1, 3, 4, 4])], outputs,
                  [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B"),
                   numpy_helper.from_array(SCALE, "scale")])


def all_constant_model() -> onnx.ModelProto:
    """Every output is a constant: the compiled plan launches nothing."""
    nodes = [helper.make_node("Sub", ["W", "B"], ["d"]), helper.make_node("Shape", ["x"], ["s"])]
    return _model(nodes, [_f("x", [1, 3, 4, 4])], [_f("d", [2, 3]), _f("s", [4], TensorProto.INT64)],
                  [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")])


def _feeds(seed=0):
    return {"x": np.random.default_rng(seed).standard_normal((1, 3, 4, 4)).astype(np.float32)}


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def _assert_like_ort(got, ref, constants):
    assert list(got) == list(ref), "outputs come back in the model's order"
    for name, r in ref.items():
        g = got[name]
        assert g.dtype == r.dtype and g.shape == r.shape, f"{name}: {g.dtype}{list(g.shape)} vs {r.dtype}{list(r.shape)}"
        if name in constants:
            assert np.array_equal(g, r), f"constant output {name}: {g} vs {r}"
        else:
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=name)


MIXED_CONSTANTS = {"w_plus_b", "W", "k", "s", "mask"}

RUNTIMES = ["pyopencl", pytest.param("native", marks=pytest.mark.skipif(
    NATIVE_BUILD_ERROR is not None, reason=f"the native runtime is not built: {NATIVE_BUILD_ERROR}"))]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("program-cache")


@pytest.mark.parametrize("plan", list(PLANS))
def test_constant_outputs_mixed_with_computed_ones_match_onnxruntime(plan, cache):
    model = mixed_model()
    cm = adreno_mlir.compile(model, cache=cache, **PLANS[plan])
    assert cm.output_names == ["w_plus_b", "y", "W", "k", "s", "mask", "z"]
    assert cm.output_shapes["k"] == () and cm.output_shapes["s"] == (4,)
    feeds = _feeds()
    ref = _ort(model, feeds)
    _assert_like_ort(cm.run(feeds, runtime="pyopencl"), ref, MIXED_CONSTANTS)
    _assert_like_ort(cm.run(feeds), ref, MIXED_CONSTANTS)  # the native runtime where it is built
    # the constants are not computed on the device: no launch writes them, no weight holds them
    assert [t.name for t in cm.launch_plan.outputs if t.constant is None] == ["y", "z"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_constant_outputs_on_each_runtime(runtime, cache):
    model = mixed_model()
    cm = adreno_mlir.compile(model, cache=cache, runtime=runtime)
    assert cm.runtime == runtime
    feeds = _feeds(1)
    _assert_like_ort(cm.run(feeds), _ort(model, feeds), MIXED_CONSTANTS)


@pytest.mark.parametrize("plan", list(PLANS))
def test_model_whose_outputs_are_all_constant_launches_nothing(plan, cache, tmp_path):
    model = all_constant_model()
    cm = adreno_mlir.compile(model, cache=cache, **PLANS[plan])
    assert cm.launch_plan.launches == ()
    feeds = _feeds()
    ref = _ort(model, feeds)
    _assert_like_ort(cm.run(feeds), ref, {"d", "s"})
    loaded = adreno_mlir.load(cm.save(tmp_path / "all-constant.adreno"), cache=cache)
    _assert_like_ort(loaded.run(feeds), ref, {"d", "s"})


def test_model_without_inputs_returns_its_constants(cache):
    c = numpy_helper.from_array(np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32), "c")
    model = _model([helper.make_node("Relu", ["c"], ["y"])], [], [_f("y", [1, 4])], [c])
    cm = adreno_mlir.compile(model, cache=cache)
    assert cm.input_names == []
    _assert_like_ort(cm.run({}), _ort(model, {}), {"y"})


@pytest.mark.parametrize("plan", list(PLANS))
def test_constant_outputs_survive_save_and_load(plan, cache, tmp_path):
    model = mixed_model()
    cm = adreno_mlir.compile(model, cache=cache, **PLANS[plan])
    path = cm.save(tmp_path / "mixed.adreno")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == 3
    entries = {o["name"]: o for o in manifest["outputs"]}
    assert entries["s"]["dtype"] == "i64" and entries["mask"]["dtype"] == "bool"
    assert entries["w_plus_b"]["dtype"] == "f32" and entries["k"]["shape"] == []
    for name in MIXED_CONSTANTS:
        assert "allocation" not in entries[name] and entries[name]["constant"]["offset"] % 64 == 0
    for name in ("y", "z"):
        assert "constant" not in entries[name] and isinstance(entries[name]["allocation"], int)
    feeds = _feeds(2)
    ref = _ort(model, feeds)
    for runtime in ("pyopencl", None):
        loaded = adreno_mlir.load(path, cache=cache, runtime=runtime)
        assert loaded.output_names == cm.output_names and loaded.output_shapes == cm.output_shapes
        assert loaded.launch_plan == cm.launch_plan
        _assert_like_ort(loaded.run(feeds), ref, MIXED_CONSTANTS)


def test_artifact_without_constant_outputs_keeps_format_version_1(cache, tmp_path):
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_f("x", [1, 4])], [_f("y", [1, 4])])
    path = adreno_mlir.compile(model, cache=cache).save(tmp_path / "relu.adreno")
    assert json.loads((path / "manifest.json").read_text())["format_version"] == 1


def test_a_malformed_constant_output_entry_is_a_clear_load_error(cache, tmp_path):
    path = adreno_mlir.compile(mixed_model(), cache=cache).save(tmp_path / "mixed.adreno")
    file = path / "manifest.json"
    manifest = json.loads(file.read_text())
    entry = next(o for o in manifest["outputs"] if o["name"] == "s")
    entry["constant"]["bytes"] = 31  # 4 int64 elements take 32 bytes
    file.write_text(json.dumps(manifest))
    with pytest.raises(CompileError, match=r"outputs\[4\] \(s\).*4 i64 elements.*32 bytes"):
        adreno_mlir.load(path, cache=cache)


def test_constant_output_is_a_fresh_array_on_every_run(cache):
    cm = adreno_mlir.compile(mixed_model(), cache=cache)
    first = cm.run(_feeds())
    first["W"][:] = 0
    first["s"][:] = 0
    again = cm.run(_feeds())
    assert np.array_equal(again["W"], W) and again["s"].tolist() == [1, 3, 4, 4]


def test_output_that_folds_only_in_graph_canonicalize(cache):
    """A graph module whose second output is neg(constant): graph-canonicalize folds it,
    and the plan returns the folded constant."""
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context

    text = """
    func.func @main(%x: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<2xf32>)
        attributes {graph.inputs = ["x"], graph.outputs = ["y", "n"]} {
      %y = graph.relu %x : tensor<1x4xf32>
      %c = graph.constant dense<[1.5, -2.0]> : tensor<2xf32>
      %n = graph.neg %c : tensor<2xf32>
      func.return %y, %n : tensor<1x4xf32>, tensor<2xf32>
    }
    """
    module = Parser(make_context(), text).parse_module()
    for plan in PLANS.values():
        cm = adreno_mlir.compile(module, cache=cache, **plan)
        assert [t.name for t in cm.launch_plan.outputs if t.constant is not None] == ["n"]
        x = np.array([[-1.0, 0.5, -0.25, 3.0]], np.float32)
        out = cm.run({"x": x})
        assert np.array_equal(out["n"], np.array([-1.5, 2.0], np.float32)) and out["n"].dtype == np.float32
        assert np.array_equal(out["y"], np.maximum(x, 0))


def test_constant_outputs_with_fp16_storage(cache):
    """fp16-acc32 keeps activations in half; a constant output is still the exact fp32 value."""
    model = mixed_model()
    cm = adreno_mlir.compile(model, cache=cache, textures=True, precision="fp16-acc32", target="adreno-740")
    feeds = _feeds()
    got, ref = cm.run(feeds), _ort(model, feeds)
    for name in MIXED_CONSTANTS:
        assert got[name].dtype == ref[name].dtype and np.array_equal(got[name], ref[name]), name


def test_constant_outputs_with_half_arithmetic(half_device, cache):
    model = mixed_model()
    cm = adreno_mlir.compile(model, device=half_device, cache=cache, precision="fp16", target="adreno-740")
    feeds = _feeds()
    got, ref = cm.run(feeds), _ort(model, feeds)
    for name in MIXED_CONSTANTS:
        assert got[name].dtype == ref[name].dtype and np.array_equal(got[name], ref[name]), name
    np.testing.assert_allclose(got["z"], ref["z"], rtol=2e-3, atol=2e-3)


def f32_constant_model() -> onnx.ModelProto:
    """Float32 constant outputs (from initializers, an initializer, a Constant node) around
    computed ones: what the C API, which exchanges float arrays, returns too."""
    nodes = [
        helper.make_node("Add", ["W", "B"], ["w_plus_b"]),
        helper.make_node("Relu", ["x"], ["y"]),
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array(2.5, np.float32))),
        helper.make_node("Mul", ["x", "scale"], ["z"]),
    ]
    outputs = [_f("w_plus_b", [2, 3]), _f("y", [1, 3, 4, 4]), _f("W", [2, 3]), _f("k", []), _f("z", [1, 3, 4, 4])]
    return _model(nodes, [_f("x", [1, 3, 4, 4])], outputs,
                  [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B"),
                   numpy_helper.from_array(SCALE, "scale")])


def f32_all_constant_model() -> onnx.ModelProto:
    nodes = [helper.make_node("Sub", ["W", "B"], ["d"]), helper.make_node("Identity", ["x"], ["x_unused"])]
    return _model(nodes, [_f("x", [1, 3, 4, 4])], [_f("d", [2, 3])],
                  [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")])


def _run_c(art, feeds, names, tmp_path):
    """adreno-run's outputs for `feeds`, on the default device (as tests/test_native_runtime.py runs it)."""
    from adreno_mlir.runtime import native
    from tests.test_native_runtime import runner_outputs

    runner = Path(os.environ["ADRENO_MLIR_NATIVE_LIB"]).parent / "adreno-run"
    env = dict(os.environ)
    icd = native.write_default_icd(tmp_path / "icd")
    if icd is not None:
        env["OCL_ICD_VENDORS"] = str(icd)
    return runner_outputs(runner, art, native.runner_env(env), feeds, names, tmp_path)


@pytest.mark.skipif(NATIVE_BUILD_ERROR is not None, reason=f"the native runtime is not built: {NATIVE_BUILD_ERROR}")
@pytest.mark.parametrize("plan", list(PLANS))
def test_c_runner_returns_f32_constant_outputs(plan, cache, tmp_path):
    """adreno-run (runtime/c, format version 3) returns float32 constant outputs beside the
    computed ones, bit-exact, on every plan; a model of constants only launches nothing."""
    for k, model in enumerate((f32_constant_model(), f32_all_constant_model())):
        cm = adreno_mlir.compile(model, cache=cache, runtime="pyopencl", **PLANS[plan])
        art = cm.save(tmp_path / f"m{k}.adreno")
        assert json.loads((art / "manifest.json").read_text())["format_version"] == 3
        feeds = _feeds()
        ref = _ort(model, feeds)
        got, proc = _run_c(art, feeds, list(ref), tmp_path)
        for name, r in ref.items():
            g = got[name].reshape(r.shape)
            if name in {"w_plus_b", "W", "k", "d"}:
                assert np.array_equal(g, r), f"{plan}: constant output {name}: {g} vs {r}"
            else:
                np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=f"{plan}: {name}")


@pytest.mark.skipif(NATIVE_BUILD_ERROR is not None, reason=f"the native runtime is not built: {NATIVE_BUILD_ERROR}")
def test_c_runtime_refuses_a_non_float_constant_output_by_name(cache, tmp_path):
    """The C API exchanges float arrays: an int64 (Shape) constant output is refused with its
    name and what to do, not misread (the Python loader runs the artifact)."""
    from tests.test_native_runtime import c_open

    path = adreno_mlir.compile(mixed_model(), cache=cache).save(tmp_path / "mixed.adreno")
    status, message = c_open(path)
    assert status == "ADRENO_ERR_FORMAT", (status, message)
    assert "output 's' is i64" in message and "adreno_mlir.load" in message, message
    got = adreno_mlir.load(path).run(_feeds())
    assert got["s"].dtype == np.int64 and list(got["s"]) == [1, 3, 4, 4]


@pytest.mark.skipif(NATIVE_BUILD_ERROR is not None, reason=f"the native runtime is not built: {NATIVE_BUILD_ERROR}")
def test_c_runtime_checks_constant_output_entries(cache, tmp_path):
    """A constant entry beyond the weights blob, misaligned, of the wrong size, or in a
    version-1 manifest is a malformed-manifest error naming the output entry."""
    from tests.test_native_runtime import _edit_manifest, c_open

    base = adreno_mlir.compile(f32_constant_model(), cache=cache).save(tmp_path / "base.adreno")

    def constant(m):
        return next(o for o in m["outputs"] if "constant" in o)["constant"]

    cases = {
        "beyond": (lambda m: constant(m).update(offset=-(-m["weights"]["bytes"] // 64) * 64 + 64), "lie beyond weights.bytes"),
        "misaligned": (lambda m: constant(m).update(offset=constant(m)["offset"] + 4), "not a multiple of 64"),
        "size": (lambda m: constant(m).update(bytes=constant(m)["bytes"] + 4), "is not the"),
        "version": (lambda m: m.update(format_version=1), "need format version 3"),
    }
    for case, (edit, phrase) in cases.items():
        path = tmp_path / f"{case}.adreno"
        shutil.copytree(base, path)
        _edit_manifest(path, edit)
        status, message = c_open(path, verify_checksums=0)
        assert status == "ADRENO_ERR_FORMAT" and phrase in message and "outputs[" in message, (case, message)
