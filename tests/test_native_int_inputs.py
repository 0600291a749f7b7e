"""Integer (token-id) inputs in the native runtime (issue 28): runtime/c opens artifacts with
i32 inputs (format version 2), takes their int32 ids through adreno_set_input_i32 /
adreno_run_typed, and checks every id against the input's [-bound, bound) before it uploads
anything; `adreno-run` reads int32/int64 .npy ids and draws random ids as `adreno-mlir run`
does; the Python binding runs such models natively instead of falling back to pyopencl.
Tolerance against onnxruntime: 1e-5 of max |ref| (fp32), as tests/test_integer_inputs.py."""

from __future__ import annotations

import ctypes
import json
import shutil
import warnings

import numpy as np
import pytest

import adreno_mlir
from adreno_mlir.runtime import native
from adreno_mlir.runtime.model import InputError
from adreno_mlir.runtime.random_inputs import random_input
from tests.test_adreno_run_tools import adreno_mlir_cli
from tests.test_integer_inputs import L, V, _embedding_model, _reference
from tests.test_native_runtime import (  # noqa: F401 - fixtures
    _edit_manifest,
    asan_dir,
    asan_env,
    c_open,
    c_options,
    cache,
    native_dir,
    run_c,
    run_env,
)

REL_TOL = 1e-5
PLANS = {"nchw": {"layout": "nchw"}, "textures": {"textures": True, "target": "adreno-740"}}
ADRENO_ERR_ARGUMENT, ADRENO_ERR_INPUT = 1, 11


def rel_err(got, ref) -> float:
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / np.abs(ref).max())


@pytest.fixture(scope="module")
def model():
    return _embedding_model()  # int64 ids [1, L] -> Gather(table [V, E]) -> ... -> y [1, L, 8]


@pytest.fixture(scope="module")
def ids_artifact(model, native_dir, cache, tmp_path_factory):  # noqa: F811
    path = tmp_path_factory.mktemp("ids") / "embedding.adreno"
    adreno_mlir.compile(model, cache=cache, runtime="pyopencl").save(path)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == 2 and manifest["inputs"][0]["dtype"] == "i32"
    assert manifest["inputs"][0]["bound"] == V
    return path


def _ids(seed: int, dtype=np.int64) -> np.ndarray:
    ids = np.random.default_rng(seed).integers(-V, V, (1, L)).astype(dtype)
    ids[0, :3] = [0, V - 1, -V]  # both ends of the range
    return ids


# --------------------------------------------------------------------------- (a) the Python binding


@pytest.mark.parametrize("plan", list(PLANS))
def test_native_path_runs_integer_inputs(plan, model, native_dir, cache, tmp_path):  # noqa: F811
    """compile(..., runtime="native") and load(..., runtime="native") run the ids model in
    the C library (no fallback, no warning under "auto"), equal to pyopencl and onnxruntime."""
    cm = adreno_mlir.compile(model, cache=cache, runtime="native", **PLANS[plan])
    assert cm.runtime == "native"
    path = cm.save(tmp_path / "m.adreno")
    with warnings.catch_warnings():
        warnings.simplefilter("error", native.NativeRuntimeWarning)
        auto = adreno_mlir.load(path, cache=cache, runtime="auto")
    loaded = adreno_mlir.load(path, cache=cache, runtime="native")
    assert auto.runtime == loaded.runtime == "native"
    for seed, dtype in ((0, np.int64), (1, np.int32)):
        ids = _ids(seed, dtype)
        ref = _reference(model, {"ids": ids.astype(np.int64)})
        expected = cm.run({"ids": ids}, runtime="pyopencl")["y"]
        assert rel_err(expected, ref) <= REL_TOL
        for m, what in ((cm, "compiled"), (loaded, "loaded"), (auto, "auto")):
            got = m.run({"ids": ids})["y"]
            assert got.shape == ref.shape
            assert rel_err(got, ref) <= REL_TOL, f"{plan}/{what} vs onnxruntime"
            assert rel_err(got, expected) <= 1e-6, f"{plan}/{what} vs pyopencl"
    prof = loaded.profile({"ids": _ids(2)}, repeat=2)  # the native profiler sets the ids with adreno_set_input_i32
    assert set(prof) == set(loaded.launch_plan.kernel_names) and all(v > 0 for v in prof.values())
    assert np.all(np.isfinite(loaded.executable.native.transfer([_ids(3)])[0]))


def test_native_path_refuses_ids_out_of_range(model, native_dir, cache):  # noqa: F811
    """The C library checks the ids itself (the executable's run, below the Python checks of
    `run(feeds)`): an id outside [-V, V) names the input, the id and the range, nothing runs,
    and the model keeps working. Ids that int32 cannot hold are refused, not wrapped."""
    cm = adreno_mlir.compile(model, cache=cache, runtime="native")
    assert cm.runtime == "native"
    good = _ids(4)
    expected = cm.run({"ids": good})["y"]
    for bad_id, where in ((V, 5), (-V - 1, 0), (2**31 - 1, 11)):
        bad = good.copy()
        bad[0, where] = bad_id
        with pytest.raises(native.NativeRuntimeError,
                           match=rf"input 0 \('ids'\) has id {bad_id} at element {where}, outside \[-{V}, {V}\)"):
            cm.executable.run([bad.astype(np.int32)])
        with pytest.raises(InputError, match=rf"input 'ids' has ids \[{bad_id}\] outside \[-{V}, {V}\)"):
            cm.run({"ids": bad})
    wraps = good.copy()
    wraps[0, 2] = 2**32 + 1  # int32 would make it 1, a valid id
    with pytest.raises(native.NativeRuntimeError,
                       match=rf"input 'ids' has id {2**32 + 1} at element 2, outside \[-{V}, {V}\)"):
        cm.executable.run([wraps])
    with pytest.raises(native.NativeRuntimeError, match="takes integer token ids"):
        cm.executable.run([good.astype(np.float32)])
    assert rel_err(cm.run({"ids": good})["y"], expected) == 0


# --------------------------------------------------------------------------- the C API


def test_c_api_for_integer_inputs(ids_artifact):
    lib = native.library()
    opts = c_options()
    handle = ctypes.c_void_p()
    err = ctypes.create_string_buffer(4096)
    assert lib.adreno_open(str(ids_artifact).encode(), ctypes.byref(opts), ctypes.byref(handle), err, len(err)) == 0, \
        err.value
    try:
        assert lib.adreno_input_dtype(handle, 0) == 1 and lib.adreno_input_bound(handle, 0) == V
        assert lib.adreno_input_dtype(handle, 1) == -1 and lib.adreno_input_bound(handle, 1) == 0
        assert lib.adreno_status_name(ADRENO_ERR_INPUT) == b"ADRENO_ERR_INPUT"
        ids = _ids(5, np.int32).reshape(-1)
        out = np.empty(L * 8, np.float32)
        ins, outs = (ctypes.c_void_p * 1)(ids.ctypes.data), (ctypes.c_void_p * 1)(out.ctypes.data)
        # the float entry points refuse an i32 input
        x = np.zeros(L, np.float32)
        assert lib.adreno_set_input(handle, 0, x.ctypes.data, L) == ADRENO_ERR_ARGUMENT
        assert b"is i32; give it with adreno_set_input_i32" in lib.adreno_error(handle)
        assert lib.adreno_run_io(handle, ins, outs) == ADRENO_ERR_ARGUMENT
        assert b"('ids') is i32 (token ids)" in lib.adreno_error(handle)
        assert b"use adreno_run_typed" in lib.adreno_error(handle)
        assert lib.adreno_set_input_i32(handle, 0, ids.ctypes.data, L - 1) == ADRENO_ERR_ARGUMENT
        assert b"takes 12 int32 ids, got 11" in lib.adreno_error(handle)
        # in range: adreno_run_typed and set_input_i32 + adreno_run give the same outputs
        assert lib.adreno_run_typed(handle, ins, outs) == 0, lib.adreno_error(handle)
        typed = out.copy()
        assert lib.adreno_set_input_i32(handle, 0, ids.ctypes.data, L) == 0
        assert lib.adreno_run(handle) == 0
        assert lib.adreno_get_output(handle, 0, out.ctypes.data, L * 8) == 0
        np.testing.assert_array_equal(out, typed)
        # out of range: refused before any upload, and a refused id is not held as given
        bad = ids.copy()
        bad[7] = -V - 1
        ins[0] = bad.ctypes.data
        assert lib.adreno_run_typed(handle, ins, outs) == ADRENO_ERR_INPUT
        message = lib.adreno_error(handle).decode()
        assert f"input 0 ('ids') has id {-V - 1} at element 7, outside [-{V}, {V})" in message, message
        assert "nothing was uploaded" in message
        assert lib.adreno_set_input_i32(handle, 0, bad.ctypes.data, L) == ADRENO_ERR_INPUT
        assert lib.adreno_run(handle) == ADRENO_ERR_ARGUMENT and b"has not been given" in lib.adreno_error(handle)
        assert lib.adreno_transfer_typed(handle, ins, outs) == ADRENO_ERR_INPUT
    finally:
        lib.adreno_close(handle)


def _bound_case(artifact, tmp_path, name, edit):
    path = tmp_path / f"{name}.adreno"
    shutil.copytree(artifact, path)
    _edit_manifest(path, edit)
    return path


@pytest.mark.parametrize("case, edit, phrase", [
    ("version-1", lambda m: m.update(format_version=1), "i32 inputs need format version 2"),
    ("no-bound", lambda m: m["inputs"][0].pop("bound"), "an i32 input needs a 'bound'"),
    ("bound-zero", lambda m: m["inputs"][0].update(bound=0), "'bound' is 0, outside [1, 2147483648]"),
    ("bound-above-int32", lambda m: m["inputs"][0].update(bound=2**31 + 1), "outside [1, 2147483648]"),
    ("bound-on-f32", lambda m: m["inputs"][0].update(dtype="f32"), "'bound' belongs to i32 inputs only"),
    ("i32-output", lambda m: m["outputs"][0].update(dtype="i32"), "output 'y' is i32"),
])
def test_malformed_integer_inputs_are_clear_errors(case, edit, phrase, ids_artifact, native_dir, run_env,  # noqa: F811
                                                   tmp_path):
    path = _bound_case(ids_artifact, tmp_path, case, edit)
    status, message = c_open(path)
    assert status == "ADRENO_ERR_FORMAT" and phrase in message, message
    proc = run_c(native_dir / "adreno-run", path, run_env, check=False)
    assert proc.returncode == 1 and phrase in proc.stderr, proc.stderr


def test_large_bounds_open(ids_artifact, native_dir, run_env, tmp_path):  # noqa: F811
    """The bound is not assumed small: up to 2^31 (every int32 id valid) opens, and --info
    prints the dtype and the bound of an integer input."""
    for bound in (V, 2**24, 2**31):
        path = ids_artifact if bound == V else _bound_case(
            ids_artifact, tmp_path, f"bound-{bound}", lambda m, b=bound: m["inputs"][0].update(bound=b))
        proc = run_c(native_dir / "adreno-run", path, run_env, "--info")
        assert f"input 0: ids [1, {L}] int32 bound {bound} (token ids in [-{bound}, {bound}))" in proc.stdout, \
            proc.stdout
        assert f"output 0: y [1, {L}, 8] float32" in proc.stdout


# --------------------------------------------------------------------------- (b)-(d) adreno-run


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_adreno_run_reads_integer_ids(dtype, model, ids_artifact, native_dir, run_env, tmp_path):  # noqa: F811
    ids = _ids(6, dtype)
    np.save(tmp_path / "ids.npy", ids)
    proc = run_c(native_dir / "adreno-run", ids_artifact, run_env, "--input", tmp_path / "ids.npy", "--output",
                 tmp_path / "y.npy", "--repeat", "2", "--warmup", "1", "--profile",
                 "--io", "pinned" if dtype == np.int32 else "direct")  # the ids through staging buffers too
    assert "random" not in proc.stdout
    got = np.load(tmp_path / "y.npy")
    assert got.dtype == np.float32 and got.shape == (1, L, 8)
    assert rel_err(got, _reference(model, {"ids": ids.astype(np.int64)})) <= REL_TOL


def test_adreno_run_draws_the_ids_adreno_mlir_run_draws(model, ids_artifact, native_dir, run_env,  # noqa: F811
                                                        tmp_path):
    for seed in (0, 7):
        proc = run_c(native_dir / "adreno-run", ids_artifact, run_env, "--output", tmp_path / f"c{seed}.npy",
                     "--repeat", "1", "--warmup", "0", "--seed", seed)
        assert f"input 'ids': random token ids uniform in [0, {V}), seed {seed}" in proc.stdout, proc.stdout
        ours = np.load(tmp_path / f"c{seed}.npy")
        adreno_mlir_cli("run", ids_artifact, "--save", tmp_path / f"py{seed}.npz", "--repeat", "1", "--seed", seed)
        theirs = np.load(tmp_path / f"py{seed}.npz")["y"]
        np.testing.assert_allclose(ours.reshape(theirs.shape), theirs, rtol=1e-5, atol=1e-6)
        ids = random_input(seed, 0, (1, L), np.int64, bound=V)
        assert rel_err(ours, _reference(model, {"ids": ids})) <= REL_TOL
    assert not np.allclose(np.load(tmp_path / "c0.npy"), np.load(tmp_path / "c7.npy"))


def test_adreno_run_refuses_ids_out_of_range(ids_artifact, native_dir, run_env, tmp_path):  # noqa: F811
    runner = native_dir / "adreno-run"
    out = tmp_path / "never.npy"
    for k, (bad_id, where, dtype) in enumerate([(V, 4, np.int64), (-V - 1, 0, np.int32), (2**40, 9, np.int64),
                                                (-(2**31), 1, np.int32)]):
        ids = _ids(8, dtype)
        ids[0, where] = bad_id
        np.save(tmp_path / f"bad{k}.npy", ids)
        proc = run_c(runner, ids_artifact, run_env, "--input", f"ids={tmp_path / f'bad{k}.npy'}", "--output", out,
                     check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.startswith("adreno-run: error: ")
        assert f"('ids') has id {bad_id} at element {where}, outside [-{V}, {V})" in proc.stderr or \
            f"input 'ids' has id {bad_id} at element {where}, outside [-{V}, {V})" in proc.stderr, proc.stderr
        assert "latency" not in proc.stdout and not out.exists()
    np.save(tmp_path / "float.npy", np.zeros((1, L), np.float32))
    proc = run_c(runner, ids_artifact, run_env, "--input", tmp_path / "float.npy", check=False)
    assert proc.returncode == 1 and "input 'ids' takes integer token ids" in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- (e) AddressSanitizer


@pytest.mark.slow  # the AddressSanitizer build, and full runs under it
def test_integer_inputs_under_address_sanitizer(model, ids_artifact, asan_dir, run_env, tmp_path):  # noqa: F811
    """ASan + LSan + UBSan on the ids artifact: --info, a run from an int64 .npy with
    --profile, a run on random ids, and a refused id (int32 and int64 files): no report."""
    env = asan_env(run_env, tmp_path)
    runner = asan_dir / "adreno-run"
    ids = _ids(9)
    np.save(tmp_path / "ids.npy", ids)
    bad = ids.astype(np.int32)
    bad[0, 3] = V
    np.save(tmp_path / "bad32.npy", bad)
    wide = ids.copy()
    wide[0, 3] = -(2**40)
    np.save(tmp_path / "bad64.npy", wide)
    runs = [(["--info"], 0), (["--input", tmp_path / "ids.npy", "--output", tmp_path / "y.npy", "--profile"], 0),
            (["--output", tmp_path / "r.npy"], 0), (["--input", tmp_path / "bad32.npy"], 1),
            (["--input", tmp_path / "bad64.npy"], 1)]
    for args, code in runs:
        proc = run_c(runner, ids_artifact, env, *args, "--repeat", "1", "--warmup", "0", check=False)
        assert proc.returncode == code, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert rel_err(np.load(tmp_path / "y.npy"), _reference(model, {"ids": ids})) <= REL_TOL


def test_bert_with_a_padded_attention_mask_through_adreno_run(native_dir, run_env, cache, tmp_path):  # noqa: F811
    """Issue 28: a text model with input_ids, attention_mask (a batch row with padding) and
    token_type_ids, all int64, matches onnxruntime through the C runtime: the mask arrives
    as an i32 input with the bound 2**24 and is converted on the device."""
    from tests.test_int_tensors import _bert, _bert_feeds, _ort

    model = _bert("additive")
    path = tmp_path / "bert.adreno"
    adreno_mlir.compile(model, cache=cache, runtime="pyopencl", target="adreno-740").save(path)
    feeds = _bert_feeds(padded=True)
    args = []
    for name, x in feeds.items():
        np.save(tmp_path / f"{name}.npy", x)
        args += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    run_c(native_dir / "adreno-run", path, run_env, *args, "--output", tmp_path / "h.npy", "--repeat", "1",
          "--warmup", "0")
    (ref,) = _ort(model, feeds)
    got = np.load(tmp_path / "h.npy").reshape(ref.shape)
    assert rel_err(got, ref) <= 1e-4
    (unpadded,) = _ort(model, _bert_feeds(padded=False))
    assert np.abs(unpadded[1] - got[1]).max() > 1e-2  # the padding was applied
