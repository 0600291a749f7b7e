// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config' | filecheck %s --check-prefix=CONFIG
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' | filecheck %s --check-prefix=HOST
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' -t opencl | filecheck %s
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{compute=f16},convert-graph-to-opencl' -t opencl | filecheck %s --check-prefix=HALF
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{target=pocl-cpu},convert-graph-to-opencl' -t opencl | filecheck %s --check-prefix=CPU

// Work-group reductions (global average pool, ReduceMean). On a GPU target
// select-kernel-config gives each mean `reduce_items`: the most work-items (16-256) that
// leave each at least two elements, 1 (a serial loop) under 32 elements. With
// reduce_items > 1 each output is a work-group: work-item l sums elements l, l + items,
// ... (a strided loop that skips work-items past the extent), the partial sums go to a
// `__local` array and are added as a tree with a barrier after each halving step, and
// work-item 0 adds the last two, takes the mean, applies the fused epilogue and writes.
// The launch carries the work-group size the kernel is written for. NCHW4c sums are
// float4 in f32 (also in half kernels); images address pixel p as (p % W, row + p / W),
// buffers as one run of H*W pixels. A hand-written kernel_config is kept (16 work-items
// for 9 elements: 7 of them add nothing). CPU targets keep the serial loop.

// Each mean is a graph.fused region (the pool + relu one, the others alone in theirs)
// with the config on the region; the hand-written one moves from the op to its region.
// CONFIG:      %xr = graph.fused {kernel_config = {reduce_items = 256 : i64}}
// CONFIG-NEXT:   graph.global_avg_pool %xp :
// CONFIG-NEXT:   graph.relu
// CONFIG:      %zg = graph.fused {kernel_config = {reduce_items = 32 : i64}}
// CONFIG-NEXT:   graph.global_avg_pool %zp :
// CONFIG-NEXT:   graph.yield
// CONFIG:      %c = graph.fused {kernel_config = {reduce_items = 32 : i64}}
// CONFIG-NEXT:   graph.reduce_mean %y {axes = array<i64: 2, 3>, keepdims = 0 : i64}
// CONFIG-NEXT:   graph.yield
// CONFIG:      %d = graph.fused {kernel_config = {reduce_items = 16 : i64}}
// CONFIG-NEXT:   graph.global_avg_pool %t :
// CONFIG-NEXT:   graph.yield
// CONFIG:      %ug = graph.fused {kernel_config = {reduce_items = 1 : i64}}
// CONFIG-NEXT:   graph.global_avg_pool %up :
// CONFIG-NEXT:   graph.yield

// HOST-LABEL: func.func @main
// HOST:       opencl.launch @global_avgpool_4c_wg256_relu(%xp, %xr) global [256, 1, 2] local [256, 1, 1]
// HOST:       opencl.launch @global_avgpool_4c_wg32(%zp, %zg) global [32, 1, 1] local [32, 1, 1]
// HOST:       opencl.launch @reduce_mean_wg32(%y, %c) global [32, 3] local [32, 1]
// HOST:       opencl.launch @reduce_mean_wg16(%t, %d) global [16, 4] local [16, 1]
// HOST:       opencl.launch @global_avgpool_4c(%up, %ug) global [1, 1, 1] :

// CHECK-LABEL: __kernel void global_avgpool_4c_wg256_relu(
// CHECK:           const int z = (int)get_global_id(2);
// CHECK-NEXT:      const int l = (int)get_local_id(0);
// CHECK-NEXT:      float4 [[ACC:v[0-9]+]] = (float4)(0.0f);
// CHECK-NEXT:      for (int p = l; p < 784; p += 256) {
// CHECK-NEXT:          const float4 [[PIX:v[0-9]+]] = read_imagef(input, smp, (int2)(p % 28, (z * 28) + (p / 28)));
// CHECK-NEXT:          [[ACC]] = [[ACC]] + [[PIX]];
// CHECK-NEXT:      }
// CHECK-NEXT:      __local float4 partial[256];
// CHECK-NEXT:      partial[l] = [[ACC]];
// CHECK-NEXT:      barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:      if (l < 128) {
// CHECK-NEXT:          const float4 [[A:v[0-9]+]] = partial[l];
// CHECK-NEXT:          const float4 [[B:v[0-9]+]] = partial[l + 128];
// CHECK-NEXT:          partial[l] = [[A]] + [[B]];
// CHECK-NEXT:      }
// CHECK-NEXT:      barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:      if (l < 64) {
// CHECK-COUNT-6:   barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NOT:       barrier
// CHECK:           if (l == 0) {
// CHECK-NEXT:          const float4 [[S0:v[0-9]+]] = partial[0];
// CHECK-NEXT:          const float4 [[S1:v[0-9]+]] = partial[1];
// CHECK-NEXT:          write_imagef(out, (int2)(0, z), adreno_fmax_float4(([[S0]] + [[S1]]) * (float4)(0.00127551018f), (float4)(0.0f)));
// CHECK-NEXT:      }
// CHECK-NEXT:  }

// CHECK-LABEL: __kernel void global_avgpool_4c_wg32(
// CHECK:           for (int p = l; p < 81; p += 32) {
// CHECK-NEXT:          ((__global const float4*)input)[((z * 9) * 9) + p];
// CHECK:           __local float4 partial[32];
// CHECK-COUNT-5:   barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NOT:       barrier
// CHECK:           ((__global float4*)out)[z] = ({{v[0-9]+}} + {{v[0-9]+}}) * (float4)(0.0123456791f);

// CHECK-LABEL: __kernel void reduce_mean_wg32(
// CHECK:           const int i = (int)get_global_id(1);
// CHECK-NEXT:      const int [[BASE:v[0-9]+]] = i * 100;
// CHECK-NEXT:      const int l = (int)get_local_id(0);
// CHECK-NEXT:      float [[RACC:v[0-9]+]] = 0.0f;
// CHECK-NEXT:      for (int r = l; r < 100; r += 32) {
// CHECK-NEXT:          const float [[X:v[0-9]+]] = input[[[BASE]] + r];
// CHECK:           __local float partial[32];
// CHECK:           if (l < 16) {
// CHECK:           if (l == 0) {
// CHECK:               out[i] = ({{v[0-9]+}} + {{v[0-9]+}}) * 0.00999999978f;

// CHECK-LABEL: __kernel void reduce_mean_wg16(
// CHECK:           for (int r = l; r < 9; r += 16) {
// CHECK:           __local float partial[16];

// CHECK-LABEL: __kernel void global_avgpool_4c(
// CHECK-NOT:       barrier
// CHECK-NOT:       __local
// CHECK:           for (int h = 0; h < 4; ++h) {
// CHECK:           ((__global float4*)out)[z] = {{v[0-9]+}} * (float4)(0.0625f);

// HALF-LABEL: __kernel void global_avgpool_4c_wg256_relu(
// HALF:           float4 [[ACC:v[0-9]+]] = (float4)(0.0f);
// HALF:               const half4 [[PIX:v[0-9]+]] = read_imageh(input, smp,
// HALF-NEXT:          [[ACC]] = [[ACC]] + convert_float4([[PIX]]);
// HALF:           __local float4 partial[256];
// HALF:           if (l == 0) {
// HALF:               write_imageh(out, (int2)(0, z), adreno_fmax_half4(convert_half4(({{v[0-9]+}} + {{v[0-9]+}}) * (float4)(0.00127551018f)), (half4)((half)(0.0f))));

// CPU-LABEL: __kernel void global_avgpool_4c_relu(
// CPU-NOT:       barrier
// CPU:           for (int h = 0; h < 28; ++h) {
// CPU-LABEL: __kernel void global_avgpool_4c(
// CPU-NOT:       barrier
// CPU-LABEL: __kernel void reduce_mean(
// CPU-NOT:       barrier
// CPU:           for (int r = 0; r < 100; ++r) {
// CPU-LABEL: __kernel void reduce_mean_wg16(
// CPU:           barrier(CLK_LOCAL_MEM_FENCE);
// CPU-LABEL: __kernel void global_avgpool_4c_1(
// CPU-NOT:       barrier

func.func @main(%x: tensor<1x8x28x28xf32>, %z: tensor<1x4x9x9xf32>, %y: tensor<1x3x10x10xf32>, %t: tensor<1x4x3x3xf32>, %u: tensor<1x4x4x4xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x4x1x1xf32>, tensor<1x3xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) attributes {graph.inputs = ["x", "z", "y", "t", "u"], graph.outputs = ["a", "b", "c", "d", "e"]} {
  %xp = texture.pack %x : tensor<1x8x28x28xf32> -> !texture.tensor<1x2x28x28x4xf32, nchw4c, #texture.image<texture, h = 56, w = 28>>
  %xg = graph.global_avg_pool %xp : (!texture.tensor<1x2x28x28x4xf32, nchw4c, #texture.image<texture, h = 56, w = 28>>) -> !texture.tensor<1x2x1x1x4xf32, nchw4c, #texture.image<texture, h = 2, w = 1>>
  %xr = graph.relu %xg : !texture.tensor<1x2x1x1x4xf32, nchw4c, #texture.image<texture, h = 2, w = 1>>
  %a = texture.unpack %xr : !texture.tensor<1x2x1x1x4xf32, nchw4c, #texture.image<texture, h = 2, w = 1>> -> tensor<1x8x1x1xf32>
  %zp = texture.pack %z : tensor<1x4x9x9xf32> -> !texture.tensor<1x1x9x9x4xf32, nchw4c, global>
  %zg = graph.global_avg_pool %zp : (!texture.tensor<1x1x9x9x4xf32, nchw4c, global>) -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  %b = texture.unpack %zg : !texture.tensor<1x1x1x1x4xf32, nchw4c, global> -> tensor<1x4x1x1xf32>
  %c = graph.reduce_mean %y {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x3x10x10xf32>) -> tensor<1x3xf32>
  %d = graph.global_avg_pool %t {kernel_config = {reduce_items = 16 : i64}} : (tensor<1x4x3x3xf32>) -> tensor<1x4x1x1xf32>
  %up = texture.pack %u : tensor<1x4x4x4xf32> -> !texture.tensor<1x1x4x4x4xf32, nchw4c, global>
  %ug = graph.global_avg_pool %up : (!texture.tensor<1x1x4x4x4xf32, nchw4c, global>) -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  %e = texture.unpack %ug : !texture.tensor<1x1x1x1x4xf32, nchw4c, global> -> tensor<1x4x1x1xf32>
  func.return %a, %b, %c, %d, %e : tensor<1x8x1x1xf32>, tensor<1x4x1x1xf32>, tensor<1x3xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>
}
