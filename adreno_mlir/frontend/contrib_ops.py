"""Importers of onnxruntime's operators outside the ONNX standard, as onnxruntime-genai's model
builder writes them into the decoders it exports (onnxruntime's docs/ContribOperators.md is
the specification, onnxruntime on the CPU the reference for every number):

- `SimplifiedLayerNormalization` (registered by onnxruntime in the default domain): the RMS
  normalization, a `graph.layer_norm {center = 0}` as ONNX's RMSNormalization.
- `com.microsoft.SkipSimplifiedLayerNormalization`: s = input + skip (+ bias), output 0 the
  RMS normalization of s, output 3 s itself (the residual stream the next layer adds to).
- `com.microsoft.MatMulNBits`: a matrix product by a weight quantized in blocks along K,
  one `graph.matmul_nbits` (bits, block size, zero points), its blocks kept packed.

Their output shapes come from stand-in nodes during ONNX shape inference
(onnx_importer._shape_stand_ins), which does not know these operators.
"""

from __future__ import annotations

import numpy as np

from xdsl.dialects.builtin import TensorType, f32

from adreno_mlir.dialects import graph
from adreno_mlir.frontend.onnx_importer import _emit, _Node, _rms_norm, contrib_importer, importer


def _rms(n: _Node, x, scale, epsilon: float):
    rank = len(graph.shape_of(x))
    return _emit(n, graph.LayerNormOp(
        operands=[x, scale, []], result_types=[TensorType(f32, list(graph.shape_of(x)))],
        properties={"axis": graph.IntegerAttr(rank - 1, 64), "epsilon": graph.f32_attr(epsilon),
                    "center": graph.IntegerAttr(0, 64)}))


def _unused_outputs(n: _Node, indices: tuple[int, ...], what: str) -> None:
    for i in indices:
        if len(n.proto.output) > i and n.proto.output[i] and n.imp.is_used(n.proto.output[i]):
            n.fail(f"output {i} ({what}, '{n.proto.output[i]}') is read by the model; only the normalized output "
                   "and the sum are supported")


@importer("SimplifiedLayerNormalization")
def _simplified_layer_norm(n: _Node):
    """onnxruntime's RMS normalization, ONNX RMSNormalization's semantics (the last axes from
    `axis`, default -1); output 1 (the inverse standard deviation, kept for training) is
    refused if read."""
    _unused_outputs(n, (1,), "inv_std_var")
    return _rms_norm(n)


@contrib_importer("SkipSimplifiedLayerNormalization")
def _skip_simplified_layer_norm(n: _Node):
    """s = input + skip (+ bias); output 0: RMS-normalize s over the last axis times gamma;
    output 3: s. Outputs 1 and 2 (mean, inverse standard deviation) are refused if read."""
    x, skip = n.input(0), n.input(1)
    xs = graph.shape_of(x)
    if graph.broadcast_shapes(graph.shape_of(skip), xs) != tuple(xs):
        n.fail(f"skip of shape {list(graph.shape_of(skip))} does not broadcast to the input's {list(xs)}")
    t = TensorType(f32, list(xs))
    total = _emit(n, graph.AddOp(x, skip, t))
    if n.has_input(3):
        total = _emit(n, graph.AddOp(total, n.input(3), t))
    _unused_outputs(n, (1, 2), "mean / inv_std_var")
    y = _rms(n, total, n.input(2), float(n.attr("epsilon", 1e-5)))
    outs = [y, None, None]
    if len(n.proto.output) > 3 and n.proto.output[3]:
        outs.append(total)
    return outs


def _unpack_u8(z: np.ndarray, bits: int, n: int, blocks: int) -> np.ndarray:
    """uint8-packed values, `8 / bits` per byte (lowest bits first), each of n rows padded to
    whole bytes (onnxruntime's layout of zero points and of GatherBlockQuantized's table), as
    [n, blocks] floats."""
    per_byte = 8 // bits
    row = -(-blocks // per_byte)
    z = np.asarray(z, np.uint8).reshape(n, row)
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    vals = (z[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return vals.reshape(n, row * per_byte)[:, :blocks].astype(np.float32)


@contrib_importer("MatMulNBits")
def _matmul_nbits(n: _Node):
    """Y = A @ dequantize(B)^T (+ bias): B [N, blocks, block_size * bits / 8] uint8, `bits`-bit
    values lowest bits first, scales [N * blocks], optional zero points (uint8 packed as B's
    values, or floats; default 2**(bits - 1)), optional g_idx (only the trivial k // block_size),
    optional bias [N]. `accuracy_level` (the precision of onnxruntime's CPU accumulation) is
    ignored: the kernel accumulates in float32."""
    k, nn, bits, bs = n.attr("K"), n.attr("N"), n.attr("bits", 4), n.attr("block_size")
    if bits not in graph.QUANT_BITS:
        n.fail(f"bits = {bits} is not supported: the quantized matmul kernels read {', '.join(map(str, graph.QUANT_BITS))}"
               "-bit values (whole values per 32-bit word)")
    if not isinstance(bs, int) or bs < 16 or bs & (bs - 1):
        n.fail(f"block_size = {bs} must be a power of two >= 16")
    if not isinstance(k, int) or not isinstance(nn, int) or k <= 0 or nn <= 0:
        n.fail(f"attributes K = {k} and N = {nn} must be positive")
    a = n.input(0)
    if graph.shape_of(a)[-1] != k:
        n.fail(f"input A's last extent is {graph.shape_of(a)[-1]}, the attribute K says {k}")
    blocks, blob = -(-k // bs), bs * bits // 8
    b = n.const_input(1, "the quantized weight B")
    if b.dtype != np.uint8 or b.size != nn * blocks * blob:
        n.fail(f"B must be uint8 [N = {nn}, blocks = {blocks}, {blob}] (block_size {bs} x {bits} bits), got {b.dtype} "
               f"{list(b.shape)}")
    words = np.ascontiguousarray(b.reshape(nn, blocks, blob)).view("<i4")
    scales = n.const_input(2, "the scales")
    if scales.size != nn * blocks:
        n.fail(f"scales must hold N x blocks = {nn * blocks} values, got {list(scales.shape)}")
    operands = [a, n.imp.int32_constant(f"{n.proto.input[1]}_words", words),
                n.imp.constant(f"{n.proto.input[2]}_nb", scales.astype(np.float32).reshape(nn, blocks), n)]
    if n.has_input(3):
        z = n.const_input(3, "the zero points")
        if z.dtype == np.uint8:
            if z.size != nn * -(-blocks // (8 // bits)):
                n.fail(f"uint8 zero points must hold N x ceil(blocks * {bits} / 8) = {nn * -(-blocks // (8 // bits))} "
                       f"bytes, got {z.size}")
            zp = _unpack_u8(z, bits, nn, blocks)
        else:
            if z.size != nn * blocks:
                n.fail(f"zero points must hold N x blocks = {nn * blocks} values, got {z.size}")
            zp = z.astype(np.float32).reshape(nn, blocks)
        operands.append([n.imp.constant(f"{n.proto.input[3]}_nb", zp, n)])
    else:
        operands.append([])
    if n.has_input(4):
        g_idx = n.const_input(4, "g_idx")
        if not np.array_equal(np.asarray(g_idx).reshape(-1)[:k], np.arange(k) // bs):
            n.fail("g_idx reorders the blocks (act-order quantization), which is not supported; requantize without it")
    if n.has_input(5):
        bias = n.input(5)
        if graph.shape_of(bias) != (nn,):
            n.fail(f"bias must be [{nn}], got {list(graph.shape_of(bias))}")
        operands.append([bias])
    else:
        operands.append([])
    operands.append([])  # norm_scale: fuse-rms-norm's
    return _emit(n, graph.MatMulNBitsOp(
        operands=operands, result_types=[n.out_type()],
        properties={"bits": graph.IntegerAttr(bits, 64), "block_size": graph.IntegerAttr(bs, 64)}))


@contrib_importer("GroupQueryAttention")
def _group_query_attention(n: _Node):
    """com.microsoft GroupQueryAttention at fixed shapes (batch B, S new tokens, a past of P,
    present T = P + S, bound at compile time), written out in the graph ops the rest of the
    model uses (slices, rotary multiply-adds, a concat per cache, a matmul per product, a
    masked softmax), where past and present are model tensors the host passes each run. In
    the generation form of a decoder (the importer's `shared_kv`: onnxruntime's shared
    buffer, the caches on the device) it is one `graph.group_query_attention` instead
    (`_shared_buffer_gqa`).

    onnxruntime's semantics (its CPU kernel, the reference): the query is [B, S, H * D] with
    key/value [B, S, KVH * D], or one packed [B, S, (H + 2 KVH) * D]; seqlens_k[b] = the valid
    length - 1, so the new tokens sit at positions seqlens_k + 1 - S ... seqlens_k. Rotary
    (do_rotary): q and k rotated by cos/sin_cache rows at those positions, halves
    (rotary_interleaved 0) or pairs (1). present = past + the new keys / values along the
    sequence; each query head h reads KV head h // (H / KVH); query i attends keys j <= its
    position; scale (0: 1 / sqrt(D)). The new entries are placed after all P past ones, as
    onnxruntime does when the past is full (seqlens_k + 1 = T: an attention mask of ones);
    with a shorter valid length onnxruntime writes them earlier, so there the outputs are
    NaN instead of silently different (a padded batch row is not supported)."""
    from xdsl.dialects.builtin import TensorType, f32

    from adreno_mlir.frontend.onnx_importer import _slice_along

    h, kvh = n.attr("num_heads"), n.attr("kv_num_heads")
    if not isinstance(h, int) or not isinstance(kvh, int) or h <= 0 or kvh <= 0 or h % kvh:
        n.fail(f"num_heads = {h} must be a positive multiple of kv_num_heads = {kvh}")
    for attr, off in (("local_window_size", -1), ("softcap", 0.0)):
        if n.attr(attr, off) != off:
            n.fail(f"{attr} = {n.attr(attr)} is not supported (only {off}: no sliding window, no soft cap)")
    if n.has_input(9) or n.has_input(10) or n.has_input(11):
        n.fail("position_ids, attention_bias and head_sink inputs are not supported")
    if not (n.has_input(3) and n.has_input(4)):
        n.fail("past_key and past_value are required (bind past_sequence_length to at least 1)")
    packed = not n.has_input(1)
    q_in = n.input(0)
    b, s = graph.shape_of(q_in)[:2]
    past_k, past_v = n.input(3), n.input(4)
    pb, pk, p, d = graph.shape_of(past_k)
    if (pb, pk) != (b, kvh) or graph.shape_of(past_v) != (b, kvh, p, d):
        n.fail(f"past_key/value must be [B = {b}, {kvh}, P, D], got {list(graph.shape_of(past_k))} and "
               f"{list(graph.shape_of(past_v))}")
    t_len, g = p + s, h // kvh
    scale = float(n.attr("scale", 0.0)) or 1.0 / float(np.sqrt(d))

    def tt(shape):
        return TensorType(f32, list(shape))

    def emit(op):
        return _emit(n, op)

    def reshape(x, shape):
        return emit(graph.ReshapeOp(operands=[x], result_types=[tt(shape)]))

    def transpose(x, perm):
        xs = graph.shape_of(x)
        return emit(graph.TransposeOp(operands=[x], result_types=[tt([xs[i] for i in perm])],
                                      properties={"perm": graph.i64_array(list(perm))}))

    def binary(cls, a, b_, shape):
        return emit(cls(a, b_, tt(shape)))

    def concat(values, axis: int, shape):
        return emit(graph.ConcatOp(operands=[list(values)], result_types=[tt(shape)],
                                   properties={"axis": graph.IntegerAttr(axis, 64)}))

    def const(name: str, arr: np.ndarray):
        return n.imp.constant(f"{n.name}_{name}", np.asarray(arr, np.float32), n)

    if n.attr("do_rotary", 0):
        if not (n.has_input(7) and n.has_input(8)):
            n.fail("do_rotary = 1 needs cos_cache and sin_cache")
        half = graph.shape_of(n.input(7))[1]
        if half * 2 != d:
            n.fail(f"cos_cache/sin_cache are [max positions, {half}]: rotary over {2 * half} of D = {d} (partial rotary) "
                   "is not supported")
    if n.imp.shared_kv:
        return _shared_buffer_gqa(n, h, kvh, d, scale, packed)
    if packed:
        if graph.shape_of(q_in)[2] != (h + 2 * kvh) * d:
            n.fail(f"the packed query's last extent must be (num_heads + 2 kv_num_heads) * D = {(h + 2 * kvh) * d}, "
                   f"got {graph.shape_of(q_in)[2]}")
        heads = reshape(q_in, (b, s, h + 2 * kvh, d))
        q = _slice_along(n, heads, 2, 0, h)
        k = _slice_along(n, heads, 2, h, kvh)
        v = _slice_along(n, heads, 2, h + kvh, kvh)
    else:
        q = reshape(q_in, (b, s, h, d))
        k = reshape(n.input(1), (b, s, kvh, d))
        v = reshape(n.input(2), (b, s, kvh, d))
    seqlens = reshape(n.input(5), (b, 1))  # float-held int: the valid length - 1
    # positions [B, S] of the new tokens
    first = binary(graph.AddOp, seqlens, const("first_offset", np.full([1, 1], 1 - s)), (b, 1))
    positions = binary(graph.AddOp, first, const("token_index", np.arange(s).reshape(1, s)), (b, s))

    def rotate(x, heads_n):
        """x [B, S, heads, D] rotated at `positions` (cos/sin rows of the caches)."""
        cos_cache, sin_cache = n.input(7), n.input(8)
        half = d // 2
        cos, sin = (reshape(emit(graph.TakeOp(operands=[cache, positions], result_types=[tt((b, s, half))],
                                              properties={"axis": graph.IntegerAttr(0, 64)})), (b, s, 1, half))
                    for cache in (cos_cache, sin_cache))
        if n.attr("rotary_interleaved", 0):
            pairs = reshape(x, (b, s, heads_n, half, 2))
            x1 = reshape(_slice_along(n, pairs, 4, 0, 1), (b, s, heads_n, half))
            x2 = reshape(_slice_along(n, pairs, 4, 1, 1), (b, s, heads_n, half))
        else:
            x1, x2 = _slice_along(n, x, 3, 0, half), _slice_along(n, x, 3, half, half)
        shape = (b, s, heads_n, half)
        r1 = binary(graph.SubOp, binary(graph.MulOp, x1, cos, shape), binary(graph.MulOp, x2, sin, shape), shape)
        r2 = binary(graph.AddOp, binary(graph.MulOp, x2, cos, shape), binary(graph.MulOp, x1, sin, shape), shape)
        if n.attr("rotary_interleaved", 0):
            both = concat([reshape(r1, (*shape, 1)), reshape(r2, (*shape, 1))], 4, (*shape, 2))
            return reshape(both, (b, s, heads_n, d))
        return concat([r1, r2], 3, (b, s, heads_n, d))

    if n.attr("do_rotary", 0):
        q, k = rotate(q, h), rotate(k, kvh)
    present = [concat([past, transpose(new, (0, 2, 1, 3))], 2, (b, kvh, t_len, d))
               for new, past in ((k, past_k), (v, past_v))]
    # query heads grouped under their KV head: [B, KVH, G * S, D]
    qg = reshape(transpose(q, (0, 2, 1, 3)), (b, kvh, g * s, d))
    kt = transpose(present[0], (0, 1, 3, 2))
    scores = emit(graph.MatMulOp(operands=[qg, kt], result_types=[tt((b, kvh, g * s, t_len))]))
    scores = binary(graph.MulOp, scores, const("scale", np.full([1], scale)), (b, kvh, g * s, t_len))
    # key j is visible to query i where j <= its position (causal, within the valid length)
    rows = reshape(concat([positions] * g, 1, (b, g * s)) if g > 1 else positions, (b, 1, g * s, 1))
    keys = const("key_index", np.arange(t_len).reshape(1, 1, 1, t_len))
    visible = emit(graph.LessOrEqualOp(keys, rows, tt((b, 1, g * s, t_len))))
    masked = emit(graph.WhereOp(visible, scores, const("hidden", np.full([1], -np.inf)), tt((b, kvh, g * s, t_len))))
    probs = emit(graph.SoftmaxOp(operands=[masked], result_types=[tt((b, kvh, g * s, t_len))],
                                 properties={"axis": graph.IntegerAttr(3, 64)}))
    ctx = emit(graph.MatMulOp(operands=[probs, present[1]], result_types=[tt((b, kvh, g * s, d))]))
    out = reshape(transpose(reshape(ctx, (b, h, s, d)), (0, 2, 1, 3)), (b, s, h * d))
    # a valid length other than T (a padded row): NaN, never a silently different answer
    full = emit(graph.EqualOp(seqlens, const("last", np.full([1, 1], t_len - 1)), tt((b, 1))))
    nan = const("nan", np.full([1], np.nan))
    out = emit(graph.WhereOp(reshape(full, (b, 1, 1)), out, nan, tt((b, s, h * d))))
    present = [emit(graph.WhereOp(reshape(full, (b, 1, 1, 1)), pr, nan, tt((b, kvh, t_len, d)))) for pr in present]
    return [out, *present]


def _shared_buffer_gqa(n: _Node, h: int, kvh: int, d: int, scale: float, packed: bool):
    """GroupQueryAttention in onnxruntime's shared-buffer form (past and present one cache of
    the maximum context, adreno_mlir/frontend/decoder.py): one `graph.group_query_attention`,
    whose kernels rotate q and k, write the new rows into the caches at seqlens_k + 1 - S and
    attend over the rows up to each token's position. The caches must be model inputs and
    their presents model outputs: `graph.state` pairs them (one device buffer each), and the
    presents are no outputs of the program (they stay on the device)."""
    from xdsl.dialects.builtin import TensorType, f32

    graph_inputs = {vi.name for vi in n.imp.graph_inputs}
    graph_outputs = {o.name for o in n.imp.model.graph.output}
    for i, j in ((3, 1), (4, 2)):
        past_name = n.proto.input[i]
        present_name = n.proto.output[j] if len(n.proto.output) > j else ""
        if past_name not in graph_inputs or present_name not in graph_outputs:
            n.fail(f"in the shared-buffer form the cache '{past_name}' must be a model input and its present "
                   f"'{present_name}' a model output (one device buffer)")
        n.imp.state[present_name] = past_name
    q_in = n.input(0)
    b, s = graph.shape_of(q_in)[:2]
    from adreno_mlir.generation import POSITION

    key = ("gqa_start", n.proto.input[5], b, s)  # every layer reads the same seqlens_k: one kernel computes it
    start = n.imp.shared_values.get(key)
    if start is None and POSITION in n.imp.values and b == 1:
        # bind_decoder's mask is j < position + S and its position's bound keeps position + S <= L,
        # so seqlens_k + 1 - S is the position itself: read it, and the mask arithmetic (its
        # ReduceSum, Sub and Casts: four launches a run) is left without readers
        start = n.imp.shared_values[key] = _emit(n, graph.ReshapeOp(
            operands=[n.imp.values[POSITION]], result_types=[TensorType(f32, [1, 1])]))
    if start is None:
        seqlens = _emit(n, graph.ReshapeOp(operands=[n.input(5)], result_types=[TensorType(f32, [b, 1])]))
        offset = n.imp.constant(f"{n.name}_first_offset", np.full([1, 1], 1 - s, np.float32), n)
        start = n.imp.shared_values[key] = _emit(n, graph.AddOp(seqlens, offset, TensorType(f32, [b, 1])))
    rotary = bool(n.attr("do_rotary", 0))  # its inputs checked by the caller
    op = graph.GroupQueryAttentionOp(
        operands=[q_in, [] if packed else [n.input(1)], [] if packed else [n.input(2)], n.input(3), n.input(4), start,
                  [n.input(7)] if rotary else [], [n.input(8)] if rotary else []],
        result_types=[TensorType(f32, [b, s, h * d])],
        properties={"num_heads": graph.IntegerAttr(h, 64), "kv_num_heads": graph.IntegerAttr(kvh, 64),
                    "scale": graph.f32_attr(scale),
                    "interleaved": graph.IntegerAttr(int(n.attr("rotary_interleaved", 0)), 64)})
    return [_emit(n, op), None, None]


@contrib_importer("GatherBlockQuantized")
def _gather_block_quantized(n: _Node):
    """Rows of a block-quantized table (a tied-embedding model's int4 token embeddings,
    onnxruntime's GatherBlockQuantized): data uint8 [rows, columns * bits / 8] (`bits` 4 or
    8, values lowest bits first), scales [rows, blocks] of `block_size` columns, optional
    zero points (uint8 packed as data, default 2**(bits - 1)); out = (q - zero point) *
    scale for the rows the indices name. gather_axis 0 and quantize_axis 1 (the last) only.

    The table is dequantized once, at compile time, into a float table that the ordinary
    embedding lookup (`graph.take`) reads: a gather reads one row per token, so its format
    matters for memory (8x the packed 4-bit table), not for speed; a kernel that gathers the
    packed rows is left for later."""
    from adreno_mlir.frontend.onnx_importer import run_time_lookup

    bits, bs = n.attr("bits", 4), n.attr("block_size", 128)
    if n.attr("gather_axis", 0) != 0 or n.attr("quantize_axis", 1) not in (1, -1):
        n.fail(f"gather_axis = {n.attr('gather_axis', 0)} and quantize_axis = {n.attr('quantize_axis', 1)}: only 0 "
               "and 1 (rows gathered, blocks along each row) are supported")
    if bits not in (4, 8):
        n.fail(f"bits = {bits} is not supported (4 or 8)")
    if not isinstance(bs, int) or bs < 16 or bs & (bs - 1):
        n.fail(f"block_size = {bs} must be a power of two >= 16")
    data = n.const_input(0, "the quantized table")
    if data.dtype != np.uint8 or data.ndim != 2:
        n.fail(f"data must be a uint8 [rows, columns * {bits} / 8] table, got {data.dtype} {list(data.shape)} "
               "(int4/uint4-typed tables are not supported: export them as uint8)")
    rows, cols = data.shape[0], data.shape[1] * 8 // bits
    blocks = -(-cols // bs)
    scales = np.asarray(n.const_input(2, "the scales"), np.float32)
    if scales.size != rows * blocks:
        n.fail(f"scales must be [rows = {rows}, blocks = {blocks}], got {list(scales.shape)}")
    per = 8 // bits
    q = _unpack_u8(data, bits, rows, cols)
    if n.has_input(3):
        z = n.const_input(3, "the zero points")
        if z.dtype != np.uint8 or z.size != rows * -(-blocks // per):
            n.fail(f"zero points must be uint8 [rows, ceil(blocks * {bits} / 8)] = {rows * -(-blocks // per)} bytes, "
                   f"got {z.dtype} {list(z.shape)}")
        zp = _unpack_u8(z, bits, rows, blocks)
    else:
        zp = np.full((rows, blocks), 2.0 ** (bits - 1), np.float32)
    table = (q - np.repeat(zp, bs, axis=1)[:, :cols]) * np.repeat(scales.reshape(rows, blocks), bs, axis=1)[:, :cols]
    x = n.imp.constant(f"{n.proto.input[0]}_dequantized", table.astype(np.float32), n)
    return run_time_lookup(n, x, 0)
