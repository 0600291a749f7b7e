// RUN: %python %S/Inputs/make_einsum_convtranspose_models.py %t
// RUN: adreno-mlir import %t/conv_transpose.onnx | filecheck %s
// RUN: adreno-mlir import %t/conv_transpose.onnx -o %t/ct.mlir && adreno-opt %t/ct.mlir > %t/again.mlir && diff %t/ct.mlir %t/again.mlir

// ConvTranspose becomes graph.conv_transpose2d (weights [C_in, C_out / group, KH, KW]).
// output_shape [10, 8] with strides [3, 2] asks for one row and one column more than the
// input reaches (9 x 7): they become output_padding (at the end, as onnxruntime puts them).
// CHECK: %y = graph.conv_transpose2d %x, %w, %b {strides = array<i64: 3, 2>, output_padding = array<i64: 1, 1>} : tensor<1x2x3x3xf32>, tensor<2x3x3x3xf32>, tensor<3xf32> -> tensor<1x3x10x8xf32> loc("/up2d")

// A 1-D ConvTranspose is a 2-D one over N x C x 1 x L: input and weights reshaped (free),
// stride, pads and groups on the second spatial axis, the result reshaped back.
// CHECK:      %[[S:[0-9]+]] = graph.reshape %s : (tensor<1x4x6xf32>) -> tensor<1x4x1x6xf32> loc("/up1d")
// CHECK-NEXT: %[[W:[0-9]+]] = graph.reshape %w1 : (tensor<4x3x3xf32>) -> tensor<4x3x1x3xf32> loc("/up1d")
// CHECK-NEXT: %[[Y:[0-9]+]] = graph.conv_transpose2d %[[S]], %[[W]] {strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 0>, groups = 2 : i64} : tensor<1x4x1x6xf32>, tensor<4x3x1x3xf32> -> tensor<1x6x1x12xf32> loc("/up1d")
// CHECK-NEXT: %z = graph.reshape %[[Y]] : (tensor<1x6x1x12xf32>) -> tensor<1x6x12xf32> loc("/up1d")
