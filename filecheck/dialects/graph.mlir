// RUN: adreno-opt %s | adreno-opt | filecheck %s
// Round trip of the graph ops on plain tensors: parse, print, parse again, print the
// same text (attributes at their default value are not printed). The ops of kernel
// regions on NCHW4c tensors (graph.fused, split-K, pool partials, scale_channels) are
// in graph_kernels.mlir, and graph_elementwise_new.mlir, graph_elu_resize.mlir,
// graph_reductions.mlir, graph_layer_norm_gather.mlir and graph_take.mlir round-trip
// the rest; tests/test_dialect_round_trips.py fails for an op that none of them prints.

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

// The unary ops without attributes, leaky_relu (alpha 0.01, the default, not printed),
// conv_transpose2d (with bias, groups and output_padding; without: every default),
// pad in each mode and expand.
// CHECK-LABEL: func.func @unary_and_data_movement
// CHECK-NEXT:    %ex = graph.exp %x : tensor<1x8x8x8xf32>
// CHECK-NEXT:    %ng = graph.neg %ex : tensor<1x8x8x8xf32>
// CHECK-NEXT:    %ab = graph.abs %ng : tensor<1x8x8x8xf32>
// CHECK-NEXT:    %sq = graph.sqrt %ab : tensor<1x8x8x8xf32>
// CHECK-NEXT:    %ef = graph.erf %sq : tensor<1x8x8x8xf32>
// CHECK-NEXT:    %lr = graph.leaky_relu %ef {alpha = 2.000000e-01 : f32} : tensor<1x8x8x8xf32>
// CHECK-NEXT:    %l0 = graph.leaky_relu %lr : tensor<1x8x8x8xf32>
// CHECK-NEXT:    %wt = graph.constant @deconv_w : tensor<8x4x3x3xf32>
// CHECK-NEXT:    %bt = graph.constant @deconv_b : tensor<8xf32>
// CHECK-NEXT:    %up = graph.conv_transpose2d %l0, %wt, %bt {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x8x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32> -> tensor<1x8x16x16xf32> loc("/up/ConvTranspose")
// CHECK-NEXT:    %w2 = graph.constant @deconv2_w : tensor<8x8x3x3xf32>
// CHECK-NEXT:    %d2 = graph.conv_transpose2d %l0, %w2 : tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x10x10xf32>
// CHECK-NEXT:    %pc = graph.pad %l0 {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 1.500000e+00 : f32} : (tensor<1x8x8x8xf32>) -> tensor<1x8x10x10xf32>
// CHECK-NEXT:    %pr = graph.pad %l0 {pads = array<i64: 0, 0, 1, 2, 0, 0, 3, -1>, mode = "reflect"} : (tensor<1x8x8x8xf32>) -> tensor<1x8x12x9xf32>
// CHECK-NEXT:    %pe = graph.pad %m {pads = array<i64: 1, 0, 0, 2>, mode = "edge"} : (tensor<2x3xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    %pw = graph.pad %m {pads = array<i64: 0, 1, 0, 1>, mode = "wrap"} : (tensor<2x3xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %e1 = graph.expand %m : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %col = graph.constant dense<[[1.000000e+00], [2.000000e+00]]> : tensor<2x1xf32>
// CHECK-NEXT:    %e2 = graph.expand %col : (tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %l0 : tensor<1x8x8x8xf32>
func.func @unary_and_data_movement(%x: tensor<1x8x8x8xf32>, %m: tensor<2x3xf32>) -> tensor<1x8x8x8xf32> {
  %ex = graph.exp %x : tensor<1x8x8x8xf32>
  %ng = graph.neg %ex : tensor<1x8x8x8xf32>
  %ab = graph.abs %ng : tensor<1x8x8x8xf32>
  %sq = graph.sqrt %ab : tensor<1x8x8x8xf32>
  %ef = graph.erf %sq : tensor<1x8x8x8xf32>
  %lr = graph.leaky_relu %ef {alpha = 0.2 : f32} : tensor<1x8x8x8xf32>
  %l0 = graph.leaky_relu %lr {alpha = 0.01 : f32} : tensor<1x8x8x8xf32>
  %wt = graph.constant @deconv_w : tensor<8x4x3x3xf32>
  %bt = graph.constant @deconv_b : tensor<8xf32>
  %up = graph.conv_transpose2d %l0, %wt, %bt {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x8x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32> -> tensor<1x8x16x16xf32> loc("/up/ConvTranspose")
  %w2 = graph.constant @deconv2_w : tensor<8x8x3x3xf32>
  %d2 = graph.conv_transpose2d %l0, %w2 : tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x10x10xf32>
  %pc = graph.pad %l0 {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "constant", value = 1.5 : f32} : (tensor<1x8x8x8xf32>) -> tensor<1x8x10x10xf32>
  %pr = graph.pad %l0 {pads = array<i64: 0, 0, 1, 2, 0, 0, 3, -1>, mode = "reflect"} : (tensor<1x8x8x8xf32>) -> tensor<1x8x12x9xf32>
  %pe = graph.pad %m {pads = array<i64: 1, 0, 0, 2>, mode = "edge"} : (tensor<2x3xf32>) -> tensor<3x5xf32>
  %pw = graph.pad %m {pads = array<i64: 0, 1, 0, 1>, mode = "wrap"} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  %e1 = graph.expand %m : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  %col = graph.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %e2 = graph.expand %col : (tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %l0 : tensor<1x8x8x8xf32>
}

// graph.attention: K given transposed (no perms, scale 1: nothing printed); with an
// additive mask, a scale and K read transposed; with every operand read through a perm
// (heads split as [B, L, H, D]; the default scale 1.0 is not printed).
// CHECK-LABEL: func.func @attention
// CHECK-NEXT:    %a = graph.attention %q, %kt, %v : tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>, tensor<2x4x6x5xf32> -> tensor<2x4x6x5xf32>
// CHECK-NEXT:    %b = graph.attention %q, %k, %v, %mask {scale = 1.250000e-01 : f32, k_perm = array<i64: 0, 1, 3, 2>} : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x5xf32>, tensor<1x1x6x6xf32> -> tensor<2x4x6x5xf32> loc("/attn/MatMul_1")
// CHECK-NEXT:    %c = graph.attention %qs, %qs, %vs {q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>} : tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x6x4x5xf32> -> tensor<2x4x6x5xf32>
// CHECK-NEXT:    func.return %c : tensor<2x4x6x5xf32>
func.func @attention(%q: tensor<2x4x6x8xf32>, %kt: tensor<2x4x8x6xf32>, %k: tensor<2x4x6x8xf32>, %v: tensor<2x4x6x5xf32>,
                     %mask: tensor<1x1x6x6xf32>, %qs: tensor<2x6x4x8xf32>, %vs: tensor<2x6x4x5xf32>) -> tensor<2x4x6x5xf32> {
  %a = graph.attention %q, %kt, %v : tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>, tensor<2x4x6x5xf32> -> tensor<2x4x6x5xf32>
  %b = graph.attention %q, %k, %v, %mask {scale = 0.125 : f32, k_perm = array<i64: 0, 1, 3, 2>} : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x5xf32>, tensor<1x1x6x6xf32> -> tensor<2x4x6x5xf32> loc("/attn/MatMul_1")
  %c = graph.attention %qs, %qs, %vs {scale = 1.0 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>} : tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x6x4x5xf32> -> tensor<2x4x6x5xf32>
  func.return %c : tensor<2x4x6x5xf32>
}

// graph.attention reading q, k and v as strided views of one [6, 1, 48] projection
// (offset, shape 1x6x2x8, strides; fuse-attention writes these).
// CHECK-LABEL: func.func @attention_views
// CHECK-NEXT:    %o = graph.attention %qkv, %qkv, %qkv {q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>, q_view = array<i64: 0, 1, 6, 2, 8, 288, 48, 8, 1>, k_view = array<i64: 16, 1, 6, 2, 8, 288, 48, 8, 1>, v_view = array<i64: 32, 1, 6, 2, 8, 288, 48, 8, 1>} : tensor<6x1x48xf32>, tensor<6x1x48xf32>, tensor<6x1x48xf32> -> tensor<1x2x6x8xf32>
func.func @attention_views(%qkv: tensor<6x1x48xf32>) -> tensor<1x2x6x8xf32> {
  %o = graph.attention %qkv, %qkv, %qkv {q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>, q_view = array<i64: 0, 1, 6, 2, 8, 288, 48, 8, 1>, k_view = array<i64: 16, 1, 6, 2, 8, 288, 48, 8, 1>, v_view = array<i64: 32, 1, 6, 2, 8, 288, 48, 8, 1>} : tensor<6x1x48xf32>, tensor<6x1x48xf32>, tensor<6x1x48xf32> -> tensor<1x2x6x8xf32>
  func.return %o : tensor<1x2x6x8xf32>
}
