"""Review fixes (issue 7, item 7): weight-store lifetime, `target="auto"` without a global
registry, up-front option validation (API and CLI), trimmed target profiles."""

from __future__ import annotations

import dataclasses
import gc
import subprocess
import sys
import weakref

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import StringAttr

import adreno_mlir
from adreno_mlir import weights
from adreno_mlir.errors import CompileError
from adreno_mlir.examples import tinynet
from adreno_mlir.frontend import import_onnx
from adreno_mlir.options import Layout, Precision, WorkGroup
from adreno_mlir.target import TargetProfile, get_profile, list_profiles


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("review") / "tinynet.onnx"
    onnx.save(tinynet(), str(path))
    return path


def _feeds(cm):
    return {n: np.random.default_rng(0).standard_normal(cm.input_shapes[n]).astype(np.float32)
            for n in cm.input_names}


# ------------------------------------------------------------------------------ weights


def test_weight_stores_are_freed_after_compile(tiny_path):
    stores, arrays = [], []
    for _ in range(5):
        cm = adreno_mlir.compile(str(tiny_path), target="pocl-cpu")
        store = weights.store_of(cm.module)
        assert store.arrays
        stores.append(weakref.ref(store))
        arrays += [weakref.ref(a) for a in store.arrays.values()]
        del cm, store
    gc.collect()
    assert [r() for r in stores] == [None] * 5
    assert all(r() is None for r in arrays)
    alive = {r().key for r in stores if r() is not None}
    assert not alive & set(weights._memory_stores)


def test_live_module_keeps_its_weights(tiny_path):
    cm = adreno_mlir.compile(str(tiny_path), target="pocl-cpu")
    key = cm.module.attributes[weights.WEIGHTS_ATTR].data
    gc.collect()
    store = weights.store_of(cm.module)
    assert store.key == key and store.arrays
    feeds = _feeds(cm)
    first = cm.run(feeds)
    gc.collect()
    again = cm.run(feeds)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])


def test_graph_module_compiled_twice_keeps_weights():
    """A caller's imported module stays usable (and owns its weights) across compiles,
    and a clone resolves the same store while the original is alive."""
    module = import_onnx(tinynet())
    ref = weakref.ref(weights.store_of(module))
    a = adreno_mlir.compile(module, target="pocl-cpu")
    del a
    gc.collect()
    assert ref() is not None and ref().arrays
    clone = module.clone()
    assert weights.store_of(clone) is ref()
    b = adreno_mlir.compile(module, target="pocl-cpu")
    assert b.run(_feeds(b))
    del module, clone, b
    gc.collect()
    assert ref() is None


def test_orphaned_memory_key_is_a_clear_error():
    module = import_onnx(tinynet())
    clone = module.clone()
    del module
    gc.collect()
    with pytest.raises(FileNotFoundError, match="in-memory weights 'mem:[0-9]+' no longer exist"):
        weights.store_of(clone)


def test_disk_store_is_shared_while_used_then_freed(tmp_path):
    module = import_onnx(tinynet())
    directory = weights.save_beside(module, tmp_path / "m.mlir")
    key = str((tmp_path / "m.weights").resolve())
    assert directory.is_dir()
    del module
    a = import_onnx(tinynet())
    a.attributes[weights.WEIGHTS_ATTR] = StringAttr(key)
    b = a.clone()
    sa = weights.store_of(a)
    assert weights.store_of(b) is sa and sa.directory is not None
    ref = weakref.ref(sa)
    del a, b, sa
    gc.collect()
    assert ref() is None and key not in weights._disk_stores


# ------------------------------------------------------------------------------ targets


def test_auto_target_does_not_grow_the_registry(tiny_path):
    before = list_profiles()
    names = {adreno_mlir.compile(str(tiny_path), target="auto").plan for _ in range(5)}
    assert list_profiles() == before
    assert len(names) == 1
    name = next(iter(names)).rpartition("target ")[2]
    assert name.startswith("device-") and name not in before
    # the name resolves lazily (the passes and adreno-opt call get_profile(name))
    p = get_profile(name)
    assert p.name == name and p == get_profile(name)


def test_live_profile_name_resolves_from_device():
    import pyopencl as cl

    from adreno_mlir.target import _LIVE_CACHE_SIZE, _live_profiles, live_profile_name

    device = cl.create_some_context(interactive=False).devices[0]
    name = live_profile_name(device)
    _live_profiles.clear()  # not cached: found by scanning the machine's devices
    p = get_profile(name)
    assert p.name == name
    assert dataclasses.replace(p, name="x") == dataclasses.replace(get_profile("auto", device=device), name="x")
    assert len(_live_profiles) <= _LIVE_CACHE_SIZE
    with pytest.raises(ValueError, match="no OpenCL device of this machine"):
        get_profile("device-no-such-gpu-9000")


def test_auto_target_replays_with_adreno_opt(tiny_path, tmp_path):
    """The name `target="auto"` resolves to goes into the pipeline strings; adreno-opt (a fresh
    process: nothing registered, empty cache) replays the scope stage with it."""
    from adreno_mlir.api import plan_options
    from adreno_mlir.pipeline import stages_for

    layout, textures, storage, name = plan_options("auto", None, True, "fp32", None)
    assert name.startswith("device-")
    stages = dict(stages_for(layout, textures, storage, name))
    assert f"target={name}" in stages["scope"]
    ir = tmp_path / "tiny.mlir"
    r = subprocess.run([sys.executable, "-m", "adreno_mlir.cli", "import", str(tiny_path), "-o", str(ir)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pipeline = ",".join([stages["graph-opt"], stages["layout"], stages["scope"]])
    opt = subprocess.run([sys.executable, "-m", "adreno_mlir.opt", str(ir), "-p", pipeline],
                         capture_output=True, text=True, cwd=tmp_path)
    assert opt.returncode == 0, opt.stderr
    assert "#texture.image<texture" in opt.stdout  # the live profile's limits applied


def test_profile_fields_trimmed():
    names = {f.name for f in dataclasses.fields(TargetProfile)}
    assert "image_pitch_alignment" not in names and "max_kernel_args" not in names
    assert {"max_image_width", "max_image_height", "preferred_work_group_size", "is_gpu",
            "supports_images", "max_work_group_size", "local_memory_bytes", "supports_fp16"} <= names


# ------------------------------------------------------------------------------ options


@pytest.mark.parametrize("kwargs, message", [
    (dict(textures="no"), "invalid textures='no'; choose one of True, False, None"),
    (dict(textures=1), "invalid textures=1"),
    (dict(precision="int8"), "unknown precision 'int8' \\(parameter precision\\); choose one of 'fp32', 'fp16-acc32', 'fp16'"),
    (dict(precision=32), "unknown precision 32"),
    (dict(precision="fp16", device="pocl"), "precision='fp16' computes in half.*cl_khr_fp16.*'fp16-acc32'"),  # PoCL's CPU: no half
    (dict(layout="nhwc"), "unknown layout 'nhwc' \\(parameter layout\\); choose one of 'nchw', 'nchw4c'"),
    (dict(layout="nchw", textures=True), "layout='nchw' is the fp32 buffer path"),
    (dict(work_group="fast"), "invalid work_group='fast'; choose one of 'driver', 'auto'"),
    (dict(work_group=(0, 4)), "invalid work_group=\\(0, 4\\)"),
    (dict(work_group=(1, 2, 3, 4)), "invalid work_group"),
    (dict(target=740), "invalid target=740; choose one of 'adreno-660'"),
    (dict(target="adreno-999"), "unknown target profile 'adreno-999'"),
    (dict(device=0), "invalid device=0"),
])
def test_bad_options_are_compile_errors(tiny_path, kwargs, message):
    with pytest.raises(CompileError, match=message):
        adreno_mlir.compile(str(tiny_path), **kwargs)


def test_enum_options_accepted(tiny_path):
    assert Precision.FP16_ACC32 == "fp16-acc32" and Layout.NCHW4C == "nchw4c"
    cm = adreno_mlir.compile(str(tiny_path), target="pocl-cpu", textures=False, precision=Precision.FP16_ACC32,
                             layout=Layout.NCHW4C, work_group=WorkGroup.DRIVER)
    assert cm.plan == "layout nchw4c, buffers, fp16-acc32, target pocl-cpu"
    cm = adreno_mlir.compile(str(tiny_path), target="adreno-740", textures=np.bool_(False), work_group=[8, 4])
    assert cm.plan.startswith("layout nchw, buffers, fp32")


@pytest.mark.parametrize("flags, message", [
    (["--textures", "no"], "argument --textures: invalid choice: 'no'"),
    (["--precision", "int8"], "argument --precision: invalid choice: 'int8'"),
    (["--layout", "nhwc"], "argument --layout: invalid choice: 'nhwc'"),
    (["--work-group", "0,4"], "argument --work-group: invalid value '0,4'"),
    (["--target", "adreno-999"], "error: unknown target profile 'adreno-999'"),
])
def test_cli_rejects_bad_flags(tiny_path, flags, message):
    r = subprocess.run([sys.executable, "-m", "adreno_mlir.cli", "run", str(tiny_path), *flags],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_work_group_sizes(tiny_path):
    r = subprocess.run([sys.executable, "-m", "adreno_mlir.cli", "run", str(tiny_path), "--target", "pocl-cpu",
                        "--work-group", "8,4,1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
