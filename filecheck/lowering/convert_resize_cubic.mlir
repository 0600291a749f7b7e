// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,convert-graph-to-opencl,cse' -o %t && filecheck %s < %t
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,convert-graph-to-opencl,cse' -t opencl -o %t.cl && filecheck %s --check-prefix=OCL < %t.cl
// RUN: adreno-opt %s --split-input-file -p 'convert-layout-nchw4c,graph-fuse,convert-graph-to-opencl,cse' -t opencl -o %t.4c.cl && filecheck %s --check-prefix=PACKED < %t.4c.cl
// RUN: adreno-opt %s --split-input-file -p 'convert-layout-nchw4c{storage=f16},graph-fuse,select-kernel-config{min-work-items=1 compute=f16},convert-graph-to-opencl,cse' -t opencl -o %t.half.cl && filecheck %s --check-prefix=HALF < %t.half.cl

// Bicubic Resize (mode = "cubic"): one work-item per output pixel computes its source
// coordinate per axis (as the other modes do), t = s - floor(s), the four Keys weights
// of cubic_coeff_a at t + 1, t, 1 - t and 2 - t, and reads the 4x4 taps floor(s) - 1 ..
// floor(s) + 2 clamped to the edge; each row of four is weighted along W first, then
// the four rows along H. graph.elu (max(x, 0) + alpha * expm1(min(x, 0))) fuses into its
// epilogue like any element-wise op. On NCHW4c pixels the taps are float4 (half4 read
// and summed in float4 in a half kernel: the weights' negative lobes make the sum cancel).

// The weights of A = -0.75 at t: ((A u - 5A) u + 8A) u - 4A for u = t + 1 and 2 - t,
// ((A + 2) u - (A + 3)) u u + 1 for u = t and 1 - t.
// CHECK-LABEL: opencl.kernel @resize_cubic_elu(
// CHECK:         %[[FLOOR:[0-9a-z_]+]] = math.floor %{{.*}} : f32
// CHECK-NEXT:    %[[T:[0-9a-z_]+]] = arith.subf %{{.*}}, %[[FLOOR]] : f32
// CHECK-NEXT:    %[[I0:[0-9a-z_]+]] = arith.fptosi %[[FLOOR]] : f32 to i32
// CHECK:         arith.constant -7.500000e-01 : f32
// CHECK:         arith.constant -3.750000e+00 : f32
// CHECK:         arith.constant -6.000000e+00 : f32
// CHECK:         arith.constant -3.000000e+00 : f32
// CHECK:         arith.constant 1.250000e+00 : f32
// CHECK:         arith.constant 2.250000e+00 : f32
// 16 taps, then the epilogue and one store.
// CHECK-COUNT-16: opencl.load %input
// CHECK-NOT:     opencl.load
// CHECK:         math.expm1
// CHECK:         opencl.store
// CHECK-NOT:   opencl.kernel
// CHECK-LABEL: func.func @cubic_elu(
// CHECK:         opencl.launch @resize_cubic_elu(%x, %{{.*}}) global [12, 10, 4]

// OCL-LABEL: __kernel void resize_cubic_elu(
// OCL:         const float [[F:v[0-9]+]] = floor([[S:v[0-9]+]]);
// OCL-NEXT:    const float [[T:v[0-9]+]] = [[S]] - [[F]];
// OCL:         const int {{v[0-9]+}} = min(max([[I:v[0-9]+]] + (-1), 0), 5);
// OCL-NEXT:    const int {{v[0-9]+}} = min(max([[I]], 0), 5);
// OCL-NEXT:    const int {{v[0-9]+}} = min(max([[I]] + 1, 0), 5);
// OCL-NEXT:    const int {{v[0-9]+}} = min(max([[I]] + 2, 0), 5);
// OCL:         ((((([[T]] * 1.25f) - 2.25f) * [[T]]) * [[T]]) + 1.0f)
// OCL:         out[(((z * 10) + oy) * 12) + ox] = adreno_fmax_float([[V:v[0-9]+]], 0.0f) + expm1(adreno_fmin_float([[V]], 0.0f));

// PACKED-LABEL: __kernel void resize_cubic_4c_elu(
// PACKED-COUNT-16: = ((__global const float4*)input)[
// PACKED:         ((__global float4*)out)[{{.*}}] = adreno_fmax_float4([[V:v[0-9]+]], (float4)(0.0f)) + expm1(adreno_fmin_float4([[V]], (float4)(0.0f)));

// HALF-LABEL: __kernel void resize_cubic_4c_elu(__global const half* input, __global half* out) {
// HALF:         const half4 {{v[0-9]+}} = ((__global const half4*)input)[
// HALF:         const half4 [[V:v[0-9]+]] = convert_half4((((((((convert_float4(
// HALF-NEXT:    ((__global half4*)out)[{{.*}}] = adreno_fmax_half4([[V]], (half4)((half)(0.0f))) + expm1(adreno_fmin_half4([[V]], (half4)((half)(0.0f))));
func.func @cubic_elu(%x: tensor<1x4x5x6xf32>) -> tensor<1x4x10x12xf32> {
  %r = graph.resize %x {mode = "cubic", scales = [1.0 : f32, 1.0 : f32, 2.0 : f32, 2.0 : f32]} : (tensor<1x4x5x6xf32>) -> tensor<1x4x10x12xf32>
  %e = graph.elu %r : tensor<1x4x10x12xf32>
  func.return %e : tensor<1x4x10x12xf32>
}

// -----

// exclude_outside = 1: a tap outside the input gets weight 0 (selected by its unclamped
// index), and the four weights are divided by their sum; A = -0.5 (5A = -2.5, 8A = -4,
// A + 2 = 1.5, A + 3 = 2.5). align_corners maps 7 rows onto 5: s = y * 4 / 6.
// CHECK-LABEL: opencl.kernel @resize_cubic(
// CHECK:         arith.constant -5.000000e-01 : f32
// CHECK:         arith.cmpi sge
// CHECK:         arith.select
// CHECK:         arith.divf
// CHECK-LABEL: func.func @cubic_exclude(

// OCL-LABEL: __kernel void resize_cubic(
// OCL:         const float {{v[0-9]+}} = (([[I:v[0-9]+]] >= 0) & ([[I]] < 5)) ? (((((({{v[0-9]+}} * (-0.5f)) - (-2.5f)) * {{v[0-9]+}}) + (-4.0f)) * {{v[0-9]+}}) - (-2.0f)) : 0.0f;
// OCL:         const float [[SUM:v[0-9]+]] = (({{v[0-9]+}} + {{v[0-9]+}}) + {{v[0-9]+}}) + {{v[0-9]+}};
// OCL:         / [[SUM]]

// PACKED-LABEL: __kernel void resize_cubic_4c(
// PACKED:         const float4 {{v[0-9]+}} = (float4)({{v[0-9]+}} / [[SUM:v[0-9]+]]);
func.func @cubic_exclude(%x: tensor<1x4x5x6xf32>) -> tensor<1x4x7x10xf32> {
  %r = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "align_corners", cubic_coeff_a = -0.5 : f32, exclude_outside = 1 : i64} : (tensor<1x4x5x6xf32>) -> tensor<1x4x7x10xf32>
  func.return %r : tensor<1x4x7x10xf32>
}
