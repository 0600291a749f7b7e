// RUN: adreno-opt %s | adreno-opt | filecheck %s
// Round trip of every graph op: parse, print, parse again, print the same text.

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%x: tensor<1x8x8x8xf32>, %m: tensor<2x3xf32>) -> tensor<1x8x8x8xf32> {
  // CHECK: %w = graph.constant @conv_w : tensor<8x8x3x3xf32>
  %w = graph.constant @conv_w : tensor<8x8x3x3xf32>
  // CHECK: %dw = graph.constant @dw_w : tensor<8x1x3x3xf32>
  %dw = graph.constant @dw_w : tensor<8x1x3x3xf32>
  // CHECK: %b = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x8x8xf32> loc("/conv/Conv")
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x8x8xf32> loc("/conv/Conv")
  // CHECK: graph.conv2d %c, %dw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x4x4xf32>
  %d = graph.conv2d %c, %dw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 8 : i64} : tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x4x4xf32>
  %s8 = graph.constant @bn_s : tensor<8xf32>
  // CHECK: graph.batch_norm %c, %s8, %s8, %s8, %s8 {epsilon = 1.000000e-03 : f32}
  %bn = graph.batch_norm %c, %s8, %s8, %s8, %s8 {epsilon = 1.0e-3 : f32} : (tensor<1x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  // CHECK: graph.relu %bn : tensor<1x8x8x8xf32>
  %r = graph.relu %bn : tensor<1x8x8x8xf32>
  // CHECK: graph.clip %r {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<1x8x8x8xf32>
  %cl = graph.clip %r {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x8x8x8xf32>
  // CHECK: graph.hard_sigmoid %cl {alpha = 0.166666701 : f32} : tensor<1x8x8x8xf32>
  %hs = graph.hard_sigmoid %cl {alpha = 0.1666667 : f32} : tensor<1x8x8x8xf32>
  // CHECK: graph.hard_swish
  %hw = graph.hard_swish %hs : tensor<1x8x8x8xf32>
  // CHECK: graph.sigmoid
  %sg = graph.sigmoid %hw : tensor<1x8x8x8xf32>
  // CHECK: graph.tanh
  %th = graph.tanh %sg : tensor<1x8x8x8xf32>
  // CHECK: graph.mul %th, %sg : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %mu = graph.mul %th, %sg : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %one = graph.constant dense<1.0> : tensor<1xf32>
  // CHECK: graph.sub %mu, %one : (tensor<1x8x8x8xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  %su = graph.sub %mu, %one : (tensor<1x8x8x8xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  // CHECK: graph.div
  %dv = graph.div %su, %one : (tensor<1x8x8x8xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  // CHECK: graph.add
  %ad = graph.add %dv, %x : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  // CHECK: graph.max_pool %ad {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  %mp = graph.max_pool %ad {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  // CHECK: graph.avg_pool %ad {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  %ap = graph.avg_pool %ad {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  // CHECK: graph.concat %mp, %ap {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
  %cc = graph.concat %mp, %ap {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
  // CHECK: graph.global_avg_pool %cc : (tensor<1x16x4x4xf32>) -> tensor<1x16x1x1xf32>
  %gp = graph.global_avg_pool %cc : (tensor<1x16x4x4xf32>) -> tensor<1x16x1x1xf32>
  // CHECK: graph.reduce_mean %cc {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x16x4x4xf32>) -> tensor<1x16xf32>
  %rm = graph.reduce_mean %cc {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x16x4x4xf32>) -> tensor<1x16xf32>
  // CHECK: graph.reshape %gp : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32>
  %fl = graph.reshape %gp : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32>
  %gw = graph.constant @fc_w : tensor<4x16xf32>
  // CHECK: graph.gemm %fl, %gw {trans_b = 1 : i64} : tensor<1x16xf32>, tensor<4x16xf32> -> tensor<1x4xf32>
  %gm = graph.gemm %fl, %gw {trans_b = 1 : i64} : tensor<1x16xf32>, tensor<4x16xf32> -> tensor<1x4xf32>
  // CHECK: graph.softmax %gm {axis = 1 : i64} : tensor<1x4xf32>
  %sm = graph.softmax %gm {axis = 1 : i64} : tensor<1x4xf32>
  // CHECK: graph.transpose %m {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %tr = graph.transpose %m {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  // CHECK: graph.matmul %m, %tr : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %mm = graph.matmul %m, %tr : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  // CHECK: graph.slice %ad {starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 1, 2, 1>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x8xf32>
  %sl = graph.slice %ad {starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 1, 2, 1>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x8xf32>
  // CHECK: graph.resize %mp {mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32>
  %rs = graph.resize %mp {mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32>
  func.return %rs : tensor<1x8x8x8xf32>
}
