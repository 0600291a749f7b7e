// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt | adreno-opt | filecheck %s
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt -p graph-canonicalize | filecheck %s --check-prefix=FOLD
// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ERR

// graph.elu (ONNX Elu) and graph.resize's cubic mode with its cubic_coeff_a and
// exclude_outside. The first chunk round-trips (parse, print, parse again, print the
// same text; attributes at their default value, alpha = 1 and cubic_coeff_a = -0.75,
// exclude_outside = 0, are not printed) and, through graph-canonicalize, folds an elu of
// a constant with the op's numpy `evaluate` (max(x, 0) + alpha * expm1(min(x, 0))). The
// other chunks must fail to verify with the messages below.

// CHECK-LABEL: func.func @elu_cubic
func.func @elu_cubic(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x8x8xf32>, tensor<1x8x6x10xf32>) {
  // CHECK: %e = graph.elu %x : tensor<1x8x4x4xf32>
  %e = graph.elu %x {alpha = 1.0 : f32} : tensor<1x8x4x4xf32>
  // CHECK: %e2 = graph.elu %e {alpha = 5.000000e-01 : f32} : tensor<1x8x4x4xf32>
  %e2 = graph.elu %e {alpha = 0.5 : f32} : tensor<1x8x4x4xf32>
  // CHECK: %up = graph.resize %e2 {mode = "cubic", scales = [1.000000e+00 : f32, 1.000000e+00 : f32, 2.000000e+00 : f32, 2.000000e+00 : f32]} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32>
  %up = graph.resize %e2 {mode = "cubic", cubic_coeff_a = -0.75 : f32, exclude_outside = 0 : i64, scales = [1.0 : f32, 1.0 : f32, 2.0 : f32, 2.0 : f32]} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32>
  // CHECK: %sz = graph.resize %e2 {mode = "cubic", coordinate_transformation_mode = "align_corners", cubic_coeff_a = -5.000000e-01 : f32, exclude_outside = 1 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8x6x10xf32>
  %sz = graph.resize %e2 {mode = "cubic", coordinate_transformation_mode = "align_corners", cubic_coeff_a = -0.5 : f32, exclude_outside = 1 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8x6x10xf32>
  func.return %e, %up, %sz : tensor<1x8x4x4xf32>, tensor<1x8x8x8xf32>, tensor<1x8x6x10xf32>
}

// elu(-1) = expm1(-1) = -0.632120550; with alpha 2 below 0, x itself above; -1e-7 stays
// -1e-7 (expm1: exp(-1e-7) - 1 in f32 would be -1.19e-07).
// FOLD-LABEL: func.func @fold
// FOLD-NEXT:    %{{.*}} = graph.constant dense<[-0.63212055, 0.000000e+00, 2.500000e+00, -9.99999941e-08]> : tensor<4xf32>
// FOLD-NEXT:    %{{.*}} = graph.constant dense<[-1.2642411, 0.000000e+00, 2.500000e+00, -1.99999988e-07]> : tensor<4xf32>
// FOLD-NEXT:    func.return
func.func @fold() -> (tensor<4xf32>, tensor<4xf32>) {
  %a = graph.constant dense<[-1.0, 0.0, 2.5, -1.0e-07]> : tensor<4xf32>
  %e = graph.elu %a : tensor<4xf32>
  %e2 = graph.elu %a {alpha = 2.0 : f32} : tensor<4xf32>
  func.return %e, %e2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// An infinite alpha would make every positive x NaN (inf * expm1(0)).
func.func @elu_alpha(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = graph.elu %x {alpha = 0x7F800000 : f32} : tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}
// ERR: 'graph.elu' alpha (inf) must be finite

// -----

func.func @elu_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = graph.elu %x : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %e : tensor<3x2xf32>
}
// ERR: 'graph.elu' result shape [3, 2] does not match the shape implied by its operands and attributes: [2, 3]

// -----

func.func @cubic_coeff_a(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  %r = graph.resize %x {mode = "cubic", cubic_coeff_a = 0x7FC00000 : f32} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return %r : tensor<1x3x8x8xf32>
}
// ERR: 'graph.resize' cubic_coeff_a (nan) must be finite

// -----

func.func @exclude_outside_value(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  %r = graph.resize %x {mode = "cubic", exclude_outside = 2 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return %r : tensor<1x3x8x8xf32>
}
// ERR: 'graph.resize' exclude_outside must be 0 or 1, got 2

// -----

// Nearest has no weights to exclude (ONNX's reference would divide by a zero sum).
func.func @exclude_outside_nearest(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  %r = graph.resize %x {mode = "nearest", exclude_outside = 1 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return %r : tensor<1x3x8x8xf32>
}
// ERR: 'graph.resize' exclude_outside = 1 needs mode 'linear' or 'cubic', not 'nearest'

// -----

func.func @cubic_batch_axis(%x: tensor<1x3x4x4xf32>) -> tensor<2x3x8x8xf32> {
  %r = graph.resize %x {mode = "cubic"} : (tensor<1x3x4x4xf32>) -> tensor<2x3x8x8xf32>
  func.return %r : tensor<2x3x8x8xf32>
}
// ERR: 'graph.resize' only resizes the last two axes: [1, 3, 4, 4] -> [2, 3, 8, 8]
