"""The textual pipeline end to end on ResNet-18: `adreno-mlir import`, every stage through
`adreno-opt`, `-t opencl`, and PoCL builds the printed program."""

from __future__ import annotations

import subprocess

import pyopencl as cl
import pytest

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
    # The README's two lines: the graph passes with select-kernel-config (every kernel's
    # configuration: the lowering reads it and invents none), then the lowering.
    opt = _run("adreno-opt", "r18.mlir", "-p", "graph-canonicalize,fold-batchnorm,graph-fuse,select-kernel-config",
               "-o", "opt.mlir", cwd=tmp_path)
    assert opt == ""
    lowered = _run("adreno-opt", "opt.mlir", "-p", "convert-graph-to-opencl", "-o", "cl.mlir", cwd=tmp_path)
    assert lowered == ""
    source = _run("adreno-opt", "cl.mlir", "-t", "opencl", cwd=tmp_path)
    assert source.count("__kernel void") >= 10
    ctx = cl.create_some_context(interactive=False)
    program = cl.Program(ctx, source).build(options=["-cl-std=CL1.2"])
    assert len(program.all_kernels()) == source.count("__kernel void")


# --------------------------------------------------------------------------- bad pass options

GRAPH_IR = """func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {graph.inputs = ["x"], graph.outputs = ["y"]} {
  %y = graph.relu %x : tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
"""


def _opt_error(tmp_path, pipeline: str) -> str:
    """adreno-opt's stderr for `-p pipeline` on a small graph, which must fail with one line."""
    ir = tmp_path / "x.mlir"
    ir.write_text(GRAPH_IR)
    r = subprocess.run(["adreno-opt", str(ir), "-p", pipeline], capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr.strip()


@pytest.mark.parametrize("pipeline, expected", [
    ("split-k{max-factor=-1}", "error: split-k: unknown option 'max-factor'; split-k has no options"),
    ("conv-winograd{tile=abc}",
     "error: conv-winograd: option tile must be a string or an integer, one of auto, 2, 4, off; got 'abc'"),
    ("graph-canonicalize,select-kernel-config{conv-co-block}",
     "error: select-kernel-config: option conv-co-block needs a value: conv-co-block=V with V an integer, "
     "one of 1, 2, 4, 8"),
    ("select-kernel-config{conv-co-block=}", "(column 36, in option conv-co-block of select-kernel-config: "
                                             "an integer, one of 1, 2, 4, 8)"),
])
def test_adreno_opt_pass_option_error_is_one_line(tmp_path, pipeline, expected):
    assert expected in _opt_error(tmp_path, pipeline)


def _parse(spec: str):
    from adreno_mlir.pass_options import parse_passes
    from adreno_mlir.pipeline import available_passes

    return parse_passes(available_passes(), spec)


def _bad_value(hint, spec) -> str:
    """A value of the wrong type for an option of type `hint` (or out of its range)."""
    if hint is bool:
        return "maybe"
    if spec is not None and spec.choices:
        return "99" if all(isinstance(c, int) for c in spec.choices) else "bogus"
    if spec is not None and spec.minimum is not None:
        return str(spec.minimum - 1)
    return "1.5" if hint in (str | int, int | str) else "12" if hint is str else "abc"


def test_every_option_of_every_pass_reports_the_pass_option_and_allowed_values():
    import dataclasses
    import typing

    from adreno_mlir.errors import CompileError
    from adreno_mlir.pass_options import OPTION_KEY, allowed_values
    from adreno_mlir.passes import all_passes

    checked = 0
    for cls in all_passes():
        hints = typing.get_type_hints(cls)
        fields = [f for f in dataclasses.fields(cls) if f.init]
        with pytest.raises(CompileError) as e:
            _parse(f"{cls.name}{{no-such-option=1}}")
        message = str(e.value)
        assert message.startswith(f"{cls.name}: unknown option 'no-such-option'"), message
        for f in fields:  # the unknown-option error lists every option with its values
            assert f"{f.name.replace('_', '-')} ({allowed_values(hints[f.name], f.metadata.get(OPTION_KEY))})" \
                in message, message
        if not fields:
            assert message.endswith(f"{cls.name} has no options"), message
        for f in fields:
            option = f.name.replace("_", "-")
            spec = f.metadata.get(OPTION_KEY)
            if hints[f.name] is str and (spec is None or not (spec.choices or spec.check)):
                continue  # a free string (a file name): any value is one
            with pytest.raises(CompileError) as e:
                _parse(f"{cls.name}{{{option}={_bad_value(hints[f.name], spec)}}}")
            assert str(e.value).startswith(f"{cls.name}: option {option} must be "
                                           f"{allowed_values(hints[f.name], spec)}; got "), str(e.value)
            checked += 1
    assert checked >= 20


def test_pass_options_are_checked_when_a_pass_is_made_in_python():
    from adreno_mlir.errors import CompileError
    from adreno_mlir.passes.fuse_pool_partials import FusePoolPartials
    from adreno_mlir.passes.select_kernel_config import SelectKernelConfig

    with pytest.raises(CompileError, match=r"select-kernel-config: option conv-co-block must be an integer, "
                                           r"one of 1, 2, 4, 8; got 3"):
        SelectKernelConfig(conv_co_block=3)
    with pytest.raises(CompileError, match=r"fuse-pool-partials: option target-items must be an integer >= 1; "
                                           r"got -2"):
        FusePoolPartials(target_items=-2)
    with pytest.raises(CompileError, match=r"select-kernel-config: option vectorize must be true or false; got 1"):
        SelectKernelConfig(vectorize=1)
    assert SelectKernelConfig(conv_co_block=4, work_group=(16, 4, 4)).conv_co_block == 4


def test_compile_reports_a_bad_option_of_its_pipeline_before_running_it(monkeypatch):
    """compile(pipeline=...) takes adreno-opt's pipeline strings: the same error, raised
    before the first pass runs."""
    import numpy as np
    from onnx import TensorProto, helper

    import adreno_mlir
    from adreno_mlir import pipeline as pipeline_module
    from adreno_mlir.errors import CompileError

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    applied = []
    real_apply = pipeline_module.PassPipeline.apply
    monkeypatch.setattr(pipeline_module.PassPipeline, "apply",
                        lambda self, ctx, op: (applied.append(self), real_apply(self, ctx, op))[1])
    with pytest.raises(CompileError, match=r"^fuse-pool-partials: option pixels-per-item must be an integer >= 1; "
                                           r"got 0$"):
        adreno_mlir.compile(model, pipeline="graph-canonicalize,graph-fuse,fuse-pool-partials{pixels-per-item=0},"
                                            "convert-graph-to-opencl")
    assert applied == []
    with pytest.raises(CompileError, match=r"^graph-fuse: unknown option 'nope'; its options: epilogues \(true or false\)$"):
        adreno_mlir.compile(model, pipeline=lambda default: default.replace("graph-fuse", "graph-fuse{nope=1}"))
    with pytest.raises(CompileError, match=r"unknown pass 'graph-fuze' \(did you mean graph-fuse\?\)"):
        adreno_mlir.compile(model, pipeline="graph-fuze,convert-graph-to-opencl")
    cm = adreno_mlir.compile(model, pipeline="graph-canonicalize,graph-fuse,select-kernel-config{conv-co-block=4},"
                                             "convert-graph-to-opencl")
    x = np.array([[-1, 2, -3, 4]], np.float32)
    assert np.array_equal(cm.run({"x": x})["y"], np.maximum(x, 0))
