// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @half_ids(%table: tensor<50x16xf32>, %ids: tensor<4xf16>) -> tensor<4x16xf32> {
  %e = graph.take %table, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<4xf16>) -> tensor<4x16xf32>
  func.return %e : tensor<4x16xf32>
}
// CHECK: 'graph.take' indices must be an i32 or f32 tensor, got tensor<4xf16>

// -----

func.func @bad_shape(%table: tensor<50x16xf32>, %ids: tensor<4xi32>) -> tensor<16x4xf32> {
  %e = graph.take %table, %ids {axis = 1 : i64} : (tensor<50x16xf32>, tensor<4xi32>) -> tensor<16x4xf32>
  func.return %e : tensor<16x4xf32>
}
// CHECK: 'graph.take' result shape [16, 4] does not match the shape implied by its operands and attributes: [50, 4]
