// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{min-work-items=1 compute=f16}' | filecheck %s --check-prefix=CONFIG
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{min-work-items=1 compute=f16},convert-graph-to-opencl' -o %t && filecheck %s --check-prefix=HOST < %t
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{min-work-items=1 compute=f16},convert-graph-to-opencl' -t opencl -o %t.cl && filecheck %s < %t.cl

// Half arithmetic (precision fp16): select-kernel-config{compute=f16} gives every NCHW4c
// kernel `compute = "f16"`; the lowering then uploads weights and biases in half, reads
// and writes images with read_imageh / write_imageh, half buffers through `__global half4*` (aligned vector accesses)
// of half4, computes in half4 (NaN-propagating max as adreno_fmax_half4), and enables
// cl_khr_fp16. Pack still reads the f32 input (its pixel is made of floats). The input is
// the same program as texture_kernels.mlir (conv + relu on images, a max pool into an f16
// buffer, unpack).

// Every kernel is a graph.fused region (the pack, the pool and the unpack one-op
// regions) and carries the config on the region.
// CONFIG:      %p = graph.fused {kernel_config = {compute = "f16"}} -> !texture.tensor<1x1x8x8x4xf32, nchw4c, #texture.image<texture, h = 8, w = 8>> {
// CONFIG-NEXT:   texture.pack %x : tensor<1x4x8x8xf32> ->
// CONFIG-NEXT:   graph.yield
// CONFIG:      %r = graph.fused {kernel_config = {x_block = 1 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 1 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64, compute = "f16"}}
// CONFIG-NEXT:   graph.conv2d %p, %w, %b
// CONFIG:      %m = graph.fused {kernel_config = {compute = "f16"}} -> !texture.tensor<1x1x4x4x4xf16, nchw4c, global> {
// CONFIG-NEXT:   graph.max_pool %r {kernel_shape
// CONFIG-NEXT:   graph.yield
// CONFIG:      %y = graph.fused {kernel_config = {compute = "f16"}} -> tensor<1x4x4x4xf32> {
// CONFIG-NEXT:   texture.unpack %m :
// CONFIG-NEXT:   graph.yield

// HOST-LABEL: func.func @main
// HOST:       %b = opencl.weight @b_f16 : !opencl.buffer<4xf16>
// HOST-NEXT:  %w = opencl.weight @w_f16 : !opencl.buffer<36xf16>
// HOST:       opencl.launch @dwconv3x3_4c_relu(%p, %w, %b, %r) {{.*}} !opencl.buffer<36xf16>, !opencl.buffer<4xf16>

// CHECK:           #pragma OPENCL EXTENSION cl_khr_fp16 : enable
// CHECK:           half4 adreno_fmax_half4(half4 a, half4 b)
// CHECK-LABEL: __kernel void pack_nchw4c(
// CHECK:           write_imagef(out, (int2)(
// CHECK-LABEL: __kernel void dwconv3x3_4c_relu(
// CHECK:           __read_only image2d_t input,
// CHECK-NEXT:      __global const half* weight,
// CHECK-NEXT:      __global const half* bias,
// CHECK-NEXT:      __write_only image2d_t out
// CHECK:           const half4 bias_1 = ((__global const half4*)bias)[z];
// CHECK:           read_imageh(input, smp,
// CHECK:           write_imageh(out, (int2)(gx, {{.*}}), adreno_fmax_half4(fma({{.*}}, (half4)((half)(0.0f))))
// CHECK-LABEL: __kernel void maxpool2x2_4c(
// CHECK-SAME:      __read_only image2d_t input,{{\s*}}__global half* out
// CHECK:           half4 {{v[0-9]+}} = (half4)((half)(-INFINITY));
// CHECK-COUNT-4:   read_imageh(input, smp,
// CHECK:           ((__global half4*)out)[{{.*}}] = (v{{[0-9]+}} ? adreno_fmax_half4(v{{[0-9]+}}, v{{[0-9]+}}) : v{{[0-9]+}});
// CHECK-LABEL: __kernel void unpack_nchw4c(
// CHECK-SAME:      __global const half* input,{{\s*}}__global float* out
// CHECK:           const half4 {{v[0-9]+}} = ((__global const half4*)input)[
// CHECK:           out[{{.*}}] = (float){{.*}}.s0;

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
