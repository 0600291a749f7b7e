"""A wav2vec2-style speech encoder built the way `torch.onnx.export` writes one (issue 28):
a raw waveform through a 1-D convolutional feature extractor (strided Conv1d, group norm as
InstanceNormalization + affine, exact GELU from Erf), a feature projection, the grouped
positional Conv1d with its even-kernel trim (Slice), and a self-attention block; against
onnxruntime on the three fp32 plans (1e-4 relative) and fp16-acc32 (2e-2)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir

RNG = np.random.default_rng(8)
SAMPLES, C, D = 1600, 16, 32

PLANS = {
    "nchw": dict(layout="nchw", textures=False),
    "nchw4c": dict(layout="nchw4c", textures=False),
    "textures": dict(textures=True),
    "fp16-acc32": dict(textures=True, precision="fp16-acc32", calibration=False),
}


def _w(name, *shape, scale=0.3):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _c(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(values, dtype), name)


def _gelu(x, out, n):
    """x * 0.5 * (1 + erf(x / sqrt(2))), as the legacy exporter writes nn.GELU."""
    return [helper.make_node("Div", [x, "sqrt2"], [f"{n}_d"]), helper.make_node("Erf", [f"{n}_d"], [f"{n}_e"]),
            helper.make_node("Add", [f"{n}_e", "one"], [f"{n}_a"]), helper.make_node("Mul", [x, f"{n}_a"], [f"{n}_m"]),
            helper.make_node("Mul", [f"{n}_m", "half"], [out])]


def _model():
    inits = [_w("conv0_w", C, 1, 10), _w("gn_s", C, 1, scale=1.0), _w("gn_b", C, 1), _w("conv1_w", C, C, 3),
             numpy_helper.from_array(np.ones(C, np.float32), "ones_c"), numpy_helper.from_array(np.zeros(C, np.float32), "zeros_c"),
             _w("ln0_s", C), _w("ln0_b", C), _w("proj_w", C, D), _w("proj_b", D), _w("pos_w", D, D // 4, 8),
             _w("pos_b", D), _w("ln1_s", D), _w("ln1_b", D), _w("q_w", D, D), _w("k_w", D, D), _w("v_w", D, D),
             _w("o_w", D, D), _w("ln2_s", D), _w("ln2_b", D), _w("ff1_w", D, 2 * D), _w("ff2_w", 2 * D, D),
             numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(1 / np.sqrt(D), np.float32), "scale"),
             _c("axes1", [1]), _c("starts", [0]), _c("ends", [-1]), _c("axis2", [2])]
    nodes = [helper.make_node("Unsqueeze", ["input_values", "axes1"], ["wave"]),
             helper.make_node("Conv", ["wave", "conv0_w"], ["c0"], kernel_shape=[10], strides=[5]),
             helper.make_node("InstanceNormalization", ["c0", "ones_c", "zeros_c"], ["in0"], epsilon=1e-5),
             helper.make_node("Mul", ["in0", "gn_s"], ["gn0"]), helper.make_node("Add", ["gn0", "gn_b"], ["gn1"]),
             *_gelu("gn1", "f0", "g0"),
             helper.make_node("Conv", ["f0", "conv1_w"], ["c1"], kernel_shape=[3], strides=[2]),
             *_gelu("c1", "f1", "g1"),
             helper.make_node("Transpose", ["f1"], ["feat"], perm=[0, 2, 1]),
             helper.make_node("LayerNormalization", ["feat", "ln0_s", "ln0_b"], ["feat_n"], axis=-1),
             helper.make_node("MatMul", ["feat_n", "proj_w"], ["p0"]), helper.make_node("Add", ["p0", "proj_b"], ["h0"]),
             helper.make_node("Transpose", ["h0"], ["h0_t"], perm=[0, 2, 1]),
             helper.make_node("Conv", ["h0_t", "pos_w", "pos_b"], ["pc"], kernel_shape=[8], pads=[4, 4], group=4),
             helper.make_node("Slice", ["pc", "starts", "ends", "axis2"], ["pc_trim"]),
             *_gelu("pc_trim", "pos", "g2"),
             helper.make_node("Transpose", ["pos"], ["pos_t"], perm=[0, 2, 1]),
             helper.make_node("Add", ["h0", "pos_t"], ["h1"]),
             helper.make_node("LayerNormalization", ["h1", "ln1_s", "ln1_b"], ["h1n"], axis=-1),
             helper.make_node("MatMul", ["h1n", "q_w"], ["q"]), helper.make_node("MatMul", ["h1n", "k_w"], ["k"]),
             helper.make_node("MatMul", ["h1n", "v_w"], ["v"]),
             helper.make_node("Mul", ["q", "scale"], ["qs"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["qs", "kt"], ["scores"]),
             helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
             helper.make_node("MatMul", ["probs", "v"], ["ctx"]), helper.make_node("MatMul", ["ctx", "o_w"], ["att"]),
             helper.make_node("Add", ["h1", "att"], ["h2"]),
             helper.make_node("LayerNormalization", ["h2", "ln2_s", "ln2_b"], ["h2n"], axis=-1),
             helper.make_node("MatMul", ["h2n", "ff1_w"], ["u"]), *_gelu("u", "ug", "g3"),
             helper.make_node("MatMul", ["ug", "ff2_w"], ["dn"]), helper.make_node("Add", ["h2", "dn"], ["hidden"])]
    g = helper.make_graph(nodes, "wav2vec2_like",
                          [helper.make_tensor_value_info("input_values", TensorProto.FLOAT, [1, SAMPLES])],
                          [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_wav2vec2_style_encoder_matches_onnxruntime(plan):
    model = _model()
    x = {"input_values": RNG.standard_normal((1, SAMPLES)).astype(np.float32)}
    (ref,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)
    got = adreno_mlir.compile(model, **PLANS[plan]).run(x)["hidden"]
    assert got.shape == ref.shape == (1, 159, D)
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    assert err <= (2e-2 if plan.startswith("fp16") else 1e-4), err
