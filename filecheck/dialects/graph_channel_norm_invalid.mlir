// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @not_4d(%x: tensor<2x8xf32>, %s: tensor<8xf32>) -> tensor<2x8xf32> {
  %y = graph.channel_norm %x, %s : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK: 'graph.channel_norm' expects a 4-D NCHW input, got [2, 8]

// -----

func.func @scale_per_pixel(%x: tensor<1x8x3x5xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x8x3x5xf32> {
  %y = graph.channel_norm %x, %s : tensor<1x8x3x5xf32>, tensor<8x1x1xf32> -> tensor<1x8x3x5xf32>
  func.return %y : tensor<1x8x3x5xf32>
}
// CHECK: 'graph.channel_norm' scale must have shape [8] (one per channel), got [8, 1, 1]

// -----

func.func @bias_length(%x: tensor<1x8x3x5xf32>, %s: tensor<8xf32>, %b: tensor<4xf32>) -> tensor<1x8x3x5xf32> {
  %y = graph.channel_norm %x, %s, %b : tensor<1x8x3x5xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<1x8x3x5xf32>
  func.return %y : tensor<1x8x3x5xf32>
}
// CHECK: 'graph.channel_norm' bias must have shape [8] (one per channel), got [4]

// -----

func.func @center(%x: tensor<1x8x3x5xf32>, %s: tensor<8xf32>) -> tensor<1x8x3x5xf32> {
  %y = graph.channel_norm %x, %s {center = 2 : i64} : tensor<1x8x3x5xf32>, tensor<8xf32> -> tensor<1x8x3x5xf32>
  func.return %y : tensor<1x8x3x5xf32>
}
// CHECK: 'graph.channel_norm' center must be 0 (RMS normalization) or 1, got 2

// -----

func.func @result_shape(%x: tensor<1x8x3x5xf32>, %s: tensor<8xf32>) -> tensor<1x8x5x3xf32> {
  %y = graph.channel_norm %x, %s : tensor<1x8x3x5xf32>, tensor<8xf32> -> tensor<1x8x5x3xf32>
  func.return %y : tensor<1x8x5x3xf32>
}
// CHECK: 'graph.channel_norm'
