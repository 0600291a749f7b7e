"""Generation with onnxruntime-genai decoders (issue 29, adreno_mlir/generation.py): a prefill
and a decode program sharing weights and a KV cache that lives on the device, against
onnxruntime on the CPU running the same ONNX graph the ordinary way (the past growing by one
token a step, copied in and out).

Both shared decoders (`shared/models/llm`, int4 and fp32) and two small decoders built here
with onnx.helper (other head counts, biases on the QKV projection, a packed 8-bit QKV
MatMulNBits with a bias, interleaved rotary, tied embeddings) are checked step by step: every
generated token's logits within 1e-3 of the largest reference logit, and the same greedy
tokens (the shared decoders for 64 steps). The int4 reference runs at accuracy_level 0 (see
tests/test_genai_decoders.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import adreno_mlir
from adreno_mlir.errors import AdrenoError, InputError
from tests.conftest import LLM, materialized_model
from tests.test_matmul_nbits import quantize
from tests.test_oclgrind import _describe, oclgrind_env, run_under_oclgrind  # noqa: F401 - fixture

REL_TOL = 1e-3
NCHW = {"textures": False, "layout": "nchw"}


def _decoder_path(name: str):
    if not (LLM / f"{name}.onnx").exists():
        pytest.fail(f"{LLM / (name + '.onnx')} is missing; set ADRENO_SHARED to the shared/ folder")
    return materialized_model(name, LLM)


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for node in m.graph.node:  # float32 arithmetic in onnxruntime's MatMulNBits (not int8 activations)
        for a in node.attribute:
            if a.name == "accuracy_level":
                a.i = 0
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def reference_generation(model: onnx.ModelProto, sig, prompt: list[int], steps: int):
    """onnxruntime's greedy generation: the logits of each generated token and the tokens."""
    sess = _session(model)
    names = [o.name for o in sess.get_outputs()]
    feeds = {sig.input_ids: np.array([prompt], np.int64), sig.attention_mask: np.ones((1, len(prompt)), np.int64)}
    for past, _ in sig.caches:
        feeds[past] = np.zeros((1, sig.kv_heads, 0, sig.head_dim), np.float32)
    logits, tokens, total = [], [], len(prompt)
    for _ in range(steps):
        outs = dict(zip(names, sess.run(None, feeds)))
        last = outs[sig.logits][0, -1]
        logits.append(last)
        tokens.append(int(last.argmax()))
        total += 1
        feeds = {sig.input_ids: np.array([[tokens[-1]]], np.int64),
                 sig.attention_mask: np.ones((1, total), np.int64)}
        for past, present in sig.caches:
            feeds[past] = outs[present]
    return np.stack(logits), tokens


def check_against_reference(got, ref_logits, ref_tokens):
    """Per step: logits within REL_TOL of the largest reference logit; tokens equal up to a
    step where the reference's top two logits are closer than the tolerance (a tie)."""
    for step, (ours, ref) in enumerate(zip(got.logits, ref_logits)):
        tol = REL_TOL * np.abs(ref).max()
        assert np.abs(ours - ref).max() <= tol, f"step {step}: {np.abs(ours - ref).max():.3g} > {tol:.3g}"
        if got.tokens[step] != ref_tokens[step]:
            top2 = np.sort(ref)[-2:]
            assert top2[1] - top2[0] < tol, f"step {step}: token {got.tokens[step]} vs onnxruntime's {ref_tokens[step]}"
            return
    assert got.tokens == ref_tokens[:len(got.tokens)]


PLANS = {"nchw": NCHW, "textures": {"textures": True},
         # the GPU schedules (64 work-items a work-group, the cache split over work-groups) on PoCL
         "gpu_schedules": {"textures": True, "target": "nvidia-h200"}}


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("name", ["llama_tiny_fp32", "llama_tiny_int4"])
def test_shared_decoder_generates_onnxruntimes_64_greedy_tokens(name, plan):
    path = _decoder_path(name)
    dec = adreno_mlir.compile_decoder(path, max_context=128, prefill_chunk=16, **PLANS[plan])
    prompt = np.random.default_rng(1).integers(3, dec.vocab, 21).tolist()  # a chunk, and a padded one
    got = dec.generate(prompt, 64, stop_at_eos=False)
    assert len(got.tokens) == 64 and got.logits.shape == (64, dec.vocab) and got.stop_reason == "max_new_tokens"
    ref_logits, ref_tokens = reference_generation(onnx.load(str(path)), dec.signature, prompt, 64)
    check_against_reference(got, ref_logits, ref_tokens)
    assert got.ttft_ms > 0 and got.prefill_tok_s > 0 and got.decode_tok_s > 0
    # one attention op per layer, three kernels at most (update, attention, combine of the splits)
    kernels = [la.kernel for la in dec.decode.launch_plan.launches]
    assert sum(k.startswith("gqa_update") for k in kernels) == 4
    assert any("split" in k for k in kernels) == (plan == "gpu_schedules")


def test_a_decode_step_copies_only_the_token_the_position_and_the_logits():
    dec = adreno_mlir.compile_decoder(_decoder_path("llama_tiny_int4"), max_context=64, prefill_chunk=8,
                                      runtime="pyopencl", **NCHW)  # the pyopencl loop's copies and buffers
    dec.reset()
    dec.feed([5, 6, 7])
    before = dict(dec.memory.transfers)
    for t in (9, 10, 11):
        dec.step(t)
    moved = {k: dec.memory.transfers[k] - before[k] for k in before}
    assert moved == {"to_device": 3 * (4 + 4), "to_host": 3 * dec.vocab * 4}  # int32 id + position; f32 logits
    # the caches are state: neither fed nor returned, one device buffer per layer's key and value
    assert dec.decode.input_names == ["input_ids", "position"] and dec.decode.output_names == ["logits"]
    assert set(dec.memory.states) == {past for past, _ in dec.signature.caches}
    assert len(dec.decode.launch_plan.states) == 8
    # the two programs upload every weight once
    pre, de = dec.prefill.executable, dec.decode.executable
    shared = {w.name for w in pre.plan.weights} & {w.name for w in de.plan.weights}
    assert shared and all(pre.weights[i] is de.weights[j]
                          for i, w in enumerate(pre.plan.weights) for j, v in enumerate(de.plan.weights)
                          if w.name == v.name == next(iter(shared)))


def test_f16_kv_cache_halves_the_cache_and_still_gives_onnxruntimes_64_greedy_tokens():
    """kv_cache="f16" (the kv-cache-storage pass): each cache a state buffer of halves, read and
    written with vload_half / vstore_half (no cl_khr_fp16), the rounding within the tolerance."""
    path = _decoder_path("llama_tiny_int4")
    dec = adreno_mlir.compile_decoder(path, max_context=128, prefill_chunk=16, kv_cache="f16", runtime="pyopencl",
                                      **NCHW)
    prompt = np.random.default_rng(1).integers(3, dec.vocab, 21).tolist()
    got = dec.generate(prompt, 64, stop_at_eos=False)
    check_against_reference(got, *reference_generation(onnx.load(str(path)), dec.signature, prompt, 64))
    sig = dec.signature
    cache = dec.memory.read_state(sig.caches[0][0])
    assert cache.dtype == np.float16 and cache.size == sig.kv_heads * 128 * sig.head_dim
    assert np.abs(cache.reshape(sig.kv_heads, 128, sig.head_dim)[:, :len(prompt) + 63]).max(-1).min() > 0
    for program in (dec.prefill, dec.decode):
        assert "kv-cache-storage{element=f16}" in program.pipeline
        assert {t.dtype for t in program.launch_plan.inputs if t.name in dict(sig.caches)} == {"f16"}
        assert "vload_half4(" in program.source and "vstore_half(" in program.source
        assert "cl_khr_fp16" not in program.source
    assert "f16 KV cache" in dec.decode.plan
    with pytest.raises(AdrenoError, match="kv_cache must be 'f32' or 'f16'"):
        adreno_mlir.compile_decoder(path, max_context=16, prefill_chunk=4, kv_cache="bf16", **NCHW)


def test_prefill_is_tiled_over_the_chunk_and_matches_one_token_a_work_group():
    """The prefill program's attention by default: the kernel tiled over the chunk (tile
    tokens a work-group, K/V tiles in local memory); against one token a work-group (tile 0)
    and onnxruntime, for a prompt of several chunks and a padded one."""
    path = _decoder_path("llama_tiny_fp32")
    m = onnx.load(str(path))
    nodes = [n.name for n in m.graph.node if n.op_type == "GroupQueryAttention"]
    prompt = np.random.default_rng(3).integers(3, 8000, 45).tolist()
    got = {}
    for label, cfg in (("tiled", {"tile": 4, "kv_tile": 8}), ("default", None), ("per_token", {"tile": 0})):
        dec = adreno_mlir.compile_decoder(path, max_context=64, prefill_chunk=16, runtime="pyopencl", **NCHW,
                                          overrides=None if cfg is None else {f"loc:{n}": cfg for n in nodes})
        assert ("gqa_prefill_g4_" in dec.prefill.source) == (label != "per_token")
        assert "gqa_prefill" not in dec.decode.source  # one token a run: the split kernel
        got[label] = dec.generate(prompt, 4, stop_at_eos=False)
    ref_logits, ref_tokens = reference_generation(m, dec.signature, prompt, 4)
    for label, res in got.items():
        check_against_reference(res, ref_logits, ref_tokens)
    np.testing.assert_allclose(got["tiled"].logits, got["per_token"].logits, rtol=0, atol=1e-4)


def test_attention_local_memory_counts_the_reduction_partials(tmp_path):
    """A work-group of the split attention keeps G queries, G scores a row of its split and,
    with several work-items, 2 x G x items partials of its reductions; a schedule whose
    partials leave too little room for its rows is refused with the fewest splits that fit."""
    func = (
        'func.func @f(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x8192x16xf32>, %pv: tensor<1x2x8192x16xf32>, '
        '%start: tensor<1x1xf32>) -> tensor<1x1x128xf32> attributes {graph.inputs = ["qkv", "past_key", '
        '"past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = '
        '"past_value"}} {\n  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 8 : i64, '
        'kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32, kernel_config = CONFIG} : tensor<1x1x192xf32> cache '
        'tensor<1x2x8192x16xf32>, tensor<1x2x8192x16xf32> at tensor<1x1xf32> -> tensor<1x1x128xf32>\n'
        '  func.return %o : tensor<1x1x128xf32>\n}\n')
    pipeline = "graph-fuse,select-kernel-config{target=nvidia-h200},convert-graph-to-opencl"

    def opt(config: str):
        path = tmp_path / "attn.mlir"
        path.write_text(func.replace("CONFIG", config))
        return subprocess.run([sys.executable, "-m", "adreno_mlir.opt", str(path), "-p", pipeline],
                              capture_output=True, text=True)

    # 4 heads x (16 + 512 rows) = 2112 floats fit alone, not with 2 x 4 x 256 = 2048 partials
    ok = opt("{splits = 16 : i64, items = 8 : i64}")
    assert ok.returncode == 0, ok.stderr
    refused = opt("{splits = 16 : i64, items = 256 : i64}")
    assert refused.returncode == 1
    assert ("splits = 16 leaves more cache rows per work-group than local memory holds beside 256 work-items' "
            "partials; at least 32") in refused.stderr
    assert opt("{splits = 32 : i64, items = 256 : i64}").returncode == 0


def test_cache_rows_are_written_at_the_position():
    """After a prompt of 3 and 2 steps, rows 0-4 of the cache hold keys and rows 5+ zeros."""
    dec = adreno_mlir.compile_decoder(_decoder_path("llama_tiny_fp32"), max_context=16, prefill_chunk=4,
                                      runtime="pyopencl", **NCHW)  # reads the pyopencl cache buffer
    dec.reset()
    dec.feed([5, 6, 7])
    dec.step(8)
    dec.step(9)
    sig = dec.signature
    cache = dec.memory.read_state(sig.caches[0][0]).reshape(sig.kv_heads, 16, sig.head_dim)
    assert (np.abs(cache[:, :5]).max(-1) > 0).all() and not cache[:, 5:].any()
    assert dec.position == 5


def _tiny_decoder(variant: str):
    """A one-layer decoder in onnxruntime-genai's format built with onnx.helper.

    "grouped": 4 query heads over 1 KV head, separate q/k/v projections with biases, rotary
    by halves, tied embeddings (the lm_head is the embedding table transposed).
    "packed": 2 heads and 2 KV heads, one packed QKV MatMulNBits (8 bits, blocks of 16, a
    bias), interleaved rotary, its own lm_head.
    "tied_int4": as "grouped", with the embedding table quantized to 4 bits in blocks of 32
    (GatherBlockQuantized) and the lm_head a MatMulNBits of the same bytes and scales (tied
    embeddings, as onnxruntime-genai writes them)."""
    rng = np.random.default_rng(3)
    vocab, hidden, max_pos = 97, 64, 64  # onnxruntime: head sizes multiples of 16
    h, kvh = (2, 2) if variant == "packed" else (4, 1)
    d = hidden // h
    inits, nodes = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, outs, domain="", **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=outs[0] + "_node", domain=domain, **attrs))
        return outs[0]

    emb = rng.standard_normal((vocab, hidden)).astype(np.float32)
    init("embed", emb)
    init("one", np.array([1], np.int64))
    init("axis1", np.array([1], np.int64))
    init("idx1", np.array(1, np.int64))
    # the mask subgraph of the model builder: seqlens_k = sum(mask) - 1, total = mask's extent
    node("ReduceSum", ["attention_mask", "axis1"], ["mask_sum"], keepdims=0)
    node("Sub", ["mask_sum", "one"], ["mask_sub"])
    node("Cast", ["mask_sub"], ["seqlens_k"], to=TensorProto.INT32)
    node("Shape", ["attention_mask"], ["mask_shape"])
    node("Gather", ["mask_shape", "idx1"], ["total_len"], axis=0)
    node("Cast", ["total_len"], ["total_seq"], to=TensorProto.INT32)
    if variant == "tied_int4":
        for t in quantize(emb, 4, 32, None):  # B [vocab, blocks, 16] and scales: the table's rows in blocks of 32
            t.name = "embed_" + t.name
            inits.append(t)
        b = next(t for t in inits if t.name == "embed_B")
        data = numpy_helper.to_array(b).reshape(vocab, hidden // 2)
        init("embed_q4", data)  # GatherBlockQuantized's [rows, columns / 2] view of the same bytes
        init("embed_scales_2d", numpy_helper.to_array(next(t for t in inits if t.name == "embed_scales"))
             .reshape(vocab, hidden // 32))
        x = node("GatherBlockQuantized", ["embed_q4", "input_ids", "embed_scales_2d"], ["x0"], domain="com.microsoft",
                 bits=4, block_size=32, gather_axis=0, quantize_axis=1)
    else:
        x = node("Gather", ["embed", "input_ids"], ["x0"], axis=0)
    init("gamma", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    xn = node("SimplifiedLayerNormalization", [x, "gamma"], ["x_norm"], axis=-1, epsilon=1e-5)
    cos_sin = rng.uniform(0, 2 * np.pi, (max_pos, d // 2))
    init("cos_cache", np.cos(cos_sin).astype(np.float32))
    init("sin_cache", np.sin(cos_sin).astype(np.float32))
    past = ["past_key_values.0.key", "past_key_values.0.value"]
    if variant != "packed":
        qkv = []
        for nm, width in (("q", h * d), ("k", kvh * d), ("v", kvh * d)):
            init(f"w_{nm}", (rng.standard_normal((hidden, width)) / np.sqrt(hidden)).astype(np.float32))
            init(f"b_{nm}", (0.1 * rng.standard_normal(width)).astype(np.float32))
            qkv.append(node("Add", [node("MatMul", [xn, f"w_{nm}"], [f"{nm}_mm"]), f"b_{nm}"], [f"{nm}_proj"]))
        gqa_in = [*qkv]
        rotary = 0
    else:
        width = (h + 2 * kvh) * d
        w = (rng.standard_normal((width, hidden)) / np.sqrt(hidden)).astype(np.float32)
        for t in quantize(w, 8, 16, None):
            t.name = "qkv_" + t.name
            inits.append(t)
        init("qkv_bias", (0.1 * rng.standard_normal(width)).astype(np.float32))
        gqa_in = [node("MatMulNBits", [xn, "qkv_B", "qkv_scales", "", "", "qkv_bias"], ["qkv_proj"],
                       domain="com.microsoft", K=hidden, N=width, bits=8, block_size=16), "", ""]
        rotary = 1
    attn = node("GroupQueryAttention", [*gqa_in, *past, "seqlens_k", "total_seq", "cos_cache", "sin_cache"],
                ["attn", "present.0.key", "present.0.value"], domain="com.microsoft", num_heads=h, kv_num_heads=kvh,
                do_rotary=1, rotary_interleaved=rotary)
    init("w_o", (rng.standard_normal((h * d, hidden)) / np.sqrt(hidden)).astype(np.float32))
    y = node("Add", [x, node("MatMul", [attn, "w_o"], ["o_proj"])], ["resid"])
    init("gamma_f", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    yn = node("SimplifiedLayerNormalization", [y, "gamma_f"], ["y_norm"], axis=-1, epsilon=1e-5)
    if variant == "tied_int4":
        node("MatMulNBits", [yn, "embed_B", "embed_scales"], ["logits"], domain="com.microsoft", K=hidden, N=vocab,
             bits=4, block_size=32)
    else:
        init("lm_head", emb.T.copy() if variant == "grouped" else rng.standard_normal((hidden, vocab)).astype(np.float32))
        node("MatMul", [yn, "lm_head"], ["logits"])
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])]
    ins += [helper.make_tensor_value_info(p, TensorProto.FLOAT, ["batch_size", kvh, "past_sequence_length", d])
            for p in past]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", vocab])]
    outs += [helper.make_tensor_value_info(p, TensorProto.FLOAT, ["batch_size", kvh, "total_sequence_length", d])
             for p in ("present.0.key", "present.0.value")]
    g = helper.make_graph(nodes, "decoder", ins, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.parametrize("schedule", [None, {"splits": 4, "items": 8}], ids=["default", "splits4_items8"])
@pytest.mark.parametrize("variant", ["grouped", "packed", "tied_int4"])
def test_small_decoders_of_other_shapes_generate_onnxruntimes_tokens(variant, schedule):
    model = _tiny_decoder(variant)
    dec = adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, **NCHW,
                                      overrides=None if schedule is None else {"loc:attn_node": schedule})
    if schedule is not None:
        assert "gqa_combine_split4" in dec.decode.source and "gqa_attention_g" in dec.prefill.source
    prompt = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46]  # a chunk and a padded one
    got = dec.generate(prompt, 24, stop_at_eos=False)
    ref_logits, ref_tokens = reference_generation(model, dec.signature, prompt, 24)
    check_against_reference(got, ref_logits, ref_tokens)
    if variant == "packed":
        assert "qmatmul_q8b16" in dec.decode.source


def test_prompt_tail_past_the_last_whole_chunk_runs_through_the_decode_program():
    """A context of 20 with chunks of 8: a 19-token prompt prefills 8 + 8 (position 16 + 8
    would pass the cache), then 3 single steps; one token is left to generate, then the
    context is full: a warning and stop_reason "max_context"."""
    model = _tiny_decoder("grouped")
    dec = adreno_mlir.compile_decoder(model, max_context=20, prefill_chunk=8, **NCHW)
    prompt = list(range(5, 24))
    with pytest.warns(UserWarning, match="context of 20 tokens is full"):
        got = dec.generate(prompt, 10, stop_at_eos=False)
    assert got.stop_reason == "max_context" and len(got.tokens) == 2
    ref_logits, ref_tokens = reference_generation(model, dec.signature, prompt, 2)
    check_against_reference(got, ref_logits, ref_tokens)


def test_bad_generation_inputs_are_named():
    dec = adreno_mlir.compile_decoder(_tiny_decoder("grouped"), max_context=16, prefill_chunk=4, **NCHW)
    with pytest.raises(InputError, match=r"17 tokens after 0 do not fit the context of 16"):
        dec.generate(list(range(17)), 2)
    with pytest.raises(InputError, match=r"ids \[97, -1\] outside the vocabulary \[0, 97\)"):
        dec.generate([1, 97, -1], 2)
    with pytest.raises(InputError, match="the prompt is empty"):
        dec.generate([], 2)
    with pytest.raises(InputError, match="temperature must be positive"):
        dec.generate([1], 2, greedy=False, temperature=0.0)


def test_models_that_are_not_decoders_are_refused_with_the_reason(tmp_path):
    from adreno_mlir.examples import write_example

    path = write_example("tinynet", tmp_path / "t.onnx", 0)
    with pytest.raises(AdrenoError, match="has no input 'input_ids', so it is not a decoder"):
        adreno_mlir.compile_decoder(path)
    model = _tiny_decoder("grouped")
    model.graph.input.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "s"]))
    with pytest.raises(AdrenoError, match=r"inputs \['position_ids'\] besides"):
        adreno_mlir.compile_decoder(model)
    with pytest.raises(AdrenoError, match="more than the model's rotary tables hold"):
        adreno_mlir.compile_decoder(_tiny_decoder("grouped"), max_context=65)


def test_sampling_is_seeded_and_stays_in_the_top_k():
    dec = adreno_mlir.compile_decoder(_tiny_decoder("packed"), max_context=32, prefill_chunk=4, **NCHW)
    a = dec.generate([1, 2, 3], 12, temperature=0.7, top_k=5, seed=11, stop_at_eos=False)
    b = dec.generate([1, 2, 3], 12, temperature=0.7, top_k=5, seed=11, stop_at_eos=False)
    assert a.tokens == b.tokens
    for tok, logits in zip(a.tokens, a.logits):
        assert tok in np.argsort(logits)[-5:]
    streamed = []
    dec.generate([1, 2, 3], 5, on_token=streamed.append, stop_at_eos=False)
    assert len(streamed) == 5


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_generate_cli_writes_tokens_json_and_logits(tmp_path):
    model = _tiny_decoder("grouped")
    path = tmp_path / "decoder.onnx"
    onnx.save(model, path)
    (tmp_path / "decoder.genai_config.json").write_text(json.dumps(
        {"model": {"eos_token_id": 7, "context_length": 48, "decoder": {}}}))
    out = _cli("generate", path, "--prompt-ids", "3,14,15,9", "--max-new-tokens", "6", "--ignore-eos",
               "--prefill-chunk", "4", "--json", tmp_path / "run.json", "--save-logits", tmp_path / "l.npy",
               "--textures", "off")
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "run.json").read_text())
    assert {"tokens", "ttft_ms", "prefill_tok_s", "decode_tok_s"} <= set(record)
    assert record["max_context"] == 48 and len(record["tokens"]) == 6
    logits = np.load(tmp_path / "l.npy")
    assert logits.shape == (6, 97) and logits.dtype == np.float32
    assert record["tokens"] == [int(t) for t in logits.argmax(-1)]
    assert "tokens: " + ",".join(map(str, record["tokens"])) in out.stdout and "decode" in out.stdout
    ref_logits, ref_tokens = reference_generation(model, adreno_mlir.compile_decoder(
        model, max_context=8, prefill_chunk=4, **NCHW).signature, [3, 14, 15, 9], 6)
    assert record["tokens"] == ref_tokens


def test_generate_cli_prompt_text_uses_the_tokenizer_beside_the_model(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")  # a test dependency (pyproject's test extra)
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = {f"w{i}": i for i in range(97)}
    tok = tokenizers.Tokenizer(WordLevel(words, unk_token="w0"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    path = tmp_path / "decoder.onnx"
    onnx.save(_tiny_decoder("packed"), path)
    out = _cli("generate", path, "--prompt", "w3 w14 w15", "--max-new-tokens", "3", "--max-context", "16",
               "--prefill-chunk", "2", "--textures", "off", "--json", tmp_path / "r.json")
    assert out.returncode == 0, out.stderr
    assert "text: w" in out.stdout
    assert json.loads((tmp_path / "r.json").read_text())["prompt_tokens"] == 3
    bad = _cli("generate", tmp_path / "missing.onnx", "--prompt-ids", "1")
    assert bad.returncode == 1 and "no such model file" in bad.stderr
    (tmp_path / "tokenizer.json").unlink()
    no_tok = _cli("generate", path, "--prompt", "w3")
    assert no_tok.returncode == 1 and "needs a tokenizer" in no_tok.stderr


@pytest.mark.parametrize("target", ["auto", "nvidia-h200"])
def test_decode_kernels_under_oclgrind_report_nothing(oclgrind_env, target):  # noqa: F811
    """The decoder's kernels (the cache writes at a run-time position, the attention's
    work-group reductions and splits with the GPU schedules; with the CPU's, the prefill tiled
    over the chunk and caches in halves) on Oclgrind's checked device: a prompt and steps up to
    the cache's last row, no invalid access or race."""
    script = f"""
import warnings
from tests.test_generation import _tiny_decoder
import adreno_mlir
dec = adreno_mlir.compile_decoder(_tiny_decoder("grouped"), max_context=12, prefill_chunk=4, device="oclgrind",
                                  textures=False, layout="nchw", cache=False, target="{target}",
                                  kv_cache="f16" if "{target}" == "auto" else "f32",
                                  overrides={{"loc:attn_node": {{"splits": 4, "items": 4}}}} if "{target}" != "auto" else None)
assert ("gqa_prefill_" in dec.prefill.source) == ("vload_half" in dec.decode.source) == ("{target}" == "auto")
print("device:", dec.decode.device_name)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    res = dec.generate([3, 4, 5, 6, 7, 8], 20, stop_at_eos=False)
print("TOKENS", len(res.tokens), res.stop_reason, "SPLITS", "gqa_combine_split4" in dec.decode.source)
"""
    out, reports = run_under_oclgrind(oclgrind_env, script)
    assert f"TOKENS 7 max_context SPLITS {target != 'auto'}" in out
    assert not reports, _describe(reports)


def test_a_decoder_with_its_weights_in_an_external_file(tmp_path):
    """onnxruntime-genai writes model.onnx + model.onnx.data; the checker then sees the
    weights as typed inputs (it reads no external data of a proto)."""
    model, saved = _tiny_decoder("packed"), _tiny_decoder("packed")  # onnx.save moves the saved one's data out
    onnx.save(saved, tmp_path / "model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx.data", size_threshold=0)
    dec = adreno_mlir.compile_decoder(tmp_path / "model.onnx", max_context=16, prefill_chunk=4, **NCHW)
    got = dec.generate([5, 6, 7], 4, stop_at_eos=False)
    ref_logits, ref_tokens = reference_generation(model, dec.signature, [5, 6, 7], 4)
    check_against_reference(got, ref_logits, ref_tokens)


def test_analyze_covers_the_decode_programs_kernels(tmp_path):
    """`adreno-mlir analyze --decoder decode`: the attention over the cache and the quantized
    GEMV are kernels with their bytes (the whole cache: the last position's cost)."""
    path = tmp_path / "decoder.onnx"
    onnx.save(_tiny_decoder("packed"), path)
    out = _cli("analyze", path, "--decoder", "decode", "--max-context", "40", "--target", "adreno-740", "--json",
               tmp_path / "a.json")
    assert out.returncode == 0, out.stderr
    kernels = json.loads((tmp_path / "a.json").read_text())["kernels"]
    kinds = {k["kind"]: k for k in kernels}
    assert {"gqa", "qgemm"} <= set(kinds)
    cache_bytes = 2 * 1 * 2 * 40 * 32 * 4  # key and value: [1, KVH 2, L 40, D 32] f32
    assert kinds["gqa"]["global_bytes"] >= cache_bytes and kinds["gqa"]["flops"] > 0
    bad = _cli("analyze", path, "--max-context", "40")
    assert bad.returncode == 1 and "give --decoder decode or prefill" in bad.stderr


@pytest.mark.slow
def test_tune_measures_the_decode_programs_attention(tmp_path):
    """`adreno-mlir tune --decoder decode` times the gqa and qgemm signatures of the decode
    program (the position input drawn inside the cache), and generate reads the database."""
    path = tmp_path / "decoder.onnx"
    onnx.save(_tiny_decoder("packed"), path)
    db = tmp_path / "t.db"
    out = _cli("tune", path, "--decoder", "decode", "--max-context", "32", "--db", db, "--trials", "2",
               "--no-progress", "--json", tmp_path / "t.json", "--textures", "off")
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "t.json").read_text())
    kinds = {r["kind"] for r in report["signatures"]}
    assert {"gqa", "qgemm"} <= kinds, kinds
    gen = _cli("generate", path, "--prompt-ids", "1,2,3", "--max-new-tokens", "3", "--max-context", "32",
               "--prefill-chunk", "4", "--tuning-db", db, "--textures", "off")
    assert gen.returncode == 0, gen.stderr
