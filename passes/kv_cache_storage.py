"""`kv-cache-storage{element=f16}`: a decoder's KV caches kept in halves on the device.

A decoder's caches (`graph.group_query_attention`'s `k_cache` / `v_cache`, state function
arguments [B, KVH, L, D] that the op writes in place) are the largest thing a long
generation reads: every decode step's attention reads each layer's rows up to the
position, 2 x layers x KVH x position x D values. Stored as halves they take half the
memory and half those bytes, which is what the mobile runtimes do (llama.cpp's default
f16 cache, MLC's q4f16). The kernels still compute in f32: they read the rows with
`vload_half` and write the new ones with `vstore_half` (round to nearest even), both
OpenCL 1.2 core, so no cl_khr_fp16 is needed. The cost is the rounding of every cached
key and value (relative 2^-11), so the logits move by about 1e-3 of their scale.

The pass retypes the cache arguments (and the function's signature): the storage is the
element type, visible in the printed IR and the plan's state (`"dtype": "f16"`):

    func.func @decode(..., %past_key: tensor<1x2x256x64xf32>, ...)
      %o = graph.group_query_attention %qkv cache %past_key, %past_value at %start ...
  becomes
    func.func @decode(..., %past_key: tensor<1x2x256x64xf16>, ...)

The cache layout itself is [B, KVH, L, D] (the op's contract: one head's rows contiguous,
so a split of them is one range; onnxruntime's shared-buffer layout). `element=f32`
makes (or keeps) them f32, the ONNX model's type. A cache argument that anything but
the attention reads is refused (graph.group_query_attention's verifier already says why).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f16, f32

from xdsl.rewriter import Rewriter

from adreno_mlir.dialects import graph
from adreno_mlir.pass_options import CheckedPass, option


@dataclass(frozen=True)
class KVCacheStorage(CheckedPass):
    name = "kv-cache-storage"

    element: str = option("f32", choices=("f32", "f16"))
    """The caches' element type: f32 (as the model gives them) or f16 (halves); caches of the
    other type are retyped."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        want = f16 if self.element == "f16" else f32
        for fn in op.walk():
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            block = fn.body.block
            changed = False
            for attn in list(fn.walk()):
                if not isinstance(attn, graph.GroupQueryAttentionOp):
                    continue
                for cache in (attn.k_cache, attn.v_cache):
                    t = cache.type
                    if cache.owner is not block or not isinstance(t, TensorType) or t.element_type == want:
                        continue  # (a computed cache fails the op's verifier)
                    hint = cache.name_hint
                    Rewriter.replace_value_with_new_type(cache, TensorType(want, t.get_shape())).name_hint = hint
                    changed = True
            if changed:
                fn.function_type = FunctionType.from_lists([a.type for a in block.args],
                                                           list(fn.function_type.outputs.data))
