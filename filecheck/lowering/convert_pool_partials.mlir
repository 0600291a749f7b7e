// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},select-kernel-config{target=adreno-740},convert-graph-to-opencl' | filecheck %s --check-prefix=HOST
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},select-kernel-config{target=adreno-740},convert-graph-to-opencl' -t opencl -o %t && filecheck %s < %t

// A squeeze-excite block after fuse-pool-partials, lowered. The depthwise region that
// writes `graph.pool_partials` is one kernel (PackedDwPoolSpec, `_pool<tiles>`):
// grid (reduce_items, tiles, N * C4), a work-group of reduce_items work-items per
// (tile, channel block). Work-item l computes pixels lo + l, lo + l + reduce_items, ...
// of its tile (lo = tile * chunk, chunk = ceil(OH * OW / tiles), up to min(lo + chunk,
// OH * OW)), stores each and adds it to an f32 sum; the sums meet in a __local array
// (a halving tree with barriers) and work-item 0 writes sum / (OH * OW) to `partials`
// [N][C4][tiles]. `graph.sum_partials` has no kernel: the FC conv reads the partials
// buffer (`_tiles<T>`) and adds the T tiles of each input channel block as it loads.

// 32 channels (8 blocks), 28x28 = 784 pixels, 7 tiles of 112 pixels. select-kernel-config
// gives the pooled depthwise kernel reduce_items = 64 (>= 256 pixels) and the first FC
// (a 1x1 output, 8 input blocks x 7 tiles = 56 pairs) reduce_items = 32: a work-group per
// output block.

// HOST-LABEL: func.func @main(%x: !opencl.buffer<25088xf32>)
// HOST:         %[[PP:.+]] = opencl.alloc_buffer : !opencl.buffer<224xf32>
// HOST:         %[[H:.+]] = opencl.alloc_buffer : !opencl.buffer<25088xf32>
// HOST-NEXT:    opencl.launch @dwconv3x3_4c_wg64_hard_swish_pool7(%x, %wd, %bd, %[[PP]], %[[H]]) global [64, 7, 8] local [64, 1, 1] :
// HOST-NOT:     global_avgpool
// HOST:         opencl.launch @conv1x1_4c_wg32_tiles7_relu(%[[PP]], %w1, %b1, %{{.+}}) global [32, 1, 2] local [32, 1, 1] :
// HOST:         opencl.launch @conv1x1_4c_hard_sigmoid(
// HOST:         opencl.launch @mul_4c(%[[H]],
// HOST-NOT:     opencl.launch

// CHECK-LABEL: __kernel void dwconv3x3_4c_wg64_hard_swish_pool7(
// CHECK-NEXT:      __global const float* input,
// CHECK-NEXT:      __global const float* weight,
// CHECK-NEXT:      __global const float* bias,
// CHECK-NEXT:      __global float* partials,
// CHECK-NEXT:      __global float* out
// CHECK:           const int tile = (int)get_global_id(1);
// CHECK-NEXT:      const int z = (int)get_global_id(2);
// CHECK-NEXT:      const int l = (int)get_local_id(0);
// CHECK-NEXT:      const int lo = tile * 112;
// CHECK:           float4 [[SUM:v[0-9]+]] = (float4)(0.0f);
// CHECK-NEXT:      for (int p = lo + l; p < min(lo + 112, 784); p += 64) {
// CHECK-NEXT:          const int oy = p / 28;
// CHECK-NEXT:          const int ox = p % 28;
// CHECK:               ((__global float4*)out)[{{.*}}] = [[V:v[0-9]+]];
// CHECK-NEXT:          [[SUM]] = [[SUM]] + [[V]];
// CHECK-NEXT:      }
// CHECK-NEXT:      __local float4 partial[64];
// CHECK-NEXT:      partial[l] = [[SUM]];
// CHECK-NEXT:      barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:      if (l < 32) {
// CHECK-COUNT-5:   barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:           if (l == 0) {
// CHECK:               ((__global float4*)partials)[(z * 7) + tile] = ({{v[0-9]+}} + {{v[0-9]+}}) * (float4)(0.00127551018f);
// CHECK-NEXT:      }
// CHECK-NEXT:  }

// The FC: (block, tile) pairs q = l, l + 32, ... of work-group gx (ci4 = q / 7, tile
// q % 7: partials index ci4 * 7 + tile), each tile times the block's weights, then the
// work-group sum.
// CHECK-LABEL: __kernel void conv1x1_4c_wg32_tiles7_relu(
// CHECK:           const int gx = (int)get_group_id(0);
// CHECK:           const int l = (int)get_local_id(0);
// CHECK:           for (int q = l; q < (ci4 * 7); q += 32) {
// CHECK-NEXT:          const int [[CI:ci4_?[0-9]*]] = q / 7;
// CHECK:               const float4 [[T:v[0-9]+]] = ((__global const float4*)input)[([[CI]] * 7) + (q % 7)];
// CHECK-NEXT:          {{v[0-9]+}} = fma((float4)([[T]].s3),
// CHECK:           }
// CHECK-NEXT:      __local float4 partial[32];
// CHECK:           barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:           if (l == 0) {
// CHECK:               ((__global float4*)out)[{{.*}}] = adreno_fmax_float4(
func.func @main(%x: !texture.tensor<1x8x28x28x4xf32, nchw4c, global>) -> !texture.tensor<1x8x28x28x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<8x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<32xf32>
  %d, %t = graph.fused -> !texture.tensor<1x8x28x28x4xf32, nchw4c, global>, !texture.tensor<1x8x7x1x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : !texture.tensor<1x8x28x28x4xf32, nchw4c, global>, tensor<8x1x3x3x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x28x28x4xf32, nchw4c, global>
    %h = graph.hard_swish %c : !texture.tensor<1x8x28x28x4xf32, nchw4c, global>
    %pp = graph.pool_partials %h {tiles = 7 : i64} : !texture.tensor<1x8x28x28x4xf32, nchw4c, global> -> !texture.tensor<1x8x7x1x4xf32, nchw4c, global>
    graph.yield %h, %pp : !texture.tensor<1x8x28x28x4xf32, nchw4c, global>, !texture.tensor<1x8x7x1x4xf32, nchw4c, global>
  }
  %p = graph.sum_partials %t : !texture.tensor<1x8x7x1x4xf32, nchw4c, global> -> !texture.tensor<1x8x1x1x4xf32, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<2x32x1x1x4xf32>
  %b1 = graph.constant dense<0.0> : tensor<8xf32>
  %r = graph.fused -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global> {
    %c1 = graph.conv2d %p, %w1, %b1 : !texture.tensor<1x8x1x1x4xf32, nchw4c, global>, tensor<2x32x1x1x4xf32>, tensor<8xf32> -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
    %r1 = graph.relu %c1 : !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
    graph.yield %r1 : !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
  }
  %w2 = graph.constant dense<0.25> : tensor<8x8x1x1x4xf32>
  %b2 = graph.constant dense<0.0> : tensor<32xf32>
  %s = graph.fused -> !texture.tensor<1x8x1x1x4xf32, nchw4c, global> {
    %c2 = graph.conv2d %r, %w2, %b2 : !texture.tensor<1x2x1x1x4xf32, nchw4c, global>, tensor<8x8x1x1x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x1x1x4xf32, nchw4c, global>
    %s1 = graph.hard_sigmoid %c2 {alpha = 0.166666672 : f32} : !texture.tensor<1x8x1x1x4xf32, nchw4c, global>
    graph.yield %s1 : !texture.tensor<1x8x1x1x4xf32, nchw4c, global>
  }
  %y = graph.mul %d, %s : (!texture.tensor<1x8x28x28x4xf32, nchw4c, global>, !texture.tensor<1x8x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x8x28x28x4xf32, nchw4c, global>
  func.return %y : !texture.tensor<1x8x28x28x4xf32, nchw4c, global>
}

// -----

// Images (half storage), batch 2, stride 2, a 7x7 output (49 pixels) and a hand-edited
// `tiles = 20`: chunk ceil(49 / 20) = 3, so tiles 17-19 start at or past pixel 49 and
// add nothing (the loop bound min(lo + 3, 49)). The config written by hand
// (reduce_items = 8) is kept: a work-group of 8 for 3 pixels. The partials stay an f32
// buffer of N * C4 * tiles float4s indexed ((n * 2 + c4) * 20 + tile), and the FC (2
// input blocks, its config set to reduce_items = 1 by hand: one work-item per output) adds the
// 20 tiles of each block in f32, in a loop (more than 8).

// HOST-LABEL: func.func @main(%in: !opencl.buffer<3136xf32>)
// HOST:         opencl.launch @pack_nchw4c(
// HOST:         %[[PP:.+]] = opencl.alloc_buffer : !opencl.buffer<320xf32>
// HOST:         %[[H:.+]] = opencl.alloc_image : !opencl.image<7x28, rgba_f16>
// HOST-NEXT:    opencl.launch @dwconv3x3_s2_4c_wg8_relu_pool20(%x, %wd, %bd, %[[PP]], %[[H]]) global [8, 20, 4] local [8, 1, 1] : (!opencl.image<14x56, rgba_f16>, !opencl.buffer<72xf32>, !opencl.buffer<8xf32>, !opencl.buffer<320xf32>, !opencl.image<7x28, rgba_f16>)
// HOST:         opencl.launch @conv1x1_4c_tiles20(%[[PP]], %w1, %{{.+}}) global [1, 1, 2] :
// HOST-NOT:     opencl.launch

// CHECK-LABEL: __kernel void dwconv3x3_s2_4c_wg8_relu_pool20(
// CHECK-NEXT:      __read_only image2d_t input,
// CHECK-NEXT:      __global const float* weight,
// CHECK-NEXT:      __global const float* bias,
// CHECK-NEXT:      __global float* partials,
// CHECK-NEXT:      __write_only image2d_t out
// CHECK:           const int n = z / 2;
// CHECK-NEXT:      const int c4 = z % 2;
// CHECK-NEXT:      const int lo = tile * 3;
// CHECK:           for (int p = lo + l; p < min(lo + 3, 49); p += 8) {
// CHECK:               read_imagef(input, smp,
// CHECK:               write_imagef(out, (int2)(ox, {{.*}}), [[V:v[0-9]+]]);
// CHECK-NEXT:          [[SUM:v[0-9]+]] = [[SUM]] + [[V]];
// CHECK-NEXT:      }
// CHECK-NEXT:      __local float4 partial[8];
// CHECK-COUNT-3:   barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NOT:       barrier
// CHECK:           if (l == 0) {
// CHECK:               ((__global float4*)partials)[(((n * 2) + c4) * 20) + tile] = ({{v[0-9]+}} + {{v[0-9]+}}) * (float4)(0.0204081628f);

// CHECK-LABEL: __kernel void conv1x1_4c_tiles20(
// CHECK-NOT:       __local
// CHECK:           for (int ci4 = 0; ci4 < 2; ++ci4) {
// CHECK:               float4 [[S:v[0-9]+]] = (float4)(0.0f);
// CHECK-NEXT:          for (int tile = 0; tile < 20; ++tile) {
// CHECK-NEXT:              const float4 [[V:v[0-9]+]] = ((__global const float4*)input)[(((z * 2) + ci4) * 20) + tile];
// CHECK-NEXT:              [[S]] = [[S]] + [[V]];
// CHECK-NEXT:          }
// CHECK-NOT:           ((__global const float4*)input)[{{.*}}]
func.func @main(%in: tensor<2x8x14x14xf32>) -> !texture.tensor<2x1x1x1x4xf32, nchw4c, global> {
  %x = texture.pack %in : tensor<2x8x14x14xf32> -> !texture.tensor<2x2x14x14x4xf16, nchw4c, #texture.image<texture, h = 56, w = 14>>
  %wd = graph.constant dense<0.25> : tensor<2x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<8xf32>
  %d, %t = graph.fused {kernel_config = {reduce_items = 8 : i64, x_block = 1 : i64, dw_rows = 1 : i64}} -> !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>, !texture.tensor<2x2x20x1x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : !texture.tensor<2x2x14x14x4xf16, nchw4c, #texture.image<texture, h = 56, w = 14>>, tensor<2x1x3x3x4xf32>, tensor<8xf32> -> !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>
    %h = graph.relu %c : !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>
    %pp = graph.pool_partials %h {tiles = 20 : i64} : !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>> -> !texture.tensor<2x2x20x1x4xf32, nchw4c, global>
    graph.yield %h, %pp : !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>, !texture.tensor<2x2x20x1x4xf32, nchw4c, global>
  }
  %p = graph.sum_partials %t : !texture.tensor<2x2x20x1x4xf32, nchw4c, global> -> !texture.tensor<2x2x1x1x4xf16, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<1x8x1x1x4xf32>
  %f = graph.conv2d %p, %w1 {kernel_config = {reduce_items = 1 : i64}} : !texture.tensor<2x2x1x1x4xf16, nchw4c, global>, tensor<1x8x1x1x4xf32> -> !texture.tensor<2x1x1x1x4xf32, nchw4c, global>
  func.return %f : !texture.tensor<2x1x1x1x4xf32, nchw4c, global>
}
