"""`adreno-mlir profile` (adreno_mlir/profiler.py): a table keyed by ONNX node joined with
analyze's estimates, a Chrome trace with one event per launch, a PNG; launch plans carry
their node names (also through an artifact)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

import adreno_mlir
from adreno_mlir.cli import main
from tests.conftest import materialized_model


@pytest.fixture(scope="module")
def mobilenet_v2():
    return materialized_model("mobilenet_v2")


def _onnx_node_names(path) -> set[str]:
    return {n.name for n in onnx.load(str(path), load_external_data=False).graph.node}


def test_profile_mobilenet_v2_table_trace_plot_json(mobilenet_v2, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the [test] extra installs matplotlib; --plot needs it")
    trace, plot, out = tmp_path / "trace.json", tmp_path / "top.png", tmp_path / "profile.json"
    assert main(["profile", str(mobilenet_v2), "--repeat", "2", "--warmup", "1", "--trace", str(trace),
                 "--plot", str(plot), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    nodes = _onnx_node_names(mobilenet_v2)
    record = json.loads(out.read_text())
    assert record["schema"] == "adreno-mlir-profile/1"
    rows = record["nodes"]
    # rows keyed by ONNX node (inserted layout conversions are `<kernel>` rows), longest first
    named = [r for r in rows if not r["node"].startswith("<")]
    assert named and all(r["node"] in nodes for r in named)
    times = [r["device_ms"] for r in rows]
    assert times == sorted(times, reverse=True)
    assert sum(r["launches"] for r in rows) == len(record["launches"])
    assert abs(sum(r["share"] for r in rows) - 1.0) < 1e-6
    assert abs(sum(r["device_ms"] for r in rows) - record["total_device_ms"]) < 1e-9
    # joined with analyze: the convolutions have FLOPs, an estimate and achieved rates
    convs = [r for r in named if r["family"].startswith("conv")]
    assert convs and all(r["flops"] > 0 and r["estimate_us"] > 0 and r["gflops_per_s"] > 0 for r in convs)
    # the longest node is in the printed table, cut like analyze's names
    first = rows[0]["node"]
    assert (first if len(first) <= 44 else "..." + first[-41:]) in text
    # trace-event JSON: one complete event per launch, named by node, timestamps in order
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert len(spans) == len(record["launches"])
    assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and e["pid"] == 1 for e in spans)
    assert [e["args"]["launch"] for e in spans] == list(range(len(spans)))
    assert all(e["ts"] >= 0 for e in spans) and min(e["ts"] for e in spans) == 0
    assert {e["name"] for e in spans if not e["name"].startswith("<")} <= nodes
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_launch_nodes_survive_an_artifact_and_key_the_profile(tmp_path):
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8, 8, 8])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8, 8, 8])
    w = onnx.numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 8, 3, 3)).astype(np.float32), "w")
    g = onnx.helper.make_graph([onnx.helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="my_conv"),
                                onnx.helper.make_node("Relu", ["c"], ["y"], name="my_relu")], "g", [x], [y], [w])
    path = tmp_path / "m.onnx"
    onnx.save(onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 17)]), str(path))
    cm = adreno_mlir.compile(path, textures=False, layout="nchw")
    assert {launch.node for launch in cm.launch_plan.launches} & {"my_conv", "my_relu"}
    loaded = adreno_mlir.load(cm.save(tmp_path / "m.adreno"))
    assert [launch.node for launch in loaded.launch_plan.launches] == [launch.node for launch in cm.launch_plan.launches]
    from adreno_mlir.profiler import profile_model

    feeds = {"x": np.ones((1, 8, 8, 8), np.float32)}
    prof = profile_model(loaded, feeds, repeat=2, warmup=0, analysis="an artifact")
    assert set(prof.by_node()) <= {"my_conv", "my_relu"} | {f"<{k}>" for k in loaded.launch_plan.kernel_names}
    assert prof.estimates == "an artifact" and all(r.estimate_us is None for r in prof.rows)


def test_plot_without_matplotlib_is_a_clear_error_before_compiling(tmp_path, monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    monkeypatch.setattr(adreno_mlir, "compile", lambda *a, **k: pytest.fail("compiled before checking --plot"))
    assert main(["profile", str(tmp_path / "missing.onnx"), "--plot", str(tmp_path / "p.png")]) == 1
    err = capsys.readouterr().err
    assert "--plot needs matplotlib" in err and "adreno-mlir[plot]" in err
    assert not (tmp_path / "p.png").exists()
