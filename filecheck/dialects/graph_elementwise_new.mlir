// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt | adreno-opt | filecheck %s
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt -p graph-canonicalize | filecheck %s --check-prefix=FOLD
// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ERR

// The element-wise ops of ONNX Log, Reciprocal, Pow, Gelu, Max/Min (and Sum, as add),
// PRelu and Where. The first chunk round-trips (parse, print, parse again, print the
// same text; default attributes are not printed) and, through graph-canonicalize, folds
// ops on constants with each op's numpy `evaluate`. The other chunks must fail to
// verify with the messages below.

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<1x8x5x6xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32> {
  // CHECK: %l = graph.log %x : tensor<1x8x5x6xf32>
  %l = graph.log %x : tensor<1x8x5x6xf32>
  // CHECK: %r = graph.reciprocal %l : tensor<1x8x5x6xf32>
  %r = graph.reciprocal %l : tensor<1x8x5x6xf32>
  // CHECK: %p = graph.pow %r {exponent = 3.000000e+00 : f32} : tensor<1x8x5x6xf32>
  %p = graph.pow %r {exponent = 3.0 : f32} : tensor<1x8x5x6xf32>
  // CHECK: %ge = graph.gelu %p : tensor<1x8x5x6xf32>
  %ge = graph.gelu %p {approximate = "none"} : tensor<1x8x5x6xf32>
  // CHECK: %gt = graph.gelu %ge {approximate = "tanh"} : tensor<1x8x5x6xf32>
  %gt = graph.gelu %ge {approximate = "tanh"} : tensor<1x8x5x6xf32>
  // CHECK: %mx = graph.max %gt, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  %mx = graph.max %gt, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  // CHECK: %mn = graph.min %s, %mx : (tensor<8x1x1xf32>, tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32>
  %mn = graph.min %s, %mx : (tensor<8x1x1xf32>, tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32>
  // CHECK: %pt = graph.pow_tensor %mn, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  %pt = graph.pow_tensor %mn, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  // CHECK: %pr = graph.prelu %pt, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  %pr = graph.prelu %pt, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  // The condition of graph.where is a float tensor of 0s and 1s; all three operands broadcast.
  // CHECK: %c = graph.constant dense<{{\[}}[1.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00]]> : tensor<1x6xf32>
  %c = graph.constant dense<[[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]]> : tensor<1x6xf32>
  // CHECK: %low = graph.constant dense<-1.000000e+30> : tensor<f32>
  %low = graph.constant dense<-1.0e+30> : tensor<f32>
  // CHECK: %w = graph.where %c, %pr, %low : (tensor<1x6xf32>, tensor<1x8x5x6xf32>, tensor<f32>) -> tensor<1x8x5x6xf32>
  %w = graph.where %c, %pr, %low : (tensor<1x6xf32>, tensor<1x8x5x6xf32>, tensor<f32>) -> tensor<1x8x5x6xf32>
  func.return %w : tensor<1x8x5x6xf32>
}

// Ops whose operands are all constants are evaluated by graph-canonicalize: max/min
// propagate NaN (log(-1) here), pow is specialised as the kernels do it, where selects
// (the NaN and inf it does not choose never reach the result).
// FOLD-LABEL: func.func @fold
// FOLD-NEXT:    %{{.*}} = graph.constant dense<[4.000000e+00, 1.000000e+00, {{0x[7f]fc00000}}, 0.000000e+00]> : tensor<4xf32>
// FOLD-NEXT:    %{{.*}} = graph.constant dense<[-2.000000e+00, 1.000000e+00, {{0x[7f]fc00000}}, 0.000000e+00]> : tensor<4xf32>
// FOLD-NEXT:    %{{.*}} = graph.constant dense<[5.000000e-01, 0.000000e+00, -1.000000e+00, 0xff800000]> : tensor<4xf32>
// FOLD-NEXT:    func.return
func.func @fold() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = graph.constant dense<[2.0, 1.0, -1.0, 0.0]> : tensor<4xf32>
  %sq = graph.pow %a {exponent = 2.0 : f32} : tensor<4xf32>
  %lg = graph.log %a : tensor<4xf32>
  %mx = graph.max %sq, %lg : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %x = graph.constant dense<[-2.0, 1.0, 5.0, -1.0]> : tensor<4xf32>
  %slope = graph.constant dense<[1.0, -0.5, 1.0, -3.0]> : tensor<4xf32>
  %pr = graph.prelu %x, %slope : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %rt = graph.pow %a {exponent = 0.5 : f32} : tensor<4xf32>
  %mn = graph.min %pr, %rt : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %m = graph.constant dense<[1.0, 0.0, 1.0, 0.0]> : tensor<4xf32>
  %rc = graph.reciprocal %a : tensor<4xf32>
  %w = graph.where %m, %rc, %lg : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %mx, %mn, %w : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @gelu_approximation(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %g = graph.gelu %x {approximate = "fast"} : tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}
// ERR: 'graph.gelu' approximate = "fast" is not one of none, tanh

// -----

func.func @pow_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %p = graph.pow %x {exponent = 2.0 : f32} : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %p : tensor<3x2xf32>
}
// ERR: 'graph.pow' result shape [3, 2] does not match the shape implied by its operands and attributes: [2, 3]

// -----

func.func @pow_needs_exponent(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %p = graph.pow %x : tensor<2x3xf32>
  func.return %p : tensor<2x3xf32>
}
// ERR: property 'exponent' expected in operation 'graph.pow'

// -----

func.func @max_broadcast(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  %m = graph.max %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %m : tensor<2x3xf32>
}
// ERR: shapes [[2, 3], [2]] are not broadcast-compatible

// -----

func.func @min_result(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x1xf32> {
  %m = graph.min %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  func.return %m : tensor<2x1xf32>
}
// ERR: 'graph.min' result shape [2, 1] does not match the shape implied by its operands and attributes: [2, 3]

// -----

// PRelu's slope broadcasts to the input (ONNX's unidirectional broadcasting), not the reverse.
func.func @prelu_slope(%x: tensor<1x4x1x1xf32>, %s: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %p = graph.prelu %x, %s : (tensor<1x4x1x1xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %p : tensor<1x4x3x3xf32>
}
// ERR: 'graph.prelu' slope of shape [1, 4, 3, 3] does not broadcast to the input's shape [1, 4, 1, 1]

// -----

func.func @where_broadcast(%c: tensor<4xf32>, %x: tensor<2x3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  %w = graph.where %c, %x, %y : (tensor<4xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %w : tensor<2x3xf32>
}
// ERR: shapes [[4], [2, 3], []] are not broadcast-compatible

// -----

func.func @where_result(%c: tensor<3xf32>, %x: tensor<2x3xf32>, %y: tensor<2x1xf32>) -> tensor<3xf32> {
  %w = graph.where %c, %x, %y : (tensor<3xf32>, tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<3xf32>
  func.return %w : tensor<3xf32>
}
// ERR: 'graph.where' result shape [3] does not match the shape implied by its operands and attributes: [2, 3]
