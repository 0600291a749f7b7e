"""ONNX's backend node tests (`onnx.backend.test.BackendTest`) through `AdrenoBackend`.

Included: every node test named after an op type the frontend accepts (`IMPORTERS`),
whatever its opset (ONNX writes most at the op's newest version: the opset 18-21 forms
of Reduce*, Split, Resize, GroupNormalization ... are among them, see OPSET_18_FORMS),
`_cpu` variants only. Excluded: the cases in `EXCLUDED`, grouped by reason; each is a
case the compiler rejects with a CompileError, and `test_excluded_case_is_rejected`
checks that it really is rejected (with the documented reason), never run with wrong
numbers. docs/op_support.md lists the same per op type. Boolean and integer outputs
come back from the backend in their type (it adds the Cast to float the compiler asks
for and converts back).

Many node tests pass an operator's parameters (Reshape's shape, Slice's starts/ends,
Squeeze/Unsqueeze/ReduceMean axes, Clip bounds, Resize scales/sizes, Where's condition) as graph inputs.
adreno-mlir only accepts those as constants, so for these tests the backend binds
them (`bind_inputs`): the model is compiled at the first run with the values the test
feeds as constants. Without binding they are rejected (`test_parameter_inputs_*`).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import onnx.backend.test
import pytest
from onnx.backend.test.loader import load_model_tests

from adreno_mlir.errors import CompileError
from adreno_mlir.frontend.onnx_importer import IMPORTERS, ORT_DEFAULT_DOMAIN_OPS
from adreno_mlir.onnx_backend import AdrenoBackend

# ONNX names node tests test_<stem>_..., the stem being the op type in lower case,
# except for these.
TEST_STEMS = {
    "BatchNormalization": ["batchnorm"],
    "ReduceMean": ["reduce_mean"],
    "ReduceSum": ["reduce_sum"],  # also matches reduce_sum_square (ReduceSumSquare, accepted too)
    "ReduceMax": ["reduce_max"],
    "ReduceMin": ["reduce_min"],
    "ReduceProd": ["reduce_prod"],
    "ReduceL1": ["reduce_l1"],
    "ReduceL2": ["reduce_l2"],
    "ReduceSumSquare": ["reduce_sum_square"],
    "ReduceLogSum": ["reduce_log_sum"],  # also matches reduce_log_sum_exp (accepted too)
    "ReduceLogSumExp": ["reduce_log_sum_exp"],
    "InstanceNormalization": ["instancenorm"],
    "RMSNormalization": ["rms_normalization"],
    "Conv": ["conv", "basic_conv"],
    "ConvTranspose": ["convtranspose"],
    "LayerNormalization": ["layer_normalization"],
    "GroupNormalization": ["group_normalization"],
    "GatherElements": ["gather_elements"],
    "GreaterOrEqual": ["greater_equal"],  # (also matched by "greater": Greater)
    "LessOrEqual": ["less_equal"],
    # test_and2d ... beside test_and_bcast3v1d ...
    "And": ["and", "and2d", "and3d", "and4d"],
    "Or": ["or", "or2d", "or3d", "or4d"],
    "Xor": ["xor", "xor2d", "xor3d", "xor4d"],
    "CastLike": ["castlike"],
    "Gather": ["gather_0", "gather_1", "gather_2d", "gather_negative"],  # not gather_elements / gathernd
    "Pad": ["constant_pad", "edge_pad", "reflect_pad", "wrap_pad"],
    # not test_split_to_sequence_* (SplitToSequence)
    "Split": ["split_equal_parts", "split_variable_parts", "split_zero_size", "split_1d", "split_2d"],
}
STEMS = sorted({stem for op in IMPORTERS for stem in TEST_STEMS.get(op, [op.lower()])})
INCLUDE = [rf"^test_{stem}(_.*)?_cpu$" for stem in STEMS]

# reason -> (what the CompileError says, node-test name patterns)
EXCLUDED: dict[str, tuple[str, list[str]]] = {
    # Integer tensors are int32 / int64 (held as floats, exact below 2**24): narrower and
    # unsigned ones are rejected at import, and some ops take no integer tensors at all.
    "dtype not supported (8/16-bit and unsigned integer tensors; integer Pow, MaxPool)": (
        r"has element type u?int|of integer tensors is not supported",
        [(r"^test_(add|sub|mul|div|max|min|equal|greater|greater_equal|less|less_equal|mod|mod_mixed_sign)_"
          r"(u?int(8|16)|uint(32|64))"),
         r"^test_clip_default_int8_", r"^test_maxpool_2d_uint8",
         # integer bases or exponents (run-time inputs)
         r"^test_pow_types_"]),
    "dtype not supported (float16 or float64 tensors; only float32)": (
        r"has element type float(16|64)",
        [r"^test_(max|min)_float(16|64)", r"^test_is(nan|inf)_float16",
         r"^test_mod_(float(16|64)_mixed_sign_fmod_0|float_edge_cases_fmod_0_float(16|64)|mixed_sign_float(16|64))",
         # every float CumSum node test is float64
         r"^test_cumsum_(1d|1d_exclusive|1d_reverse|1d_reverse_exclusive|2d_axis_0|2d_axis_1|2d_negative_axis)_cpu$"]),
    # ReduceMax/Min of bool tensors; ReduceLogSumExp's node tests are float64 (but its
    # empty-set case, excluded below).
    "dtype not supported (bool or float64 tensors; only float32)": (
        r"has element type (bool|float64)",
        [r"^test_reduce_(max|min)_bool_inputs", r"^test_reduce_max_empty_set_bool",
         r"^test_reduce_log_sum_exp_(do_not_keepdims|keepdims|default_axes_keepdims|negative_axes_keepdims)_"]),
    # Booleans are computed (0/1 float masks) but never fed: And/Or/Xor/Not node tests
    # take bool inputs.
    "bool model inputs": (
        r"has element type bool", [r"^test_(and|or|xor)(2d|3d|4d|_bcast)", r"^test_not_"]),
    "string tensors": (r"has element type object", [r"^test_equal_string"]),
    "Mod of float tensors": (
        r"Mod of float tensors is not supported",
        [r"^test_mod_(float32_mixed_sign_fmod_0|float_edge_cases_fmod_0_float32|mixed_sign_float32)"]),
    # Optional / sequence values are not tensors.
    "input is not a tensor (optional, sequence)": (
        r"is not a tensor", [r"^test_identity_opt", r"^test_identity_sequence"]),
    # Zero-size inputs or results.
    "empty tensors": (
        r"with no elements; empty tensors are not supported",
        [r"^test_reshape_allowzero_reordered", r"^test_slice_start_out_of_bounds",
         r"^test_split_zero_size_splits",
         # every reduction's input [2, 0, 4] (reduced over the empty axis)
         r"^test_reduce_[a-z0-9_]+_empty_set(_expanded|_non_reduced_axis_zero)?_cpu$"]),
    # Pooling is 1-D or 2-D.
    "3-D pooling": (r"only 1-D and 2-D pooling", [r"^test_(maxpool|averagepool)_3d_"]),
    "3-D ConvTranspose": (r"only 1-D and 2-D transposed convolutions", [r"^test_convtranspose_3d"]),
    # Every Einsum node test computes in float64 or bfloat16; tests/test_einsum_convtranspose.py
    # runs the same models and data converted to float32.
    "Einsum node tests are float64 / bfloat16": (
        r"has element type (float64|bfloat16)", [r"^test_einsum_"]),
    # graph.avg_pool has no dilations (the lowering would need them too).
    "dilated AveragePool": (r"dilated average pooling", [r"^test_averagepool_2d_dilations"]),
    # (the int64 Indices output is refused as an integer MaxPool result before the
    # importer reaches its own Indices check)
    "MaxPool with the Indices output": (r"Indices output|MaxPool of integer tensors",
                                        [r"^test_maxpool_with_argmax_"]),
    "training-mode BatchNormalization": (r"training-mode", [r"^test_batchnorm_.*_training_mode"]),
    "Resize antialias": (r"antialias = 1 is not supported", [r"^test_resize_.*_(linear|cubic)_antialias"]),
    "Resize coordinate_transformation_mode 'tf_crop_and_resize'": (
        r"'tf_crop_and_resize' is not supported", [r"^test_resize_tf_crop_and_resize"]),
    # Cast tests convert between non-float32 types (or to them): compute tensors are float32.
    "Cast to or from a type other than float32, bool, int32, int64": (
        r"has element type|casts a computed tensor to|only float32",
        [r"^test_cast_", r"^test_castlike_"]),
}

# Op types whose inputs after the first are parameters the compiler needs as constants.
PARAMETER_OPS = {"Clip", "Reshape", "Slice", "Squeeze", "Unsqueeze", "ReduceMean", "Resize",
                 "Pad", "Split", "Expand", "Tile",
                 "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                 "ReduceLogSum", "ReduceLogSumExp"}
# Other inputs the compiler needs as constants, by op type: their input indices.
PARAMETER_INPUTS = {"Where": (0,), "CumSum": (1,)}  # the boolean condition; the axis


def _node_cases(tests) -> dict:
    include = [re.compile(p) for p in INCLUDE]
    return {t.name: t for t in tests if any(p.search(t.name + "_cpu") for p in include)}


def _parameter_inputs(model) -> list[str]:
    runtime = {i.name for i in model.graph.input} - {i.name for i in model.graph.initializer}
    return sorted({name for node in model.graph.node if node.op_type in PARAMETER_OPS
                   for name in list(node.input)[1:] if name in runtime}
                  | {node.input[i] for node in model.graph.node for i in PARAMETER_INPUTS.get(node.op_type, ())
                     if node.input[i] in runtime})


def _excluded_reason(name: str) -> str | None:
    for reason, (_, patterns) in EXCLUDED.items():
        if any(re.search(p, name) for p in patterns):
            return reason
    return None


with warnings.catch_warnings():
    # ONNX's case generators warn (numpy overflow in its Cast cases ...), and
    # enable_report marks tests with a mark only ONNX's own conftest registers.
    warnings.simplefilter("ignore")
    ALL_NODE_TESTS = load_model_tests(kind="node")
    NODE_CASES = _node_cases(ALL_NODE_TESTS)
    BIND = {name: _parameter_inputs(t.model) for name, t in NODE_CASES.items()}
    BIND = {name: names for name, names in BIND.items() if names}

    backend_test = onnx.backend.test.BackendTest(
        AdrenoBackend, __name__, test_kwargs={name: {"bind_inputs": names} for name, names in BIND.items()})
    for pattern in INCLUDE:
        backend_test.include(pattern)
    for _reason, (_message, patterns) in EXCLUDED.items():
        for pattern in patterns:
            backend_test.exclude(pattern)
    _test_cases = backend_test.enable_report().test_cases


class TextureBackend(AdrenoBackend):
    """The same node tests through the texture plan (NCHW4c, images where legal)."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        kwargs.setdefault("textures", True)
        return super().prepare(model, device, **kwargs)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    texture_test = onnx.backend.test.BackendTest(
        TextureBackend, __name__ + ".texture",
        test_kwargs={name: {"bind_inputs": names} for name, names in BIND.items()})
    for pattern in INCLUDE:
        texture_test.include(pattern)
    for _reason, (_message, patterns) in EXCLUDED.items():
        for pattern in patterns:
            texture_test.exclude(pattern)
    _texture_cases = texture_test.test_cases


def _node_tests_only(cls):
    """Only the node tests, and only those the include patterns select (the runner would
    otherwise add ~3800 "no matched include pattern" skips)."""
    for _name in list(vars(cls)):
        if _name.startswith("test_") and not any(re.search(p, _name) for p in INCLUDE):
            delattr(cls, _name)
    cls.pytestmark = [pytest.mark.slow]  # the full sweep: CI's slow tier (pytest -m slow)
    return cls


OnnxBackendNodeModelTest = _node_tests_only(_test_cases["OnnxBackendNodeModelTest"])
OnnxBackendNodeModelTextureTest = _node_tests_only(_texture_cases["OnnxBackendNodeModelTest"])
globals().update({"OnnxBackendNodeModelTest": OnnxBackendNodeModelTest,
                  "OnnxBackendNodeModelTextureTest": OnnxBackendNodeModelTextureTest})


# --------------------------------------------------------------------------- checks of the exclusions


def test_every_accepted_op_has_node_tests():
    """Every accepted ONNX operator; onnxruntime's SimplifiedLayerNormalization, registered in
    the default domain, is no ONNX operator and has no node tests (tests/test_matmul_nbits.py)."""
    import onnx

    for op in IMPORTERS:
        if not onnx.defs.has(op):
            assert op in ORT_DEFAULT_DOMAIN_OPS, f"{op} is neither an ONNX operator nor one of onnxruntime's"
            continue
        stems = TEST_STEMS.get(op, [op.lower()])
        assert any(re.match(rf"^test_({'|'.join(stems)})(_|$)", n) for n in NODE_CASES), op


def test_every_single_node_test_of_an_accepted_op_is_selected():
    """Every node test whose graph is one node of an accepted op type is in the suite,
    whatever its name (test_and2d, test_group_normalization_*) or opset."""
    missing = [t.name for t in ALL_NODE_TESTS
               if len(t.model.graph.node) == 1 and t.model.graph.node[0].op_type in IMPORTERS
               and t.name not in NODE_CASES]
    assert not missing, f"add their stems to TEST_STEMS: {missing}"


def _opset(case) -> int:
    return max(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))


# Node tests of the opset 18-21 forms (what the dynamo exporter writes) that must run:
# Reduce* with an axes input and noop_with_empty_axes, Split's num_outputs with an
# uneven last part, Resize's axes and keep_aspect_ratio_policy, GroupNormalization-21.
# (ONNX 1.23 writes Pad's axes tests at opset 25: tests/test_opset18_forms.py covers
# Pad-18/19/21, with every form above, against onnxruntime.)
OPSET_18_FORMS = {
    "test_reduce_mean_do_not_keepdims_example": 18, "test_reduce_mean_default_axes_keepdims_random": 18,
    "test_reduce_max_negative_axes_keepdims_example": 18, "test_reduce_l2_keep_dims_example_expanded": 18,
    "test_reduce_sum_square_do_not_keepdims_random": 18, "test_reduce_prod_keepdims_example": 18,
    "test_split_1d_uneven_split_opset18": 18, "test_split_2d_uneven_split_opset18": 18,
    "test_split_equal_parts_default_axis_opset18": 18,
    "test_resize_upsample_scales_nearest_axes_3_2": 19, "test_resize_upsample_sizes_nearest_axes_2_3": 19,
    "test_resize_downsample_sizes_nearest_not_larger": 19, "test_resize_upsample_sizes_nearest_not_smaller": 19,
    "test_resize_downsample_scales_linear_half_pixel_symmetric": 19,
    "test_group_normalization_example": 21, "test_group_normalization_epsilon_expanded": 21,
    "test_gelu_tanh_2": 20, "test_isinf_negative": 20,
}


@pytest.mark.parametrize("name", sorted(OPSET_18_FORMS))
def test_opset_18_to_21_forms_run(name):
    assert name in NODE_CASES and _opset(NODE_CASES[name]) == OPSET_18_FORMS[name]
    assert _excluded_reason(name + "_cpu") is None


def test_every_exclusion_matches_a_case():
    for reason, (_, patterns) in EXCLUDED.items():
        for p in patterns:
            assert any(re.search(p, n + "_cpu") for n in NODE_CASES), f"{reason}: {p} matches nothing"


EXCLUDED_CASES = sorted(n for n in NODE_CASES if _excluded_reason(n + "_cpu"))


@pytest.mark.parametrize("name", EXCLUDED_CASES)
def test_excluded_case_is_rejected(name):
    """An excluded case is an expected rejection: a CompileError that gives the reason."""
    case = NODE_CASES[name]
    message, _ = EXCLUDED[_excluded_reason(name + "_cpu")]
    with pytest.raises(CompileError, match=message):
        rep = AdrenoBackend.prepare(case.model, "CPU", bind_inputs=BIND.get(name, ()))
        inputs, _ = case.data_sets[0]
        rep.run([np.asarray(x) for x in inputs])


@pytest.mark.parametrize("name", sorted(n for n in BIND if not _excluded_reason(n + "_cpu")))
def test_parameter_inputs_are_rejected_unbound(name):
    """Without bind_inputs, run-time parameters are rejected at import, naming them."""
    with pytest.raises(CompileError, match=r"must be a constant|element type (int64|bool)"):
        AdrenoBackend.prepare(NODE_CASES[name].model, "CPU")


def test_bound_inputs_recompile_when_they_change():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["data", "shape"], ["y"])], "reshape",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3, 4]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
    rep = AdrenoBackend.prepare(helper.make_model(graph), "CPU", bind_inputs=["shape"])
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for shape in ([4, 6], [6, 4], [4, 6]):
        (y,) = rep.run([data, np.array(shape, np.int64)])
        np.testing.assert_array_equal(y, data.reshape(shape))


def test_reshape_contradicting_declared_output_shape_is_rejected():
    case = NODE_CASES["test_reshape_reordered_all_dims"]
    rep = AdrenoBackend.prepare(case.model, "CPU", bind_inputs=["shape"])
    (data, _), _ = case.data_sets[0]
    with pytest.raises(CompileError, match="declares shape"):
        rep.run([data, np.array([4, 6], np.int64)])


def test_boolean_and_integer_outputs_keep_their_type():
    """The compiler returns float32 outputs; the backend adds the Cast to float it asks for
    on each boolean or integer output computed at run time and converts the result back."""
    from onnx import TensorProto, helper

    c = onnx.numpy_helper.from_array(np.array([0.5], np.float32), "c")
    graph = helper.make_graph(
        [helper.make_node("Less", ["x", "c"], ["lt"]), helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
         helper.make_node("Relu", ["x"], ["r"])], "outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("lt", TensorProto.BOOL, [2, 3]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3])], [c])
    x = np.array([[-2.7, 0.2, 0.5], [1.9, 3.0, -0.4]], np.float32)
    lt, i, r = AdrenoBackend.prepare(helper.make_model(graph), "CPU").run([x])
    assert lt.dtype == np.bool_ and i.dtype == np.int64 and r.dtype == np.float32
    np.testing.assert_array_equal(lt, x < 0.5)
    np.testing.assert_array_equal(i, x.astype(np.int64))
    np.testing.assert_array_equal(r, np.maximum(x, 0))


def test_run_node():
    node = onnx.helper.make_node("Relu", ["x"], ["y"])
    x = np.array([[-1.0, 2.0]], np.float32)
    (y,) = AdrenoBackend.run_node(node, [x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_devices():
    assert AdrenoBackend.supports_device("CPU")
    assert not AdrenoBackend.supports_device("CUDA")
