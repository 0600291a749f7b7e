"""Decoders in onnxruntime-genai's format (issue 29): `shared/models/llm`'s Llama-architecture
decoders (int4 MatMulNBits and fp32) and small GroupQueryAttention models built here, at fixed
shapes (a past of P tokens, S new ones: `dims=`), against onnxruntime on the CPU: logits and
every layer's present key/value. GroupQueryAttention is written out in graph ops
(adreno_mlir/frontend/contrib_ops.py): rotary at the positions seqlens_k gives, grouped KV
heads, the causal mask; a padded row (valid length < T) gives NaN, not a different answer.

The int4 model's reference runs with accuracy_level 0: at the exported level 4 onnxruntime's
CPU kernel rounds the activations to int8 (1e-2 of the logits off float32 arithmetic), while
ours accumulates the dequantized weights in float32 (tolerance 1e-4 of max |ref| here)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from tests.conftest import LLM, materialized_model
from tests.test_native_runtime import cache, native_dir, run_env  # noqa: F401 - fixtures

B, S, P = 1, 8, 4
T = P + S
DIMS = {"batch_size": B, "sequence_length": S, "past_sequence_length": P, "total_sequence_length": T,
        "kv_cache_dim": 64}
REL_TOL = 1e-4


def _err(got, ref) -> float:
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / np.abs(ref).max())


def _decoder(name: str):
    if not (LLM / f"{name}.onnx").exists():
        pytest.fail(f"{LLM / (name + '.onnx')} is missing; set ADRENO_SHARED to the shared/ folder")
    return materialized_model(name, LLM)


def _feeds(layers: int = 4, kv_heads: int = 2, head_dim: int = 64, vocab: int = 8192, seed: int = 0):
    rng = np.random.default_rng(seed)
    feeds = {"input_ids": rng.integers(0, vocab, (B, S)).astype(np.int64), "attention_mask": np.ones((B, T), np.int64)}
    for i in range(layers):
        for kv in ("key", "value"):
            feeds[f"past_key_values.{i}.{kv}"] = rng.standard_normal((B, kv_heads, P, head_dim)).astype(np.float32)
    return feeds


def _reference(path, feeds, accuracy_level_0: bool = False):
    model = onnx.load(str(path))
    if accuracy_level_0:
        for node in model.graph.node:
            for a in node.attribute:
                if a.name == "accuracy_level":
                    a.i = 0
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


@pytest.mark.parametrize("plan", ["nchw", "textures"])
@pytest.mark.parametrize("name", ["llama_tiny_fp32", "llama_tiny_int4"])
def test_genai_decoder_matches_onnxruntime(name, plan):
    path = _decoder(name)
    feeds = _feeds()
    refs = _reference(path, feeds, accuracy_level_0=name.endswith("int4"))
    options = {"textures": False, "layout": "nchw"} if plan == "nchw" else {"textures": True}
    cm = adreno_mlir.compile(path, dims=DIMS, **options)
    got = cm.run(feeds)
    assert set(got) == set(refs)
    for k, ref in refs.items():
        assert got[k].shape == ref.shape, k
        assert _err(got[k], ref) <= REL_TOL, f"{name} {plan} {k}: {_err(got[k], ref):.2e}"
    # the next token a greedy decoder would pick, at every position
    assert (got["logits"].argmax(-1) == refs["logits"].argmax(-1)).all()
    if name.endswith("int4"):
        assert "qmatmul_q4b32" in cm.source


def test_a_padded_row_gives_nan_not_a_different_answer():
    """onnxruntime places the new keys after the valid length (seqlens_k + 1 - S), which a
    mask with zeros moves; the static form places them after all P: refused at run time as NaN."""
    cm = adreno_mlir.compile(_decoder("llama_tiny_fp32"), dims=DIMS)
    feeds = _feeds()
    feeds["attention_mask"][0, :2] = 0
    out = cm.run(feeds)
    assert np.isnan(out["logits"]).all() and np.isnan(out["present.0.key"]).all()


def _gqa_model(packed: bool, interleaved: bool, h: int = 4, kvh: int = 2, d: int = 16, s: int = 3, p: int = 5,
               scale: float = 0.0):
    """One GroupQueryAttention node with its inputs as model inputs (seqlens_k an int32 input)."""
    rng = np.random.default_rng(7)
    t = p + s
    cos = rng.uniform(-1, 1, (32, d // 2)).astype(np.float32)
    sin = rng.uniform(-1, 1, (32, d // 2)).astype(np.float32)
    inits = [numpy_helper.from_array(cos, "cos"), numpy_helper.from_array(sin, "sin"),
             numpy_helper.from_array(np.array(t, np.int32), "total")]
    if packed:
        ins = [helper.make_tensor_value_info("qkv", TensorProto.FLOAT, [1, s, (h + 2 * kvh) * d])]
        names = ["qkv", "", ""]
    else:
        ins = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, s, h * d]),
               helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, s, kvh * d]),
               helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, s, kvh * d])]
        names = ["q", "k", "v"]
    ins += [helper.make_tensor_value_info(nm, TensorProto.FLOAT, [1, kvh, p, d]) for nm in ("pk", "pv")]
    ins.append(helper.make_tensor_value_info("seqlens", TensorProto.INT32, [1]))
    node = helper.make_node("GroupQueryAttention", [*names, "pk", "pv", "seqlens", "total", "cos", "sin"],
                            ["o", "k_out", "v_out"], domain="com.microsoft", name="gqa", num_heads=h,
                            kv_num_heads=kvh, do_rotary=1, rotary_interleaved=int(interleaved), scale=scale)
    outs = [helper.make_tensor_value_info("o", TensorProto.FLOAT, [1, s, h * d]),
            helper.make_tensor_value_info("k_out", TensorProto.FLOAT, [1, kvh, t, d]),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1, kvh, t, d])]
    model = helper.make_model(helper.make_graph([node], "g", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    feeds = {i.name: rng.standard_normal([d_.dim_value for d_ in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in ins if i.name != "seqlens"}
    feeds["seqlens"] = np.array([t - 1], np.int32)
    return model, feeds


@pytest.mark.parametrize(("packed", "interleaved", "scale"), [(True, False, 0.0), (False, True, 0.0),
                                                              (False, False, 0.3)])
def test_group_query_attention_matches_onnxruntime(packed, interleaved, scale):
    model, feeds = _gqa_model(packed, interleaved, scale=scale)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    refs = sess.run(None, feeds)
    got = adreno_mlir.compile(model, textures=False, layout="nchw").run(feeds)
    for (k, v), ref in zip(got.items(), refs):
        assert _err(v, ref) <= 1e-5, k


def test_unsupported_group_query_attention_forms_name_the_attribute():
    model, _ = _gqa_model(True, False)
    model.graph.node[0].attribute.append(helper.make_attribute("local_window_size", 4))
    with pytest.raises(adreno_mlir.CompileError, match=r"node 'gqa' \(GroupQueryAttention\): local_window_size = 4"):
        adreno_mlir.compile(model)


def test_int4_decoder_through_the_c_runtime(native_dir, run_env, cache, tmp_path):  # noqa: F811
    """The int4 decoder as an artifact (format version 4: i32 weights; i32 inputs) run by
    `adreno-run`: its logits match onnxruntime's as the Python runtime's do."""
    import json

    from tests.test_native_runtime import run_c

    path = _decoder("llama_tiny_int4")
    art = tmp_path / "llm.adreno"
    adreno_mlir.compile(path, dims=DIMS, cache=cache, runtime="pyopencl").save(art)
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["format_version"] == 4
    feeds = _feeds()
    args = []
    for k, v in feeds.items():
        f = tmp_path / f"{k}.npy"
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    run_c(native_dir / "adreno-run", art, run_env, *args, "--output", tmp_path / "logits.npy", "--repeat", "1",
          "--warmup", "0")
    ref = _reference(path, feeds, accuracy_level_0=True)["logits"]
    got = np.load(tmp_path / "logits.npy").reshape(ref.shape)
    assert _err(got, ref) <= REL_TOL
