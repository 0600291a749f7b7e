"""The compile plan (adreno_mlir.plan): one frozen `CompilePlan` made once from the user's
options by `make_plan`, used by `compile()`, the CLI (`compile`, `run`), `analyze` and the
tuner; bad options are the named errors of adreno_mlir.options; the three front ends
agree on the plan for the same options; passes resolve their `target=` once per module."""

from __future__ import annotations

import dataclasses
import json

import pytest

import adreno_mlir
from adreno_mlir import api, cli, options
from adreno_mlir import plan as plan_module
from adreno_mlir.errors import CompileError
from adreno_mlir.plan import CompilePlan, make_plan
from adreno_mlir.runtime.format import MANIFEST
from adreno_mlir.target import get_profile


def test_plan_resolves_defaults_and_is_frozen():
    gpu = make_plan("adreno-740")
    assert (gpu.layout, gpu.textures, gpu.precision, gpu.storage, gpu.compute) == ("nchw4c", True, "fp32", "f32",
                                                                                   "f32")
    assert gpu.profile is get_profile("adreno-740") and gpu.target == "adreno-740"
    assert gpu.local_size == () and gpu.overrides_file == ""
    cpu = make_plan("pocl-cpu")
    assert (cpu.layout, cpu.textures) == ("nchw4c", False)  # CPUs: NCHW4c buffers (docs/bench/issue30/cpu-layout)
    assert make_plan("pocl-cpu", layout="nchw").layout == "nchw"
    gpu_buffers = make_plan("adreno-740", textures=False)
    assert gpu_buffers.layout == "nchw"  # GPUs without images keep the NCHW buffer plan
    half = make_plan("pocl-cpu", precision="fp16-acc32")
    assert (half.layout, half.storage, half.compute) == ("nchw4c", "f16", "f32")
    assert make_plan("adreno-740", precision="fp16").compute == "f16"
    assert make_plan("adreno-740", work_group="auto").local_size == (16, 4, 4)
    assert make_plan("pocl-cpu", work_group="auto").local_size == ()  # CPUs: the driver's choice
    assert make_plan("adreno-740", work_group=[8, 4]).local_size == (8, 4)
    assert isinstance(gpu, CompilePlan) and make_plan("tiny-test").profile.max_image_width == 64
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.textures = False  # type: ignore[misc]
    assert gpu == make_plan("adreno-740") and hash(gpu) == hash(make_plan("adreno-740"))
    assert gpu.with_buffers().textures is False and gpu.textures is True


def test_plan_stages_and_records():
    p = make_plan("adreno-740", precision="fp16", work_group="auto")
    stages = dict(p.stages())
    assert stages["config"] == "select-kernel-config{target=adreno-740 compute=f16 work-group=16,4,4}"
    assert stages["layout"] == "convert-layout-nchw4c{storage=f16}"
    assert [n for n, _ in p.stages(until="config")][-1] == "config"
    assert p.pipeline_string() == ",".join(s for _, s in p.stages())
    assert p.pipeline_stages() == p.stages()
    assert p.pipeline_stages(lambda s: s.replace("split-k,", ""))[-3:] == [
        ("select-kernel-config", stages["config"]), ("plan-memory", "plan-memory"),
        ("convert-graph-to-opencl", "convert-graph-to-opencl")]
    assert dict(make_plan("pocl-cpu").stages())["opencl"] == "convert-graph-to-opencl{fma=contract}"
    assert p.describe() == "layout nchw4c, textures, fp16, target adreno-740"
    assert p.describe(custom_pipeline=True).endswith("(custom pipeline: see .pipeline)")
    assert p.record() == {"layout": "nchw4c", "textures": True, "precision": "fp16", "storage": "f16",
                          "target": "adreno-740", "work_group": "auto", "custom_pipeline": False}
    assert make_plan("adreno-740", work_group=(8, 4, 1)).record()["work_group"] == [8, 4, 1]
    with pytest.raises(CompileError, match="pipeline must be a non-empty pass pipeline string"):
        p.pipeline_stages(" ")


@pytest.mark.parametrize("kwargs, message", [
    (dict(textures="no"), "invalid textures='no'; choose one of True, False, None"),
    (dict(precision="int8"), "unknown precision 'int8' \\(parameter precision\\); choose one of 'fp32', "
                             "'fp16-acc32', 'fp16'"),
    (dict(precision="fp16", target="pocl-cpu"), "precision='fp16' computes in half.*cl_khr_fp16.*'fp16-acc32'"),
    (dict(layout="nhwc"), "unknown layout 'nhwc' \\(parameter layout\\); choose one of 'nchw', 'nchw4c'"),
    (dict(layout="nchw", textures=True), "layout='nchw' is the fp32 buffer path"),
    (dict(work_group="fast"), "invalid work_group='fast'; choose one of 'driver', 'auto'"),
    (dict(target=740), "invalid target=740; choose one of 'adreno-660'"),
    (dict(target="adreno-999"), "unknown target profile 'adreno-999'"),
    (dict(device=0), "invalid device=0"),
    (dict(tuning_db="/no/such.db"), "tuning database /no/such.db does not exist"),
])
def test_bad_options_are_named(kwargs, message):
    kwargs.setdefault("target", "adreno-740")
    with pytest.raises(CompileError, match=message):
        make_plan(**kwargs)


def test_fixed_target_touches_no_device(monkeypatch):
    def no_device(spec):
        raise AssertionError(f"device {spec!r} touched")

    monkeypatch.setattr(plan_module, "_device_of", no_device)
    assert make_plan("adreno-740", device="no-such-device", overrides={}).overrides_file
    with pytest.raises(AssertionError, match="touched"):
        make_plan("auto")


def test_lower_takes_a_plan(tiny_path):
    from adreno_mlir.api import lower
    from adreno_mlir.frontend import import_onnx

    with pytest.raises(CompileError, match="lower\\(\\) takes a CompilePlan"):
        lower(import_onnx(str(tiny_path)), "nchw")
    stages, source = lower(import_onnx(str(tiny_path)), make_plan("adreno-740"))
    assert "__kernel" in source and ",".join(s.pipeline for s in stages) == make_plan("adreno-740").pipeline_string()


def _counting(monkeypatch, name, *modules):
    """The calls of function `name` of the first of `modules`, wherever they refer to it."""
    calls = []
    real = getattr(modules[0], name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, name, counted)
    return calls


def test_compile_builds_the_plan_once(tiny_path, monkeypatch):
    plans = _counting(monkeypatch, "make_plan", plan_module, api)
    precisions = _counting(monkeypatch, "check_precision", options)
    cm = adreno_mlir.compile(str(tiny_path), target="adreno-740", precision="fp16-acc32", textures=False)
    assert len(plans) == 1 and len(precisions) == 1
    assert cm.compile_plan == make_plan("adreno-740", precision="fp16-acc32", textures=False)
    assert cm.options == cm.compile_plan.record() and cm.plan == cm.compile_plan.describe()
    assert cm.pipeline == cm.compile_plan.pipeline_string()
    # a plan given is used as it is
    plans.clear()
    again = adreno_mlir.compile(str(tiny_path), plan=cm.compile_plan)
    assert not plans and again.source == cm.source and again.options == cm.options
    with pytest.raises(CompileError, match="compile\\(plan=...\\) takes the plan's options from the plan; "
                                           "target, precision given too"):
        adreno_mlir.compile(str(tiny_path), plan=cm.compile_plan, target="adreno-740", precision="fp16")
    with pytest.raises(CompileError, match="invalid plan='nchw'"):
        adreno_mlir.compile(str(tiny_path), plan="nchw")


@pytest.mark.parametrize("command", ["compile", "run"])
def test_cli_checks_the_options_once(tiny_path, tmp_path, monkeypatch, capsys, command):
    plans = _counting(monkeypatch, "make_plan", plan_module, api)
    precisions = _counting(monkeypatch, "check_precision", options)
    argv = [command, str(tiny_path), "--target", "pocl-cpu", "--precision", "fp16-acc32"]
    argv += ["-o", str(tmp_path / "t.adreno"), "--no-build"] if command == "compile" else ["--repeat", "1"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert len(plans) == 1 and len(precisions) == 1


def test_compile_cli_and_analyze_agree(tiny_path, tmp_path, capsys):
    """The same options give the same plan record (and pipeline) in compile(), the
    CLI's artifact manifest and analyze."""
    from adreno_mlir.analyze import analyze_model

    opts = dict(target="adreno-740", textures=True, precision="fp16-acc32")
    cm = adreno_mlir.compile(str(tiny_path), **opts)
    out = tmp_path / "dir"
    assert cli.main(["compile", str(tiny_path), "-o", str(out), "--target", "adreno-740", "--textures", "on",
                     "--precision", "fp16-acc32", "--no-build"]) == 0, capsys.readouterr().err
    manifest = json.loads((out / (tiny_path.stem + ".adreno") / MANIFEST).read_text())
    analysis = analyze_model(str(tiny_path), "adreno-740", plan="texture", precision="fp16-acc32")
    assert manifest["options"] == cm.options == analysis.compile_plan.record() == analysis.to_json()["options"]
    assert manifest["plan"] == cm.plan == analysis.plan
    assert (out / "pipeline.txt").read_text().strip() == cm.pipeline
    assert cm.pipeline.startswith(analysis.pipeline)
    # analyze takes a plan too
    assert analyze_model(str(tiny_path), plan=cm.compile_plan).pipeline == analysis.pipeline


def test_passes_resolve_their_target_once_per_module(tiny_path, monkeypatch):
    """The seven passes with a `target=` option look the profile up once per module
    (pass_options.target_profile); the pipeline string alone still decides it."""
    from adreno_mlir import target
    from adreno_mlir.context import make_context
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.pipeline import build_pipeline

    plan = make_plan("adreno-740")
    pipelines = [build_pipeline(spec) for _, spec in plan.stages(until="config")]
    targeted = [p for pl in pipelines for p in pl.passes if hasattr(p, "target")]
    assert len(targeted) == 7, [p.name for p in targeted]
    lookups = _counting(monkeypatch, "get_profile", target)
    for _ in range(2):
        module = import_onnx(str(tiny_path))
        for pl in pipelines:
            pl.apply(make_context(), module)
    assert lookups == [("adreno-740",), ("adreno-740",)]  # one per module

