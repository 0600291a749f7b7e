"""Compile options checked up front, in the API and the CLI: a bad `textures`,
`precision`, `layout`, `work_group`, `target` or `device` is a CompileError naming the
parameter and the allowed values (a CLI error without a traceback), and the enums of
adreno_mlir.options are accepted where strings are."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import adreno_mlir
from adreno_mlir.errors import CompileError
from adreno_mlir.options import Layout, Precision, WorkGroup


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
