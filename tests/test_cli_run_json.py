"""`adreno-mlir run --json`, and the run command's flag and input checks (issue 27):
--repeat >= 1, --version, -q/-v, --input checked against the ONNX model before compiling,
a missing onnxruntime named as such."""

from __future__ import annotations

import json
import logging
import sys
from importlib.metadata import version

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir import cli


@pytest.fixture
def conv_path(tmp_path):
    """Conv 3x3 + Relu on a [1, 4, 8, 8] input named `x`."""
    w = np.random.default_rng(0).standard_normal((4, 4, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv_relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "conv_relu.onnx"
    onnx.save(model, str(path))
    return path


@pytest.fixture
def no_compile(monkeypatch):
    """adreno_mlir.compile fails the test if called: the checks must come first."""
    def compile_(*args, **kwargs):
        raise AssertionError("compiled before the --input / dependency checks")

    monkeypatch.setattr(adreno_mlir, "compile", compile_)


def test_run_json_record(conv_path, tmp_path, capsys):
    out = tmp_path / "run.json"
    argv = ["run", str(conv_path), "--repeat", "6", "--compare", "onnxruntime", "--cache-dir", str(tmp_path / "c"),
            "--json", str(out)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "latency: median" in text and "OK: within tolerance" in text and "{" not in text  # text kept as it was
    r = json.loads(out.read_text())
    assert r["schema"] == "adreno-mlir-run/1" and r["kind"] == "onnx" and r["model"] == str(conv_path)
    assert r["adreno_mlir_version"] == version("adreno-mlir")
    lat = r["latency_ms"]
    assert lat["repeat"] == 6 and len(lat["runs"]) == 6
    assert lat["median"] >= lat["min"] > 0 and lat["p99"] >= lat["p90"] >= lat["median"]
    assert lat["mean"] >= lat["min"]
    assert r["compile_s"] > 0 and r["load_s"] is None and r["first_run_s"] > 0
    assert set(r["compile_timings"]) >= {"import", "program"}
    assert r["program"]["cache"] == "miss" and r["program"]["build_s"] >= 0
    assert r["device"] and r["runtime"] in ("native", "pyopencl")
    assert r["plan"]["description"] and r["plan"]["options"]["precision"] == "fp32"
    assert r["inputs"] == {"x": {"shape": [1, 4, 8, 8], "dtype": "float32", "source": "random"}}
    assert r["outputs"]["y"]["shape"] == [1, 4, 8, 8] and r["outputs"]["y"]["min"] >= 0  # a Relu
    cmp = r["compare"]
    assert cmp["reference"] == "onnxruntime" and cmp["pass"] is True and cmp["tolerance"] == 1e-4
    assert 0 <= cmp["max_error"] <= cmp["tolerance"]
    assert cmp["outputs"]["y"]["pass"] and cmp["outputs"]["y"]["max_error"] == cmp["max_error"]
    assert cmp["median_ms"] == cmp["latency_ms"]["median"] > 0 and cmp["latency_ms"]["repeat"] == 6
    assert r["exit_status"] == 0

    # the same model again: the program comes from the cache; no --compare, no compare block
    assert cli.main(["run", str(conv_path), "--repeat", "1", "--cache-dir", str(tmp_path / "c"),
                     "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["program"]["cache"] == "hit" and r["compare"] is None and r["latency_ms"]["repeat"] == 1


def test_run_json_records_a_failed_compare(conv_path, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert cli.main(["run", str(conv_path), "--repeat", "1", "--no-cache", "--precision", "fp16-acc32",
                     "--compare", "onnxruntime", "--tolerance", "1e-12", "--json", str(out)]) == 1
    assert "differ from onnxruntime" in capsys.readouterr().err
    r = json.loads(out.read_text())
    assert r["exit_status"] == 1 and r["compare"]["pass"] is False
    assert r["compare"]["max_error"] > r["compare"]["tolerance"] == 1e-12


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_repeat_must_be_positive(value, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "m.onnx", "--repeat", value])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert "error: argument --repeat:" in err
    assert ("must be >= 1" if value != "two" else "not a whole number") in err


def test_json_dash_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "m.onnx", "--json", "-"])
    assert e.value.code == 1 and "error: argument --json: takes a file path" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"adreno-mlir {version('adreno-mlir')}"


def test_quiet_and_verbose_levels():
    parser = cli.build_parser()
    level = lambda *a: cli._log_level(parser.parse_args([*a, "example", "tinynet", "-o", "m.onnx"]))
    assert level() == logging.WARNING
    assert level("-q") == logging.ERROR
    assert level("-v") == logging.INFO and level("-vv") == logging.DEBUG
    # after the command too
    assert cli._log_level(parser.parse_args(["example", "tinynet", "-o", "m.onnx", "-q"])) == logging.ERROR
    assert cli._log_level(parser.parse_args(["run", "m.onnx", "-vv"])) == logging.DEBUG
    with pytest.raises(SystemExit):
        parser.parse_args(["-q", "-v", "run", "m.onnx"])


def test_quiet_turns_the_tune_progress_bar_off(monkeypatch):
    from adreno_mlir.tuning import cli as tune_cli

    seen = []
    monkeypatch.setattr(tune_cli, "_cmd_tune", lambda args: seen.append(args.no_progress) or 0)
    assert cli.main(["tune", "m.onnx", "--db", "t.db"]) == 0
    assert cli.main(["-q", "tune", "m.onnx", "--db", "t.db"]) == 0
    assert seen == [False, True]


def test_verbose_logs_and_quiet_silences_warnings(conv_path, tmp_path, monkeypatch, no_compile, capsys):
    """-v: the CLI's INFO log lines reach stderr; -q: a warning raised in a command does not."""
    import warnings

    from adreno_mlir import cli_run

    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 4, 8, 8), np.float32))
    assert cli.main(["-v", "run", str(conv_path), "--input", f"x={x}"]) == 2  # our fake compile "crashes"
    assert "INFO: adreno_mlir.cli: --input checked" in capsys.readouterr().err

    def warn_and_fail(path, *args, **kwargs):
        warnings.warn("a cache problem", UserWarning, stacklevel=1)
        raise cli_run.CompileError("stop here")

    monkeypatch.setattr(cli_run, "_onnx_inputs", warn_and_fail)
    assert cli.main(["-q", "run", str(conv_path)]) == 1
    err = capsys.readouterr().err
    assert "a cache problem" not in err and "error: stop here" in err
    with pytest.warns(UserWarning, match="a cache problem"):
        assert cli.main(["run", str(conv_path)]) == 1


def _run_fails(argv, capsys) -> str:
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "internal compiler error" not in err and "Traceback" not in err
    return err


def test_wrong_input_shape_fails_before_compiling(conv_path, tmp_path, no_compile, capsys):
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((1, 3, 8, 8), np.float32))
    err = _run_fails(["run", str(conv_path), "--input", f"x={bad}"], capsys)
    assert f"error: input 'x' from {bad} has shape [1, 3, 8, 8]; the model expects [1, 4, 8, 8]" in err
    # the bare FILE.npy form (one input) too, and the dtype
    f64 = tmp_path / "f64.npy"
    np.save(f64, np.zeros((1, 4, 8, 8), np.float64))
    err = _run_fails(["run", str(conv_path), "--input", str(f64)], capsys)
    assert f"error: input 'x' from {f64} has dtype float64; the model expects float32" in err
    err = _run_fails(["run", str(conv_path), "--input", "z=random"], capsys)
    assert "error: unknown input 'z'; the model's inputs are ['x']" in err
    err = _run_fails(["run", str(conv_path), "--input", f"x={tmp_path / 'missing.npy'}"], capsys)
    assert "error: cannot read input 'x'" in err


def test_duplicate_input_is_an_error(conv_path, tmp_path, no_compile, capsys):
    good = tmp_path / "good.npy"
    np.save(good, np.zeros((1, 4, 8, 8), np.float32))
    err = _run_fails(["run", str(conv_path), "--input", f"x={good}", "--input", "x=random"], capsys)
    assert "error: --input given twice for input 'x'" in err
    err = _run_fails(["run", str(conv_path), "--input", str(good), "--input", f"x={good}"], capsys)
    assert "error: --input given twice for input 'x'" in err


def test_missing_onnxruntime_is_named(conv_path, monkeypatch, no_compile, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` raises ImportError
    err = _run_fails(["run", str(conv_path), "--compare", "onnxruntime"], capsys)
    assert "error: --compare onnxruntime needs the onnxruntime package" in err and "pip install onnxruntime" in err
