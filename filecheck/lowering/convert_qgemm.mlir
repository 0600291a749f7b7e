// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config' | filecheck %s --check-prefix=CONFIG
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' | filecheck %s --check-prefix=LAUNCH

// The qgemm family (graph.matmul_nbits, lowering/families/qgemm.py). A decode GEMV (one
// row, 64 columns, K = 512 in 16 blocks of 32): on a GPU target (adreno-740, the default)
// 16 work-items share each column's blocks (one block each; local size [16, 1], grid
// [16 * 64, 1]); on the CPU one work-item per output. 64 prefill rows: tiles of 4 rows
// (each weight dequantized once for them), grid [64, 16], on both. The bias joins the
// epilogue as its first extra input, before the fused Relu.

// CONFIG-LABEL: func.func @decode
// CONFIG:         graph.fused {kernel_config = {k_split = 16 : i64, tile_m = 1 : i64}}
// CPU-LABEL:    func.func @decode
// CPU:            graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 1 : i64}}
// LAUNCH-LABEL: opencl.kernel @qmatmul_q4b32_ksplit_add_relu(%a: !opencl.ptr<global, f32>, %packed: !opencl.ptr<global, i32>, %scales: !opencl.ptr<global, f32>, %x0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// LAUNCH-SAME:    reqd_work_group_size = array<i64: 16, 1, 1>
// LAUNCH:         opencl.local_alloc
// LAUNCH:         opencl.barrier
// LAUNCH-LABEL: func.func @decode
// LAUNCH:         opencl.weight @w : !opencl.buffer<4096xi32>
// LAUNCH:         opencl.launch @qmatmul_q4b32_ksplit_add_relu({{.*}}) global [1024, 1] local [16, 1]
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
// CONFIG:         graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 4 : i64}}
// CPU-LABEL:    func.func @prefill
// CPU:            graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 4 : i64}}
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
