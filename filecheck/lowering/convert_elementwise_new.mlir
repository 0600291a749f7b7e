// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t && filecheck %s < %t
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -t opencl -o %t.cl && filecheck %s --check-prefix=OCL < %t.cl
// RUN: adreno-opt %s --split-input-file -p 'convert-layout-nchw4c,graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -t opencl -o %t.4c.cl && filecheck %s --check-prefix=PACKED < %t.4c.cl
// RUN: adreno-opt %s --split-input-file -p convert-layout-nchw4c -o %t.layout && filecheck %s --check-prefix=LAYOUT < %t.layout

// The element-wise ops of Pow, Log, Reciprocal, Gelu, Max/Min, PRelu and Where lower
// through their `emit` like every element-wise op: fused into one kernel per chain, on
// plain buffers (float) and on NCHW4c pixels (float4).

// A constant exponent is specialised: 2 -> x * x, 3 -> x * x * x, 0.5 -> sqrt; others
// call pow. The whole chain is one kernel.

// CHECK-LABEL: opencl.kernel @pow_pow_pow_pow_reciprocal_log(
// CHECK:         %[[X:[0-9a-z_]+]] = opencl.load %in0[%i]
// CHECK-NEXT:    %[[X2:[0-9a-z_]+]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT:    %[[X4:[0-9a-z_]+]] = arith.mulf %[[X2]], %[[X2]] : f32
// CHECK-NEXT:    %[[X6:[0-9a-z_]+]] = arith.mulf %[[X4]], %[[X2]] : f32
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = math.sqrt %[[X6]] : f32
// CHECK-NEXT:    %[[E:[0-9a-z_]+]] = arith.constant 1.700000e+00 : f32
// CHECK-NEXT:    %[[P:[0-9a-z_]+]] = math.powf %[[R]], %[[E]] : f32
// CHECK-NEXT:    %[[ONE:[0-9a-z_]+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[Q:[0-9a-z_]+]] = arith.divf %[[ONE]], %[[P]] : f32
// CHECK-NEXT:    %[[L:[0-9a-z_]+]] = math.log %[[Q]] : f32
// CHECK-NEXT:    opencl.store %[[L]], %out[%i]
// CHECK-NOT:   opencl.kernel
// CHECK-LABEL: func.func @pow_log(
// CHECK:         opencl.launch @pow_pow_pow_pow_reciprocal_log(%x, %{{.*}}) global [240]

// OCL: __kernel void pow_pow_pow_pow_reciprocal_log(
// OCL:     out[i] = log(1.0f / pow(sqrt((v1 * v1) * v1), 1.70000005f));

// PACKED: __kernel void pow_pow_pow_pow_reciprocal_log_4c(
// PACKED:     ((__global float4*)out)[v0] = log((float4)(1.0f) / pow(sqrt((v2 * v2) * v2), (float4)(1.70000005f)));
func.func @pow_log(%x: tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32> {
  %a = graph.pow %x {exponent = 2.0 : f32} : tensor<1x8x5x6xf32>
  %b = graph.pow %a {exponent = 3.0 : f32} : tensor<1x8x5x6xf32>
  %c = graph.pow %b {exponent = 0.5 : f32} : tensor<1x8x5x6xf32>
  %d = graph.pow %c {exponent = 1.7 : f32} : tensor<1x8x5x6xf32>
  %e = graph.reciprocal %d : tensor<1x8x5x6xf32>
  %f = graph.log %e : tensor<1x8x5x6xf32>
  func.return %f : tensor<1x8x5x6xf32>
}

// -----

// Gelu: the erf form and the tanh approximation.

// OCL-LABEL: __kernel void gelu_1(
// OCL:     out[i] = (v0 * 0.5f) * (1.0f + erf(v0 * 0.707106769f));
// OCL-LABEL: __kernel void gelu_2(
// OCL:     out[i] = (v0 * 0.5f) * (1.0f + tanh((v0 + (((v0 * v0) * v0) * 0.0447149985f)) * 0.797884583f));

// PACKED-LABEL: __kernel void gelu_4c(
// PACKED:     ((__global float4*)out)[v0] = (v1 * (float4)(0.5f)) * ((float4)(1.0f) + erf(v1 * (float4)(0.707106769f)));
// PACKED-LABEL: __kernel void gelu_4c_1(
// PACKED:     tanh((v1 + (((v1 * v1) * v1) * (float4)(0.0447149985f))) * (float4)(0.797884583f))
func.func @gelu(%x: tensor<1x8x5x6xf32>) -> (tensor<1x8x5x6xf32>, tensor<1x8x5x6xf32>) {
  %a = graph.gelu %x : tensor<1x8x5x6xf32>
  %b = graph.gelu %x {approximate = "tanh"} : tensor<1x8x5x6xf32>
  func.return %a, %b : tensor<1x8x5x6xf32>, tensor<1x8x5x6xf32>
}

// -----

// Max and min propagate NaN (arith.maximumf/minimumf, printed as helpers around OpenCL's
// fmax/fmin, which would drop it); PRelu is max(x, 0) + slope * min(x, 0), the slope
// read per channel.

// CHECK-LABEL: opencl.kernel @max_min_prelu_1(
// CHECK:         %[[M:[0-9a-z_]+]] = arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK:         %[[S:[0-9a-z_]+]] = opencl.load %in2[%{{.*}}]
// CHECK-NEXT:    %[[N:[0-9a-z_]+]] = arith.minimumf %[[M]], %[[S]] : f32
// CHECK-NEXT:    %[[Z:[0-9a-z_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[POS:[0-9a-z_]+]] = arith.maximumf %[[N]], %[[Z]] : f32
// CHECK-NEXT:    %[[NEG:[0-9a-z_]+]] = arith.minimumf %[[N]], %[[Z]] : f32
// CHECK-NEXT:    %[[SN:[0-9a-z_]+]] = arith.mulf %[[NEG]], %[[S]] : f32
// CHECK-NEXT:    %[[P:[0-9a-z_]+]] = arith.addf %[[POS]], %[[SN]] : f32
// CHECK-NEXT:    opencl.store %[[P]], %out[%i]

// OCL: float adreno_fmax_float(float a, float b) { return select(a, b, (a < b) | isnan(b)); }
// OCL: float adreno_fmin_float(float a, float b) { return select(a, b, (b < a) | isnan(b)); }
// OCL-LABEL: __kernel void max_min_prelu_1(
// OCL:     const float v3 = adreno_fmin_float(adreno_fmax_float(v0, v1), v2);
// OCL-NEXT:    out[i] = adreno_fmax_float(v3, 0.0f) + (adreno_fmin_float(v3, 0.0f) * v2);

// PACKED: float4 adreno_fmax_float4(float4 a, float4 b)
// PACKED-LABEL: __kernel void max_min_prelu_4c(
// PACKED:     adreno_fmin_float4(adreno_fmax_float4(v1, v2), v3)
func.func @max_min_prelu(%x: tensor<1x8x5x6xf32>, %y: tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32> {
  %s = graph.constant dense<[[[0.1]], [[0.2]], [[0.3]], [[0.4]], [[0.5]], [[0.6]], [[0.7]], [[0.8]]]> : tensor<8x1x1xf32>
  %m = graph.max %x, %y : (tensor<1x8x5x6xf32>, tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32>
  %n = graph.min %m, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  %p = graph.prelu %n, %s : (tensor<1x8x5x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x6xf32>
  func.return %p : tensor<1x8x5x6xf32>
}

// -----

// Where selects (cmpf une + select): the value not chosen, inf or NaN, never reaches the
// result. The condition (a 0/1 mask over W) fuses as one more extra input, read through
// its broadcasting strides. On float4 pixels the select goes lane by lane.

// CHECK-LABEL: opencl.kernel @exp_where(
// CHECK:         %[[C:[0-9a-z_]+]] = opencl.load %in0[%{{.*}}]
// CHECK:         %[[E:[0-9a-z_]+]] = math.exp %{{.*}} : f32
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = opencl.load %in2[%i]
// CHECK-NEXT:    %[[Z:[0-9a-z_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[NZ:[0-9a-z_]+]] = arith.cmpf une, %[[C]], %[[Z]] : f32
// CHECK-NEXT:    %[[W:[0-9a-z_]+]] = arith.select %[[NZ]], %[[E]], %[[Y]] : f32
// CHECK-NEXT:    opencl.store %[[W]], %out[%i]
// CHECK-LABEL: func.func @where(
// CHECK:         %[[MASK:[0-9a-z_]+]] = opencl.weight @c : !opencl.buffer<6xf32>
// CHECK:         opencl.launch @exp_where(%[[MASK]], %x, %y, %{{.*}}) global [240]

// OCL-LABEL: __kernel void exp_where(
// OCL:     out[i] = (v0 != 0.0f) ? exp(v1) : v2;

// PACKED-LABEL: __kernel void exp_where_4c(
// PACKED:     ((__global float4*)out)[v1] = (v0 != (float4)(0.0f)) ? exp(v2) : v3;
func.func @where(%x: tensor<1x8x5x6xf32>, %y: tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32> {
  %c = graph.constant dense<[[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]]> : tensor<1x6xf32>
  %e = graph.exp %x : tensor<1x8x5x6xf32>
  %w = graph.where %c, %e, %y : (tensor<1x6xf32>, tensor<1x8x5x6xf32>, tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32>
  func.return %w : tensor<1x8x5x6xf32>
}

// -----

// NCHW4c padding channels (channels 6 and 7 of a 6-channel tensor) hold what the ops
// compute from 0: log makes them -inf after a convolution. The next convolution would
// multiply them by its zero weights (0 * -inf = NaN in every output), so it stays on
// NCHW after an unpack. After sigmoid the padding is log(0.5), finite: that
// convolution stays packed.

// LAYOUT-LABEL: func.func @padding(
// LAYOUT:         %[[C:[0-9a-z_]+]] = graph.conv2d %{{.*}} -> !texture.tensor<1x2x5x6x4xf32, nchw4c, global>
// LAYOUT-NEXT:    %[[L:[0-9a-z_]+]] = graph.log %[[C]] : !texture.tensor<1x2x5x6x4xf32, nchw4c, global>
// LAYOUT-NEXT:    %[[U:[0-9a-z_]+]] = texture.unpack %[[L]] : !texture.tensor<1x2x5x6x4xf32, nchw4c, global> -> tensor<1x6x5x6xf32>
// LAYOUT-NEXT:    %y = graph.conv2d %[[U]], %{{.*}} : tensor<1x6x5x6xf32>, tensor<8x6x1x1xf32> -> tensor<1x8x5x6xf32>
// LAYOUT-NEXT:    %[[S:[0-9a-z_]+]] = graph.sigmoid %[[C]] : !texture.tensor<1x2x5x6x4xf32, nchw4c, global>
// LAYOUT-NEXT:    %[[M:[0-9a-z_]+]] = graph.log %[[S]] : !texture.tensor<1x2x5x6x4xf32, nchw4c, global>
// LAYOUT:         graph.conv2d %[[M]], %{{.*}} : !texture.tensor<1x2x5x6x4xf32, nchw4c, global>, tensor<2x8x1x1x4xf32> -> !texture.tensor<1x2x5x6x4xf32, nchw4c, global>
func.func @padding(%x: tensor<1x8x5x6xf32>) -> (tensor<1x8x5x6xf32>, tensor<1x8x5x6xf32>) {
  %w1 = graph.constant dense<0.125> : tensor<6x8x1x1xf32>
  %w2 = graph.constant dense<0.25> : tensor<8x6x1x1xf32>
  %c = graph.conv2d %x, %w1 : tensor<1x8x5x6xf32>, tensor<6x8x1x1xf32> -> tensor<1x6x5x6xf32>
  %l = graph.log %c : tensor<1x6x5x6xf32>
  %y = graph.conv2d %l, %w2 : tensor<1x6x5x6xf32>, tensor<8x6x1x1xf32> -> tensor<1x8x5x6xf32>
  %s = graph.sigmoid %c : tensor<1x6x5x6xf32>
  %m = graph.log %s : tensor<1x6x5x6xf32>
  %z = graph.conv2d %m, %w2 : tensor<1x6x5x6xf32>, tensor<8x6x1x1xf32> -> tensor<1x8x5x6xf32>
  func.return %y, %z : tensor<1x8x5x6xf32>, tensor<1x8x5x6xf32>
}
