// RUN: adreno-opt %s | adreno-opt | filecheck %s
// RUN: adreno-opt %s -p graph-fuse,select-kernel-config,convert-graph-to-opencl | filecheck %s --check-prefix=LOWER

// graph.matmul_nbits: a matrix product by a weight quantized in blocks along K (com.microsoft
// MatMulNBits), its blocks kept as i32 words. Round trip, and the lowering: the packed words
// are an i32 weight buffer the kernel unpacks with shifts and masks, the fused Relu ends it;
// on the default (GPU) target the 8 outputs are too few: 2 work-items share each column,
// the 8 columns share one work-group, and a work-item reads its block's 4 words in one vload.

// CHECK-LABEL: func.func @q4
// CHECK:         %y = graph.matmul_nbits %a, %w, %s zero_points %z {bits = 4 : i64, block_size = 32 : i64} : tensor<2x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> zero_points tensor<8x2xf32> -> tensor<2x8xf32>
// LOWER-LABEL: opencl.kernel @qmatmul_q4b32_zp_ksplit_c8_vload_relu(%a: !opencl.ptr<global, f32>, %packed: !opencl.ptr<global, i32>, %scales: !opencl.ptr<global, f32>, %zero_points: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// LOWER-SAME:    reqd_work_group_size = array<i64: 16, 1, 1>
// LOWER:         opencl.vload %packed[{{.*}}] : !opencl.ptr<global, i32> -> vector<4xi32>
// LOWER:         arith.shrsi
// LOWER:         arith.andi
// LOWER-LABEL: func.func @q4
// LOWER:         opencl.weight @w : !opencl.buffer<64xi32>
func.func @q4(%a: tensor<2x64xf32>) -> tensor<2x8xf32> attributes {graph.inputs = ["a"], graph.outputs = ["r"]} {
  %w = graph.constant @w : tensor<8x2x4xi32>
  %s = graph.constant @s : tensor<8x2xf32>
  %z = graph.constant @z : tensor<8x2xf32>
  %y = graph.matmul_nbits %a, %w, %s zero_points %z {bits = 4 : i64, block_size = 32 : i64} : tensor<2x64xf32>, tensor<8x2x4xi32>, tensor<8x2xf32> zero_points tensor<8x2xf32> -> tensor<2x8xf32>
  %r = graph.relu %y : tensor<2x8xf32>
  func.return %r : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @q8_bias
// CHECK:         graph.matmul_nbits %a, %w, %s bias %b {bits = 8 : i64, block_size = 16 : i64} : tensor<3x20xf32>, tensor<5x2x4xi32>, tensor<5x2xf32> bias tensor<5xf32> -> tensor<3x5xf32>
func.func @q8_bias(%a: tensor<3x20xf32>) -> tensor<3x5xf32> attributes {graph.inputs = ["a"], graph.outputs = ["y"]} {
  %w = graph.constant @w8 : tensor<5x2x4xi32>
  %s = graph.constant @s8 : tensor<5x2xf32>
  %b = graph.constant @b8 : tensor<5xf32>
  %y = graph.matmul_nbits %a, %w, %s bias %b {bits = 8 : i64, block_size = 16 : i64} : tensor<3x20xf32>, tensor<5x2x4xi32>, tensor<5x2xf32> bias tensor<5xf32> -> tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}
