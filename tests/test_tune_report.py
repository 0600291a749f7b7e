"""What `adreno-mlir tune` reports (issue 27, item 5: tuning that tells one story), without a
tuning run: the model-level check (`_confirm`) with a fake worker of canned measurements,
the report's rows (`format_report`), the progress bar's phases, where the overrides file
goes ($ADRENO_MLIR_CACHE_DIR), and `compile -o DIR --tuning-db` writing DIR/overrides.json
with a pipeline.txt that replays from DIR."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from adreno_mlir.printing import cut_name
from adreno_mlir.tuning.db import DeviceKey, Row, TuningDB, canonical
from adreno_mlir.tuning.tuner import (
    DROPPED,
    Progress,
    SignatureReport,
    TuneReport,
    _choose,
    _confirm,
    format_report,
)
from adreno_mlir.tuning.worker import Result

KEY = DeviceKey("Test / Device", "1", "0.0.1+000000000000")
A, B = "graph.conv2d(a)", "graph.gemm(b)"
CFG_A, CFG_B = {"x_block": 2}, {"k_split": 4}


class FakeWorker:
    """`measure` answers with the next canned Result and records what it was asked."""

    def __init__(self, results: list[Result]):
        self.results = list(results)
        self.asked: list[dict] = []

    def measure(self, overrides: dict, timeout: float) -> Result:
        self.asked.append(dict(overrides))
        return self.results.pop(0)


def _result(tuned: float, untuned: float, ratios: dict[str, float]) -> Result:
    """A whole-model measurement: totals of `tuned` / `untuned` ms, and per signature a
    tuned time of ratio x its default's (1 ms)."""
    return Result("ok", times={s: [r] * 3 for s, r in ratios.items()}, total=[tuned] * 3,
                  default_times={s: [1.0] * 3 for s in ratios}, default_total=[untuned] * 3)


def _db(tmp_path) -> TuningDB:
    return TuningDB(tmp_path / "t.db")


def test_the_reported_pair_is_the_final_measurement(tmp_path):
    """Check 1: tuned slower (75.93 vs 68.28), A's gain did not hold -> A dropped; check 2
    (B alone) is faster: the report's figures are check 2's pair, not a mix of both."""
    w = FakeWorker([_result(75.93, 68.28, {A: 1.05, B: 0.8}), _result(75.93, 68.28, {A: 1.05, B: 0.8}),
                    _result(61.58, 87.88, {B: 0.7}), _result(61.60, 87.90, {B: 0.7})])
    said: list[str] = []
    with _db(tmp_path) as db:
        untuned, tuned, kept, dropped = _confirm(w, {A: CFG_A, B: CFG_B}, 10.0, db, KEY, said.append)
        rows = {r.signature: r for r in db.rows(KEY)}
    assert w.asked == [{A: CFG_A, B: CFG_B}] * 2 + [{B: CFG_B}] * 2
    assert (untuned, tuned) == (pytest.approx(87.89), pytest.approx(61.59))
    assert kept == {B: CFG_B} and dropped == {A: DROPPED}
    assert said == ["model check 1: tuned 75.93 ms vs untuned 68.28 ms: dropping 1 entry whose gain did not hold "
                    "in the model; measuring again"]
    assert rows[A].status == "slower_in_model" and B not in rows
    rep = TuneReport(KEY, [SignatureReport(A, "conv", "/m/conv", 2.0, 1.5, None, 3, 0, 2.0, dropped[A]),
                           SignatureReport(B, "gemm", "/m/fc", 1.0, 0.7, CFG_B, 3, 0, 0.7)],
                     untuned, tuned, 12.0, 4, chosen=kept)
    text = format_report(rep)
    assert text.splitlines()[-1] == ("model device time: untuned 87.89 ms, tuned 61.59 ms (x1.427), measured "
                                     "alternately in the whole model")
    assert text.count("untuned") == 1  # one model figure
    (row_a,) = [line for line in text.splitlines() if line.startswith("/m/conv")]
    assert row_a.endswith("(default: best dropped, the model was not faster with it)"), row_a
    (row_b,) = [line for line in text.splitlines() if line.startswith("/m/fc")]
    assert row_b.split()[2:6] == ["1.0000", "0.7000", "0.7000", "k_split=4"], row_b  # default, best, kept, config


def test_nothing_kept_says_so_with_the_last_measurement(tmp_path):
    """Every check slower: the entries go, in halves; the one figure is the last
    measurement's untuned time, and the report says the model keeps its defaults."""
    w = FakeWorker([_result(10.0, 9.0, {A: 0.9, B: 0.8})] * 2 + [_result(10.0, 9.5, {B: 0.8})] * 2)
    said: list[str] = []
    with _db(tmp_path) as db:
        untuned, tuned, kept, dropped = _confirm(w, {A: CFG_A, B: CFG_B}, 10.0, db, KEY, said.append)
    assert (untuned, tuned, kept) == (9.5, 9.5, {})
    assert dropped == {A: DROPPED, B: DROPPED}
    assert said == ["model check 1: tuned 10.00 ms vs untuned 9.00 ms: dropping 1 entry with the smallest gains; "
                    "measuring again",
                    "model check 2: tuned 10.00 ms vs untuned 9.50 ms: dropping 1 entry with the smallest gains; "
                    "none left"]
    rep = TuneReport(KEY, [SignatureReport(A, "conv", "/m/conv", 2.0, 1.5, None, 3, 0, 2.0, dropped[A])],
                     untuned, tuned, 1.0, 1)
    assert format_report(rep).splitlines()[-1] == ("no tuned entry made the model faster: the model keeps its "
                                                   "defaults (model device time 9.50 ms)")


def test_nothing_chosen_measures_the_default_once(tmp_path):
    w = FakeWorker([_result(5.0, 5.0, {})])
    with _db(tmp_path) as db:
        assert _confirm(w, {}, 10.0, db, KEY, print) == (5.0, 5.0, {}, {})
    assert w.asked == [{}]


def test_a_gain_within_the_noise_is_named_in_the_row():
    """_choose keeps A's default (1% faster, noise 2%) and picks B (30% faster)."""
    def search(default: dict, cand: dict, ms: float):
        return SimpleNamespace(space=SimpleNamespace(default=default),
                               known={canonical(default): ("ok", 1.0), canonical(cand): ("ok", ms)})

    searches = {A: search({"x_block": 1}, CFG_A, 0.99), B: search({"k_split": 1}, CFG_B, 0.7)}
    chosen, reasons = _choose(searches, {A: [1.0] * 5, B: [1.0] * 5})
    assert chosen == {B: CFG_B}
    assert reasons == {A: "gain 1.0% within noise 2.0%"}
    rep = TuneReport(KEY, [SignatureReport(A, "conv", "/m/conv", 1.0, 0.99, None, 2, 0, 1.0, reasons[A])],
                     5.0, 5.0, 1.0, 1)
    text = format_report(rep)
    assert "(default: gain 1.0% within noise 2.0%)" in text
    assert text.splitlines()[-1].startswith("no candidate beat its default by more than the noise")


def test_node_names_are_cut_like_analyze():
    from adreno_mlir.cli_analyze import format_table
    from adreno_mlir.target import get_profile

    name = "/features/features.16/conv/conv.0/conv.0.0/Conv_and_a_long_tail_7"
    assert cut_name(name, 40) == "..." + name[-37:] and len(cut_name(name, 40)) == 40
    assert cut_name("/short", 40) == "/short"
    rep = TuneReport(KEY, [SignatureReport(A, "conv", name, 1.0, 1.0, None, 1, 0, 1.0)], 1.0, 1.0, 1.0, 1)
    rows = [line for line in format_report(rep).splitlines() if line.startswith("...")]
    assert rows and rows[0].startswith(cut_name(name, 40) + " conv"), rows
    cost = SimpleNamespace(name=name, kind="conv", flops=1e9, global_bytes=1e6, texture_bytes=0.0, intensity=1.0,
                           estimate_us=10.0, bound="compute")
    table = format_table(SimpleNamespace(costs=[cost], profile=get_profile("adreno-740"), total_us=10.0))
    assert table[1].startswith(cut_name(name, 44) + "  conv"), table[1]  # analyze: the same cut, 44 wide


def test_progress_shows_the_phases_and_nothing_when_disabled(capsys):
    off = Progress(False, None)
    off.search(3)
    off.update(1, 1.1, 0, 1)
    off.check(2)
    off.step("check 1")
    off.tick()
    assert off.wait_for(lambda x: x + 1, 1) == 2
    off.write(lambda s: print(s, file=sys.stderr), "a log line")
    off.close()
    out = capsys.readouterr()
    assert out.out == "" and out.err == "a log line\n"
    on = Progress(True, 60.0)
    on.search(2)
    on.update(2, 1.2, 1, 1)
    on.tick()  # a redraw while waiting: the budget left
    on.check(2)
    on.step("check 1, run 1 of 2")
    on.check(2)  # another check: two more steps
    assert on.bar.total == 4 and on.bar.n == 1
    on.close()
    err = capsys.readouterr().err
    assert "setup" in err and "search" in err and "model check" in err and "budget left" in err, err


# --------------------------------------------------------------------------- the overrides file


def test_overrides_file_goes_to_the_chosen_cache(tmp_path, monkeypatch):
    from adreno_mlir.tuning import overrides_file_for

    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    path = Path(overrides_file_for(None, None, {"loc:conv": {"x_block": 2}}))
    assert path.parent == tmp_path / "cache" / "overrides" and json.loads(path.read_text()) == {
        "loc:conv": {"x_block": 2}}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", "relative")
    path = Path(overrides_file_for(None, None, {"loc:conv": {"x_block": 4}}))
    assert path.is_absolute() and path.parent == tmp_path / "relative" / "overrides"


def _conv_model(path: Path) -> Path:
    w = numpy_helper.from_array((np.random.default_rng(0).standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32),
                                "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                               helper.make_node("Relu", ["c"], ["y"], name="relu")], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _tool(module: str, *args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=300, cwd=cwd, env=env)


def test_compile_dir_with_a_tuning_db_replays_from_the_folder(tmp_path, monkeypatch):
    """`compile -o DIR --tuning-db DB` copies the merged overrides into DIR/overrides.json and
    writes a pipeline.txt naming that relative path: replayed from DIR (or a copy of DIR
    elsewhere, without the cache) it gives the compile's .cl, with the tuned config."""
    pytest.importorskip("pyopencl")
    import os

    from adreno_mlir.context import make_context
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.passes.select_kernel_config import config_of, is_kernel, kernel_signature
    from adreno_mlir.pipeline import run_stages
    from adreno_mlir.plan import make_plan
    from adreno_mlir.runtime import default_context
    from adreno_mlir.tuning.db import device_key

    model = _conv_model(tmp_path / "tiny.onnx")
    module = import_onnx(str(model))
    run_stages(make_context(), module, make_plan(layout="nchw").stages(until="config"))  # the NCHW conv's keys
    (conv,) = [op for op in module.walk() if is_kernel(op)]
    sig, default = kernel_signature(conv), config_of(conv)
    tuned = {"kernel": "vec4", "co_block": 4, "x_block": 2}
    assert default.get("kernel") != "vec4", default  # the CPU default: the entry changes the kernel
    with TuningDB(tmp_path / "t.db") as db:
        db.record(device_key(default_context(None).devices[0]),
                  [Row(sig, default, True, "ok", 1.0, (1.0,) * 3), Row(sig, tuned, False, "ok", 0.5, (0.5,) * 3)])
    cache = tmp_path / "cache"
    env = {**os.environ, "ADRENO_MLIR_CACHE_DIR": str(cache)}
    out = tmp_path / "out"
    run = _tool("adreno_mlir.cli", "compile", model, "-o", out, "--tuning-db", tmp_path / "t.db", "--no-build",
                "--layout", "nchw", env=env)
    assert run.returncode == 0, run.stderr
    (cached,) = (cache / "overrides").glob("*.json")  # in the chosen cache, not ~/.cache
    assert json.loads((out / "overrides.json").read_text()) == json.loads(cached.read_text()) == {
        sig: {k: list(v) if isinstance(v, tuple) else v for k, v in tuned.items()}}
    pipeline = (out / "pipeline.txt").read_text().strip()
    assert 'overrides="overrides.json"' in pipeline and str(cached) not in pipeline, pipeline
    assert f'cd {out} && adreno-opt 0-graph.mlir -p "$(cat pipeline.txt)" -t opencl' in run.stdout, run.stdout
    assert not [p for p in out.glob("*.mlir") if str(cache) in p.read_text()]  # no stage names the cache
    cl = (out / "tiny.cl").read_text()
    untuned = _tool("adreno_mlir.cli", "compile", model, "-o", tmp_path / "plain", "--no-build", "--layout", "nchw",
                    env=env)
    assert untuned.returncode == 0, untuned.stderr
    assert cl != (tmp_path / "plain" / "tiny.cl").read_text()  # the tuned entry took effect
    assert 'overrides=' not in (tmp_path / "plain" / "pipeline.txt").read_text()
    assert not (tmp_path / "plain" / "overrides.json").exists()
    # replay from DIR, and from a copy of it on "another machine" (no cache)
    moved = tmp_path / "elsewhere"
    shutil.copytree(out, moved)
    shutil.rmtree(cache / "overrides")
    for folder in (out, moved):
        replay = _tool("adreno_mlir.opt", "0-graph.mlir", "-p", pipeline, "-t", "opencl", cwd=folder, env=env)
        assert replay.returncode == 0, replay.stderr
        assert replay.stdout == cl
