// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},split-k,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -t opencl -o %t.cl && filecheck %s < %t.cl
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},split-k,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t && filecheck %s --check-prefix=HOST < %t
// RUN: not adreno-opt %S/Inputs/config_edit_bad_x_block.mlir -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t.err 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not adreno-opt %S/Inputs/config_edit_bad_key.mlir -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t.err 2>&1 | filecheck %s --check-prefix=KEY
// RUN: not adreno-opt %S/Inputs/config_edit_no_split.mlir -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t.err 2>&1 | filecheck %s --check-prefix=NOSPLIT
// RUN: not adreno-opt %S/Inputs/config_edit_split_k.mlir -p 'graph-fuse{epilogues=false},split-k,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t.err 2>&1 | filecheck %s --check-prefix=DW

// Editing a schedule = editing one op's `kernel_config` in the IR; the lowering decides
// nothing itself, so the kernel changes accordingly. (split-k does nothing to the
// cases without split_k > 1.)

// The same NCHW conv twice, one edited to x_block = 1, one to x_block = 4: two kernels
// (the blocking is part of the name, `c<channels>x<pixels>`). x_block = 1: 8 output
// channels of one pixel, 8 stores, no guard. x_block = 4: 4 pixels x 8 channels = 32
// stores; OW = 6 is not a multiple of 4, so pixels 1..3 are stored under a guard.
// Grid x: 6 work-items vs ceil(6 / 4) = 2.

// CHECK-LABEL: __kernel void conv3x3_c8x1(
// CHECK-COUNT-8: {{^}}    out[{{.*}}] = v{{[0-9]+}}.s{{[0-3]}};
// CHECK-NOT:     out[
// CHECK-NOT:     if (
// CHECK:         {{^}}}
// CHECK-LABEL: __kernel void conv3x3_c8x4(
// CHECK-COUNT-8: {{^}}    out[{{.*}}] = v{{[0-9]+}}.s{{[0-3]}};
// CHECK-NEXT:    if (
// CHECK-COUNT-8: {{^}}        out[{{.*}}] = v{{[0-9]+}}.s{{[0-3]}};
// CHECK-NEXT:    }
// CHECK-NEXT:    if (
// CHECK-COUNT-8: {{^}}        out[{{.*}}] = v{{[0-9]+}}.s{{[0-3]}};
// CHECK-NEXT:    }
// CHECK-NEXT:    if (
// CHECK-COUNT-8: {{^}}        out[{{.*}}] = v{{[0-9]+}}.s{{[0-3]}};
// CHECK-NEXT:    }
// CHECK-NEXT:  {{^}}}

// HOST-LABEL: func.func @nchw_same_conv_twice
// HOST:         opencl.launch @conv3x3_c8x1(%x, %{{.*}}, %a, %{{.*}}) global [6, 6, 1]
// HOST:         opencl.launch @conv3x3_c8x4(%x, %{{.*}}, %b, %{{.*}}) global [2, 6, 1]
func.func @nchw_same_conv_twice(%x: tensor<1x8x6x6xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %a = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 1 : i64}} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32>
  %b = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 4 : i64}} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %a, %b : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>
}

// -----

// The same on NCHW4c: x_block = 1 keeps one float4 accumulator and writes one float4;
// x_block = 4 keeps four and writes four (OW = 8: no guards). The NCHW4c kernel name
// does not spell the pixel blocking: the second kernel is told apart by a suffix.

// CHECK-LABEL: __kernel void conv3x3_4c(
// CHECK-COUNT-1: float4 v{{[0-9]+}} = (float4)(0.0f);
// CHECK-NOT:     float4 v{{[0-9]+}} = (float4)(0.0f);
// CHECK:         for (
// CHECK-COUNT-1: ((__global float4*)out)[
// CHECK-NOT:     ((__global float4*)out)[
// CHECK:         {{^}}}
// CHECK-LABEL: __kernel void conv3x3_4c_1(
// CHECK-COUNT-4: float4 v{{[0-9]+}} = (float4)(0.0f);
// CHECK-NOT:     float4 v{{[0-9]+}} = (float4)(0.0f);
// CHECK:         for (
// CHECK-COUNT-4: ((__global float4*)out)[
// CHECK-NOT:     ((__global float4*)out)[
// CHECK:         {{^}}}

// HOST-LABEL: func.func @packed_same_conv_twice
// HOST:         opencl.launch @conv3x3_4c(%x, %w, %a, %{{.*}}) global [8, 8, 2]
// HOST:         opencl.launch @conv3x3_4c_1(%x, %w, %b, %{{.*}}) global [2, 8, 2]
func.func @packed_same_conv_twice(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) {
  %w = graph.constant dense<0.5> : tensor<2x8x3x3x4xf32>
  %a = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, kernel_config = {x_block = 1 : i64, co_blocks = 1 : i64, split_k = 1 : i64}} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x3x3x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %b = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64}} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x3x3x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %a, %b : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}

// -----

// Edited to split_k = 2 on a conv + bias + relu region: split-k turns it into a partial
// sum kernel `conv1x1_4c_split2` (no bias; grid z = 8 blocks x 2 parts; each part loops
// over its own range of input channel blocks) and `conv_split_sum_4c_relu`, which adds
// the parts and the bias and applies the relu (the epilogue stays fused).

// CHECK-LABEL: __kernel void conv1x1_4c_split2(
// CHECK-NOT:     bias
// CHECK:         for (int {{.*}} = ci4_lo; {{.*}} < min(ci4_lo + chunk, ci4);
// CHECK:         {{^}}}
// CHECK-LABEL: __kernel void conv_split_sum_4c_relu(
// CHECK-NEXT:      __global const float* partial,
// CHECK-NEXT:      __global const float* bias,
// CHECK-NEXT:      __global float* out
// CHECK:           ((__global float4*)out)[{{.*}}] = adreno_fmax_float4(
// CHECK:         {{^}}}

// HOST-LABEL: func.func @split_edit
// HOST:         %[[P:.+]] = opencl.alloc_buffer : !opencl.buffer<3136xf32>
// HOST:         opencl.launch @conv1x1_4c_split2(%x, %w, %[[P]], %{{.*}}) global [2, 7, 16]
// HOST:         %[[R:.+]] = opencl.alloc_buffer : !opencl.buffer<1568xf32>
// HOST-NEXT:    opencl.launch @conv_split_sum_4c_relu(%[[P]], %b, %[[R]]) global [7, 7, 8]
// HOST-NEXT:    func.return %[[R]]
func.func @split_edit(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x1x1x4xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %r = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 2 : i64}} -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w, %b : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  }
  func.return %r : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}

// -----

// Edited to co_blocks = 2: two output channel blocks per work-item (kernel `_x2`),
// half the grid in z, 2 x 4 float4 accumulators and stores.

// CHECK-LABEL: __kernel void conv1x1_4c_x2(
// CHECK-COUNT-8: float4 v{{[0-9]+}} = (float4)(0.0f);
// CHECK:         for (
// CHECK-COUNT-8: ((__global float4*)out)[
// CHECK-NOT:     ((__global float4*)out)[

// HOST-LABEL: func.func @co_blocks_edit
// HOST:         opencl.launch @conv1x1_4c_x2(%x, %w, %c, %{{.*}}) global [2, 8, 1]
func.func @co_blocks_edit(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<2x8x1x1x4xf32>
  %c = graph.conv2d %x, %w {kernel_config = {co_blocks = 2 : i64}} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}

// Invalid edits are CompileErrors naming the op (and its ONNX node), the key and the
// allowed values.
// ERR:     error: 'graph.conv2d' at loc("edited_conv"): kernel_config x_block = 7 is not one of [1, 2, 3, 4]
// KEY:     error: 'graph.conv2d' at loc("fused_conv"): kernel_config key 'xblock' is not used by this kernel; known keys: co_block, kernel, vec, work_group, x_block
// NOSPLIT: error: 'graph.conv2d' at loc("late_conv"): kernel_config split_k = 2 needs the split-k pass before convert-graph-to-opencl
// DW:      error: 'graph.conv2d' at loc("dw"): split_k applies to convolutions with groups = 1 only
