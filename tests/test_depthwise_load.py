"""fuse-depthwise-load: a groups-1 1x1 convolution (stride 1, no padding) computes the
depthwise convolution (+ activation) it reads as it loads its input; the depthwise
conv's region becomes `graph.fused {on_load}` and has no kernel of its own.

Numerics against onnxruntime (`scaled_error`: max|ours - ort| / max|ort|) <= 1e-4 on
the f32 plans and <= 5e-3 on fp16-acc32 (fp16 storage), on three plans of the Adreno
740 profile (a GPU target: the pass fires): NCHW4c buffers, NCHW4c images, NCHW4c images
in fp16-acc32; and on two CPU plans where it must not fire (pocl-cpu: NCHW, NCHW4c).

The model is an inverted-residual block: 1x1 expand -> act -> depthwise -> act -> 1x1
project (+ residual add). Node names: expand, expand_act, dw, dw_act, project, add.

Covered:

- numerics on the three GPU plans: 3x3 stride 1 with a residual add (split-K by
  default), 3x3 stride 2, 5x5, dilation 2, TF-style asymmetric padding with stride 2,
  channel counts that are not a multiple of 4 (padded channel blocks in the depthwise
  input, the projection's input and output), odd widths (7, 9, 13), batch 2, ReLU6
  (Clip), HardSwish, SiLU and ReLU activations, a lone depthwise conv without
  activation (the pass wraps it in a region of its own), a depthwise conv without bias.
  Structure: no `dwconv` kernel, one `conv1x1_4c..._dw<K>x<K>[s<S>]t<tile><act>` kernel
  whose tile is the config's `dw_tile`, which is select-kernel-config's rule
  (x_block 1, dw_tile = min(width, 256 // G), G = output blocks / co_blocks), launched
  with a work-group of tile x G; one `graph.fused {on_load}` in the depthwise-load stage
  and none before it.
- CPU plans (pocl-cpu, NCHW and NCHW4c): no on_load in any stage, a `dwconv` kernel.
- two on_load projections writing the two halves of a channel concat (its storage, no
  copy; concats stay buffers, so on both plans the projections write a buffer); a dw_tile kernel launched by the pyopencl and the
  native runtime (its required work-group).
- configs from an overrides file, all matching onnxruntime: dw_tile 0 (every work-item
  computes what it loads; no local memory), dw_tile 4 on width 13 (the last
  work-group overhangs the row), x_block 2 and 4 with a dw_tile (partial pixel blocks,
  fp16), co_blocks 2, split_k forced 1 with 34 input channel blocks (two local-memory
  chunks, the second partial), 2 with 66 (each part 33 blocks: 32 + 1), split_k 3 with
  batch 2 and a dw_tile, a 64-pixel tile (chunks of fewer blocks), a 200-pixel row with
  one output block, a tile wider than the row, and the default dw_tile 0 for 257 output
  blocks; every dw_values array fits the Adreno 740's local memory. The
  CompileErrors for dw_tile on a conv that reads no on_load region, dw_tile with
  reduce_items, and a dw_tile x G work-group over 256 (and the same dw_tile accepted
  with co_blocks 2).
- where the pass must not fire (the depthwise kernel stays, results match): a
  squeeze-excite block (its region has pool partials), the depthwise output also a
  graph output, read by two 1x1 projections, a 3x3 reader, a stride-2 1x1 reader, a
  padded 1x1 reader, a residual add in the depthwise region's tail, and a kernel_config
  written on the depthwise region / lone depthwise conv before the pass (a test pass).
- hand-edited IR: the depthwise-load stage with `on_load` deleted, replayed through the
  rest of the pipeline, gives the depthwise kernel back (and the stage replayed
  unchanged gives the same source as the compile); an on_load region read by a 3x3
  conv, or by a sigmoid, is a clean CompileError from adreno-opt (no traceback).
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass

import numpy as np
import pytest
from adreno_mlir.dialects import graph
from adreno_mlir.lowering.families import config_of, head_of, is_kernel, set_config
from adreno_mlir.lowering.families.conv4c import MAX_DW_TILE_ITEMS, depthwise_load_of
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass

import adreno_mlir
from adreno_mlir import CompileError
from adreno_mlir.context import make_context
from adreno_mlir.target import get_profile
from tests.conftest import NATIVE_BUILD_ERROR
from tests.test_squeeze_excite import _check, _f, _kernels, _model, _overrides  # the same model/check helpers

PLANS = {
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
    "nchw4c-fp16": {"textures": True, "target": "adreno-740", "precision": "fp16-acc32"},
}
GPU_PLANS = list(PLANS)
CPU_PLANS = {
    "nchw": {"textures": False, "layout": "nchw", "target": "pocl-cpu"},
    "nchw4c-cpu": {"textures": False, "layout": "nchw4c", "target": "pocl-cpu"},
}

TOLERANCE = 1e-4
FP16_TOLERANCE = 5e-3

ACT_SUFFIX = {"Relu6": "_clip", "HardSwish": "_hard_swish", "SiLU": "_sigmoid_mul", "Relu": "_relu", None: ""}
"""The kernel-name part of each activation (PackedEpilogue.suffix)."""

ON_LOAD = "graph.fused {on_load}"


def _tolerance(plan: dict) -> float:
    return FP16_TOLERANCE if plan.get("precision") == "fp16-acc32" else TOLERANCE


def _activation(act: str | None, x: str, y: str, name: str, inits: list) -> list:
    if act is None:
        return [helper.make_node("Identity", [x], [y], name=name)]
    if act == "Relu6":
        inits += [numpy_helper.from_array(np.array(0, np.float32), f"{name}_lo"),
                  numpy_helper.from_array(np.array(6, np.float32), f"{name}_hi")]
        return [helper.make_node("Clip", [x, f"{name}_lo", f"{name}_hi"], [y], name=name)]
    if act == "SiLU":
        return [helper.make_node("Sigmoid", [x], [f"{name}_sig"], name=f"{name}_sig"),
                helper.make_node("Mul", [x, f"{name}_sig"], [y], name=name)]
    return [helper.make_node(act, [x], [y], name=name)]


def _out_size(size: int, k: int, stride: int, pads: tuple[int, int], dilation: int = 1) -> int:
    return (size + pads[0] + pads[1] - dilation * (k - 1) - 1) // stride + 1


def block_model(c: int, e: int, h: int, w: int | None = None, *, k: int = 3, stride: int = 1, dilation: int = 1,
                pads: tuple[int, int, int, int] | None = None, act: str | None = "Relu6", dw_act: str | None = "same",
                out: int | None = None, batch: int = 1, residual: bool = True, dw_bias: bool = True,
                expand: bool = True, reader: tuple[int, int, int] = (1, 1, 0), dw_output: bool = False,
                second_projection: bool = False, dw_residual: bool = False):
    """x (batch, c, h, w) -> [1x1 `expand` (c -> e) + bias -> act `expand_act`] -> depthwise
    k x k `dw` (stride, dilation, same padding unless `pads` (top, left, bottom, right);
    bias unless dw_bias=False) -> `dw_act` (default: act; None: none) -> [Add of the
    depthwise input `dw_add` if dw_residual] -> `project` (reader = (kernel, stride, pad),
    e -> out channels, bias) -> Add of x `add` when the shapes allow and residual=True.
    dw_output: the depthwise block's value is also a graph output (a second reader);
    second_projection: a second 1x1 conv `project2` (e -> out) reads it too, output `y2`."""
    w = w or h
    out = out or c
    dw_act = act if dw_act == "same" else dw_act
    rk, rs, rp = reader
    rng = np.random.default_rng(c * 1009 + e * 31 + h * 7 + w + k * 3 + stride + batch)
    inits: list = []

    def weight(name, *shape, fan):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) / math.sqrt(fan)).astype(np.float32), name))
        return name

    def bias(name, n):
        inits.append(numpy_helper.from_array((rng.standard_normal(n) * 0.2).astype(np.float32), name))
        return name

    nodes, src = [], "x"
    if expand:
        nodes.append(helper.make_node("Conv", ["x", weight("we", e, c, 1, 1, fan=c), bias("be", e)], ["e"],
                                      name="expand"))
        nodes += _activation(act, "e", "ea", "expand_act", inits)
        src = "ea"
    else:
        assert e == c
    if pads is None:
        pads = (dilation * (k // 2),) * 4
    dw_inputs = [src, weight("wd", e, 1, k, k, fan=k * k / 2)] + ([bias("bd", e)] if dw_bias else [])
    nodes.append(helper.make_node("Conv", dw_inputs, ["d"], name="dw", group=e, pads=list(pads), strides=[stride] * 2,
                                  dilations=[dilation] * 2))
    nodes += _activation(dw_act, "d", "da", "dw_act", inits)
    read = "da"
    if dw_residual:
        nodes.append(helper.make_node("Add", ["da", src], ["dr"], name="dw_add"))
        read = "dr"
    nodes.append(helper.make_node("Conv", [read, weight("wp", out, e, rk, rk, fan=e * rk * rk), bias("bp", out)],
                                  ["p"], name="project", pads=[rp] * 4, strides=[rs] * 2))
    oh = _out_size(h, k, stride, (pads[0], pads[2]), dilation)
    ow = _out_size(w, k, stride, (pads[1], pads[3]), dilation)
    ph, pw = _out_size(oh, rk, rs, (rp, rp)), _out_size(ow, rk, rs, (rp, rp))
    if residual and (out, ph, pw) == (c, h, w):
        nodes.append(helper.make_node("Add", ["p", "x"], ["y"], name="add"))
    else:
        nodes.append(helper.make_node("Identity", ["p"], ["y"], name="out"))
    outputs = [_f("y", [batch, out, ph, pw])] + ([_f(read, [batch, e, oh, ow])] if dw_output else [])
    if second_projection:
        nodes.append(helper.make_node("Conv", [read, weight("wp2", out, e, 1, 1, fan=e)], ["y2"], name="project2"))
        outputs.append(_f("y2", [batch, out, oh, ow]))
    return _model(nodes, [_f("x", [batch, c, h, w])], outputs, inits)


def se_block_model(c: int = 32, s: int = 8, h: int = 9, out: int = 16):
    """A squeeze-excite block with a projection: x -> depthwise 3x3 `dw` + bias ->
    HardSwish -> GlobalAveragePool -> 1x1 `fc1` -> ReLU -> 1x1 `fc2` -> HardSigmoid -> Mul
    (scale) -> 1x1 `project`."""
    rng = np.random.default_rng(c + s + h + out)
    r = lambda *shape: (rng.standard_normal(shape) * 0.3).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in (
        (r(c, 1, 3, 3), "wd"), (r(c), "bd"), (r(s, c, 1, 1), "w1"), (r(s), "b1"), (r(c, s, 1, 1), "w2"),
        (r(c), "b2"), (r(out, c, 1, 1), "wp"))]
    nodes = [helper.make_node("Conv", ["x", "wd", "bd"], ["d"], name="dw", group=c, pads=[1] * 4),
             helper.make_node("HardSwish", ["d"], ["a"], name="dw_act"),
             helper.make_node("GlobalAveragePool", ["a"], ["p"], name="pool"),
             helper.make_node("Conv", ["p", "w1", "b1"], ["c1"], name="fc1"),
             helper.make_node("Relu", ["c1"], ["r"], name="fc1_relu"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["c2"], name="fc2"),
             helper.make_node("HardSigmoid", ["c2"], ["g"], name="gate", alpha=1 / 6),
             helper.make_node("Mul", ["a", "g"], ["m"], name="scale"),
             helper.make_node("Conv", ["m", "wp"], ["y"], name="project")]
    return _model(nodes, [_f("x", [1, c, h, h])], [_f("y", [1, out, h, h])], inits)


def _projection(cm) -> tuple[dict, Operation]:
    """The kernel_config and the kernel op of the one conv that reads an on_load region
    (config stage); asserts there is exactly one."""
    module = Parser(make_context(), cm.stage_ir["config"]).parse_module()
    readers = [op for op in module.walk() if is_kernel(op) and depthwise_load_of(head_of(op)) is not None]
    assert len(readers) == 1, [op.name for op in readers]
    return config_of(readers[0]), readers[0]


def _groups(out_channels: int, co_blocks: int) -> int:
    """G of a dw_tile work-group: output channel blocks / co_blocks."""
    return -(-out_channels // 4) // co_blocks


def _dw_kernel(cm, k: int, stride: int) -> str:
    """The one kernel that computes a k x k depthwise conv on load."""
    s = f"s{stride}" if stride != 1 else ""
    names = [n for n in _kernels(cm) if f"_dw{k}x{k}{s}" in n]
    assert len(names) == 1, _kernels(cm)
    return names[0]


def _depthwise(cm, stage: str) -> graph.Conv2dOp:
    """The depthwise conv (node `dw`) in the IR of `stage`."""
    module = Parser(make_context(), cm.stage_ir[stage]).parse_module()
    (dw,) = [op for op in module.walk() if isinstance(op, graph.Conv2dOp)
             and getattr(op.location, "desc", None) is not None and op.location.desc.data == "dw"]
    return dw


def _launch(cm, name: str):
    launches = [la for la in cm.executable.launches if la.name == name]
    assert len(launches) == 1, [la.name for la in cm.executable.launches]
    return launches[0]


def _assert_no_on_load(cm) -> None:
    names = _kernels(cm)
    assert any(n.startswith("dwconv") for n in names), names
    assert not any(re.search(r"_dw\d+x\d+", n) for n in names), names
    assert not any("on_load" in ir for ir in cm.stage_ir.values())


# ---------------------------------------------------------------------------------------
# numerics and structure on the GPU plans

CASES = {
    # name: block_model arguments. 96 expanded channels on 14x14: split-K by default.
    "k3_s1_residual_relu6": {"c": 16, "e": 96, "h": 14},
    "k3_s2_hardswish": {"c": 16, "e": 48, "h": 14, "stride": 2, "out": 24, "act": "HardSwish"},
    "k5_hardswish": {"c": 24, "e": 72, "h": 9, "k": 5, "act": "HardSwish"},
    "dilation2_relu6": {"c": 16, "e": 32, "h": 10, "dilation": 2},
    # TF "SAME" for stride 2: padding only at the bottom and right (15 -> 8).
    "k3_s2_asymmetric_pads": {"c": 8, "e": 24, "h": 15, "stride": 2, "pads": (0, 0, 1, 1), "out": 12, "act": "Relu"},
    # 6 -> 22 -> 10 channels: 2, 6 and 3 blocks, each with padded channels; width 9.
    "channels_not_multiple_of_4": {"c": 6, "e": 22, "h": 7, "w": 9, "out": 10, "act": "HardSwish"},
    "width7_silu": {"c": 8, "e": 40, "h": 9, "w": 7, "act": "SiLU"},
    # 9 expanded blocks, width 13, batch 2.
    "batch2_width13_silu": {"c": 8, "e": 36, "h": 6, "w": 13, "batch": 2, "act": "SiLU"},
    # x -> depthwise (no activation: graph-fuse makes no region) -> project + x.
    "lone_depthwise_no_activation": {"c": 16, "e": 16, "h": 9, "expand": False, "act": None},
    "depthwise_without_bias_relu": {"c": 12, "e": 36, "h": 11, "w": 9, "dw_bias": False, "act": "Relu"},
}


@pytest.mark.parametrize("plan", GPU_PLANS)
@pytest.mark.parametrize("case", CASES)
def test_matches_onnxruntime(case, plan):
    args = CASES[case]
    model = block_model(**args)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    k, stride, act = args.get("k", 3), args.get("stride", 1), args.get("act", "Relu6")
    out = args.get("out") or args["c"]
    names = _kernels(cm)
    assert not any(n.startswith("dwconv") for n in names), names
    name = _dw_kernel(cm, k, stride)
    cfg, reader = _projection(cm)
    groups = _groups(out, cfg["co_blocks"])
    ow = graph.shape_of(reader.results[0])[3]
    tile = min(ow, MAX_DW_TILE_ITEMS // groups)
    assert cfg["x_block"] == 1 and cfg["dw_tile"] == tile, cfg
    s = f"s{stride}" if stride != 1 else ""
    split = cfg["split_k"] > 1
    residual = args.get("residual", True) and out == args["c"] and stride == 1
    split_part = f"_split{cfg['split_k']}" if split else ""
    pattern = (rf"conv1x1_4c{split_part}_dw{k}x{k}{s}t{tile}{ACT_SUFFIX[act]}"
               + ("_add" if residual and not split else ""))
    assert re.fullmatch(pattern, name), (name, pattern)
    assert _launch(cm, name).local_size == (tile * groups, 1, 1)
    assert cm.stage_ir["depthwise-load"].count(ON_LOAD) == 1
    assert "on_load" not in cm.stage_ir["channel-scale"]
    if not args.get("expand", True):  # a lone depthwise conv (no activation): a region of its own
        assert len(_depthwise(cm, "channel-scale").parent_op().ops) == 1
    region = _depthwise(cm, "depthwise-load").parent_op()
    assert isinstance(region, graph.FusedOp) and region.on_load is not None
    _check(cm, model, _tolerance(PLANS[plan]))


def test_cases_cover_their_paths():
    """The cases exercise what their names say (no device needed): padded channel blocks,
    odd widths, a default split-K."""
    padded = CASES["channels_not_multiple_of_4"]
    assert all(padded[k] % 4 for k in ("c", "e", "out"))
    widths = {CASES[c]["w"] for c in ("width7_silu", "batch2_width13_silu", "channels_not_multiple_of_4")}
    assert widths == {7, 9, 13}
    cm = adreno_mlir.compile(block_model(**CASES["k3_s1_residual_relu6"]), keep_ir=True, **PLANS["nchw4c-buffers"])
    assert _projection(cm)[0]["split_k"] > 1


@pytest.mark.parametrize("plan", CPU_PLANS)
def test_cpu_plans_keep_the_depthwise_kernel(plan):
    model = block_model(**CASES["k3_s2_hardswish"])
    cm = adreno_mlir.compile(model, keep_ir=True, **CPU_PLANS[plan])
    _assert_no_on_load(cm)
    if plan == "nchw4c-cpu":  # the stage runs and leaves the module alone
        assert cm.stage_ir["depthwise-load"] == cm.stage_ir["channel-scale"]
    else:
        assert "depthwise-load" not in cm.stage_ir
    _check(cm, model, TOLERANCE)


def concat_model():
    """Two inverted-residual branches of x (8 -> 24 and 8 -> 40 expanded channels, 3x3
    depthwise + ReLU, projections `proj1`/`proj2` to 12 channels each) whose projections
    are a channel concat's inputs (written into its storage at channel blocks 0 and 3),
    then a 1x1 conv `after`."""
    rng = np.random.default_rng(11)
    r = lambda *shape: (rng.standard_normal(shape) * 0.3).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in (
        (r(24, 8, 1, 1), "we1"), (r(40, 8, 1, 1), "we2"), (r(24, 1, 3, 3), "wd1"), (r(24), "bd1"),
        (r(12, 24, 1, 1), "wp1"), (r(40, 1, 3, 3), "wd2"), (r(40), "bd2"), (r(12, 40, 1, 1), "wp2"),
        (r(8, 24, 1, 1), "wo"))]
    node = helper.make_node
    nodes = [node("Conv", ["x", "we1"], ["e1"], name="expand1"), node("Relu", ["e1"], ["ea1"], name="expand1_act"),
             node("Conv", ["x", "we2"], ["e2"], name="expand2"), node("Relu", ["e2"], ["ea2"], name="expand2_act"),
             node("Conv", ["ea1", "wd1", "bd1"], ["d1"], group=24, pads=[1] * 4, name="dw1"),
             node("Relu", ["d1"], ["a1"], name="dw1_act"), node("Conv", ["a1", "wp1"], ["p1"], name="proj1"),
             node("Conv", ["ea2", "wd2", "bd2"], ["d2"], group=40, pads=[1] * 4, name="dw2"),
             node("Relu", ["d2"], ["a2"], name="dw2_act"), node("Conv", ["a2", "wp2"], ["p2"], name="proj2"),
             node("Concat", ["p1", "p2"], ["cat"], axis=1, name="cat"),
             node("Conv", ["cat", "wo"], ["y"], name="after")]
    return _model(nodes, [_f("x", [1, 8, 7, 11])], [_f("y", [1, 8, 7, 11])], inits)


@pytest.mark.parametrize("plan", ["nchw4c-buffers", "nchw4c-textures"])
def test_projections_write_a_concat(plan):
    """Two on_load projections write their halves of a concat (plan-memory: no copy)."""
    model = concat_model()
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    names = _kernels(cm)
    assert sum(bool(re.search(r"_dw3x3t11_relu", n)) for n in names) == 2, names
    assert not any(n.startswith(("dwconv", "copy", "concat")) for n in names), names
    assert cm.stage_ir["depthwise-load"].count(ON_LOAD) == 2
    _check(cm, model, TOLERANCE)


@pytest.mark.parametrize("runtime", ["pyopencl", "native"])
def test_tiled_work_groups_on_both_runtimes(runtime):
    """The dw_tile kernel needs its work-group: both launch paths give it (the last one
    overhanging the 13-pixel row) and match onnxruntime."""
    from adreno_mlir.runtime.native import library_path

    if runtime == "native" and library_path() is None:  # CI builds it (conftest stops the run if it cannot)
        pytest.skip(f"the native runtime could not be built here: {NATIVE_BUILD_ERROR}")
    model = block_model(16, 32, 5, w=13)
    cm = adreno_mlir.compile(model, runtime=runtime, overrides={"loc:project": {"dw_tile": 4, "split_k": 1}},
                             **PLANS["nchw4c-buffers"])
    assert cm.runtime == runtime
    assert _launch(cm, _dw_kernel(cm, 3, 1)).local_size == (4 * _groups(16, 1), 1, 1)
    _check(cm, model, TOLERANCE)


# ---------------------------------------------------------------------------------------
# configs from an overrides file

FORCED = {
    # name: (block_model arguments, config of `project`, plan, several local-memory chunks
    # with a partial last one)
    "recompute_dw_tile0": ({"c": 16, "e": 32, "h": 9, "w": 13}, {"dw_tile": 0}, "nchw4c-textures", False),
    "tile4_width13_overhang": ({"c": 16, "e": 32, "h": 5, "w": 13}, {"dw_tile": 4, "split_k": 1}, "nchw4c-buffers",
                               False),
    # 6 pixels per work-group over 13: the last one overhangs, and its last pixel block is partial.
    "xblock2_tile3": ({"c": 16, "e": 32, "h": 5, "w": 13, "act": "HardSwish"}, {"x_block": 2, "dw_tile": 3},
                      "nchw4c-buffers", False),
    "xblock4_tile2_fp16": ({"c": 16, "e": 32, "h": 5, "w": 13, "act": "SiLU"}, {"x_block": 4, "dw_tile": 2},
                           "nchw4c-fp16", False),
    "coblocks2": ({"c": 16, "e": 24, "h": 6, "w": 11, "out": 32}, {"co_blocks": 2}, "nchw4c-textures", False),
    # 34 input channel blocks in one part (7-pixel tiles: chunks of 32 blocks): 32 + 2.
    "split1_two_chunks": ({"c": 16, "e": 136, "h": 4, "w": 7}, {"split_k": 1}, "nchw4c-buffers", True),
    # 66 blocks in two parts of 33: each part a chunk of 32 and one of 1.
    "split2_chunks": ({"c": 8, "e": 264, "h": 3, "w": 5}, {"split_k": 2}, "nchw4c-textures", True),
    "split3_batch2": ({"c": 8, "e": 48, "h": 5, "w": 9, "batch": 2, "act": "HardSwish"}, {"split_k": 3, "dw_tile": 5},
                      "nchw4c-buffers", False),
    # 64-pixel tiles: fewer blocks per chunk, so that they fit in local memory; 24 blocks.
    "wide_row_small_chunks": ({"c": 16, "e": 96, "h": 2, "w": 64}, {"split_k": 1}, "nchw4c-textures", True),
    # A tile wider than the row: 32 pixels for 13, 19 work-items of each row group idle.
    "tile_wider_than_row": ({"c": 16, "e": 32, "h": 3, "w": 13}, {"dw_tile": 32}, "nchw4c-textures", False),
    # 1028 output channels: G = 257 blocks, more than a work-group holds: dw_tile 0 by default.
    "over_256_output_blocks": ({"c": 8, "e": 16, "h": 3, "w": 5, "out": 1028}, {}, "nchw4c-buffers", False),
    # 4 output channels (G = 1): the default tile is the whole 200-pixel row.
    "row200_one_output_block": ({"c": 4, "e": 48, "h": 2, "w": 200, "out": 4}, {"split_k": 1}, "nchw4c-buffers", True),
}


def _dw_values(cm, name: str) -> tuple[int, int]:
    """(float4s, bytes) of kernel `name`'s `__local ... dw_values[N]`."""
    body = cm.source.split(f"__kernel void {name}(")[1].split("__kernel void")[0]
    found = re.findall(r"__local (float|half)4 dw_values\[(\d+)\];", body)
    assert len(found) == 1, found
    kind, n = found[0]
    return int(n), int(n) * (16 if kind == "float" else 8)


@pytest.mark.parametrize("case", FORCED)
def test_forced_config_matches_onnxruntime(case, tmp_path):
    args, config, plan, chunks = FORCED[case]
    model = block_model(**args)
    cm = adreno_mlir.compile(model, keep_ir=True, overrides=_overrides(tmp_path, {"loc:project": config}),
                             **PLANS[plan])
    cfg, _ = _projection(cm)
    assert {k: cfg[k] for k in config} == config, cfg
    out, w = args.get("out") or args["c"], args["w"]
    groups = _groups(out, cfg["co_blocks"])
    tile = config.get("dw_tile", min(w, MAX_DW_TILE_ITEMS // groups))
    assert cfg["dw_tile"] == tile
    name = _dw_kernel(cm, 3, 1)
    launch = _launch(cm, name)
    split = cfg["split_k"]
    assert (f"_split{split}_" in name) == (split > 1), name
    assert (f"_x{cfg['co_blocks']}_" in name) == (cfg["co_blocks"] > 1), name
    xb = min(cfg["x_block"], w)
    if tile:
        assert re.search(rf"_dw3x3t{tile}(_|$)", name), name
        assert launch.local_size == (tile * groups, 1, 1)
        # whole work-groups over the row, the last overhanging when tile * x_block does not divide it
        assert launch.global_size[0] == -(-w // (xb * tile)) * tile * groups
        assert launch.global_size[2] == args.get("batch", 1) * split
        assert "barrier(CLK_LOCAL_MEM_FENCE)" in cm.source
        values, size = _dw_values(cm, name)
        assert size <= get_profile("adreno-740").local_memory_bytes, size
        pixels = tile * xb
        assert values % pixels == 0
        blocks = -(-args["e"] // 4)
        per_part = -(-blocks // split)  # input channel blocks of one split-K part
        chunk = values // pixels
        assert (per_part > chunk and per_part % chunk != 0) == chunks, (per_part, chunk)
    else:
        assert re.search(r"_dw3x3(_|$)", name), name
        assert launch.local_size is None
        assert "__local" not in cm.source
        assert not chunks
    _check(cm, model, _tolerance(PLANS[plan]))


def test_forced_cases_cover_their_paths():
    """The overhang and partial pixel block cases have the geometry they claim."""
    _, cfg, _, _ = FORCED["tile4_width13_overhang"]
    assert 13 % cfg["dw_tile"]
    _, cfg, _, _ = FORCED["xblock2_tile3"]
    assert 13 % (cfg["x_block"] * cfg["dw_tile"]) and 13 % cfg["x_block"]
    _, cfg, _, _ = FORCED["xblock4_tile2_fp16"]
    assert 13 % (cfg["x_block"] * cfg["dw_tile"]) and 13 % cfg["x_block"]


CONFIG_ERRORS = {
    # name: (block_model arguments, overrides, message)
    "dw_tile_without_on_load": ({"c": 16, "e": 32, "h": 9}, {"loc:expand": {"dw_tile": 4}},
                                r"dw_tile = 4 needs a conv that reads a graph.fused \{on_load\} region"),
    "dw_tile_with_reduce_items": ({"c": 16, "e": 32, "h": 9}, {"loc:project": {"dw_tile": 4, "reduce_items": 2}},
                                  "dw_tile = 4 and reduce_items = 2 both set the work-group"),
}


@pytest.mark.parametrize("case", CONFIG_ERRORS)
def test_config_errors(case, tmp_path):
    args, entries, message = CONFIG_ERRORS[case]
    with pytest.raises(CompileError, match=message) as err:
        adreno_mlir.compile(block_model(**args), overrides=_overrides(tmp_path, entries), **PLANS["nchw4c-buffers"])
    node = next(iter(entries)).removeprefix("loc:")
    assert f'loc("{node}")' in str(err.value) and "overrides file" in str(err.value)


def test_dw_tile_work_group_too_large(tmp_path):
    """64 output channels: G = 16 blocks, so the largest dw_tile is 256 // 16; one more is an
    error, and the same tile is accepted once co_blocks 2 halves G."""
    model = block_model(c=16, e=32, h=5, w=20, out=64)
    groups = _groups(64, 1)
    tile = MAX_DW_TILE_ITEMS // groups + 1
    with pytest.raises(CompileError, match=rf"dw_tile = {tile} makes work-groups of {tile} x {groups} work-items"):
        adreno_mlir.compile(model, overrides=_overrides(tmp_path, {"loc:project": {"dw_tile": tile}}),
                            **PLANS["nchw4c-buffers"])
    cm = adreno_mlir.compile(model, overrides=_overrides(tmp_path, {"loc:project": {"dw_tile": tile, "co_blocks": 2}}),
                             **PLANS["nchw4c-buffers"])
    assert _launch(cm, _dw_kernel(cm, 3, 1)).local_size == (tile * groups // 2, 1, 1)
    _check(cm, model, TOLERANCE)


# ---------------------------------------------------------------------------------------
# where the pass must not fire

NOT_FUSED = {
    # name: (model, plan)
    "squeeze_excite": (se_block_model, "nchw4c-textures"),
    "two_readers": (lambda: block_model(16, 32, 9, dw_output=True), "nchw4c-buffers"),
    "two_projections": (lambda: block_model(16, 32, 9, second_projection=True), "nchw4c-textures"),
    "reader_3x3": (lambda: block_model(16, 32, 9, reader=(3, 1, 1)), "nchw4c-textures"),
    "reader_1x1_stride2": (lambda: block_model(16, 32, 9, reader=(1, 2, 0)), "nchw4c-buffers"),
    "reader_1x1_padded": (lambda: block_model(16, 32, 7, reader=(1, 1, 1)), "nchw4c-fp16"),
    "residual_in_depthwise_tail": (lambda: block_model(16, 16, 10, expand=False, dw_residual=True, out=24),
                                   "nchw4c-buffers"),
}


@pytest.mark.parametrize("case", NOT_FUSED)
def test_not_fused(case):
    make, plan = NOT_FUSED[case]
    model = make()
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    _assert_no_on_load(cm)
    if case == "squeeze_excite":  # the depthwise kernel writes the pool tiles
        assert any(n.startswith("dwconv") and re.search(r"_pool\d+$", n) for n in _kernels(cm)), _kernels(cm)
    if case == "residual_in_depthwise_tail":  # the add is in the depthwise kernel
        assert any(re.fullmatch(r"dwconv3x3_4c_clip_add", n) for n in _kernels(cm)), _kernels(cm)
    _check(cm, model, _tolerance(PLANS[plan]))


@dataclass(frozen=True)
class ConfigureDepthwise(ModulePass):
    """Writes a kernel_config by hand on every depthwise conv's kernel (its region, or
    the conv when it stands alone), as a user editing the IR would."""

    name = "test-configure-depthwise"

    def apply(self, ctx, op: ModuleOp) -> None:
        for o in list(op.walk()):
            if graph.is_depthwise_load(o):
                set_config(o, {"x_block": 2, "co_blocks": 1, "split_k": 1, "dw_rows": 1})


@pytest.mark.parametrize("act", ["Relu6", None])
def test_hand_written_config_keeps_the_kernel(act):
    """A config on the depthwise region, with an activation (Relu6) or without (a region
    of one op), before fuse-depthwise-load: the pass leaves it a kernel, which keeps the
    hand-written x_block."""
    model = block_model(16, 32, 9, act=act)

    def pipeline(p):
        assert "fuse-depthwise-load{target=adreno-740}" in p
        return p.replace("fuse-depthwise-load{target=adreno-740}",
                         "test-configure-depthwise,fuse-depthwise-load{target=adreno-740}")

    cm = adreno_mlir.compile(model, keep_ir=True, pipeline=pipeline, passes=[ConfigureDepthwise],
                             **PLANS["nchw4c-buffers"])
    _assert_no_on_load(cm)
    module = Parser(make_context(), cm.stage_ir["select-kernel-config"]).parse_module()  # stages named by pass
    dw = [op for op in module.walk() if is_kernel(op) and graph.is_depthwise_load(head_of(op))]
    assert len(dw) == 1 and config_of(dw[0])["x_block"] == 2
    assert isinstance(dw[0], graph.FusedOp) and len(dw[0].ops) == (2 if act is not None else 1)
    _check(cm, model, TOLERANCE)


# ---------------------------------------------------------------------------------------
# hand-edited IR


def _replay_after(cm, stage: str, text: str, plan: dict):
    """Compile `text` (the IR of `stage`) with the rest of cm's pipeline."""
    names = [st.name for st in cm.stages]
    rest = ",".join(st.pipeline for st in cm.stages[names.index(stage) + 1:])
    module = Parser(make_context(), text).parse_module()
    return adreno_mlir.compile(module, pipeline=rest, **plan)


@pytest.mark.parametrize("plan", ["nchw4c-buffers", "nchw4c-textures"])
def test_deleting_on_load_gives_the_kernel_back(plan):
    model = block_model(16, 32, 9, w=11, act="HardSwish")
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    text = cm.stage_ir["depthwise-load"]
    assert text.count(ON_LOAD) == 1
    same = _replay_after(cm, "depthwise-load", text, PLANS[plan])
    assert same.source == cm.source
    edited = _replay_after(cm, "depthwise-load", text.replace(ON_LOAD, "graph.fused"), PLANS[plan])
    names = _kernels(edited)
    assert "dwconv3x3_4c_hard_swish" in names and not any("_dw3x3" in n for n in names), names
    assert sorted(names) != sorted(_kernels(cm))
    _check(edited, model, TOLERANCE)


T8 = "!texture.tensor<1x4x8x8x4xf32, nchw4c, global>"
"""The NCHW4c type of a 16-channel 8x8 tensor (the hand-written IR below)."""

_ON_LOAD_REGION = f"""
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused {{on_load}} -> {T8} {{
    %c = graph.conv2d %x, %wd {{pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64}} : {T8}, tensor<4x1x3x3x4xf32> -> {T8} loc("dw")
    %h = graph.relu %c : {T8} loc("dw_act")
    graph.yield %h : {T8}
  }} loc("dw_region")"""

BAD_READERS = {
    # name: (function, message)
    "conv3x3": (
        f"""func.func @main(%x: {T8}) -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {{{_ON_LOAD_REGION}
  %w = graph.constant dense<0.125> : tensor<2x16x3x3x4xf32>
  %p = graph.conv2d %d, %w {{pads = array<i64: 1, 1, 1, 1>}} : {T8}, tensor<2x16x3x3x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> loc("project3x3")
  func.return %p : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}}
""",
        (r"'graph.conv2d' at loc\(\"project3x3\"\) reads the graph.fused \{on_load\} region at 'graph.fused' at "
         r"loc\(\"dw_region\"\), which only a groups-1 1x1 convolution with stride 1 and no padding can read"),
    ),
    "sigmoid": (
        f"""func.func @main(%x: {T8}) -> {T8} {{{_ON_LOAD_REGION}
  %s = graph.sigmoid %d : {T8} loc("sig")
  func.return %s : {T8}
}}
""",
        r"'graph.fused' at loc\(\"dw_region\"\): this graph.fused region is on_load: it has no kernel of its own",
    ),
}


@pytest.mark.parametrize("case", BAD_READERS)
def test_on_load_region_with_a_bad_reader(case, tmp_path):
    """Hand-written IR whose on_load region has a reader that cannot compute it: a clean
    error from adreno-opt (exit status 1, no traceback, no internal error) naming the op."""
    text, message = BAD_READERS[case]
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    ok = subprocess.run(["adreno-opt", str(path)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr  # the IR itself is valid
    proc = subprocess.run(["adreno-opt", str(path), "-p",
                           "graph-fuse,select-kernel-config{target=adreno-740},split-k,plan-memory,convert-graph-to-opencl",
                           "-t", "opencl"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal compiler error" not in proc.stderr, proc.stderr
    assert re.search(message, proc.stderr), proc.stderr


# --------------------------------------------------------------------------- analyze, API

def test_analyze_counts_the_depthwise_conv_inside_its_projection():
    """Regression (helper review of fuse-depthwise-load): `adreno-mlir analyze` charged an
    on_load projection its region's value as the bytes read and left out the depthwise
    FLOPs. Now the projection of an expand -> 3x3 stride-2 depthwise -> project block has
    the FLOPs of the NCHW plan's depthwise and projection kernels together, and reads the
    depthwise conv's input (96 x 28 x 28 floats) and weights instead of its output."""
    from adreno_mlir.analyze import analyze_model

    model = block_model(16, 96, 28, stride=2, out=24, residual=False)
    fused = analyze_model(model, "adreno-740", plan="buffer4c")
    plain = analyze_model(model, "adreno-740", plan="nchw")
    assert "on_load" in str(fused.module)
    project = next(c for c in fused.costs if c.name == "project")
    separate = [c for c in plain.costs if c.name in ("project", "dw_act")]
    assert len(separate) == 2, [c.name for c in plain.costs]
    assert project.flops == sum(c.flops for c in separate)
    assert sum(c.flops for c in fused.costs) == sum(c.flops for c in plain.costs)
    dw_input = 4 * 96 * 28 * 28
    assert project.global_bytes >= dw_input + 4 * 24 * 14 * 14


def test_compile_of_ir_without_graph_io_names_is_a_compile_error():
    """Regression (helper review): compiling a parsed module whose func has no
    graph.inputs / graph.outputs attributes raised a raw KeyError."""
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context
    from adreno_mlir.errors import CompileError

    text = """func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = graph.relu %x : tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}"""
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(CompileError, match=r"func @main has no graph.inputs or graph.outputs attribute"):
        adreno_mlir.compile(module, target="pocl-cpu")


# --------------------------------------------------------------------------- review fixes

@pytest.mark.parametrize("plan", ["nchw4c-buffers", "nchw4c-textures"])
@pytest.mark.parametrize("args", [dict(c=16, e=64, h=1), dict(c=16, e=64, h=2, stride=2, out=24, residual=False)],
                         ids=["1x1", "2x2-stride2"])
def test_projection_to_a_1x1_output_keeps_its_gemv_work_group(args, plan):
    """Regression (review of fuse-depthwise-load): a projection with a 1x1 output got the
    GEMV rule's reduce_items and the on-load rule's dw_tile 1 together, which the config
    check refuses: MobileNetV2 on a 32x32 input did not compile. Such a projection keeps
    its work-group per output block (reduce_items) with dw_tile 0: each work-item
    computes the depthwise values it loads."""
    model = block_model(**args)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    cfg, _ = _projection(cm)
    assert cfg["reduce_items"] > 1 and cfg["dw_tile"] == 0, cfg
    assert "on_load" in cm.stage_ir["depthwise-load"]
    assert not any(k.startswith("dwconv") for k in _kernels(cm)), _kernels(cm)
    _check(cm, model, _tolerance(PLANS[plan]))


def test_an_override_of_one_work_group_key_drops_the_defaults_other(tmp_path):
    """Regression (review): `{"reduce_items": 4}` on a projection whose default has a
    dw_tile (and `{"dw_tile": 7}` on one whose default has reduce_items) failed with
    "both set the work-group"; the key given wins, as split_k and reduce_items do."""
    model = block_model(16, 64, 7)
    cm = adreno_mlir.compile(model, keep_ir=True, overrides=_overrides(tmp_path, {"loc:project": {"reduce_items": 4}}),
                             **PLANS["nchw4c-buffers"])
    cfg, _ = _projection(cm)
    assert cfg["reduce_items"] == 4 and cfg["dw_tile"] == 0, cfg
    _check(cm, model, TOLERANCE)
    small = block_model(16, 64, 1)
    cm = adreno_mlir.compile(small, keep_ir=True, overrides=_overrides(tmp_path, {"loc:project": {"dw_tile": 1}}),
                             **PLANS["nchw4c-buffers"])
    cfg, _ = _projection(cm)
    assert cfg["dw_tile"] == 1 and cfg.get("reduce_items", 1) == 1, cfg
    _check(cm, small, TOLERANCE)


def test_an_override_naming_the_fused_depthwise_conv_says_why_it_does_nothing(tmp_path):
    """Regression (review): an overrides entry for the depthwise node only got the
    generic "matched no op" note once its region became on_load."""
    with pytest.warns(UserWarning, match=r"entry 'loc:dw' names a depthwise conv that its reader computes"):
        adreno_mlir.compile(block_model(16, 64, 7), overrides=_overrides(tmp_path, {"loc:dw": {"dw_rows": 0}}),
                            **PLANS["nchw4c-buffers"])


def test_tuning_space_has_no_work_group_points_under_a_dw_tile():
    """Regression (review): the tuner measured each dw_tile config once per work_group
    choice, though a dw_tile kernel's work-group is fixed (Lx x G)."""
    from adreno_mlir.tuning.space import space_of

    cm = adreno_mlir.compile(block_model(16, 96, 14, out=16), keep_ir=True, **PLANS["nchw4c-buffers"])
    _, proj = _projection(cm)
    space = space_of(proj, gpu=True)
    points = space.candidates()
    tiled = [p for p in points if p.get("dw_tile", 0)]
    assert tiled and not any("work_group" in p for p in tiled), tiled[:3]
    assert len({tuple(sorted(p.items())) for p in points}) == len(points)
