"""The textual pipeline end to end on ResNet-18: `adreno-mlir import`, every stage through
`adreno-opt`, `-t opencl`, and PoCL builds the printed program."""

from __future__ import annotations

import subprocess

import pyopencl as cl

from tests.conftest import materialized_model


def _run(*args: str, cwd) -> str:
    r = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_resnet18_through_adreno_opt_to_opencl_c(tmp_path):
    onnx_path = materialized_model("resnet18")
    _run("adreno-mlir", "import", str(onnx_path), "-o", "r18.mlir", cwd=tmp_path)
    text = (tmp_path / "r18.mlir").read_text()
    assert _run("adreno-opt", "r18.mlir", cwd=tmp_path) == text  # textually stable
    opt = _run("adreno-opt", "r18.mlir", "-p", "graph-canonicalize,fold-batchnorm", "-o", "opt.mlir", cwd=tmp_path)
    assert opt == ""
    lowered = _run("adreno-opt", "opt.mlir", "-p", "convert-graph-to-opencl", "-o", "cl.mlir", cwd=tmp_path)
    assert lowered == ""
    source = _run("adreno-opt", "cl.mlir", "-t", "opencl", cwd=tmp_path)
    assert source.count("__kernel void") >= 10
    ctx = cl.create_some_context(interactive=False)
    program = cl.Program(ctx, source).build(options=["-cl-std=CL1.2"])
    assert len(program.all_kernels()) == source.count("__kernel void")
