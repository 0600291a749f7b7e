"""Integer tensors computed at run time (dialects/graph.py "integers": float32 tensors
holding integers, exact below 2**24) and several integer model inputs (input_ids,
attention_mask, token_type_ids), against onnxruntime on every plan: a BERT-style
encoder front with a padded batch and both forms of HF's attention mask, RoBERTa's
position ids (a cumulative sum of the padding mask, used as Gather indices on device),
CumSum's variants, Cast's truncation, integer Div/Mod, GatherElements (folded and at run
time), the 2**24 input range and the errors for what stays unsupported."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError, InputError

PLANS = [
    pytest.param({"layout": "nchw", "textures": False}, id="nchw"),
    pytest.param({"layout": "nchw4c", "textures": False}, id="nchw4c"),
    pytest.param({"textures": True}, id="images"),
]
OPSET = [helper.make_opsetid("", 17)]


def _init(name: str, arr) -> TensorProto:
    return numpy_helper.from_array(np.asarray(arr), name)


def _model(nodes, inputs, outputs, inits=()):
    ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    return helper.make_model(helper.make_graph(nodes, "ints", ins, outs, list(inits)), opset_imports=OPSET)


def _ort(model, feeds) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _rel(got, ref) -> float:
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


# --------------------------------------------------------------------------- (a) BERT-style front

B, L, H, HEADS, V, P, T = 2, 16, 16, 2, 50, 512, 2
PAD_LEN = 6


def _bert(mask_form: str):
    """Word + position + token-type embeddings, LayerNorm and one self-attention whose
    scores get HF's extended mask: (1 - mask) * finfo.min (Cast/Sub/Mul, the older form)
    or Where(mask == 0, -inf, scores) (the newer one). Three int64 inputs."""
    rng = np.random.default_rng(7)
    d = H // HEADS

    def w(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = [_init("word", w(V, H, scale=1.0)), _init("pos", w(P, H, scale=1.0)), _init("type", w(T, H, scale=1.0)),
             _init("position_ids", np.arange(P, dtype=np.int64)[None]), _init("s0", np.array([0], np.int64)),
             _init("sL", np.array([L], np.int64)), _init("s1", np.array([1], np.int64)),
             _init("gamma", 1 + w(H, scale=0.1)), _init("beta", w(H, scale=0.1)),
             _init("heads_shape", np.array([B, L, HEADS, d], np.int64)),
             _init("out_shape", np.array([B, L, H], np.int64)),
             _init("sqrt_d", np.array(np.sqrt(d), np.float32)), _init("axes12", np.array([1, 2], np.int64)),
             _init("one", np.array(1.0, np.float32)), _init("fmin", np.array(np.finfo(np.float32).min, np.float32)),
             _init("zero_i", np.array(0, np.int64)), _init("neg_inf", np.array(-np.inf, np.float32))]
    nodes = [
        helper.make_node("Slice", ["position_ids", "s0", "sL", "s1"], ["pos_ids"]),  # [1, L], folded
        helper.make_node("Gather", ["word", "input_ids"], ["we"]),
        helper.make_node("Gather", ["pos", "pos_ids"], ["pe"]),
        helper.make_node("Gather", ["type", "token_type_ids"], ["te"]),
        helper.make_node("Add", ["we", "pe"], ["e1"]),
        helper.make_node("Add", ["e1", "te"], ["e2"]),
        helper.make_node("LayerNormalization", ["e2", "gamma", "beta"], ["x"], axis=-1, epsilon=1e-12),
    ]
    for name in "qkv":
        inits += [_init(f"W{name}", w(H, H)), _init(f"b{name}", w(H, scale=0.1))]
        nodes += [helper.make_node("MatMul", ["x", f"W{name}"], [f"{name}0"]),
                  helper.make_node("Add", [f"{name}0", f"b{name}"], [f"{name}1"]),
                  helper.make_node("Reshape", [f"{name}1", "heads_shape"], [f"{name}2"]),
                  helper.make_node("Transpose", [f"{name}2"], [name],
                                   perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["q", "k"], ["qk"]),
              helper.make_node("Div", ["qk", "sqrt_d"], ["scores"]),
              helper.make_node("Unsqueeze", ["attention_mask", "axes12"], ["mask4"])]  # [B, 1, 1, L] int64
    if mask_form == "additive":
        nodes += [helper.make_node("Cast", ["mask4"], ["maskf"], to=TensorProto.FLOAT),
                  helper.make_node("Sub", ["one", "maskf"], ["inv"]),
                  helper.make_node("Mul", ["inv", "fmin"], ["bias"]),
                  helper.make_node("Add", ["scores", "bias"], ["masked"])]
    else:
        nodes += [helper.make_node("Equal", ["mask4", "zero_i"], ["is_pad"]),
                  helper.make_node("Where", ["is_pad", "neg_inf", "scores"], ["masked"])]
    nodes += [helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
              helper.make_node("MatMul", ["probs", "v"], ["ctx"]),
              helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ctx_t", "out_shape"], ["hidden"])]
    inputs = [(n, TensorProto.INT64, [B, L]) for n in ("input_ids", "attention_mask", "token_type_ids")]
    used = {i for node in nodes for i in node.input}
    return _model(nodes, inputs, ["hidden"], [t for t in inits if t.name in used])


def _bert_feeds(padded: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    mask = np.ones((B, L), np.int64)
    if padded:
        mask[1, L - PAD_LEN:] = 0
    types = np.zeros((B, L), np.int64)
    types[:, L // 2:] = 1
    return {"input_ids": rng.integers(0, V, (B, L)).astype(np.int64), "attention_mask": mask, "token_type_ids": types}


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("mask_form", ["additive", "where"])
def test_bert_front_with_padding_matches_onnxruntime(mask_form, plan):
    model = _bert(mask_form)
    cm = adreno_mlir.compile(model, target="adreno-740", **plan)
    feeds = _bert_feeds()
    (ref,) = _ort(model, feeds)
    got = cm.run(feeds)["hidden"]
    assert _rel(got, ref) <= 1e-4, _rel(got, ref)
    # the mask matters: without padding the second row changes, the first does not
    (unpadded,) = _ort(model, _bert_feeds(padded=False))
    assert np.abs(unpadded[1] - ref[1]).max() > 1e-2
    got_unpadded = cm.run(_bert_feeds(padded=False))["hidden"]
    assert _rel(got_unpadded, unpadded) <= 1e-4
    bounds = {t.name: t.bound for t in cm.launch_plan.inputs}
    assert bounds == {"input_ids": V, "attention_mask": 1 << 24, "token_type_ids": T}


def test_bert_imports_one_conversion_for_the_mask():
    """input_ids and token_type_ids stay i32 ids of their Gathers; attention_mask, read by
    a Cast, is converted once (graph.int_to_float) and reshaped as floats."""
    module = adreno_mlir.frontend.import_onnx(_bert("additive"))
    ops = [op.name for op in module.walk()]
    assert ops.count("graph.int_to_float") == 1
    assert ops.count("graph.take") == 2


# --------------------------------------------------------------------------- (b) RoBERTa position ids

PAD_ID = 1


def _roberta():
    """HF's create_position_ids_from_input_ids: mask = (ids != pad).int(); positions =
    cumsum(mask, 1) * mask + pad, looked up in a position table (Gather indices computed
    on device); input_ids also feed the word embedding (i32 ids)."""
    rng = np.random.default_rng(11)
    inits = [_init("pad", np.array(PAD_ID, np.int64)), _init("axis", np.array(1, np.int64)),
             _init("word", rng.standard_normal((V, H)).astype(np.float32)),
             _init("pos", rng.standard_normal((L + 2, H)).astype(np.float32))]
    nodes = [
        helper.make_node("Equal", ["input_ids", "pad"], ["eq"]),
        helper.make_node("Not", ["eq"], ["ne"]),
        helper.make_node("Cast", ["ne"], ["mask"], to=TensorProto.INT32),
        helper.make_node("CumSum", ["mask", "axis"], ["cs"]),
        helper.make_node("Cast", ["cs"], ["cs32"], to=TensorProto.INT32),
        helper.make_node("Mul", ["cs32", "mask"], ["inc"]),
        helper.make_node("Cast", ["inc"], ["inc64"], to=TensorProto.INT64),
        helper.make_node("Add", ["inc64", "pad"], ["position_ids"]),
        helper.make_node("Gather", ["pos", "position_ids"], ["pe"]),
        helper.make_node("Gather", ["word", "input_ids"], ["we"]),
        helper.make_node("Add", ["we", "pe"], ["y"]),
        helper.make_node("Cast", ["position_ids"], ["positions"], to=TensorProto.FLOAT),
    ]
    return _model(nodes, [("input_ids", TensorProto.INT64, [B, L])], ["y", "positions"], inits)


@pytest.mark.parametrize("plan", PLANS)
def test_roberta_position_ids_match_onnxruntime(plan):
    model = _roberta()
    ids = np.random.default_rng(5).integers(2, V, (B, L)).astype(np.int64)
    ids[1, L - PAD_LEN:] = PAD_ID
    ids[0, 3] = PAD_ID  # a pad inside a row too
    ref_y, ref_pos = _ort(model, {"input_ids": ids})
    cm = adreno_mlir.compile(model, target="pocl-cpu", **plan)
    out = cm.run({"input_ids": ids})
    np.testing.assert_array_equal(out["positions"], ref_pos)
    np.testing.assert_array_equal(out["y"], ref_y)  # copies and one add: exact
    assert cm.launch_plan.inputs[0].bound == V  # the Gather's table is the tighter bound


def test_ids_cast_before_their_gather_stay_checked_ids():
    """int32 ids cast to int64 before the embedding Gather (and also compared with a pad id)
    are still the Gather's i32 ids, checked against the table; an unused integer input gets
    the 2**24 bound."""
    table = np.random.default_rng(1).standard_normal((V, 4)).astype(np.float32)
    model = _model([helper.make_node("Cast", ["ids"], ["ids64"], to=TensorProto.INT64),
                    helper.make_node("Gather", ["table", "ids64"], ["y"]),
                    helper.make_node("Equal", ["ids64", "pad"], ["is_pad"]),
                    helper.make_node("Cast", ["is_pad"], ["pads"], to=TensorProto.FLOAT)],
                   [("ids", TensorProto.INT32, [2, 5]), ("unused", TensorProto.INT64, [3])], ["y", "pads"],
                   [_init("table", table), _init("pad", np.array(PAD_ID, np.int64))])
    cm = adreno_mlir.compile(model, target="pocl-cpu", layout="nchw", textures=False)
    assert "__global const int* ids" in cm.source  # the take reads the i32 ids
    assert {t.name: t.bound for t in cm.launch_plan.inputs} == {"ids": V, "unused": 1 << 24}
    ids = np.array([[1, 2, 3, -1, 1], [0, 1, 49, 7, 8]], np.int32)
    feeds = {"ids": ids, "unused": np.zeros(3, np.int64)}
    got = cm.run(feeds)
    ref = _ort(model, feeds)
    np.testing.assert_array_equal(got["y"], ref[0])
    np.testing.assert_array_equal(got["pads"], ref[1])
    with pytest.raises(InputError, match="the extent of the table"):
        cm.run({"ids": ids + V, "unused": np.zeros(3, np.int64)})


def test_computed_gather_indices_never_read_outside_the_table():
    """Ids computed on device that fall outside the table (here 100 and -100 for a table
    of 18 rows) read row 0 instead (no host sees them; onnxruntime would refuse them)."""
    table = np.arange(18 * 2, dtype=np.float32).reshape(18, 2)
    model = _model([helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                    helper.make_node("Gather", ["table", "i"], ["y"])],
                   [("x", TensorProto.FLOAT, [6])], ["y"], [_init("table", table)])
    cm = adreno_mlir.compile(model, target="pocl-cpu", layout="nchw", textures=False)
    x = np.array([3, -1, 100, -100, np.nan, 17.9], np.float32)
    got = cm.run({"x": x})["y"]
    np.testing.assert_array_equal(got, table[[3, -1, 0, 0, 0, 17]])


# --------------------------------------------------------------------------- (c) CumSum

CS_SHAPE = [1, 4, 5, 3]


@pytest.mark.parametrize("plan", PLANS)
def test_cumsum_variants_match_onnxruntime(plan):
    """Every exclusive/reverse combination along axis 2 and -1 of a run-time input, one of
    an integer input (cast to float at the end), and one of a constant (folded at import)."""
    nodes, outs = [], []
    for axis in ("a2", "am1"):
        for exclusive in (0, 1):
            for reverse in (0, 1):
                name = f"y_{axis}_{exclusive}{reverse}"
                nodes.append(helper.make_node("CumSum", ["x", axis], [name], exclusive=exclusive, reverse=reverse))
                outs.append(name)
    nodes += [helper.make_node("CumSum", ["n", "a2"], ["ni"], exclusive=1),
              helper.make_node("Cast", ["ni"], ["y_int"], to=TensorProto.FLOAT),
              helper.make_node("CumSum", ["c", "a2"], ["cc"], reverse=1),
              helper.make_node("Add", ["cc", "x"], ["y_const"])]
    outs += ["y_int", "y_const"]
    rng = np.random.default_rng(2)
    inits = [_init("a2", np.array(2, np.int32)), _init("am1", np.array([-1], np.int64)),
             _init("c", rng.standard_normal(CS_SHAPE).astype(np.float32))]
    model = _model(nodes, [("x", TensorProto.FLOAT, CS_SHAPE), ("n", TensorProto.INT32, CS_SHAPE)], outs, inits)
    feeds = {"x": rng.standard_normal(CS_SHAPE).astype(np.float32),
             "n": rng.integers(-1000, 1000, CS_SHAPE).astype(np.int32)}
    refs = _ort(model, feeds)
    got = adreno_mlir.compile(model, target="pocl-cpu", **plan).run(feeds)
    for name, ref in zip(outs, refs):
        np.testing.assert_allclose(got[name], ref, rtol=1e-6, atol=1e-6, err_msg=name)


def test_cumsum_of_a_constant_folds_in_the_graph():
    """graph.cumsum of a graph.constant folds at graph-canonicalize (CumSumOp.evaluate)."""
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context
    from adreno_mlir.pipeline import run_pipeline

    text = """
    func.func @main() -> tensor<2x3xf32> {
      %c = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
      %y = graph.cumsum %c {axis = 1 : i64, exclusive = 1 : i64, reverse = 1 : i64}
          : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %y : tensor<2x3xf32>
    }"""
    module = Parser(make_context(), text).parse_module()
    run_pipeline(make_context(), module, "graph-canonicalize")
    (const,) = [op for op in module.walk() if isinstance(op, graph.ConstantOp)]
    assert not [op for op in module.walk() if isinstance(op, graph.CumSumOp)]
    np.testing.assert_array_equal(np.array(const.value.get_values()).reshape(2, 3), [[5, 3, 0], [11, 6, 0]])


# --------------------------------------------------------------------------- (d) Cast, Div, Mod

SHAPE = [1, 8, 5, 6]


@pytest.mark.parametrize("plan", PLANS)
def test_cast_truncates_and_integer_div_mod_match_onnxruntime(plan):
    """Cast float -> int64 -> float truncates toward zero (negative and positive
    non-integers); integer Div truncates, Mod follows the divisor's sign (fmod = 0) or the
    dividend's (fmod = 1), by run-time and constant divisors, on 4-D tensors (the NCHW4c
    plans pack the float ops around them)."""
    nodes = [
        helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT64),
        helper.make_node("Cast", ["xi"], ["trunc"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "ten"], ["x10"]),
        helper.make_node("Cast", ["x10"], ["a"], to=TensorProto.INT64),
        helper.make_node("Cast", ["z"], ["b"], to=TensorProto.INT64),
        helper.make_node("Div", ["a", "b"], ["q"]),
        helper.make_node("Mod", ["a", "b"], ["r"]),
        helper.make_node("Mod", ["a", "b"], ["rf"], fmod=1),
        helper.make_node("Div", ["a", "three"], ["q3"]),
        helper.make_node("Mod", ["a", "minus_three"], ["r3"]),
        helper.make_node("Add", ["x", "trunc"], ["mixed"]),
    ]
    outs = ["trunc", "q", "r", "rf", "q3", "r3"]
    for name in outs:
        nodes.append(helper.make_node("Cast", [name], [f"{name}_f"], to=TensorProto.FLOAT))
    inits = [_init("ten", np.array(10.0, np.float32)), _init("three", np.array(3, np.int64)),
             _init("minus_three", np.array(-3, np.int64))]
    model = _model(nodes, [("x", TensorProto.FLOAT, SHAPE), ("z", TensorProto.FLOAT, SHAPE)],
                   [f"{n}_f" for n in outs] + ["mixed"], inits)
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(SHAPE) * 4).astype(np.float32)
    x.reshape(-1)[:8] = [-2.7, -0.5, 0.5, 2.7, 3.0, -3.0, -0.0, 1e6 + 0.5]
    z = rng.integers(-9, 10, SHAPE).astype(np.float32)
    z[z == 0] = 7
    feeds = {"x": x, "z": z}
    refs = _ort(model, feeds)
    got = adreno_mlir.compile(model, target="pocl-cpu", **plan).run(feeds)
    for name, ref in zip([f"{n}_f" for n in outs] + ["mixed"], refs):
        np.testing.assert_array_equal(got[name], ref, err_msg=name)
    np.testing.assert_array_equal(got["trunc_f"].reshape(-1)[:8], [-2, 0, 0, 2, 3, -3, 0, 1e6])


@pytest.mark.parametrize("plan", PLANS)
def test_integer_ops_in_a_conv_epilogue(plan):
    """Cast to int, integer Div and Mod after a convolution: on NCHW buffers they fuse into
    the conv's epilogue (float4 pixels, computed lane by lane as ints); on NCHW4c plans the
    conv packs and the integer ops run on plain buffers after it. Exact either way."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c", "ten"], ["c10"]),
             helper.make_node("Cast", ["c10"], ["ci"], to=TensorProto.INT64),
             helper.make_node("Div", ["ci", "three"], ["q"]),
             helper.make_node("Mod", ["q", "minus_five"], ["r"]),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)]
    inits = [_init("w", rng.standard_normal((8, 3, 3, 3)).astype(np.float32)), _init("ten", np.array(10, np.float32)),
             _init("three", np.array(3, np.int64)), _init("minus_five", np.array(-5, np.int64))]
    model = _model(nodes, [("x", TensorProto.FLOAT, [1, 3, 16, 16])], ["y"], inits)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    cm = adreno_mlir.compile(model, target="adreno-740", **plan)
    np.testing.assert_array_equal(cm.run({"x": x})["y"], _ort(model, {"x": x})[0])
    if plan.get("layout") == "nchw":
        assert cm.source.count("__kernel") == 1


def test_integer_div_by_zero_gives_zero():
    """A zero divisor gives 0 (numpy's result; onnxruntime's is undefined), never a trap."""
    nodes = [helper.make_node("Cast", ["x"], ["a"], to=TensorProto.INT32),
             helper.make_node("Cast", ["z"], ["b"], to=TensorProto.INT32),
             helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Mod", ["a", "b"], ["r"]),
             helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT)]
    model = _model(nodes, [("x", TensorProto.FLOAT, [4]), ("z", TensorProto.FLOAT, [4])], ["qf", "rf"])
    got = adreno_mlir.compile(model, target="pocl-cpu").run(
        {"x": np.array([7, -7, 5, 0], np.float32), "z": np.array([0, 2, 0, 0], np.float32)})
    np.testing.assert_array_equal(got["qf"], [0, -3, 0, 0])
    np.testing.assert_array_equal(got["rf"], [0, 1, 0, 0])


def test_integer_elementwise_evaluate_matches_numpy():
    a = np.array([-7, 7, -7, 7, 6, 5], np.float32)
    b = np.array([2, 2, -2, -2, 3, 0], np.float32)
    np.testing.assert_array_equal(graph.IntDivOp.evaluate(a, b), [-3, 3, 3, -3, 2, 0])
    np.testing.assert_array_equal(graph.IntModOp.evaluate(a, b), [1, 1, -1, -1, 0, 0])
    np.testing.assert_array_equal(graph.IntFmodOp.evaluate(a, b), [-1, 1, -1, 1, 0, 0])
    np.testing.assert_array_equal(graph.TruncOp.evaluate(np.array([-2.5, 2.5], np.float32)), [-2, 2])


# --------------------------------------------------------------------------- GatherElements


def test_gather_elements_on_constants_folds():
    """HF BERT's buffered token_type_ids: GatherElements(token_type_ids [1, 512], position_ids
    [1, 128], axis=1) on constants. onnx.reference's GatherElements fails along an axis of
    more than 32 ("cannot reshape array of size 1 into shape (1,128)"); the importer folds it
    with numpy."""
    n = 128
    types = np.zeros((1, 512), np.int64)
    types[0, 1::3] = 1
    nodes = [helper.make_node("Slice", ["position_ids", "s0", "sn", "s1"], ["pos"]),
             helper.make_node("GatherElements", ["types", "pos"], ["tt"], axis=1),
             helper.make_node("Gather", ["type_table", "tt"], ["te"]),
             helper.make_node("Add", ["x", "te"], ["y"])]
    table = np.array([[1.0, 2.0], [10.0, 20.0]], np.float32)
    inits = [_init("position_ids", np.arange(512, dtype=np.int64)[None]), _init("types", types),
             _init("s0", np.array([0], np.int64)), _init("sn", np.array([n], np.int64)),
             _init("s1", np.array([1], np.int64)), _init("type_table", table)]
    model = _model(nodes, [("x", TensorProto.FLOAT, [1, n, 2])], ["y"], inits)
    x = np.random.default_rng(0).standard_normal((1, n, 2)).astype(np.float32)
    (ref,) = _ort(model, {"x": x})
    np.testing.assert_array_equal(adreno_mlir.compile(model, target="pocl-cpu").run({"x": x})["y"], ref)


@pytest.mark.parametrize("plan", PLANS)
def test_gather_elements_matches_onnxruntime(plan):
    """GatherElements of a run-time tensor by constant indices (negative ones too) and by
    indices computed at run time (an integer input, arithmetic on it first)."""
    rng = np.random.default_rng(9)
    shape, ishape = [3, 40, 4], [3, 7, 4]
    idx = rng.integers(-40, 40, ishape).astype(np.int64)
    nodes = [helper.make_node("GatherElements", ["x", "idx"], ["y_const"], axis=1),
             helper.make_node("Sub", ["ids", "one"], ["ids1"]),
             helper.make_node("GatherElements", ["x", "ids1"], ["y_run"], axis=-2)]
    model = _model(nodes, [("x", TensorProto.FLOAT, shape), ("ids", TensorProto.INT64, ishape)],
                   ["y_const", "y_run"], [_init("idx", idx), _init("one", np.array(1, np.int64))])
    feeds = {"x": rng.standard_normal(shape).astype(np.float32),
             "ids": rng.integers(-39, 41, ishape).astype(np.int64)}
    refs = _ort(model, feeds)
    got = adreno_mlir.compile(model, target="pocl-cpu", **plan).run(feeds)
    np.testing.assert_array_equal(got["y_const"], refs[0])
    np.testing.assert_array_equal(got["y_run"], refs[1])


# --------------------------------------------------------------------------- (e), (f) errors


def test_integer_input_beyond_two_to_the_24_is_refused():
    """An integer input the model computes with is float32 on device: values of magnitude
    2**24 and more are refused by run(), saying why."""
    cm = adreno_mlir.compile(_bert("additive"), target="pocl-cpu", layout="nchw", textures=False)
    feeds = _bert_feeds()
    feeds["attention_mask"][0, 2] = 1 << 24
    with pytest.raises(InputError, match=r"input 'attention_mask' has ids \[16777216\] outside "
                                         r"\[-16777216, 16777216\), integers computed on device are held as float32"):
        cm.run(feeds)
    feeds["attention_mask"][0, 2] = -(1 << 24) - 1
    with pytest.raises(InputError, match="outside"):
        cm.run(feeds)
    feeds = _bert_feeds()
    feeds["input_ids"][1, 1] = V  # the word table is the tighter bound
    with pytest.raises(InputError, match=rf"input 'input_ids' has ids \[{V}\] outside \[-{V}, {V}\), the extent"):
        cm.run(feeds)


def test_unsupported_integer_op_names_the_node():
    """An op that does not compute integers as floats exactly (Pow, ReduceMean, MatMul ...)
    on an integer tensor computed at run time is refused, naming the node and the op."""
    model = _model([helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                    helper.make_node("Pow", ["i", "two"], ["p"], name="square_ids"),
                    helper.make_node("Cast", ["p"], ["y"], to=TensorProto.FLOAT)],
                   [("x", TensorProto.FLOAT, [4])], ["y"], [_init("two", np.array(2, np.int64))])
    with pytest.raises(CompileError, match=r"node 'square_ids' \(Pow\): Pow of integer tensors is not supported: "
                                           r"tensor 'i' has element type int64 and is computed at run time"):
        adreno_mlir.compile(model, target="pocl-cpu")


def test_integer_output_computed_at_run_time_is_refused():
    model = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64)],
                   [("x", TensorProto.FLOAT, [4])], [])
    model.graph.output.append(helper.make_tensor_value_info("y", TensorProto.INT64, [4]))
    with pytest.raises(CompileError, match=r"model output 'y' has element type int64 and is computed at run time"):
        adreno_mlir.compile(model, target="pocl-cpu")


def test_float_mod_is_refused():
    model = _model([helper.make_node("Mod", ["x", "x"], ["y"], name="fmod_node", fmod=1)],
                   [("x", TensorProto.FLOAT, [4])], ["y"])
    with pytest.raises(CompileError, match=r"node 'fmod_node' \(Mod\): Mod of float tensors is not supported"):
        adreno_mlir.compile(model, target="pocl-cpu")


def test_new_ops_print_and_parse():
    """The IR of the integer ops round-trips through text."""
    from xdsl.parser import Parser

    from adreno_mlir.context import make_context

    module = adreno_mlir.frontend.import_onnx(_roberta())
    text = str(module)
    for name in ("graph.int_to_float", "graph.cumsum", "graph.take"):
        assert name in text
    again = Parser(make_context(), text).parse_module()
    assert str(again) == text
