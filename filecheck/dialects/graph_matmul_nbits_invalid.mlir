// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @bits(%a: tensor<1x64xf32>, %w: tensor<8x2x6xi32>, %s: tensor<8x2xf32>) -> tensor<1x8xf32> {
  %y = graph.matmul_nbits %a, %w, %s {bits = 6 : i64, block_size = 32 : i64} : tensor<1x64xf32>, tensor<8x2x6xi32>, tensor<8x2xf32> -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
// CHECK: 'graph.matmul_nbits' bits must be one of (2, 4, 8), got 6

// -----

func.func @words(%a: tensor<1x64xf32>, %w: tensor<8x2x8xi32>, %s: tensor<8x2xf32>) -> tensor<1x8xf32> {
  %y = graph.matmul_nbits %a, %w, %s {bits = 4 : i64, block_size = 32 : i64} : tensor<1x64xf32>, tensor<8x2x8xi32>, tensor<8x2xf32> -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
// CHECK: 'graph.matmul_nbits' packed must be [N, blocks, 4] (block_size 32 x 4 bits in 32-bit words), got [8, 2, 8]

// -----

func.func @blocks(%a: tensor<1x100xf32>, %w: tensor<8x2x4xi32>, %s: tensor<8x2xf32>) -> tensor<1x8xf32> {
  %y = graph.matmul_nbits %a, %w, %s {bits = 4 : i64, block_size = 32 : i64} : tensor<1x100xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
// CHECK: 'graph.matmul_nbits' K = 100 needs 4 blocks of 32, packed has 2

// -----

func.func @float_words(%a: tensor<1x64xf32>, %w: tensor<8x2x4xf32>, %s: tensor<8x2xf32>) -> tensor<1x8xf32> {
  %y = graph.matmul_nbits %a, %w, %s {bits = 4 : i64, block_size = 32 : i64} : tensor<1x64xf32>, tensor<8x2x4xf32>, tensor<8x2xf32> -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
// CHECK: 'graph.matmul_nbits' packed must be a tensor of i32, got tensor<8x2x4xf32>

// -----

func.func @scales(%a: tensor<1x64xf32>, %w: tensor<8x2x4xi32>, %s: tensor<8x3xf32>) -> tensor<1x8xf32> {
  %y = graph.matmul_nbits %a, %w, %s {bits = 4 : i64, block_size = 32 : i64} : tensor<1x64xf32>, tensor<8x2x4xi32>, tensor<8x3xf32> -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
// CHECK: 'graph.matmul_nbits' scales must be [8, 2], got [8, 3]
