// RUN: adreno-opt %s | adreno-opt | filecheck %s
// RUN: adreno-opt %s -p graph-fuse,convert-graph-to-opencl -t opencl | filecheck %s --check-prefix=CL

// Booleans computed at run time are f32 masks of 0s and 1s (dialects/graph.py, "booleans"):
// comparisons (ordered: false where either side is NaN), IsNaN / IsInf, Cast to bool, the
// logical ops, and a Where selecting by a computed mask. Round trip, and the OpenCL C of each.

// CHECK-LABEL: func.func @masks
// CHECK:         %n = graph.is_nan %x : tensor<2x8xf32>
// CHECK:         %i = graph.is_inf %x {detect_negative = 0 : i64} : tensor<2x8xf32>
// CHECK:         %b = graph.to_bool %z : tensor<2x8xf32>
// CHECK:         %nb = graph.not %b : tensor<2x8xf32>
// CHECK:         %e = graph.equal %x, %z
// CHECK:         %l = graph.less %x, %z
// CHECK:         %le = graph.less_equal %x, %z
// CHECK:         %g = graph.greater %x, %z
// CHECK:         %ge = graph.greater_equal %x, %z
// CHECK:         %a = graph.and %e, %l
// CHECK:         %o = graph.or %a, %le
// CHECK:         %xo = graph.xor %o, %g
// CHECK:         %y = graph.where %o5, %x, %z

// CL-LABEL: __kernel void is_inf(
// CL:         out[i] = (v0 == INFINITY) ? 1.0f : 0.0f;
// CL-LABEL: __kernel void to_bool_not(
// CL:         out[i] = (((v0 != 0.0f) ? 1.0f : 0.0f) == 0.0f) ? 1.0f : 0.0f;
// CL-LABEL: __kernel void less(
// CL:         out[i] = (v0 < v1) ? 1.0f : 0.0f;
// CL-LABEL: __kernel void less_equal(
// CL:         out[i] = (v0 <= v1) ? 1.0f : 0.0f;
// CL-LABEL: __kernel void equal_and_or_xor_or(
// CL:         (v0 == v1) ? 1.0f : 0.0f
// CL-LABEL: __kernel void is_nan_or_or_and_where(
// CL:         isnan(v1)
func.func @masks(%x: tensor<2x8xf32>, %z: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {graph.inputs = ["x", "z"], graph.outputs = ["y"]} {
  %n = graph.is_nan %x : tensor<2x8xf32>
  %i = graph.is_inf %x {detect_negative = 0 : i64} : tensor<2x8xf32>
  %b = graph.to_bool %z : tensor<2x8xf32>
  %nb = graph.not %b : tensor<2x8xf32>
  %e = graph.equal %x, %z : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %l = graph.less %x, %z : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %le = graph.less_equal %x, %z : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g = graph.greater %x, %z : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %ge = graph.greater_equal %x, %z : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %a = graph.and %e, %l : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %o = graph.or %a, %le : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %xo = graph.xor %o, %g : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %o2 = graph.or %xo, %ge : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %o3 = graph.or %o2, %n : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %o4 = graph.or %o3, %i : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %o5 = graph.and %o4, %nb : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = graph.where %o5, %x, %z : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
