"""The native runtime (runtime/c): the C runner and the in-process fast path give the
Python runtime's outputs on every plan for every shared model; malformed artifacts are
clear errors from the C library, never crashes; the runner runs clean under
AddressSanitizer/LeakSanitizer and valgrind.

conftest builds runtime/c once per session (and sets ADRENO_MLIR_NATIVE_LIB, so the
whole suite runs through the native path); these tests also drive the library through
ctypes and the `adreno-run` executable."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import adreno_mlir
from adreno_mlir.runtime import native
from tests.conftest import MODEL_NAMES, NATIVE_BUILD_ERROR, _build_native, slow_unless

PLANS = {
    "nchw": {"layout": "nchw"},
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
    "fp16-acc32": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
}
REL_TOL = 1e-6  # the bar; the runtimes run the same kernels, so in practice 0


@pytest.fixture(scope="session")
def native_dir():
    if NATIVE_BUILD_ERROR is not None:
        pytest.skip(f"the native runtime could not be built here: {NATIVE_BUILD_ERROR}")
    return Path(os.environ["ADRENO_MLIR_NATIVE_LIB"]).parent


@pytest.fixture(scope="session")
def run_env(native_dir, tmp_path_factory):
    """Environment for adreno-run: the ICD loader it loads (the system's, or pyopencl's
    through ADRENO_RT_OPENCL_LIBRARY on a machine without one) sees the default device of
    the Python side (pyopencl's PoCL, or Intel's CPU runtime where PoCL cannot build here)."""
    env = native.runner_env()
    icd = native.write_default_icd(tmp_path_factory.mktemp("icd"))
    if icd is not None:
        env["OCL_ICD_VENDORS"] = str(icd)
    return env


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("program-cache")


def _feeds(model, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(model.input_shapes[n]).astype(np.float32) for n in model.input_names}


def run_c(runner: Path, artifact: Path, env, *args, check=True):
    proc = subprocess.run([str(runner), str(artifact), *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode >= 0, f"adreno-run died of signal {-proc.returncode}:\n{proc.stderr}"
    if check:
        assert proc.returncode == 0, f"adreno-run failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def runner_outputs(runner, artifact, env, feeds, names, tmp_path, *extra):
    args = []
    for name, x in feeds.items():
        np.save(tmp_path / f"in-{len(args)}.npy", x)
        args += ["--input", f"{name}={tmp_path / f'in-{len(args)}.npy'}"]
    outs = {name: tmp_path / f"out-{k}.npy" for k, name in enumerate(names)}
    for name, file in outs.items():
        args += ["--output", f"{name}={file}"]
    proc = run_c(runner, artifact, env, *args, "--repeat", "1", "--warmup", "0", *extra)
    return {name: np.load(file) for name, file in outs.items()}, proc


def assert_same(got, expected, what):
    for name, ref in expected.items():
        assert got[name].shape == ref.shape, f"{what}: {name} shape {got[name].shape} != {ref.shape}"
        err = float(np.abs(got[name] - ref).max()) / max(float(np.abs(ref).max()), 1e-30)
        assert err <= REL_TOL, f"{what}: output {name} differs from the Python runtime by {err:.3e} (relative)"


# --------------------------------------------------------------------------- correctness


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("name", slow_unless(MODEL_NAMES, fast={"squeezenet1_1"}))
def test_c_runner_matches_python_runtime(name, plan, model_path, native_dir, run_env, cache, tmp_path):
    """The issue's bar: adreno-run's outputs equal the Python runtime's (1e-6 relative)
    for the ten shared models on every plan; the in-process native path too."""
    cm = adreno_mlir.compile(str(model_path(name)), cache=cache, runtime="native", **PLANS[plan])
    assert cm.runtime == "native"
    feeds = _feeds(cm)
    expected = cm.run(feeds, runtime="pyopencl")
    assert_same(cm.run(feeds), expected, f"{name}/{plan} in-process native")
    path = cm.save(tmp_path / "m.adreno")
    got, proc = runner_outputs(native_dir / "adreno-run", path, run_env, feeds, cm.output_names, tmp_path)
    assert "program: artifact binary" in proc.stdout
    assert_same({k: v.reshape(cm.output_shapes[k]) for k, v in got.items()}, expected, f"{name}/{plan} adreno-run")


@pytest.mark.parametrize("plan", list(PLANS))
def test_loaded_artifact_runs_native(plan, tiny_path, cache, tmp_path):
    cm = adreno_mlir.compile(str(tiny_path), cache=cache, **PLANS[plan])
    feeds = _feeds(cm)
    expected = cm.run(feeds, runtime="pyopencl")
    m = adreno_mlir.load(cm.save(tmp_path / "t.adreno"), cache=cache, runtime="native")
    assert m.runtime == "native" and m.executable.native.program_origin == "given"
    assert_same(m.run(feeds), expected, f"load/{plan}")
    prof_native, prof_py = m.profile(feeds, repeat=3), m.profile(feeds, repeat=3, runtime="pyopencl")
    assert set(prof_native) == set(prof_py) == set(m.launch_plan.kernel_names)
    assert all(v > 0 for v in prof_native.values())


def test_runtime_selection(tiny_path, cache, monkeypatch):
    cm = adreno_mlir.compile(str(tiny_path), cache=cache, runtime="pyopencl")
    assert cm.runtime == "pyopencl" and cm.executable.native is None
    with pytest.raises(ValueError, match="runtime='native'"):
        cm.run(_feeds(cm), runtime="native")
    with pytest.raises(adreno_mlir.CompileError, match="runtime= must be one of"):
        adreno_mlir.compile(str(tiny_path), runtime="fast")
    monkeypatch.setenv("ADRENO_MLIR_RUNTIME", "bogus")
    with pytest.raises(adreno_mlir.CompileError, match="ADRENO_MLIR_RUNTIME must be one of"):
        adreno_mlir.compile(str(tiny_path))
    monkeypatch.setenv("ADRENO_MLIR_RUNTIME", "pyopencl")
    assert adreno_mlir.compile(str(tiny_path), cache=cache).runtime == "pyopencl"


def test_native_required_but_not_built(tiny_path, cache, monkeypatch, tmp_path):
    monkeypatch.setenv("ADRENO_MLIR_NATIVE_LIB", str(tmp_path / "nope.so"))
    with pytest.raises(native.NativeRuntimeError, match="does not exist"):
        adreno_mlir.compile(str(tiny_path), cache=cache, runtime="native")
    monkeypatch.delenv("ADRENO_MLIR_NATIVE_LIB")
    monkeypatch.setattr(native, "DEFAULT_BUILD_DIR", tmp_path)
    assert native.library_path() is None
    assert adreno_mlir.compile(str(tiny_path), cache=cache).runtime == "pyopencl"  # auto: quiet fallback
    with pytest.raises(native.NativeRuntimeError, match="build-native"):
        adreno_mlir.compile(str(tiny_path), cache=cache, runtime="native")


def test_concurrent_runs_of_one_native_model(tiny_path, cache):
    """One C model runs one inference at a time; the binding serializes callers."""
    from concurrent.futures import ThreadPoolExecutor

    cm = adreno_mlir.compile(str(tiny_path), cache=cache, runtime="native")
    feeds = [_feeds(cm, seed) for seed in range(8)]
    expected = [cm.run(f, runtime="pyopencl") for f in feeds]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda k: cm.run(feeds[k % 8]), range(32)))
    for k, got in enumerate(results):
        assert_same(got, expected[k % 8], f"thread run {k}")


# --------------------------------------------------------------------------- the C API


@pytest.fixture(scope="module")
def tiny_artifact(tiny_path, cache, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "tiny.adreno"
    adreno_mlir.compile(str(tiny_path), cache=cache, runtime="pyopencl").save(path)
    return path


@pytest.fixture(scope="module")
def texture_artifact(tiny_path, cache, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "tiny-tex.adreno"
    adreno_mlir.compile(str(tiny_path), cache=cache, runtime="pyopencl", **PLANS["nchw4c-textures"]).save(path)
    return path


def c_options(**fields) -> native._Options:
    """adreno_options for pyopencl's default context (PoCL), through pyopencl's ICD loader
    (what the binding passes), with `fields` set."""
    from adreno_mlir.runtime.device import default_context

    ctx = default_context()
    opts = native._Options()
    native.library().adreno_options_init(ctypes.byref(opts))
    opts.context, opts.device = ctx.int_ptr, ctx.devices[0].int_ptr
    opts.opencl_library = os.fsencode(native.pyopencl_opencl_library())
    for name, value in fields.items():
        setattr(opts, name, value)
    return opts


def c_open(path: Path, **fields):
    """adreno_open through ctypes on pyopencl's PoCL context: (status name, message)."""
    lib = native.library()
    opts = c_options(**fields)
    handle = ctypes.c_void_p()
    err = ctypes.create_string_buffer(4096)
    status = lib.adreno_open(str(path).encode(), ctypes.byref(opts), ctypes.byref(handle), err, len(err))
    if status == 0:
        lib.adreno_close(handle)
    return lib.adreno_status_name(status).decode(), err.value.decode()


def _edit_manifest(path: Path, edit) -> None:
    file = path / "manifest.json"
    manifest = json.loads(file.read_text())
    edit(manifest)
    file.write_text(json.dumps(manifest))


def _truncate(path: Path, name: str, keep: int) -> None:
    data = (path / name).read_bytes()
    (path / name).write_bytes(data[:keep])


def _flip(path: Path, name: str) -> None:
    data = bytearray((path / name).read_bytes())
    data[len(data) // 2] ^= 0x40
    (path / name).write_bytes(bytes(data))


def _first_weight_launch(m):
    for k, launch in enumerate(m["launches"]):
        for a in launch["args"]:
            if a["kind"] == "weight":
                return k
    raise AssertionError("no launch takes a weight")


def _local_3_of_4(m):
    launch = m["launches"][0]
    launch["global"] = [4] * len(launch["global"])
    launch["local"] = [3] * len(launch["global"])


# (mutation, expected status, phrase of the message)
MALFORMED = {
    # a version neither reader knows (the Python loader reads 1 and 2, the C runtime 1)
    "format-version": (lambda p: _edit_manifest(p, lambda m: m.update(format_version=99)),
                       "ADRENO_ERR_VERSION", "format version 99"),
    "not-an-artifact": (lambda p: (p / "manifest.json").unlink(), "ADRENO_ERR_IO", "is not an adreno-mlir artifact"),
    "other-format": (lambda p: _edit_manifest(p, lambda m: m.update(format="onnx")),
                     "ADRENO_ERR_VERSION", "not an adreno-mlir artifact manifest"),
    "invalid-json": (lambda p: _truncate(p, "manifest.json", 200), "ADRENO_ERR_FORMAT", "is not valid JSON: line"),
    "truncated-weights": (lambda p: _truncate(p, "weights.bin", 1000), "ADRENO_ERR_CORRUPT", "is truncated"),
    "flipped-weights": (lambda p: _flip(p, "weights.bin"), "ADRENO_ERR_CORRUPT", "sha256 does not match"),
    "missing-source": (lambda p: (p / "kernels.cl").unlink(), "ADRENO_ERR_IO", "kernels.cl is missing"),
    "missing-kernel": (lambda p: _edit_manifest(p, lambda m: m["launches"][3].update(kernel="no_such_kernel")),
                       "ADRENO_ERR_BUILD", "runs kernel 'no_such_kernel', which is not in the program"),
    "missing-argument": (lambda p: _edit_manifest(p, lambda m: m["launches"][0]["args"].pop()),
                         "ADRENO_ERR_FORMAT", "which takes"),
    "weight-size": (lambda p: _edit_manifest(p, lambda m: m["weights"]["entries"][0].update(bytes=12)),
                    "ADRENO_ERR_FORMAT", "is not count"),
    "weight-beyond-blob": (lambda p: _edit_manifest(
        p, lambda m: m["weights"]["entries"][-1].update(offset=m["weights"]["bytes"])),
        "ADRENO_ERR_FORMAT", "lie beyond weights.bytes"),
    "weight-misaligned": (lambda p: _edit_manifest(p, lambda m: m["weights"]["entries"][1].update(offset=4)),
                          "ADRENO_ERR_FORMAT", "is not a multiple of 64"),
    "small-input-buffer": (lambda p: _edit_manifest(
        p, lambda m: m["allocations"][m["inputs"][0]["allocation"]].update(bytes=16)),
        "ADRENO_ERR_FORMAT", "fewer than the"),
    "allocation-out-of-range": (lambda p: _edit_manifest(
        p, lambda m: m["launches"][0]["args"][0].update(kind="allocation", id=len(m["allocations"]))),
        "ADRENO_ERR_FORMAT", "'id' is"),
    "weight-arg-out-of-range": (lambda p: _edit_manifest(
        p, lambda m: m["launches"][_first_weight_launch(m)]["args"][1].update(kind="weight", id=10**6)),
        "ADRENO_ERR_FORMAT", "'id' is 1000000, outside"),
    "local-does-not-divide": (lambda p: _edit_manifest(p, _local_3_of_4), "ADRENO_ERR_FORMAT", "does not divide"),
    "unknown-arg-kind": (lambda p: _edit_manifest(p, lambda m: m["launches"][0]["args"][0].update(kind="f64")),
                         "ADRENO_ERR_FORMAT", "unknown argument kind 'f64'"),
    "path-escape": (lambda p: _edit_manifest(p, lambda m: m["program"].update(source="../../etc/passwd")),
                    "ADRENO_ERR_FORMAT", "must be relative and stay inside the artifact"),
    "no-checksum": (lambda p: _edit_manifest(p, lambda m: m["files"].pop("weights.bin")),
                    "ADRENO_ERR_FORMAT", "no {sha256, bytes} entry for weights.bin"),
    "wrong-type": (lambda p: _edit_manifest(p, lambda m: m.update(launches={})),
                   "ADRENO_ERR_FORMAT", "'launches' must be an array"),
    "deep-nesting": (lambda p: (p / "manifest.json").write_text("[" * 100000), "ADRENO_ERR_FORMAT",
                     "nested too deeply"),
    "duplicate-key": (lambda p: (p / "manifest.json").write_text(
        (p / "manifest.json").read_text().replace('"format_version": 1', '"format_version": 1, "format_version": 2',
                                                  1)), "ADRENO_ERR_FORMAT", "duplicate key"),
    "file-not-directory": (lambda p: (shutil.rmtree(p), p.write_text("x")), "ADRENO_ERR_IO",
                           "artifacts are directories"),
    "symlink-escape": (lambda p: _link_outside(p, "weights.bin"), "ADRENO_ERR_FORMAT", "leads outside the artifact"),
    "fifo-weights": (lambda p: ((p / "weights.bin").unlink(), os.mkfifo(p / "weights.bin")), "ADRENO_ERR_IO",
                     "is not a regular file"),
    "shape-overflow": (lambda p: _edit_manifest(p, lambda m: m["inputs"][0].update(shape=[2**40, 2**40, 4, 4])),
                       "ADRENO_ERR_FORMAT", "too many elements"),
    "shared-input-allocation": (lambda p: _edit_manifest(
        p, lambda m: m["inputs"].append(dict(m["inputs"][0], name="again"))), "ADRENO_ERR_FORMAT",
        "shares allocation"),
    # the first extent too large, the others kept (a launch with a local size must keep its rank)
    "global-too-large": (lambda p: _edit_manifest(p, lambda m: m["launches"][0].update(
        {"global": [2**33, *m["launches"][0]["global"][1:]]})),
                         "ADRENO_ERR_FORMAT", "must be an integer in [1, 2147483647]"),
    "binaries-wrong-type": (lambda p: _edit_manifest(p, lambda m: m.update(binaries={})), "ADRENO_ERR_FORMAT",
                            "'binaries' must be an array"),
    "integer-out-of-range": (lambda p: _edit_manifest(p, lambda m: m["weights"]["entries"][0].update(offset=10**30)),
                             "ADRENO_ERR_FORMAT", "'offset' is out of range"),
}


def _link_outside(path: Path, name: str) -> None:
    outside = path.parent / f"outside-{path.name}-{name}"
    shutil.copy(path / name, outside)
    (path / name).unlink()
    (path / name).symlink_to(outside)


def _broken(artifact: Path, case: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{case}.adreno"
    shutil.copytree(artifact, path)
    MALFORMED[case][0](path)
    return path


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_artifact_is_a_clear_error(case, tiny_artifact, native_dir, run_env, tmp_path):
    path = _broken(tiny_artifact, case, tmp_path)
    _, status, phrase = MALFORMED[case]
    got_status, message = c_open(path)
    assert got_status == status, message
    assert phrase in message
    proc = run_c(native_dir / "adreno-run", path, run_env, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("adreno-run: error: ") and phrase in proc.stderr, proc.stderr


@pytest.mark.parametrize("case", ["duplicate-key", "format-version", "truncated-weights", "missing-source",
                                  "symlink-escape", "fifo-weights"])
def test_python_loader_refuses_what_the_c_runtime_refuses(case, tiny_artifact, tmp_path):
    """The two readers of the format agree: what adreno_open refuses, load() refuses."""
    path = _broken(tiny_artifact, case, tmp_path)
    with pytest.raises(adreno_mlir.CompileError):
        adreno_mlir.load(path)


def _scalar_artifact(path: Path, value: float) -> Path:
    """A hand-made artifact whose one kernel writes its f32 argument to the output."""
    from adreno_mlir.artifact import save_artifact
    from adreno_mlir.runtime.plan import Arg, BufferAlloc, Launch, Plan, Tensor

    plan = Plan(allocations=(BufferAlloc(4), BufferAlloc(4)), weights=(),
                inputs=(Tensor("x", (1,), "f32", 0),), outputs=(Tensor("y", (1,), "f32", 1),),
                launches=(Launch("k", (Arg("allocation", 0), Arg("allocation", 1), Arg("f32", value=value)), (1,),
                                 None),))
    source = "__kernel void k(__global const float *x, __global float *y, float a) { y[0] = a + 0.0f * x[0]; }\n"
    return save_artifact(path, plan=plan, weights=[], source=source, target="pocl-cpu", options={},
                         plan_description="hand-made")


def test_manifest_numbers_do_not_depend_on_the_locale(native_dir, tmp_path):
    """Regression: the C reader parsed numbers with strtod in the caller's locale, so in a
    process with a decimal-comma locale (de_DE) the kernel argument 0.5 became 0."""
    if shutil.which("localedef") is None:
        pytest.skip("localedef is not installed, so no decimal-comma locale can be made")
    loc = tmp_path / "loc"
    loc.mkdir()
    made = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(loc / "de_DE.UTF-8")], capture_output=True,
                          text=True, check=False)
    if not (loc / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef could not make de_DE.UTF-8: {made.stderr.strip()}")
    art = _scalar_artifact(tmp_path / "scalar.adreno", 0.5)
    script = (
        "import locale, numpy as np, adreno_mlir\n"
        "locale.setlocale(locale.LC_ALL, 'de_DE.UTF-8')\n"
        "assert locale.localeconv()['decimal_point'] == ','\n"
        f"m = adreno_mlir.load({str(art)!r}, runtime='native')\n"
        "print(float(m.run({'x': np.zeros(1, np.float32)})['y'][0]))\n")
    proc = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, LOCPATH=str(loc)), capture_output=True,
                          text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.strip()) == 0.5


def test_run_io_leaves_no_stale_state(tiny_artifact):
    """Regression: after adreno_run_io, adreno_get_output returned the outputs of an older
    adreno_run in direct mode but the new ones in pinned mode; now both refuse until the
    next adreno_run, and adreno_run refuses inputs that were not given again."""
    lib = native.library()
    for io in ("direct", "pinned"):
        opts = c_options(io_mode=native.IO_MODES[io])
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        assert lib.adreno_open(str(tiny_artifact).encode(), ctypes.byref(opts), ctypes.byref(handle), err, 512) == 0
        try:
            x = np.random.default_rng(0).standard_normal(12288).astype(np.float32)
            y = np.zeros(10, np.float32)
            assert lib.adreno_run(handle) == 1 and b"has not been given" in lib.adreno_error(handle)
            assert lib.adreno_set_input(handle, 0, x.ctypes.data, x.size) == 0
            assert lib.adreno_run(handle) == 0
            assert lib.adreno_get_output(handle, 0, y.ctypes.data, y.size) == 0 and y.any()
            ins, outs = (ctypes.c_void_p * 1)(x.ctypes.data), (ctypes.c_void_p * 1)(y.ctypes.data)
            assert lib.adreno_run_io(handle, ins, outs) == 0
            assert lib.adreno_get_output(handle, 0, y.ctypes.data, y.size) == 1
            assert b"call adreno_run first" in lib.adreno_error(handle)
            assert lib.adreno_run(handle) == 1
        finally:
            lib.adreno_close(handle)


def test_image_larger_than_the_device_is_a_clear_error(texture_artifact, native_dir, run_env, tmp_path):
    path = tmp_path / "huge.adreno"
    shutil.copytree(texture_artifact, path)

    def grow(m):
        image = next(a for a in m["allocations"] if a["kind"] == "image")
        image["width"] = 1 << 24

    _edit_manifest(path, grow)
    status, message = c_open(path)
    assert status == "ADRENO_ERR_DEVICE" and "image limit" in message and "recompile" in message
    proc = run_c(native_dir / "adreno-run", path, run_env, check=False)
    assert proc.returncode == 1 and "image limit" in proc.stderr


def test_unusable_binary_falls_back_to_source(tiny_artifact, native_dir, run_env, tmp_path):
    """A binary the driver refuses (here: garbage with a correct checksum) is not an
    error: the source is built instead, and the outputs are unchanged."""
    path = tmp_path / "badbin.adreno"
    shutil.copytree(tiny_artifact, path)
    manifest = json.loads((path / "manifest.json").read_text())
    entry = manifest["binaries"][0]
    garbage = b"not a program binary" * 10
    (path / entry["file"]).write_bytes(garbage)
    import hashlib

    manifest["files"][entry["file"]] = {"sha256": hashlib.sha256(garbage).hexdigest(), "bytes": len(garbage)}
    (path / "manifest.json").write_text(json.dumps(manifest))
    proc = run_c(native_dir / "adreno-run", path, run_env)
    assert "program: built from source" in proc.stdout


def test_runner_input_errors(tiny_artifact, native_dir, run_env, tmp_path):
    runner = native_dir / "adreno-run"
    np.save(tmp_path / "wrong.npy", np.zeros((1, 3, 8, 8), np.float32))
    np.save(tmp_path / "f64.npy", np.zeros((1, 3, 64, 64)))
    (tmp_path / "junk.npy").write_bytes(b"hello")
    cases = [
        (["--input", tmp_path / "wrong.npy"], "has shape [1, 3, 8, 8]; input 'input' of the model has shape"),
        (["--input", tmp_path / "f64.npy"], "must be float32"),
        (["--input", tmp_path / "junk.npy"], "is not a .npy file"),
        (["--input", f"nope={tmp_path / 'wrong.npy'}"], "the model has no such input"),
        (["--input", tmp_path / "missing.npy"], "cannot open"),
        (["--device", "no-such-device"], "no OpenCL device matches 'no-such-device'"),
    ]
    for args, phrase in cases:
        proc = run_c(runner, tiny_artifact, run_env, *args, check=False)
        assert proc.returncode == 1 and phrase in proc.stderr, (args, proc.stderr)
    proc = run_c(runner, tiny_artifact, run_env, "--bogus", check=False)
    assert proc.returncode == 2 and "usage" in proc.stderr


# --------------------------------------------------------------------------- the OpenCL library


def test_missing_opencl_library_is_a_clear_error(tiny_artifact, native_dir, run_env, tmp_path):
    """The runtime dlopens OpenCL at run time: a library that is not there, named by
    ADRENO_RT_OPENCL_LIBRARY or by --opencl-library (which wins over the variable), is an
    error naming the path, dlerror's reason and what to do; so is finding none at all."""
    runner = native_dir / "adreno-run"
    env = dict(run_env, ADRENO_RT_OPENCL_LIBRARY="/nonexistent/libOpenCL.so")
    proc = run_c(runner, tiny_artifact, env, check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("adreno-run: error: "), proc.stderr
    assert "ADRENO_RT_OPENCL_LIBRARY names: /nonexistent/libOpenCL.so (" in proc.stderr, proc.stderr
    assert "No such file or directory" in proc.stderr and "unset it" in proc.stderr, proc.stderr
    proc = run_c(runner, tiny_artifact, env, "--opencl-library", "/nonexistent/x.so", check=False)
    assert proc.returncode == 1 and "--opencl-library) names: /nonexistent/x.so (" in proc.stderr, proc.stderr
    assert "/nonexistent/libOpenCL.so" not in proc.stderr, proc.stderr
    # The artifact is checked before OpenCL is loaded: a malformed one says so, OpenCL or not.
    proc = run_c(runner, _broken(tiny_artifact, "format-version", tmp_path), env, check=False)
    assert proc.returncode == 1 and "format version 99" in proc.stderr, proc.stderr
    if native.system_opencl_library() is None:  # a machine without an ICD loader, as here: the search fails
        proc = run_c(runner, tiny_artifact, {k: v for k, v in run_env.items() if k != "ADRENO_RT_OPENCL_LIBRARY"},
                     check=False)
        assert proc.returncode == 1, proc.stderr
        for phrase in ("cannot find an OpenCL library: tried libOpenCL.so.1 (", "; libOpenCL.so (",
                       "install an OpenCL driver", "ADRENO_RT_OPENCL_LIBRARY=", "--opencl-library"):
            assert phrase in proc.stderr, (phrase, proc.stderr)


@pytest.mark.parametrize("how,library", [("option", "libm.so.6"), ("environment", "libc.so.6")])
def test_library_without_opencl_entry_points_is_a_clear_error(how, library, tiny_artifact, native_dir, run_env):
    env = dict(run_env, ADRENO_RT_OPENCL_LIBRARY=library) if how == "environment" else run_env
    args = ["--opencl-library", library] if how == "option" else []
    proc = run_c(native_dir / "adreno-run", tiny_artifact, env, *args, check=False)
    assert proc.returncode == 1, proc.stderr
    phrase = f"{library} (it has no clGetPlatformIDs, nor 30 more of the 31 OpenCL entry points the runtime uses"
    assert phrase in proc.stderr, proc.stderr


def test_library_missing_one_entry_point_names_it(tiny_artifact, native_dir, run_env, tmp_path):
    """An "OpenCL library" with every entry point the runtime calls but clCreateImage (as
    an OpenCL 1.1 one would be) is refused before any call, naming clCreateImage."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in library")
    header = (native.SOURCE_DIR / "src" / "cl_api.h").read_text()
    names = re.findall(r"X\((?:[^,()]|\*)+,\s*(\w+),", header)
    assert len(names) == 31 and "CreateImage" in names, names
    (tmp_path / "fake.c").write_text("".join(f"int cl{n}(void) {{ return -1; }}\n" for n in names
                                             if n != "CreateImage"))
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / "libfake.so"), str(tmp_path / "fake.c")], check=True)
    proc = run_c(native_dir / "adreno-run", tiny_artifact, run_env, "--opencl-library", tmp_path / "libfake.so",
                 check=False)
    assert proc.returncode == 1, proc.stderr
    assert "libfake.so (it has no clCreateImage: not an OpenCL 1.2 library)" in proc.stderr, proc.stderr


def test_python_binding_loads_pyopencls_opencl_library(tiny_path, tiny_artifact, native_dir, run_env, cache):
    """The binding names pyopencl's ICD loader (adreno_options.opencl_library), so that
    the C code calls pyopencl's context through the loader that made it, whatever
    ADRENO_RT_OPENCL_LIBRARY says (here: a path that does not exist); adreno-run says
    which library it loaded."""
    expected = native.pyopencl_opencl_library()
    assert expected is not None and expected.name.startswith("libOpenCL"), expected
    script = (
        "import adreno_mlir\n"
        "from adreno_mlir.runtime import native\n"
        f"m = adreno_mlir.compile({str(tiny_path)!r}, runtime='native')\n"
        "assert m.runtime == 'native'\n"
        "print(native.library().adreno_opencl_library().decode())\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ, ADRENO_RT_OPENCL_LIBRARY="/nonexistent/libOpenCL.so"))
    assert proc.returncode == 0, proc.stderr
    assert os.path.samefile(proc.stdout.split()[-1], expected), proc.stdout
    cm = adreno_mlir.compile(str(tiny_path), cache=cache, runtime="native")  # this process, too
    assert cm.runtime == "native" and os.path.samefile(native.library().adreno_opencl_library().decode(), expected)
    proc = run_c(native_dir / "adreno-run", tiny_artifact, run_env, "--repeat", "1", "--warmup", "0")
    loaded = next(line.split(None, 1)[1] for line in proc.stdout.splitlines() if line.startswith("opencl:"))
    if "ADRENO_RT_OPENCL_LIBRARY" in run_env:
        assert os.path.samefile(loaded, run_env["ADRENO_RT_OPENCL_LIBRARY"]), proc.stdout
    assert Path(loaded).is_absolute() and "OpenCL" in Path(loaded).name, proc.stdout


def test_runner_env_runs_adreno_run_from_a_clean_environment(tiny_artifact, native_dir, tmp_path):
    """Regression: `runner_env` gives adreno-run everything it needs where the only OpenCL
    is pip's, from an environment no Python process has touched (no PYOPENCL_HOME: the
    ocl-icd in pyopencl's wheels dies of SIGSEGV in its first call without it); and the
    runtime refuses that loader without PYOPENCL_HOME, saying so, instead of crashing."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYOPENCL_HOME", "ADRENO_RT_OPENCL_LIBRARY")}
    icd = native.write_default_icd(tmp_path / "icd")
    if icd is not None:
        base["OCL_ICD_VENDORS"] = str(icd)
    loader = native.pyopencl_opencl_library()
    if "/pyopencl/.libs/" in str(loader.resolve()):  # the wheel's own loader
        proc = run_c(native_dir / "adreno-run", tiny_artifact, dict(base, ADRENO_RT_OPENCL_LIBRARY=str(loader)),
                     check=False)
        assert proc.returncode == 1, proc.stderr
        assert "pyopencl's ICD loader: it crashes unless PYOPENCL_HOME is set; export PYOPENCL_HOME=" in proc.stderr
    env = native.runner_env(base)
    if native.system_opencl_library() is None:
        assert env["PYOPENCL_HOME"] and os.path.samefile(env["ADRENO_RT_OPENCL_LIBRARY"],
                                                         native.pyopencl_opencl_library())
    proc = run_c(native_dir / "adreno-run", tiny_artifact, env, "--repeat", "1", "--warmup", "0")
    assert "latency:" in proc.stdout


def test_another_opencl_library_in_one_process_is_refused(tiny_artifact, tmp_path):
    """One OpenCL library per process: once loaded, adreno_open naming another one is an
    ADRENO_ERR_OPENCL_LIBRARY error saying which one is in use; the same file by another
    path (a symbolic link) is the same library."""
    assert c_open(tiny_artifact) == ("ADRENO_OK", "")
    status, message = c_open(tiny_artifact, opencl_library=b"/nonexistent/x.so")
    assert status == "ADRENO_ERR_OPENCL_LIBRARY", message
    assert "names the OpenCL library /nonexistent/x.so, but this process already uses" in message
    assert str(native.pyopencl_opencl_library().name) in message
    link = tmp_path / "libOpenCL.so.1"
    link.symlink_to(native.pyopencl_opencl_library())
    assert c_open(tiny_artifact, opencl_library=os.fsencode(link)) == ("ADRENO_OK", "")
    assert c_open(tiny_artifact, opencl_library=None) == ("ADRENO_OK", "")  # none asked for: the loaded one


def test_runtime_links_no_opencl(native_dir):
    """Building needs no OpenCL: no OpenCL header is included, CMake looks for no OpenCL,
    and neither the library nor the runner has libOpenCL among its NEEDED entries."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    for binary in (native_dir / "libadreno_rt.so", native_dir / "adreno-run"):
        dynamic = subprocess.run([readelf, "-d", str(binary)], capture_output=True, text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
        assert needed and not [n for n in needed if "opencl" in n.lower()], (binary, needed)
    for source in native.SOURCE_DIR.rglob("*"):
        if source.suffix in (".c", ".h") and "build" not in source.parts:
            assert not re.search(r"#\s*include\s*[<\"](CL|OpenCL)/", source.read_text()), source
    cmake = (native.SOURCE_DIR / "CMakeLists.txt").read_text()
    assert "find_package(OpenCL" not in cmake and "OpenCL::OpenCL" not in cmake


def test_c_api_argument_errors(tiny_artifact):
    lib = native.library()
    opts = c_options()
    handle = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    assert lib.adreno_open(str(tiny_artifact).encode(), ctypes.byref(opts), ctypes.byref(handle), err, 512) == 0
    try:
        x = np.zeros(10, np.float32)
        assert lib.adreno_set_input(handle, 0, x.ctypes.data, 10) == 1
        assert b"takes 12288 floats, got 10" in lib.adreno_error(handle)
        assert lib.adreno_set_input(handle, 5, x.ctypes.data, 10) == 1
        assert b"no input 5" in lib.adreno_error(handle)
        assert lib.adreno_profile(handle, 0, None, None) == 1
    finally:
        lib.adreno_close(handle)
    lib.adreno_close(None)  # ignored
    assert lib.adreno_open(None, None, ctypes.byref(handle), err, 512) == 1 and b"path is NULL" in err.value


# --------------------------------------------------------------------------- memory checkers


@pytest.fixture(scope="session")
def asan_dir():
    if NATIVE_BUILD_ERROR is not None:
        pytest.skip(f"the native runtime could not be built here: {NATIVE_BUILD_ERROR}")
    return _build_native(sanitize=True)


def asan_env(run_env, tmp_path):
    supp = tmp_path / "lsan.supp"
    # Leaks inside the OpenCL driver and loader are theirs, not ours (PoCL, or Intel's CPU
    # runtime where it is the default device: libintelocl and the libraries it loads).
    supp.write_text("".join(f"leak:{lib}\n" for lib in (
        "libpocl", "libOpenCL", "libhwloc", "libLLVM", "libintelocl", "libtbb", "libcommon_clang", "libtcm",
        "libxptifw", "libqkmalloc")))
    return dict(run_env, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86",
                LSAN_OPTIONS=f"suppressions={supp}", UBSAN_OPTIONS="halt_on_error=1:exitcode=87")


@pytest.mark.slow  # the AddressSanitizer build, and full runs under it
@pytest.mark.parametrize("plan", list(PLANS))
def test_runner_under_address_sanitizer(plan, tiny_path, model_path, asan_dir, run_env, cache, tmp_path):
    """AddressSanitizer + LeakSanitizer + UBSan on a full load/run/profile/close of a
    model on every plan (and squeezenet on the default plan): no error, no leak."""
    env = asan_env(run_env, tmp_path)
    models = [tiny_path] + ([model_path("squeezenet1_1")] if plan == "nchw" else [])
    for k, model in enumerate(models):
        cm = adreno_mlir.compile(str(model), cache=cache, runtime="pyopencl", **PLANS[plan])
        feeds = _feeds(cm)
        expected = cm.run(feeds)
        art = cm.save(tmp_path / f"m{k}.adreno")
        got, proc = runner_outputs(asan_dir / "adreno-run", art, env, feeds, cm.output_names, tmp_path, "--profile")
        assert "ERROR: AddressSanitizer" not in proc.stderr and "LeakSanitizer" not in proc.stderr, proc.stderr
        assert_same({n: v.reshape(cm.output_shapes[n]) for n, v in got.items()}, expected, f"asan {plan}")


@pytest.mark.slow  # the AddressSanitizer build
def test_malformed_artifacts_under_address_sanitizer(tiny_artifact, texture_artifact, asan_dir, run_env, tmp_path):
    env = asan_env(run_env, tmp_path)
    for case, (_, _, phrase) in MALFORMED.items():
        path = _broken(tiny_artifact, case, tmp_path)
        proc = run_c(asan_dir / "adreno-run", path, env, check=False)
        assert proc.returncode == 1, f"{case}: exit {proc.returncode}\n{proc.stderr}"
        assert phrase in proc.stderr and "Sanitizer" not in proc.stderr, f"{case}:\n{proc.stderr}"


# Errors inside the OpenCL driver (PoCL) and the ICD loader (the system's ocl-icd, or
# pyopencl's libOpenCL-*.so) are theirs; what glibc's dlopen allocates for a loaded
# library stays reachable through its link map for the life of the process (the runtime
# keeps its OpenCL library loaded until exit): not leaks of ours.
VALGRIND_SUPPRESSIONS = """\
{
   opencl-driver-leak
   Memcheck:Leak
   ...
   obj:*libpocl*
}
{
   opencl-driver-cond
   Memcheck:Cond
   ...
   obj:*libpocl*
}
{
   opencl-driver-value8
   Memcheck:Value8
   ...
   obj:*libpocl*
}
{
   opencl-loader-leak
   Memcheck:Leak
   ...
   obj:*libOpenCL*
}
{
   opencl-loader-cond
   Memcheck:Cond
   ...
   obj:*libOpenCL*
}
{
   opencl-loader-value8
   Memcheck:Value8
   ...
   obj:*libOpenCL*
}
{
   dlopen-leak
   Memcheck:Leak
   ...
   fun:_dl_open
}
{
   dlopen-catch-leak
   Memcheck:Leak
   ...
   fun:_dl_catch_exception
}
"""

# Cases that fail before the OpenCL program is built: PoCL's JIT under valgrind's CPU
# emulation takes minutes per kernel, so the full runs use AddressSanitizer instead.
VALGRIND_CASES = ["format-version", "not-an-artifact", "invalid-json", "truncated-weights", "flipped-weights",
                  "missing-source", "weight-size", "small-input-buffer", "local-does-not-divide", "path-escape",
                  "deep-nesting", "unknown-arg-kind", "duplicate-key", "file-not-directory", "symlink-escape",
                  "shape-overflow", "integer-out-of-range"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None and not os.environ.get("CI"), reason="valgrind not installed")
def test_malformed_artifacts_under_valgrind(tiny_artifact, native_dir, run_env, tmp_path):
    supp = tmp_path / "valgrind.supp"
    supp.write_text(VALGRIND_SUPPRESSIONS)
    for case in VALGRIND_CASES:
        path = _broken(tiny_artifact, case, tmp_path)
        proc = subprocess.run(
            ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
             f"--suppressions={supp}", str(native_dir / "adreno-run"), str(path)],
            env=run_env, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 1, f"{case}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
        assert MALFORMED[case][2] in proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None and not os.environ.get("CI"), reason="valgrind not installed")
def test_opencl_library_errors_under_valgrind(tiny_artifact, native_dir, run_env, tmp_path):
    """The loader's error paths under memcheck: no library there, a library without the
    entry points (opened, then closed), and the ICD loader with no driver (empty
    OCL_ICD_VENDORS: loaded, no platform): each a clear error, no definite leak."""
    supp = tmp_path / "valgrind.supp"
    supp.write_text(VALGRIND_SUPPRESSIONS)
    (tmp_path / "no-vendors").mkdir()
    loader = str(native.pyopencl_opencl_library())
    cases = [
        ({"ADRENO_RT_OPENCL_LIBRARY": "/nonexistent/libOpenCL.so"}, [], "/nonexistent/libOpenCL.so ("),
        ({}, ["--opencl-library", "libm.so.6"], "it has no clGetPlatformIDs"),
        ({"OCL_ICD_VENDORS": str(tmp_path / "no-vendors"), "PYOPENCL_HOME": str(Path(loader).parents[1])},
         ["--opencl-library", loader], "no OpenCL platform found"),
    ]
    for extra_env, args, phrase in cases:
        proc = subprocess.run(
            ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
             f"--suppressions={supp}", str(native_dir / "adreno-run"), str(tiny_artifact), *args],
            env=dict(run_env, **extra_env), capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 1, f"{args} {extra_env}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
        assert phrase in proc.stderr, proc.stderr


def test_closed_native_model_refuses_calls(tiny_path, cache):
    """close() while another thread runs waits for it; calls after close() are an error,
    not a use of freed C memory."""
    from concurrent.futures import ThreadPoolExecutor

    cm = adreno_mlir.compile(str(tiny_path), cache=cache, runtime="native")
    feeds = _feeds(cm)
    nat = cm.executable.native
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(lambda: [cm.run(feeds) for _ in range(20)])
        nat.close()
        try:
            running.result()
        except native.NativeRuntimeError as e:
            assert "closed" in str(e)
    with pytest.raises(native.NativeRuntimeError, match="closed"):
        cm.run(feeds)
