"""Tests of the target profiles: the named ones, their fields, and `target="auto"` (the
live device's profile, named `device-...` without growing the registry, and resolved by
that name in a fresh process such as adreno-opt)."""

import dataclasses
import subprocess
import sys

import pytest

import adreno_mlir
from adreno_mlir.target import TargetProfile, get_profile, list_profiles, profile_from_device


def test_named_profiles_registered():
    names = list_profiles()
    for n in ("adreno-660", "adreno-740", "pocl-cpu", "nvidia-opencl", "tiny-test"):
        assert n in names
        p = get_profile(n)
        assert isinstance(p, TargetProfile) and p.name == n
        wg = p.preferred_work_group_size
        assert len(wg) == 3 and wg[0] * wg[1] * wg[2] <= p.max_work_group_size
        assert p.local_memory_bytes > 0


@pytest.mark.parametrize("name", ["adreno-660", "adreno-740"])
def test_adreno_facts(name):
    p = get_profile(name)
    # TVM's Adreno target: texture_spatial_limit 16384
    assert p.max_image_width == p.max_image_height == 16384
    assert p.supports_fp16 and p.is_gpu and p.supports_images


def test_tiny_test_forces_fallback():
    p = get_profile("tiny-test")
    assert (p.max_image_width, p.max_image_height) == (64, 64)
    assert p.fits_image(64, 64)
    assert not p.fits_image(112, 1792)
    assert get_profile("adreno-660").fits_image(112, 1792)
    assert not get_profile("adreno-660").fits_image(16385, 1)


def test_profiles_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_profile("adreno-660").max_image_width = 1  # type: ignore[misc]


def test_profile_fields_trimmed():
    names = {f.name for f in dataclasses.fields(TargetProfile)}
    assert "image_pitch_alignment" not in names and "max_kernel_args" not in names
    assert {"max_image_width", "max_image_height", "preferred_work_group_size", "is_gpu",
            "supports_images", "max_work_group_size", "local_memory_bytes", "supports_fp16"} <= names


def test_unknown_profile():
    with pytest.raises(ValueError, match="unknown target profile 'adreno-999'") as e:
        get_profile("adreno-999")
    for n in list_profiles():
        assert n in str(e.value)
    assert "auto" in str(e.value)


def _live_device():
    import pyopencl as cl

    # PoCL comes with the project's dependencies: no device is a failure, not a skip.
    return cl.create_some_context(interactive=False).devices[0]


def test_auto_live_device():
    device = _live_device()
    import pyopencl as cl

    p = get_profile("auto")
    assert p.name.startswith("auto:")
    assert p.max_work_group_size == device.max_work_group_size >= 1
    assert p.local_memory_bytes == device.local_mem_size > 0
    assert p.supports_fp16 == ("cl_khr_fp16" in device.extensions)
    assert p.is_gpu == bool(device.type & cl.device_type.GPU)
    assert p.supports_images == bool(device.image_support)
    if p.supports_images:
        assert p.max_image_width == device.image2d_max_width >= 1024
        assert p.max_image_height == device.image2d_max_height >= 1024
    wg = p.preferred_work_group_size
    assert len(wg) == 3 and wg[0] * wg[1] * wg[2] <= p.max_work_group_size


def test_auto_with_explicit_device():
    device = _live_device()
    assert get_profile("auto", device=device) == profile_from_device(device)


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
    from adreno_mlir.plan import make_plan

    plan = make_plan("auto", textures=True)
    name = plan.target
    assert name.startswith("device-") and plan.profile.name == name
    stages = dict(plan.stages())
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


def test_a_new_target_profile_is_one_registration(tmp_path):
    """Adding a target profile touches adreno_mlir/target.py only: `register_profile` with
    its facts, and every pass, family rule and the plan read them from there. A GPU with
    no images and a 64-item work-group limit: the plan keeps buffers, no kernel asks for
    more than 64 work-items, and the numbers match onnxruntime."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from adreno_mlir.target import _PROFILES, register_profile

    profile = dataclasses.replace(get_profile("adreno-740"), name="test-gpu-64", supports_images=False,
                                  max_work_group_size=64, preferred_work_group_size=(8, 8, 1))
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((1000, 1280)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1, name="fc")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1280])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    register_profile(profile)
    try:
        assert "test-gpu-64" in list_profiles()
        cm = adreno_mlir.compile(model, target="test-gpu-64", keep_ir=True)
        assert "select-kernel-config{target=test-gpu-64" in cm.pipeline
        assert "#texture.image" not in cm.stage_ir["opencl"]
        local = [tuple(int(d) for d in m.split(", ")) for m in
                 __import__("re").findall(r"local \[([0-9, ]+)\]", cm.stage_ir["opencl"])]
        assert local and all(np.prod(sizes) <= 64 for sizes in local), local
        x = rng.standard_normal((1, 1280)).astype(np.float32)
        ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        got = cm.run({"x": x})["y"]
        assert np.abs(got - ref[0]).max() <= 1e-4 * np.abs(ref[0]).max()
    finally:
        _PROFILES.pop("test-gpu-64", None)
