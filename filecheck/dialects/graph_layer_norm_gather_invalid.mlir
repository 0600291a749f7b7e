// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @scale_does_not_broadcast(%x: tensor<2x8xf32>, %s: tensor<4xf32>) -> tensor<2x8xf32> {
  %y = graph.layer_norm %x, %s {axis = 1 : i64} : tensor<2x8xf32>, tensor<4xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK: 'graph.layer_norm' scale of shape [4] does not broadcast to the normalized axes [8]

// -----

func.func @axis_out_of_range(%x: tensor<2x8xf32>, %s: tensor<8xf32>) -> tensor<2x8xf32> {
  %y = graph.layer_norm %x, %s {axis = 2 : i64} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK: 'graph.layer_norm' axis 2 out of range for rank 2

// -----

func.func @index_outside(%x: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = graph.gather %x {axis = 0 : i64, indices = array<i64: 0, 3>, indices_shape = array<i64: 2>} : (tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK: 'graph.gather' indices [3] are outside [0, 3) along axis 0

// -----

func.func @indices_shape(%x: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = graph.gather %x {axis = 0 : i64, indices = array<i64: 0, 1>, indices_shape = array<i64: 3>} : (tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK: 'graph.gather' has 2 indices for indices_shape [3]
