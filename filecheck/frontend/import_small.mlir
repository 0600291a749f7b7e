// RUN: %python %S/Inputs/make_models.py %t
// RUN: adreno-mlir import %t/small.onnx | filecheck %s
// RUN: adreno-mlir import %t/small.onnx -o %t/small.mlir && adreno-opt %t/small.mlir > %t/again.mlir && diff %t/small.mlir %t/again.mlir

// The shape subgraph (Shape, Gather, Unsqueeze, Concat) folds into the reshape's
// static result type, Identity disappears, and every op keeps its ONNX node name.

// CHECK: builtin.module attributes {graph.weights = "{{.*}}"}
// CHECK: func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x10xf32> attributes {graph.inputs = ["x"], graph.outputs = ["y"]}
// CHECK: %w = graph.constant @w : tensor<8x3x3x3xf32>
// CHECK: graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<1x8x4x4xf32> loc("/conv/Conv")
// CHECK: graph.batch_norm {{.*}} -> tensor<1x8x4x4xf32> loc("/bn/BatchNormalization")
// CHECK: %r = graph.relu %bn : tensor<1x8x4x4xf32> loc("/relu/Relu")
// CHECK-NOT: Shape
// CHECK: %flat = graph.reshape %r : (tensor<1x8x4x4xf32>) -> tensor<1x128xf32> loc("/Reshape")
// CHECK: %fc_w = graph.constant @fc_w : tensor<10x128xf32>
// CHECK: graph.gemm %flat, %fc_w, %fc_b {trans_b = 1 : i64} : tensor<1x128xf32>, tensor<10x128xf32>, tensor<10xf32> -> tensor<1x10xf32> loc("/fc/Gemm")
// CHECK: func.return %y : tensor<1x10xf32>
