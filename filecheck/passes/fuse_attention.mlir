// RUN: adreno-opt %s --split-input-file -p fuse-attention | filecheck %s
// RUN: adreno-opt %s --split-input-file -p fuse-attention | adreno-opt --split-input-file | filecheck %s

// fuse-attention replaces matmul -> (scale) -> (+ bias) -> softmax(last axis) -> matmul
// by one graph.attention (which round-trips: the second RUN parses the printed IR).
// The first product's perms become q_perm / k_perm, the last one's rhs_perm v_perm; the
// op takes the final matmul's location; the chain and its scale constants are erased.

// A scale on the left (mul(c, s)), the perms of an exported multi-head attention.

// CHECK-LABEL: func.func @scaled
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>} : tensor<1x10x4x16xf32>, tensor<1x10x4x16xf32>, tensor<1x10x4x16xf32> -> tensor<1x4x10x16xf32> loc("/attn/MatMul_2")
// CHECK-NEXT:    func.return %o
func.func @scaled(%q: tensor<1x10x4x16xf32>, %k: tensor<1x10x4x16xf32>, %v: tensor<1x10x4x16xf32>) -> tensor<1x4x10x16xf32> {
  %c = graph.constant dense<0.125> : tensor<1xf32>
  %s = graph.matmul %q, %k {lhs_perm = array<i64: 0, 2, 1, 3>, rhs_perm = array<i64: 0, 2, 3, 1>} : (tensor<1x10x4x16xf32>, tensor<1x10x4x16xf32>) -> tensor<1x4x10x10xf32>
  %t = graph.mul %c, %s : (tensor<1xf32>, tensor<1x4x10x10xf32>) -> tensor<1x4x10x10xf32>
  %p = graph.softmax %t {axis = 3 : i64} : tensor<1x4x10x10xf32>
  %o = graph.matmul %p, %v {rhs_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x10x10xf32>, tensor<1x10x4x16xf32>) -> tensor<1x4x10x16xf32> loc("/attn/MatMul_2")
  func.return %o : tensor<1x4x10x16xf32>
}

// -----

// No scale, no bias, 3-D [H, L, D] operands (K already transposed), softmax axis -1.

// CHECK-LABEL: func.func @plain
// CHECK-NEXT:    %o = graph.attention %q, %kt, %v : tensor<4x7x8xf32>, tensor<4x8x9xf32>, tensor<4x9x5xf32> -> tensor<4x7x5xf32>
// CHECK-NEXT:    func.return %o
func.func @plain(%q: tensor<4x7x8xf32>, %kt: tensor<4x8x9xf32>, %v: tensor<4x9x5xf32>) -> tensor<4x7x5xf32> {
  %s = graph.matmul %q, %kt : (tensor<4x7x8xf32>, tensor<4x8x9xf32>) -> tensor<4x7x9xf32>
  %p = graph.softmax %s : tensor<4x7x9xf32>
  %o = graph.matmul %p, %v : (tensor<4x7x9xf32>, tensor<4x9x5xf32>) -> tensor<4x7x5xf32>
  func.return %o : tensor<4x7x5xf32>
}

// -----

// Swin's window attention: q scaled before the product, a relative-position bias that
// broadcasts over the windows added on the left (add(b, s)).

// CHECK-LABEL: func.func @prescaled_bias
// CHECK-NEXT:    %b = graph.constant dense<1.000000e+00> : tensor<1x3x5x5xf32>
// CHECK-NEXT:    %o = graph.attention %q, %k, %v, %b {scale = 2.500000e-01 : f32, k_perm = array<i64: 0, 1, 3, 2>} : tensor<8x3x5x4xf32>, tensor<8x3x5x4xf32>, tensor<8x3x5x4xf32>, tensor<1x3x5x5xf32> -> tensor<8x3x5x4xf32>
// CHECK-NEXT:    func.return %o
func.func @prescaled_bias(%q: tensor<8x3x5x4xf32>, %k: tensor<8x3x5x4xf32>, %v: tensor<8x3x5x4xf32>) -> tensor<8x3x5x4xf32> {
  %c = graph.constant dense<0.25> : tensor<f32>
  %b = graph.constant dense<1.0> : tensor<1x3x5x5xf32>
  %qs = graph.mul %q, %c : (tensor<8x3x5x4xf32>, tensor<f32>) -> tensor<8x3x5x4xf32>
  %s = graph.matmul %qs, %k {rhs_perm = array<i64: 0, 1, 3, 2>} : (tensor<8x3x5x4xf32>, tensor<8x3x5x4xf32>) -> tensor<8x3x5x5xf32>
  %t = graph.add %b, %s : (tensor<1x3x5x5xf32>, tensor<8x3x5x5xf32>) -> tensor<8x3x5x5xf32>
  %p = graph.softmax %t {axis = -1 : i64} : tensor<8x3x5x5xf32>
  %o = graph.matmul %p, %v : (tensor<8x3x5x5xf32>, tensor<8x3x5x4xf32>) -> tensor<8x3x5x4xf32>
  func.return %o : tensor<8x3x5x4xf32>
}

// -----

// tiny_bert / ViT (nn.MultiheadAttention): q and k each scaled by sqrt(scale); a div
// of the scores by a constant and a mask added on the right are folded too:
// 0.5 * 0.5 / 2 = 0.125.

// CHECK-LABEL: func.func @both_scaled_div_mask
// CHECK-NEXT:    %m = graph.constant dense<0.000000e+00> : tensor<6x6xf32>
// CHECK-NEXT:    %o = graph.attention %q, %k, %v, %m {scale = 1.250000e-01 : f32, k_perm = array<i64: 0, 2, 1>} : tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>, tensor<6x6xf32> -> tensor<2x6x3xf32>
// CHECK-NEXT:    func.return %o
func.func @both_scaled_div_mask(%q: tensor<2x6x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x6x3xf32> {
  %c = graph.constant dense<0.5> : tensor<1xf32>
  %d = graph.constant dense<2.0> : tensor<1xf32>
  %m = graph.constant dense<0.0> : tensor<6x6xf32>
  %qs = graph.mul %q, %c : (tensor<2x6x4xf32>, tensor<1xf32>) -> tensor<2x6x4xf32>
  %ks = graph.mul %k, %c : (tensor<2x6x4xf32>, tensor<1xf32>) -> tensor<2x6x4xf32>
  %s = graph.matmul %qs, %ks {rhs_perm = array<i64: 0, 2, 1>} : (tensor<2x6x4xf32>, tensor<2x6x4xf32>) -> tensor<2x6x6xf32>
  %t = graph.div %s, %d : (tensor<2x6x6xf32>, tensor<1xf32>) -> tensor<2x6x6xf32>
  %u = graph.add %t, %m : (tensor<2x6x6xf32>, tensor<6x6xf32>) -> tensor<2x6x6xf32>
  %p = graph.softmax %u {axis = 2 : i64} : tensor<2x6x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x6x6xf32>, tensor<2x6x3xf32>) -> tensor<2x6x3xf32>
  func.return %o : tensor<2x6x3xf32>
}

// -----

// Not fused: the scores have a second user (they must be materialised).

// CHECK-LABEL: func.func @scores_read_twice
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
// CHECK-NOT:     graph.attention
func.func @scores_read_twice(%q: tensor<4x7x8xf32>, %kt: tensor<4x8x9xf32>, %v: tensor<4x9x5xf32>) -> (tensor<4x7x5xf32>, tensor<4x7x9xf32>) {
  %s = graph.matmul %q, %kt : (tensor<4x7x8xf32>, tensor<4x8x9xf32>) -> tensor<4x7x9xf32>
  %p = graph.softmax %s : tensor<4x7x9xf32>
  %o = graph.matmul %p, %v : (tensor<4x7x9xf32>, tensor<4x9x5xf32>) -> tensor<4x7x5xf32>
  func.return %o, %s : tensor<4x7x5xf32>, tensor<4x7x9xf32>
}

// -----

// Not fused: the probabilities have a second user.

// CHECK-LABEL: func.func @probs_read_twice
// CHECK-NOT:     graph.attention
func.func @probs_read_twice(%q: tensor<4x7x8xf32>, %kt: tensor<4x8x9xf32>, %v: tensor<4x9x5xf32>) -> (tensor<4x7x5xf32>, tensor<4x7x9xf32>) {
  %s = graph.matmul %q, %kt : (tensor<4x7x8xf32>, tensor<4x8x9xf32>) -> tensor<4x7x9xf32>
  %p = graph.softmax %s : tensor<4x7x9xf32>
  %o = graph.matmul %p, %v : (tensor<4x7x9xf32>, tensor<4x9x5xf32>) -> tensor<4x7x5xf32>
  func.return %o, %p : tensor<4x7x5xf32>, tensor<4x7x9xf32>
}

// -----

// Not fused: softmax along the query axis, not the keys.

// CHECK-LABEL: func.func @softmax_not_last
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax %s {axis = 1 : i64}
// CHECK-NOT:     graph.attention
func.func @softmax_not_last(%q: tensor<4x7x8xf32>, %kt: tensor<4x8x7xf32>, %v: tensor<4x7x5xf32>) -> tensor<4x7x5xf32> {
  %s = graph.matmul %q, %kt : (tensor<4x7x8xf32>, tensor<4x8x7xf32>) -> tensor<4x7x7xf32>
  %p = graph.softmax %s {axis = 1 : i64} : tensor<4x7x7xf32>
  %o = graph.matmul %p, %v : (tensor<4x7x7xf32>, tensor<4x7x5xf32>) -> tensor<4x7x5xf32>
  func.return %o : tensor<4x7x5xf32>
}

// -----

// Not fused: the probabilities are read transposed (lhs_perm), and a scale that is
// not a one-element constant is not a scale.

// CHECK-LABEL: func.func @not_attention
// CHECK-NOT:     graph.attention
func.func @not_attention(%q: tensor<4x7x8xf32>, %kt: tensor<4x8x7xf32>, %v: tensor<4x7x5xf32>, %w: tensor<4x7x7xf32>) -> (tensor<4x7x5xf32>, tensor<4x7x5xf32>) {
  %s = graph.matmul %q, %kt : (tensor<4x7x8xf32>, tensor<4x8x7xf32>) -> tensor<4x7x7xf32>
  %p = graph.softmax %s : tensor<4x7x7xf32>
  %o = graph.matmul %p, %v {lhs_perm = array<i64: 0, 2, 1>} : (tensor<4x7x7xf32>, tensor<4x7x5xf32>) -> tensor<4x7x5xf32>
  %s2 = graph.matmul %q, %kt : (tensor<4x7x8xf32>, tensor<4x8x7xf32>) -> tensor<4x7x7xf32>
  %t2 = graph.mul %s2, %w : (tensor<4x7x7xf32>, tensor<4x7x7xf32>) -> tensor<4x7x7xf32>
  %p2 = graph.softmax %t2 : tensor<4x7x7xf32>
  %o2 = graph.matmul %p2, %v : (tensor<4x7x7xf32>, tensor<4x7x5xf32>) -> tensor<4x7x5xf32>
  func.return %o, %o2 : tensor<4x7x5xf32>, tensor<4x7x5xf32>
}

// -----

// PyTorch's packed in_proj (nn.MultiheadAttention): one [L, B, 3E] projection reshaped to
// [L, 3, B, E], transposed to [3, L, B, E], q / k / v selected (slices), each reshaped to
// heads. The attention reads q, k and v from the projection through strided views
// (offset, shape, strides: q at 0, k at E = 16, v at 2E = 32 elements; rows 48 apart);
// the transpose and the three slices are gone.

// CHECK-LABEL: func.func @packed_projection
// CHECK-NOT:     graph.transpose
// CHECK-NOT:     graph.slice
// CHECK:         %o = graph.attention %qkv, %qkv, %qkv {scale = 1.250000e-01 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>, q_view = array<i64: 0, 1, 6, 2, 8, 288, 48, 8, 1>, k_view = array<i64: 16, 1, 6, 2, 8, 288, 48, 8, 1>, v_view = array<i64: 32, 1, 6, 2, 8, 288, 48, 8, 1>} : tensor<6x1x48xf32>, tensor<6x1x48xf32>, tensor<6x1x48xf32> -> tensor<1x2x6x8xf32>
// CHECK-NEXT:    func.return %o
func.func @packed_projection(%qkv: tensor<6x1x48xf32>) -> tensor<1x2x6x8xf32> {
  %r = graph.reshape %qkv : (tensor<6x1x48xf32>) -> tensor<6x3x1x16xf32>
  %t = graph.transpose %r {perm = array<i64: 1, 0, 2, 3>} : (tensor<6x3x1x16xf32>) -> tensor<3x6x1x16xf32>
  %q0 = graph.slice %t {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<3x6x1x16xf32>) -> tensor<1x6x1x16xf32>
  %k0 = graph.slice %t {starts = array<i64: 1, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<3x6x1x16xf32>) -> tensor<1x6x1x16xf32>
  %v0 = graph.slice %t {starts = array<i64: 2, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<3x6x1x16xf32>) -> tensor<1x6x1x16xf32>
  %q = graph.reshape %q0 : (tensor<1x6x1x16xf32>) -> tensor<1x6x2x8xf32>
  %k = graph.reshape %k0 : (tensor<1x6x1x16xf32>) -> tensor<1x6x2x8xf32>
  %v = graph.reshape %v0 : (tensor<1x6x1x16xf32>) -> tensor<1x6x2x8xf32>
  %c = graph.constant dense<0.125> : tensor<1xf32>
  %s = graph.matmul %q, %k {lhs_perm = array<i64: 0, 2, 1, 3>, rhs_perm = array<i64: 0, 2, 3, 1>} : (tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>) -> tensor<1x2x6x6xf32>
  %ts = graph.mul %s, %c : (tensor<1x2x6x6xf32>, tensor<1xf32>) -> tensor<1x2x6x6xf32>
  %p = graph.softmax %ts {axis = 3 : i64} : tensor<1x2x6x6xf32>
  %o = graph.matmul %p, %v {rhs_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x6x6xf32>, tensor<1x6x2x8xf32>) -> tensor<1x2x6x8xf32>
  func.return %o : tensor<1x2x6x8xf32>
}

// -----

// A copy the view cannot express (a reshape merging axes a transpose took apart) keeps
// its operand as it is: q is the transposed tensor reshaped back to rows, which needs
// the transpose's copy; k and v have no transpose or slice to save.

// CHECK-LABEL: func.func @reshape_needs_a_copy
// CHECK:         graph.transpose
// CHECK:         %o = graph.attention %q, %k, %v : tensor<4x6xf32>, tensor<6x5xf32>, tensor<5x3xf32> -> tensor<4x3xf32>
func.func @reshape_needs_a_copy(%x: tensor<6x4xf32>, %k: tensor<6x5xf32>, %v: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %r = graph.reshape %t : (tensor<4x6xf32>) -> tensor<24xf32>
  %q = graph.reshape %r : (tensor<24xf32>) -> tensor<4x6xf32>
  %s = graph.matmul %q, %k : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %p = graph.softmax %s {axis = 1 : i64} : tensor<4x5xf32>
  %o = graph.matmul %p, %v : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  func.return %o : tensor<4x3xf32>
}

// -----

// The attention's one reader transposes its output ([B, H, M, Dv] -> [M, B, H, Dv], the
// heads back in token order for the output projection): the attention writes it so
// (`out_perm`) and the transpose is gone.

// CHECK-LABEL: func.func @output_transposed
// CHECK-NOT:     graph.transpose
// CHECK:         %t = graph.attention %q, %k, %v {q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>, out_perm = array<i64: 2, 0, 1, 3>} : tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32> -> tensor<6x1x2x8xf32>
// CHECK-NEXT:    %r = graph.reshape %t
func.func @output_transposed(%q: tensor<1x6x2x8xf32>, %k: tensor<1x6x2x8xf32>, %v: tensor<1x6x2x8xf32>) -> tensor<6x16xf32> {
  %s = graph.matmul %q, %k {lhs_perm = array<i64: 0, 2, 1, 3>, rhs_perm = array<i64: 0, 2, 3, 1>} : (tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>) -> tensor<1x2x6x6xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x2x6x6xf32>
  %a = graph.matmul %p, %v {rhs_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x6x6xf32>, tensor<1x6x2x8xf32>) -> tensor<1x2x6x8xf32>
  %t = graph.transpose %a {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x2x6x8xf32>) -> tensor<6x1x2x8xf32>
  %r = graph.reshape %t : (tensor<6x1x2x8xf32>) -> tensor<6x16xf32>
  func.return %r : tensor<6x16xf32>
}
