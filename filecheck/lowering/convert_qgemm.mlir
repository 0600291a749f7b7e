// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config' | filecheck %s --check-prefix=CONFIG
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{target=nvidia-h200}' | filecheck %s --check-prefix=H200
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' | filecheck %s --check-prefix=LAUNCH
// RUN: sed -n '/^\/\/ BEGIN EDITED/,$p' %s | adreno-opt -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' -t opencl | filecheck %s --check-prefix=OCL

// The qgemm family (graph.matmul_nbits, lowering/families/qgemm.py). A decode GEMV (one
// row, 64 columns, K = 512 in 16 blocks of 32): on a GPU target the GEMV schedule
// (QGemm._gemv, measured on the H200), the same on adreno-740 (the default) and on the H200 --
// 64 columns are few, so 16 work-items per column (one block each), 8 columns per
// work-group of 128 (local size [128, 1], grid [16 * 8 * 8, 1]), each block's 4 words in one
// vload (`opencl.vload ... vector<4xi32>`). On the CPU one work-item per output. 64 prefill
// rows: tiles of 4 rows (each weight dequantized once for them), grid [64, 16], on all. The
// bias joins the epilogue as its first extra input, before the fused Relu.

// CONFIG-LABEL: func.func @decode
// CONFIG:         graph.fused {kernel_config = {k_split = 16 : i64, tile_m = 1 : i64, cols_per_group = 8 : i64, block_loads = 1 : i64, k_unroll = 0 : i64, interleave = 0 : i64}}
// H200-LABEL:   func.func @decode
// H200:           graph.fused {kernel_config = {k_split = 16 : i64, tile_m = 1 : i64, cols_per_group = 8 : i64, block_loads = 1 : i64, k_unroll = 0 : i64, interleave = 0 : i64}}
// CPU-LABEL:    func.func @decode
// CPU:            graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 1 : i64, cols_per_group = 1 : i64, block_loads = 0 : i64, k_unroll = 0 : i64, interleave = 0 : i64}}
// LAUNCH-LABEL: opencl.kernel @qmatmul_q4b32_ksplit_c8_vload_add_relu(%a: !opencl.ptr<global, f32>, %packed: !opencl.ptr<global, i32>, %scales: !opencl.ptr<global, f32>, %x0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// LAUNCH-SAME:    reqd_work_group_size = array<i64: 128, 1, 1>
// LAUNCH:         opencl.local_alloc {size = 128 : i64}
// LAUNCH:         scf.for
// LAUNCH:           opencl.vload %packed[{{.*}}] : !opencl.ptr<global, i32> -> vector<4xi32>
// LAUNCH:         }
// LAUNCH:         opencl.barrier
// LAUNCH-LABEL: func.func @decode
// LAUNCH:         opencl.weight @w : !opencl.buffer<4096xi32>
// LAUNCH:         opencl.launch @qmatmul_q4b32_ksplit_c8_vload_add_relu({{.*}}) global [1024, 1] local [128, 1]
func.func @decode(%a: tensor<1x512xf32>) -> tensor<1x64xf32> attributes {graph.inputs = ["a"], graph.outputs = ["r"]} {
  %w = graph.constant @w : tensor<64x16x4xi32>
  %s = graph.constant @s : tensor<64x16xf32>
  %b = graph.constant @b : tensor<64xf32>
  %y = graph.matmul_nbits %a, %w, %s bias %b {bits = 4 : i64, block_size = 32 : i64} : tensor<1x512xf32>, tensor<64x16x4xi32>, tensor<64x16xf32> bias tensor<64xf32> -> tensor<1x64xf32>
  %r = graph.relu %y : tensor<1x64xf32>
  func.return %r : tensor<1x64xf32>
}

// -----

// CONFIG-LABEL: func.func @prefill
// CONFIG:         graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 4 : i64, cols_per_group = 1 : i64, block_loads = 0 : i64, k_unroll = 0 : i64, interleave = 0 : i64}}
// H200-LABEL:   func.func @prefill
// H200:           graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 4 : i64, cols_per_group = 1 : i64, block_loads = 0 : i64, k_unroll = 0 : i64, interleave = 0 : i64}}
// CPU-LABEL:    func.func @prefill
// CPU:            graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 4 : i64, cols_per_group = 1 : i64, block_loads = 0 : i64, k_unroll = 0 : i64, interleave = 0 : i64}}
// LAUNCH-LABEL: opencl.kernel @qmatmul_q8b32_zp_r4(
// LAUNCH-LABEL: func.func @prefill
// LAUNCH:         opencl.launch @qmatmul_q8b32_zp_r4({{.*}}) global [1024, 16]
func.func @prefill(%a: tensor<64x64xf32>) -> tensor<64x1024xf32> attributes {graph.inputs = ["a"], graph.outputs = ["y"]} {
  %w = graph.constant @w8 : tensor<1024x2x8xi32>
  %s = graph.constant @s8 : tensor<1024x2xf32>
  %z = graph.constant @z8 : tensor<1024x2xf32>
  %y = graph.matmul_nbits %a, %w, %s zero_points %z {bits = 8 : i64, block_size = 32 : i64} : tensor<64x64xf32>, tensor<1024x2x8xi32>, tensor<1024x2xf32> zero_points tensor<1024x2xf32> -> tensor<64x1024xf32>
  func.return %y : tensor<64x1024xf32>
}

// -----

// BEGIN EDITED
// A config written by hand keeps its keys; what it lacks comes from the GPU rules given
// them (k_split 4 over 16 blocks: k_unroll 2; block loads on). 20 columns in work-groups
// of 8: the last group's columns 20..23 read column 19 (`min(col, 19)`, in bounds) and
// store nothing (`col < 20`), after the barriers every work-item reaches. Column c of the
// group sums its 4 partials in slots 4c .. 4c + 3 (slot = local id).

// CONFIG-LABEL: func.func @edited
// CONFIG:         graph.fused {kernel_config = {k_split = 4 : i64, tile_m = 1 : i64, cols_per_group = 8 : i64, block_loads = 1 : i64, k_unroll = 2 : i64, interleave = 0 : i64}}
// LAUNCH-LABEL: func.func @edited
// LAUNCH:         opencl.launch @qmatmul_q4b32_ksplit_c8_vload_u2({{.*}}) global [96, 1] local [32, 1]
// OCL:          __attribute__((reqd_work_group_size(32, 1, 1)))
// OCL-NEXT:     __kernel void qmatmul_q4b32_ksplit_c8_vload_u2(
// OCL:            __local float partial[32];
// OCL-NEXT:       const int lid = (int)get_local_id(0);
// OCL-NEXT:       const int s = lid & 3;
// OCL-NEXT:       const int c = lid >> 2;
// OCL-NEXT:       const int col = (((int)get_group_id(0)) * 8) + c;
// OCL-NEXT:       const int [[COLR:v[0-9]+]] = min(col, 19);
// OCL:            const int w_col = [[COLR]] * 64;
// OCL:            #pragma unroll 2
// OCL-NEXT:       for (int b = s; b < 16; b += 4) {
// OCL:              const int4 words = *((__global const int4*)(packed + (w_col + (b * 4))));
// OCL-NEXT:         const int {{v[0-9]+}} = words.s0;
// OCL:            partial[{{v[0-9]+}}] = {{v[0-9]+}};
// OCL-NEXT:       barrier(CLK_LOCAL_MEM_FENCE);
// OCL:            barrier(CLK_LOCAL_MEM_FENCE);
// OCL-NEXT:       if ((s == 0) & (col < 20)) {
// OCL:              out[(rid * 20) + col] =
func.func @edited(%a: tensor<1x512xf32>) -> tensor<1x20xf32> attributes {graph.inputs = ["a"], graph.outputs = ["y"]} {
  %w = graph.constant @we : tensor<20x16x4xi32>
  %s = graph.constant @se : tensor<20x16xf32>
  %y = graph.matmul_nbits %a, %w, %s {bits = 4 : i64, block_size = 32 : i64, kernel_config = {k_split = 4 : i64, cols_per_group = 8 : i64}} : tensor<1x512xf32>, tensor<20x16x4xi32>, tensor<20x16xf32> -> tensor<1x20xf32>
  func.return %y : tensor<1x20xf32>
}
