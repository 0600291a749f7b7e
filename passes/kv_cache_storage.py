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
from xdsl.ir import BlockArgument
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from adreno_mlir.dialects import graph
from adreno_mlir.pass_options import CheckedPass, option


@dataclass(frozen=True)
class RetypeCaches(RewritePattern):
    """The caches of one attention op, function arguments (state), retyped to `element`, and
    their function's signature with them (a computed cache fails the op's verifier)."""

    element: object

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GroupQueryAttentionOp, rewriter: PatternRewriter, /):
        caches = [c for c in (op.k_cache, op.v_cache) if isinstance(c, BlockArgument)
                  and isinstance(c.type, TensorType) and c.type.element_type != self.element]
        fn = op.parent_op()
        while fn is not None and not isinstance(fn, func.FuncOp):
            fn = fn.parent_op()
        if not caches or fn is None or caches[0].block is not fn.body.block:
            return
        for cache in caches:
            hint = cache.name_hint
            rewriter.replace_value_with_new_type(cache, TensorType(self.element, cache.type.get_shape())).name_hint = hint
        fn.function_type = FunctionType.from_lists([a.type for a in fn.body.block.args],
                                                   list(fn.function_type.outputs.data))


@dataclass(frozen=True)
class KVCacheStorage(CheckedPass):
    name = "kv-cache-storage"

    element: str = option("f32", choices=("f32", "f16"))
    """The caches' element type: f32 (as the model gives them) or f16 (halves); caches of the
    other type are retyped."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(RetypeCaches(f16 if self.element == "f16" else f32),
                             apply_recursively=False).rewrite_module(op)
