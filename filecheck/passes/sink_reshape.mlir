// RUN: adreno-opt %s -p graph-canonicalize | filecheck %s

// SinkReshapeBelowElementwise: an element-wise op on a reshaped product moves above the
// reshape (graph-fuse then makes it the product's epilogue).

// LeViT's Linear + BatchNorm1d: MatMul -> Flatten -> Mul, Add (per channel) -> Reshape ->
// HardSwish. Everything but the product moves below one reshape.
// CHECK-LABEL: func.func @linear_batchnorm
// CHECK-SAME: (%[[X:.*]]: tensor<1x6x8xf32>, %[[W:.*]]: tensor<8x4xf32>, %[[S:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[P:.*]] = graph.matmul %[[X]], %[[W]] : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
// CHECK-NEXT: %[[M:.*]] = graph.mul %[[P]], %[[S]] : (tensor<1x6x4xf32>, tensor<4xf32>) -> tensor<1x6x4xf32>
// CHECK-NEXT: %[[A:.*]] = graph.add %[[M]], %[[B]] : (tensor<1x6x4xf32>, tensor<4xf32>) -> tensor<1x6x4xf32>
// CHECK-NEXT: %[[H:.*]] = graph.hard_swish %[[A]] : tensor<1x6x4xf32>
// CHECK-NEXT: func.return %[[H]] : tensor<1x6x4xf32>
func.func @linear_batchnorm(%x: tensor<1x6x8xf32>, %w: tensor<8x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<1x6x4xf32> {
  %p = graph.matmul %x, %w : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
  %f = graph.reshape %p : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
  %m = graph.mul %f, %s : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
  %a = graph.add %m, %b : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
  %r = graph.reshape %a : (tensor<6x4xf32>) -> tensor<1x6x4xf32>
  %h = graph.hard_swish %r : tensor<1x6x4xf32>
  func.return %h : tensor<1x6x4xf32>
}

// nn.MultiheadAttention's output projection: Gemm -> Reshape -> the residual Add. The
// residual (the op's full shape) is read through a reshape of its own.
// CHECK-LABEL: func.func @gemm_residual
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>, %[[W:.*]]: tensor<4x4xf32>, %[[C:.*]]: tensor<4xf32>, %[[R:.*]]: tensor<1x6x4xf32>)
// CHECK-NEXT: %[[G:.*]] = graph.gemm %[[X]], %[[W]], %[[C]]
// CHECK-NEXT: %[[V:.*]] = graph.reshape %[[R]] : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %[[A:.*]] = graph.add %[[V]], %[[G]] : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %[[O:.*]] = graph.reshape %[[A]] : (tensor<6x4xf32>) -> tensor<1x6x4xf32>
// CHECK-NEXT: func.return %[[O]]
func.func @gemm_residual(%x: tensor<6x4xf32>, %w: tensor<4x4xf32>, %c: tensor<4xf32>, %res: tensor<1x6x4xf32>) -> tensor<1x6x4xf32> {
  %g = graph.gemm %x, %w, %c : tensor<6x4xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<6x4xf32>
  %v = graph.reshape %g : (tensor<6x4xf32>) -> tensor<1x6x4xf32>
  %a = graph.add %res, %v : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  func.return %a : tensor<1x6x4xf32>
}

// Left alone: a per-channel operand over an axis the reshape splits (it would meet other
// elements), a reshape another op also reads, a reshape of a function argument (no
// product to fuse into), and two reshaped products.
// CHECK-LABEL: func.func @kept
// CHECK: %[[F:.*]] = graph.reshape %{{.*}} : (tensor<1x6x4xf32>) -> tensor<1x24xf32>
// CHECK-NEXT: graph.mul %[[F]], %{{.*}} : (tensor<1x24xf32>, tensor<24xf32>) -> tensor<1x24xf32>
// CHECK: %[[G:.*]] = graph.reshape %{{.*}} : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: graph.relu %[[G]] : tensor<6x4xf32>
// CHECK-NEXT: graph.sigmoid %[[G]] : tensor<6x4xf32>
// CHECK-NEXT: %[[H:.*]] = graph.reshape %{{.*}} : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: graph.relu %[[H]] : tensor<6x4xf32>
// CHECK: %[[P1:.*]] = graph.reshape %{{.*}} : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
// CHECK: %[[P2:.*]] = graph.reshape %{{.*}} : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: graph.add %[[P1]], %[[P2]] : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
func.func @kept(%x: tensor<1x6x8xf32>, %w: tensor<8x4xf32>, %s: tensor<24xf32>, %y: tensor<1x6x4xf32>)
    -> (tensor<1x24xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>) {
  %p = graph.matmul %x, %w : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
  %f = graph.reshape %p : (tensor<1x6x4xf32>) -> tensor<1x24xf32>
  %m = graph.mul %f, %s : (tensor<1x24xf32>, tensor<24xf32>) -> tensor<1x24xf32>
  %q = graph.matmul %x, %w : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
  %g = graph.reshape %q : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
  %r1 = graph.relu %g : tensor<6x4xf32>
  %r2 = graph.sigmoid %g : tensor<6x4xf32>
  %h = graph.reshape %y : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
  %r3 = graph.relu %h : tensor<6x4xf32>
  %u = graph.matmul %x, %w : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
  %v = graph.matmul %x, %w : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
  %p1 = graph.reshape %u : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
  %p2 = graph.reshape %v : (tensor<1x6x4xf32>) -> tensor<6x4xf32>
  %sum = graph.add %p1, %p2 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  func.return %m, %r1, %r2, %r3, %sum : tensor<1x24xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>
}
