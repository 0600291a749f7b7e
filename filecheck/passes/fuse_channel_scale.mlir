// RUN: adreno-opt %s --split-input-file -p fuse-channel-scale | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},fuse-channel-scale,select-kernel-config{target=adreno-740},convert-graph-to-opencl' -t opencl -o %t && filecheck %s --check-prefix=CL < %t

// fuse-channel-scale: `x * s`, s one scale per channel (N or 1, C, 1, 1) broadcast over
// an NCHW4c x, whose only reader is a groups-1 convolution, becomes graph.scale_channels
// (no kernel); the convolution loads each input channel block's scale once and
// multiplies the pixels it reads by it. Every other multiply is left alone.

// The squeeze-excite case: the scale multiplies x and a 1x1 projection reads the product.
// CHECK-LABEL: func.func @scaled(
// CHECK:         %y = graph.scale_channels %x, %s : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("scale")
// CHECK-NEXT:    %c = graph.conv2d %y, %w
// CHECK-NOT:     graph.mul

// The conv kernel takes the scale after its weights, loads the scale of input channel
// block ci4 once per block and multiplies each of its x_block input pixels by it.
// CL-LABEL: __kernel void conv1x1_4c(
// CL-NEXT:      __global const float* input,
// CL-NEXT:      __global const float* weight,
// CL-NEXT:      __global const float* scale,
// CL-NEXT:      __global float* out,
// CL:           for (int [[CI:ci4_?[0-9]*]] = 0; [[CI]] < ci4; ++[[CI]]) {
// CL-NEXT:          const float4 [[S:v[0-9]+]] = ((__global const float4*)scale)[[[CI]]];
// CL:               const float4 [[X:v[0-9]+]] = ((__global const float4*)input)[{{.*}}];
// CL-NEXT:          const float4 {{v[0-9]+}} = [[X]] * [[S]];
// CL-NOT:       __kernel void mul
func.func @scaled(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %s: !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %y = graph.mul %x, %s : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("scale")
  %c = graph.conv2d %y, %w : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}

// -----

// The scale first, batch 2 with a batch-2 scale and a 3x3 reader: the
// operands come out in (input, scale) order whatever the multiply's order.
// CHECK-LABEL: func.func @scale_first(
// CHECK:         %y = graph.scale_channels %x, %s : !texture.tensor<2x2x6x6x4xf32, nchw4c, global>, !texture.tensor<2x2x1x1x4xf32, nchw4c, global> -> !texture.tensor<2x2x6x6x4xf32, nchw4c, global>
// CHECK-NEXT:    %c = graph.conv2d %y, %w {pads = array<i64: 1, 1, 1, 1>}
// CL-LABEL: __kernel void conv3x3_4c(
// CL-NEXT:      __global const float* input,
// CL-NEXT:      __global const float* weight,
// CL-NEXT:      __global const float* scale,
// The batch-2 scale is read at (n, ci4): one output block, so n is z.
// CL:           const int [[I:v[0-9]+]] = (z * 2) + ci4;
// CL-NEXT:      const float4 {{v[0-9]+}} = ((__global const float4*)scale)[[[I]]];
func.func @scale_first(%x: !texture.tensor<2x2x6x6x4xf32, nchw4c, global>, %s: !texture.tensor<2x2x1x1x4xf32, nchw4c, global>) -> !texture.tensor<2x1x6x6x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.125> : tensor<1x8x3x3x4xf32>
  %y = graph.mul %s, %x : (!texture.tensor<2x2x1x1x4xf32, nchw4c, global>, !texture.tensor<2x2x6x6x4xf32, nchw4c, global>) -> !texture.tensor<2x2x6x6x4xf32, nchw4c, global>
  %c = graph.conv2d %y, %w {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<2x2x6x6x4xf32, nchw4c, global>, tensor<1x8x3x3x4xf32> -> !texture.tensor<2x1x6x6x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<2x1x6x6x4xf32, nchw4c, global>
}

// -----

// Not fused: the product has a second reader (the function's result), so it must be
// written; the multiply stays a kernel.
// CHECK-LABEL: func.func @two_readers(
// CHECK:         %y = graph.mul %x, %s
// CHECK-NOT:     graph.scale_channels
// CL-LABEL: __kernel void mul_4c(
func.func @two_readers(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %s: !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) {
  %w = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %y = graph.mul %x, %s : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  %c = graph.conv2d %y, %w : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %c, %y : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}

// -----

// Not fused: the reader is a depthwise conv (its kernel has no scaled input).
// CHECK-LABEL: func.func @depthwise_reader(
// CHECK:         %y = graph.mul %x, %s
// CHECK-NOT:     graph.scale_channels
func.func @depthwise_reader(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %s: !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.125> : tensor<4x1x3x3x4xf32>
  %y = graph.mul %x, %s : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  %c = graph.conv2d %y, %w {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}

// -----

// Not fused: both operands have the full shape (no per-channel scale).
// CHECK-LABEL: func.func @full_product(
// CHECK:         %y = graph.mul %x, %t
// CHECK-NOT:     graph.scale_channels
func.func @full_product(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %t: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %y = graph.mul %x, %t : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  %c = graph.conv2d %y, %w : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}

// -----

// Not fused: plain NCHW tensors (the NCHW plan's convolution kernels read no scale).
// CHECK-LABEL: func.func @nchw(
// CHECK:         %y = graph.mul %x, %s
// CHECK-NOT:     graph.scale_channels
func.func @nchw(%x: tensor<1x16x8x8xf32>, %s: tensor<1x16x1x1xf32>) -> tensor<1x8x8x8xf32> {
  %w = graph.constant dense<0.125> : tensor<8x16x1x1xf32>
  %y = graph.mul %x, %s : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %c = graph.conv2d %y, %w : tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32> -> tensor<1x8x8x8xf32>
  func.return %c : tensor<1x8x8x8xf32>
}
