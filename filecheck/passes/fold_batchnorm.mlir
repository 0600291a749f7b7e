// RUN: adreno-opt %s --split-input-file -p fold-batchnorm -o %t && filecheck %s < %t

// Hand-computed fold (epsilon = 1, so sqrt(var + eps) = [2, 1]):
//   s     = scale / sqrt(var + eps)        = [1/2, 2/1]          = [0.5, 2]
//   w'    = w * s                          = [2 * 0.5, 4 * 2]    = [1, 8]
//   b'    = (b - mean) * s + beta          = [0 * 0.5 + 0.5, 2 * 2 + 1] = [0.5, 5]
// The batch norm disappears; the new conv keeps the old conv's attributes and location.

// CHECK-LABEL: func.func @fold_into_conv
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<1x1x3x3xf32>)
// CHECK-DAG:     %[[W:[a-z0-9_]+]] = graph.constant dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}8.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG:     %[[B:[a-z0-9_]+]] = graph.constant dense<[5.000000e-01, 5.000000e+00]> : tensor<2xf32>
// CHECK:         %[[C:[a-z0-9_]+]] = graph.conv2d %[[X]], %[[W]], %[[B]] {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32> loc("conv")
// CHECK-NEXT:    func.return %[[C]] : tensor<1x2x2x2xf32>
// CHECK-NOT:     graph.batch_norm
func.func @fold_into_conv(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[4.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %beta = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32> loc("conv")
  %bn = graph.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %bn : tensor<1x2x2x2xf32>
}

// -----

// A conv without bias gains one: b' = beta - mean * s = [0.5 - 0.5, 1 - 0] = [0, 1].
// Two batch norms in a row both fold: w'' = w' * s = [0.5, 16], b'' = b' * s + shift = [0, 3].
// Groups (depthwise) are kept.

// CHECK-LABEL: func.func @no_bias_twice_depthwise
// CHECK-DAG:     %[[W:[a-z0-9_]+]] = graph.constant dense<{{\[\[\[\[}}5.000000e-01]]], {{\[\[\[}}1.600000e+01]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG:     %[[B:[a-z0-9_]+]] = graph.constant dense<[0.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK:         %[[C:[a-z0-9_]+]] = graph.conv2d %x, %[[W]], %[[B]] {groups = 2 : i64} : tensor<1x2x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %[[C]]
// CHECK-NOT:     graph.batch_norm
func.func @no_bias_twice_depthwise(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[4.0]]]]> : tensor<2x1x1x1xf32>
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %beta = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w {groups = 2 : i64} : tensor<1x2x2x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x2x2xf32>
  %bn = graph.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %bn2 = graph.batch_norm %bn, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %bn2 : tensor<1x2x2x2xf32>
}

// -----

// The conv result has another user: the conv stays and the batch norm becomes
// x * s + shift with per-channel constants shaped Cx1x1 (broadcast over axis 1).

// CHECK-LABEL: func.func @shared_conv
// CHECK:         %[[C:[a-z0-9_]+]] = graph.conv2d %x, %w : tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x2x2xf32>
// CHECK-DAG:     %[[S:[a-z0-9_]+]] = graph.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}2.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-DAG:     %[[SH:[a-z0-9_]+]] = graph.constant dense<{{\[\[\[}}0.000000e+00]], {{\[\[}}1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK:         %[[M:[a-z0-9_]+]] = graph.mul %[[C]], %[[S]] : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %[[A:[a-z0-9_]+]] = graph.add %[[M]], %[[SH]] : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = graph.add %[[A]], %[[C]]
// CHECK-NEXT:    func.return %[[R]]
// CHECK-NOT:     graph.batch_norm
func.func @shared_conv(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[4.0]]]]> : tensor<2x1x1x1xf32>
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %beta = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w : tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x2x2xf32>
  %bn = graph.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %a = graph.add %bn, %c : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %a : tensor<1x2x2x2xf32>
}

// -----

// Not after a conv, rank 2: constants are shaped C. Non-constant parameters: untouched.

// CHECK-LABEL: func.func @rank2
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: tensor<2x2xf32>, %[[P:[a-z0-9_]+]]: tensor<2xf32>)
// CHECK-DAG:     %[[S:[a-z0-9_]+]] = graph.constant dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG:     %[[SH:[a-z0-9_]+]] = graph.constant dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK:         %[[M:[a-z0-9_]+]] = graph.mul %[[X]], %[[S]] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %[[A:[a-z0-9_]+]] = graph.add %[[M]], %[[SH]] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %[[D:[a-z0-9_]+]] = graph.batch_norm %[[A]], %[[P]], %[[P]], %[[P]], %[[P]]
// CHECK-NEXT:    func.return %[[D]]
func.func @rank2(%x: tensor<2x2xf32>, %p: tensor<2xf32>) -> tensor<2x2xf32> {
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %beta = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %bn = graph.batch_norm %x, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %dyn = graph.batch_norm %bn, %p, %p, %p, %p : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %dyn : tensor<2x2xf32>
}

// -----

// Folded weights larger than the inline limit go to the module's weight store
// (named after the conv weight); the small bias stays inline:
// s = [1, 1, 0.125, 4], b' = beta - mean * s = [0.5 - 1, 0.25, 1, 2].

// CHECK:       builtin.module attributes {graph.weights = "{{.+}}"}
// CHECK-LABEL: func.func @large
// CHECK-DAG:     %[[W:[a-z0-9_]+]] = graph.constant @conv_weight_bn : tensor<4x4x1x1xf32>
// CHECK-DAG:     %[[B:[a-z0-9_]+]] = graph.constant dense<[-5.000000e-01, 2.500000e-01, 1.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK:         graph.conv2d %x, %[[W]], %[[B]]
// CHECK-NOT:     graph.batch_norm
func.func @large(%x: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %w = graph.constant dense<1.0> : tensor<4x4x1x1xf32>
  %s = graph.constant dense<[1.0, 2.0, 0.5, 4.0]> : tensor<4xf32>
  %beta = graph.constant dense<[0.5, 0.25, 1.0, 2.0]> : tensor<4xf32>
  %m = graph.constant dense<[1.0, 0.0, 0.0, 0.0]> : tensor<4xf32>
  %v = graph.constant dense<[0.0, 3.0, 15.0, 0.0]> : tensor<4xf32>
  %c = graph.conv2d %x, %w : tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x2x2xf32>
  %n = graph.batch_norm %c, %s, %beta, %m, %v {epsilon = 1.0 : f32} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  func.return %n : tensor<1x4x2x2xf32>
}
