// RUN: adreno-opt %s -p conv-winograd -o %t.mlir && filecheck %s < %t.mlir
// RUN: %python -c "import numpy as np; print(np.load('%t.weights/conv_weight_winograd2.npy')[:, 0, 0, 0].tolist())" | filecheck %s --check-prefix=UVALUES
// RUN: adreno-opt %s -p 'conv-winograd{tile=off}' -o %t.off.mlir && filecheck %s --check-prefix=OFF < %t.off.mlir
// RUN: adreno-opt %s -p 'conv-winograd{target=pocl-cpu}' -o %t.cpu.mlir && filecheck %s --check-prefix=CPU < %t.cpu.mlir

// 128 -> 128 channels at 16x16 (Adreno 740 rule: tile 4, the sides are multiples of 4):
// the conv becomes the input transform (V: 6*6 = 36 positions x 16 channel blocks x 1 x
// 4*4 = 16 tiles), the batched product with the filter transform U (a new weight,
// [36, K/4 = 32, C = 128, 4]) and the output transform with the bias, all at the conv's
// location; the relu after it is untouched (the lowering fuses it into the output
// kernel), the packed 3x3 weights are gone.

// CHECK-LABEL: func.func @auto
// CHECK-SAME:    (%[[X:[a-z0-9_]+]]: !texture.tensor<1x32x16x16x4xf32, nchw4c, global>)
// CHECK-DAG:     %[[B:[a-z0-9_]+]] = graph.constant dense<1.000000e+00> : tensor<128xf32>
// CHECK-DAG:     %[[U:[a-z0-9_]+]] = graph.constant @conv_weight_winograd4 : tensor<36x32x128x4xf32> loc("conv_a")
// CHECK-NOT:     graph.conv2d
// CHECK:         %[[V:[a-z0-9_]+]] = texture.winograd_input %[[X]] {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x16x16x4xf32, nchw4c, global> -> !texture.tensor<36x32x1x16x4xf32, nchw4c, global> loc("conv_a")
// CHECK-NEXT:    %[[M:[a-z0-9_]+]] = texture.winograd_matmul %[[V]], %[[U]] : !texture.tensor<36x32x1x16x4xf32, nchw4c, global>, tensor<36x32x128x4xf32> -> !texture.tensor<36x32x1x16x4xf32, nchw4c, global> loc("conv_a")
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = texture.winograd_output %[[M]], %[[B]] {tile = 4 : i64} : !texture.tensor<36x32x1x16x4xf32, nchw4c, global>, tensor<128xf32> -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> loc("conv_a")
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = graph.relu %[[Y]]
// CHECK-NEXT:    func.return %[[R]]

// OFF-LABEL:   func.func @auto
// OFF:           graph.conv2d
// OFF-NOT:       texture.winograd

// CPU-LABEL:   func.func @auto
// CPU:           texture.winograd_input {{.*}}tile = 4

func.func @auto(%x: !texture.tensor<1x32x16x16x4xf32, nchw4c, global>) -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<32x128x3x3x4xf32>
  %b = graph.constant dense<1.0> : tensor<128xf32>
  %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>, tensor<32x128x3x3x4xf32>, tensor<128xf32> -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> loc("conv_a")
  %r = graph.relu %c : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>
  func.return %r : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>
}

// `{winograd = 2}` forces F(2x2,3x3) where the rule would take 4, also with tile=off;
// no padding: the 16x16 input gives a 14x14 output, 7 x 7 = 49 tiles, no bias.
// U of all-ones weights is (G 1 G^T)[i][j] = r[i] r[j], r = G's row sums [1, 1.5, 0.5, 1].

// CHECK-LABEL: func.func @forced2
// CHECK:         %[[U2:[a-z0-9_]+]] = graph.constant @conv_weight_winograd2 : tensor<16x16x64x4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = texture.winograd_input %x {tile = 2 : i64, pads = array<i64: 0, 0, 0, 0>} : !texture.tensor<1x16x16x16x4xf32, nchw4c, global> -> !texture.tensor<16x16x1x49x4xf32, nchw4c, global>
// CHECK-NEXT:    %[[M2:[a-z0-9_]+]] = texture.winograd_matmul %[[V2]], %[[U2]]
// CHECK-NEXT:    %[[Y2:[a-z0-9_]+]] = texture.winograd_output %[[M2]] {tile = 2 : i64} : !texture.tensor<16x16x1x49x4xf32, nchw4c, global> -> !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
// CHECK-NEXT:    func.return %[[Y2]]

// UVALUES: [1.0, 1.5, 0.5, 1.0, 1.5, 2.25, 0.75, 1.5, 0.5, 0.75, 0.25, 0.5, 1.0, 1.5, 0.5, 1.0]

// OFF-LABEL:   func.func @forced2
// OFF:           texture.winograd_input %x {tile = 2 : i64

func.func @forced2(%x: !texture.tensor<1x16x16x16x4xf32, nchw4c, global>) -> !texture.tensor<1x16x14x14x4xf32, nchw4c, global> {
  %w = graph.constant dense<1.0> : tensor<16x64x3x3x4xf32>
  %c = graph.conv2d %x, %w {winograd = 2 : i64} : !texture.tensor<1x16x16x16x4xf32, nchw4c, global>, tensor<16x64x3x3x4xf32> -> !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
}

// `{winograd = 0}` keeps the direct convolution (and its attribute).

// CHECK-LABEL: func.func @kept
// CHECK:         graph.conv2d %x, %{{.*}}, %{{.*}} {winograd = 0 : i64, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NOT:     texture.winograd

// CPU-LABEL:   func.func @kept
// CPU-NOT:       texture.winograd

func.func @kept(%x: !texture.tensor<1x16x16x16x4xf32, nchw4c, global>) -> !texture.tensor<1x16x16x16x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<16x64x3x3x4xf32>
  %b = graph.constant dense<1.0> : tensor<64xf32>
  %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, winograd = 0 : i64} : !texture.tensor<1x16x16x16x4xf32, nchw4c, global>, tensor<16x64x3x3x4xf32>, tensor<64xf32> -> !texture.tensor<1x16x16x16x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x16x16x16x4xf32, nchw4c, global>
}

// Stride 2 does not qualify: untouched.

// CHECK-LABEL: func.func @strided
// CHECK:         graph.conv2d %x, %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NOT:     texture.winograd

func.func @strided(%x: !texture.tensor<1x16x16x16x4xf32, nchw4c, global>) -> !texture.tensor<1x16x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.125> : tensor<16x64x3x3x4xf32>
  %b = graph.constant dense<1.0> : tensor<64xf32>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x16x16x16x4xf32, nchw4c, global>, tensor<16x64x3x3x4xf32>, tensor<64xf32> -> !texture.tensor<1x16x8x8x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x16x8x8x4xf32, nchw4c, global>
}
