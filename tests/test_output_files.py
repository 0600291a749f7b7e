"""What the command-line tools write, and only when they succeed (issue 27: no stray files):
`adreno-mlir compile -o DIR` swaps a finished folder in, `adreno-opt -o FILE` writes FILE
after the run, IR printed to stdout keeps its weights in the cache, not the working directory."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=300, cwd=cwd)


def _opt(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.opt", *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=300, cwd=cwd)


def _model(path, name="m"):
    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                               helper.make_node("Relu", ["c"], ["y"], name="relu")], name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_compile_into_a_folder_twice_replaces_it(tmp_path):
    """A second compile into one -o folder replaces the first one's files (two plans'
    stage files and weights never mix)."""
    a, b = _model(tmp_path / "a.onnx"), _model(tmp_path / "b.onnx")
    out = tmp_path / "out"
    first = _cli("compile", a, "-o", out, "--no-build", "--layout", "nchw4c")
    assert first.returncode == 0, first.stderr
    assert (out / "a.cl").is_file() and (out / "a.adreno").is_dir()
    second = _cli("compile", b, "-o", out, "--no-build", "--layout", "nchw")
    assert second.returncode == 0, second.stderr
    names = {p.name for p in out.iterdir()}
    assert "b.cl" in names and "a.cl" not in names and "a.adreno" not in names, names
    assert str(out / "b.cl") in second.stdout  # the printed paths are the final ones
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # no staging folder left


def test_a_failed_compile_leaves_no_folder(tmp_path):
    """The import refuses the model after the staging folder was made: neither it nor -o stays."""
    graph = helper.make_graph([helper.make_node("Det", ["x"], ["y"], name="det")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "det.onnx")
    proc = _cli("compile", tmp_path / "det.onnx", "-o", tmp_path / "new", "--no-build")
    assert proc.returncode == 1 and "Det (1 node): det" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["det.onnx"], list(tmp_path.iterdir())


def test_a_foreign_folder_needs_force(tmp_path):
    model = _model(tmp_path / "a.onnx")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    proc = _cli("compile", model, "-o", foreign, "--no-build")
    assert proc.returncode == 1 and "pass --force" in proc.stderr, proc.stderr
    assert (foreign / "notes.txt").read_text() == "keep me"
    forced = _cli("compile", model, "-o", foreign, "--no-build", "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (foreign / "notes.txt").exists() and (foreign / "a.cl").is_file()


def test_adreno_opt_writes_its_output_only_on_success(tmp_path):
    text = ("func.func @f(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {\n"
            "  %a = graph.relu %x : tensor<1x4xf32>\n  func.return %a : tensor<1x4xf32>\n}\n")
    (tmp_path / "l.mlir").write_text(text)
    bad = _opt(tmp_path / "l.mlir", "-p", "convert-graph-to-opencl", "-t", "opencl", "-o", tmp_path / "model.cl")
    assert bad.returncode == 1 and "run graph-fuse" in bad.stderr, bad.stderr
    assert not (tmp_path / "model.cl").exists()
    good = _opt(tmp_path / "l.mlir", "-p", "graph-fuse,convert-graph-to-opencl", "-t", "opencl",
                "-o", tmp_path / "model.cl")
    assert good.returncode == 0, good.stderr
    assert "__kernel" in (tmp_path / "model.cl").read_text()


def test_ir_on_stdout_keeps_its_weights_in_the_cache(tmp_path):
    """Weights a pass creates, printed to stdout: one content-addressed folder in the cache
    for two runs, nothing in the working directory."""
    model = _model(tmp_path / "a.onnx")
    work = tmp_path / "work"
    work.mkdir()
    cache = tmp_path / "cache"
    env_run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "adreno_mlir.opt", str(tmp_path / "a.mlir"), "-p",
         "convert-layout-nchw4c{storage=f32}"], capture_output=True, text=True, check=False, timeout=300,
        cwd=work, env={**__import__("os").environ, "ADRENO_MLIR_CACHE_DIR": str(cache)})
    imported = _cli("import", model, "-o", tmp_path / "a.mlir")
    assert imported.returncode == 0, imported.stderr
    runs = [env_run(), env_run()]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert list(work.iterdir()) == []
    folders = list((cache / "weights").iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("a-"), folders
    assert runs[0].stdout == runs[1].stdout and str(folders[0]) in runs[0].stdout
