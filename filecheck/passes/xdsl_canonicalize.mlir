// RUN: adreno-opt %s -p canonicalize | filecheck %s

// xDSL's own `canonicalize` pass applies the patterns each graph op carries in its
// HasCanonicalizationPatternsTrait (the same ones `graph-canonicalize` runs).

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x2x2xf32>)
func.func @identities(%x: tensor<1x4x2x2xf32>) -> tensor<1x16xf32> {
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

// CHECK-LABEL: func.func @transposes_and_concat
func.func @transposes_and_concat(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  // CHECK-NEXT: graph.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: func.return
  %a = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = graph.transpose %a {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  %c = graph.concat %b {axis = 0 : i64} : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  func.return %c : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @fold
func.func @fold(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  // hard_swish(hard_sigmoid([-2, 1]) + 2.5), leaky_relu(-2), erf(0) and a reshape of
  // constants: all evaluated; only the add of the argument stays.
  // hard_sigmoid{0.5, 0.25} -> [0, 0.75]; + [3, 0.75] -> [3, 1.5]; hard_swish -> [3, 1.125];
  // + leaky_relu{0.25}([-2, 4]) = [-0.5, 4] -> [2.5, 5.125]; + erf(0) -> unchanged.
  // CHECK-NEXT: %[[C:.*]] = graph.constant dense<{{\[\[}}2.500000e+00, 5.125000e+00]]> : tensor<1x2xf32>
  // CHECK-NEXT: %[[Y:.*]] = graph.add %{{.*}}, %[[C]]
  // CHECK-NEXT: func.return %[[Y]]
  %b = graph.constant dense<[-2.0, 1.0]> : tensor<2xf32>
  %hg = graph.hard_sigmoid %b {alpha = 0.5 : f32, beta = 0.25 : f32} : tensor<2xf32>
  %k = graph.constant dense<[3.0, 0.75]> : tensor<2xf32>
  %s = graph.add %hg, %k : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %hs = graph.hard_swish %s : tensor<2xf32>
  %c = graph.constant dense<[-2.0, 4.0]> : tensor<2xf32>
  %lr = graph.leaky_relu %c {alpha = 0.25 : f32} : tensor<2xf32>
  %z = graph.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %e = graph.erf %z : tensor<2xf32>
  %t = graph.add %hs, %lr : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %u = graph.add %t, %e : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = graph.reshape %u : (tensor<2xf32>) -> tensor<1x2xf32>
  %y = graph.add %x, %r : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
