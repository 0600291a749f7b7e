#!/usr/bin/env python3
"""A model of the matrix products transformers run, written for the tuning corpus.

    python bench/gemm_corpus.py OUT.onnx [--set all|small]
    adreno-mlir tune OUT.onnx --db corpus.db --budget-s 240     # on the device

The learned defaults (adreno_mlir/tuning/cost_model.py) only know the kernel signatures the
corpus measured; before this model the corpus held the matrix products of one small encoder
(tiny_bert: K and N up to 1024), and the trees carried its split-K winners over to ViT's
197 x 768 x 2304 (2.5x slower than the rules' local tiles on the H200). This model puts the
products of ViT-B/16 and /32, BERT-base, Swin-T's four stages, Whisper's encoder, GPT-2, a
Llama MLP and square matrices side by side in one graph, each as ONNX exporters write it:

- a 3-D activation times a constant matrix plus a bias (`MatMul` + `Add`: nn.Linear on
  [1, tokens, features]);
- a 2-D `Gemm` with transB = 1 and a bias (nn.Linear on [tokens, features]);
- for attention, batched products of two inputs ([heads, M, K] x [heads, K, N], and the
  scores' x [heads, N, K] transposed).

Every product has its own input and output, so each is one kernel signature of its own and
the tuner times each alone. Weights are seeded random (the model is written where it is
tuned: the largest weights make it about 300 MB).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

LINEAR = [  # (name, tokens, in features, out features)
    ("vit16_qkv", 197, 768, 2304), ("vit16_out", 197, 768, 768), ("vit16_up", 197, 768, 3072),
    ("vit16_down", 197, 3072, 768),
    ("vit32_qkv", 50, 768, 2304), ("vit32_out", 50, 768, 768), ("vit32_up", 50, 768, 3072),
    ("vit32_down", 50, 3072, 768),
    ("bert_qkv", 128, 768, 768), ("bert_up", 128, 768, 3072), ("bert_down", 128, 3072, 768),
    ("swin1_qkv", 3136, 96, 288), ("swin1_up", 3136, 96, 384), ("swin1_down", 3136, 384, 96),
    ("swin2_qkv", 784, 192, 576), ("swin2_up", 784, 192, 768), ("swin2_down", 784, 768, 192),
    ("swin3_qkv", 196, 384, 1152), ("swin3_up", 196, 384, 1536), ("swin3_down", 196, 1536, 384),
    ("swin4_qkv", 49, 768, 2304), ("swin4_up", 49, 768, 3072),
    ("whisper_qkv", 1500, 384, 384), ("whisper_up", 1500, 384, 1536), ("whisper_down", 1500, 1536, 384),
    ("gpt2_qkv", 64, 768, 2304), ("gpt2_down", 64, 3072, 768),
    ("llama_mlp", 64, 512, 1376), ("square512", 512, 512, 512), ("square1024", 1024, 1024, 1024),
]
BATCHED = [  # (name, heads, M, K, N, B given transposed as [heads, N, K])
    ("vit16_scores", 12, 197, 64, 197, True), ("vit16_context", 12, 197, 197, 64, False),
    ("vit32_scores", 12, 50, 64, 50, True), ("vit32_context", 12, 50, 50, 64, False),
    ("bert_scores", 12, 128, 64, 128, True), ("bert_context", 12, 128, 128, 64, False),
    ("swin_scores", 192, 49, 32, 49, True), ("swin_context", 192, 49, 49, 32, False),
]
SMALL = {"vit32_qkv", "bert_up", "vit32_scores"}
"""`--set small`: three products, for a quick check on a CPU."""


def build(names: set[str] | None = None, seed: int = 0):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inputs, outputs, inits = [], [], [], []

    def vi(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    def const(name, shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name))
        return name

    for name, t, k, n in LINEAR:
        if names is not None and name not in names:
            continue
        inputs.append(vi(f"{name}_x3", [1, t, k]))
        nodes.append(helper.make_node("MatMul", [f"{name}_x3", const(f"{name}_w", [k, n])], [f"{name}_mm"],
                                      name=f"{name}/MatMul"))
        nodes.append(helper.make_node("Add", [f"{name}_mm", const(f"{name}_b", [n])], [f"{name}_y3"],
                                      name=f"{name}/Add"))
        outputs.append(vi(f"{name}_y3", [1, t, n]))
        inputs.append(vi(f"{name}_x2", [t, k]))
        nodes.append(helper.make_node("Gemm", [f"{name}_x2", const(f"{name}_wt", [n, k]), const(f"{name}_b2", [n])],
                                      [f"{name}_y2"], name=f"{name}/Gemm", transB=1))
        outputs.append(vi(f"{name}_y2", [t, n]))
    for name, h, m, k, n, trans in BATCHED:
        if names is not None and name not in names:
            continue
        inputs += [vi(f"{name}_a", [h, m, k]), vi(f"{name}_b", [h, n, k] if trans else [h, k, n])]
        b = f"{name}_b"
        if trans:
            nodes.append(helper.make_node("Transpose", [b], [f"{name}_bt"], perm=[0, 2, 1], name=f"{name}/Transpose"))
            b = f"{name}_bt"
        nodes.append(helper.make_node("MatMul", [f"{name}_a", b], [f"{name}_y"], name=f"{name}/MatMul"))
        outputs.append(vi(f"{name}_y", [h, m, n]))
    graph = helper.make_graph(nodes, "gemm_corpus", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(argv=None) -> int:
    import onnx

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the .onnx file to write")
    ap.add_argument("--set", default="all", choices=("all", "small"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    model = build(SMALL if args.set == "small" else None, args.seed)
    onnx.checker.check_model(model)
    Path(args.out).write_bytes(model.SerializeToString())
    print(f"{args.out}: {len(model.graph.node)} nodes, {len(model.graph.output)} products, "
          f"{sum(int(np.prod(t.dims)) for t in model.graph.initializer) * 4 / 1e6:.0f} MB of weights")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
