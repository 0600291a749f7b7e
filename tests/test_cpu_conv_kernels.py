"""The CPU convolution schedules of the NCHW plan, against onnxruntime (fp32, 1e-4
relative to the largest output):

- `kernel = "pointwise"` (`PointwiseSpec`): 1x1 stride-1 convs as vectors of `vec`
  pixels of the flattened plane, `x_block` vectors x `co_block` channels per work-item.
  Planes that the pixel step does not divide (7x7, 14x14, 5x3) run their last pixels
  in a scalar loop; fused epilogues read extra inputs with one vload (contiguous over
  the plane), one load and a splat (per channel) or lane by lane (anything else).
- `kernel = "plane"` (`PlaneSpec`): stride-1 convs (depthwise, or groups 1 with
  `co_block` channels) whose output rows are as wide as the input's, as vectors over
  the flattened plane, columns masked at the row edges; vectors whose reads leave the
  plane run pixel by pixel. Odd widths, 5x5 windows, dilation, asymmetric padding.
- `kernel = "rows"` (`RowsSpec`): groups-1 or depthwise convs with row stride 1 or 2
  as vectors along output rows (stride 2 picks the even lanes of two loads); rows above
  or below the input are zeroed, vectors at the row ends run pixel by pixel.

Both are the defaults on CPU targets (the default device here is PoCL), and can be
forced on any target through a config override, as the autotuner does.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import CompileError

ort = pytest.importorskip("onnxruntime")

RTOL = 1e-4


def _model(nodes, inputs, output_shape, inits):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _init(rng, name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def _check(model, overrides=None, target=None, seed=1):
    rng = np.random.default_rng(seed)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    kw = {"target": target} if target else {}
    cm = adreno_mlir.compile(model, layout="nchw", textures=False, overrides=overrides, **kw)
    got = cm.run(feeds)["y"]
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    assert err < RTOL, f"max error {err:.3g} relative to the largest output"
    return cm


def pointwise_model(n, ci, co, h, w, epilogue):
    """conv (1x1, bias) then `epilogue`: relu, clip (ReLU6), add (a residual of the
    output's shape), scale (Mul by a per-channel [1,co,1,1] tensor), rows (Add of a
    [1,1,h,1] tensor: neither contiguous over the plane nor constant on it), or none."""
    rng = np.random.default_rng(0)
    inits = [_init(rng, "w", (co, ci, 1, 1)), _init(rng, "b", (co,))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[1, 1])]
    inputs = [("x", [n, ci, h, w])]
    if epilogue == "none":
        nodes[0].output[0] = "y"
    elif epilogue == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif epilogue == "clip":
        inits += [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    elif epilogue == "add":
        inputs.append(("r", [n, co, h, w]))
        nodes.append(helper.make_node("Add", ["c", "r"], ["y"]))
    elif epilogue == "scale":
        inits.append(_init(rng, "s", (1, co, 1, 1)))
        nodes.append(helper.make_node("Mul", ["c", "s"], ["y"]))
    elif epilogue == "rows":
        inits.append(_init(rng, "s", (1, 1, h, 1)))
        nodes.append(helper.make_node("Add", ["c", "s"], ["y"]))
    return _model(nodes, inputs, [n, co, h, w], inits)


@pytest.mark.parametrize("n, ci, co, h, w", [(1, 16, 24, 8, 8), (1, 24, 16, 7, 7), (2, 12, 8, 14, 14),
                                              (1, 5, 6, 5, 3)],
                         ids=["no-tail", "7x7-tail", "batch2-14x14", "odd-channels-tiny"])
@pytest.mark.parametrize("epilogue", ["relu", "clip", "add", "scale", "rows", "none"])
def test_pointwise_default_on_cpu(n, ci, co, h, w, epilogue):
    cm = _check(pointwise_model(n, ci, co, h, w, epilogue), target="pocl-cpu")
    assert "_pw8x2c" in cm.source, "the CPU default for a 1x1 conv is the pointwise kernel"


@pytest.mark.parametrize("vec, x_block, co_block", [(4, 1, 1), (4, 4, 2), (8, 1, 8), (8, 4, 4), (8, 2, 16)])
def test_pointwise_configs(vec, x_block, co_block):
    """Every vector width, pixel block and channel block, on a 14x14 plane (196 pixels:
    a tail for every step but 4) with a residual add, forced on a GPU target."""
    model = pointwise_model(1, 8, 16, 14, 14, "add")
    cfg = {"kernel": "pointwise", "vec": vec, "x_block": x_block, "co_block": co_block}
    cm = _check(model, overrides={"loc:conv": cfg}, target="adreno-740")
    assert f"_pw{vec}x{x_block}c{co_block}" in cm.source


def depthwise_model(n, c, h, w, k=3, pads=(1, 1, 1, 1), dilation=1, clip=True):
    rng = np.random.default_rng(0)
    inits = [_init(rng, "w", (c, 1, k, k)), _init(rng, "b", (c,))]
    out = "c" if clip else "y"
    nodes = [helper.make_node("Conv", ["x", "w", "b"], [out], name="dw", kernel_shape=[k, k], group=c,
                              pads=list(pads), dilations=[dilation, dilation])]
    if clip:
        inits += [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    oh = h + pads[0] + pads[2] - dilation * (k - 1)
    ow = w + pads[1] + pads[3] - dilation * (k - 1)
    return _model(nodes, [("x", [n, c, h, w])], [n, c, oh, ow], inits)


@pytest.mark.parametrize("shape, k, pads, dilation", [
    ((1, 8, 14, 14), 3, (1, 1, 1, 1), 1),
    ((1, 4, 7, 7), 3, (1, 1, 1, 1), 1),
    ((2, 3, 9, 5), 3, (1, 1, 1, 1), 1),
    ((1, 4, 12, 11), 5, (2, 2, 2, 2), 1),
    ((1, 4, 13, 10), 3, (2, 2, 2, 2), 2),
    ((1, 4, 10, 9), 3, (0, 1, 2, 1), 1),
    ((1, 4, 10, 9), 3, (0, 1, 0, 1), 1),
    ((1, 2, 3, 3), 3, (1, 1, 1, 1), 1),
], ids=["14x14", "7x7", "batch2-odd-width", "5x5", "dilation2", "pad-top0-bottom2", "no-vertical-pad",
        "smaller-than-a-vector"])
def test_plane_default_on_cpu(shape, k, pads, dilation):
    cm = _check(depthwise_model(*shape, k=k, pads=pads, dilation=dilation), target="pocl-cpu")
    assert "_pl8_" in cm.source, "the CPU default for a stride-1 depthwise conv is the plane kernel"


@pytest.mark.parametrize("vec", [4, 8])
def test_plane_forced_on_gpu_target(vec):
    cm = _check(depthwise_model(1, 8, 11, 13, clip=False), overrides={"loc:dw": {"kernel": "plane", "vec": vec}},
                target="adreno-740")
    assert f"_pl{vec}" in cm.source


def test_plane_nan_propagates_through_clip():
    """The Clip helpers are compare-and-select now: NaN still comes out as NaN (ONNX
    and onnxruntime), not as a clip bound."""
    model = depthwise_model(1, 4, 8, 8)
    x = np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)
    x[0, 1, 4, 4] = np.nan
    cm = adreno_mlir.compile(model, layout="nchw", textures=False, target="pocl-cpu")
    got = cm.run({"x": x})["y"]
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.isnan(ref).sum() == 9
    keep = ~np.isnan(ref)
    assert np.abs(got[keep] - ref[keep]).max() < RTOL * np.abs(ref[keep]).max()


@pytest.mark.parametrize("kernel, model, message", [
    ("pointwise", lambda: depthwise_model(1, 4, 8, 8), "needs a 1x1 convolution with stride 1"),
    ("plane", lambda: conv_model(1, 4, 4, 8, 8, 3, 2, (1, 1, 1, 1)),
     "needs groups 1 or a depthwise convolution, stride 1"),
])
def test_kernel_refused_where_it_cannot_run(kernel, model, message):
    m = model()
    node = m.graph.node[0].name
    with pytest.raises(CompileError, match=message):
        adreno_mlir.compile(m, layout="nchw", textures=False, overrides={f"loc:{node}": {"kernel": kernel}})


def conv_model(n, ci, co, h, w, k, stride, pads, group=1, dilation=1, epilogue="clip"):
    rng = np.random.default_rng(0)
    inits = [_init(rng, "w", (co, ci // group, k, k)), _init(rng, "b", (co,))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[k, k], group=group,
                              strides=[stride, stride], pads=list(pads), dilations=[dilation, dilation])]
    oh = (h + pads[0] + pads[2] - dilation * (k - 1) - 1) // stride + 1
    ow = (w + pads[1] + pads[3] - dilation * (k - 1) - 1) // stride + 1
    inputs = [("x", [n, ci, h, w])]
    if epilogue == "clip":
        inits += [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    else:  # a residual of the output's shape
        inputs.append(("r", [n, co, oh, ow]))
        nodes.append(helper.make_node("Add", ["c", "r"], ["y"]))
    return _model(nodes, inputs, [n, co, oh, ow], inits)


@pytest.mark.parametrize("shape, k, stride, pads, group, dilation", [
    ((1, 8, 28, 28), 3, 2, (1, 1, 1, 1), 8, 1),
    ((1, 6, 15, 17), 3, 2, (1, 1, 1, 1), 6, 1),
    ((2, 4, 14, 14), 5, 2, (2, 2, 2, 2), 4, 1),
    ((1, 4, 7, 7), 3, 2, (0, 0, 1, 1), 4, 1),
    ((1, 4, 13, 10), 3, 1, (2, 2, 2, 2), 4, 2),
], ids=["dw-s2-28", "dw-s2-odd", "dw-5x5-s2-batch2", "dw-s2-asymmetric-pads", "dw-s1-dilated"])
def test_rows_depthwise(shape, k, stride, pads, group, dilation):
    """Depthwise convs as rows (the tuner's choice; strided depthwise convs keep vec4 by
    default, which was faster on PoCL)."""
    n, c, h, w = shape
    model = conv_model(n, c, c, h, w, k, stride, pads, group, dilation)
    cm = _check(model, overrides={"loc:conv": {"kernel": "rows", "co_block": 1, "vec": 8}}, target="pocl-cpu")
    assert "_rw8c1" in cm.source


@pytest.mark.parametrize("n, ci, co, h, w, k, stride, pads, kernel", [
    (1, 3, 16, 32, 32, 3, 2, (1, 1, 1, 1), "_rw8c16"),
    (1, 8, 8, 14, 14, 3, 1, (1, 1, 1, 1), "_pl8c8"),
    (1, 6, 12, 7, 7, 3, 1, (1, 1, 1, 1), "_pl8c4"),
    (1, 4, 8, 11, 12, 7, 2, (3, 3, 3, 3), "_rw8c8"),
    (1, 8, 32, 9, 9, 3, 1, (1, 1, 1, 1), "_pl8c16"),
], ids=["stem-s2", "3x3-14x14", "3x3-7x7-12ch", "7x7-s2", "3x3-32ch"])
def test_groups1_defaults_on_cpu(n, ci, co, h, w, k, stride, pads, kernel):
    """groups-1 convs that are not 1x1 on a CPU target: plane where rows keep their width
    (stride 1, same padding), else rows."""
    cm = _check(conv_model(n, ci, co, h, w, k, stride, pads), target="pocl-cpu")
    assert kernel in cm.source


@pytest.mark.parametrize("n, ci, co, h, w, k, pads, dilation, vec, co_block, epilogue", [
    (1, 8, 16, 9, 9, 3, (1, 1, 1, 1), 1, 8, 16, "add"),
    (2, 5, 6, 12, 10, 3, (2, 2, 2, 2), 2, 4, 2, "clip"),
    (1, 4, 8, 6, 6, 5, (2, 2, 2, 2), 1, 8, 1, "add"),
    (1, 4, 4, 10, 9, 3, (0, 1, 0, 1), 1, 4, 4, "clip"),
], ids=["9x9-residual", "dilated-batch2", "5x5-narrow", "no-vertical-pad"])
def test_plane_groups1_configs(n, ci, co, h, w, k, pads, dilation, vec, co_block, epilogue):
    model = conv_model(n, ci, co, h, w, k, 1, pads, 1, dilation, epilogue)
    cm = _check(model, overrides={"loc:conv": {"kernel": "plane", "vec": vec, "co_block": co_block}},
                target="adreno-740")
    assert f"_pl{vec}c{co_block}" in cm.source


@pytest.mark.parametrize("n, ci, co, h, w, k, stride, pads, dilation, vec, co_block, epilogue", [
    (1, 3, 16, 32, 32, 3, 2, (1, 1, 1, 1), 1, 8, 4, "clip"),
    (1, 8, 8, 19, 21, 3, 1, (1, 1, 1, 1), 1, 8, 8, "add"),
    (2, 5, 6, 12, 10, 3, 1, (2, 2, 2, 2), 2, 4, 2, "clip"),
    (1, 4, 4, 9, 30, 1, 2, (0, 0, 0, 0), 1, 8, 1, "add"),
    (1, 4, 8, 6, 6, 7, 1, (3, 3, 3, 3), 1, 4, 4, "clip"),
], ids=["stem-s2", "3x3-residual", "dilated-batch2", "1x1-s2", "7x7-narrow"])
def test_rows_configs(n, ci, co, h, w, k, stride, pads, dilation, vec, co_block, epilogue):
    """groups-1 convs forced to rows on a GPU target: stride 1 and 2, dilation, odd
    sizes, windows wider than the row."""
    model = conv_model(n, ci, co, h, w, k, stride, pads, 1, dilation, epilogue)
    cm = _check(model, overrides={"loc:conv": {"kernel": "rows", "vec": vec, "co_block": co_block}},
                target="adreno-740")
    assert f"_rw{vec}c{co_block}" in cm.source


def test_rows_refuses_stride_three():
    with pytest.raises(CompileError, match="needs groups 1 or a depthwise convolution, a row stride of 1 or 2"):
        adreno_mlir.compile(conv_model(1, 4, 4, 12, 12, 3, 3, (1, 1, 1, 1)), layout="nchw", textures=False,
                            overrides={"loc:conv": {"kernel": "rows"}})


def test_empty_work_group_overrides_a_default_local_size():
    """The pointwise default on CPUs carries a local size (4 x 16 blocks); an override of
    `work_group: []` (what the autotuner writes for "the driver's choice") removes it."""
    model = pointwise_model(1, 8, 32, 8, 8, "relu")
    default = _check(model, target="pocl-cpu")
    assert [launch.local_size for launch in default.executable.launches] == [(4, 8)]  # 4 x 16, fitted to 4 x 8
    driver = _check(model, overrides={"loc:conv": {"work_group": []}}, target="pocl-cpu")
    assert [launch.local_size for launch in driver.executable.launches] == [None]


def _config_kernels(model, target):
    """(kernel op, head) of every kernel in the config stage of `model` compiled for `target`."""
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context
    from adreno_mlir.passes.select_kernel_config import head_of, is_kernel

    cm = adreno_mlir.compile(model, layout="nchw", textures=False, target=target, keep_ir=True)
    module = Parser(make_context(), cm.stage_ir["config"]).parse_module()
    return [(op, head_of(op)) for op in module.walk() if is_kernel(op)]


def test_tuning_space_driver_choice_against_each_kernels_defaults():
    """The tuner's "driver" local size is `work_group = []` for a kernel whose defaults
    carry a local size (plane on CPUs), even when the default config is another kernel
    without one (scalar here); for the default kernel itself it is no key at all, so the
    default is one candidate, not two."""
    from adreno_mlir.passes.select_kernel_config import set_config
    from adreno_mlir.tuning.space import DRIVER, space_of

    kop, _ = next((k, h) for k, h in _config_kernels(conv_model(1, 8, 8, 9, 9, 3, 1, (1, 1, 1, 1)), "pocl-cpu")
                  if h.name == "graph.conv2d")
    set_config(kop, {"kernel": "scalar", "co_block": 8})
    space = space_of(kop, gpu=False)
    assert space.normalize({"kernel": "plane", "work_group": DRIVER})["work_group"] == ()
    assert "work_group" not in space.normalize({"kernel": "scalar", "work_group": DRIVER})
    candidates = space.candidates()
    assert len({tuple(sorted(c.items())) for c in candidates}) == len(candidates)
    assert all(c.get("co_block", 4) in (4, 8) for c in candidates if c["kernel"] == "vec4")


def test_roofline_counts_the_vector_kernels_work_items():
    """analyze.work_items: the pointwise, plane and rows kernels' launch grids."""
    from adreno_mlir.analyze import work_items

    model = pointwise_model(1, 8, 16, 14, 14, "none")
    kop, _ = next((k, h) for k, h in _config_kernels(model, "adreno-740") if h.name == "graph.conv2d")
    assert work_items(kop, {"kernel": "pointwise", "vec": 8, "x_block": 4, "co_block": 16}) == 7  # ceil(196/32) x 1
    assert work_items(kop, {"kernel": "plane", "vec": 8, "co_block": 4}) == 25 * 4
    assert work_items(kop, {"kernel": "rows", "vec": 8, "co_block": 8}) == 2 * 14 * 2


def test_rows_depthwise_ignores_co_block():
    """Depthwise plane and rows kernels take one channel per work-item whatever co_block
    says (both kernels alike)."""
    model = conv_model(1, 8, 8, 12, 12, 3, 2, (1, 1, 1, 1), group=8)
    cm = _check(model, overrides={"loc:conv": {"kernel": "rows", "co_block": 4}}, target="pocl-cpu")
    assert "_rw8c1" in cm.source
