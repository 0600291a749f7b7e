"""Einsum (written out at import in transposes, reshapes, matmuls and multiplies), ConvTranspose
(graph.conv_transpose2d, a gather-form kernel on plain NCHW tensors) and Gemm with every
transA/transB and broadcasting C, against onnxruntime on the three plans: plain NCHW buffers,
NCHW4c buffers, and images. The ops themselves stay on plain tensors on every plan; the NCHW4c
plans check the packs and unpacks around them.

ONNX's own Einsum node tests are all float64 or bfloat16 (tests/test_onnx_backend.py lists them
as rejected); here the same models and data run in float32."""

from __future__ import annotations

import re
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.loader import load_model_tests

import adreno_mlir
from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError
from adreno_mlir.frontend.einsum import EinsumError, parse_equation
from adreno_mlir.frontend.onnx_importer import FrontendError, import_onnx

RNG = np.random.default_rng(11)
TOL = 1e-5
"""Largest error relative to max |reference|."""

PLANS = [
    pytest.param(dict(layout="nchw", textures=False), id="nchw"),
    pytest.param(dict(layout="nchw4c", textures=False), id="nchw4c"),
    pytest.param(dict(textures=True), id="textures"),
]


def _model(nodes, inputs: dict[str, tuple[int, ...]], outputs: list[str], inits=(), opset: int = 17):
    """A model whose output types come from ONNX's shape inference."""
    g = helper.make_graph(
        nodes, "test", [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    types = {v.name: v for v in inferred.graph.value_info}
    for o in m.graph.output:
        if o.name in types:
            o.CopyFrom(types[o.name])
    return m


def _const(name: str, shape) -> onnx.TensorProto:
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def _feeds(model) -> dict[str, np.ndarray]:
    inits = {i.name for i in model.graph.initializer}
    return {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input if i.name not in inits}


def _check(model, plan, feeds=None) -> adreno_mlir.CompiledModel:
    """Compile on `plan`, run, and compare every output with onnxruntime."""
    feeds = _feeds(model) if feeds is None else feeds
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    refs = sess.run(None, feeds)
    cm = adreno_mlir.compile(model, target="pocl-cpu", **plan)
    got = cm.run(feeds)
    for out, ref in zip(model.graph.output, refs):
        y = np.asarray(got[out.name])
        assert y.shape == ref.shape, (out.name, y.shape, ref.shape)
        err = np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30)
        assert err <= TOL, (out.name, plan, err)
    return cm


# --------------------------------------------------------------------------- Einsum

EINSUMS = {
    "attention_scores": ("bhid,bhjd->bhij", [(1, 4, 10, 16), (1, 4, 10, 16)]),
    "attention_context": ("bhij,bhjd->bhid", [(1, 4, 10, 10), (1, 4, 10, 16)]),
    "attention_bshd": ("bqhd,bkhd->bhqk", [(1, 10, 4, 16), (1, 12, 4, 16)]),
    "matmul": ("ij,jk->ik", [(5, 7), (7, 3)]),
    "batched_matmul": ("bij,bjk->bik", [(3, 5, 7), (3, 7, 4)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "inner_product": ("i,i->", [(6,), (6,)]),
    "row_sum": ("ij->i", [(3, 4)]),
    "total_sum": ("ij->", [(3, 4)]),
    "outer_product": ("i,j->ij", [(3,), (4,)]),
    "hadamard": ("ij,ij->ij", [(3, 4), (3, 4)]),
    "hadamard_sum_row": ("ij,ij->i", [(3, 4), (3, 4)]),
    "batch_outer": ("bi,bj->bij", [(2, 3), (2, 4)]),
    "ellipsis_broadcast": ("...ij,...jk->...ik", [(2, 1, 3, 5), (1, 4, 5, 2)]),
    "ellipsis_transpose": ("...ij->...ji", [(2, 3, 4)]),
    "implicit_matmul": ("ij,jk", [(3, 4), (4, 5)]),
    "three_operands": ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    "shared_by_three": ("bi,bi,bi->b", [(2, 5), (2, 5), (2, 5)]),
    "diagonal": ("ii->i", [(4, 4)]),
    "batch_trace": ("bii->b", [(2, 3, 3)]),
    "diagonal_times": ("ii,i->i", [(4, 4), (4,)]),
    "two_diagonals": ("iijj->ij", [(3, 3, 4, 4)]),
    "trace_of_product": ("ij,ji->", [(3, 4), (4, 3)]),
    "chain_with_batch": ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    "private_sum_then_product": ("ij,jk->k", [(3, 4), (4, 5)]),
    "whitespace": (" bij , bjk -> bik ", [(2, 3, 4), (2, 4, 5)]),
}


def _einsum_model(eq: str, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=eq, name="/attn/Einsum")
    return _model([node], dict(zip(names, shapes)), ["y"], opset=13)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", sorted(EINSUMS))
def test_einsum_matches_onnxruntime(case, plan):
    eq, shapes = EINSUMS[case]
    _check(_einsum_model(eq, shapes), plan)


@pytest.mark.parametrize("plan", PLANS)
def test_einsum_with_constant_and_packed_operands(plan):
    """A linear layer as einsum with constant weights on a convolution's output: on the
    NCHW4c plans the conv's packed result is unpacked for the einsum's matmul."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Einsum", ["c", "p"], ["y"], equation="nchw,dc->ndhw"),
        helper.make_node("Einsum", ["y", "q"], ["z"], equation="bchw,we->bche"),
    ]
    inits = [_const("w", (8, 3, 3, 3)), _const("p", (5, 8)), _const("q", (6, 4))]
    _check(_model(nodes, {"x": (1, 3, 6, 6)}, ["z"], inits, opset=13), plan)


def test_einsum_attention_is_transpose_and_one_matmul():
    """q @ k^T: k is transposed, both are reshaped (free) to 3-D, one batched matmul."""
    module = import_onnx(_einsum_model("bhid,bhjd->bhij", [(1, 4, 10, 16), (1, 4, 10, 16)]))
    ops = [op.name for op in module.walk() if op.name.startswith("graph.")]
    assert ops == ["graph.reshape", "graph.transpose", "graph.reshape", "graph.matmul", "graph.reshape"], ops
    module = import_onnx(_einsum_model("bhij,bhjd->bhid", [(1, 4, 10, 10), (1, 4, 10, 16)]))
    assert [op.name for op in module.walk() if op.name in ("graph.transpose", "graph.matmul")] == ["graph.matmul"]


def test_einsum_building_blocks():
    """Outer products are a broadcasting multiply, sums one reduce_sum, diagonals a gather."""
    def ops(eq, shapes):
        return [op.name for op in import_onnx(_einsum_model(eq, shapes)).walk() if op.name.startswith("graph.")
                and op.name != "graph.reshape"]

    assert ops("i,j->ij", [(3,), (4,)]) == ["graph.mul"]
    assert ops("ij->i", [(3, 4)]) == ["graph.reduce_sum"]
    assert ops("ij,jk->k", [(3, 4), (4, 5)]) == ["graph.reduce_sum", "graph.matmul"]
    assert ops("...ii->...i", [(3, 5, 5)]) == ["graph.gather"]


def test_einsum_implicit_output_in_ascii_order():
    """Implicit output labels sort as numpy sorts them, upper case first: 'bA' is 'bA->Ab'
    (compared with numpy: onnxruntime 1.32 refuses this equation)."""
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    cm = adreno_mlir.compile(_einsum_model("bA", [(2, 3)]), target="pocl-cpu", layout="nchw", textures=False)
    np.testing.assert_array_equal(cm.run({"x0": x})["y"], np.einsum("bA", x))


def test_parse_equation():
    assert parse_equation("ij,jk->ik", [2, 2]) == ([["i", "j"], ["j", "k"]], ["i", "k"])
    # implicit output: labels used once, in ASCII order (upper case first)
    assert parse_equation("bA", [2]) == ([["b", "A"]], ["A", "b"])
    assert parse_equation("ij,jk", [2, 2])[1] == ["i", "k"]
    # '...' is right-aligned across operands; implicit outputs put it first
    labels, out = parse_equation("...i,j...", [3, 2])
    assert labels == [["...0", "...1", "i"], ["j", "...1"]]
    assert out == ["...0", "...1", "i", "j"]
    assert parse_equation("->", [0]) == ([[]], [])


@pytest.mark.parametrize("eq, shapes, message", [
    ("ij,jk->ik", [(3, 4), (4, 5), (5, 6)], r"has 2 input term\(s\) for 3 input\(s\)"),
    ("ij->ik", [(3, 4)], r"output labels \['k'\] appear in no input"),
    ("...ij->ij", [(2, 3, 4)], r"the inputs have '\.\.\.' but the output does not"),
    ("ij->ii", [(3, 3)], r"output 'ii' repeats a label"),
    ("ij,jk->ik", [(3, 4), (5, 6)], r"label 'j' has sizes 4 and 5"),
    ("ij,ij->ij", [(3, 1), (3, 4)], r"label 'j' has sizes 1 and 4"),
    ("ijk->i", [(3, 4)], r"term 'ijk' has 3 label\(s\) but input 0 has rank 2"),
    ("i1->i", [(3, 4)], r"term 'i1' is not letters with at most one '\.\.\.'"),
    ("ij->j->i", [(3, 4)], r"has more than one '->'"),
])
def test_einsum_rejections_name_node_and_equation(eq, shapes, message):
    names = [f"x{i}" for i in range(len(shapes))]
    g = helper.make_graph(
        [helper.make_node("Einsum", names, ["y"], equation=eq, name="/bad/Einsum")], "bad",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in zip(names, shapes)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(FrontendError, match=re.escape(f"node '/bad/Einsum' (Einsum): equation '{eq}': ")
                       + message):
        import_onnx(model)


def test_einsum_error_type():
    with pytest.raises(EinsumError):
        parse_equation("ij", [3])


def _einsum_node_tests():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {t.name: t for t in load_model_tests(kind="node")
                if t.name.startswith("test_einsum_") and "bfloat16" not in t.name}


EINSUM_NODE_TESTS = _einsum_node_tests()


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("name", sorted(EINSUM_NODE_TESTS))
def test_einsum_node_tests_in_float32(name, plan):
    """ONNX's Einsum node tests (float64) with their inputs and outputs cast to float32."""
    case = EINSUM_NODE_TESTS[name]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    for v in [*model.graph.input, *model.graph.output]:
        assert v.type.tensor_type.elem_type == TensorProto.DOUBLE
        v.type.tensor_type.elem_type = TensorProto.FLOAT
    inputs, outputs = case.data_sets[0]
    cm = adreno_mlir.compile(model, target="pocl-cpu", **plan)
    names = [i.name for i in model.graph.input]
    got = cm.run({k: np.asarray(v, np.float32) for k, v in zip(names, inputs)})
    for out, ref in zip(model.graph.output, outputs):
        y = np.asarray(got[out.name])
        assert y.shape == ref.shape
        assert np.abs(y - ref).max() <= TOL * max(np.abs(ref).max(), 1e-30), name


# --------------------------------------------------------------------------- ConvTranspose

CONV_TRANSPOSES = {
    # name: (attributes, input shape, weight shape [C_in, C_out / group, KH, KW], bias)
    "stride2_pads_output_padding": (dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
                                    (1, 4, 5, 6), (4, 6, 3, 3), True),
    "groups": (dict(group=3, strides=[2, 1], pads=[0, 1, 1, 0]), (2, 6, 4, 5), (6, 2, 3, 3), True),
    "depthwise_upsample": (dict(group=4, strides=[2, 2], pads=[1, 1, 1, 1]), (1, 4, 5, 5), (4, 1, 4, 4), False),
    "dilation": (dict(dilations=[2, 2], strides=[1, 2], pads=[2, 1, 0, 1]), (1, 3, 5, 5), (3, 2, 3, 3), True),
    "dilation_stride_output_padding": (dict(dilations=[2, 3], strides=[2, 2], output_padding=[1, 0]),
                                       (1, 2, 4, 3), (2, 3, 2, 2), False),
    "kernel1x1_stride2": (dict(strides=[2, 2]), (1, 3, 4, 4), (3, 5, 1, 1), True),
    "rectangular_kernel": (dict(strides=[3, 2], pads=[0, 1, 2, 1]), (1, 2, 3, 4), (2, 3, 2, 4), True),
    "output_shape": (dict(strides=[3, 2], output_shape=[10, 8]), (1, 2, 3, 3), (2, 3, 3, 3), False),
    "output_shape_smaller": (dict(strides=[2, 2], output_shape=[10, 9]), (1, 2, 5, 5), (2, 3, 3, 3), True),
    "output_shape_larger": (dict(strides=[3, 3], output_shape=[17, 16]), (1, 2, 5, 5), (2, 3, 3, 3), False),
    "same_upper": (dict(auto_pad="SAME_UPPER", strides=[2, 2]), (1, 2, 5, 5), (2, 3, 3, 3), True),
    "same_lower": (dict(auto_pad="SAME_LOWER", strides=[2, 2]), (1, 2, 5, 5), (2, 3, 3, 3), True),
    "valid": (dict(auto_pad="VALID", strides=[2, 2]), (1, 2, 5, 5), (2, 3, 3, 3), False),
    "1d": (dict(strides=[2], pads=[1, 2], output_padding=[1]), (1, 3, 7), (3, 2, 4), True),
    "1d_groups": (dict(strides=[3], group=2), (2, 4, 5), (4, 3, 3), False),
}


def _conv_transpose_model(attrs, x_shape, w_shape, bias, tail=()):
    c_out = w_shape[1] * attrs.get("group", 1)
    inits = [_const("w", w_shape)] + ([_const("b", (c_out,))] if bias else [])
    nodes = [helper.make_node("ConvTranspose", ["x", "w"] + (["b"] if bias else []), ["y"], name="/up/ConvTranspose",
                              **attrs), *tail]
    return _model(nodes, {"x": x_shape}, [nodes[-1].output[0]], inits)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSES))
def test_conv_transpose_matches_onnxruntime(case, plan):
    _check(_conv_transpose_model(*CONV_TRANSPOSES[case]), plan)


@pytest.mark.parametrize("plan", PLANS)
def test_conv_transpose_between_convolutions(plan):
    """Conv -> ConvTranspose (+ bias) -> Relu -> Conv: on the NCHW4c plans the convolutions run
    packed (images with textures) and the transposed convolution reads and writes plain buffers."""
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("ConvTranspose", ["c0", "w1", "b1"], ["u"], strides=[2, 2], pads=[1, 1, 1, 1],
                         output_padding=[1, 1]),
        helper.make_node("Relu", ["u"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits = [_const("w0", (8, 3, 3, 3)), _const("w1", (8, 6, 3, 3)), _const("b1", (6,)), _const("w2", (4, 6, 3, 3))]
    cm = _check(_model(nodes, {"x": (1, 3, 7, 9)}, ["y"], inits), plan)
    kernel = re.search(r"__kernel void (conv_transpose\w*)\(([^)]*)\)", cm.source)
    assert kernel is not None, cm.source
    assert "image2d_t" not in kernel.group(2) and "__global const float* input" in kernel.group(2)
    if plan.get("textures"):
        assert "image2d_t" in cm.source  # the convolutions around it do use images


def test_with_fp16_storage():
    """With fp16 storage (fp16-acc32) the packed convolutions store halves; the transposed
    convolution and the einsum between them read and write fp32 plain buffers."""
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("ConvTranspose", ["c0", "w1", "b1"], ["u"], strides=[2, 2], pads=[1, 1, 1, 1],
                         output_padding=[1, 1]),
        helper.make_node("Relu", ["u"], ["r"]),
        helper.make_node("Einsum", ["r", "p"], ["e"], equation="nchw,dc->ndhw"),
        helper.make_node("Conv", ["e", "w2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits = [_const("w0", (8, 3, 3, 3)), _const("w1", (8, 6, 3, 3)), _const("b1", (6,)), _const("p", (8, 6)),
             _const("w2", (4, 8, 3, 3))]
    model = _model(nodes, {"x": (1, 3, 7, 9)}, ["y"], inits)
    feeds = _feeds(model)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    y = adreno_mlir.compile(model, target="pocl-cpu", textures=True, precision="fp16-acc32").run(feeds)["y"]
    assert np.abs(y - ref).max() <= 1e-2 * np.abs(ref).max()


def test_conv_transpose_fuses_bias_relu_and_residual():
    """ConvTranspose + bias, ReLU and a residual add: one kernel (the epilogue), one launch."""
    tail = [helper.make_node("Relu", ["y"], ["r"]), helper.make_node("Add", ["r", "skip"], ["z"])]
    inits = [_const("w", (4, 6, 3, 3)), _const("b", (6,)), _const("skip", (1, 6, 1, 12))]
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1]), *tail]
    model = _model(nodes, {"x": (1, 4, 5, 6)}, ["z"], inits)
    cm = _check(model, dict(layout="nchw", textures=False))
    assert cm.source.count("__kernel") == 1, cm.source
    assert "conv_transpose3x3_s2_relu_add" in cm.source


def test_conv_transpose_keeps_plain_tensors_on_nchw4c():
    module = import_onnx(_conv_transpose_model(*CONV_TRANSPOSES["groups"]))
    (op,) = [o for o in module.walk() if isinstance(o, graph.ConvTranspose2dOp)]
    assert not op.has_trait(graph.NCHW4cConvertible)
    assert graph.ints(op.pads) == (0, 1, 1, 0) and op.groups.value.data == 3


@pytest.mark.parametrize("attrs, x_shape, w_shape, message", [
    (dict(), (1, 1, 3, 4, 5), (1, 2, 3, 3, 3), r"only 1-D and 2-D transposed convolutions"),
    (dict(kernel_shape=[2, 2]), (1, 2, 4, 4), (2, 3, 3, 3), r"kernel_shape \[2, 2\] differs from the weights' window"),
    (dict(auto_pad="SAME_UPPER", strides=[3, 3], output_shape=[16, 16]), (1, 2, 5, 5), (2, 3, 3, 3),
     r"place the extra rows differently"),
])
def test_conv_transpose_rejections(attrs, x_shape, w_shape, message):
    g = helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="/up", **attrs)], "bad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [_const("w", w_shape)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(CompileError, match=r"node '/up' \(ConvTranspose\): .*" + message):
        import_onnx(model)


# --------------------------------------------------------------------------- Gemm

GEMMS = {
    # name: (transA, transB, C shape or None, alpha, beta, constant B)
    "plain_vector_c": (0, 0, (3,), 1.0, 1.0, False),
    "trans_a_column_c": (1, 0, (5, 1), 1.0, 1.0, False),
    "trans_b_scalar_c": (0, 1, (), 1.0, 1.0, True),
    "both_matrix_c": (1, 1, (5, 3), 0.25, 0.35, False),
    "trans_b_row_c": (0, 1, (1, 3), 2.0, 0.5, True),
    "both_no_c": (1, 1, None, 0.5, 1.0, False),
    "single_element_c": (1, 0, (1,), 1.0, -1.0, True),
}


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", sorted(GEMMS))
def test_gemm_matches_onnxruntime(case, plan):
    ta, tb, c_shape, alpha, beta, const_b = GEMMS[case]
    m, k, n = 5, 7, 3
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    inputs = {"a": a_shape} | ({} if const_b else {"b": b_shape})
    inits = [_const("b", b_shape)] if const_b else []
    if c_shape is not None:
        inits.append(_const("c", c_shape))
    node = helper.make_node("Gemm", ["a", "b"] + (["c"] if c_shape is not None else []), ["y"],
                            transA=ta, transB=tb, alpha=alpha, beta=beta)
    _check(_model([node], inputs, ["y"], inits, opset=13), plan)
