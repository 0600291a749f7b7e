// RUN: adreno-opt %s -p 'fuse-depthwise-load{target=adreno-740}' | filecheck %s --check-prefix=DEFAULT
// RUN: adreno-opt %s -p 'fuse-depthwise-load{target=adreno-740 max_window=0}' | filecheck %s --check-prefix=ANY
// RUN: adreno-opt %s -p 'fuse-depthwise-load{target=adreno-740 max_window=7}' | filecheck %s --check-prefix=ANY

// fuse-depthwise-load's `max_window` (default 5): a 7x7 depthwise conv keeps its kernel
// (computed on load it cost more than its own launch on the H200: fastvit_t8, mixnet_s);
// max_window=0 (any window) or 7 marks its region on_load like a 3x3 one.

// DEFAULT-LABEL: func.func @dw7x7_then_projection(
// DEFAULT-NOT:     on_load
// DEFAULT:         %d = graph.fused -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
// DEFAULT-NOT:     on_load
// ANY-LABEL:     func.func @dw7x7_then_projection(
// ANY:             %d = graph.fused {on_load} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
// ANY-NEXT:          %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 3, 3, 3, 3>, groups = 32 : i64}
func.func @dw7x7_then_projection(%x: !texture.tensor<1x8x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %wd = graph.constant dense<0.25> : tensor<8x1x7x7x4xf32>
  %bd = graph.constant dense<0.5> : tensor<32xf32>
  %d = graph.fused -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %wd, %bd {pads = array<i64: 3, 3, 3, 3>, groups = 32 : i64} : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<8x1x7x7x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw")
    %a = graph.relu %c : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("dw_act")
    graph.yield %a : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  } loc("dw_act")
  %wp = graph.constant dense<0.125> : tensor<4x32x1x1x4xf32>
  %bp = graph.constant dense<0.5> : tensor<16xf32>
  %y = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %p = graph.conv2d %d, %wp, %bp : !texture.tensor<1x8x8x8x4xf32, nchw4c, global>, tensor<4x32x1x1x4xf32>, tensor<16xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("project")
    graph.yield %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  } loc("project")
  func.return %y : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
