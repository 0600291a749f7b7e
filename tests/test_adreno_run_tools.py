"""The tools of issue 27 around the native runner: `adreno-run --info` (what a model is,
without running it), `adreno-run --profile` (device time per ONNX node, from the launch
plan's `node` names the C runtime reads: adreno_launch_node), and the one random-input
generator (adreno_mlir/runtime/random_inputs.py) that `adreno-mlir run` and `adreno-run`
both draw from, so one artifact run without --input gives one answer."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.runtime.random_inputs import random_input
from tests.test_native_runtime import _edit_manifest, native_dir, run_c, run_env  # noqa: F401 - fixtures

MASK = (1 << 64) - 1
NODES = ("stem_conv", "skip_add", "out_relu")


def two_input_model() -> onnx.ModelProto:
    """relu(conv(a) + b): two inputs, so input numbering matters to the generator."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3, "w")
    nodes = [
        helper.make_node("Conv", ["a", "w"], ["c"], name=NODES[0], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "b"], ["d"], name=NODES[1]),
        helper.make_node("Relu", ["d"], ["y"], name=NODES[2]),
    ]
    graph = helper.make_graph(
        nodes, "two_inputs",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4, 8, 8]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tools")
    onnx.save(two_input_model(), str(folder / "two.onnx"))
    path = folder / "two.adreno"
    adreno_mlir.compile(str(folder / "two.onnx"), cache=folder / "cache", runtime="pyopencl").save(path)
    return path


def adreno_mlir_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"adreno-mlir {' '.join(map(str, args))} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


# --------------------------------------------------------------------------- the generator


def _splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _by_hand(seed: int, index: int, j: int) -> int:
    """The 24-bit draw of element j of input `index`, in plain Python integers."""
    return _splitmix64((seed * 0x9E3779B97F4A7C15 + (index << 40) + j) & MASK) >> 40


def test_splitmix64_reference_value():
    # SplitMix64 seeded with 0 (state 0, first output), the reference implementation's value.
    assert _splitmix64(0) == 0xE220A8397B1DCDAF


@pytest.mark.parametrize("seed, index", [(0, 0), (0, 1), (7, 0), (7, 2), (-3, 1), (2**64 + 5, 0)])
def test_random_input_is_the_documented_formula(seed, index):
    shape = (2, 3, 5)
    got = random_input(seed, index, shape)
    assert got.dtype == np.float32 and got.shape == shape
    flat = got.reshape(-1)
    for j in (0, 1, 2, 17, 29):
        u = _by_hand(seed, index, j)
        assert flat[j] == np.float32(u / 2**24 * 2 - 1), (seed, index, j)
    assert float(flat.min()) >= -1.0 and float(flat.max()) < 1.0
    # Element j does not depend on the shape (counter-based): a longer draw starts the same.
    np.testing.assert_array_equal(random_input(seed, index, (40,))[:30], flat)


def test_random_input_token_ids():
    ids = random_input(5, 1, (4, 16), np.int64, bound=1000)
    assert ids.dtype == np.int64 and ids.shape == (4, 16)
    for j in (0, 3, 63):
        assert ids.reshape(-1)[j] == (_by_hand(5, 1, j) * 1000) >> 24 == int(_by_hand(5, 1, j) / 2**24 * 1000)
    assert 0 <= ids.min() and ids.max() < 1000
    with pytest.raises(ValueError, match="bound"):
        random_input(0, 0, (3,), np.int64)


def test_random_input_fixed_values():
    """Pinned values: a change of the formula must be a deliberate one (adreno-run has it too)."""
    expected = [_by_hand(0, 0, j) / 2**24 * 2 - 1 for j in range(4)]
    np.testing.assert_array_equal(random_input(0, 0, (4,)), np.float32(expected))
    assert random_input(0, 0, (1,))[0] != random_input(0, 1, (1,))[0] != random_input(1, 0, (1,))[0]


# --------------------------------------------------------------------------- the same data


def test_adreno_run_and_adreno_mlir_run_draw_the_same_inputs(artifact, native_dir, run_env, tmp_path):  # noqa: F811
    """No --input: adreno-run and `adreno-mlir run` give the same outputs for one seed
    (so the data is the same), which are the Python runtime's on random_input's feeds."""
    runner = native_dir / "adreno-run"
    model = adreno_mlir.load(artifact, runtime="pyopencl")
    for seed in (0, 11):
        proc = run_c(runner, artifact, run_env, "--output", tmp_path / f"c{seed}.npy", "--repeat", "1", "--warmup",
                     "0", *(["--seed", seed] if seed else []))
        assert proc.stdout.count("random uniform [-1, 1)") == 2, proc.stdout
        ours = np.load(tmp_path / f"c{seed}.npy")
        adreno_mlir_cli("run", artifact, "--save", tmp_path / f"py{seed}.npz", "--repeat", "1", "--seed", seed)
        theirs = np.load(tmp_path / f"py{seed}.npz")["y"]
        np.testing.assert_allclose(ours.reshape(theirs.shape), theirs, rtol=1e-5, atol=1e-6)
        feeds = {name: random_input(seed, i, model.input_shapes[name]) for i, name in enumerate(model.input_names)}
        direct = model.run(feeds)["y"]
        np.testing.assert_allclose(theirs, direct, rtol=1e-5, atol=1e-6)
    # The seed is used: another seed, other data.
    assert not np.allclose(np.load(tmp_path / "c0.npy"), np.load(tmp_path / "c11.npy"))


def test_seed_must_be_an_integer(artifact, native_dir, run_env):  # noqa: F811
    proc = run_c(native_dir / "adreno-run", artifact, run_env, "--seed", "x1", check=False)
    assert proc.returncode == 2 and "--seed takes an integer" in proc.stderr


# --------------------------------------------------------------------------- --info


def test_info_prints_the_model_and_does_not_run(artifact, native_dir, run_env, tmp_path):  # noqa: F811
    manifest = json.loads((artifact / "manifest.json").read_text())
    out = tmp_path / "never.npy"
    # --input is ignored with --info (the file does not even exist), and --output is never written.
    proc = run_c(native_dir / "adreno-run", artifact, run_env, "--info", "--input", tmp_path / "missing.npy",
                 "--output", out, "--profile")
    lines = proc.stdout.splitlines()
    for key in ("model:", "opencl:", "device:", "program:", "io:", "load:"):
        assert any(line.startswith(key) for line in lines), (key, proc.stdout)
    assert "input 0: a [1, 4, 8, 8] float32" in lines and "input 1: b [1, 8, 8, 8] float32" in lines, proc.stdout
    assert "output 0: y [1, 8, 8, 8] float32" in lines, proc.stdout
    kernels = {launch["kernel"] for launch in manifest["launches"]}
    assert f"launches: {len(manifest['launches'])} ({len(kernels)} distinct kernels)" in lines, proc.stdout
    for ran in ("latency:", "first run:", "random uniform", "device ms"):
        assert ran not in proc.stdout, proc.stdout
    assert not out.exists()


# --------------------------------------------------------------------------- --profile


def profile_rows(stdout: str) -> list[list[str]]:
    """The rows of adreno-run --profile's table: [node, kernel (maybe 'k +1'), launches, ms, share]."""
    lines = stdout.splitlines()
    start = next(k for k, line in enumerate(lines) if re.match(r"node +kernel +launches +device ms +share$", line))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith(("device:", "... ")):
            break
        rows.append(re.split(r"  +", line.strip()))
    return rows


def test_profile_rows_are_onnx_nodes(artifact, native_dir, run_env):  # noqa: F811
    manifest = json.loads((artifact / "manifest.json").read_text())
    proc = run_c(native_dir / "adreno-run", artifact, run_env, "--profile", "--repeat", "2", "--warmup", "0")
    rows = profile_rows(proc.stdout)
    names = [r[0] for r in rows]
    # The C reader returns the manifest's node names (adreno_launch_node), which name the model's nodes.
    assert set(names) & set(NODES), proc.stdout
    expected = {launch.get("node") or f"<{launch['kernel']}>" for launch in manifest["launches"]}
    assert set(names) == expected, proc.stdout
    assert sum(int(r[2]) for r in rows) == len(manifest["launches"])
    ms = [float(r[3]) for r in rows]
    assert ms == sorted(ms, reverse=True)
    assert abs(sum(float(r[4].rstrip("%")) for r in rows) - 100) < 0.1 * len(rows) + 0.1
    assert re.search(r"^device: +[0-9.]+ ms \(sum over \d+ launches", proc.stdout, re.M), proc.stdout
    assert re.search(r"^launch: +[0-9.]+ ms of host time", proc.stdout, re.M), proc.stdout


def test_profile_groups_and_cuts(tiny_path, native_dir, run_env, tmp_path):  # noqa: F811
    """Launches without a node go under <kernel>; a node of several kernels says `kernel +1`;
    names above 44 characters are cut as analyze cuts them; --top keeps the longest rows."""
    path = tmp_path / "tiny.adreno"
    adreno_mlir.compile(str(tiny_path), cache=tmp_path / "cache", runtime="pyopencl").save(path)
    long_name = "/features/block" + "/x" * 30 + "/Conv"

    def edit(m):
        launches = m["launches"]
        assert len(launches) >= 4 and launches[1]["kernel"] != launches[2]["kernel"]
        launches[0].pop("node", None)
        launches[2]["node"] = launches[1]["node"] = "shared_node"
        launches[3]["node"] = long_name

    _edit_manifest(path, edit)
    manifest = json.loads((path / "manifest.json").read_text())
    first = manifest["launches"]
    proc = run_c(native_dir / "adreno-run", path, run_env, "--profile", "--repeat", "2", "--warmup", "0")
    rows = {r[0]: r for r in profile_rows(proc.stdout)}
    assert rows[f"<{first[0]['kernel']}>"][1:3] == [first[0]["kernel"], "1"], proc.stdout
    assert rows["shared_node"][1:3] == [f"{first[1]['kernel']} +1", "2"], proc.stdout
    cut = "..." + long_name[-41:]
    assert len(cut) == 44 and cut in rows, proc.stdout
    top = run_c(native_dir / "adreno-run", path, run_env, "--profile", "--repeat", "2", "--warmup", "0", "--top", "2")
    assert len(profile_rows(top.stdout)) == 2
    assert re.search(r"^\.\.\. \d+ more rows \(--top 2\)", top.stdout, re.M), top.stdout
    bad = run_c(native_dir / "adreno-run", path, run_env, "--profile", "--top", "0", check=False)
    assert bad.returncode == 2
