// RUN: adreno-opt %s --split-input-file -p 'select-kernel-config{target=adreno-740}' | filecheck %s --check-prefix=CONFIG
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},select-kernel-config{target=adreno-740},split-k,plan-memory,convert-graph-to-opencl' | filecheck %s --check-prefix=HOST
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},select-kernel-config{target=adreno-740},split-k,plan-memory,convert-graph-to-opencl' -t opencl -o %t && filecheck %s < %t

// A depthwise conv's `graph.fused {on_load}` region (fuse-depthwise-load), lowered. The
// region has no kernel, no config and no storage: the 1x1 conv that reads it takes the
// depthwise conv's input as its `input` and the depthwise weights and bias as
// `dw_weight` and `dw_bias` after its own weight and bias, and computes each depthwise
// pixel (window, bias, activation) where it would have loaded it; the kernel name
// carries `_dw<K>x<K>[s<S>][t<dw_tile>]` and the depthwise activation.
//
// With `dw_tile` = Lx > 0 a work-group is Lx x G work-items (G = output channel blocks /
// co_blocks; `reqd_work_group_size`), Lx along a row segment of P = Lx * x_block pixels
// and one output block group each. For each chunk of input channel blocks the
// work-group first computes the chunk's depthwise values of its P pixels into
// `__local dw_values` (pixels past the row repeat its last one), waits at a barrier,
// sums them against its weights, and waits again before the next chunk. A chunk is 32
// blocks, fewer when 32 x P float4s would pass 16 KB. dw_tile = 0: each work-item
// computes the values it loads itself (no local memory, no barrier).

// Buffers, 8 input blocks (32 channels), 6x13, depthwise 3x3 + ReLU6 with bias, a
// projection to 4 blocks + ReLU. Default config: x_block 1, dw_tile = min(13, 256 / G)
// with G = 4 blocks: 13; the grid is small but there are only 8 input blocks: no
// split-K. Work-groups of 13 x 4 = 52, one per row (13 / 13); chunk 32 blocks:
// dw_values of 32 x 13 = 416 float4s. 13 pixels fill the row: no store guard.

// CONFIG-LABEL: func.func @main(
// CONFIG:         %d = graph.fused {on_load} -> !texture.tensor<1x8x6x13x4xf32, nchw4c, global> {
// CONFIG:         %y = graph.fused {kernel_config = {x_block = 1 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 13 : i64}} -> !texture.tensor<1x4x6x13x4xf32, nchw4c, global> {

// HOST-LABEL: func.func @main(%x: !opencl.buffer<2496xf32>) -> !opencl.buffer<1248xf32>
// HOST-NOT:     dwconv
// HOST:         opencl.launch @conv1x1_4c_dw3x3t13_clip_relu(%x, %wp, %bp, %wd, %bd, %r, %{{.+}}) global [52, 6, 1] local [52, 1, 1] : (!opencl.buffer<2496xf32>, !opencl.buffer<512xf32>, !opencl.buffer<16xf32>, !opencl.buffer<288xf32>, !opencl.buffer<32xf32>, !opencl.buffer<1248xf32>, i32) loc("project")
// HOST-NOT:     opencl.launch

// CHECK-NOT:     __kernel void dwconv
// CHECK-LABEL:   __attribute__((reqd_work_group_size(52, 1, 1)))
// CHECK-NEXT:    __kernel void conv1x1_4c_dw3x3t13_clip_relu(
// CHECK-NEXT:      __global const float* input,
// CHECK-NEXT:      __global const float* weight,
// CHECK-NEXT:      __global const float* bias,
// CHECK-NEXT:      __global const float* dw_weight,
// CHECK-NEXT:      __global const float* dw_bias,
// CHECK-NEXT:      __global float* out,
// CHECK-NEXT:      int ci4
// CHECK-NEXT:  ) {
// CHECK:           const int li = (int)get_local_id(0);
// CHECK-NEXT:      const int blk = li / 13;
// CHECK-NEXT:      const int lx = li % 13;
// CHECK-NEXT:      const int [[X0:v[0-9]+]] = ((int)get_group_id(0)) * 13;
// CHECK-NEXT:      __local float4 dw_values[416];
// CHECK-NEXT:      const float4 {{bias_?[0-9]*}} = ((__global const float4*)bias)[blk];
// CHECK:           for (int c0 = 0; c0 < ci4; c0 += 32) {
// CHECK-NEXT:          const int [[HI:v[0-9]+]] = min(c0 + 32, ci4);
// CHECK-NEXT:          for (int v = li; v < (([[HI]] - c0) * 13); v += 52) {
// CHECK-NEXT:              const int [[CI:v[0-9]+]] = c0 + (v / 13);
// CHECK-NEXT:              const int {{v[0-9]+}} = oy - 1;
// CHECK-NEXT:              const int {{v[0-9]+}} = min([[X0]] + (v % 13), 12) - 1;
// CHECK-NEXT:              const float4 {{v[0-9]+}} = ((__global const float4*)dw_bias)[[[CI]]];
// CHECK-NEXT:              const int {{v[0-9]+}} = [[CI]] * 9;
// CHECK-COUNT-9:           ((__global const float4*)input)[{{.*}}];
// CHECK:                   dw_values[v] = adreno_fmin_float4(adreno_fmax_float4(fma(
// CHECK-NEXT:          }
// CHECK-NEXT:          barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:               for (int [[C:ci4_?[0-9]*]] = c0; [[C]] < [[HI]]; ++[[C]]) {
// CHECK-NOT:               input
// CHECK:                   const float4 [[V:v[0-9]+]] = dw_values[(([[C]] - c0) * 13) + lx];
// CHECK-NEXT:              {{v[0-9]+}} = fma((float4)([[V]].s3),
// CHECK-NEXT:          }
// CHECK-NEXT:          barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:           }
// CHECK-NOT:       if (
// CHECK:           ((__global float4*)out)[(((blk * 6) + oy) * 13) + ([[X0]] + lx)] = adreno_fmax_float4({{[a-z0-9_]+}}, (float4)(0.0f));
// CHECK-NEXT:  }
func.func @main(%x: !texture.tensor<1x8x6x13x4xf32, nchw4c, global>) -> !texture.tensor<1x4x6x13x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<8x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<32xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x8x6x13x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : !texture.tensor<1x8x6x13x4xf32, nchw4c, global>, tensor<8x1x3x3x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x6x13x4xf32, nchw4c, global> loc("dw")
    %a = graph.clip %c {min = 0.0 : f32, max = 6.0 : f32} : !texture.tensor<1x8x6x13x4xf32, nchw4c, global> loc("dw_act")
    graph.yield %a : !texture.tensor<1x8x6x13x4xf32, nchw4c, global>
  } loc("dw_act")
  %wp = graph.constant dense<0.125> : tensor<4x32x1x1x4xf32>
  %bp = graph.constant dense<0.0> : tensor<16xf32>
  %y = graph.fused -> !texture.tensor<1x4x6x13x4xf32, nchw4c, global> {
    %p = graph.conv2d %d, %wp, %bp : !texture.tensor<1x8x6x13x4xf32, nchw4c, global>, tensor<4x32x1x1x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x6x13x4xf32, nchw4c, global> loc("project")
    %r = graph.relu %p : !texture.tensor<1x4x6x13x4xf32, nchw4c, global>
    graph.yield %r : !texture.tensor<1x4x6x13x4xf32, nchw4c, global>
  } loc("project")
  func.return %y : !texture.tensor<1x4x6x13x4xf32, nchw4c, global>
}

// -----

// Half images, batch 2, a 5x5 stride-2 depthwise conv without bias (26 -> 13) + hard-swish,
// and a projection to 3 blocks whose config is written by hand: x_block 2, split_k 2,
// dw_tile 4. The split-K partial kernel reads the image, computes the depthwise values
// (no dw_bias argument) and writes f32 partial sums; conv_split_sum adds them and the bias.
// G = 3: work-groups of 4 x 3 = 12; P = 4 x 2 = 8 pixels, ceil(13 / 8) = 2 work-groups per
// row, 2 x 12 = 24 work-items in x; z = batch x parts = 4 (part = z % 2, n = z / 2).
// dw_values: 32 blocks x 8 pixels. 16 pixels cover the row of 13: both stores are guarded.

// CONFIG-LABEL: func.func @main(
// CONFIG:         %d = graph.fused {on_load} -> !texture.tensor<2x2x13x13x4xf16, nchw4c, #texture.image<texture, h = 52, w = 13>> {
// CONFIG:         %p = graph.conv2d %d, %wp, %bp {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 2 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 4 : i64}}

// HOST-LABEL: func.func @main(%in: !opencl.buffer<10816xf32>) -> !opencl.image<13x78, rgba_f16>
// HOST:         %x = opencl.alloc_image : !opencl.image<26x104, rgba_f16>
// HOST:         %[[PART:.+]] = opencl.alloc_buffer : !opencl.buffer<8112xf32>
// HOST-NEXT:    opencl.launch @conv1x1_4c_split2_dw5x5s2t4_hard_swish(%x, %wp, %wd, %[[PART]]) global [24, 13, 4] local [12, 1, 1] : (!opencl.image<26x104, rgba_f16>, !opencl.buffer<96xf32>, !opencl.buffer<200xf32>, !opencl.buffer<8112xf32>) loc("project")
// HOST:         opencl.launch @conv_split_sum_4c(%[[PART]], %bp, %p) global [13, 13, 6] :
// HOST-NOT:     opencl.launch

// CHECK-NOT:     __kernel void dwconv
// CHECK-LABEL:   __attribute__((reqd_work_group_size(12, 1, 1)))
// CHECK-NEXT:    __kernel void conv1x1_4c_split2_dw5x5s2t4_hard_swish(
// CHECK-NEXT:      __read_only image2d_t input,
// CHECK-NEXT:      __global const float* weight,
// CHECK-NEXT:      __global const float* dw_weight,
// CHECK-NEXT:      __global float* out
// CHECK-NEXT:  ) {
// CHECK:           const int blk = li / 4;
// CHECK-NEXT:      const int lx = li % 4;
// CHECK:           const int part = z % 2;
// CHECK-NEXT:      const int [[N:v[0-9]+]] = z / 2;
// CHECK-NEXT:      const int ox = (({{v[0-9]+}} * 4) + lx) * 2;
// CHECK-NEXT:      const int [[OX1:v[0-9]+]] = ox + 1;
// CHECK-NEXT:      __local float4 dw_values[256];
// CHECK:           const int x_base = {{v[0-9]+}} * 8;
// CHECK:           for (int c0 = part; c0 < [[PHI:v[0-9]+]]; c0 += 32) {
// CHECK-NEXT:          const int [[HI:v[0-9]+]] = min(c0 + 32, [[PHI]]);
// CHECK-NEXT:          for (int v = li; v < (([[HI]] - c0) * 8); v += 12) {
// CHECK:                   const int {{v[0-9]+}} = (min(x_base + (v % 8), 12) * 2) - 2;
// CHECK-NOT:               dw_bias
// CHECK-COUNT-25:          read_imagef(input, smp,
// CHECK:                   dw_values[v] = [[D:v[0-9]+]] * adreno_fmin_float4(adreno_fmax_float4(([[D]] * (float4)(0.166666672f)) + (float4)(0.5f), (float4)(0.0f)), (float4)(1.0f));
// CHECK-NEXT:          }
// CHECK-NEXT:          barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:               for (int [[C:ci4_?[0-9]*]] = c0; [[C]] < [[HI]]; ++[[C]]) {
// CHECK:                   const float4 {{v[0-9]+}} = dw_values[[[O:v[0-9]+]] + [[L:v[0-9]+]]];
// CHECK-NEXT:              const float4 {{v[0-9]+}} = dw_values[[[O]] + ([[L]] + 1)];
// CHECK:               }
// CHECK-NEXT:          barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:           if (ox < 13) {
// CHECK-NEXT:          ((__global float4*)out)[(((((((part * 2) + [[N]]) * 3) + blk) * 13) + oy) * 13) + ox] = {{v[0-9]+}};
// CHECK-NEXT:      }
// CHECK-NEXT:      if ([[OX1]] < 13) {
// CHECK-NEXT:          ((__global float4*)out)[
// CHECK-NEXT:      }
// CHECK-NEXT:  }
// CHECK-LABEL: __kernel void conv_split_sum_4c(
func.func @main(%in: tensor<2x8x26x26xf32>) -> !texture.tensor<2x3x13x13x4xf16, nchw4c, #texture.image<texture, h = 78, w = 13>> {
  %x = texture.pack %in : tensor<2x8x26x26xf32> -> !texture.tensor<2x2x26x26x4xf16, nchw4c, #texture.image<texture, h = 104, w = 26>>
  %wd = graph.constant dense<0.25> : tensor<2x1x5x5x4xf32>
  %d = graph.fused {on_load} -> !texture.tensor<2x2x13x13x4xf16, nchw4c, #texture.image<texture, h = 52, w = 13>> {
    %c = graph.conv2d %x, %wd {strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, groups = 8 : i64} : !texture.tensor<2x2x26x26x4xf16, nchw4c, #texture.image<texture, h = 104, w = 26>>, tensor<2x1x5x5x4xf32> -> !texture.tensor<2x2x13x13x4xf16, nchw4c, #texture.image<texture, h = 52, w = 13>>
    %a = graph.hard_swish %c : !texture.tensor<2x2x13x13x4xf16, nchw4c, #texture.image<texture, h = 52, w = 13>>
    graph.yield %a : !texture.tensor<2x2x13x13x4xf16, nchw4c, #texture.image<texture, h = 52, w = 13>>
  }
  %wp = graph.constant dense<0.125> : tensor<3x8x1x1x4xf32>
  %bp = graph.constant dense<0.0> : tensor<12xf32>
  %p = graph.conv2d %d, %wp, %bp {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 2 : i64, dw_tile = 4 : i64}} : !texture.tensor<2x2x13x13x4xf16, nchw4c, #texture.image<texture, h = 52, w = 13>>, tensor<3x8x1x1x4xf32>, tensor<12xf32> -> !texture.tensor<2x3x13x13x4xf16, nchw4c, #texture.image<texture, h = 78, w = 13>> loc("project")
  func.return %p : !texture.tensor<2x3x13x13x4xf16, nchw4c, #texture.image<texture, h = 78, w = 13>>
}

// -----

// dw_tile = 0 written by hand (with x_block 2, co_blocks 2): each work-item computes
// the depthwise values it loads (a dilation-2 3x3 window + bias + x * sigmoid(x), for
// each of its 2 pixels, the second clamped to the row's last on the odd width 7), with
// no local memory, barrier or required work-group; the driver picks the work-group.

// CONFIG-LABEL: func.func @main(
// CONFIG:         %p = graph.conv2d %d, %wp {kernel_config = {x_block = 2 : i64, co_blocks = 2 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}}

// HOST-LABEL: func.func @main(
// HOST:         opencl.launch @conv1x1_4c_x2_dw3x3_sigmoid_mul(%x, %wp, %wd, %bd, %p, %{{.+}}) global [4, 5, 1] : (
// HOST-NOT:     opencl.launch

// CHECK-NOT:     reqd_work_group_size
// CHECK-LABEL:   __kernel void conv1x1_4c_x2_dw3x3_sigmoid_mul(
// CHECK-NEXT:      __global const float* input,
// CHECK-NEXT:      __global const float* weight,
// CHECK-NEXT:      __global const float* dw_weight,
// CHECK-NEXT:      __global const float* dw_bias,
// CHECK-NEXT:      __global float* out,
// CHECK-NEXT:      int ci4
// CHECK-NEXT:  ) {
// CHECK-NOT:       __local
// CHECK:           const int ox = ((int)get_global_id(0)) * 2;
// CHECK-NEXT:      const int [[P0:v[0-9]+]] = min(ox, 6);
// CHECK-NEXT:      const int [[OX1:v[0-9]+]] = ox + 1;
// CHECK-NEXT:      const int [[P1:v[0-9]+]] = min([[OX1]], 6);
// CHECK:           for (int [[C:ci4_?[0-9]*]] = 0; [[C]] < ci4; ++[[C]]) {
// CHECK:               const int {{v[0-9]+}} = oy - 2;
// CHECK-NEXT:          const int {{v[0-9]+}} = [[P0]] - 2;
// CHECK-NEXT:          const float4 {{v[0-9]+}} = ((__global const float4*)dw_bias)[[[C]]];
// CHECK-COUNT-9:       ((__global const float4*)input)[{{.*}}];
// CHECK:               const float4 [[D:v[0-9]+]] = fma(
// CHECK-NEXT:          const float4 {{v[0-9]+}} = [[D]] * ((float4)(1.0f) / ((float4)(1.0f) + exp(-[[D]])));
// CHECK:               const int {{v[0-9]+}} = [[P1]] - 2;
// CHECK-NEXT:          const float4 {{v[0-9]+}} = ((__global const float4*)dw_bias)[[[C]]];
// CHECK-COUNT-9:       ((__global const float4*)input)[{{.*}}];
// CHECK:           }
// CHECK-NOT:       barrier
// CHECK:           if ([[OX1]] < 7) {
func.func @main(%x: !texture.tensor<1x3x5x7x4xf32, nchw4c, global>) -> !texture.tensor<1x2x5x7x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<3x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<12xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x3x5x7x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, groups = 12 : i64} : !texture.tensor<1x3x5x7x4xf32, nchw4c, global>, tensor<3x1x3x3x4xf32>, tensor<12xf32> -> !texture.tensor<1x3x5x7x4xf32, nchw4c, global>
    %s = graph.sigmoid %c : !texture.tensor<1x3x5x7x4xf32, nchw4c, global>
    %m = graph.mul %c, %s : (!texture.tensor<1x3x5x7x4xf32, nchw4c, global>, !texture.tensor<1x3x5x7x4xf32, nchw4c, global>) -> !texture.tensor<1x3x5x7x4xf32, nchw4c, global>
    graph.yield %m : !texture.tensor<1x3x5x7x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<2x12x1x1x4xf32>
  %p = graph.conv2d %d, %wp {kernel_config = {x_block = 2 : i64, co_blocks = 2 : i64, split_k = 1 : i64, dw_tile = 0 : i64}} : !texture.tensor<1x3x5x7x4xf32, nchw4c, global>, tensor<2x12x1x1x4xf32> -> !texture.tensor<1x2x5x7x4xf32, nchw4c, global> loc("project")
  func.return %p : !texture.tensor<1x2x5x7x4xf32, nchw4c, global>
}

// -----

// A 64-pixel row, 24 input blocks, 4 output blocks: dw_tile = min(64, 256 / 4) = 64,
// work-groups of 256; the grid (16 x 2 x 4 pixel blocks of 4) is small, so split-K 3
// (24 / 8), each part a third of the dynamic ci4. 32 blocks of 64 pixels would be 32 KB
// of local memory: the chunk is 16 blocks (16 KB), dw_values 16 x 64 = 1024 float4s.

// CONFIG-LABEL: func.func @main(
// CONFIG:         %p = graph.conv2d %d, %wp {kernel_config = {x_block = 1 : i64, co_blocks = 1 : i64, split_k = 3 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 64 : i64}}

// HOST-LABEL: func.func @main(
// HOST:         opencl.launch @conv1x1_4c_split3_dw3x3t64_relu(%x, %wp, %wd, %bd, %{{.+}}, %{{.+}}) global [256, 2, 3] local [256, 1, 1] :
// HOST-NEXT:    %p = opencl.alloc_buffer
// HOST-NEXT:    opencl.launch @conv_split_sum_4c(

// CHECK-LABEL:   __attribute__((reqd_work_group_size(256, 1, 1)))
// CHECK-NEXT:    __kernel void conv1x1_4c_split3_dw3x3t64_relu(
// CHECK:           __local float4 dw_values[1024];
// CHECK-NEXT:      const int chunk = (ci4 + 2) / 3;
// CHECK-NEXT:      const int ci4_lo = part * chunk;
// CHECK-NEXT:      const int [[PHI:v[0-9]+]] = min(ci4_lo + chunk, ci4);
// CHECK:           for (int c0 = ci4_lo; c0 < [[PHI]]; c0 += 16) {
// CHECK-NEXT:          const int [[HI:v[0-9]+]] = min(c0 + 16, [[PHI]]);
// CHECK-NEXT:          for (int v = li; v < (([[HI]] - c0) * 64); v += 256) {
// CHECK:               barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:               barrier(CLK_LOCAL_MEM_FENCE);
func.func @main(%x: !texture.tensor<1x24x2x64x4xf32, nchw4c, global>) -> !texture.tensor<1x4x2x64x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<24x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<96xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x24x2x64x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 96 : i64} : !texture.tensor<1x24x2x64x4xf32, nchw4c, global>, tensor<24x1x3x3x4xf32>, tensor<96xf32> -> !texture.tensor<1x24x2x64x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x24x2x64x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x24x2x64x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<4x96x1x1x4xf32>
  %p = graph.conv2d %d, %wp : !texture.tensor<1x24x2x64x4xf32, nchw4c, global>, tensor<4x96x1x1x4xf32> -> !texture.tensor<1x4x2x64x4xf32, nchw4c, global> loc("project")
  func.return %p : !texture.tensor<1x4x2x64x4xf32, nchw4c, global>
}
