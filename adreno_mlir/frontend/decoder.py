"""Decoders in onnxruntime-genai's format, bound for generation (issue 29).

onnxruntime-genai's model builder writes one graph for prefill and decode: `input_ids [B, S]`,
`attention_mask [B, T]`, `past_key_values.i.{key,value} [B, kv_heads, P, D]` in, `logits
[B, S, V]` and `present.i.{key,value} [B, kv_heads, T, D]` out, each past/present pair the
cache of one `GroupQueryAttention`. onnxruntime-genai itself runs it with
`past_present_share_buffer`: past and present are one buffer of the maximum context L, the
mask is [B, L], and GroupQueryAttention writes the S new rows at the positions the mask's
sum gives (seqlens_k + 1 - S ... seqlens_k).

`bind_decoder` makes that form static, for one program per token count S (the decode
program S = 1, the prefill program S = the chunk):

- B = 1, S fixed, every past bound to [1, kv_heads, L, D]; present = past (state: the
  cache stays on the device, `graph.kv_cache_write` writes the new rows in place);
- the attention mask is no input any more: a run-time `position` (int, [1]: the tokens
  already in the cache) computes it on device, mask[j] = j < position + S, so per step
  only the token ids and the position go in. The graph's own mask arithmetic (ReduceSum,
  Sub, Cast) then gives GroupQueryAttention its seqlens_k as before.

`decoder_signature` checks that a model is such a decoder and says why not otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from adreno_mlir.frontend.onnx_importer import CONTRIB_DOMAIN, FrontendError

from adreno_mlir.generation import POSITION, DecoderSignature  # noqa: F401 - the compiler-free half, re-exported


def genai_config(model_path: str | Path | None) -> dict | None:
    """onnxruntime-genai's `genai_config.json` of a model file: `<stem>.genai_config.json`
    or `genai_config.json` beside it (None if there is none)."""
    if model_path is None:
        return None
    p = Path(model_path)
    for cand in (p.with_name(p.stem + ".genai_config.json"), p.with_name("genai_config.json")):
        if cand.is_file():
            try:
                return json.loads(cand.read_text())
            except (OSError, json.JSONDecodeError) as e:
                raise FrontendError(f"{cand}: cannot read onnxruntime-genai's config ({e})") from None
    return None


def _static_dims(vi: onnx.ValueInfoProto) -> list[int | str | None]:
    out = []
    for d in vi.type.tensor_type.shape.dim:
        out.append(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or None))
    return out


def decoder_signature(model: onnx.ModelProto, config: dict | None = None) -> DecoderSignature:
    """The decoder interface of `model` (names from onnxruntime-genai's `config` when
    given, else its defaults); a FrontendError naming what is missing or unsupported if the
    model is not a decoder this compiler can generate with."""
    g = model.graph
    dec = ((config or {}).get("model") or {}).get("decoder") or {}
    names_in, names_out = dec.get("inputs") or {}, dec.get("outputs") or {}
    ids_name = names_in.get("input_ids", "input_ids")
    mask_name = names_in.get("attention_mask", "attention_mask")
    past_k, past_v = names_in.get("past_key_names", "past_key_values.%d.key"), names_in.get(
        "past_value_names", "past_key_values.%d.value")
    logits_name = names_out.get("logits", "logits")
    pres_k, pres_v = names_out.get("present_key_names", "present.%d.key"), names_out.get(
        "present_value_names", "present.%d.value")
    inits = {i.name for i in g.initializer}
    inputs = {vi.name: vi for vi in g.input if vi.name not in inits}
    outputs = {vi.name: vi for vi in g.output}
    what = "a decoder in onnxruntime-genai's format (input_ids, attention_mask, past_key_values.N.key/value in; " \
        "logits, present.N.key/value out)"
    for name, table, kind in ((ids_name, inputs, "input"), (mask_name, inputs, "input"),
                              (logits_name, outputs, "output")):
        if name not in table:
            raise FrontendError(f"the model has no {kind} '{name}', so it is not {what}; its inputs are "
                                f"{sorted(inputs)}, its outputs {sorted(outputs)}")
    caches = []
    layer = 0
    while (past_k % layer) in inputs:
        for past_fmt, pres_fmt in ((past_k, pres_k), (past_v, pres_v)):
            past, present = past_fmt % layer, pres_fmt % layer
            if past not in inputs or present not in outputs:
                raise FrontendError(f"layer {layer}: the model has {'no input ' + repr(past) if past not in inputs else ''}"
                                    f"{'no output ' + repr(present) if present not in outputs else ''}; {what}")
            caches.append((past, present))
        layer += 1
    if not caches:
        raise FrontendError(f"the model has no input '{past_k % 0}', so it is not {what}")
    extra = sorted(set(inputs) - {ids_name, mask_name} - {p for p, _ in caches})
    if extra:
        raise FrontendError(f"the decoder has inputs {extra} besides input_ids, attention_mask and the caches; "
                            "generation supports onnxruntime-genai's GroupQueryAttention decoders, which compute "
                            "positions from the attention mask (export without position_ids)")
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in g.node:
        for i in node.input:
            readers.setdefault(i, []).append(node)
    gqa_of: dict[str, onnx.NodeProto] = {}
    for past, present in caches:
        rs = readers.get(past, [])
        node = rs[0] if len(rs) == 1 else None
        if (node is None or node.domain != CONTRIB_DOMAIN or node.op_type != "GroupQueryAttention"
                or list(node.input[3:5]).count(past) != 1
                or present not in list(node.output[1:3])
                or list(node.input[3:5]).index(past) != list(node.output[1:3]).index(present)):
            raise FrontendError(f"cache '{past}' must be read by exactly one com.microsoft GroupQueryAttention "
                                f"(its past_key or past_value) whose matching present output is '{present}'; "
                                "generation keeps that pair in one device buffer")
        gqa_of[past] = node
    first = gqa_of[caches[0][0]]
    attrs = {a.name: helper.get_attribute_value(a) for a in first.attribute}
    kv_heads = int(attrs.get("kv_num_heads", 0))
    dims = _static_dims(inputs[caches[0][0]])
    if len(dims) != 4:
        raise FrontendError(f"cache '{caches[0][0]}' has rank {len(dims)}; expected [batch, kv_heads, past, head_size]")
    head_dim = dims[3] if isinstance(dims[3], int) else dec.get("head_size")
    cos_name = first.input[7] if len(first.input) > 7 else ""
    cos = next((i for i in g.initializer if i.name == cos_name), None)
    if cos is None:
        raise FrontendError("GroupQueryAttention has no constant cos_cache: generation needs the rotary tables "
                            "inside the model (do_rotary = 1 with cos_cache/sin_cache initializers)")
    max_positions = int(cos.dims[0])
    if not isinstance(head_dim, int):
        head_dim = 2 * int(cos.dims[1])
    vocab = _static_dims(outputs[logits_name])[-1]
    if not isinstance(vocab, int):
        raise FrontendError(f"output '{logits_name}' has no static vocabulary extent: {_static_dims(outputs[logits_name])}")
    mc = (config or {}).get("model") or {}
    eos = mc.get("eos_token_id")
    eos = tuple(int(e) for e in (eos if isinstance(eos, list) else [] if eos is None else [eos]))
    return DecoderSignature(ids_name, mask_name, logits_name, tuple(caches), kv_heads, int(head_dim), int(vocab),
                            max_positions, layer, eos, mc.get("bos_token_id"))


def bind_decoder(copy: onnx.ModelProto, sig: DecoderSignature, max_context: int, tokens: int) -> None:
    """Rewrite the importer's copy of a decoder graph (in place) into its static
    shared-buffer form for `tokens` new tokens a run and a cache of `max_context` rows:
    the attention mask computed from the run-time `position` input, every input bound."""
    if max_context > sig.max_positions:
        raise FrontendError(f"max_context = {max_context} is more than the model's rotary tables hold "
                            f"({sig.max_positions} positions, cos_cache's rows)")
    if not 1 <= tokens <= max_context:
        raise FrontendError(f"{tokens} tokens per run do not fit a context of {max_context}")
    g = copy.graph
    mask_vi = next(vi for vi in g.input if vi.name == sig.attention_mask)
    mask_type = mask_vi.type.tensor_type.elem_type
    keep = [vi for vi in g.input if vi.name != sig.attention_mask]
    del g.input[:]
    g.input.extend(keep)
    g.input.append(helper.make_tensor_value_info(POSITION, TensorProto.INT64, [1]))
    pre = "adreno_generation"
    nodes = [
        helper.make_node("Constant", [], [f"{pre}/range"], value=numpy_helper.from_array(
            np.arange(max_context, dtype=np.int64).reshape(1, max_context), f"{pre}/range")),
        helper.make_node("Constant", [], [f"{pre}/tokens"], value=numpy_helper.from_array(
            np.array([tokens], np.int64), f"{pre}/tokens")),
        helper.make_node("Add", [POSITION, f"{pre}/tokens"], [f"{pre}/end"], name=f"{pre}/End"),
        helper.make_node("Less", [f"{pre}/range", f"{pre}/end"], [f"{pre}/valid"], name=f"{pre}/Mask"),
        helper.make_node("Cast", [f"{pre}/valid"], [sig.attention_mask], to=mask_type, name=f"{pre}/MaskCast"),
    ]
    rest = list(g.node)
    del g.node[:]
    g.node.extend(nodes + rest)

    def set_dims(vi: onnx.ValueInfoProto, dims: list[int]) -> None:
        shape = vi.type.tensor_type.shape
        del shape.dim[:]
        for d in dims:
            shape.dim.add().dim_value = int(d)

    pasts = {p for p, _ in sig.caches}
    presents = {q for _, q in sig.caches}
    cache_shape = [1, sig.kv_heads, max_context, sig.head_dim]
    for vi in g.input:
        if vi.name == sig.input_ids:
            set_dims(vi, [1, tokens])
        elif vi.name in pasts:
            set_dims(vi, cache_shape)
    for vi in g.output:
        if vi.name in presents:
            set_dims(vi, cache_shape)
        elif vi.name == sig.logits:
            set_dims(vi, [1, tokens, sig.vocab])
    del g.value_info[:]  # the bound shapes are inferred again


PROGRAMS = ("decode", "prefill")
DEFAULT_MAX_CONTEXT = 512


def default_max_context(sig: DecoderSignature, config: dict | None) -> int:
    """The cache's rows when none are asked for: the genai_config's context_length, at most
    DEFAULT_MAX_CONTEXT and at most the rotary tables' rows."""
    ctx = ((config or {}).get("model") or {}).get("context_length") or DEFAULT_MAX_CONTEXT
    return min(int(ctx), DEFAULT_MAX_CONTEXT, sig.max_positions)


def import_decoder_program(model, program: str, max_context: int, prefill_chunk: int = 64, config: dict | None = None):
    """The graph module of one of a decoder's two generation programs ("decode": one token a
    run, "prefill": `prefill_chunk`), over caches of `max_context` rows: what
    `compile_decoder` compiles, for `analyze` and `tune` (`--decoder decode|prefill`)."""
    from adreno_mlir.frontend.onnx_importer import import_onnx, load_model

    if program not in PROGRAMS:
        raise FrontendError(f"unknown decoder program {program!r}; choose {' or '.join(PROGRAMS)}")
    path = model if isinstance(model, (str, Path)) else None
    m = load_model(model)
    sig = decoder_signature(m, config if config is not None else genai_config(path))
    return import_onnx(m, decoder=(sig, max_context, 1 if program == "decode" else prefill_chunk))
