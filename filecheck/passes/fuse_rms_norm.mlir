// RUN: adreno-opt %s --split-input-file -p fuse-rms-norm | filecheck %s
// RUN: adreno-opt %s --split-input-file -p fuse-rms-norm | adreno-opt --split-input-file | filecheck %s

// fuse-rms-norm moves an RMS normalization (graph.layer_norm {center = 0} over the last axis,
// no bias) whose every reader is a graph.matmul_nbits into those products: they read the
// unnormalized input with `norm %gamma {norm_epsilon}` and the normalization is erased.
// (The second RUN parses the printed IR: the fused form round-trips.)

// Two products reading one normalization (a decoder's gate and up projections).

// CHECK-LABEL: func.func @two_readers
// CHECK-NOT:     graph.layer_norm
// CHECK:         %g = graph.matmul_nbits %x, %w1, %s1 norm %gamma {bits = 4 : i64, block_size = 32 : i64, norm_epsilon = 1.000000e-06 : f32} : tensor<1x1x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> norm tensor<64xf32> -> tensor<1x1x8xf32> loc("/mlp/gate")
// CHECK-NEXT:    %u = graph.matmul_nbits %x, %w2, %s2 zero_points %z norm %gamma {bits = 4 : i64, block_size = 32 : i64, norm_epsilon = 1.000000e-06 : f32} : tensor<1x1x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> zero_points tensor<8x2xf32> norm tensor<64xf32> -> tensor<1x1x8xf32> loc("/mlp/up")
func.func @two_readers(%x: tensor<1x1x64xf32>, %gamma: tensor<64xf32>, %w1: tensor<8x2x4xi32>, %s1: tensor<8x2xf32>,
                       %w2: tensor<8x2x4xi32>, %s2: tensor<8x2xf32>, %z: tensor<8x2xf32>) -> (tensor<1x1x8xf32>, tensor<1x1x8xf32>) {
  %n = graph.layer_norm %x, %gamma {axis = 2 : i64, epsilon = 1.0e-06 : f32, center = 0 : i64} : tensor<1x1x64xf32>, tensor<64xf32> -> tensor<1x1x64xf32>
  %g = graph.matmul_nbits %n, %w1, %s1 {bits = 4 : i64, block_size = 32 : i64} : tensor<1x1x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> -> tensor<1x1x8xf32> loc("/mlp/gate")
  %u = graph.matmul_nbits %n, %w2, %s2 zero_points %z {bits = 4 : i64, block_size = 32 : i64} : tensor<1x1x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> zero_points tensor<8x2xf32> -> tensor<1x1x8xf32> loc("/mlp/up")
  func.return %g, %u : tensor<1x1x8xf32>, tensor<1x1x8xf32>
}

// -----

// Another reader of the normalized value (here an add) keeps the normalization as it is.

// CHECK-LABEL: func.func @other_reader
// CHECK:         %n = graph.layer_norm
// CHECK:         graph.matmul_nbits %n, %w, %s {bits = 4 : i64, block_size = 32 : i64} :
func.func @other_reader(%x: tensor<1x64xf32>, %gamma: tensor<64xf32>, %w: tensor<8x2x4xi32>, %s: tensor<8x2xf32>) -> (tensor<1x8xf32>, tensor<1x64xf32>) {
  %n = graph.layer_norm %x, %gamma {axis = 1 : i64, epsilon = 1.0e-06 : f32, center = 0 : i64} : tensor<1x64xf32>, tensor<64xf32> -> tensor<1x64xf32>
  %y = graph.matmul_nbits %n, %w, %s {bits = 4 : i64, block_size = 32 : i64} : tensor<1x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> -> tensor<1x8xf32>
  %r = graph.add %n, %x : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %y, %r : tensor<1x8xf32>, tensor<1x64xf32>
}

// -----

// A LayerNorm that subtracts the mean (center = 1) is no RMS normalization: left alone.

// CHECK-LABEL: func.func @centered
// CHECK:         %n = graph.layer_norm
// CHECK:         graph.matmul_nbits %n,
func.func @centered(%x: tensor<1x64xf32>, %gamma: tensor<64xf32>, %w: tensor<8x2x4xi32>, %s: tensor<8x2xf32>) -> tensor<1x8xf32> {
  %n = graph.layer_norm %x, %gamma {axis = 1 : i64, epsilon = 1.0e-06 : f32, center = 1 : i64} : tensor<1x64xf32>, tensor<64xf32> -> tensor<1x64xf32>
  %y = graph.matmul_nbits %n, %w, %s {bits = 4 : i64, block_size = 32 : i64} : tensor<1x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
