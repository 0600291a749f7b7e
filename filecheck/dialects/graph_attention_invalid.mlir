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
