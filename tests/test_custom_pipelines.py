"""compile(pipeline=..., passes=...) with a caller's passes: the IR a custom pass leaves
is verified before it is lowered (a verifier error naming the op, not a silently wrong
model), and a syntax error in a pipeline string is a CompileError, not a raw xDSL
traceback.

Also the small models and onnxruntime checks that tests/test_fused_region_verifier.py and
tests/test_kernel_config.py share. Numerical checks compare against onnxruntime on the
default OpenCL device (PoCL); error checks want a CompileError (or a verifier error)
that names the op, not a Python exception from inside a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import DenseArrayBase, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException

import adreno_mlir
from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError

ort = pytest.importorskip("onnxruntime")

RTOL = 1e-4
CLEAR_ERRORS = (CompileError, VerifyException, DiagnosticException)


# --------------------------------------------------------------------------- models


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def conv_relu_model(relu: bool = True) -> onnx.ModelProto:
    """x [1, 8, 9, 9] -> 3x3 conv (8 -> 8, pad 1, bias) [-> ReLU] -> y.
    On the pocl-cpu target the conv becomes Winograd F(4,3) (>= 8 channels)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y"], name="conv",
                              pads=[1, 1, 1, 1], kernel_shape=[3, 3])]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"], name="relu"))
    return _model(nodes, [("x", [1, 8, 9, 9])], [("y", [1, 8, 9, 9])],
                  [("w", rng.standard_normal((8, 8, 3, 3)) * 0.2), ("b", rng.standard_normal(8))])


def se_model() -> onnx.ModelProto:
    """x -> GlobalAveragePool -> Sigmoid -> Mul with x (an SE gate)."""
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gap"),
             helper.make_node("Sigmoid", ["g"], ["s"], name="sig"),
             helper.make_node("Mul", ["s", "x"], ["y"], name="mul")]
    return _model(nodes, [("x", [1, 8, 6, 6])], [("y", [1, 8, 6, 6])], [])


def two_conv_model() -> onnx.ModelProto:
    """x -> 1x1 conv (8 -> 8) -> ReLU -> 1x1 conv (8 -> 8) -> y (no Winograd anywhere)."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="conv2", kernel_shape=[1, 1])]
    return _model(nodes, [("x", [1, 8, 5, 5])], [("y", [1, 8, 5, 5])],
                  [("w1", rng.standard_normal((8, 8, 1, 1)) * 0.3), ("b1", rng.standard_normal(8)),
                   ("w2", rng.standard_normal((8, 8, 1, 1)) * 0.3), ("b2", rng.standard_normal(8))])


def reference(model: onnx.ModelProto, feeds: dict) -> dict:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def assert_matches(got: np.ndarray, want: np.ndarray) -> None:
    err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))
    assert err < RTOL, f"relative error {err:.3g} against onnxruntime"


def x_for(model: onnx.ModelProto) -> dict:
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {"x": np.random.default_rng(2).standard_normal(shape).astype(np.float32)}


# --------------------------------------------------------------------------- a custom pass breaks the IR


@dataclass(frozen=True)
class BreakConvPads(ModulePass):
    """A (buggy) research pass: sets every conv's pads to 0 without changing its result
    type, which the conv verifier rejects."""

    name = "break-conv-pads"

    def apply(self, ctx, op):
        for o in op.walk():
            if isinstance(o, graph.Conv2dOp):
                o.pads = DenseArrayBase.from_list(i64, [0, 0, 0, 0])


def test_custom_pipeline_is_verified_before_lowering():
    """run_stages (adreno_mlir/pipeline.py) verifies only after the last two stages.
    A caller's pipeline (string or function) has one stage per pass, so the last two
    are convert-graph-to-opencl and cse: IR broken by a custom pass is never verified
    before it is lowered, and here compiles into a silently wrong model (max abs error ~5)
    instead of the conv's verifier error."""
    model = conv_relu_model()
    with pytest.raises(CLEAR_ERRORS, match="conv2d"):
        cm = adreno_mlir.compile(model, target="pocl-cpu", layout="nchw", passes=[BreakConvPads],
                                 pipeline=lambda p: p.replace("graph-fuse", "break-conv-pads,graph-fuse"))
        feeds = x_for(model)
        out = cm.run(feeds)["y"]
        print("compiled anyway; error vs onnxruntime:", float(np.abs(out - reference(model, feeds)["y"]).max()))


# --------------------------------------------------------------------------- pipeline syntax


def test_pipeline_syntax_error_is_a_compile_error():
    """run_pipeline (adreno_mlir/pipeline.py) wraps PassPipeline.parse_spec in
    `except Exception`, but xDSL's ArgSpecParseError derives from BaseException: an
    unbalanced brace escapes compile() as a raw xDSL traceback."""
    model = conv_relu_model()
    try:
        adreno_mlir.compile(model, target="pocl-cpu", pipeline=lambda p: p.replace("graph-fuse", "graph-fuse{"))
    except BaseException as e:  # noqa: BLE001 - what escapes is the point of the test
        assert isinstance(e, CompileError), f"{type(e).__module__}.{type(e).__name__}: {e}"
        assert "graph-fuse" in str(e)
    else:
        pytest.fail("a pipeline with an unbalanced '{' compiled")
