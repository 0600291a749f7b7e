// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

// graph.attention's verifier: D and L must agree, the bias must broadcast to the
// scores [..., M, L] without widening them, perms must be permutations, the result
// shape must be softmax(Q @ K) @ V's.

func.func @attention_d(%q: tensor<2x3x4xf32>, %k: tensor<2x5x6xf32>, %v: tensor<2x6x7xf32>) -> tensor<2x3x7xf32> {
  %o = graph.attention %q, %k, %v : tensor<2x3x4xf32>, tensor<2x5x6xf32>, tensor<2x6x7xf32> -> tensor<2x3x7xf32>
  func.return %o : tensor<2x3x7xf32>
}
// CHECK: 'graph.attention' Q [..., M, D] = [2, 3, 4] and K [..., D, L] = [2, 5, 6] differ in D

// -----

func.func @attention_l(%q: tensor<2x3x4xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x5x7xf32>) -> tensor<2x3x7xf32> {
  %o = graph.attention %q, %k, %v : tensor<2x3x4xf32>, tensor<2x4x6xf32>, tensor<2x5x7xf32> -> tensor<2x3x7xf32>
  func.return %o : tensor<2x3x7xf32>
}
// CHECK: 'graph.attention' K [..., D, L] = [2, 4, 6] and V [..., L, Dv] = [2, 5, 7] differ in L

// -----

func.func @attention_bias(%q: tensor<2x3x4xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x6x7xf32>, %b: tensor<5x3x6xf32>) -> tensor<2x3x7xf32> {
  %o = graph.attention %q, %k, %v, %b : tensor<2x3x4xf32>, tensor<2x4x6xf32>, tensor<2x6x7xf32>, tensor<5x3x6xf32> -> tensor<2x3x7xf32>
  func.return %o : tensor<2x3x7xf32>
}
// CHECK: 'graph.attention' bias of shape [5, 3, 6] does not broadcast to the scores' shape [2, 3, 6]

// -----

func.func @attention_perm(%q: tensor<2x3x4xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x6x7xf32>) -> tensor<2x3x7xf32> {
  %o = graph.attention %q, %k, %v {k_perm = array<i64: 0, 1, 1>} : tensor<2x3x4xf32>, tensor<2x4x6xf32>, tensor<2x6x7xf32> -> tensor<2x3x7xf32>
  func.return %o : tensor<2x3x7xf32>
}
// CHECK: 'graph.attention' k_perm [0, 1, 1] is not a permutation of 0..2 (the k operand has rank 3)

// -----

func.func @attention_result(%q: tensor<2x3x4xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x6x7xf32>) -> tensor<2x3x6xf32> {
  %o = graph.attention %q, %k, %v : tensor<2x3x4xf32>, tensor<2x4x6xf32>, tensor<2x6x7xf32> -> tensor<2x3x6xf32>
  func.return %o : tensor<2x3x6xf32>
}
// CHECK: 'graph.attention' result shape [2, 3, 6] does not match the shape implied by its operands and attributes: [2, 3, 7]

// -----

// A view reading past its operand: k at offset 40 of a [6, 1, 48] projection reaches
// element 40 + 5 * 48 + 8 + 7 = 295.

func.func @view_past_the_operand(%qkv: tensor<6x1x48xf32>) -> tensor<1x2x6x8xf32> {
  %o = graph.attention %qkv, %qkv, %qkv {q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>, q_view = array<i64: 0, 1, 6, 2, 8, 288, 48, 8, 1>, k_view = array<i64: 40, 1, 6, 2, 8, 288, 48, 8, 1>, v_view = array<i64: 32, 1, 6, 2, 8, 288, 48, 8, 1>} : tensor<6x1x48xf32>, tensor<6x1x48xf32>, tensor<6x1x48xf32> -> tensor<1x2x6x8xf32>
  func.return %o : tensor<1x2x6x8xf32>
}
// CHECK: 'graph.attention' k_view [40, 1, 6, 2, 8, 288, 48, 8, 1] reads element 295 of an operand of 288

// -----

func.func @view_without_strides(%qkv: tensor<6x1x48xf32>, %k: tensor<16x6xf32>, %v: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %o = graph.attention %qkv, %k, %v {q_view = array<i64: 0, 6, 16, 48>} : tensor<6x1x48xf32>, tensor<16x6xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  func.return %o : tensor<6x8xf32>
}
// CHECK: 'graph.attention' q_view must be [offset, dims..., strides...], got [0, 6, 16, 48]

// -----

func.func @view_negative_stride(%qkv: tensor<6x1x48xf32>, %k: tensor<16x6xf32>, %v: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %o = graph.attention %qkv, %k, %v {q_view = array<i64: 200, 6, 16, -48, 1>} : tensor<6x1x48xf32>, tensor<16x6xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  func.return %o : tensor<6x8xf32>
}
// CHECK: 'graph.attention' q_view [200, 6, 16, -48, 1] needs an offset >= 0, dims >= 1 and strides >= 0

// -----

func.func @out_perm_rank(%q: tensor<2x3x4xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x6x7xf32>) -> tensor<3x2x7xf32> {
  %o = graph.attention %q, %k, %v {out_perm = array<i64: 1, 0>} : tensor<2x3x4xf32>, tensor<2x4x6xf32>, tensor<2x6x7xf32> -> tensor<3x2x7xf32>
  func.return %o : tensor<3x2x7xf32>
}
// CHECK: 'graph.attention' out_perm [1, 0] is not a permutation of 0..2 (the product has rank 3)

// -----

func.func @out_perm_result(%q: tensor<2x3x4xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x6x7xf32>) -> tensor<2x3x7xf32> {
  %o = graph.attention %q, %k, %v {out_perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>, tensor<2x4x6xf32>, tensor<2x6x7xf32> -> tensor<2x3x7xf32>
  func.return %o : tensor<2x3x7xf32>
}
// CHECK: 'graph.attention' result shape [2, 3, 7] does not match the shape implied by its operands and attributes: [3, 2, 7]
