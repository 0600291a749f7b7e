// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl,cse' -o %t && filecheck %s --check-prefix=HOST < %t
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl,cse' -t opencl -o %t.cl && filecheck %s < %t.cl
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl,cse' -t 'opencl{unroll=pragma}' -o %t.pragma.cl && filecheck %s --check-prefix=PRAGMA < %t.pragma.cl

// An annotated NCHW4c program: pack into an image, a depthwise 3x3 conv + ReLU on
// images, a max pool writing a half-float buffer, unpack. The host allocates images of
// the annotated extents; kernels read images with read_imagef and write them with
// write_imagef; the f16 buffer is written with vstore_half4 and read with vload_half4.
// The depthwise conv reads each input row segment once (kernel_config dw_rows; one output
// pixel per work-item on GPU targets: 3 pixels per window row) and its 9 weight float4s
// once, written out
// with the multiply-adds substituted into one expression per pixel. The pool's 2x2
// window is a kh/kw loop in the IR marked `opencl.unroll = "print"`: the printer writes
// it out, one tap after the other; printed with `-t 'opencl{unroll=pragma}'` (PRAGMA) it
// is `for` loops under `#pragma unroll` whose kw body is one tap.

// HOST-LABEL: func.func @main
// HOST:       opencl.alloc_image : !opencl.image<8x8, rgba_f32>
// HOST:       opencl.launch @pack_nchw4c
// HOST:       opencl.launch @dwconv3x3_4c_relu
// HOST:       opencl.alloc_buffer : !opencl.buffer<64xf16>
// HOST:       opencl.launch @maxpool2x2_4c
// HOST:       opencl.launch @unpack_nchw4c

// CHECK:           __constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
// CHECK-LABEL: __kernel void pack_nchw4c(
// CHECK-SAME:      __global const float* input,{{\s*}}__write_only image2d_t out
// CHECK:           write_imagef(out, (int2)(
// CHECK-LABEL: __kernel void dwconv3x3_4c_relu(
// CHECK:           __read_only image2d_t input,
// CHECK-NEXT:      __global const float* weight,
// CHECK-NEXT:      __global const float* bias,
// CHECK-NEXT:      __write_only image2d_t out
// CHECK:           ((__global const float4*)bias)[z];
// CHECK-NOT:       for (
// CHECK-COUNT-3:   read_imagef(input, smp,
// CHECK:           ((__global const float4*)weight)[[[W:v[0-9]+]]];
// CHECK-NEXT:      ((__global const float4*)weight)[[[W]] + 1];
// CHECK-NEXT:      ((__global const float4*)weight)[[[W]] + 2];
// CHECK-COUNT-3:   read_imagef(input, smp,
// CHECK-NOT:       for (
// CHECK:           write_imagef(out, (int2)(gx, {{.*}}), adreno_fmax_float4(fma({{.*}}fma({{.*}}fma({{.*}}, bias_1)
// CHECK-LABEL: __kernel void maxpool2x2_4c(
// CHECK-SAME:      __read_only image2d_t input,{{\s*}}__global half* out
// CHECK-NOT:       for (
// CHECK-COUNT-4:   read_imagef(input, smp,
// CHECK-NOT:       read_imagef
// CHECK:           vstore_half4((v{{[0-9]+}} ? adreno_fmax_float4(v{{[0-9]+}}, v{{[0-9]+}}) : v{{[0-9]+}}), {{.*}}, out);

// PRAGMA-LABEL: __kernel void dwconv3x3_4c_relu(
// PRAGMA-NOT:       #pragma unroll
// PRAGMA:           write_imagef(out,
// PRAGMA-LABEL: __kernel void maxpool2x2_4c(
// PRAGMA-SAME:      __read_only image2d_t input,{{\s*}}__global half* out
// PRAGMA:           float4 [[M:v[0-9]+]] = (float4)(-INFINITY);
// PRAGMA-NEXT:      #pragma unroll
// PRAGMA-NEXT:      for (int kh = 0; kh < 2; ++kh) {
// PRAGMA:               #pragma unroll
// PRAGMA-NEXT:          for (int kw = 0; kw < 2; ++kw) {
// PRAGMA-COUNT-1:           read_imagef(input, smp,
// PRAGMA-NOT:               read_imagef
// PRAGMA:               }
// PRAGMA:           vstore_half4([[M]], {{.*}}, out);
// CHECK-LABEL: __kernel void unpack_nchw4c(
// CHECK-SAME:      __global const half* input,{{\s*}}__global float* out
// CHECK:           vload_half4(

func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> attributes {graph.inputs = ["x"], graph.outputs = ["y"]} {
  %p = texture.pack %x : tensor<1x4x8x8xf32> -> !texture.tensor<1x1x8x8x4xf32, nchw4c, #texture.image<texture, h = 8, w = 8>>
  %w = graph.constant dense<0.5> : tensor<1x1x3x3x4xf32>
  %b = graph.constant dense<[0.0, 1.0, 2.0, 3.0]> : tensor<4xf32>
  %c = graph.conv2d %p, %w, %b {pads = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : !texture.tensor<1x1x8x8x4xf32, nchw4c, #texture.image<texture, h = 8, w = 8>>, tensor<1x1x3x3x4xf32>, tensor<4xf32> -> !texture.tensor<1x1x8x8x4xf32, nchw4c, #texture.image<texture, h = 8, w = 8>>
  %r = graph.relu %c : !texture.tensor<1x1x8x8x4xf32, nchw4c, #texture.image<texture, h = 8, w = 8>>
  %m = graph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (!texture.tensor<1x1x8x8x4xf32, nchw4c, #texture.image<texture, h = 8, w = 8>>) -> !texture.tensor<1x1x4x4x4xf16, nchw4c, global>
  %y = texture.unpack %m : !texture.tensor<1x1x4x4x4xf16, nchw4c, global> -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}
