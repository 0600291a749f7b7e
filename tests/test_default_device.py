"""The default device where pyopencl's PoCL cannot compile for the host CPU.

Regression: on an AMD Zen 5 machine (CPU family 26) PoCL 3.0's LLVM 14 reports the CPU as
"generic" and refuses it as a target CPU, so every program build failed with "unknown
target CPU 'generic'": the README's demo and every test failed, with an error that blamed
the generated program. The default device is now Intel's CPU runtime there (when
installed), and naming PoCL gives an error that says why."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

from adreno_mlir.runtime import device as devmod
from adreno_mlir.runtime.device import DeviceError


def _fake(platform: str, name: str, version: str, kind=cl.device_type.CPU, ptr: int = 0):
    return SimpleNamespace(platform=SimpleNamespace(name=platform), name=name, version=version, type=kind,
                           int_ptr=ptr)


POCL_GENERIC = _fake("Portable Computing Language", "pthread-AMD EPYC",
                     "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-generic", ptr=101)
POCL_KNOWN = _fake("Portable Computing Language", "pthread-AMD EPYC 7763",
                   "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3", ptr=102)
INTEL = _fake("Intel(R) OpenCL", "AMD EPYC", "OpenCL 3.0 (Build 0)", ptr=103)
OCLGRIND = _fake("Oclgrind", "Oclgrind Simulator", "OpenCL 1.2 (Oclgrind 21.10)", kind=cl.device_type.ACCELERATOR,
                 ptr=104)


@pytest.fixture(autouse=True)
def no_test_device(monkeypatch):
    """These tests are about the device adreno_mlir takes when none is named, not the
    test suite's device (PYOPENCL_CTX, tests/conftest.py)."""
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)


@pytest.fixture
def devices(monkeypatch):
    """Replace the machine's device list and PoCL's build check with fakes."""
    state = {"devices": [], "errors": {}}
    monkeypatch.setattr(devmod, "_all_devices", lambda: list(state["devices"]))
    monkeypatch.setattr(devmod, "use_intel_cpu_runtime", lambda: None)
    monkeypatch.setattr(devmod, "_pocl_errors", state["errors"])
    return state


def test_pocl_is_the_default_where_it_compiles(devices):
    devices["devices"] = [OCLGRIND, INTEL, POCL_KNOWN]
    assert devmod.find_device(None) is POCL_KNOWN


def test_only_a_generic_cpu_is_probed(devices, monkeypatch):
    """A CPU that LLVM names is not probed (no build at every start)."""
    def no_build(*a, **k):
        raise AssertionError("probed a PoCL device whose CPU LLVM knows")

    monkeypatch.setattr(devmod, "_context_for", no_build)
    assert devmod.pocl_build_error(POCL_KNOWN) is None


def test_falls_back_to_intel_where_pocl_cannot_build(devices):
    devices["devices"] = [OCLGRIND, INTEL, POCL_GENERIC]
    devices["errors"][POCL_GENERIC.int_ptr] = "error: unknown target CPU 'generic'"
    assert devmod.find_device(None) is INTEL


def test_without_intel_the_error_says_what_to_install(devices):
    devices["devices"] = [OCLGRIND, POCL_GENERIC]
    devices["errors"][POCL_GENERIC.int_ptr] = "error: unknown target CPU 'generic'"
    with pytest.raises(DeviceError) as e:
        devmod.find_device(None)
    msg = str(e.value)
    assert "unknown target CPU 'generic'" in msg and "intel-opencl-rt" in msg and "PYOPENCL_CTX" in msg


def test_a_named_device_is_not_replaced(devices):
    devices["devices"] = [OCLGRIND, INTEL, POCL_GENERIC]
    devices["errors"][POCL_GENERIC.int_ptr] = "error: unknown target CPU 'generic'"
    assert devmod.find_device("pocl") is POCL_GENERIC


def test_the_default_device_of_this_machine_builds_a_program():
    """On this machine, whatever its CPU: the default device compiles OpenCL C (the
    failure above made every test of the suite fail instead)."""
    dev = devmod.find_device(None)
    ctx = cl.Context([dev])
    prg = cl.Program(ctx, "__kernel void k(__global float *a) { a[get_global_id(0)] = 2.0f; }").build()
    out = np.zeros(4, np.float32)
    q = cl.CommandQueue(ctx)
    buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
    prg.k(q, (4,), None, buf)
    cl.enqueue_copy(q, out, buf)
    q.finish()
    assert (out == 2.0).all()


def test_naming_a_pocl_that_cannot_build_gives_a_device_error(tmp_path, monkeypatch):
    """compile(device="pocl") where PoCL's LLVM does not know the CPU: a DeviceError that
    says so, not "the OpenCL compiler rejected the generated program". Where PoCL
    builds here, the same path is taken with PoCL's check answering as on such a CPU
    and the build made to fail as there."""
    import adreno_mlir
    from adreno_mlir.examples import write_example
    from adreno_mlir.runtime import executor

    pocl = devmod.find_device("pocl")
    if devmod.pocl_build_error(pocl) is None:
        monkeypatch.setattr(executor, "pocl_build_error", lambda d: "error: unknown target CPU 'generic'")

        def refuse(*a, **k):
            raise cl.RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE")

        monkeypatch.setattr(executor, "build_program", refuse)
    path = write_example("tinynet", tmp_path / "tinynet.onnx")
    with pytest.raises(DeviceError, match="PoCL's CPU device cannot compile OpenCL C on this machine"):
        adreno_mlir.compile(str(path), device="pocl", cache=False)
