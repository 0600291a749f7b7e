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


def _unpack_zero_points(z: np.ndarray, bits: int, n: int, blocks: int) -> np.ndarray:
    """uint8 zero points, `8 / bits` per byte (lowest bits first), each column's row padded to
    whole bytes (onnxruntime's layout), as [N, blocks] floats."""
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
            zp = _unpack_zero_points(z, bits, nn, blocks)
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
    return _emit(n, graph.MatMulNBitsOp(
        operands=operands, result_types=[n.out_type()],
        properties={"bits": graph.IntegerAttr(bits, 64), "block_size": graph.IntegerAttr(bs, 64)}))
