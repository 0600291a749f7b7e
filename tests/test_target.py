"""Tests of the target profiles."""

import dataclasses

import pytest

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
