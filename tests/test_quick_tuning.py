"""Quick tuning (issue 30): the tuner's search ordered by a learned cost model, and
`compile(tune_budget_s=...)`.

A cost model trained on synthetic rows that make one conv configuration 3x faster must
make a guided search measure that configuration first (a search without the model would
measure another one first: checked), rounds take the kernels predicted to gain most first,
and the report says what was predicted and what was measured. On PoCL (no artifact ships
for it) the default stays the unguided search."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

import adreno_mlir
from adreno_mlir.errors import CompileError
from adreno_mlir.tuning import cost_model as cmod
from adreno_mlir.tuning.db import TuningDB, canonical
from adreno_mlir.tuning.tuner import GAIN_FLOOR, Search, format_report, tune
from tests.test_tuning import _small_model, run_cli, spaces_of

pytest.importorskip("pyopencl")
pytest.importorskip("optuna")

QUICK = {"repeat": 3, "progress": False, "seed": 0, "compile_options": {"layout": "nchw"}}  # test_tuning.NCHW
FAST = {"kernel": "vec4", "co_block": 4, "x_block": 2}
"""The conv configuration the synthetic rows make 3x faster (any work_group)."""


def _fast(cfg: dict) -> bool:
    return all(cfg.get(k) == v for k, v in FAST.items())


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("models") / "small.onnx"
    onnx.save(_small_model(), str(path))
    return str(path)


@pytest.fixture(scope="module")
def small_spaces(small) -> dict:
    return spaces_of(small)


@pytest.fixture(scope="module")
def guide(small_spaces, tmp_path_factory) -> str:
    """An artifact predicting the FAST conv configs at 0.3 of the default, the rest slower."""
    pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    samples = []
    for sig, sp in small_spaces.items():
        for cfg in sp.candidates():
            default = cfg == sp.default
            t = 1.0 if default else (0.3 if sp.kind == "conv" and _fast(cfg) else 1.1 + rng.random())
            samples.append(cmod.Sample(("d", "1", "c"), sig, cfg, default, "ok", t, "small", "Test / dev"))
    model = cmod.train(samples, profile="test", device_match="no-such-device", params={"min_data_in_leaf": 2})
    path = tmp_path_factory.mktemp("guide") / "guide.json"
    model.save(path)
    return str(path)


def _conv(small_spaces) -> str:
    (sig,) = [s for s, sp in small_spaces.items() if sp.kind == "conv"]
    return sig


def test_guided_search_measures_the_predicted_fastest_first(small_spaces, guide):
    sig = _conv(small_spaces)
    sp = small_spaces[sig]
    model = cmod.load(guide)
    cands = sp.candidates()[1:]
    ratios = model.ratios(sig, sp.default, cands)
    predicted = {canonical(c): float(r) for c, r in zip(cands, ratios)}
    assert not _fast(cands[0]), "the unguided order starts with the fast config: the test would prove nothing"
    assert len(cands) + 1 > 8, "the space fits in the trials: the TPE hand-over would not be tested"
    s = Search(sp, trials=8, seed=0, predicted=predicted)
    assert s.guided and s.predicted_best() < 0.6 and s.study is not None
    first = s.next()
    assert _fast(first), first
    # the model's GUIDED_FIRST picks come in order of predicted time
    second = s.next()
    assert predicted[canonical(first)] <= predicted[canonical(second)]
    # the predicted gain of the next candidate is measured against the best time known
    default_ms = 1.0
    s.tell(first, "ok", 0.05)
    s.tell(second, "ok", 1.2)
    nxt = s.next_gain(default_ms)
    upcoming = [c for c in s._prefix if canonical(c) not in s.known][0]
    assert nxt == pytest.approx(0.05 - predicted[canonical(upcoming)] * default_ms)
    assert nxt < GAIN_FLOOR * default_ms  # nothing left is predicted to beat 0.05 ms
    # the guided picks were told to the TPE study, which picks the rest (no prediction: gain 0)
    # (those whose config is a point of the dimensions: a work_group () is not one)
    assert 1 <= len(s.study.trials) <= 2 and min(t.value for t in s.study.trials) == 0.05
    third = s.next()
    assert canonical(third) == canonical(upcoming)
    s.tell(third, "ok", 0.9)
    assert s.next_gain(default_ms) == 0.0
    fourth = s.next()
    assert fourth is not None and canonical(fourth) not in {canonical(c) for c in (first, second, third)}
    # unguided, nothing is predicted
    plain = Search(sp, trials=4, seed=0)
    assert not plain.guided and plain.predicted_best() == 1.0


def test_guided_tune_spends_the_first_round_on_the_predicted_gain(small, small_spaces, guide, tmp_path):
    db_path = tmp_path / "t.db"
    rep = tune(small, str(db_path), trials=2, cost_model=guide, **QUICK)
    sig = _conv(small_spaces)
    assert rep.cost_model == "guide.json" and rep.guided == len(small_spaces)
    assert rep.predicted_speedup is not None and rep.predicted_speedup > 1.0
    assert rep.kernel_speedup is not None and rep.kernel_speedup >= 1.0
    with TuningDB(db_path) as db:
        rows = [r for r in db.rows(rep.device) if not r.is_default]
    conv_rows = [r for r in rows if r.signature == sig]
    assert len(conv_rows) == 1 and _fast(conv_rows[0].config), conv_rows
    # the other kernels (predicted slower in every candidate) are measured only after it:
    # with trials=2 each gets one candidate, the conv's alone in the first round, theirs in
    # the second (unguided, the three would share one round)
    assert {r.signature for r in rows} == set(small_spaces)
    assert rep.rounds == 2
    text = format_report(rep)
    assert "search ordered by the cost model guide.json" in text and "predicted x" in text


def test_default_tune_on_pocl_is_unguided(small, tmp_path):
    rep = tune(small, str(tmp_path / "t.db"), trials=2, **QUICK)
    assert rep.cost_model == "" and rep.guided == 0 and rep.predicted_speedup is None
    assert rep.rounds == 1  # every kernel's one candidate in one round
    assert "cost model" not in format_report(rep)


def test_bad_cost_model_fails_before_the_workers_start(small, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(CompileError, match="bad.json"):
        tune(small, str(tmp_path / "t.db"), trials=2, cost_model=str(bad), **QUICK)
    r = run_cli("tune", small, "--db", str(tmp_path / "t.db"), "--cost-model", str(tmp_path / "missing.json"),
                "--no-progress")
    assert r.returncode != 0 and "missing.json" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_compile_with_a_tuning_budget_tunes_then_uses_the_database(small, tmp_path):
    import onnxruntime as ort

    db = tmp_path / "quick.db"
    cm = adreno_mlir.compile(small, layout="nchw", tune_budget_s=5, tuning_db=db)
    rep = cm.tune_report
    assert rep is not None and rep.seconds > 0 and db.is_file()
    with TuningDB(db) as t:
        assert any(not r.is_default for r in t.rows(rep.device))
        best = t.best_configs(rep.device)
    assert best == rep.chosen
    if rep.chosen:  # the chosen entries are the compile's overrides
        overrides = json.loads(open(cm.compile_plan.overrides_file).read())
        assert all(overrides.get(sig) is not None for sig in rep.chosen)
    x = np.random.default_rng(3).standard_normal((1, 8, 16, 16)).astype(np.float32)
    expected = ort.InferenceSession(small, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(cm.run({"x": x})["y"], expected, rtol=1e-4, atol=1e-5)


def test_compile_tuning_budget_errors_name_the_fix(small):
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.plan import make_plan

    with pytest.raises(CompileError, match="positive number of seconds"):
        adreno_mlir.compile(small, layout="nchw", tune_budget_s=0)
    with pytest.raises(CompileError, match="pass the .onnx file"):
        adreno_mlir.compile(import_onnx(small), tune_budget_s=5)
    with pytest.raises(CompileError, match="make_plan"):
        adreno_mlir.compile(small, tune_budget_s=5, plan=make_plan())
