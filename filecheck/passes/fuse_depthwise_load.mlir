// RUN: adreno-opt %s --split-input-file -p 'fuse-depthwise-load{target=adreno-740}' | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'fuse-depthwise-load{target=adreno-740},fuse-depthwise-load{target=adreno-740}' | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'fuse-depthwise-load{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: not adreno-opt %s --split-input-file -p 'fuse-depthwise-load{target=no-such-gpu}' 2>&1 | filecheck %s --check-prefix=ERR

// fuse-depthwise-load (after graph-fuse, fuse-pool-partials and fuse-channel-scale): a
// depthwise conv whose value has one reader, a groups-1 1x1 conv with stride 1 and no
// padding that reads it as its input (a lone conv or the head of a graph.fused region),
// is computed by that conv as it loads it: its graph.fused region gets the unit
// attribute `on_load` (graph-fuse gives every kernel a region, so a depthwise conv
// without an activation has a one-op region; a conv outside any region is left alone).
// Nothing else changes. GPU targets only: on pocl-cpu the module is unchanged. The
// second RUN line applies the pass twice: the result is the same (a marked region is left
// as it is).

// ERR: fuse-depthwise-load: option target must be a target profile: {{.*}}; got 'no-such-gpu'

// An inverted-residual block: 1x1 expand (a region with its ReLU6) -> depthwise 3x3 +
// ReLU6 -> 1x1 projection + residual add. The depthwise region becomes on_load with its
// ops, location and result name as they were; the projection still reads %d.

// CHECK-LABEL: func.func @inverted_residual(
// CHECK:         %e = graph.fused -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
// CHECK:         %d = graph.fused {on_load} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
// CHECK-NEXT:      %c = graph.conv2d %e, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : {{.*}} loc("dw")
// CHECK-NEXT:      %a = graph.clip %c {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw_act")
// CHECK-NEXT:      graph.yield %a : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:    } loc("dw_act")
// CHECK:         %y = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
// CHECK-NEXT:      %p = graph.conv2d %d, %wp, %bp :
// CHECK-NEXT:      %r = graph.add %p, %x :
// CHECK-NOT:     on_load
// CPU-LABEL: func.func @inverted_residual(
// CPU-NOT:     on_load
// CPU:         %d = graph.fused -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
// CPU-NOT:     on_load
func.func @inverted_residual(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %we = graph.constant dense<0.125> : tensor<8x16x1x1x4xf32>
  %e = graph.fused -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
    %ce = graph.conv2d %x, %we : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<8x16x1x1x4xf32> -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("expand")
    %ae = graph.clip %ce {min = 0.0 : f32, max = 6.0 : f32} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("expand_act")
    graph.yield %ae : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  } loc("expand_act")
  %wd = graph.constant dense<0.25> : tensor<8x1x3x3x4xf32>
  %bd = graph.constant dense<0.5> : tensor<32xf32>
  %d = graph.fused -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %e, %wd, %bd {pads = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<8x1x3x3x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw")
    %a = graph.clip %c {min = 0.0 : f32, max = 6.0 : f32} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw_act")
    graph.yield %a : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  } loc("dw_act")
  %wp = graph.constant dense<0.125> : tensor<4x32x1x1x4xf32>
  %bp = graph.constant dense<0.0> : tensor<16xf32>
  %y = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %p = graph.conv2d %d, %wp, %bp : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<4x32x1x1x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("project")
    %r = graph.add %p, %x : (!texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("add")
    graph.yield %r : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  } loc("add")
  func.return %y : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}

// -----

// A depthwise conv without activation or bias: graph-fuse gave it a region of its own,
// which becomes `on_load` as it is (the conv, its location and the region's result
// name unchanged); the projection, a one-op region too, still reads the region. A
// depthwise conv outside any region (not graph-fuse's output) is left alone.

// CHECK-LABEL: func.func @lone_depthwise(
// CHECK:         %d = graph.fused {on_load} -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[C:.+]] = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> loc("dw")
// CHECK-NEXT:      graph.yield %[[C]] : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
// CHECK-NEXT:    } loc("dw")
// CHECK-NEXT:    %wp = graph.constant
// CHECK-NEXT:    %p = graph.fused -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[P:.+]] = graph.conv2d %d, %wp :
// CHECK-NEXT:      graph.yield %[[P]]
// CHECK-NEXT:    } loc("project")
// CHECK-NEXT:    %o = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64}
// CHECK-NEXT:    %q = graph.conv2d %o, %wp :
// CHECK-NOT:     on_load
// CPU-LABEL: func.func @lone_depthwise(
// CPU-NOT:     on_load
// CPU:         %d = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CPU-NOT:     on_load
func.func @lone_depthwise(%x: !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> loc("dw")
    graph.yield %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  } loc("dw")
  %wp = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %p = graph.fused -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global> {
    %pc = graph.conv2d %d, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global> loc("project")
    graph.yield %pc : !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  } loc("project")
  %o = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  %q = graph.conv2d %o, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  func.return %p, %q : !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
}

// -----

// Images in half, batch 2, a 5x5 stride-2 dilation-1 depthwise conv with a hard-swish,
// and a lone projection conv: on_load too (the image and the stride are the loader's
// business, not the pass's).

// CHECK-LABEL: func.func @image_stride2(
// CHECK:         %d = graph.fused {on_load} -> !texture.tensor<2x2x5x5x4xf16, nchw4c, #texture.image<texture, h = 20, w = 5>> {
// CHECK-NEXT:      graph.conv2d %x, %wd, %bd {strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, groups = 8 : i64}
// CHECK-NEXT:      graph.hard_swish
// CPU-LABEL: func.func @image_stride2(
// CPU-NOT:     on_load
func.func @image_stride2(%x: !texture.tensor<2x2x10x10x4xf16, nchw4c, #texture.image<texture, h = 40, w = 10>>) -> !texture.tensor<2x1x5x5x4xf16, nchw4c, #texture.image<texture, h = 10, w = 5>> {
  %wd = graph.constant dense<0.25> : tensor<2x1x5x5x4xf32>
  %bd = graph.constant dense<0.5> : tensor<8xf32>
  %d = graph.fused -> !texture.tensor<2x2x5x5x4xf16, nchw4c, #texture.image<texture, h = 20, w = 5>> {
    %c = graph.conv2d %x, %wd, %bd {strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, groups = 8 : i64} : !texture.tensor<2x2x10x10x4xf16, nchw4c, #texture.image<texture, h = 40, w = 10>>, tensor<2x1x5x5x4xf32>, tensor<8xf32> -> !texture.tensor<2x2x5x5x4xf16, nchw4c, #texture.image<texture, h = 20, w = 5>>
    %a = graph.hard_swish %c : !texture.tensor<2x2x5x5x4xf16, nchw4c, #texture.image<texture, h = 20, w = 5>>
    graph.yield %a : !texture.tensor<2x2x5x5x4xf16, nchw4c, #texture.image<texture, h = 20, w = 5>>
  }
  %wp = graph.constant dense<0.125> : tensor<1x8x1x1x4xf32>
  %p = graph.conv2d %d, %wp : !texture.tensor<2x2x5x5x4xf16, nchw4c, #texture.image<texture, h = 20, w = 5>>, tensor<1x8x1x1x4xf32> -> !texture.tensor<2x1x5x5x4xf16, nchw4c, #texture.image<texture, h = 10, w = 5>>
  func.return %p : !texture.tensor<2x1x5x5x4xf16, nchw4c, #texture.image<texture, h = 10, w = 5>>
}

// -----

// Not fired: the depthwise value has two readers: the projection and the function's
// result; two 1x1 projections; and for a depthwise conv in a region of its own (no
// activation), a relu and then a 1x1 projection.

// CHECK-LABEL: func.func @two_readers(
// CHECK-NOT:     on_load
// CHECK:         %d = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK:         %e = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK:         %l = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK-NEXT:      graph.conv2d %x, %wd {
// CHECK-NOT:     on_load
// CHECK:         func.return
func.func @two_readers(%x: !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %p = graph.conv2d %d, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %e = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %pe1 = graph.conv2d %e, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %pe2 = graph.conv2d %e, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %l = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %lc = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %lc : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %r = graph.relu %l : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  %q = graph.conv2d %l, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  func.return %p, %d, %pe1, %pe2, %q, %r : !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
}

// -----

// Not fired: readers that do not load one input pixel per output pixel: a 3x3 conv, a
// stride-2 1x1 conv, a padded 1x1 conv, a grouped (groups = 2) 1x1 conv.

// CHECK-LABEL: func.func @readers_not_1x1(
// CHECK-NOT:     on_load
// CHECK:         %p3 = graph.conv2d %d3, %w3 {pads = array<i64: 1, 1, 1, 1>}
// CHECK:         %ps = graph.conv2d %ds, %wp {strides = array<i64: 2, 2>}
// CHECK:         %pp = graph.conv2d %dp, %wp {pads = array<i64: 1, 1, 1, 1>}
// CHECK:         %pg = graph.conv2d %dg, %wg {groups = 2 : i64}
// CHECK-NOT:     on_load
func.func @readers_not_1x1(%x: !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x3x3x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d3 = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %w3 = graph.constant dense<0.125> : tensor<2x16x3x3x4xf32>
  %p3 = graph.conv2d %d3, %w3 {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x3x3x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %ds = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %ps = graph.conv2d %ds, %wp {strides = array<i64: 2, 2>} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x3x3x4xf32, nchw4c, global>
  %dp = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %pp = graph.conv2d %dp, %wp {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %dg = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %wg = graph.constant dense<0.125> : tensor<2x8x1x1x4xf32>
  %pg = graph.conv2d %dg, %wg {groups = 2 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x8x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  func.return %p3, %ps, %pp, %pg : !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x3x3x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
}

// -----

// Not fired: the one reader is a 1x1 conv that reads the value as its weight-free
// residual (the add in its tail), not as its input.

// CHECK-LABEL: func.func @read_by_tail(
// CHECK-NOT:     on_load
func.func @read_by_tail(%x: !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<4x16x1x1x4xf32>
  %y = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %p = graph.conv2d %x, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x16x1x1x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %r = graph.add %p, %d : (!texture.tensor<1x4x6x6x4xf32, nchw4c, global>, !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %r : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  func.return %y : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
}

// -----

// Not fired: a kernel_config written by hand, on the depthwise region and on a one-op
// depthwise region (it asks for that kernel).

// CHECK-LABEL: func.func @hand_config(
// CHECK-NOT:     on_load
// CHECK:         %d = graph.fused {kernel_config = {x_block = 2 : i64}} -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK:         %l = graph.fused {kernel_config = {x_block = 2 : i64}} -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK-NEXT:      graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64}
// CHECK-NOT:     on_load
func.func @hand_config(%x: !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused {kernel_config = {x_block = 2 : i64}} -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %p = graph.conv2d %d, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %l = graph.fused {kernel_config = {x_block = 2 : i64}} -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %lc = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %lc : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %q = graph.conv2d %l, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  func.return %p, %q : !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
}

// -----

// Not fired: the depthwise region's tail reads a value from outside it (a residual add
// of the depthwise input): the reader could not compute it from the depthwise input,
// weights and bias alone.

// CHECK-LABEL: func.func @tail_reads_outside(
// CHECK-NOT:     on_load
// CHECK:         %d = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK:           graph.add %a, %x
// CHECK-NOT:     on_load
func.func @tail_reads_outside(%x: !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %r = graph.add %a, %x : (!texture.tensor<1x4x6x6x4xf32, nchw4c, global>, !texture.tensor<1x4x6x6x4xf32, nchw4c, global>) -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %r : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %p = graph.conv2d %d, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  func.return %p : !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
}

// -----

// Not fired: a squeeze-excite depthwise region that writes pool partials (its pool
// needs every value); here its value is read only by a 1x1 conv.

// CHECK-LABEL: func.func @pool_partials(
// CHECK-NOT:     on_load
// CHECK:         %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x4x1x4xf32, nchw4c, global> {
// CHECK-NOT:     on_load
func.func @pool_partials(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>) {
  %wd = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x4x1x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %h = graph.relu %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %pp = graph.pool_partials %h {tiles = 4 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x4x1x4xf32, nchw4c, global>
    graph.yield %h, %pp : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x4x1x4xf32, nchw4c, global>
  }
  %s = graph.sum_partials %t : !texture.tensor<1x4x4x1x4xf32, nchw4c, global> -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  %wp = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %p = graph.conv2d %d, %wp : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %p, %s : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
}

// -----

// Not fired: producers that are not depthwise: a grouped conv (groups = 2 of 16
// channels), a depthwise multiplier (groups = 16, 32 output channels), a groups-1 3x3
// conv; and plain NCHW tensors.

// CHECK-LABEL: func.func @not_depthwise(
// CHECK-NOT:     on_load
// CHECK:         %g = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK:         %m = graph.fused -> !texture.tensor<1x8x6x6x4xf32, nchw4c, global> {
// CHECK:         %f = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
// CHECK:         %n = graph.fused -> tensor<1x16x6x6xf32> {
// CHECK-NOT:     on_load
func.func @not_depthwise(%x: !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, %xn: tensor<1x16x6x6xf32>) -> (!texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, tensor<1x8x6x6xf32>) {
  %wg = graph.constant dense<0.25> : tensor<4x8x3x3x4xf32>
  %g = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wg {pads = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x8x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %wp = graph.constant dense<0.125> : tensor<2x16x1x1x4xf32>
  %pg = graph.conv2d %g, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %wm = graph.constant dense<0.25> : tensor<8x1x3x3x4xf32>
  %m = graph.fused -> !texture.tensor<1x8x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wm {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<8x1x3x3x4xf32> -> !texture.tensor<1x8x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x8x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x8x6x6x4xf32, nchw4c, global>
  }
  %wm2 = graph.constant dense<0.125> : tensor<2x32x1x1x4xf32>
  %pm = graph.conv2d %m, %wm2 : !texture.tensor<1x8x6x6x4xf32, nchw4c, global>, tensor<2x32x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %wf = graph.constant dense<0.25> : tensor<4x16x3x3x4xf32>
  %f = graph.fused -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wf {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<4x16x3x3x4xf32> -> !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    %a = graph.relu %c : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
    graph.yield %a : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>
  }
  %pf = graph.conv2d %f, %wp : !texture.tensor<1x4x6x6x4xf32, nchw4c, global>, tensor<2x16x1x1x4xf32> -> !texture.tensor<1x2x6x6x4xf32, nchw4c, global>
  %wn = graph.constant dense<0.25> : tensor<16x1x3x3xf32>
  %n = graph.fused -> tensor<1x16x6x6xf32> {
    %c = graph.conv2d %xn, %wn {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : tensor<1x16x6x6xf32>, tensor<16x1x3x3xf32> -> tensor<1x16x6x6xf32>
    %a = graph.relu %c : tensor<1x16x6x6xf32>
    graph.yield %a : tensor<1x16x6x6xf32>
  }
  %wpn = graph.constant dense<0.125> : tensor<8x16x1x1xf32>
  %pn = graph.conv2d %n, %wpn : tensor<1x16x6x6xf32>, tensor<8x16x1x1xf32> -> tensor<1x8x6x6xf32>
  func.return %pg, %pm, %pf, %pn : !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, !texture.tensor<1x2x6x6x4xf32, nchw4c, global>, tensor<1x8x6x6xf32>
}
