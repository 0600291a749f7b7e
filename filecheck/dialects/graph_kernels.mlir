// RUN: adreno-opt %s | adreno-opt | filecheck %s
// Round trip of the graph ops of kernel regions on NCHW4c tensors, as graph-fuse, split-k,
// fuse-pool-partials, fuse-depthwise-load and fuse-channel-scale write them: parse, print,
// parse again, print the same text. graph.mlir has the ops on plain tensors.

// graph.fused (graph-fuse): a conv head and its element-wise epilogue, one kernel; the
// region and the ops in it keep their locations.
// CHECK-LABEL: func.func @fused(
// CHECK-NEXT:  %w = graph.constant dense<1.250000e-01> : tensor<4x16x3x3x4xf32>
// CHECK-NEXT:  %b = graph.constant dense<5.000000e-01> : tensor<16xf32>
// CHECK-NEXT:  %r = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
// CHECK-NEXT:    %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x16x3x3x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("conv")
// CHECK-NEXT:    %a = graph.add %c, %y : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("add")
// CHECK-NEXT:    %rr = graph.relu %a : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("relu")
// CHECK-NEXT:    graph.yield %rr : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:  } loc("relu")
// CHECK-NEXT:  func.return %r : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
func.func @fused(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %y: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.125> : tensor<4x16x3x3x4xf32>
  %b = graph.constant dense<0.5> : tensor<16xf32>
  %r = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x16x3x3x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("conv")
    %a = graph.add %c, %y : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("add")
    %rr = graph.relu %a : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("relu")
    graph.yield %rr : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  } loc("relu")
  func.return %r : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}

// split-k: graph.conv2d_split_k (the parts stacked on the batch axis; default strides
// and dilations not printed) and graph.split_k_sum heading a region (with the bias), or
// alone (without).
// CHECK-LABEL: func.func @split_k(
// CHECK-NEXT:  %w = graph.constant dense<5.000000e-01> : tensor<8x128x3x3x4xf32>
// CHECK-NEXT:  %b = graph.constant dense<5.000000e-01> : tensor<32xf32>
// CHECK-NEXT:  %p = graph.conv2d_split_k %x, %w {parts = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x3x3x4xf32> -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global> loc("late_conv")
// CHECK-NEXT:  %r = graph.fused -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
// CHECK-NEXT:    %s = graph.split_k_sum %p, %b {parts = 4 : i64} : !texture.tensor<4x8x7x7x4xf32, nchw4c, global>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> loc("late_conv")
// CHECK-NEXT:    %rr = graph.relu %s : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:    graph.yield %rr : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:  }
// CHECK-NEXT:  %w1 = graph.constant dense<5.000000e-01> : tensor<8x32x1x1x4xf32>
// CHECK-NEXT:  %p1 = graph.conv2d_split_k %r, %w1 {parts = 2 : i64} : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>, tensor<8x32x1x1x4xf32> -> !texture.tensor<2x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:  %s1 = graph.split_k_sum %p1 {parts = 2 : i64} : !texture.tensor<2x8x7x7x4xf32, nchw4c, global> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:  func.return %s1 : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
func.func @split_k(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x3x3x4xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %p = graph.conv2d_split_k %x, %w {parts = 4 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x3x3x4xf32> -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global> loc("late_conv")
  %r = graph.fused -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
    %s = graph.split_k_sum %p, %b {parts = 4 : i64} : !texture.tensor<4x8x7x7x4xf32, nchw4c, global>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> loc("late_conv")
    %rr = graph.relu %s : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
    graph.yield %rr : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  }
  %w1 = graph.constant dense<0.5> : tensor<8x32x1x1x4xf32>
  %p1 = graph.conv2d_split_k %r, %w1 {parts = 2 : i64} : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>, tensor<8x32x1x1x4xf32> -> !texture.tensor<2x8x7x7x4xf32, nchw4c, global>
  %s1 = graph.split_k_sum %p1 {parts = 2 : i64} : !texture.tensor<2x8x7x7x4xf32, nchw4c, global> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  func.return %s1 : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}

// fuse-pool-partials: a region with a second result, the graph.pool_partials of the
// value it yields first; graph.sum_partials of those tiles is the mean its 1x1 reader
// loads.
// CHECK-LABEL: func.func @pool_partials(
// CHECK-NEXT:  %wd = graph.constant dense<2.500000e-01> : tensor<4x1x3x3x4xf32>
// CHECK-NEXT:  %bd = graph.constant dense<5.000000e-01> : tensor<16xf32>
// CHECK-NEXT:  %d, %t = graph.fused -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x13x1x4xf32, nchw4c, global> {
// CHECK-NEXT:    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global> loc("dw")
// CHECK-NEXT:    %h = graph.hard_swish %c : !texture.tensor<1x4x28x28x4xf32, nchw4c, global> loc("act")
// CHECK-NEXT:    %pp = graph.pool_partials %h {tiles = 13 : i64} : !texture.tensor<1x4x28x28x4xf32, nchw4c, global> -> !texture.tensor<1x4x13x1x4xf32, nchw4c, global> loc("pool")
// CHECK-NEXT:    graph.yield %h, %pp : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x13x1x4xf32, nchw4c, global>
// CHECK-NEXT:  } loc("act")
// CHECK-NEXT:  %m = graph.sum_partials %t : !texture.tensor<1x4x13x1x4xf32, nchw4c, global> -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global> loc("pool")
// CHECK-NEXT:  %w1 = graph.constant dense<1.250000e-01> : tensor<2x16x1x1x4xf32>
// CHECK-NEXT:  %fc = graph.conv2d %m, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
// CHECK-NEXT:  func.return %d, %fc : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
func.func @pool_partials(%x: !texture.tensor<1x4x28x28x4xf32, nchw4c, global>) -> (!texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x2x1x1x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<16xf32>
  %d, %t = graph.fused -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x13x1x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global> loc("dw")
    %h = graph.hard_swish %c : !texture.tensor<1x4x28x28x4xf32, nchw4c, global> loc("act")
    %pp = graph.pool_partials %h {tiles = 13 : i64} : !texture.tensor<1x4x28x28x4xf32, nchw4c, global> -> !texture.tensor<1x4x13x1x4xf32, nchw4c, global> loc("pool")
    graph.yield %h, %pp : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x13x1x4xf32, nchw4c, global>
  } loc("act")
  %m = graph.sum_partials %t : !texture.tensor<1x4x13x1x4xf32, nchw4c, global> -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global> loc("pool")
  %w1 = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %fc = graph.conv2d %m, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
  func.return %d, %fc : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
}

// fuse-depthwise-load: a `graph.fused {on_load}` depthwise region (no kernel of its
// own) read by a groups-1 1x1 conv.
// CHECK-LABEL: func.func @on_load(
// CHECK-NEXT:  %wd = graph.constant dense<2.500000e-01> : tensor<8x1x3x3x4xf32>
// CHECK-NEXT:  %bd = graph.constant dense<5.000000e-01> : tensor<32xf32>
// CHECK-NEXT:  %d = graph.fused {on_load} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
// CHECK-NEXT:    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<8x1x3x3x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw")
// CHECK-NEXT:    %a = graph.clip %c {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw_act")
// CHECK-NEXT:    graph.yield %a : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:  } loc("dw_act")
// CHECK-NEXT:  %wp = graph.constant dense<1.250000e-01> : tensor<4x32x1x1x4xf32>
// CHECK-NEXT:  %y = graph.conv2d %d, %wp : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<4x32x1x1x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("project")
// CHECK-NEXT:  func.return %y : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
func.func @on_load(%x: !texture.tensor<1x8x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<8x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<32xf32>
  %d = graph.fused {on_load} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<8x1x3x3x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw")
    %a = graph.clip %c {min = 0.0 : f32, max = 6.0 : f32} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw_act")
    graph.yield %a : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  } loc("dw_act")
  %wp = graph.constant dense<0.125> : tensor<4x32x1x1x4xf32>
  %y = graph.conv2d %d, %wp : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<4x32x1x1x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("project")
  func.return %y : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}

// fuse-channel-scale: graph.scale_channels (a per-channel scale, batch-1 scale on a
// batch-2 input) read by a 1x1 conv.
// CHECK-LABEL: func.func @scale_channels(
// CHECK-NEXT:  %y = graph.scale_channels %x, %s : !texture.tensor<2x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global> -> !texture.tensor<2x4x8x8x4xf32, nchw4c, global> loc("scale")
// CHECK-NEXT:  %w = graph.constant dense<1.250000e-01> : tensor<2x16x1x1x4xf32>
// CHECK-NEXT:  %c = graph.conv2d %y, %w : !texture.tensor<2x4x8x8x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<2x2x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:  func.return %c : !texture.tensor<2x2x8x8x4xf32, nchw4c, global>
func.func @scale_channels(%x: !texture.tensor<2x4x8x8x4xf32, nchw4c, global>, %s: !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<2x2x8x8x4xf32, nchw4c, global> {
  %y = graph.scale_channels %x, %s : !texture.tensor<2x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global> -> !texture.tensor<2x4x8x8x4xf32, nchw4c, global> loc("scale")
  %w = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %c = graph.conv2d %y, %w : !texture.tensor<2x4x8x8x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<2x2x8x8x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<2x2x8x8x4xf32, nchw4c, global>
}
