"""The tuner's per-node choices (issue 30): every conv that can take a Winograd tile is a
search of its own over {direct, F(2,3), F(4,3)}, timed over all its kernels (a conv + ReLU
kernel carries the ReLU's node); every kernel result in an image a search over {image,
buffer}, timed over its writer and readers. They run in rounds without kernel candidates,
and in a round no two choices share a kernel. Their database entries are
`loc:NODE@model:KEY` (and `...#scope`), which conv-winograd and annotate-texture-scope apply
to that model only.

On PoCL with the texture plan (the plan where conv-winograd and annotate-texture-scope run)."""

from __future__ import annotations

import json
import re
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.lowering.families import MODEL_SCOPE
from adreno_mlir.tuning.db import Row, TuningDB, device_key
from adreno_mlir.tuning.space import NODE_KIND
from adreno_mlir.tuning.tuner import format_report, tune

pytest.importorskip("pyopencl")
pytest.importorskip("optuna")

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # `tune_faults` (the request log) for the worker's child

TEXTURES = {"textures": True}
QUICK = {"repeat": 3, "progress": False, "seed": 0, "compile_options": TEXTURES}


def _two_convs(seed: int = 0) -> onnx.ModelProto:
    """x -> 3x3 conv (eligible) -> ReLU -> 3x3 stride-2 conv (not eligible) -> y."""
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2])]
    g = helper.make_graph(nodes, "two_convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w1, w2])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("models") / "two_convs.onnx"
    onnx.save(_two_convs(), str(path))
    return str(path)


@pytest.fixture(scope="module")
def measurer(model):
    from adreno_mlir.tuning.worker import Job, _Measurer

    with tempfile.TemporaryDirectory() as scratch:
        yield _Measurer(Job(model, compile_options=TEXTURES), scratch)


def _kernels(cm) -> list[str]:
    return re.findall(r"__kernel void (\w+)", cm.source)


def _notes(rec) -> list[str]:
    """adreno-mlir's warnings among those recorded (not the OpenCL compiler's)."""
    return [str(w.message) for w in rec if "select-kernel-config" in str(w.message) or "tuning" in str(w.message)]


def _feeds() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(1).standard_normal((1, 8, 16, 16)).astype(np.float32)}


def _winograd(spaces) -> list:
    return [sp for sp in spaces if "winograd" in dict(sp.dims)]


def _scopes(spaces) -> dict:
    return {sp.name: sp for sp in spaces if "scope" in dict(sp.dims)}


def test_only_eligible_convs_get_a_node_search_timed_over_their_fused_kernels(measurer, model):
    (space,) = _winograd(measurer.node_spaces)  # conv2 has stride 2: no Winograd, no search
    assert space.kind == NODE_KIND and space.name == "conv1"
    assert space.signature.startswith(f"loc:conv1{MODEL_SCOPE}")
    assert dict(space.dims) == {"winograd": (0, 2, 4)}
    # the default is the tile the plan gives conv1 without overrides
    cm = adreno_mlir.compile(model, textures=True)
    default_is_winograd = any("winograd" in k for k in _kernels(cm))
    assert (space.default["winograd"] > 0) == default_is_winograd
    # the conv's fused ReLU carries the ReLU's node: both count towards conv1's time
    assert space.footprint == {"conv1", "relu1"}
    assert space.signature in measurer.node_keys["conv1"] and space.signature in measurer.node_keys["relu1"]
    assert space.signature not in measurer.node_keys.get("conv2", [])


def test_each_stored_image_gets_an_image_or_buffer_search_over_its_writer_and_readers(measurer):
    scopes = _scopes(measurer.node_spaces)
    assert "relu1" in scopes, scopes  # the texture plan puts it in an image (the suite's devices have images)
    relu = scopes["relu1"]
    assert relu.signature.endswith("#scope") and relu.default == {"scope": "image"}
    assert dict(relu.dims) == {"scope": ("image", "buffer")}
    # written by the conv1 + ReLU kernel, read by conv2's
    assert relu.footprint == {"conv1", "relu1", "conv2"}
    # the convs' internal tensors (a Winograd conv's V and M) are no node's result
    assert "conv1" not in scopes


def test_tune_measures_every_tile_and_the_database_entry_drives_conv_winograd(model, tmp_path, monkeypatch):
    import onnxruntime as ort

    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    db_path = tmp_path / "t.db"
    rep = tune(model, str(db_path), trials=3, **QUICK)
    (node,) = [s for s in rep.signatures if s.kind == NODE_KIND and "#" not in s.signature]
    assert node.measured == 3 and node.failed == 0, node  # direct, F(2,3) and F(4,3), all fine
    assert "per-node choices" in format_report(rep)
    with TuningDB(db_path) as db:
        rows = [r for r in db.rows(rep.device) if r.signature == node.signature]
    assert sorted(r.config["winograd"] for r in rows) == [0, 2, 4]
    # whatever was decided, compiling with the database gives that tile and the right numbers
    cm = adreno_mlir.compile(model, textures=True, tuning_db=db_path)
    overrides = json.loads(Path(cm.compile_plan.overrides_file).read_text())
    (default,) = [r.config for r in rows if r.is_default]
    # no entry where the database's best is the default (timing noise on a loaded machine
    # can make it so): conv-winograd then keeps its rule, the default's tile
    tile = overrides.get(node.signature, default)["winograd"]
    assert tile == rep.chosen.get(node.signature, default)["winograd"]
    names = _kernels(cm)
    assert any(f"winograd_input_f{tile}" in k for k in names) if tile else not any("winograd" in k for k in names)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, _feeds())[0]
    np.testing.assert_allclose(cm.run(_feeds())["y"], ref, rtol=1e-4, atol=1e-4)


def test_a_round_never_holds_two_choices_that_share_a_kernel(model, measurer, tmp_path, monkeypatch):
    log = tmp_path / "requests.log"
    monkeypatch.setenv("TUNE_FAULT_LOG", str(log))
    monkeypatch.setenv("TUNE_FAULT", "build")
    monkeypatch.setenv("TUNE_FAULT_PREFIX", "no-such-signature")  # never hits: the hook only logs
    rep = tune(model, str(tmp_path / "t.db"), trials=3, fault_hook="tune_faults:always", **QUICK)
    footprint = {sp.signature: sp.footprint for sp in measurer.node_spaces}
    # the search's rounds come first (nothing failed: no bisection), then the model check's runs
    rounds = [json.loads(line)["signatures"] for line in log.read_text().splitlines()][: rep.rounds]
    node_rounds = [r for r in rounds if any(sig in footprint for sig in r)]
    assert node_rounds, rounds
    for r in node_rounds:
        assert all(sig in footprint for sig in r), r  # no kernel candidate beside them
        for i, a in enumerate(r):
            for b in r[i + 1:]:
                assert not footprint[a] & footprint[b], (a, b)
    # every per-node candidate was measured: 2 other tiles, 1 other scope each
    measured = sum(len(r) for r in node_rounds)
    assert measured == sum(len(dict(sp.dims)[next(iter(sp.default))]) - 1 for sp in measurer.node_spaces)


def test_a_decided_scope_is_applied_to_its_model(measurer, model, tmp_path, monkeypatch):
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    scopes = _scopes(measurer.node_spaces)
    assert "relu1" in scopes, scopes
    key = device_key(adreno_mlir.compile(_two_convs(), textures=True).executable.context.devices[0])
    with TuningDB(tmp_path / "t.db") as db:
        db.record(key, [Row(scopes["relu1"].signature, {"scope": "image"}, True, "ok", 1.0, (1.0,)),
                        Row(scopes["relu1"].signature, {"scope": "buffer"}, False, "ok", 0.5, (0.5,))])
        db.decide(key, {scopes["relu1"].signature: {"scope": "buffer"}}, "two_convs")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cm = adreno_mlir.compile(model, textures=True, tuning_db=tmp_path / "t.db", keep_ir=True)
    assert not _notes(rec)
    (line,) = [x for x in cm.stage_ir["scope"].splitlines() if "graph.relu" in x and 'loc("relu1")' in x]
    assert "#texture.image" not in line.split("->")[-1], line  # the ReLU's result is a buffer now
    import onnxruntime as ort

    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, _feeds())[0]
    np.testing.assert_allclose(cm.run(_feeds())["y"], ref, rtol=1e-4, atol=1e-4)


def _db_with_tile(path: Path, signature: str, tile: int) -> None:
    key = device_key(adreno_mlir.compile(_two_convs(), textures=True).executable.context.devices[0])
    with TuningDB(path) as db:
        db.record(key, [Row(signature, {"winograd": 4}, True, "ok", 1.0, (1.0,)),
                        Row(signature, {"winograd": tile}, False, "ok", 0.5, (0.5,))])
        db.decide(key, {signature: {"winograd": tile}}, "two_convs")


@pytest.mark.parametrize("tile", [0, 2, 4])
def test_a_decided_tile_is_applied_to_its_model(measurer, model, tmp_path, monkeypatch, tile):
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    (space,) = _winograd(measurer.node_spaces)
    _db_with_tile(tmp_path / "t.db", space.signature, tile)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cm = adreno_mlir.compile(model, textures=True, tuning_db=tmp_path / "t.db")
    assert not _notes(rec)  # the scoped entry is no "matched no op" note
    names = _kernels(cm)
    assert any(f"winograd_input_f{tile}" in k for k in names) if tile else not any("winograd" in k for k in names)


def test_another_models_entry_for_a_node_of_the_same_name_is_skipped(model, tmp_path, monkeypatch):
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    # conv2 of this model cannot take Winograd: a plain entry asking for it is an error ...
    with pytest.raises(adreno_mlir.CompileError, match="conv2"):
        adreno_mlir.compile(model, textures=True, overrides={"loc:conv2": {"winograd": 2}})
    # ... but another model's scoped entry for its own `conv2` is not this model's business
    _db_with_tile(tmp_path / "t.db", f"loc:conv2{MODEL_SCOPE}0123456789ab", 2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cm = adreno_mlir.compile(model, textures=True, tuning_db=tmp_path / "t.db")
    assert not _notes(rec)
    plain = adreno_mlir.compile(model, textures=True)
    assert _kernels(cm) == _kernels(plain)


def test_model_key_is_the_same_where_both_passes_read_it(model):
    from adreno_mlir.context import make_context
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.passes.conv_winograd import model_key
    from adreno_mlir.pipeline import run_stages
    from adreno_mlir.plan import make_plan

    plan = make_plan(textures=True, cost_model=None)
    stages = plan.stages(until="scope")
    names = [n for n, _ in stages]
    m = import_onnx(model)
    run_stages(make_context(), m, stages[: names.index("winograd")])
    before = model_key(m)
    run_stages(make_context(), m, stages[names.index("winograd"):])  # conv-winograd, annotate-texture-scope
    assert model_key(m) == before
    other = import_onnx(_small_model_path(model))
    assert model_key(other) != model_key(import_onnx(model))


def _small_model_path(model: str) -> str:
    from tests.test_tuning import _small_model

    path = Path(model).with_name("small.onnx")
    onnx.save(_small_model(), str(path))
    return str(path)
