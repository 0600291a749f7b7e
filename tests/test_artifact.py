"""The compiled-model artifact (docs/artifact.md): save/load round trips on every plan,
format-version and corruption errors, no xDSL on the load path, and the CLI
(`compile -o X.adreno`, `run X.adreno` with its startup figures)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import adreno_mlir
from adreno_mlir.artifact import FORMAT_VERSION, READ_VERSIONS, ArtifactError
from adreno_mlir.errors import CompileError
from adreno_mlir.runtime.plan import WEIGHT_ALIGNMENT, Plan
from tests.conftest import slow_unless

# The four plans, compiled as the texture-model tests compile them on PoCL.
PLANS = {
    "nchw": {"layout": "nchw"},
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
    "fp16-acc32": {"textures": True, "precision": "fp16-acc32", "target": "adreno-740"},
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One program cache for this module, so tests never touch the user's cache."""
    return tmp_path_factory.mktemp("program-cache")


@pytest.fixture(scope="module")
def tiny_artifact(tiny_path, cache, tmp_path_factory):
    """A saved tinynet (NCHW plan) to break in different ways (each test copies it)."""
    path = tmp_path_factory.mktemp("saved") / "tiny.adreno"
    adreno_mlir.compile(str(tiny_path), cache=cache).save(path)
    return path


def _feeds(model, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(model.input_shapes[n]).astype(np.float32) for n in model.input_names}


def _round_trip(model_file, plan, cache, tmp_path):
    cm = adreno_mlir.compile(str(model_file), cache=cache, **PLANS[plan])
    feeds = _feeds(cm)
    expected = cm.run(feeds)
    path = cm.save(tmp_path / "model.adreno")
    loaded = adreno_mlir.load(path, cache=cache)
    assert loaded.program_origin == "artifact binary"
    assert loaded.input_names == cm.input_names and loaded.output_names == cm.output_names
    assert loaded.input_shapes == cm.input_shapes and loaded.output_shapes == cm.output_shapes
    assert loaded.source == cm.source and loaded.plan == cm.plan and loaded.launch_plan == cm.launch_plan
    got = loaded.run(feeds)
    for name in cm.output_names:
        assert np.array_equal(got[name], expected[name]), f"{plan}: output {name} differs after load"
    return cm, loaded, path


@pytest.mark.parametrize("plan", list(PLANS))
def test_round_trip_tinynet(plan, tiny_path, cache, tmp_path):
    cm, _loaded, path = _round_trip(tiny_path, plan, cache, tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    images = [a for a in manifest["allocations"] if a["kind"] == "image"]
    assert bool(images) == cm.options["textures"]
    if plan == "fp16-acc32":
        assert {a["format"] for a in images} == {"rgba_f16"}
    assert all(w["offset"] % WEIGHT_ALIGNMENT == 0 for w in manifest["weights"]["entries"])
    assert (path / "weights.bin").stat().st_size == manifest["weights"]["bytes"]


@pytest.mark.parametrize("plan", slow_unless(list(PLANS), fast={"nchw4c-textures"}))
def test_round_trip_shared_model(plan, model_path, cache, tmp_path):
    _round_trip(model_path("squeezenet1_1"), plan, cache, tmp_path)


def test_load_without_binary_builds_from_source(tiny_path, cache, tmp_path):
    cm = adreno_mlir.compile(str(tiny_path), cache=cache)
    path = cm.save(tmp_path / "nobin.adreno", binaries=False)
    assert not (path / "binaries").exists()
    loaded = adreno_mlir.load(path, cache=False)
    assert loaded.program_origin == "built from source, cache off"
    feeds = _feeds(cm)
    assert np.array_equal(loaded.run(feeds)["probabilities"], cm.run(feeds)["probabilities"])


def test_binary_of_another_driver_is_not_used(tiny_artifact, tmp_path):
    path = tmp_path / "other.adreno"
    shutil.copytree(tiny_artifact, path)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["binaries"], "the saved artifact should carry this device's binary"
    manifest["binaries"][0]["driver_version"] = "some other driver"
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert adreno_mlir.load(path, cache=False).program_origin == "built from source, cache off"


def test_plan_json_round_trip(tiny_artifact):
    loaded = adreno_mlir.load(tiny_artifact)
    plan = loaded.launch_plan
    assert Plan.from_json(plan.to_json()) == plan


def test_format_version_mismatch(tiny_artifact, tmp_path):
    path = tmp_path / "future.adreno"
    shutil.copytree(tiny_artifact, path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["format_version"] = FORMAT_VERSION + 1
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CompileError) as e:
        adreno_mlir.load(path)
    message = str(e.value)
    assert str(path / "manifest.json") in message
    assert f"format version {FORMAT_VERSION + 1}" in message
    assert f"format versions {', '.join(map(str, READ_VERSIONS))} only" in message
    assert READ_VERSIONS[-1] == FORMAT_VERSION
    assert "Recompile" in message


@pytest.mark.parametrize("name", ["weights.bin", "kernels.cl"])
def test_corrupted_file_is_named(name, tiny_artifact, tmp_path):
    path = tmp_path / "bad.adreno"
    shutil.copytree(tiny_artifact, path)
    data = bytearray((path / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (path / name).write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=f"{path / name} is corrupted"):
        adreno_mlir.load(path)
    (path / name).unlink()
    with pytest.raises(ArtifactError, match=f"{path / name} is missing"):
        adreno_mlir.load(path)


def test_not_an_artifact(tmp_path, tiny_path):
    with pytest.raises(ArtifactError, match="no artifact at"):
        adreno_mlir.load(tmp_path / "nothing.adreno")
    with pytest.raises(ArtifactError, match="manifest.json is missing"):
        adreno_mlir.load(tmp_path)
    with pytest.raises(ArtifactError, match="artifacts are directories"):
        adreno_mlir.load(tiny_path)


def test_save_replaces_an_artifact_and_refuses_anything_else(tiny_path, cache, tmp_path):
    cm = adreno_mlir.compile(str(tiny_path), cache=cache)
    path = cm.save(tmp_path / "m.adreno")
    (path / "stale.txt").write_text("from an older save")
    cm.save(path)
    assert not (path / "stale.txt").exists() and (path / "manifest.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["m.adreno"]  # no temporary folders left
    user_dir = tmp_path / "notes"
    user_dir.mkdir()
    (user_dir / "keep.txt").write_text("mine")
    with pytest.raises(ArtifactError, match="refusing to overwrite"):
        cm.save(user_dir)
    assert (user_dir / "keep.txt").read_text() == "mine"


def test_load_imports_no_compiler(tiny_artifact):
    code = (
        "import sys, numpy as np, adreno_mlir\n"
        f"m = adreno_mlir.load({str(tiny_artifact)!r})\n"
        "m.run({'input': np.zeros((1, 3, 64, 64), np.float32)})\n"
        "bad = sorted(k for k in sys.modules if k.split('.')[0] in ('xdsl', 'onnx') "
        "or k.startswith(('adreno_mlir.lowering', 'adreno_mlir.dialects', 'adreno_mlir.api')))\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *args], check=False, capture_output=True,
                          text=True)


def test_cli_compile_to_artifact_and_run_it(tiny_path, cache, tmp_path):
    out = tmp_path / "tiny.adreno"
    r = _cli("compile", str(tiny_path), "-o", str(out), "--cache-dir", str(cache))
    assert r.returncode == 0, r.stderr
    assert (out / "manifest.json").is_file() and (out / "kernels.cl").is_file()
    assert not list(tmp_path.glob("*.mlir"))  # only the artifact
    run = _cli("run", str(out), "--repeat", "2", "--cache-dir", str(cache))
    assert run.returncode == 0, run.stderr
    for line in ("loaded ", "program build: ", "first run: ", "latency: median "):
        assert line in run.stdout, run.stdout
    assert "probabilities: shape [1, 10]" in run.stdout
    onnx_run = _cli("run", str(tiny_path), "--no-cache", "--repeat", "1")
    assert onnx_run.returncode == 0, onnx_run.stderr
    for line in ("compiled in ", "program build: ", "(cache off;", "first run: ", "latency: median "):
        assert line in onnx_run.stdout, onnx_run.stdout


def test_cli_run_errors(tiny_path, tiny_artifact, tmp_path):
    text = tmp_path / "model.txt"
    text.write_text("not a model")
    for args in (["run", str(text)], ["run", str(tmp_path)], ["run", str(tmp_path / "missing.adreno")],
                 ["run", str(tiny_artifact), "--compare", "onnxruntime"]):
        r = _cli(*args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr


def test_loaded_model_profiles_and_checks_image_limits(tiny_path, cache, tmp_path):
    """The image-limit check works from the plan alone (load() has no IR)."""
    from types import SimpleNamespace

    from adreno_mlir.runtime.executor import ImageLimitError, check_device_limits

    cm = adreno_mlir.compile(str(tiny_path), cache=cache, **PLANS["nchw4c-textures"])
    loaded = adreno_mlir.load(cm.save(tmp_path / "tex.adreno"), cache=cache)
    times = loaded.profile(_feeds(loaded), repeat=2)
    assert set(times) == set(loaded.launch_plan.kernel_names) and all(t >= 0 for t in times.values())
    small = SimpleNamespace(name="tiny-gpu", image_support=True, image2d_max_width=8, image2d_max_height=8)
    with pytest.raises(ImageLimitError, match="larger than tiny-gpu allows"):
        check_device_limits(loaded.launch_plan, small)
    with pytest.raises(ImageLimitError, match="no image support"):
        check_device_limits(loaded.launch_plan, SimpleNamespace(name="x", image_support=False,
                                                                image2d_max_width=0, image2d_max_height=0))


def test_cli_compile_refuses_to_replace_a_non_artifact(tiny_path, tmp_path):
    target = tmp_path / "mine.adreno"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    r = _cli("compile", str(tiny_path), "-o", str(target), "--no-build")
    assert r.returncode == 1 and "error: refusing to overwrite" in r.stderr, r.stderr
    assert "import:" not in r.stdout  # refused before compiling
    assert (target / "keep.txt").read_text() == "mine"


def test_failed_save_puts_the_older_artifact_back(tiny_path, cache, tmp_path, monkeypatch):
    """If the new artifact cannot be moved into place, the older one stays loadable and the
    error is an ArtifactError naming the path (not a raw OSError)."""
    import os as os_

    from adreno_mlir.artifact import ArtifactError

    cm = adreno_mlir.compile(str(tiny_path), cache=cache)
    path = tmp_path / "m.adreno"
    cm.save(path)
    before = (path / "manifest.json").read_text()
    real_replace = os_.replace

    def failing_replace(src, dst):
        if str(src).endswith(".tmp"):
            raise OSError(39, "Directory not empty")
        return real_replace(src, dst)

    monkeypatch.setattr(os_, "replace", failing_replace)
    with pytest.raises(ArtifactError, match="m.adreno"):
        cm.save(path)
    monkeypatch.undo()
    assert (path / "manifest.json").read_text() == before
    adreno_mlir.load(path, cache=cache)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.adreno")]


@pytest.mark.parametrize("bad", ["", 0])
def test_bad_cache_argument_is_a_clear_error(tiny_path, bad):
    with pytest.raises(adreno_mlir.CompileError, match="cache must be"):
        adreno_mlir.compile(str(tiny_path), cache=bad)
