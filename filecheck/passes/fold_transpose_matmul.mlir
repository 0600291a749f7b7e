// RUN: adreno-opt %s -p graph-canonicalize | filecheck %s
// RUN: adreno-opt %s -p graph-canonicalize | adreno-opt | filecheck %s

// A transpose read only by a matmul becomes the matmul's lhs_perm / rhs_perm: the
// operand is the stored tensor, the matmul reads transpose(operand, perm). The second
// RUN line parses the printed perms back (they round-trip).

// Attention's key transpose [B, H, L, D] -> [B, H, D, L] on the right.
// CHECK-LABEL: func.func @key_transpose
// CHECK-SAME:    (%[[Q:.*]]: tensor<1x4x10x16xf32>, %[[K:.*]]: tensor<1x4x10x16xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.matmul %[[Q]], %[[K]] {rhs_perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x10x16xf32>, tensor<1x4x10x16xf32>) -> tensor<1x4x10x10xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @key_transpose(%q: tensor<1x4x10x16xf32>, %k: tensor<1x4x10x16xf32>) -> tensor<1x4x10x10xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x10x16xf32>) -> tensor<1x4x16x10xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x10x16xf32>, tensor<1x4x16x10xf32>) -> tensor<1x4x10x10xf32>
  func.return %s : tensor<1x4x10x10xf32>
}

// A head split [L, H, D] -> [H, L, D] on the left, and both sides at once.
// CHECK-LABEL: func.func @both_sides
// CHECK-SAME:    (%[[X:.*]]: tensor<9x3x8xf32>, %[[Z:.*]]: tensor<9x3x8xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.matmul %[[X]], %[[Z]] {lhs_perm = array<i64: 1, 0, 2>, rhs_perm = array<i64: 1, 2, 0>} : (tensor<9x3x8xf32>, tensor<9x3x8xf32>) -> tensor<3x9x9xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @both_sides(%x: tensor<9x3x8xf32>, %z: tensor<9x3x8xf32>) -> tensor<3x9x9xf32> {
  %xt = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<9x3x8xf32>) -> tensor<3x9x8xf32>
  %zt = graph.transpose %z {perm = array<i64: 1, 2, 0>} : (tensor<9x3x8xf32>) -> tensor<3x8x9xf32>
  %s = graph.matmul %xt, %zt : (tensor<3x9x8xf32>, tensor<3x8x9xf32>) -> tensor<3x9x9xf32>
  func.return %s : tensor<3x9x9xf32>
}

// A perm already on the matmul composes with the transpose: x is [2, 3, 4], the
// transpose gives [2, 4, 3] and the matmul reads that as [4, 2, 3]: x read with
// perm [2, 0, 1].
// CHECK-LABEL: func.func @compose
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<3x5xf32>)
// CHECK-NEXT:    graph.matmul %[[X]], %[[Y]] {lhs_perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
func.func @compose(%x: tensor<2x3x4xf32>, %y: tensor<3x5xf32>) -> tensor<4x2x5xf32> {
  %t = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = graph.matmul %t, %y {lhs_perm = array<i64: 1, 0, 2>} : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
  func.return %s : tensor<4x2x5xf32>
}

// Composing to the identity leaves no perm at all.
// CHECK-LABEL: func.func @compose_to_identity
// CHECK-NEXT:    graph.matmul %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    func.return
func.func @compose_to_identity(%x: tensor<2x3x4xf32>, %y: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %t = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = graph.matmul %t, %y {rhs_perm = array<i64: 0, 1>, lhs_perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  func.return %s : tensor<2x3x5xf32>
}

// A transpose something else reads too is materialised anyway: the matmul reads the
// copy. So is one the matmul reads twice (x^T @ x^T).
// CHECK-LABEL: func.func @two_users
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %{{.*}} {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT:    %[[S:.*]] = graph.matmul %{{.*}}, %[[T]] : (tensor<2x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[T]]
// CHECK-NEXT:    func.return %[[S]], %[[R]]
func.func @two_users(%q: tensor<2x5x8xf32>, %k: tensor<2x5x8xf32>) -> (tensor<2x5x5xf32>, tensor<2x8x5xf32>) {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x8xf32>) -> tensor<2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
  %r = graph.relu %kt : tensor<2x8x5xf32>
  func.return %s, %r : tensor<2x5x5xf32>, tensor<2x8x5xf32>
}

// CHECK-LABEL: func.func @same_operand_twice
// CHECK-NEXT:    %[[T:.*]] = graph.transpose
// CHECK-NEXT:    graph.matmul %[[T]], %[[T]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @same_operand_twice(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = graph.matmul %t, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %s : tensor<4x4xf32>
}

// PyTorch's exported attention: a head split [L, H, D] -> [H, L, D], a reshape adding
// the batch axis, the key transpose, and a scalar scale on each side before the scores.
// The unit reshape moves above the head split (a view of the stored tensor), the two
// transposes compose, the scales move after the matmul and fold into one (0.5 * 0.5),
// and the matmul reads the [1, L, H, D] tensors through perms: no transpose left.
// CHECK-LABEL: func.func @attention
// CHECK-SAME:    (%[[Q:.*]]: tensor<10x4x16xf32>, %[[K:.*]]: tensor<10x4x16xf32>)
// CHECK-DAG:     %[[Q4:.*]] = graph.reshape %[[Q]] : (tensor<10x4x16xf32>) -> tensor<1x10x4x16xf32>
// CHECK-DAG:     %[[K4:.*]] = graph.reshape %[[K]] : (tensor<10x4x16xf32>) -> tensor<1x10x4x16xf32>
// CHECK:         %[[S:.*]] = graph.matmul %[[Q4]], %[[K4]] {lhs_perm = array<i64: 0, 2, 1, 3>, rhs_perm = array<i64: 0, 2, 3, 1>} : (tensor<1x10x4x16xf32>, tensor<1x10x4x16xf32>) -> tensor<1x4x10x10xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<2.500000e-01> : tensor<1xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.mul %[[S]], %[[C]]
// CHECK-NOT:     graph.transpose
// CHECK:         func.return %[[R]]
func.func @attention(%q: tensor<10x4x16xf32>, %k: tensor<10x4x16xf32>) -> tensor<1x4x10x10xf32> {
  %c = graph.constant dense<0.5> : tensor<1xf32>
  %qh = graph.transpose %q {perm = array<i64: 1, 0, 2>} : (tensor<10x4x16xf32>) -> tensor<4x10x16xf32>
  %q4 = graph.reshape %qh : (tensor<4x10x16xf32>) -> tensor<1x4x10x16xf32>
  %qs = graph.mul %q4, %c : (tensor<1x4x10x16xf32>, tensor<1xf32>) -> tensor<1x4x10x16xf32>
  %kh = graph.transpose %k {perm = array<i64: 1, 0, 2>} : (tensor<10x4x16xf32>) -> tensor<4x10x16xf32>
  %k4 = graph.reshape %kh : (tensor<4x10x16xf32>) -> tensor<1x4x10x16xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x10x16xf32>) -> tensor<1x4x16x10xf32>
  %ks = graph.mul %kt, %c : (tensor<1x4x16x10xf32>, tensor<1xf32>) -> tensor<1x4x16x10xf32>
  %s = graph.matmul %qs, %ks : (tensor<1x4x10x16xf32>, tensor<1x4x16x10xf32>) -> tensor<1x4x10x10xf32>
  func.return %s : tensor<1x4x10x10xf32>
}

// Not folded: a reshape that merges axes (Swin's window merge [.., 3, 32] -> [.., 96]
// after a transpose is no single stride per axis), and a scale by a vector (it would
// have to be transposed too).
// CHECK-LABEL: func.func @not_folded
// CHECK:         graph.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT:    graph.reshape
// CHECK:         graph.transpose %{{.*}} {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT:    graph.mul
// CHECK-NEXT:    graph.matmul %{{.*}}, %{{.*}} : (tensor<2x5x96xf32>, tensor<2x96x5xf32>) -> tensor<2x5x5xf32>
func.func @not_folded(%x: tensor<2x3x5x32xf32>, %y: tensor<2x5x96xf32>) -> tensor<2x5x5xf32> {
  %c = graph.constant dense<0.5> : tensor<5xf32>
  %t = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x5x32xf32>) -> tensor<2x5x3x32xf32>
  %m = graph.reshape %t : (tensor<2x5x3x32xf32>) -> tensor<2x5x96xf32>
  %yt = graph.transpose %y {perm = array<i64: 0, 2, 1>} : (tensor<2x5x96xf32>) -> tensor<2x96x5xf32>
  %ys = graph.mul %yt, %c : (tensor<2x96x5xf32>, tensor<5xf32>) -> tensor<2x96x5xf32>
  %s = graph.matmul %m, %ys : (tensor<2x5x96xf32>, tensor<2x96x5xf32>) -> tensor<2x5x5xf32>
  func.return %s : tensor<2x5x5xf32>
}

// A scaled transpose that reaches no matmul stays where it is: moving it would gain
// nothing and could split an element-wise chain graph-fuse would make one kernel.
// CHECK-LABEL: func.func @no_matmul
// CHECK:         %[[T:.*]] = graph.transpose %{{.*}} {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[T]], %{{.*}} : (tensor<5x3xf32>, tensor<1xf32>) -> tensor<5x3xf32>
// CHECK-NEXT:    graph.relu %[[M]]
func.func @no_matmul(%x: tensor<3x5xf32>) -> tensor<5x3xf32> {
  %c = graph.constant dense<0.5> : tensor<1xf32>
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %m = graph.mul %t, %c : (tensor<5x3xf32>, tensor<1xf32>) -> tensor<5x3xf32>
  %r = graph.relu %m : tensor<5x3xf32>
  func.return %r : tensor<5x3xf32>
}
