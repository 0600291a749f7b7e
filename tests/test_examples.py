"""The scripts under examples/ run as a user would run them (a subprocess) and do what
examples/README.md says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("pyopencl")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_custom_pass(tmp_path):
    source = tmp_path / "forced.cl"
    run = subprocess.run([sys.executable, str(EXAMPLES / "custom_pass.py"), "--x-block", "2",
                          "--source", str(source)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    # the pass ran, where the example puts it: after select-kernel-config
    pipeline = re.search(r"^pipeline: (.*)$", out, re.M).group(1)
    assert re.search(r"select-kernel-config\{[^}]*\},force-x-block\{x-block=2\},split-k", pipeline), pipeline
    # its effect: the float4 conv kernels now block 2 pixels (the name says c<channels>x<pixels>)
    changed = re.findall(r"^kernel changed: (\S+) -> (\S+)$", out, re.M)
    assert changed, out
    for old, new in changed:
        assert re.search(r"_c\d+x[14]", old) and re.search(r"_c\d+x2", new), (old, new)
    assert "__kernel void conv3x3_c8x2_relu(" in source.read_text()
    assert not re.search(r"__kernel void \w*conv\w*_c\d+x4", source.read_text())
    # and the model still computes the same thing
    errors = [float(e) for e in re.findall(r"^max error vs onnxruntime \([\w-]+\): (\S+)$", out, re.M)]
    assert len(errors) == 2 and max(errors) < 1e-4, out
