"""The auto-tuner (adreno_mlir.tuning) on PoCL: failures of every kind are isolated and
recorded, never chosen; an interrupted run resumes; a database's rows of other devices
or compilers are ignored; compile(tuning_db=) applies the best entries; Ray workers;
export/import; the CLI.

Faults are acted out by the worker through `Job.fault_hook` (tests/tune_faults.py,
imported in the worker's child process: the tests folder is put on sys.path here, and a
spawned child gets the parent's sys.path)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.tuning.db import (
    DeviceKey,
    Row,
    TuningDB,
    TuningDBError,
    compiler_version,
    device_key,
)
from adreno_mlir.tuning.tuner import tune

pytest.importorskip("pyopencl")
pytest.importorskip("optuna")

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # `tune_faults` for the worker's child (spawned with this sys.path)

REPO = TESTS.parent
NCHW = {"layout": "nchw"}
"""The plan these tests tune: the NCHW buffer plan, whose kernels (conv, gemm, reduce) and keys
they name (the CPU default is NCHW4c since issue 30's layout measurements)."""
QUICK = {"repeat": 3, "progress": False, "seed": 0, "compile_options": NCHW}
GEMM = "graph.gemm"
MEASURED_OK = ("ok", "slower_in_model")
"""Statuses of a candidate that ran fine: the model-level check marks a chosen one that
did not make the whole model faster `slower_in_model` afterwards (timing noise on PoCL)."""


# --------------------------------------------------------------------------- models


def _small_model(seed: int = 0) -> onnx.ModelProto:
    """Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm: three tunable kernel
    signatures (an NCHW conv, a reduction, a gemm)."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b"),
             numpy_helper.from_array((rng.standard_normal((10, 8)) * 0.3).astype(np.float32), "gw"),
             numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "gb")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "gw", "gb"], ["y"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _gemm_model(seed: int = 0) -> onnx.ModelProto:
    """One Gemm: the model's only tunable kernel."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((16, 32)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32), "b")]
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, name="fc")], "gemm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("models") / "small.onnx"
    onnx.save(_small_model(), str(path))
    return str(path)


@pytest.fixture(scope="module")
def gemm_only(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("models") / "gemm.onnx"
    onnx.save(_gemm_model(), str(path))
    return str(path)


@pytest.fixture(scope="module")
def tinynet(tmp_path_factory) -> str:
    from adreno_mlir.examples import write_example

    return str(write_example("tinynet", tmp_path_factory.mktemp("models") / "tinynet.onnx"))


def spaces_of(model: str) -> dict:
    """{signature: Space} as the tuner's worker sees the model (computed in this process)."""
    import tempfile

    from adreno_mlir.tuning.worker import Job, _Measurer

    with tempfile.TemporaryDirectory() as scratch:
        return {sp.signature: sp for sp in _Measurer(Job(model, compile_options=NCHW), scratch).spaces}


@pytest.fixture(scope="module")
def small_spaces(small) -> dict:
    spaces = spaces_of(small)
    assert sorted(sp.kind for sp in spaces.values()) == ["conv", "gemm", "reduce"], spaces
    return spaces


def sig_of(spaces: dict, kind: str) -> str:
    (sig,) = [s for s, sp in spaces.items() if sp.kind == kind]
    return sig


@pytest.fixture(scope="module")
def this_key() -> DeviceKey:
    from adreno_mlir.runtime import default_context

    return device_key(default_context(None).devices[0])


@pytest.fixture
def faults(monkeypatch, tmp_path):
    """Sets the fault hooks' parameters (the worker's child inherits the environment);
    returns the log file every hook call is written to."""
    log = tmp_path / "faults.log"
    monkeypatch.setenv("TUNE_FAULT_LOG", str(log))
    monkeypatch.setenv("TUNE_FAULT_MARKER", str(tmp_path / "fault.marker"))

    def set_fault(fault: str, prefix: str = GEMM) -> Path:
        monkeypatch.setenv("TUNE_FAULT", fault)
        monkeypatch.setenv("TUNE_FAULT_PREFIX", prefix)
        return log

    return set_fault


def hook_calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def run_cli(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300, check=False, **kw)


# --------------------------------------------------------------------------- failures


@pytest.mark.slow  # a whole tuning run per fault, with bisection
@pytest.mark.parametrize("fault, status", [("build", "build_error"), ("wrong", "wrong_output")])
def test_failing_signature_is_bisected_recorded_and_never_chosen(small, small_spaces, faults, tmp_path, fault, status):
    """Every round with a gemm candidate fails: bisection pins the failure on the gemm
    configurations; the conv and reduction candidates of the same rounds count."""
    log = faults(fault)
    db_path = tmp_path / "t.db"
    rep = tune(small, str(db_path), trials=3, fault_hook="tune_faults:always", **QUICK)
    gemm = sig_of(small_spaces, "gemm")
    calls = hook_calls(log)
    assert any(c["fault"] == fault for c in calls), calls  # the hook ran in the worker and acted
    # some round held more than the gemm: it failed whole and was split
    assert any(len(c["signatures"]) > 1 and GEMM in "".join(c["signatures"]) for c in calls), calls

    with TuningDB(db_path) as db:
        rows = db.rows(rep.device)
        best = db.best_configs(rep.device, margin=0.0)
    measured = [r for r in rows if not r.is_default]
    failed = [r for r in measured if r.status not in MEASURED_OK]
    assert failed and {r.signature for r in failed} == {gemm}, [(r.signature[:30], r.status) for r in failed]
    assert {r.status for r in failed} == {status}
    assert all(r.median_ms is None and r.error for r in failed)
    assert len(failed) == 2  # trials=3: the default (the baseline) and two candidates
    others = [r for r in measured if r.signature != gemm]
    assert len(others) == 4 and all(r.status in MEASURED_OK for r in others), others
    assert all(r.median_ms > 0 for r in others if r.status == "ok")
    assert {r.signature for r in others} == set(small_spaces) - {gemm}
    assert rep.failures == {status: 2}
    # never chosen: neither by the report nor by the database
    failed_configs = [r.config for r in failed]
    assert gemm not in rep.chosen and gemm not in best
    assert not any(cfg in failed_configs for cfg in list(rep.chosen.values()) + list(best.values()))
    (gemm_report,) = [s for s in rep.signatures if s.signature == gemm]
    assert gemm_report.failed == 2 and gemm_report.config is None


@pytest.mark.slow  # waits out a timeout and a worker restart
def test_hang_times_out_and_worker_restarts(gemm_only, faults, tmp_path):
    """The first gemm candidate hangs the worker: it is killed after timeout_s and that
    candidate is a `timeout`; a fresh worker measures the next candidates."""
    from adreno_mlir.tuning.worker import DeviceWorker, Job

    spaces = spaces_of(gemm_only)
    assert [sp.kind for sp in spaces.values()] == ["gemm"], spaces
    (gemm,) = spaces
    timeout = 10.0
    # a normal measurement (a compile with a new configuration, the check, the timed
    # runs) takes a small part of the timeout used here
    w = DeviceWorker(Job(gemm_only, repeat=3, compile_options=NCHW))
    try:
        w.start()
        res = w.measure({gemm: spaces[gemm].candidates()[1]}, 60)
        assert res.status == "ok" and res.seconds < timeout / 4, res
    finally:
        w.stop()

    faults("hang")
    start = time.perf_counter()
    rep = tune(gemm_only, str(tmp_path / "t.db"), trials=3, timeout_s=timeout, fault_hook="tune_faults:first_config",
               **QUICK)
    seconds = time.perf_counter() - start
    assert timeout <= seconds < timeout + 45, seconds  # one timeout paid, not more
    with TuningDB(tmp_path / "t.db") as db:
        rows = [r for r in db.rows(rep.device) if not r.is_default]
    by_status = {}
    for r in rows:
        by_status.setdefault(r.status, []).append(r)
    assert len(by_status.get("timeout", [])) == 1, rows
    assert "gave no answer within" in by_status["timeout"][0].error
    hung = json.loads(Path(os.environ["TUNE_FAULT_MARKER"]).read_text())
    assert hung["signature"] == gemm
    assert canonical_cfg(by_status["timeout"][0].config) == canonical_cfg(hung["config"])
    # after the kill, a restarted worker measured the other candidate and the model
    ran = [r for r in rows if r.status in MEASURED_OK]
    assert len(ran) == 1 and len(rows) == 2, rows
    assert rep.failures == {"timeout": 1}
    assert np.isfinite(rep.untuned_ms) and rep.untuned_ms > 0
    assert gemm not in rep.chosen or rep.chosen[gemm] != by_status["timeout"][0].config


def canonical_cfg(cfg: dict) -> str:
    from adreno_mlir.tuning.db import canonical

    return canonical({k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()})


def test_crash_is_recorded_and_the_rest_still_measured(small, small_spaces, faults, tmp_path):
    """The worker dies (os._exit) in every round holding one gemm configuration: the
    round is bisected (a restart each time), only that configuration is a `crash`, and
    the restarted worker measures the others."""
    log = faults("crash")
    rep = tune(small, str(tmp_path / "t.db"), trials=3, fault_hook="tune_faults:first_config", **QUICK)
    gemm = sig_of(small_spaces, "gemm")
    with TuningDB(tmp_path / "t.db") as db:
        rows = [r for r in db.rows(rep.device) if not r.is_default]
        best = db.best_configs(rep.device, margin=0.0)
    crashed = [r for r in rows if r.status == "crash"]
    assert len(crashed) == 1 and crashed[0].signature == gemm, [(r.signature[:30], r.status) for r in rows]
    assert "died" in crashed[0].error
    assert all(r.status in MEASURED_OK for r in rows if r is not crashed[0]), rows
    assert len(rows) == 6  # 2 candidates for each of the 3 signatures
    assert rep.failures == {"crash": 1}
    assert crashed[0].config not in rep.chosen.values() and crashed[0].config not in best.values()
    # the crash happened in a round of all three kernels, then in its half, then alone;
    # each time the worker came back
    crashes = [c for c in hook_calls(log) if c["fault"] == "crash"]
    assert [len(c["signatures"]) for c in crashes] == [3, 2, 1], crashes
    assert np.isfinite(rep.untuned_ms)


# --------------------------------------------------------------------------- resume


@pytest.mark.slow  # a whole CLI run interrupted and resumed (~30 s on two cores)
def test_interrupted_cli_run_resumes_without_measuring_again(tinynet, tmp_path):
    db_path = tmp_path / "t.db"
    args = [sys.executable, "-m", "adreno_mlir.cli", "tune", tinynet, "--db", str(db_path), "--trials", "6",
            "--repeat", "3", "--no-progress", "--layout", "nchw"]  # spaces_of's plan (NCHW)
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"finished before it could be interrupted: {proc.communicate()}"
            assert time.monotonic() < deadline, "no measurement within 120 s"
            if db_path.is_file():
                try:
                    with sqlite3.connect(db_path) as c:
                        n = c.execute("SELECT COUNT(*) FROM measurements WHERE is_default = 0").fetchone()[0]
                except sqlite3.OperationalError:  # the tables are being created
                    n = 0
                if n:
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert f"interrupted: every finished measurement is in {db_path}" in err and "again to resume" in err, err
    assert "Traceback" not in err, err

    def snapshot():
        with sqlite3.connect(db_path) as c:
            return {(sig, cfg): (status, created) for sig, cfg, status, created in c.execute(
                "SELECT signature, config, status, created FROM measurements WHERE is_default = 0")}

    before = snapshot()
    assert before
    run = run_cli("tune", tinynet, "--db", str(db_path), "--trials", "6", "--repeat", "3", "--no-progress",
                  "--layout", "nchw")
    assert run.returncode == 0, run.stdout + run.stderr
    after = snapshot()
    for k, (status, created) in before.items():
        assert k in after
        if after[k][0] != "slower_in_model":  # the model-level check may mark a row afterwards
            assert after[k] == (status, created), (k, after[k], (status, created))
    # the second run measured the rest: every signature has its 6 trials (default included)
    spaces = spaces_of(tinynet)
    per_sig: dict[str, int] = {}
    for sig, _ in after:
        per_sig[sig] = per_sig.get(sig, 0) + 1
    assert per_sig == {s: min(6, sp.size()) - 1 for s, sp in spaces.items() if sp.size() > 1}
    assert len(after) > len(before)


# --------------------------------------------------------------------------- using a database


def _overrides_in(cm) -> dict:
    m = re.search(r'overrides="([^"]+)"', cm.pipeline)
    assert m, cm.pipeline
    return json.loads(Path(m.group(1)).read_text())


def _config_ir(cm) -> str:
    return cm.stage_ir["config"]


def _kernel_configs(ir: str) -> dict[str, dict]:
    """{kernel signature: kernel_config} of the IR after select-kernel-config."""
    from adreno_mlir.passes.select_kernel_config import (
        config_of,
        is_kernel,
        kernel_signature,
    )
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context

    module = Parser(make_context(), ir).parse_module()
    return {kernel_signature(op): config_of(op) for op in module.walk() if is_kernel(op)}


def _feeds() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(3).standard_normal((1, 8, 16, 16)).astype(np.float32)}


def test_rows_of_other_devices_and_compilers_are_ignored(small, small_spaces, this_key, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    conv, gap = sig_of(small_spaces, "conv"), sig_of(small_spaces, "reduce")
    bad_conv = {**small_spaces[conv].default, "x_block": 3}
    bad_gap = {"reduce_items": 7}
    # they would break this compile
    for sig, cfg in ((conv, bad_conv), (gap, bad_gap)):
        with pytest.raises(adreno_mlir.CompileError, match="is not one of"):
            adreno_mlir.compile(small, layout="nchw", overrides={sig: cfg})
    phone = DeviceKey("Other / Phone", "1", compiler_version())
    old_compiler = DeviceKey(this_key.device, this_key.driver, "0.0.1+000000000000")
    db_path = tmp_path / "t.db"
    with TuningDB(db_path) as db:
        for key in (phone, old_compiler):
            db.record(key, [Row(conv, small_spaces[conv].default, True, "ok", 1.0, (1.0,)),
                            Row(conv, bad_conv, False, "ok", 0.1, (0.1,)),
                            Row(gap, small_spaces[gap].default, True, "ok", 1.0, (1.0,)),
                            Row(gap, bad_gap, False, "ok", 0.1, (0.1,))])
        assert db.best_configs(phone) == {conv: bad_conv, gap: bad_gap}  # they would be used on the phone
        assert db.best_configs(this_key) == {}
    with pytest.warns(UserWarning, match="other devices") as rec:
        cm = adreno_mlir.compile(small, layout="nchw", tuning_db=db_path, keep_ir=True)
    text = " ".join(str(w.message) for w in rec)
    assert "8 entries" in text and "Other / Phone" in text and "0.0.1+000000000000" in text, text
    assert _overrides_in(cm) == {}
    configs = _kernel_configs(_config_ir(cm))
    assert configs[conv] == small_spaces[conv].default and configs[gap] == small_spaces[gap].default
    ref = adreno_mlir.compile(small, layout="nchw").run(_feeds())["y"]
    np.testing.assert_allclose(cm.run(_feeds())["y"], ref, rtol=1e-5, atol=1e-6)


def test_compile_with_tuning_db_uses_the_best_entry(small, small_spaces, this_key, tmp_path, monkeypatch):
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(tmp_path / "cache"))  # the overrides file goes there
    conv = sig_of(small_spaces, "conv")
    default = small_spaces[conv].default
    assert default == {"kernel": "plane", "co_block": 8, "vec": 8, "work_group": (8, 8, 1)}, default  # CPU default
    better = {"kernel": "vec4", "co_block": 4, "x_block": 2}
    slower = {"kernel": "vec4", "co_block": 4, "x_block": 1}
    broken = {"kernel": "vec4", "co_block": 8, "x_block": 1}
    db_path = tmp_path / "t.db"
    with TuningDB(db_path) as db:
        db.record(this_key, [Row(conv, default, True, "ok", 1.0, (1.0, 1.0, 1.0)),
                             Row(conv, better, False, "ok", 0.5, (0.5, 0.5, 0.5)),
                             Row(conv, slower, False, "ok", 0.9, (0.9,)),
                             # a failed configuration is never used, whatever time it carries
                             Row(conv, broken, False, "wrong_output", 0.01, error="wrong")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no rows of other devices: no warning
        # (but the OpenCL compiler's own notes: Intel's CPU runtime prints some)
        warnings.filterwarnings("ignore", message="Non-empty compiler output")
        cm = adreno_mlir.compile(small, layout="nchw", tuning_db=str(db_path), keep_ir=True)
    path = re.search(r'overrides="([^"]+)"', cm.pipeline).group(1)
    assert Path(path).is_relative_to(tmp_path / "cache")
    assert json.loads(Path(path).read_text()) == {conv: better}
    assert _kernel_configs(_config_ir(cm))[conv] == better
    assert "kernel_config = {kernel = \"vec4\", co_block = 4 : i64, x_block = 2 : i64}" in _config_ir(cm)
    ref = adreno_mlir.compile(small, layout="nchw").run(_feeds())["y"]
    np.testing.assert_allclose(cm.run(_feeds())["y"], ref, rtol=1e-5, atol=1e-6)
    # overrides= win over the database's entries
    cm2 = adreno_mlir.compile(small, layout="nchw", tuning_db=str(db_path), overrides={conv: slower})
    assert _overrides_in(cm2) == {conv: slower}
    # a missing database is an error, not a silent untuned compile
    with pytest.raises(adreno_mlir.CompileError, match="does not exist"):
        adreno_mlir.compile(small, layout="nchw", tuning_db=str(tmp_path / "missing.db"))


# --------------------------------------------------------------------------- a normal run


@pytest.fixture(scope="module")
def normal_tune(small, tmp_path_factory):
    db_path = tmp_path_factory.mktemp("normal") / "t.db"
    return tune(small, str(db_path), trials=3, **QUICK), db_path


def test_tuned_is_never_slower(normal_tune, small_spaces):
    rep, db_path = normal_tune
    assert rep.workers == 1 and not rep.interrupted and rep.failures == {}
    assert np.isfinite(rep.untuned_ms) and rep.untuned_ms > 0
    assert rep.tuned_ms <= rep.untuned_ms, (rep.tuned_ms, rep.untuned_ms)
    if rep.chosen:
        assert rep.tuned_ms < rep.untuned_ms
    assert {s.signature for s in rep.signatures} == set(small_spaces)
    with TuningDB(db_path) as db:
        rows = db.rows(rep.device)
        decisions = db.decisions(rep.device)
        best = db.best_configs(rep.device)
    # the finished run's confirmed choices are what a compile with the database uses
    assert decisions == {sig: rep.chosen.get(sig) for sig in small_spaces}
    assert best == rep.chosen
    assert sum(1 for r in rows if r.is_default) == 3
    assert sum(1 for r in rows if not r.is_default) == 6
    ok = {(r.signature, json.dumps(r.config, sort_keys=True, default=str)) for r in rows if r.status == "ok"}
    for sig, cfg in rep.chosen.items():  # what was chosen was measured, ok, and beat the default
        assert (sig, json.dumps(cfg, sort_keys=True, default=str)) in ok
        (s,) = [s for s in rep.signatures if s.signature == sig]
        assert s.best_ms < s.default_ms


def test_export_import(normal_tune, tmp_path):
    _, db_path = normal_tune
    exported = tmp_path / "tuned.json"
    def contents(db: TuningDB) -> tuple[list, list]:
        return (db.conn.execute("SELECT * FROM measurements ORDER BY signature, config").fetchall(),
                db.conn.execute("SELECT * FROM decisions ORDER BY signature").fetchall())

    with TuningDB(db_path) as db:
        n = db.export_json(exported)
        before = contents(db)
        key = db.summary()[0][0]
        best = db.best_configs(key)
    assert n == len(before[0]) == 9 and len(before[1]) == 3
    with TuningDB(tmp_path / "other.db") as db:
        assert db.import_json(exported) == n
        assert contents(db) == before
        assert db.best_configs(key) == best
        assert db.import_json(exported) == 0  # nothing newer
    # the compact gzipped form of the corpus (tuning-corpus/): the same rows, medians only, the
    # same bytes for the same rows
    packed = tmp_path / "corpus.json.gz"
    with TuningDB(db_path) as db:
        assert db.export_json(packed, compact=True) == n
        first = packed.read_bytes()
        assert db.export_json(packed, compact=True) == n and packed.read_bytes() == first
    with TuningDB(tmp_path / "from-gz.db") as db:
        assert db.import_json(packed) == n
        got = contents(db)
        assert [r[:8] for r in got[0]] == [r[:8] for r in before[0]]  # all but the repeats' times
        assert all(r[8] == "[]" for r in got[0]) and got[1] == before[1]
    (tmp_path / "broken.json.gz").write_bytes(b"not gzip")
    with TuningDB(tmp_path / "y.db") as db, pytest.raises(TuningDBError, match="broken.json.gz"):
        db.import_json(tmp_path / "broken.json.gz")
    # through the CLI too
    run = run_cli("tune", "--db", str(tmp_path / "cli.db"), "--import", str(exported))
    assert run.returncode == 0 and f"imported {n} rows" in run.stdout, run.stdout + run.stderr
    # files that are not exports
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    (tmp_path / "broken.json").write_text("{not json")
    with TuningDB(tmp_path / "x.db") as db:
        with pytest.raises(TuningDBError, match="is not an adreno-mlir tuning export"):
            db.import_json(tmp_path / "other.json")
        with pytest.raises(TuningDBError, match="is not valid JSON"):
            db.import_json(tmp_path / "broken.json")
        with pytest.raises(TuningDBError, match="cannot read .*missing.json"):
            db.import_json(tmp_path / "missing.json")
        assert db.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 0
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("these are not the rows you are looking for\n" * 50)
    with pytest.raises(TuningDBError, match="is not a tuning database"):
        TuningDB(not_sqlite)
    run = run_cli("tune", "--db", str(not_sqlite), "--show")
    assert run.returncode == 1 and "error:" in run.stderr and "is not a tuning database" in run.stderr, run.stderr


# --------------------------------------------------------------------------- Ray


@pytest.mark.slow  # starts a Ray cluster
def test_two_ray_workers(small, tmp_path):
    ray = pytest.importorskip("ray")
    try:
        rep = tune(small, str(tmp_path / "t.db"), workers=2, ray=True, trials=5, **QUICK)
        assert rep.workers == 2
        with TuningDB(tmp_path / "t.db") as db:
            rows = [r for r in db.rows(rep.device) if not r.is_default]
        assert {r.worker for r in rows} == {"ray0", "ray1"}, [r.worker for r in rows]
        assert all(r.status in MEASURED_OK for r in rows)
        assert len(rows) == 12  # 4 candidates for each of the 3 signatures
        assert rep.tuned_ms <= rep.untuned_ms
    finally:
        ray.shutdown()


# --------------------------------------------------------------------------- the CLI


def test_cli_needs_a_model_and_shows_the_device(normal_tune, tmp_path):
    rep, db_path = normal_tune
    run = run_cli("tune", "--db", str(tmp_path / "t.db"))
    assert run.returncode == 1 and "error:" in run.stderr and "needs a model" in run.stderr, run.stderr
    run = run_cli("tune", "--db", str(db_path), "--show")
    assert run.returncode == 0, run.stderr
    line = re.search(rf"^{re.escape(rep.device.short())}: (.*)$", run.stdout, re.MULTILINE)
    assert line, run.stdout
    counts = {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", line.group(1))}
    assert sum(counts.values()) == 9 and counts.get("ok", 0) >= 3, counts


def test_a_search_without_optuna_says_what_to_install(monkeypatch):
    """More configurations than trials need Optuna's sampler: without it, one CompileError
    saying to install it or to measure every configuration, not a traceback."""
    import sys

    from adreno_mlir.errors import CompileError
    from adreno_mlir.tuning.space import Space
    from adreno_mlir.tuning.tuner import Search

    space = Space("graph.group_query_attention(...)", "gqa", {"splits": 1, "items": 1},
                  (("splits", (1, 2, 4)), ("items", (1, 16))))
    monkeypatch.setitem(sys.modules, "optuna", None)  # `import optuna` raises ImportError
    with pytest.raises(CompileError, match=r"pip install optuna .* --trials 6 to measure every one"):
        Search(space, trials=2, seed=0)


def test_a_model_whose_weights_are_missing_is_one_clear_line(tmp_path):
    """Regression: the worker's setup failure carried its traceback into the CLI's error."""
    model = _small_model()
    onnx.save(model, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.weights", size_threshold=0)
    (tmp_path / "m.weights").unlink()
    r = run_cli("tune", str(tmp_path / "m.onnx"), "--db", str(tmp_path / "t.db"), "--no-progress", "--trials", "2")
    assert r.returncode != 0
    assert "external data file that is missing" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_spaces_of_a_deep_model_go_to_the_tuner_without_their_module(tmp_path):
    """Regression: a Space pickled its head op, and with it the whole module, one nested
    level per op: a RecursionError on Python 3.11 for MobileNetV2 on PoCL (the worker's
    setup could not be sent)."""
    import pickle

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c0"], name="conv")]
    for i in range(1500):  # a long chain of ops after the conv
        nodes.append(helper.make_node("Relu" if i % 2 else "Neg", [f"c{i}"], [f"c{i + 1}"], name=f"op{i}"))
    g = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                          [helper.make_tensor_value_info("c1500", TensorProto.FLOAT, [1, 8, 4, 4])], [w])
    path = tmp_path / "deep.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    spaces = spaces_of(str(path))
    assert spaces
    for sp in spaces.values():
        back = pickle.loads(pickle.dumps(sp))
        assert back.signature == sp.signature and back.default == sp.default
        # the copy still normalizes as the original (its attributes and operand types)
        for values in zip(*(c for _, c in sp.dims)):
            point = dict(zip([k for k, _ in sp.dims], values))
            assert canonical_cfg(back.normalize(point)) == canonical_cfg(sp.normalize(point))
        assert back.head is not None and back.head.parent is None
