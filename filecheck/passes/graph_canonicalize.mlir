// RUN: adreno-opt %s -p graph-canonicalize | filecheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x2x2xf32>)
func.func @identities(%x: tensor<1x4x2x2xf32>) -> tensor<1x16xf32> {
  // Identity reshape, identity transpose, no-op clip and a dead relu all vanish;
  // reshape(reshape(x)) becomes one reshape.
  // CHECK-NEXT: %[[R:.*]] = graph.reshape %[[X]] : (tensor<1x4x2x2xf32>) -> tensor<1x16xf32>
  // CHECK-NEXT: func.return %[[R]] : tensor<1x16xf32>
  %a = graph.reshape %x : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %t = graph.transpose %a {perm = array<i64: 0, 1, 2, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %c = graph.clip %t : tensor<1x4x2x2xf32>
  %dead = graph.relu %c : tensor<1x4x2x2xf32>
  %r1 = graph.reshape %c : (tensor<1x4x2x2xf32>) -> tensor<4x4xf32>
  %r2 = graph.reshape %r1 : (tensor<4x4xf32>) -> tensor<1x16xf32>
  func.return %r2 : tensor<1x16xf32>
}

// CHECK-LABEL: func.func @transposes
func.func @transposes(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  // CHECK-NEXT: graph.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: func.return
  %a = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = graph.transpose %a {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  func.return %b : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @fold_constants
func.func @fold_constants(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  // (1 + 2) * -1, clipped at 0 and the sigmoid of 0: evaluated at compile time.
  // CHECK-NEXT: %[[C:.*]] = graph.constant dense<[5.000000e-01, 2.500000e+00]> : tensor<2xf32>
  // CHECK-NEXT: graph.add %{{.*}}, %[[C]]
  %a = graph.constant dense<[1.0, -4.0]> : tensor<2xf32>
  %b = graph.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %m = graph.constant dense<-1.0> : tensor<1xf32>
  %s = graph.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %n = graph.mul %s, %m : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32>
  %r = graph.relu %n : tensor<2xf32>
  %z = graph.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %sg = graph.sigmoid %z : tensor<2xf32>
  %mx = graph.add %r, %sg : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = graph.add %x, %mx : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// CHECK-LABEL: func.func @single_concat
func.func @single_concat(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  // CHECK-NEXT: func.return %{{.*}} : tensor<1x2xf32>
  %c = graph.concat %x {axis = 1 : i64} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  func.return %c : tensor<1x2xf32>
}

// CHECK-LABEL: func.func @fold_activations
func.func @fold_activations() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  // Every element-wise op folds on constants through its own `evaluate`.
  // CHECK-NEXT: %{{.*}} = graph.constant dense<[3.000000e+00, 1.125000e+00]> : tensor<2xf32>
  // CHECK-NEXT: %{{.*}} = graph.constant dense<[0.000000e+00, 7.500000e-01]> : tensor<2xf32>
  // CHECK-NEXT: %{{.*}} = graph.constant dense<[-5.000000e-01, 4.000000e+00]> : tensor<2xf32>
  // CHECK-NEXT: %{{.*}} = graph.constant dense<[0.000000e+00, 0.842700779]> : tensor<2xf32>
  // CHECK-NEXT: func.return
  %a = graph.constant dense<[3.0, 1.5]> : tensor<2xf32>
  %hs = graph.hard_swish %a : tensor<2xf32>
  %b = graph.constant dense<[-2.0, 1.0]> : tensor<2xf32>
  %hg = graph.hard_sigmoid %b {alpha = 0.5 : f32, beta = 0.25 : f32} : tensor<2xf32>
  %c = graph.constant dense<[-2.0, 4.0]> : tensor<2xf32>
  %lr = graph.leaky_relu %c {alpha = 0.25 : f32} : tensor<2xf32>
  %d = graph.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %e = graph.erf %d : tensor<2xf32>
  func.return %hs, %hg, %lr, %e : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// PyTorch's exported exact GELU (x / sqrt 2, erf, + 1, * x, * 0.5) is one graph.gelu;
// with the 0.5 on the left and x * 0.7071 instead of the division too. A chain whose
// constant is not 0.5 stays as it is.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK:        %[[G:.*]] = graph.gelu %[[X]] : tensor<2x8xf32>
// CHECK-NEXT:   %[[H:.*]] = graph.gelu %[[G]] : tensor<2x8xf32>
// CHECK:        %[[NOT:.*]] = graph.mul %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:   func.return %[[H]], %[[NOT]]
func.func @gelu(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<1xf32>
  %rsqrt2 = graph.constant dense<0.707106769> : tensor<1xf32>
  %one = graph.constant dense<1.0> : tensor<1xf32>
  %half = graph.constant dense<0.5> : tensor<1xf32>
  %third = graph.constant dense<0.333> : tensor<1xf32>
  %d = graph.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %a = graph.add %e, %one : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g = graph.mul %m, %half : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %d2 = graph.mul %g, %rsqrt2 : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %e2 = graph.erf %d2 : tensor<2x8xf32>
  %a2 = graph.add %one, %e2 : (tensor<1xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m2 = graph.mul %a2, %g : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %h = graph.mul %half, %m2 : (tensor<1xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %d3 = graph.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %e3 = graph.erf %d3 : tensor<2x8xf32>
  %a3 = graph.add %e3, %one : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %m3 = graph.mul %x, %a3 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %not = graph.mul %m3, %third : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  func.return %h, %not : tensor<2x8xf32>, tensor<2x8xf32>
}

// A Gemm with transB and a constant B gets B transposed at compile time once it has 16 or
// more output rows (a token matrix: coalesced reads of B on a GPU); a GEMV keeps transB
// for its K-contiguous split-K kernel.
// CHECK-LABEL: func.func @pretranspose
// CHECK:         %{{.*}} = graph.gemm %tokens, %{{.*}}, %bias : tensor<16x4xf32>, tensor<4x3xf32>, tensor<3xf32> -> tensor<16x3xf32>
// CHECK:         %{{.*}} = graph.gemm %vector, %w, %bias {trans_b = 1 : i64} : tensor<1x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<1x3xf32>
func.func @pretranspose(%tokens: tensor<16x4xf32>, %vector: tensor<1x4xf32>) -> (tensor<16x3xf32>, tensor<1x3xf32>) {
  %w = graph.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>
  %bias = graph.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %a = graph.gemm %tokens, %w, %bias {trans_b = 1 : i64} : tensor<16x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<16x3xf32>
  %b = graph.gemm %vector, %w, %bias {trans_b = 1 : i64} : tensor<1x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<1x3xf32>
  func.return %a, %b : tensor<16x3xf32>, tensor<1x3xf32>
}

// Scalar factors of matmul operands (attention scales q and k by sqrt(scale) each) move
// after the matmul and fold into one factor, which then fuses as the matmul's epilogue.
// CHECK-LABEL: func.func @scaled_matmul
// CHECK-SAME: (%[[Q:.*]]: tensor<4x8x16xf32>, %[[K:.*]]: tensor<4x16x8xf32>)
// CHECK-NEXT:   %[[S:.*]] = graph.matmul %[[Q]], %[[K]] : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:   %[[C:.*]] = graph.constant dense<1.250000e-01> : tensor<1xf32>
// CHECK-NEXT:   %[[R:.*]] = graph.mul %[[S]], %[[C]] : (tensor<4x8x8xf32>, tensor<1xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:   func.return %[[R]]
func.func @scaled_matmul(%q: tensor<4x8x16xf32>, %k: tensor<4x16x8xf32>) -> tensor<4x8x8xf32> {
  %c = graph.constant dense<0.5> : tensor<1xf32>
  %c2 = graph.constant dense<0.25> : tensor<1xf32>
  %qs = graph.mul %q, %c : (tensor<4x8x16xf32>, tensor<1xf32>) -> tensor<4x8x16xf32>
  %ks = graph.mul %k, %c2 : (tensor<4x16x8xf32>, tensor<1xf32>) -> tensor<4x16x8xf32>
  %s = graph.matmul %qs, %ks : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  func.return %s : tensor<4x8x8xf32>
}
