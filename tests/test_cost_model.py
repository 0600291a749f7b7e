"""The learned cost model (adreno_mlir.tuning.cost_model) and select-kernel-config's
`cost-model=` option: features, the numpy tree evaluator against LightGBM, training on
synthetic rows and the pass picking what they favour, bad artifacts, the CLI."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest

import adreno_mlir
from adreno_mlir.tuning import cost_model as cmod
from adreno_mlir.tuning.db import DeviceKey, Row, TuningDB
from tests.test_tuning import _small_model  # Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm

REPO = Path(__file__).resolve().parents[1]

TEXTURE_SIG = ("graph.conv2d(!texture.tensor<1x4x16x16x4xf16, nchw4c, #texture.image<texture, h = 64, w = 16>>,"
               "tensor<4x16x3x3x4xf32>,tensor<16xf32>)->!texture.tensor<1x4x16x16x4xf16, nchw4c, "
               "#texture.image<texture, h = 64, w = 16>>{dilations=array<i64: 1, 1>;groups=1 : i64;"
               "pads=array<i64: 1, 1, 1, 1>;strides=array<i64: 2, 2>}+add+relu")
NCHW_SIG = ("graph.conv2d(tensor<1x16x55x55xf32>,tensor<64x16x1x1xf32>,tensor<64xf32>)->tensor<1x64x55x55xf32>"
            "{dilations=array<i64: 1, 1>;groups=1 : i64;pads=array<i64: 0, 0, 0, 0>;strides=array<i64: 1, 1>}+relu")
GEMM_SIG = ("graph.gemm(tensor<1x32xf32>,tensor<10x32xf32>,tensor<10xf32>)->tensor<1x10xf32>{alpha=1.000000e+00 : "
            "f32;beta=1.000000e+00 : f32;trans_a=0 : i64;trans_b=1 : i64}")


def _lightgbm():
    return pytest.importorskip("lightgbm")


# --------------------------------------------------------------------------- features


def test_features_read_the_signature_and_the_config():
    cfg = {"x_block": 4, "co_blocks": 1, "split_k": 2, "work_group": (16, 4, 1)}
    f = cmod.features(TEXTURE_SIG, cfg)
    assert f == cmod.features(TEXTURE_SIG, dict(cfg))  # deterministic
    assert all(isinstance(v, float) for v in f.values())
    assert f["in0_rank"] == 5 and f["in0_d1"] == 4 and f["in0_d4"] == 4
    assert f["in0_f16"] == 1 and f["in0_image"] == 1 and f["in0_nchw4c"] == 1
    assert f["in1_f16"] == 0 and f["in1_image"] == 0 and f["out_image"] == 1
    assert f["in0_log2numel"] == pytest.approx(math.log2(4 * 16 * 16 * 4))
    assert f["kernel_h"] == 3 and f["kernel_w"] == 3 and f["attr_groups"] == 1
    assert f["attr_strides_0"] == 2 and f["attr_pads_sum"] == 4 and f["attr_dilations_1"] == 1
    assert f["tail_len"] == 2
    assert f["cfg_split_k"] == 2 and f["cfg_work_group_0"] == 16 and f["cfg_work_group_product"] == 64
    assert f["cfg_work_group_driver"] == 0
    driver = cmod.features(TEXTURE_SIG, {**cfg, "work_group": ()})
    assert driver["cfg_work_group_driver"] == 1 and math.isnan(driver["cfg_work_group_0"])
    other = cmod.features(TEXTURE_SIG, {**cfg, "x_block": 2})
    assert other != f and {k for k in f if f[k] != other[k]} == {"cfg_x_block"}
    # strings are codes in the artifact's vocabulary (NaN when not in it)
    v = cmod.features(NCHW_SIG, {"kernel": "plane", "co_block": 8}, {"head": ["graph.conv2d"],
                                                                     "cfg_kernel": ["pointwise", "plane"]})
    assert v["head"] == 0 and v["cfg_kernel"] == 1 and v["in0_nchw4c"] == 0 and v["tail_len"] == 1
    assert math.isnan(cmod.features(NCHW_SIG, {"kernel": "rows"}, {"cfg_kernel": ["plane"]})["cfg_kernel"])
    g = cmod.features(GEMM_SIG, {"k_split": 4})
    assert g["attr_trans_b"] == 1 and g["attr_alpha"] == 1.0 and g["out_d1"] == 10 and "kernel_h" not in g


# --------------------------------------------------------------------------- synthetic rows


def _synthetic_samples(seed: int = 0, n_sigs: int = 12) -> list[cmod.Sample]:
    """Conv signatures measured with kernels/blocks: `pointwise` with x_block 2 is 3x faster."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_sigs):
        c, hw = (16, 32, 64)[i % 3], (13, 27, 55, 28)[i // 3 % 4]  # distinct signatures (up to 12)
        sig = NCHW_SIG.replace("16x55x55", f"{c}x{hw}x{hw}").replace("64x16x1x1", f"64x{c}x1x1").replace(
            "64x55x55", f"64x{hw}x{hw}")
        model = f"model{i % 3}"
        for kernel in ("plane", "pointwise", "vec4"):
            for xb in (1, 2, 4):
                for wg in ((), (64, 1, 1), (16, 4, 1)):
                    cfg = {"kernel": kernel, "co_block": 8, "x_block": xb, "work_group": wg}
                    default = kernel == "plane" and xb == 1 and wg == ()
                    t = 1.0 if default else (0.33 if kernel == "pointwise" and xb == 2 else 1.0 + rng.random())
                    status = "build_error" if kernel == "vec4" and xb == 4 else "ok"
                    out.append(cmod.Sample(("dev", "1", "c"), sig, cfg, default, status,
                                           t * hw / 10 if status == "ok" else None, model, "Test / dev"))
    return out


def test_evaluator_equals_lightgbm_predict(tmp_path):
    _lightgbm()
    model = cmod.train(_synthetic_samples(), profile="p", device_match="dev")
    x = model.train_x
    rng = np.random.default_rng(1)
    rows = x[rng.integers(0, len(x), 400)].copy()
    rows += rng.choice([0.0, 0.0, 1.0, -1.0, 0.5, 7.0], rows.shape)
    rows[rng.random(rows.shape) < 0.15] = np.nan
    rows[rng.random(rows.shape) < 0.05] = 0.0
    rows = np.vstack([rows, rng.standard_normal((100, x.shape[1])) * 50])
    np.testing.assert_allclose(model.trees.predict(rows), model.booster.predict(rows), rtol=1e-9, atol=1e-12)
    # the same from the artifact on disk
    model.save(tmp_path / "m.json")
    loaded = cmod.load(tmp_path / "m.json")
    np.testing.assert_allclose(loaded.trees.predict(rows), model.booster.predict(rows), rtol=1e-9, atol=1e-12)
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["format"] == cmod.FORMAT and doc["version"] == cmod.FORMAT_VERSION
    assert doc["training_models"] == ["model0", "model1", "model2"] and doc["profile"] == "p"
    assert doc["rows"] == len(model.train_x) and len(doc["schema"]) == x.shape[1]


def test_choose_takes_the_learned_winner_above_the_margin():
    _lightgbm()
    model = cmod.train(_synthetic_samples(), profile="p", device_match="dev")
    sig = _synthetic_samples(seed=5, n_sigs=1)[0].signature
    default = {"kernel": "plane", "co_block": 8, "x_block": 1, "work_group": ()}
    cands = [{"kernel": k, "co_block": 8, "x_block": xb, "work_group": ()} for k in ("plane", "pointwise")
             for xb in (1, 2, 4)][1:]
    chosen, ratio = model.choose(sig, default, cands)
    assert (chosen["kernel"], chosen["x_block"]) == ("pointwise", 2) and ratio < 0.6, (chosen, ratio)
    # nothing predicted faster by the margin: the default
    slow = [c for c in cands if (c["kernel"], c["x_block"]) != ("pointwise", 2)]
    assert model.choose(sig, default, slow) == (default, 1.0)
    assert model.choose(sig, default, []) == (default, 1.0)


def test_prediction_does_not_import_lightgbm(tmp_path):
    _lightgbm()
    cmod.train(_synthetic_samples(n_sigs=3), profile="p", device_match="dev").save(tmp_path / "m.json")
    code = ("import sys; from adreno_mlir.tuning.cost_model import load; m = load(sys.argv[1]); "
            f"print(m.predict({NCHW_SIG!r}, [{{'kernel': 'plane', 'x_block': 1}}])[0]); "
            "assert 'lightgbm' not in sys.modules and 'scipy' not in sys.modules, 'imported'")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.json")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    float(r.stdout)


# --------------------------------------------------------------------------- the pass


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("models") / "small.onnx"
    onnx.save(_small_model(), str(path))
    return str(path)


@pytest.fixture(scope="module")
def small_spaces(small) -> dict:
    from adreno_mlir.tuning.worker import Job, _Measurer

    with tempfile.TemporaryDirectory() as scratch:
        return {sp.signature: sp for sp in _Measurer(Job(small, compile_options={"layout": "nchw"}), scratch).spaces}


def _with_cost_model(path) -> callable:
    def edit(pipeline: str) -> str:
        assert "select-kernel-config{" in pipeline, pipeline
        return pipeline.replace("select-kernel-config{", f'select-kernel-config{{cost-model="{path}" ', 1)
    return edit


def _configs(cm) -> dict:
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context
    from adreno_mlir.lowering.families import config_of, is_kernel, kernel_signature

    ir = cm.stage_ir.get("config") or cm.stage_ir["select-kernel-config"]  # a custom pipeline names stages by pass
    module = Parser(make_context(), ir).parse_module()
    return {kernel_signature(op): config_of(op) for op in module.walk() if is_kernel(op)}


def _profile_name(cm) -> str:
    return re.search(r"select-kernel-config\{target=([^ }]+)", cm.pipeline).group(1)


FAST = {"kernel": "vec4", "co_block": 4, "x_block": 2}
"""What the synthetic rows make clearly faster for the small model's conv (any work_group)."""


def _fast(cfg: dict) -> bool:
    return all(cfg.get(k) == v for k, v in FAST.items())


def test_pass_picks_the_learned_config_and_outputs_match_onnxruntime(small, small_spaces, tmp_path):
    _lightgbm()
    import onnxruntime as ort

    ref_cm = adreno_mlir.compile(small, layout="nchw", keep_ir=True)
    profile = _profile_name(ref_cm)
    rng = np.random.default_rng(0)
    samples = []
    for sig, sp in small_spaces.items():
        for cfg in sp.candidates():
            default = cfg == sp.default
            t = 1.0 if default else (0.3 if sp.kind == "conv" and _fast(cfg) else 1.1 + rng.random())
            samples.append(cmod.Sample(("d", "1", "c"), sig, cfg, default, "ok", t, "small", "Test / dev"))
    assert sum(_fast(s.config) for s in samples) >= 2, "the space lost the fast family"
    model = cmod.train(samples, profile=profile, device_match="no-such-device", params={"min_data_in_leaf": 2})
    model.save(tmp_path / "m.json")
    cm = adreno_mlir.compile(small, layout="nchw", keep_ir=True, pipeline=_with_cost_model(tmp_path / "m.json"))
    assert 'cost-model="' in cm.pipeline
    configs, ref_configs = _configs(cm), _configs(ref_cm)
    for sig, sp in small_spaces.items():
        if sp.kind == "conv":
            assert _fast(configs[sig]), configs[sig]
            assert not _fast(ref_configs[sig])
        else:  # nothing predicted faster: the rules' default, unchanged
            assert configs[sig] == ref_configs[sig], sig
    x = np.random.default_rng(3).standard_normal((1, 8, 16, 16)).astype(np.float32)
    expected = ort.InferenceSession(small, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    # the default compile's tolerance against onnxruntime elsewhere in the suite: fp32 on PoCL
    np.testing.assert_allclose(cm.run({"x": x})["y"], expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cm.run({"x": x})["y"], ref_cm.run({"x": x})["y"], rtol=1e-5, atol=1e-6)


def _artifact(tmp_path, **changes) -> Path:
    doc = json.loads((REPO / "filecheck/passes/Inputs/cost_model_small_co_block.json").read_text())
    doc.update(changes)
    path = tmp_path / "artifact.json"
    path.write_text(json.dumps(doc))
    return path


def test_bad_artifacts_are_errors_naming_the_file(small, tmp_path):
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"format": "adreno-mlir-cost-model", "booster": ')
    with pytest.raises(adreno_mlir.CompileError, match=re.escape(str(corrupt)) + " is not valid JSON"):
        adreno_mlir.compile(small, layout="nchw", pipeline=_with_cost_model(corrupt))
    with pytest.raises(adreno_mlir.CompileError, match="cannot read cost model .*missing.json"):
        adreno_mlir.compile(small, layout="nchw", pipeline=_with_cost_model(tmp_path / "missing.json"))
    for changes, why in (({"format": "other"}, "format is 'other'"), ({"version": 99}, "format version 99"),
                         ({"schema": ["a"]}, "the booster reads 2 features, the schema names 1")):
        path = _artifact(tmp_path, **changes)
        with pytest.raises(adreno_mlir.CompileError, match=re.escape(f"cost model {path} is not a usable") + ".*" + why):
            adreno_mlir.compile(small, layout="nchw", pipeline=_with_cost_model(path))
    path = _artifact(tmp_path)  # for adreno-740; this compile is for the live PoCL device
    with pytest.raises(adreno_mlir.CompileError, match=re.escape(f"cost model {path} is for target profile "
                                                                 "'adreno-740'")):
        adreno_mlir.compile(small, layout="nchw", pipeline=_with_cost_model(path))


# --------------------------------------------------------------------------- the CLI


def test_cli_trains_from_a_database_and_an_export_and_evaluates_held_out_models(tmp_path, capsys):
    _lightgbm()
    samples = _synthetic_samples(n_sigs=9)
    with TuningDB(tmp_path / "a.db") as db:
        db.record(DeviceKey("Test / dev", "1", "c"), [
            Row(s.signature, s.config, s.is_default, s.status, s.median_ms, model=s.model)
            for s in samples if s.model != "model2"])
    with TuningDB(tmp_path / "b.db") as db:
        db.record(DeviceKey("Test / dev", "1", "c"), [
            Row(s.signature, s.config, s.is_default, s.status, s.median_ms, model=s.model)
            for s in samples if s.model == "model2"])
        db.record(DeviceKey("Other / phone", "1", "c"), [Row(samples[0].signature, samples[0].config, True, "ok", 9.0)])
        db.export_json(tmp_path / "b.json")
    out = tmp_path / "m.json"
    assert cmod.main(["train", "--db", str(tmp_path / "a.db"), "--rows", str(tmp_path / "b.json"), "--device-match",
                      "dev", "--profile", "p", "--out", str(out), "--exclude-models", "model2"]) == 0
    doc = json.loads(out.read_text())
    assert doc["training_models"] == ["model0", "model1"] and doc["devices"] == ["Test / dev"]
    capsys.readouterr()
    assert cmod.main(["evaluate", "--db", str(tmp_path / "a.db"), "--db", str(tmp_path / "b.db"),
                      "--model", str(out)]) == 0
    text = capsys.readouterr().out
    assert "held-out models: model2" in text and "signatures evaluated: 3" in text, text
    geo = float(re.search(r"chosen / default: ([\d.]+)", text).group(1))
    assert geo < 0.5, text  # it learned pointwise x_block 2 (0.33x) from the other models
    assert "chose a failed config 0" in text
    assert cmod.main(["evaluate", "--db", str(tmp_path / "a.db"), "--model", str(out)]) == 1  # nothing held out


def test_shipped_h200_artifact_is_the_default_for_its_profile_only(small, tmp_path):
    """compile()'s cost_model="auto": the artifact shipped for the H200 (trained on
    tuning-corpus/nvidia-h200.json.gz) for target nvidia-h200 and the live H200, the rules
    for a profile no artifact matches (PoCL here) or with cost_model=None; the tuner's
    workers always measure against the rules."""
    import onnxruntime as ort

    from adreno_mlir.plan import make_plan
    from adreno_mlir.tuning.worker import Job, _Measurer

    shipped = make_plan(target="nvidia-h200").cost_model
    assert shipped.endswith("cost_models/nvidia-h200.json.gz") and Path(shipped).is_file()
    assert make_plan().cost_model == ""  # PoCL's live profile: no artifact
    assert make_plan(target="nvidia-h200", cost_model=None).cost_model == ""
    model = cmod.load(shipped)
    assert model.matches_profile("device-nvidia-h200") and not model.matches_profile("pocl-cpu")
    assert len(model.doc["training_models"]) >= 10
    # a head op the corpus never measured keeps its default (no extrapolation)
    sig = "graph.matmul_nbits(tensor<1x512xf32>,tensor<512x16x16xi8>)->tensor<1x512xf32>{bits=4 : i64}"
    default, other = {"k_split": 4, "cols": 8}, {"k_split": 1, "cols": 32}
    assert model.choose(sig, default, [other], margin=10.0) == (default, 1.0)
    cm = adreno_mlir.compile(small, target="nvidia-h200")
    assert "cost-model=" in cm.pipeline and "learned defaults" in cm.plan
    assert cm.options["cost_model"] == "nvidia-h200.json.gz"
    x = np.random.default_rng(4).standard_normal((1, 8, 16, 16)).astype(np.float32)
    expected = ort.InferenceSession(small, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(cm.run({"x": x})["y"], expected, rtol=1e-4, atol=1e-5)
    with tempfile.TemporaryDirectory() as scratch:
        measurer = _Measurer(Job(small, compile_options={"target": "nvidia-h200"}), scratch)
        assert measurer.plan.cost_model == ""
