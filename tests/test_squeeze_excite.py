"""Squeeze-excite blocks on GPU targets (fuse-pool-partials), `reduce_items` on NCHW4c
groups-1 convolutions, and SiLU (`x * sigmoid(x)`) fused into its producer's kernel.

Numerics against onnxruntime (`scaled_error`: max|ours - ort| / max|ort|) <= 1e-4 on
the f32 plans and <= 5e-3 on fp16-acc32 (fp16 storage), on four plans: NCHW4c buffers,
NCHW4c images and NCHW4c images in fp16-acc32 for the Adreno 740 profile (GPU: the
pass fires), and the plain NCHW plan of the default PoCL CPU profile (the pass must
not fire: pocl-cpu is no GPU target).

Covered:

- fuse-pool-partials on squeeze-excite blocks (depthwise conv + activation -> global
  average pool -> 1x1 conv -> ReLU -> 1x1 conv -> HardSigmoid -> scale): large planes
  (many tiles), a 7x7 plane of 576 channels, odd planes whose tiles do not divide the
  pixels and whose tile is no multiple of the work-group, stride 2, kernel 5,
  HardSwish/ReLU/SiLU, channel counts that are not a multiple of 4 (padded channel
  blocks) and odd numbers of channel blocks, batch 2. Structure: on GPU plans one
  depthwise kernel `..._pool<tiles>` (its work-group and tiles as the pass's
  `pool_items`/`pool_tiles` say), no `global_avgpool` kernel, a first FC `..._tiles<T>`;
  on the NCHW plan no pooled kernel and no pool_partials in any stage.
- tiles set by hand (a test pass after fuse-pool-partials rewrites `tiles`): one tile,
  one pixel per tile, and tiles past the last pixel (empty tiles).
- forced configs of the pooled depthwise kernel (reduce_items 2 and 256; the errors for
  reduce_items 1 and x_block 2) and a split-K FC reading the tiles.
- where the pass must not fire: a pool with a second reader (also a graph output), a
  pool of a groups-1 conv, a pool of a depthwise conv without activation (no region),
  a pool read by Flatten + Gemm.
- `reduce_items` on NCHW4c groups-1 convs: the GPU default for 1x1 outputs (largest
  power of two <= the input channel blocks), values forced through an overrides file
  (2, 16, 64 on 48 and 100 input channels, also more than the channel blocks, and with
  x_block 2 / co_blocks 2 on a spatial 3x3 conv with an odd width); the CompileError for
  reduce_items with split_k > 1 and on a depthwise conv; split_k forced alone on a conv
  whose default has reduce_items.
- SiLU: conv + Sigmoid + Mul(x, sigmoid(x)) is one kernel on every plan (either operand
  order), and stays two kernels when the sigmoid is also a graph output.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort
import pytest
from adreno_mlir.dialects import graph, texture
from adreno_mlir.passes.fuse_pool_partials import pool_items, pool_tiles
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, f32
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

import adreno_mlir
from adreno_mlir import CompileError
from tests.test_models import scaled_error

PLANS = {
    "nchw4c-buffers": {"textures": False, "layout": "nchw4c", "target": "adreno-740"},
    "nchw4c-textures": {"textures": True, "target": "adreno-740"},
    "nchw4c-fp16": {"textures": True, "target": "adreno-740", "precision": "fp16-acc32"},
    "nchw": {"textures": False, "layout": "nchw", "target": "pocl-cpu"},
}
"""`nchw`: the plain NCHW plan for a CPU profile, named so that the plan stays a CPU's on any
device (on a GPU device `{}` would be the texture plan)."""
GPU_PLANS = [p for p in PLANS if p != "nchw"]

TOLERANCE = 1e-4
FP16_TOLERANCE = 5e-3


def _tolerance(plan: str) -> float:
    return FP16_TOLERANCE if PLANS[plan].get("precision") == "fp16-acc32" else TOLERANCE


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _activation(act: str, x: str, y: str, name: str) -> list:
    if act == "SiLU":
        return [helper.make_node("Sigmoid", [x], [f"{name}_sig"], name=f"{name}_sig"),
                helper.make_node("Mul", [x, f"{name}_sig"], [y], name=name)]
    if act is None:
        return [helper.make_node("Identity", [x], [y], name=name)]
    return [helper.make_node(act, [x], [y], name=name)]


def se_model(c: int, s: int, h: int, *, k: int = 3, stride: int = 1, act: str | None = "HardSwish",
             batch: int = 1, producer: str = "depthwise", pool_output: bool = False, head: str = "se"):
    """x (batch, c, h, h) -> conv (depthwise k x k, or groups 1 with producer="conv") +
    bias -> act -> GlobalAveragePool `pool` -> fc1 (1x1, c -> s) -> ReLU -> fc2 (1x1,
    s -> c) -> HardSigmoid -> `scale` = act output * gate. Node names: dw, act, pool,
    fc1, fc2. pool_output: the pool is also a graph output (a second reader).
    head="gemm": the pool goes through Flatten + Gemm instead (a classifier, no SE)."""
    rng = np.random.default_rng(c * 1000 + s * 10 + h + k + stride + batch)
    groups = c if producer == "depthwise" else 1
    wd = rng.standard_normal((c, c // groups, k, k)).astype(np.float32) * (0.3 if groups > 1 else 0.3 / math.sqrt(c))
    inits = [numpy_helper.from_array(wd, "wd"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) * 0.1, "bd")]
    oh = (h + 2 * (k // 2) - k) // stride + 1
    nodes = [helper.make_node("Conv", ["x", "wd", "bd"], ["d"], name="dw", group=groups, pads=[k // 2] * 4,
                              strides=[stride] * 2)]
    nodes += _activation(act, "d", "a", "act")
    nodes.append(helper.make_node("GlobalAveragePool", ["a"], ["p"], name="pool"))
    outputs = [_f("y", [batch, c, oh, oh] if head == "se" else [batch, s])]
    if head == "gemm":
        inits += [numpy_helper.from_array(rng.standard_normal((s, c)).astype(np.float32) * 0.1, "wg"),
                  numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), "bg")]
        nodes += [helper.make_node("Flatten", ["p"], ["pf"], name="flatten"),
                  helper.make_node("Gemm", ["pf", "wg", "bg"], ["y"], name="fc", transB=1)]
    else:
        inits += [numpy_helper.from_array(rng.standard_normal((s, c, 1, 1)).astype(np.float32) * 0.1, "w1"),
                  numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), "b1"),
                  numpy_helper.from_array(rng.standard_normal((c, s, 1, 1)).astype(np.float32) * 0.1, "w2"),
                  numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b2")]
        nodes += [helper.make_node("Conv", ["p", "w1", "b1"], ["c1"], name="fc1"),
                  helper.make_node("Relu", ["c1"], ["r"], name="fc1_relu"),
                  helper.make_node("Conv", ["r", "w2", "b2"], ["c2"], name="fc2"),
                  helper.make_node("HardSigmoid", ["c2"], ["g"], name="gate", alpha=1 / 6),
                  helper.make_node("Mul", ["a", "g"], ["y"], name="scale")]
    if pool_output:
        outputs.append(_f("p", [batch, c, 1, 1]))
    return _model(nodes, [_f("x", [batch, c, h, h])], outputs, inits)


def _kernels(cm) -> list[str]:
    return re.findall(r"__kernel void (\w+)\(", cm.source)


def _check(cm, model, tol: float):
    rng = np.random.default_rng(7)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    ours = cm.run(feeds)
    assert len(ours) == len(ref)
    for (name, got), expected in zip(ours.items(), ref):
        assert got.shape == expected.shape, name
        err = scaled_error(got, expected)
        assert err <= tol, f"{name}: {err:.2e} from onnxruntime (tolerance {tol:.0e})"


def _gemv_items(ci: int, tiles: int = 1) -> int:
    """select-kernel-config's GPU default reduce_items for a conv with a 1x1 output (reading
    `tiles` pool tiles per input channel block: its work-items share (block, tile) pairs)."""
    pairs = -(-ci // 4) * tiles
    return min(256, 1 << (pairs.bit_length() - 1)) if pairs >= 8 else 1


def _overrides(tmp_path, entries: dict) -> str:
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps(entries))
    return str(path)


# ---------------------------------------------------------------------------------------
# fuse-pool-partials: squeeze-excite blocks

SE_CASES = {
    # name: (channels, squeeze, plane, kernel, stride, activation, batch)
    # 112x112, 4 channel blocks: 12544 pixels, 98 tiles of 128 (64 work-items each).
    "large_112": (16, 8, 112, 3, 1, "Relu", 1),
    # MobileNetV3's last SE block: a 7x7 plane (16 work-items, 2 tiles), 144 blocks.
    "small_7x7_576": (576, 144, 7, 5, 1, "HardSwish", 1),
    # 113x113 = 12769 pixels, 9 blocks: 57 tiles of 225 pixels (not a multiple of 64;
    # 57 * 225 > 12769: the last tile is short). SiLU fused into the depthwise kernel.
    "odd_113_silu": (36, 12, 113, 3, 1, "SiLU", 1),
    # 13x13 stride 2 -> 7x7 (2 tiles of 25 for 16 work-items); 18 channels: the last
    # block holds two padded channels.
    "stride2_13x13_c18": (18, 6, 13, 3, 2, "HardSwish", 1),
    # 17x17, 5x5 stride 2 -> 9x9 = 81 pixels: 2 tiles of 41 for 32 work-items; 45
    # channels (3 padded), 10 squeeze channels.
    "stride2_k5_c45_silu": (45, 10, 17, 5, 2, "SiLU", 1),
    # Batch 2, 11 channel blocks, 15x15 = 225 pixels: 4 tiles of 57 for 32 work-items.
    "batch2_c44": (44, 11, 15, 3, 1, "Relu", 2),
}


def _assert_pool_partials(cm, c: int, oh: int, batch: int) -> None:
    """One pooled depthwise kernel with the pass's work-group and tiles, its tiles read
    by the first FC, no pool kernel of its own."""
    names = _kernels(cm)
    c4, pixels = -(-c // 4), oh * oh
    tiles, items = pool_tiles(batch, c4, pixels), pool_items(pixels)
    pooled = [n for n in names if re.search(r"_pool\d+$", n)]
    assert len(pooled) == 1 and pooled[0].startswith("dwconv"), names
    assert f"_wg{items}_" in pooled[0] and pooled[0].endswith(f"_pool{tiles}"), (pooled, items, tiles)
    assert not any("avgpool" in n for n in names), names
    fc = [n for n in names if "_tiles" in n]
    assert len(fc) == 1 and fc[0].startswith("conv1x1_4c") and f"_tiles{tiles}" in fc[0], names
    items_fc = _gemv_items(c, tiles)
    assert (f"_wg{items_fc}_" in fc[0]) == (items_fc > 1), (fc, items_fc)
    ir = cm.stage_ir["pool-partials"]
    assert ir.count("graph.pool_partials ") == 1 and ir.count("graph.sum_partials ") == 1
    assert "graph.global_avg_pool" not in ir
    assert f"tiles = {tiles} : i64" in ir


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", SE_CASES)
def test_squeeze_excite_matches_onnxruntime(case, plan):
    c, s, h, k, stride, act, batch = SE_CASES[case]
    model = se_model(c, s, h, k=k, stride=stride, act=act, batch=batch)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    oh = (h + 2 * (k // 2) - k) // stride + 1
    if plan in GPU_PLANS:
        _assert_pool_partials(cm, c, oh, batch)
    else:
        assert not any(re.search(r"_pool\d+$", n) or "_tiles" in n for n in _kernels(cm)), _kernels(cm)
        assert not any("pool_partials" in ir for ir in cm.stage_ir.values())
    if act == "SiLU":  # sigmoid and mul in the depthwise kernel; the one mul kernel is the scale
        names = _kernels(cm)
        dw = [n for n in names if n.startswith("dwconv")]
        assert len(dw) == 1 and "_sigmoid_mul" in dw[0], names
        assert sum(n.startswith("mul") for n in names) == 1 and not any(n.startswith("sigmoid") for n in names), names
    _check(cm, model, _tolerance(plan))


def test_se_cases_cover_their_paths():
    """The cases exercise what their names say (no device needed): many tiles, tiles
    that do not divide the pixels, tiles that are no multiple of the work-group, padded
    channel blocks, odd block counts."""
    def geometry(case):
        c, _, h, k, stride, _, batch = SE_CASES[case]
        oh = (h + 2 * (k // 2) - k) // stride + 1
        tiles = pool_tiles(batch, -(-c // 4), oh * oh)
        return c, oh * oh, tiles, -(-(oh * oh) // tiles), pool_items(oh * oh)

    _, _, tiles, chunk, items = geometry("large_112")
    assert tiles >= 64 and chunk >= items
    for case in ("odd_113_silu", "stride2_13x13_c18", "batch2_c44"):
        _, pixels, tiles, chunk, items = geometry(case)
        assert pixels % tiles and chunk % items and tiles > 1, case
    assert geometry("stride2_13x13_c18")[0] % 4 and geometry("stride2_k5_c45_silu")[0] % 4
    assert (geometry("batch2_c44")[0] // 4) % 2 == 1


# tiles by hand: a test pass after fuse-pool-partials rewrites the attribute and the types.

@dataclass(frozen=True)
class RetilePoolPartials(ModulePass):
    """Sets every graph.pool_partials' `tiles` (and the partials types) to `tiles`."""

    name = "test-retile-pool-partials"
    tiles: int = 1

    def apply(self, ctx, op: ModuleOp) -> None:
        for fused in [o for o in op.walk() if isinstance(o, graph.FusedOp) and o.partials is not None]:
            pool = fused.pool_partials
            n, c4 = fused.partials.type.shape[:2]
            new_type = texture.TextureTensorType.make((n, c4, self.tiles, 1, 4), f32, "nchw4c", "global")
            pool.properties["tiles"] = IntegerAttr(self.tiles, 64)
            Rewriter.replace_value_with_new_type(pool.result, new_type)
            Rewriter.replace_value_with_new_type(fused.partials, new_type)


@pytest.mark.parametrize("tiles,plan", [
    (1, "nchw4c-buffers"),  # one work-group per channel block sums the whole plane
    (49, "nchw4c-textures"),  # one pixel per tile: 15 of 16 work-items idle
    (20, "nchw4c-buffers"),  # chunk 3: tiles 17-19 start past pixel 49 and add nothing
])
def test_hand_set_tiles(tiles, plan):
    model = se_model(36, 12, 7, k=3, act="HardSwish")

    def pipeline(p):
        assert "fuse-pool-partials{target=adreno-740}" in p
        return p.replace("fuse-pool-partials{target=adreno-740}",
                         f"fuse-pool-partials{{target=adreno-740}},test-retile-pool-partials{{tiles={tiles}}}")

    cm = adreno_mlir.compile(model, keep_ir=True, pipeline=pipeline, passes=[RetilePoolPartials], **PLANS[plan])
    names = _kernels(cm)
    assert any(n.endswith(f"_pool{tiles}") for n in names) and any(f"_tiles{tiles}" in n for n in names), names
    _check(cm, model, _tolerance(plan))


@pytest.mark.parametrize("items", [2, 256])
def test_pooled_depthwise_forced_work_group(items, tmp_path):
    """reduce_items of the pooled depthwise kernel from an overrides file: 2 (a long loop
    per work-item), 256 (more work-items than the 41 pixels of a tile)."""
    model = se_model(36, 12, 9, k=3, act="HardSwish")
    path = _overrides(tmp_path, {"loc:dw": {"reduce_items": items}})
    cm = adreno_mlir.compile(model, keep_ir=True, overrides=path, **PLANS["nchw4c-textures"])
    assert any(re.search(rf"^dwconv3x3_4c_wg{items}_hard_swish_pool\d+$", n) for n in _kernels(cm)), _kernels(cm)
    _check(cm, model, TOLERANCE)


@pytest.mark.parametrize("config,message", [
    ({"reduce_items": 1}, "reduce_items >= 2"),
    ({"x_block": 2}, "x_block = 1"),
])
def test_pooled_depthwise_config_errors(config, message, tmp_path):
    model = se_model(36, 12, 9, k=3, act="HardSwish")
    path = _overrides(tmp_path, {"loc:dw": config})
    with pytest.raises(CompileError, match="pool_partials") as err:
        adreno_mlir.compile(model, overrides=path, **PLANS["nchw4c-buffers"])
    assert message in str(err.value)


def test_split_k_fc_reads_tiles(tmp_path):
    """The first FC forced to two-launch split-K (reduce_items 1): the partial kernel
    reads the tiles."""
    model = se_model(64, 16, 14, k=3, act="HardSwish")
    path = _overrides(tmp_path, {"loc:fc1": {"split_k": 2, "reduce_items": 1}})
    cm = adreno_mlir.compile(model, overrides=path, **PLANS["nchw4c-buffers"])
    names = _kernels(cm)
    assert any(re.fullmatch(r"conv1x1_4c_split2_tiles\d+", n) for n in names), names
    _check(cm, model, TOLERANCE)


# Where the pass must not fire.

NOT_FUSED = {
    # name: (model, plans)
    "pool_also_graph_output": (lambda: se_model(36, 12, 9, pool_output=True), ["nchw4c-textures"]),
    "pool_of_regular_conv": (lambda: se_model(16, 8, 10, producer="conv"), ["nchw4c-textures"]),
    "depthwise_without_activation": (lambda: se_model(16, 8, 10, act=None), ["nchw4c-buffers"]),
    "pool_read_by_gemm": (lambda: se_model(16, 8, 10, head="gemm"), ["nchw4c-textures"]),
}


@pytest.mark.parametrize("case,plan", [(c, p) for c, (_, plans) in NOT_FUSED.items() for p in plans])
def test_not_fused(case, plan):
    model = NOT_FUSED[case][0]()
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    names = _kernels(cm)
    assert any(n.startswith("global_avgpool_4c") for n in names), names
    assert not any(re.search(r"_pool\d+$", n) or "_tiles" in n for n in names), names
    assert "graph.pool_partials" not in cm.stage_ir["pool-partials"]
    _check(cm, model, _tolerance(plan))


# ---------------------------------------------------------------------------------------
# reduce_items on NCHW4c groups-1 convolutions


def conv_model(ci: int, co: int, h: int, *, k: int = 1, act: str | None = "Relu"):
    """x (1, ci, h, h) -> conv `fc` (k x k, same padding, bias) -> optional activation."""
    rng = np.random.default_rng(ci + co + h + k)
    w = (rng.standard_normal((co, ci, k, k)) / math.sqrt(ci * k * k)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(rng.standard_normal(co).astype(np.float32), "b")]
    out = "c" if act else "y"
    nodes = [helper.make_node("Conv", ["x", "w", "b"], [out], name="fc", pads=[k // 2] * 4)]
    if act:
        nodes.append(helper.make_node(act, ["c"], ["y"], name="fc_act"))
    return _model(nodes, [_f("x", [1, ci, h, h])], [_f("y", [1, co, h, h])], inits)


@pytest.mark.parametrize("plan", ["nchw4c-buffers"])
def test_reduce_items_default_for_1x1_outputs(plan):
    """GPU default for a 1x1 output with >= 8 input blocks: reduce_items = the largest
    power of two <= the blocks (100 channels: 25 blocks -> 16); fewer blocks: none."""
    model = conv_model(100, 40, 1)
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    assert "reduce_items = 16 : i64" in cm.stage_ir["config"]
    assert "conv1x1_4c_wg16_relu" in _kernels(cm) and "__local" in cm.source
    _check(cm, model, TOLERANCE)
    small = adreno_mlir.compile(conv_model(28, 40, 1), keep_ir=True, **PLANS[plan])
    assert set(re.findall(r"reduce_items = (\d+)", small.stage_ir["config"])) <= {"1"}
    assert not any("_wg" in n for n in _kernels(small)), _kernels(small)


FORCED = {
    # name: (model, overrides of `fc`, plan)
    "ci48_items2": (lambda: conv_model(48, 24, 1), {"reduce_items": 2}, "nchw4c-buffers"),
    "ci48_items16_more_than_blocks": (lambda: conv_model(48, 24, 1), {"reduce_items": 16}, "nchw4c-textures"),
    "ci100_items64_more_than_blocks": (lambda: conv_model(100, 40, 1, act="Sigmoid"), {"reduce_items": 64},
                                       "nchw4c-buffers"),
    "ci100_3x3_spatial_xblock2_coblocks2": (lambda: conv_model(100, 24, 7, k=3),
                                            {"reduce_items": 16, "x_block": 2, "co_blocks": 2, "split_k": 1},
                                            "nchw4c-textures"),
    "ci48_items16_fp16": (lambda: conv_model(48, 24, 1), {"reduce_items": 16}, "nchw4c-fp16"),
}


@pytest.mark.parametrize("case", FORCED)
def test_forced_reduce_items_matches_onnxruntime(case, tmp_path):
    make, config, plan = FORCED[case]
    model = make()
    path = _overrides(tmp_path, {"loc:fc": config})
    cm = adreno_mlir.compile(model, keep_ir=True, overrides=path, **PLANS[plan])
    items = config["reduce_items"]
    assert f"reduce_items = {items} : i64" in cm.stage_ir["config"]
    convs = [n for n in _kernels(cm) if n.startswith("conv")]
    assert len(convs) == 1 and f"_wg{items}" in convs[0], convs
    if "co_blocks" in config:
        assert "_x2_" in convs[0], convs
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in cm.source
    _check(cm, model, _tolerance(plan))


def test_reduce_items_with_split_k_is_an_error(tmp_path):
    path = _overrides(tmp_path, {"loc:fc": {"reduce_items": 16, "split_k": 2}})
    with pytest.raises(CompileError, match="reduce_items") as err:
        adreno_mlir.compile(conv_model(48, 24, 1), overrides=path, **PLANS["nchw4c-buffers"])
    assert "split_k" in str(err.value)


def test_reduce_items_on_depthwise_is_an_error(tmp_path):
    """A depthwise conv that writes no pool partials (its pool is also a graph output)."""
    path = _overrides(tmp_path, {"loc:dw": {"reduce_items": 16}})
    with pytest.raises(CompileError, match="reduce_items = 16"):
        adreno_mlir.compile(se_model(16, 8, 10, pool_output=True), overrides=path, **PLANS["nchw4c-buffers"])


PARTIAL_OVERRIDES = {
    # name: (model, overrides of `fc`, plan, the kernel name's mark)
    # A 1x1 output of 12 input blocks: the default is reduce_items 8.
    "split_k_alone_on_gemv_conv": (lambda: conv_model(48, 24, 1), {"split_k": 2}, "nchw4c-buffers", "_split2"),
    # A 7x7 output of 25 input blocks: the default is split-K (split_k > 1).
    "reduce_items_alone_on_split_k_conv": (lambda: conv_model(100, 24, 7, k=3), {"reduce_items": 16},
                                           "nchw4c-textures", "_wg16"),
}


@pytest.mark.parametrize("case", PARTIAL_OVERRIDES)
def test_override_of_one_of_split_k_and_reduce_items(case, tmp_path):
    """An override that sets one of split_k and reduce_items on a conv whose default
    config has the other (an overrides file written before reduce_items existed sets
    split_k only): the override asks for that form of split and nothing else, so it
    should compile to it and match, not fail on a key the user never set."""
    make, config, plan, mark = PARTIAL_OVERRIDES[case]
    model = make()
    path = _overrides(tmp_path, {"loc:fc": config})
    cm = adreno_mlir.compile(model, overrides=path, **PLANS[plan])
    assert any(mark in n for n in _kernels(cm)), _kernels(cm)
    _check(cm, model, TOLERANCE)


# ---------------------------------------------------------------------------------------
# SiLU: x * sigmoid(x) in its producer's kernel


def silu_model(*, swapped: bool = False, sigmoid_output: bool = False):
    """conv 3x3 (16 -> 24 channels, 10x10) -> Sigmoid -> Mul(conv, sigmoid)
    (Mul(sigmoid, conv) when swapped); sigmoid_output: the sigmoid is also an output."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((24, 16, 3, 3)) / 12).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(rng.standard_normal(24).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1] * 4),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("Mul", ["s", "c"] if swapped else ["c", "s"], ["y"], name="mul")]
    outputs = [_f("y", [1, 24, 10, 10])] + ([_f("s", [1, 24, 10, 10])] if sigmoid_output else [])
    return _model(nodes, [_f("x", [1, 16, 10, 10])], outputs, inits)


def _compute_kernels(cm) -> list[str]:
    return [n for n in _kernels(cm) if not n.startswith(("pack_", "unpack_"))]


@pytest.mark.parametrize("plan", PLANS)
def test_silu_is_one_kernel(plan):
    model = silu_model()
    cm = adreno_mlir.compile(model, **PLANS[plan])
    names = _compute_kernels(cm)
    assert len(names) == 1 and names[0].startswith("conv3x3") and names[0].endswith("_sigmoid_mul"), names
    _check(cm, model, _tolerance(plan))


def test_silu_operands_swapped_is_one_kernel():
    model = silu_model(swapped=True)
    cm = adreno_mlir.compile(model, **PLANS["nchw4c-buffers"])
    names = _compute_kernels(cm)
    assert len(names) == 1 and names[0].endswith("_sigmoid_mul"), names
    _check(cm, model, TOLERANCE)


def test_silu_with_sigmoid_output_is_not_fused():
    """The sigmoid is read outside the x * sigmoid(x) pair (a graph output): the group
    cannot yield both, so conv + sigmoid and the mul stay apart; results still match."""
    model = silu_model(sigmoid_output=True)
    cm = adreno_mlir.compile(model, **PLANS["nchw4c-textures"])
    names = _compute_kernels(cm)
    assert not any(n.endswith("_sigmoid_mul") for n in names) and any(n.startswith("mul") for n in names), names
    _check(cm, model, TOLERANCE)


# ------------------------------------------------------------------ regressions


def _se_output_in_concat_model():
    """A squeeze-excite block whose depthwise output h is also a channel-concat input
    (plan-memory writes it into the concat's storage) and whose scaled output goes through
    a projection conv (fuse-channel-scale)."""
    rng = np.random.default_rng(3)
    r = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(a, n) for a, n in (
        (r(16, 1, 3, 3), "wd"), (r(16), "bd"), (r(8, 16, 1, 1), "w1"), (r(16, 8, 1, 1), "w2"),
        (r(8, 16, 1, 1), "wp"), (r(16, 16, 1, 1), "wo"), (r(8, 32, 1, 1), "wc"))]
    nodes = [helper.make_node("Conv", ["x", "wd", "bd"], ["d"], group=16, pads=[1] * 4, name="dw"),
             helper.make_node("Relu", ["d"], ["h"], name="relu"),
             helper.make_node("GlobalAveragePool", ["h"], ["p"], name="pool"),
             helper.make_node("Conv", ["p", "w1"], ["c1"], name="fc1"),
             helper.make_node("Relu", ["c1"], ["r"], name="fc1_relu"),
             helper.make_node("Conv", ["r", "w2"], ["c2"], name="fc2"),
             helper.make_node("Sigmoid", ["c2"], ["s"], name="gate"),
             helper.make_node("Mul", ["h", "s"], ["m"], name="scale"),
             helper.make_node("Conv", ["m", "wp"], ["y"], name="project"),
             helper.make_node("Conv", ["x", "wo"], ["o"], name="other"),
             helper.make_node("Concat", ["h", "o"], ["cat"], axis=1, name="cat"),
             helper.make_node("Conv", ["cat", "wc"], ["z"], name="after_cat")]
    return _model(nodes, [_f("x", [1, 16, 8, 8])], [_f("y", None), _f("z", None)], inits)


@pytest.mark.parametrize("plan", GPU_PLANS)
def test_pooled_depthwise_output_in_concat(plan):
    """Regression (review of fuse-pool-partials): plan-memory read a region's stored value
    as `results[0]` only when the op had one result, so a pooled depthwise region (two
    results) that writes a concat input failed with "only an NCHW4c tensor of batch 1 can
    share storage"."""
    model = _se_output_in_concat_model()
    cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
    names = _kernels(cm)
    assert any(n.startswith("dwconv") and "_pool" in n for n in names), names
    assert not any(n.startswith(("global_avgpool", "mul")) for n in names), names
    _check(cm, model, _tolerance(plan))
