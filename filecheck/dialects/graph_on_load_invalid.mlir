// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of `graph.fused {on_load}` (fuse-depthwise-load): such a region has no
// kernel; its reader computes it pixel by pixel from the depthwise conv's input, weights
// and bias, so it must hold a depthwise graph.conv2d on NCHW4c tensors (groups = input
// channels = output channels) followed only by element-wise ops that read values of the
// region, and have no pool partials. Each message is followed by the module of the
// function it is about. The last case is a valid region (no error).

// The head is a groups-1 3x3 conv.
func.func @head_groups_1(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<4x16x3x3x4xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x16x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors (one output channel per input channel) and element-wise ops that read only values of the region, with no partials: its reader computes it pixel by pixel
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "head_groups_1"

// -----

// The head is a grouped conv that is not depthwise: groups = 2 of 16 channels.
func.func @head_grouped(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<4x8x3x3x4xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x8x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "head_grouped"

// -----

// A depthwise multiplier: groups = 16 input channels, 32 output channels.
func.func @head_multiplier(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<8x1x3x3x4xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<8x1x3x3x4xf32> -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
    graph.yield %c : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "head_multiplier"

// -----

// A depthwise conv on plain NCHW tensors.
func.func @head_nchw(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = graph.constant dense<0.25> : tensor<16x1x3x3xf32>
  %d = graph.fused {on_load} -> tensor<1x16x8x8xf32> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32> -> tensor<1x16x8x8xf32>
    %a = graph.relu %c : tensor<1x16x8x8xf32>
    graph.yield %a : tensor<1x16x8x8xf32>
  }
  func.return %d : tensor<1x16x8x8xf32>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "head_nchw"

// -----

// The head is an element-wise op, not a conv.
func.func @head_elementwise(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %a = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "head_elementwise"

// -----

// A tail op reads a value from outside the region (a residual add of the input).
func.func @tail_reads_outside(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %r = graph.add %a, %x : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %r : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors (one output channel per input channel) and element-wise ops that read only values of the region
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "tail_reads_outside"

// -----

// A tail op reads a per-channel scale from outside the region (broadcast multiply).
func.func @tail_reads_scale(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %s: !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %m = graph.mul %c, %s : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %m : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors (one output channel per input channel) and element-wise ops that read only values of the region
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "tail_reads_scale"

// -----

// A depthwise region with pool partials (a squeeze-excite block's) cannot be on_load.
func.func @with_partials(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d, %t = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: {{^}}'graph.fused' on_load must hold a depthwise graph.conv2d on NCHW4c tensors (one output channel per input channel) and element-wise ops that read only values of the region, with no partials
// CHECK-NEXT: "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "with_partials"

// -----

// Valid: a depthwise conv (reading weights and bias from outside the region, as every
// head does) and an activation that reads only region values, x * sigmoid(x). No error:
// the module is printed back.
func.func @valid(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %b = graph.constant dense<0.5> : tensor<16xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %s = graph.sigmoid %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %m = graph.mul %c, %s : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %m : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK-LABEL: func.func @valid(
// CHECK:         %d = graph.fused {on_load} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
// CHECK-NOT:     error
