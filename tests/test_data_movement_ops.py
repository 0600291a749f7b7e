"""Data-movement ops: Pad (graph.pad), Split (slices), Expand and Tile (graph.expand),
DepthToSpace / SpaceToDepth (reshape + transpose + reshape), Slice with negative
steps and bounds, Concat on every axis.

Each model is x -> Relu -> <op> -> Neg: the element-wise ops around the op are NCHW4c
kernels on the packed plans, so the op (which stays on plain tensors) is reached through
texture.unpack and left through texture.pack there. Results must equal onnxruntime's
exactly (every op here copies floats; Relu and Neg are exact) on the NCHW plan, the
NCHW4c buffer plan and the texture plan."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import adreno_mlir
from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError
from adreno_mlir.frontend import import_onnx
from tests.test_erf import _const

RNG = np.random.default_rng(11)
SHAPE = [2, 6, 5, 7]  # 6 channels: NCHW4c pads them to 8

PLANS = [
    pytest.param({"layout": "nchw", "textures": False}, id="nchw"),
    pytest.param({"layout": "nchw4c", "textures": False}, id="nchw4c"),
    pytest.param({"textures": True}, id="textures"),
]


def _ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def _model(op_nodes, inits=(), outputs=("y",), opset=18, shape=SHAPE):
    """x -> Relu -> (op_nodes reading "r", writing "o", "o1", ...) -> Neg -> outputs."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), *op_nodes]
    nodes += [helper.make_node("Neg", [f"o{o[1:]}"], [o]) for o in outputs]
    g = helper.make_graph(
        nodes, "data_movement", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _x(shape=SHAPE):
    return RNG.standard_normal(shape).astype(np.float32)


def _ort(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"x": x})))


def _check(model, plan, ref=None, shape=SHAPE):
    x = _x(shape)
    want = _ort(model, x) if ref is None else ref(model, x)
    cm = adreno_mlir.compile(model, target="pocl-cpu", **plan)
    if plan.get("layout") != "nchw":  # the relu is an NCHW4c kernel, its result unpacked for the op
        assert "unpack_nchw4c" in cm.source
    got = cm.run({"x": x})
    assert set(got) == set(want)
    for name, w in want.items():
        assert got[name].shape == w.shape, (name, got[name].shape, w.shape)
        np.testing.assert_array_equal(got[name], w, err_msg=f"{name} on {plan}")
    return cm


def _reference(model, x):
    """ONNX's reference evaluator (for ops or opsets onnxruntime lacks)."""
    outs = ReferenceEvaluator(model).run(None, {"x": x})
    return dict(zip([o.name for o in model.graph.output], outs))


def _graph_ops(model) -> list[str]:
    module = import_onnx(model)
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


# --------------------------------------------------------------------------- Pad


def _pad(mode, pads, value=None, axes=None, opset=21):
    ins = ["r", "pads"]
    inits = [_ints("pads", pads)]
    if value is not None or axes is not None:
        ins.append("value" if value is not None else "")
        if value is not None:
            inits.append(_const("value", value))
    if axes is not None:
        ins.append("axes")
        inits.append(_ints("axes", axes))
    return _model([helper.make_node("Pad", ins, ["o"], mode=mode)], inits, opset=opset)


PAD_CASES = {
    "constant_hw": ("constant", [0, 0, 1, 2, 0, 0, 3, 1], 1.5, None),
    "constant_axes": ("constant", [2, 1, 0, 3], -0.25, [2, 3]),
    "constant_negative_axes": ("constant", [1, 0, 2, 1], None, [-3, -1]),
    "constant_channels_batch": ("constant", [1, 3, 0, 0, 0, 2, 0, 0], 2.0, None),
    "constant_crop": ("constant", [0, -1, 2, -3, -1, 1, -1, 2], 0.5, None),
    "constant_crop_to_nothing": ("constant", [0, 0, -5, 0, 0, 0, 2, 0], 3.0, None),
    "reflect": ("reflect", [1, 2, 4, 6, 1, 5, 4, 6], None, None),
    "reflect_crop": ("reflect", [0, -2, 2, -3, 0, 1, -1, 3], None, None),
    "edge": ("edge", [1, 3, 7, 2, 2, 0, 6, 9], None, None),
    "edge_crop": ("edge", [0, -5, -4, 3, 0, 4, 2, -6], None, None),
    "wrap": ("wrap", [0, 2, 3, 9, 1, 7, 11, 2], None, None),
    "wrap_crop": ("wrap", [0, -2, 3, -3, 0, 2, -1, 4], None, None),
}


@pytest.mark.parametrize("case", PAD_CASES)
@pytest.mark.parametrize("plan", PLANS)
def test_pad_matches_onnxruntime(case, plan):
    mode, pads, value, axes = PAD_CASES[case]
    cm = _check(_pad(mode, pads, value, axes), plan)
    assert f"pad_{mode}" in cm.source


@pytest.mark.parametrize("plan", PLANS)
def test_pad_opset10_attributes(plan):
    """Pad-2 (until opset 10): pads, mode and value are attributes."""
    model = _model([helper.make_node("Pad", ["r"], ["o"], mode="constant", pads=[0, 1, 2, 0, 1, 0, 1, 3],
                                     value=-1.0)], opset=10)
    _check(model, plan)


def test_zero_pads_are_the_identity():
    """All-zero pads (swin_t has 15 such nodes) import to nothing, in every mode."""
    for mode in ("constant", "reflect", "edge"):
        assert "graph.pad" not in _graph_ops(_pad(mode, [0] * 8))
    cm = adreno_mlir.compile(_pad("constant", [0] * 8), target="pocl-cpu", layout="nchw")
    assert "pad_" not in cm.source
    x = _x()
    np.testing.assert_array_equal(cm.run({"x": x})["y"], -np.maximum(x, 0))


@pytest.mark.parametrize("mode, pads, message", [
    ("reflect", [0, 0, 5, 0, 0, 0, 0, 0], r"reflect pads \[5\] on axis 2 must be smaller than the 5"),
    ("edge", [0, 0, -5, 0, 0, 0, 2, 0], r"crop away all of axis 2 .* mode 'edge'"),
    ("mirror", [0, 0, 1, 0, 0, 0, 0, 0], r"mode 'mirror' is not supported"),
])
def test_invalid_pads_are_rejected(mode, pads, message):
    with pytest.raises(CompileError, match=message):
        import_onnx(_pad(mode, pads))


# --------------------------------------------------------------------------- Split


def _split_model(opset, axis, n_out, split=None, num_outputs=None, attr=False):
    outs = ["y", *[f"y{i}" for i in range(1, n_out)]]
    kwargs = {"axis": axis}
    ins, inits = ["r"], []
    if split is not None and attr:
        kwargs["split"] = split
    elif split is not None:
        ins.append("split")
        inits.append(_ints("split", split))
    if num_outputs is not None:
        kwargs["num_outputs"] = num_outputs
    node = helper.make_node("Split", ins, [f"o{o[1:]}" for o in outs], **kwargs)
    return _model([node], inits, outputs=outs, opset=opset)


SPLIT_CASES = {
    "channels_input": (13, 1, 3, [1, 3, 2], None, False),
    "batch_equal": (13, 0, 2, None, None, False),
    "width_num_outputs_uneven": (18, 3, 3, None, 3, False),
    "height_negative_axis_attribute": (11, -2, 2, [2, 3], None, True),
    "channels_equal_opset18": (18, 1, 3, None, 3, False),
}


@pytest.mark.parametrize("case", SPLIT_CASES)
@pytest.mark.parametrize("plan", PLANS)
def test_split_matches_onnxruntime(case, plan):
    _check(_split_model(*SPLIT_CASES[case]), plan)


def test_split_is_slices():
    ops = _graph_ops(_split_model(13, 1, 3, [1, 3, 2]))
    assert ops.count("graph.slice") == 3 and "graph.concat" not in ops


# --------------------------------------------------------------------------- Expand and Tile


EXPAND_CASES = {
    "batch_and_height": ([1, 6, 1, 7], [2, 6, 4, 7]),
    "lower_rank_shape": ([2, 6, 5, 1], [5, 4]),
    "higher_rank": ([1, 6, 5, 1], [3, 1, 6, 5, 4]),
    "ones_in_shape": ([2, 1, 5, 7], [1, 3, 1, 1]),
}


def _expand_model(in_shape, shape):
    return _model([helper.make_node("Expand", ["r", "shape"], ["o"])], [_ints("shape", shape)], opset=13,
                  shape=in_shape)


@pytest.mark.parametrize("case", EXPAND_CASES)
@pytest.mark.parametrize("plan", PLANS)
def test_expand_matches_onnxruntime(case, plan):
    in_shape, shape = EXPAND_CASES[case]
    cm = _check(_expand_model(in_shape, shape), plan, shape=in_shape)
    assert "expand" in cm.source


def test_expand_to_own_shape_copies_nothing():
    assert "graph.expand" not in _graph_ops(_expand_model(SHAPE, SHAPE))
    assert "graph.expand" not in _graph_ops(_expand_model(SHAPE, [1, 1, 1]))
    # only leading 1s added: a (free) reshape
    assert _graph_ops(_expand_model(SHAPE, [1, *SHAPE])).count("graph.expand") == 0


TILE_CASES = {
    "spatial": [1, 1, 2, 3],
    "batch_channels": [2, 3, 1, 1],
    "all_axes": [2, 2, 2, 2],
    "none": [1, 1, 1, 1],
}


@pytest.mark.parametrize("case", TILE_CASES)
@pytest.mark.parametrize("plan", PLANS)
def test_tile_matches_onnxruntime(case, plan):
    model = _model([helper.make_node("Tile", ["r", "reps"], ["o"])], [_ints("reps", TILE_CASES[case])], opset=13)
    _check(model, plan)


def test_tile_is_one_broadcast_copy():
    model = _model([helper.make_node("Tile", ["r", "reps"], ["o"])], [_ints("reps", [2, 1, 3, 2])], opset=13)
    ops = _graph_ops(model)
    assert ops.count("graph.expand") == 1 and "graph.transpose" not in ops


# --------------------------------------------------------------------------- DepthToSpace / SpaceToDepth


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("plan", PLANS)
def test_depth_to_space_matches_onnxruntime(mode, plan):
    shape = [2, 8, 3, 5]
    model = _model([helper.make_node("DepthToSpace", ["r"], ["o"], blocksize=2, mode=mode)], opset=13, shape=shape)
    _check(model, plan, shape=shape)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("plan", PLANS)
def test_space_to_depth(mode, plan):
    """SpaceToDepth's mode is new in opset 28; ONNX's reference evaluator checks it."""
    shape = [2, 3, 4, 6]
    model = _model([helper.make_node("SpaceToDepth", ["r"], ["o"], blocksize=2, mode=mode)], opset=28,
                   shape=shape)
    _check(model, plan, ref=_reference, shape=shape)


@pytest.mark.parametrize("plan", PLANS)
def test_space_to_depth_opset13_matches_onnxruntime(plan):
    shape = [1, 6, 6, 9]
    model = _model([helper.make_node("SpaceToDepth", ["r"], ["o"], blocksize=3)], opset=13, shape=shape)
    _check(model, plan, shape=shape)


def test_depth_to_space_is_reshape_transpose_reshape():
    model = _model([helper.make_node("DepthToSpace", ["r"], ["o"], blocksize=2)], opset=13, shape=[1, 8, 3, 5])
    ops = _graph_ops(model)
    assert ops.count("graph.transpose") == 1 and ops.count("graph.reshape") == 2


# --------------------------------------------------------------------------- Slice and Concat


SLICE_CASES = {
    "negative_steps_every_axis": ([-1, -1, -1, -1], [-100, -100, -100, -100], [0, 1, 2, 3], [-1, -2, -1, -3]),
    "negative_bounds": ([-4, -4, 1], [-1, 5, -1], [1, 2, 3], [1, 1, 1]),
    "reverse_channels": ([4, 100], [0, -100], [1, -1], [-1, -2]),
    "steps_out_of_range_ends": ([0, 1, -2], [1000, 6, 1000], [-4, 1, 2], [2, 2, 1]),
    # ONNX clamps starts to [0, dim - 1] for negative steps: element 0 (numpy's slice is empty)
    "negative_step_start_before_axis": ([-100, -100], [-200, -200], [2, 3], [-1, -2]),
}


@pytest.mark.parametrize("case", SLICE_CASES)
@pytest.mark.parametrize("plan", PLANS)
def test_slice_matches_onnxruntime(case, plan):
    starts, ends, axes, steps = SLICE_CASES[case]
    inits = [_ints("starts", starts), _ints("ends", ends), _ints("axes", axes), _ints("steps", steps)]
    model = _model([helper.make_node("Slice", ["r", "starts", "ends", "axes", "steps"], ["o"])], inits, opset=13)
    _check(model, plan)


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
@pytest.mark.parametrize("plan", PLANS)
def test_concat_any_axis_matches_onnxruntime(axis, plan):
    """Concat of the relu, its negation and a slice of it (three producers) on one axis."""
    ax = axis % 4
    nodes = [
        helper.make_node("Neg", ["r"], ["n"]),
        helper.make_node("Slice", ["r", "s0", "s1", "sa"], ["s"]),
        helper.make_node("Concat", ["r", "n", "s"], ["o"], axis=axis),
    ]
    inits = [_ints("s0", [1]), _ints("s1", [SHAPE[ax]]), _ints("sa", [ax])]
    _check(_model(nodes, inits, opset=13), plan)


@pytest.mark.parametrize("plan", PLANS)
def test_channel_concat_of_multiple_of_4_channels(plan):
    """8 + 4 channels: an NCHW4c concat on the packed plans."""
    shape = [1, 8, 3, 4]
    nodes = [
        helper.make_node("Slice", ["r", "s0", "s1", "sa"], ["s"]),
        helper.make_node("Concat", ["r", "s"], ["o"], axis=1),
    ]
    inits = [_ints("s0", [2]), _ints("s1", [6]), _ints("sa", [1])]
    _check(_model(nodes, inits, opset=13, shape=shape), plan, shape=shape)


def test_graph_pad_expand_shapes():
    """The verifiers' shape rules, through the op classes."""
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.utils.exceptions import VerifyException

    def value(shape):
        return graph.ConstantOp(TensorType(f32, shape), ref="w").result

    op = graph.PadOp(operands=[value([1, 2, 5, 5])], result_types=[TensorType(f32, [1, 2, 4, 8])],
                     properties={"pads": graph.i64_array([0, 0, -1, 1, 0, 0, 0, 2])})
    op.verify_shapes()
    assert op.axis_geometry() == [(0, 1, 0), (0, 2, 0), (1, 4, 0), (0, 5, 1)]
    bad = graph.ExpandOp(operands=[value([2, 3])], result_types=[TensorType(f32, [4, 3])])
    with pytest.raises(VerifyException, match=r"cannot broadcast \[2, 3\] to \[4, 3\]"):
        bad.verify_shapes()
