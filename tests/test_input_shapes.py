"""Fixed shapes at compile time for models exported with dynamic axes (issue 28 item 3):
`compile(model, input_shapes={...})` / `dims={...}` and the CLI's `--input-shape NAME:D1,D2`
/ `--dim NAME=N` (adreno_mlir/frontend/shapes.py). Results match onnxruntime on the bound
shapes (tolerance 1e-5 of max |ref|, fp32); every binding that does not fit is refused
naming it; a dynamic input left unbound is refused with the lines that would bind it; the
caller's ModelProto is never changed."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir import cli
from adreno_mlir.errors import CompileError
from adreno_mlir.frontend import FrontendError, bind_input_shapes, import_onnx

RNG = np.random.default_rng(28)
V, E, MAXLEN = 50, 16, 32


def _softmax_model() -> onnx.ModelProto:
    """x [batch, seq, 16] -> MatMul (16x16) -> Softmax(-1) -> y [batch, seq, 16]."""
    w = RNG.standard_normal((16, 16)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Softmax", ["m"], ["y"], axis=-1)],
        "matmul_softmax", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 16])], [numpy_helper.from_array(w, "w")],
        value_info=[helper.make_tensor_value_info("m", TensorProto.FLOAT, ["batch", "seq", 16])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _embedding_model() -> onnx.ModelProto:
    """input_ids int64 [batch, sequence] -> Gather(table) + position table sliced to the
    sequence length (Shape -> Slice, as exporters write it), times mask [batch, sequence]
    -> LayerNorm -> MatMul -> y [batch, sequence, 8]."""
    inits = [numpy_helper.from_array(RNG.standard_normal((V, E)).astype(np.float32), "table"),
             numpy_helper.from_array(RNG.standard_normal((MAXLEN, E)).astype(np.float32), "pos"),
             numpy_helper.from_array(RNG.standard_normal(E).astype(np.float32), "s"),
             numpy_helper.from_array(RNG.standard_normal((E, 8)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([2], np.int64), "two")]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["e"], name="embed", axis=0),
             helper.make_node("Shape", ["input_ids"], ["shape"]),
             helper.make_node("Slice", ["shape", "one", "two"], ["seq_len"]),
             helper.make_node("Slice", ["pos", "zero", "seq_len", "zero"], ["p"]),
             helper.make_node("Add", ["e", "p"], ["a"]),
             helper.make_node("Unsqueeze", ["mask", "two"], ["mask3"]),
             helper.make_node("Mul", ["a", "mask3"], ["am"]),
             helper.make_node("LayerNormalization", ["am", "s"], ["n"], axis=-1),
             helper.make_node("MatMul", ["n", "w"], ["y"])]
    g = helper.make_graph(nodes, "embedding",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
                           helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "sequence"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _feeds(cm) -> dict[str, np.ndarray]:
    feeds = {}
    for name, shape in cm.input_shapes.items():
        if name == "input_ids":
            feeds[name] = RNG.integers(0, V, shape).astype(np.int64)
        elif name == "mask":
            feeds[name] = (RNG.random(shape) > 0.3).astype(np.float32)
        else:
            feeds[name] = RNG.standard_normal(shape).astype(np.float32)
    return feeds


def _check_against_onnxruntime(model: onnx.ModelProto, cm, tol: float = 1e-5) -> None:
    feeds = _feeds(cm)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    ours = cm.run(feeds)["y"]
    assert ours.shape == ref.shape
    err = float(np.abs(ours - ref).max()) / float(np.abs(ref).max())
    assert err <= tol, err


# --------------------------------------------------------------------------- the Python API


@pytest.mark.parametrize("binding, shape", [
    ({"input_shapes": {"x": (2, 8, 16)}}, (2, 8, 16)),
    ({"dims": {"batch": 1, "seq": 5}}, (1, 5, 16)),
    ({"input_shapes": {"x": (3, 4, 16)}, "dims": {"batch": 3}}, (3, 4, 16)),  # both, agreeing
], ids=["input_shapes", "dims", "both"])
def test_compile_binds_dynamic_dims(binding, shape):
    model = _softmax_model()
    before = model.SerializeToString()
    cm = adreno_mlir.compile(model, **binding)
    assert cm.input_shapes == {"x": shape} and cm.output_shapes == {"y": shape}
    assert [i.shape for i in cm.get_inputs()] == [list(shape)]
    _check_against_onnxruntime(model, cm)
    assert model.SerializeToString() == before  # the caller's ModelProto is unchanged


@pytest.mark.parametrize("binding, shape", [
    ({"input_shapes": {"input_ids": (1, 12)}}, (1, 12)),  # mask [batch, sequence] follows input_ids
    ({"dims": {"batch": 2, "sequence": 7}}, (2, 7)),
], ids=["input_shapes", "dims"])
def test_embedding_with_dynamic_sequence(binding, shape):
    model = _embedding_model()
    before = model.SerializeToString()
    cm = adreno_mlir.compile(model, **binding)
    assert cm.input_shapes == {"input_ids": shape, "mask": shape} and cm.output_shapes == {"y": (*shape, 8)}
    _check_against_onnxruntime(model, cm)
    assert model.SerializeToString() == before


def test_compile_from_a_path(tmp_path):
    path = tmp_path / "dyn.onnx"
    onnx.save(_softmax_model(), str(path))
    cm = adreno_mlir.compile(path, dims={"batch": 1, "seq": 3})
    assert cm.input_shapes == {"x": (1, 3, 16)}


def test_fp16_range_guard_sees_the_bound_shapes(monkeypatch):
    import adreno_mlir.range_guard as guard

    seen = []
    original = guard.check_fp16_range

    def spy(model, calibration=None, *args, **kwargs):
        seen.append([[d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph.input])
        return original(model, calibration, *args, **kwargs)

    monkeypatch.setattr(guard, "check_fp16_range", spy)
    model = _softmax_model()
    before = model.SerializeToString()
    cm = adreno_mlir.compile(model, precision="fp16-acc32", textures=False, dims={"batch": 1, "seq": 4})
    assert seen == [[[1, 4, 16]]]
    _check_against_onnxruntime(model, cm, tol=5e-2)
    assert model.SerializeToString() == before


def test_dynamic_input_refusal_says_how():
    with pytest.raises(FrontendError) as e:
        adreno_mlir.compile(_softmax_model())
    msg = str(e.value)
    assert "model input 'x' has a dynamic shape ['batch', 'seq', 16]" in msg
    for fragment in ("input_shapes={'x': (1, 128, 16)}", "dims={'batch': 1, 'seq': 128}",
                     "--input-shape x:1,128,16", "--dim batch=1 --dim seq=128"):
        assert fragment in msg, msg


@pytest.mark.parametrize("binding, fragments", [
    ({"input_shapes": {"x": (2, 8)}}, ["[2, 8]", "has 2 dims", "'x' has 3", "['batch', 'seq', 16]"]),
    ({"input_shapes": {"x": (2, 8, 32)}}, ["[2, 8, 32]", "fixed size 16", "axis 2", "['batch', 'seq', 16]"]),
    ({"input_shapes": {"z": (1, 2, 16)}}, ["'z'", "not a model input", "inputs are ['x']"]),
    ({"input_shapes": {"w": (16, 16)}}, ["'w'", "initializer"]),
    ({"dims": {"sequence": 8}}, ["'sequence'", "no model input names", "['batch', 'seq']"]),
    ({"dims": {"batch": 2}, "input_shapes": {"x": (1, 3, 16)}}, ["dim 'batch'", "bound twice", "1", "2"]),
    ({"dims": {"batch": 0, "seq": 2}}, ["dims['batch'] is 0", "positive"]),
    ({"dims": {"batch": 1.5, "seq": 2}}, ["dims['batch']", "positive integer"]),
    ({"input_shapes": {"x": (1, -3, 16)}}, ["input_shapes['x'] axis 1 is -3", "positive"]),
    ({"input_shapes": {"x": "1,3,16"}}, ["input_shapes['x']", "sequence of positive integers"]),
    ({"dims": {"batch": 1}}, ["'x'", "still has dynamic dims", "[1, 'seq', 16]", "dims={'seq': N}",
                              "--dim seq=N"]),
], ids=["rank", "fixed-dim", "unknown-input", "initializer", "unknown-dim", "conflict", "zero", "float",
        "negative", "string-shape", "still-dynamic"])
def test_binding_refusals(binding, fragments):
    model = _softmax_model()
    before = model.SerializeToString()
    with pytest.raises(FrontendError) as e:
        adreno_mlir.compile(model, **binding)
    for fragment in fragments:
        assert fragment in str(e.value), str(e.value)
    with pytest.raises(FrontendError):
        bind_input_shapes(model, **binding)
    assert model.SerializeToString() == before


def test_two_inputs_conflict_on_a_shared_dim():
    with pytest.raises(FrontendError, match=r"dim 'sequence' is bound twice with different sizes: 6 .* 5"):
        import_onnx(_embedding_model(), input_shapes={"input_ids": (1, 5), "mask": (1, 6)})
    with pytest.raises(FrontendError, match=r"'input_ids' .*'mask' .* still have dynamic dims.*dims=\{'sequence'"):
        import_onnx(_embedding_model(), dims={"batch": 1})


def test_bind_input_shapes_returns_a_bound_copy():
    model = _softmax_model()
    before = model.SerializeToString()
    assert bind_input_shapes(model) is model and bind_input_shapes(model, {}, {}) is model  # nothing to bind
    bound = bind_input_shapes(model, dims={"batch": 2, "seq": 3})
    assert bound is not model and model.SerializeToString() == before

    def dims_of(vi):
        return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]

    assert dims_of(bound.graph.input[0]) == [2, 3, 16]
    assert dims_of(bound.graph.output[0]) == [2, 3, 16] and dims_of(bound.graph.value_info[0]) == [2, 3, 16]
    assert len(bound.graph.initializer) == 1  # a complete model: onnxruntime runs it
    x = RNG.standard_normal((2, 3, 16)).astype(np.float32)
    sess = ort.InferenceSession(bound.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].shape == [2, 3, 16] and sess.run(None, {"x": x})[0].shape == (2, 3, 16)


def test_graph_module_takes_no_shapes():
    module = import_onnx(_softmax_model(), dims={"batch": 1, "seq": 2})
    with pytest.raises(CompileError, match="imported graph module has static shapes"):
        adreno_mlir.compile(module, dims={"batch": 1})
    from adreno_mlir.analyze import analyze_model

    with pytest.raises(CompileError, match="imported graph module has static shapes"):
        analyze_model(module, input_shapes={"x": (1, 2, 16)})
    assert analyze_model(_softmax_model(), dims={"batch": 1, "seq": 2}).costs


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def dyn_path(tmp_path):
    path = tmp_path / "dyn.onnx"
    onnx.save(_softmax_model(), str(path))
    return path


@pytest.fixture
def no_compile(monkeypatch):
    def compile_(*args, **kwargs):
        raise AssertionError("compiled before the checks")

    monkeypatch.setattr(adreno_mlir, "compile", compile_)


@pytest.mark.parametrize("flags, shape", [
    (["--input-shape", "x:2,8,16"], [2, 8, 16]),
    (["--dim", "batch=1", "--dim", "seq=3"], [1, 3, 16]),
], ids=["input-shape", "dim"])
def test_cli_run_binds_shapes(dyn_path, tmp_path, capsys, flags, shape):
    argv = ["run", str(dyn_path), *flags, "--repeat", "1", "--compare", "onnxruntime", "--tolerance", "1e-5",
            "--json", str(tmp_path / "run.json")]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert f"y: shape {shape}" in out and "OK: within tolerance" in out
    import json

    assert json.loads((tmp_path / "run.json").read_text())["inputs"]["x"]["shape"] == shape


def test_cli_run_checks_input_files_against_bound_shapes(dyn_path, tmp_path, capsys, no_compile):
    np.save(tmp_path / "x.npy", np.zeros((1, 4, 16), np.float32))
    argv = ["run", str(dyn_path), "--input-shape", "x:1,8,16", "--input", f"x={tmp_path / 'x.npy'}"]
    assert cli.main(argv) == 1
    assert "has shape [1, 4, 16]; the model expects [1, 8, 16]" in capsys.readouterr().err


def test_cli_binding_errors_come_before_compiling(dyn_path, capsys, no_compile):
    assert cli.main(["run", str(dyn_path), "--dim", "sequence=8"]) == 1
    err = capsys.readouterr().err
    assert "error: dims (--dim) binds 'sequence', which no model input names" in err and "['batch', 'seq']" in err


def test_cli_dynamic_model_without_flags_says_how(dyn_path, capsys):
    assert cli.main(["run", str(dyn_path), "--repeat", "1"]) == 1
    err = capsys.readouterr().err
    assert "--input-shape x:1,128,16" in err and "--dim batch=1 --dim seq=128" in err


@pytest.mark.parametrize("flags, fragment", [
    (["--input-shape", "x"], "argument --input-shape: expected NAME:D1,D2,..."),
    (["--input-shape", "x:1,a,16"], "argument --input-shape: 'x:1,a,16': the dims of 'x' must be positive integers"),
    (["--input-shape", "x:1,0,16"], "must be positive integers"),
    (["--input-shape", "x:1,2,16", "--input-shape", "x:1,3,16"], "input 'x' given twice, as 1,2,16 and 1,3,16"),
    (["--dim", "batch"], "argument --dim: expected NAME=VALUE"),
    (["--dim", "batch=-1"], "argument --dim: 'batch=-1': the size of dim 'batch' must be a positive integer"),
    (["--dim", "batch=1", "--dim", "batch=2"], "argument --dim: dim 'batch' given twice, as 1 and 2"),
], ids=["no-colon", "not-a-number", "zero", "twice", "no-equals", "negative", "dim-twice"])
def test_cli_malformed_flags_are_usage_errors(dyn_path, capsys, flags, fragment):
    for command in ("run", "compile", "analyze", "profile"):
        extra = ["-o", "out.adreno"] if command == "compile" else []
        with pytest.raises(SystemExit) as e:
            cli.main([command, str(dyn_path), *extra, *flags])
        assert e.value.code == 1
        assert fragment in capsys.readouterr().err


def test_cli_input_shape_name_with_a_colon(tmp_path, capsys):
    """TensorFlow exports name inputs "input:0": NAME is everything before the last colon."""
    model = _softmax_model()
    model.graph.input[0].name = "input:0"
    model.graph.node[0].input[0] = "input:0"
    path = tmp_path / "tf.onnx"
    onnx.save(model, str(path))
    assert cli.main(["run", str(path), "--input-shape", "input:0:1,2,16", "--repeat", "1"]) == 0, \
        capsys.readouterr().err
    assert "y: shape [1, 2, 16]" in capsys.readouterr().out


def test_cli_compile_artifact_then_run_it(dyn_path, tmp_path, capsys):
    art = tmp_path / "dyn.adreno"
    assert cli.main(["compile", str(dyn_path), "-o", str(art), "--dim", "batch=1", "--dim", "seq=6",
                     "--no-build"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert cli.main(["run", str(art), "--dim", "batch=2", "--repeat", "1"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "note: --dim ignored: the input shapes are fixed when the artifact is compiled" in out
    assert "y: shape [1, 6, 16]" in out


def test_cli_analyze_and_profile_take_the_flags(dyn_path, tmp_path, capsys):
    assert cli.main(["analyze", str(dyn_path), "--input-shape", "x:1,4,16"]) == 0, capsys.readouterr().err
    assert "total:" in capsys.readouterr().out
    argv = ["profile", str(dyn_path), "--dim", "batch=1", "--dim", "seq=4", "--repeat", "1", "--warmup", "0",
            "--json", str(tmp_path / "p.json")]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert cli.main(["analyze", str(dyn_path)]) == 1
    assert "--input-shape x:1,128,16" in capsys.readouterr().err


def test_tune_checks_the_binding_before_starting_workers(dyn_path, tmp_path):
    from adreno_mlir.tuning.tuner import tune

    with pytest.raises(FrontendError, match="no model input names"):
        tune(str(dyn_path), str(tmp_path / "t.db"), dims={"sequence": 4}, progress=False)


def test_tune_worker_imports_with_the_bound_shapes(dyn_path, tmp_path):
    from adreno_mlir.tuning.worker import Job, _Measurer

    spaces = _Measurer(Job(str(dyn_path), dims={"batch": 1, "seq": 4}), str(tmp_path)).spaces
    assert spaces and all("1x4x16" in sp.signature for sp in spaces)
