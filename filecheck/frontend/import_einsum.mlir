// RUN: %python %S/Inputs/make_einsum_convtranspose_models.py %t
// RUN: adreno-mlir import %t/einsum_attention.onnx | filecheck %s --check-prefix=ATTN
// RUN: adreno-mlir import %t/einsum_forms.onnx | filecheck %s --check-prefix=FORMS
// RUN: adreno-mlir import %t/einsum_forms.onnx -o %t/forms.mlir && adreno-opt %t/forms.mlir > %t/again.mlir && diff %t/forms.mlir %t/again.mlir
// RUN: not adreno-mlir import %t/einsum_bad.onnx 2>&1 | filecheck %s --check-prefix=BAD

// Einsum has no graph op: the importer writes each equation out in transposes, reshapes
// (free), batched matmuls, broadcasting multiplies, sums and gathers, every op with the
// node's name.

// Attention: q @ k^T transposes k to [b, h, d, j]; both operands become 3-D [b*h, ., .]
// and one batched matmul computes the scores. scores @ v needs no transpose at all.
// ATTN:      %[[Q:[0-9]+]] = graph.reshape %q : (tensor<1x4x10x16xf32>) -> tensor<4x10x16xf32> loc("/attn/qk")
// ATTN-NEXT: %[[KT:[0-9]+]] = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x10x16xf32>) -> tensor<1x4x16x10xf32> loc("/attn/qk")
// ATTN-NEXT: %[[K:[0-9]+]] = graph.reshape %[[KT]] : (tensor<1x4x16x10xf32>) -> tensor<4x16x10xf32> loc("/attn/qk")
// ATTN-NEXT: %[[S:[0-9]+]] = graph.matmul %[[Q]], %[[K]] : (tensor<4x10x16xf32>, tensor<4x16x10xf32>) -> tensor<4x10x10xf32> loc("/attn/qk")
// ATTN-NEXT: %scores = graph.reshape %[[S]] : (tensor<4x10x10xf32>) -> tensor<1x4x10x10xf32> loc("/attn/qk")
// ATTN-NOT:  graph.transpose
// ATTN:      graph.matmul %{{[0-9]+}}, %{{[0-9]+}} : (tensor<4x10x10xf32>, tensor<4x10x16xf32>) -> tensor<4x10x16xf32> loc("/attn/av")
// ATTN-NEXT: %ctx = graph.reshape %{{[0-9]+}} : (tensor<4x10x16xf32>) -> tensor<1x4x10x16xf32> loc("/attn/av")

// i,j->ij: a broadcasting multiply of [3, 1] and [1, 4].
// FORMS:      graph.reshape %a : (tensor<3xf32>) -> tensor<3x1xf32> loc("/outer")
// FORMS-NEXT: graph.reshape %b : (tensor<4xf32>) -> tensor<1x4xf32> loc("/outer")
// FORMS-NEXT: %outer = graph.mul %{{[0-9]+}}, %{{[0-9]+}} : (tensor<3x1xf32>, tensor<1x4xf32>) -> tensor<3x4xf32> loc("/outer")
// ij->i: a sum over j.
// FORMS-NEXT: %rows = graph.reduce_sum %m {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<3x4xf32>) -> tensor<3xf32> loc("/rowsum")
// ...ii->...i: the diagonal of each [5, 5] matrix, gathered from the flattened [2, 25].
// FORMS-NEXT: %[[D:[0-9]+]] = graph.reshape %d : (tensor<2x5x5xf32>) -> tensor<2x25xf32> loc("/diag")
// FORMS-NEXT: %diag = graph.gather %[[D]] {axis = 1 : i64, indices = array<i64: 0, 6, 12, 18, 24>, indices_shape = array<i64: 5>} : (tensor<2x25xf32>) -> tensor<2x5xf32> loc("/diag")
// ij,jk,kl->il: contracted pair by pair, left to right.
// FORMS-NEXT: %[[MN:[0-9]+]] = graph.matmul %m, %n : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32> loc("/chain")
// FORMS-NEXT: %chain = graph.matmul %[[MN]], %p : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32> loc("/chain")
// ij,jk (implicit output: the labels used once, in order, "ik").
// FORMS-NEXT: %implicit = graph.matmul %m, %n : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32> loc("/implicit")

// BAD: error: node '/bad' (Einsum): equation '...ij->ij': the inputs have '...' but the output does not
// BAD-NOT: Traceback
