// RUN: adreno-opt %s --split-input-file -p 'fuse-pool-partials{target=adreno-740}' | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'fuse-pool-partials{target=pocl-cpu}' | filecheck %s --check-prefix=CPU

// fuse-pool-partials (after graph-fuse): a squeeze-excite block's global average pool
// of an NCHW4c tensor that a depthwise conv's `graph.fused` region computes, read only
// by a groups-1 1x1 conv (the SE block's first FC), moves into that region as
// `graph.pool_partials` (the region's second result); a `graph.sum_partials` of the
// partials replaces the pool where the FC reads it. Only on GPU targets: on pocl-cpu
// (CPU) the module is unchanged.

// The positive pattern: a 28x28 plane of 4 channel blocks. pool_tiles: 64 work-items
// per work-group (784 >= 256 pixels), one pixel each: ceil(784 / 64) = 13 tiles. The region keeps
// its location and the hard_swish it yields; the pool keeps its name on the
// sum_partials; the scale's mul still reads the region's first result.

// CHECK-LABEL: func.func @se(
// CHECK:         %d, %[[P:.+]] = graph.fused -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x13x1x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[C:.+]] = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64}
// CHECK-NEXT:      %[[H:.+]] = graph.hard_swish %[[C]] : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>
// CHECK-NEXT:      %[[T:.+]] = graph.pool_partials %[[H]] {tiles = 13 : i64} : !texture.tensor<1x4x28x28x4xf32, nchw4c, global> -> !texture.tensor<1x4x13x1x4xf32, nchw4c, global> loc("pool")
// CHECK-NEXT:      graph.yield %[[H]], %[[T]] : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x13x1x4xf32, nchw4c, global>
// CHECK-NEXT:    } loc("act")
// CHECK-NOT:     graph.global_avg_pool
// CHECK:         %p = graph.sum_partials %[[P]] : !texture.tensor<1x4x13x1x4xf32, nchw4c, global> -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global> loc("pool")
// CHECK:         graph.fused -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global> {
// CHECK-NEXT:      graph.conv2d %p, %w1, %b1 :
// CHECK:         graph.mul %d, %{{.+}} : (!texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>)

// CPU-LABEL: func.func @se(
// CPU:         %d = graph.fused -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global> {
// CPU-NOT:       graph.pool_partials
// CPU:           graph.yield %{{.+}} : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>
// CPU-NEXT:    } loc("act")
// CPU-NEXT:    %p = graph.global_avg_pool %d : (!texture.tensor<1x4x28x28x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global> loc("pool")
// CPU-NOT:     graph.sum_partials
// CPU:         graph.conv2d %p, %w1, %b1
func.func @se(%x: !texture.tensor<1x4x28x28x4xf32, nchw4c, global>) -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<16xf32>
  %d = graph.fused -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global> loc("dw")
    %h = graph.hard_swish %c : !texture.tensor<1x4x28x28x4xf32, nchw4c, global> loc("act")
    graph.yield %h : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>
  } loc("act")
  %p = graph.global_avg_pool %d : (!texture.tensor<1x4x28x28x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global> loc("pool")
  %w1 = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %b1 = graph.constant dense<0.0> : tensor<8xf32>
  %r = graph.fused -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global> {
    %c1 = graph.conv2d %p, %w1, %b1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32>, tensor<8xf32> -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
    %r1 = graph.relu %c1 : !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
    graph.yield %r1 : !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
  }
  %w2 = graph.constant dense<0.25> : tensor<4x8x1x1x4xf32>
  %b2 = graph.constant dense<0.0> : tensor<16xf32>
  %s = graph.fused -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global> {
    %c2 = graph.conv2d %r, %w2, %b2 : !texture.tensor<1x2x1x1x4xf32, nchw4c, global>, tensor<4x8x1x1x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
    %s1 = graph.hard_sigmoid %c2 {alpha = 0.166666672 : f32} : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
    graph.yield %s1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  }
  %y = graph.mul %d, %s : (!texture.tensor<1x4x28x28x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x28x28x4xf32, nchw4c, global>
  func.return %y : !texture.tensor<1x4x28x28x4xf32, nchw4c, global>
}

// -----

// Images, a stride-2 depthwise conv, batch 2 and a small plane: 7x7 = 49 pixels (16
// work-items per work-group), ceil(49 / 16) = 4 tiles. The partials are an f32 global
// buffer whatever the region's result is (here a half image).

// CHECK-LABEL: func.func @se_image(
// CHECK:         %d, %[[P:.+]] = graph.fused -> !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>, !texture.tensor<2x2x4x1x4xf32, nchw4c, global> {
// CHECK:           graph.relu
// CHECK-NEXT:      %[[T:.+]] = graph.pool_partials %{{.+}} {tiles = 4 : i64} : !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>> -> !texture.tensor<2x2x4x1x4xf32, nchw4c, global>
// CHECK-NEXT:      graph.yield %{{.+}}, %[[T]] :
// CHECK:         %p = graph.sum_partials %[[P]] : !texture.tensor<2x2x4x1x4xf32, nchw4c, global> -> !texture.tensor<2x2x1x1x4xf16, nchw4c, global>
// CHECK:         graph.conv2d %p, %w1 :

// CPU-LABEL: func.func @se_image(
// CPU-NOT:     graph.pool_partials
// CPU:         %p = graph.global_avg_pool %d
func.func @se_image(%x: !texture.tensor<2x2x14x14x4xf16, nchw4c, #texture.image<texture, h = 56, w = 14>>) -> !texture.tensor<2x1x1x1x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<2x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<8xf32>
  %d = graph.fused -> !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>> {
    %c = graph.conv2d %x, %wd, %bd {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : !texture.tensor<2x2x14x14x4xf16, nchw4c, #texture.image<texture, h = 56, w = 14>>, tensor<2x1x3x3x4xf32>, tensor<8xf32> -> !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>
    %h = graph.relu %c : !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>
    graph.yield %h : !texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>
  }
  %p = graph.global_avg_pool %d : (!texture.tensor<2x2x7x7x4xf16, nchw4c, #texture.image<texture, h = 28, w = 7>>) -> !texture.tensor<2x2x1x1x4xf16, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<1x8x1x1x4xf32>
  %f = graph.conv2d %p, %w1 : !texture.tensor<2x2x1x1x4xf16, nchw4c, global>, tensor<1x8x1x1x4xf32> -> !texture.tensor<2x1x1x1x4xf32, nchw4c, global>
  func.return %f : !texture.tensor<2x1x1x1x4xf32, nchw4c, global>
}

// -----

// Negative: the pool has a second reader (it is also returned): the pool stays, the
// region gets no partials.

// CHECK-LABEL: func.func @pool_two_users(
// CHECK-NOT:     graph.pool_partials
// CHECK:         %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
// CHECK:         %p = graph.global_avg_pool %d
// CHECK-NOT:     graph.sum_partials
// CHECK:         func.return %f, %p :
// CPU-LABEL: func.func @pool_two_users(
// CPU-NOT:     graph.pool_partials
func.func @pool_two_users(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x1x1x1x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  %p = graph.global_avg_pool %d : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<1x16x1x1x4xf32>
  %f = graph.conv2d %p, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<1x16x1x1x4xf32> -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  func.return %f, %p : !texture.tensor<1x1x1x1x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
}

// -----

// Negative: the pooled tensor comes from a groups-1 3x3 conv's region, not a depthwise
// one.

// CHECK-LABEL: func.func @producer_not_depthwise(
// CHECK-NOT:     graph.pool_partials
// CHECK:         %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
// CHECK:         %p = graph.global_avg_pool %d
// CHECK-NOT:     graph.sum_partials
// CPU-LABEL: func.func @producer_not_depthwise(
// CPU-NOT:     graph.pool_partials
func.func @producer_not_depthwise(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global> {
  %wc = graph.constant dense<0.25> : tensor<4x16x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wc {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x16x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  %p = graph.global_avg_pool %d : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<1x16x1x1x4xf32>
  %f = graph.conv2d %p, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<1x16x1x1x4xf32> -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  func.return %f : !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
}

// -----

// Negative: the depthwise conv is a lone op (no activation: graph-fuse made no region).

// CHECK-LABEL: func.func @depthwise_not_fused(
// CHECK-NOT:     graph.pool_partials
// CHECK:         %p = graph.global_avg_pool %d
// CPU-LABEL: func.func @depthwise_not_fused(
// CPU-NOT:     graph.pool_partials
func.func @depthwise_not_fused(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  %p = graph.global_avg_pool %d : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<1x16x1x1x4xf32>
  %f = graph.conv2d %p, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<1x16x1x1x4xf32> -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  func.return %f : !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
}

// -----

// Negative: the pool's reader is not a squeeze-excite FC: a 1x1 conv with padding, and
// an element-wise op.

// CHECK-LABEL: func.func @reader_not_fc(
// CHECK-NOT:     graph.pool_partials
// CHECK:         %p = graph.global_avg_pool %d
// CHECK:         %q = graph.global_avg_pool %e
// CHECK-NOT:     graph.sum_partials
// CPU-LABEL: func.func @reader_not_fc(
// CPU-NOT:     graph.pool_partials
func.func @reader_not_fc(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x1x3x3x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  %p = graph.global_avg_pool %d : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<1x16x1x1x4xf32>
  %f = graph.conv2d %p, %w1 {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<1x16x1x1x4xf32> -> !texture.tensor<1x1x3x3x4xf32, nchw4c, global>
  %e = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c2 = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h2 = graph.relu %c2 : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %h2 : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  %q = graph.global_avg_pool %e : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %g = graph.sigmoid %q : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  func.return %f, %g : !texture.tensor<1x1x3x3x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
}

// -----

// Negative: a grouped (not depthwise) conv's region: groups = 2 of 16 channels.

// CHECK-LABEL: func.func @producer_grouped(
// CHECK-NOT:     graph.pool_partials
// CHECK:         %p = graph.global_avg_pool %d
// CPU-LABEL: func.func @producer_grouped(
// CPU-NOT:     graph.pool_partials
func.func @producer_grouped(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global> {
  %wg = graph.constant dense<0.25> : tensor<4x8x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wg {pads = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x8x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  %p = graph.global_avg_pool %d : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %w1 = graph.constant dense<0.125> : tensor<1x16x1x1x4xf32>
  %f = graph.conv2d %p, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<1x16x1x1x4xf32> -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  func.return %f : !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
}

// -----

// Two SE-style pools of one depthwise region: the first (in program order) takes the
// partials result; the region then has partials, so the second pool stays a kernel.

// CHECK-LABEL: func.func @two_pools(
// CHECK:         %d, %[[P:.+]] = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
// CHECK-COUNT-1:   graph.pool_partials
// CHECK:         %p = graph.sum_partials %[[P]]
// CHECK:         %q = graph.global_avg_pool %d
// CHECK-NOT:     graph.pool_partials
// CPU-LABEL: func.func @two_pools(
// CPU-NOT:     graph.pool_partials
func.func @two_pools(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x1x1x1x4xf32, nchw4c, global>, !texture.tensor<1x1x1x1x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  %w1 = graph.constant dense<0.125> : tensor<1x16x1x1x4xf32>
  %p = graph.global_avg_pool %d : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %f = graph.conv2d %p, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<1x16x1x1x4xf32> -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  %q = graph.global_avg_pool %d : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %g = graph.conv2d %q, %w1 : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>, tensor<1x16x1x1x4xf32> -> !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
  func.return %f, %g : !texture.tensor<1x1x1x1x4xf32, nchw4c, global>, !texture.tensor<1x1x1x1x4xf32, nchw4c, global>
}
