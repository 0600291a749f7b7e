"""Integer model inputs (issue 12): token ids feeding a Gather (an embedding lookup) compile
to `graph.take` with an i32 input buffer and run on every plan; any other reader reads the
input as float-held integers (`graph.int_to_float`, tests/test_int_tensors.py); the runtime
refuses ids outside the table. Tolerance against onnxruntime: 1e-5 of max |ref| (fp32)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import CompileError
from adreno_mlir.runtime.model import InputError

RNG = np.random.default_rng(5)
V, E, L = 50, 16, 12
PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "nchw4c": dict(layout="nchw4c", textures=False),
    "textures": dict(textures=True),
    "textures-fp16": dict(textures=True, precision="fp16-acc32"),
}


def _embedding_model(id_type=TensorProto.INT64, extra_nodes=(), extra_outputs=()):
    """ids [1, L] -> Gather(table [V, E]) + position embedding -> LayerNorm -> MatMul, the
    front of a BERT encoder."""
    inits = [numpy_helper.from_array(RNG.standard_normal((V, E)).astype(np.float32), "table"),
             numpy_helper.from_array(RNG.standard_normal((1, L, E)).astype(np.float32), "pos"),
             numpy_helper.from_array(RNG.standard_normal(E).astype(np.float32), "s"),
             numpy_helper.from_array(RNG.standard_normal((E, 8)).astype(np.float32), "w")]
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed", axis=0),
             helper.make_node("Add", ["e", "pos"], ["a"]),
             helper.make_node("LayerNormalization", ["a", "s"], ["n"], axis=-1),
             helper.make_node("MatMul", ["n", "w"], ["y"]), *extra_nodes]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, L, 8]), *extra_outputs]
    g = helper.make_graph(nodes, "embedding", [helper.make_tensor_value_info("ids", id_type, [1, L])], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _reference(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_embedding_lookup_matches_onnxruntime(plan):
    model = _embedding_model()
    ids = RNG.integers(-V, V, (1, L)).astype(np.int64)  # negative ids count from the end
    cm = adreno_mlir.compile(model, **PLANS[plan])
    assert "__kernel void take(__global const float* input, __global const int* ids," in cm.source
    got = cm.run({"ids": ids})["y"]
    ref = _reference(model, {"ids": ids})
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-5
    assert cm.launch_plan.inputs[0].dtype == "i32" and cm.launch_plan.inputs[0].bound == V


def test_int32_ids_and_saved_artifact(tmp_path):
    """An artifact with token ids is format version 2 (its manifest has an i32 input with
    a bound); float-only artifacts stay version 1, which the C runtime reads."""
    import json

    model = _embedding_model(TensorProto.INT32)
    ids = RNG.integers(0, V, (1, L)).astype(np.int32)
    cm = adreno_mlir.compile(model)
    path = tmp_path / "embedding.adreno"
    cm.save(str(path))
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == 2
    assert manifest["inputs"][0]["dtype"] == "i32" and manifest["inputs"][0]["bound"] == V
    loaded = adreno_mlir.load(str(path))
    ref = _reference(model, {"ids": ids})
    for m in (cm, loaded):
        got = m.run({"ids": ids})["y"]
        assert float(np.abs(got - ref).max() / np.abs(ref).max()) <= 1e-5


@pytest.mark.parametrize("plan", ["nchw", "textures"])
def test_ids_reshaped_before_the_gather(plan):
    """GPT-2's dynamo export views `input_ids` as [-1, L] before the embedding Gather
    (and may flatten or unsqueeze them): the lookup reads the ids as given and the rows
    are reshaped instead; the bound is still checked on the input."""
    table = numpy_helper.from_array(RNG.standard_normal((V, E)).astype(np.float32), "table")
    shape = numpy_helper.from_array(np.array([-1, L], np.int64), "shape")
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    nodes = [helper.make_node("Reshape", ["ids", "shape"], ["v"], name="view"),
             helper.make_node("Unsqueeze", ["v", "axes"], ["u"], name="unsqueeze"),
             helper.make_node("Gather", ["table", "u"], ["e"], name="embed", axis=0),
             helper.make_node("Relu", ["e"], ["y"])]
    g = helper.make_graph(nodes, "view_embed", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 1, L])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, L, E])], [table, shape, axes])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    ids = RNG.integers(-V, V, (1, 1, L)).astype(np.int64)
    cm = adreno_mlir.compile(model, **PLANS[plan])
    got = cm.run({"ids": ids})["y"]
    np.testing.assert_allclose(got, _reference(model, {"ids": ids}), rtol=0, atol=0)
    assert cm.launch_plan.inputs[0].bound == V
    ids[0, 0, 1] = V
    with pytest.raises(InputError, match="outside"):
        cm.run({"ids": ids})


def test_ids_outside_the_table_are_refused():
    cm = adreno_mlir.compile(_embedding_model())
    ids = np.zeros((1, L), np.int64)
    ids[0, 3] = V
    with pytest.raises(InputError, match=rf"input 'ids' has ids \[{V}\] outside \[-{V}, {V}\)"):
        cm.run({"ids": ids})
    ids[0, 3] = -V - 1
    with pytest.raises(InputError, match="outside"):
        cm.run({"ids": ids})
    with pytest.raises(InputError, match="expected integer token ids"):
        cm.run({"ids": ids.astype(np.float32)})


def test_integer_input_used_as_a_tensor_is_converted():
    """An integer input also read by other nodes than a Gather's indices keeps its i32 ids
    for the Gather and is converted once for the others (graph.int_to_float); the bound
    stays the table's, the tighter of it and 2**24."""
    cast = helper.make_node("Cast", ["ids"], ["f"], name="ids_to_float", to=TensorProto.FLOAT)
    model = _embedding_model(extra_nodes=[cast],
                             extra_outputs=[helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, L])])
    cm = adreno_mlir.compile(model)
    ids = RNG.integers(-V, V, (1, L)).astype(np.int64)
    np.testing.assert_array_equal(cm.run({"ids": ids})["f"], ids.astype(np.float32))
    assert cm.launch_plan.inputs[0].bound == V and "int_to_float" in cm.source


def test_other_integer_element_types_are_refused():
    with pytest.raises(CompileError, match=r"model input 'ids' has element type uint8"):
        adreno_mlir.compile(_embedding_model(TensorProto.UINT8))


def test_cli_runs_random_token_ids(tmp_path):
    """`adreno-mlir run` draws random ids within the table for an integer input."""
    import onnx

    path = tmp_path / "embedding.onnx"
    onnx.save(_embedding_model(), str(path))
    r = subprocess.run([sys.executable, "-m", "adreno_mlir.cli", "run", str(path), "--compare", "onnxruntime",
                        "--repeat", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "OK: within tolerance" in r.stdout
