// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt | adreno-opt | filecheck %s
// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ERR

// The reduction ops (one per ONNX Reduce* kind, sharing graph.ReduceOp's fields and
// verifier) and graph.log_softmax. The first chunk round-trips: parse, print, parse
// again, print the same text. keepdims = 1 is the default and not printed; empty axes
// (ONNX noop_with_empty_axes for a kind that still transforms each element) are legal.
// The other chunks must fail to verify with the messages below.

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4x5xf32>, %s: tensor<3x7xf32>) -> tensor<3x7xf32> {
  // CHECK: %m = graph.reduce_mean %x {axes = array<i64: 2, 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  %m = graph.reduce_mean %x {axes = array<i64: 2, 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  // CHECK: %su = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5xf32>
  %su = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5xf32>
  // CHECK: %mx = graph.reduce_max %x {axes = array<i64: 0, 3>} : (tensor<2x3x4x5xf32>) -> tensor<1x3x4x1xf32>
  %mx = graph.reduce_max %x {axes = array<i64: 0, 3>, keepdims = 1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<1x3x4x1xf32>
  // CHECK: %mn = graph.reduce_min %x {axes = array<i64: 0, 1, 2, 3>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<f32>
  %mn = graph.reduce_min %x {axes = array<i64: 0, 1, 2, 3>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<f32>
  // CHECK: %pr = graph.reduce_prod %x {axes = array<i64: 2>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x5xf32>
  %pr = graph.reduce_prod %x {axes = array<i64: 2>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x5xf32>
  // CHECK: %l1 = graph.reduce_l1 %x {axes = array<i64: 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x1xf32>
  %l1 = graph.reduce_l1 %x {axes = array<i64: 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x1xf32>
  // CHECK: %l2 = graph.reduce_l2 %x {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x5xf32>
  %l2 = graph.reduce_l2 %x {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x5xf32>
  // CHECK: %ss = graph.reduce_sum_square %x {axes = array<i64: 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x1x4x5xf32>
  %ss = graph.reduce_sum_square %x {axes = array<i64: 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x1x4x5xf32>
  // CHECK: %ls = graph.reduce_log_sum %x {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<3x4x5xf32>
  %ls = graph.reduce_log_sum %x {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<3x4x5xf32>
  // CHECK: %lse = graph.reduce_log_sum_exp %x {axes = array<i64: 3>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4xf32>
  %lse = graph.reduce_log_sum_exp %x {axes = array<i64: 3>, keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4xf32>
  // Over no axes: the shape is kept whatever keepdims says.
  // CHECK: %sq = graph.reduce_sum_square %s {axes = array<i64>, keepdims = 0 : i64} : (tensor<3x7xf32>) -> tensor<3x7xf32>
  %sq = graph.reduce_sum_square %s {axes = array<i64>, keepdims = 0 : i64} : (tensor<3x7xf32>) -> tensor<3x7xf32>
  // A reduction that keeps its dims heads a fused element-wise tail like ReduceMean.
  // CHECK: %f = graph.fused -> tensor<3x1xf32> {
  // CHECK-NEXT: %fm = graph.reduce_max %s {axes = array<i64: 1>} : (tensor<3x7xf32>) -> tensor<3x1xf32>
  // CHECK-NEXT: %fr = graph.relu %fm : tensor<3x1xf32>
  // CHECK-NEXT: graph.yield %fr : tensor<3x1xf32>
  %f = graph.fused -> tensor<3x1xf32> {
    %fm = graph.reduce_max %s {axes = array<i64: 1>} : (tensor<3x7xf32>) -> tensor<3x1xf32>
    %fr = graph.relu %fm : tensor<3x1xf32>
    graph.yield %fr : tensor<3x1xf32>
  }
  // CHECK: %lsm = graph.log_softmax %sq {axis = 1 : i64} : tensor<3x7xf32>
  %lsm = graph.log_softmax %sq {axis = 1 : i64} : tensor<3x7xf32>
  // CHECK: %lsd = graph.log_softmax %lsm : tensor<3x7xf32>
  %lsd = graph.log_softmax %lsm {axis = -1 : i64} : tensor<3x7xf32>
  func.return %lsd : tensor<3x7xf32>
}

// -----

func.func @repeated_axis(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %r = graph.reduce_l2 %x {axes = array<i64: 1, 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
// ERR: 'graph.reduce_l2' axes [1, 1] must be distinct and in [0, 3)

// -----

func.func @negative_axis(%x: tensor<2x3x4xf32>) -> tensor<2x3xf32> {
  %r = graph.reduce_max %x {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// ERR: 'graph.reduce_max' axes [-1] must be distinct and in [0, 3)

// -----

func.func @keepdims_shape(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %r = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
// ERR: 'graph.reduce_sum' result shape [2, 4] does not match the shape implied by its operands and attributes: [2, 1, 4]

// -----

func.func @dropped_shape(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %r = graph.reduce_log_sum_exp %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  func.return %r : tensor<2x1x4xf32>
}
// ERR: 'graph.reduce_log_sum_exp' result shape [2, 1, 4] does not match the shape implied by its operands and attributes: [2, 4]

// -----

func.func @no_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = graph.reduce_min %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// ERR: property 'axes' expected in operation 'graph.reduce_min'

// -----

func.func @log_softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = graph.log_softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// ERR: 'graph.log_softmax' axis 2 out of range for rank 2

// -----

func.func @log_softmax_type(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %r = "graph.log_softmax"(%x) <{axis = 1 : i64}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}
// ERR: attribute tensor<2x3xf32> expected from variable 'T', but got tensor<3x2xf32>
