// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @conv_bad_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %c = graph.conv2d %x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
  func.return %c : tensor<1x4x8x8xf32>
}
// CHECK: 'graph.conv2d' result shape [1, 4, 8, 8] does not match the shape implied by its operands and attributes: [1, 4, 6, 6]

// -----

func.func @conv_groups(%x: tensor<1x6x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %c = graph.conv2d %x, %w {groups = 4 : i64} : tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}
// CHECK: 'graph.conv2d' groups = 4 must divide input channels (6) and output channels (4)

// -----

func.func @conv_in_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %c = graph.conv2d %x, %w : tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}
// CHECK: 'graph.conv2d' weight has 3 input channels per group but the input has 6 channels in 1 group(s)

// -----

func.func @conv_strides(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %c = graph.conv2d %x, %w {strides = array<i64: 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}
// CHECK: 'graph.conv2d' strides must have 2 values, got [1]

// -----

func.func @broadcast(%a: tensor<1x3xf32>, %b: tensor<4xf32>) -> tensor<1x3xf32> {
  %c = graph.add %a, %b : (tensor<1x3xf32>, tensor<4xf32>) -> tensor<1x3xf32>
  func.return %c : tensor<1x3xf32>
}
// CHECK: shapes [[1, 3], [4]] are not broadcast-compatible

// -----

func.func @dynamic(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %c = graph.relu %a : tensor<?x3xf32>
  func.return %c : tensor<?x3xf32>
}
// CHECK: expected a static shape, got tensor<?x3xf32>

// -----

func.func @pool(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %p = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %p : tensor<1x3x4x4xf32>
}
// CHECK: 'graph.max_pool' result shape [1, 3, 4, 4] does not match the shape implied by its operands and attributes: [1, 3, 3, 3]

// -----

func.func @reshape(%x: tensor<1x3x8x8xf32>) -> tensor<1x100xf32> {
  %r = graph.reshape %x : (tensor<1x3x8x8xf32>) -> tensor<1x100xf32>
  func.return %r : tensor<1x100xf32>
}
// CHECK: 'graph.reshape' cannot reshape [1, 3, 8, 8] (192 elements) to [1, 100] (100 elements)

// -----

func.func @concat(%a: tensor<1x3x8x8xf32>, %b: tensor<1x3x4x8xf32>) -> tensor<1x6x8x8xf32> {
  %r = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<1x3x4x8xf32>) -> tensor<1x6x8x8xf32>
  func.return %r : tensor<1x6x8x8xf32>
}
// CHECK: 'graph.concat' inputs [[1, 3, 8, 8], [1, 3, 4, 8]] differ outside axis 1

// -----

func.func @gemm(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %r = graph.gemm %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  func.return %r : tensor<2x5xf32>
}
// CHECK: 'graph.gemm' inner dimensions differ: A gives 3, B gives 4

// -----

func.func @transpose(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %r = graph.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}
// CHECK: 'graph.transpose' perm [0, 0] is not a permutation of 0..1

// -----

func.func @clip(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = graph.clip %a {min = 6.0 : f32, max = 0.0 : f32} : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'graph.clip' min (6.0) is greater than max (0.0)

// -----

func.func @resize(%a: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  %r = graph.resize %a {mode = "bicubic"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return %r : tensor<1x3x8x8xf32>
}
// CHECK: 'graph.resize' mode 'bicubic' is not one of ['nearest', 'linear', 'cubic']

// -----

func.func @constant() -> tensor<2xf32> {
  %r = "graph.constant"() : () -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
// CHECK: 'graph.constant' needs exactly one of a weight reference (@name) or an inline dense<...> value

// -----

func.func @matmul_perm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %m = graph.matmul %a, %b {lhs_perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  func.return %m : tensor<2x3x5xf32>
}
// CHECK: 'graph.matmul' lhs_perm [1, 0] is not a permutation of 0..2 (the lhs operand has rank 3)

// -----

func.func @matmul_perm_shape(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>) -> tensor<3x4xf32> {
  %m = graph.matmul %a, %b {rhs_perm = array<i64: 1, 0>} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  func.return %m : tensor<3x4xf32>
}
// CHECK: 'graph.matmul' result shape [3, 4] does not match the shape implied by its operands and attributes: [3, 5]
