// RUN: adreno-opt %s -p convert-layout-nchw4c -o %t && filecheck %s < %t
// RUN: adreno-opt %s -p 'convert-layout-nchw4c{storage=f16}' -o %t && filecheck %s --check-prefix=HALF < %t

// A conv (3 -> 6 channels) + relu, a residual add, then a flatten that stays NCHW.
// Channels are padded to multiples of 4, weights packed OIHW4o (output and input
// channels padded), the bias padded; the model input is packed once, the relu's
// unpack/pack pair cancels, and only the flatten sees an unpack.

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x4x4xf32>)
// CHECK-NEXT: %[[P:.*]] = texture.pack %[[X]] : tensor<1x3x4x4xf32> -> !texture.tensor<1x1x4x4x4xf32, nchw4c, global>
// CHECK:      %[[W:.*]] = graph.constant {{.*}} : tensor<2x4x1x1x4xf32>
// CHECK-NEXT: %[[B:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<8xf32>
// CHECK-NEXT: %[[C:.*]] = graph.conv2d %[[P]], %[[W]], %[[B]] : !texture.tensor<1x1x4x4x4xf32, nchw4c, global>, tensor<2x4x1x1x4xf32>, tensor<8xf32> -> !texture.tensor<1x2x4x4x4xf32, nchw4c, global>
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[C]] : !texture.tensor<1x2x4x4x4xf32, nchw4c, global>
// CHECK-NOT:  texture.pack
// CHECK:      %[[A:.*]] = graph.add %[[R]], %[[C]] : (!texture.tensor<1x2x4x4x4xf32, nchw4c, global>, !texture.tensor<1x2x4x4x4xf32, nchw4c, global>) -> !texture.tensor<1x2x4x4x4xf32, nchw4c, global>
// CHECK-NEXT: %[[U:.*]] = texture.unpack %[[A]] : !texture.tensor<1x2x4x4x4xf32, nchw4c, global> -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %[[F:.*]] = graph.reshape %[[U]] : (tensor<1x6x4x4xf32>) -> tensor<1x96xf32>
// CHECK-NEXT: func.return %[[F]]

// HALF: texture.pack %{{.*}} : tensor<1x3x4x4xf32> -> !texture.tensor<1x1x4x4x4xf16, nchw4c, global>
// HALF: texture.unpack %{{.*}} : !texture.tensor<1x2x4x4x4xf16, nchw4c, global> -> tensor<1x6x4x4xf32>

func.func @main(%x: tensor<1x3x4x4xf32>) -> tensor<1x96xf32> {
  %w = graph.constant dense<[[[[1.0]], [[0.0]], [[0.0]]], [[[0.0]], [[1.0]], [[0.0]]], [[[0.0]], [[0.0]], [[1.0]]], [[[1.0]], [[1.0]], [[0.0]]], [[[0.0]], [[1.0]], [[1.0]]], [[[1.0]], [[0.0]], [[1.0]]]]> : tensor<6x3x1x1xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %c = graph.conv2d %x, %w, %b : tensor<1x3x4x4xf32>, tensor<6x3x1x1xf32>, tensor<6xf32> -> tensor<1x6x4x4xf32>
  %r = graph.relu %c : tensor<1x6x4x4xf32>
  %a = graph.add %r, %c : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %f = graph.reshape %a : (tensor<1x6x4x4xf32>) -> tensor<1x96xf32>
  func.return %f : tensor<1x96xf32>
}
