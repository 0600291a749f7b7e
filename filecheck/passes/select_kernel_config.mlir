// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config' | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{work-group=16,4,1}' | filecheck %s --check-prefix=WG
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{overrides="%S/Inputs/kernel_config_overrides.json"}' | filecheck %s --check-prefix=OVR

// select-kernel-config puts a `kernel_config` dictionary on every kernel: its
// `graph.fused` region (graph-fuse gives every kernel one, a lone op included), not the
// op inside. Default target
// adreno-740 (a GPU); pocl-cpu gets no split-K and no occupancy-driven pixel blocking.

// NCHW conv + relu (one region) then a max pool (a region of its own).
// On the GPU: float4 (OIHW4o) kernel, 8 output channels per work-item; this tiny grid is far
// below min-work-items (16384), so one pixel per work-item (x_block = 1).
// On the CPU target: a stride-1 conv whose rows keep their width runs as float8 vectors
// over the flattened plane (kernel "plane"), 8 channels per work-item (16 where they
// divide the output channels), in 8 x 8 work-groups.
// The pool has no keys of its own: no kernel_config at all, unless work-group is set.
// With overrides, `loc:nchw_conv` in the JSON overrides file selects the scalar kernel:
// its config starts from the scalar kernel's defaults (no vec4 x_block left over).

// CHECK-LABEL: func.func @nchw
// CHECK:         %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 1 : i64}} -> tensor<1x8x6x6xf32> {
// CHECK:         %m = graph.fused -> tensor<1x8x5x5xf32> {
// CHECK-NEXT:      graph.max_pool %r {kernel_shape = array<i64: 2, 2>} :
// CPU-LABEL:   func.func @nchw
// CPU:           %r = graph.fused {kernel_config = {kernel = "plane", co_block = 8 : i64, vec = 8 : i64, work_group = array<i64: 8, 8, 1>}} -> tensor<1x8x6x6xf32> {
// CPU:           %m = graph.fused -> tensor<1x8x5x5xf32> {
// CPU-NEXT:        graph.max_pool %r {kernel_shape = array<i64: 2, 2>} :
// WG-LABEL:    func.func @nchw
// WG:            %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 1 : i64, work_group = array<i64: 16, 4, 1>}} -> tensor<1x8x6x6xf32> {
// WG:            %m = graph.fused {kernel_config = {work_group = array<i64: 16, 4, 1>}} -> tensor<1x8x5x5xf32> {
// WG-NEXT:         graph.max_pool %r {kernel_shape = array<i64: 2, 2>} :
// OVR-LABEL:   func.func @nchw
// OVR:           %r = graph.fused {kernel_config = {kernel = "scalar", co_block = 4 : i64}} -> tensor<1x8x6x6xf32> {
func.func @nchw(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x5x5xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32> loc("nchw_conv")
  %r = graph.relu %c : tensor<1x8x6x6xf32>
  %m = graph.max_pool %r {kernel_shape = array<i64: 2, 2>} : (tensor<1x8x6x6xf32>) -> tensor<1x8x5x5xf32>
  func.return %m : tensor<1x8x5x5xf32>
}

// -----

// 6 output channels: not a multiple of 4, so on the GPU the scalar kernel with the
// largest co_block that divides 6 (8 and 4 do not: 2). A lone conv's config sits on its
// one-op region. On the CPU a 1x1 stride-1 conv is a pointwise kernel (float8 pixel vectors),
// 2 channels per work-item for the same reason, in work-groups of 4 x 16 blocks.

// CHECK-LABEL: func.func @nchw_scalar
// CHECK:         %c = graph.fused {kernel_config = {kernel = "scalar", co_block = 2 : i64}} -> tensor<1x6x6x6xf32> {
// CHECK-NEXT:      %[[C:.+]] = graph.conv2d %x, %w : tensor<1x4x6x6xf32>, tensor<6x4x1x1xf32> -> tensor<1x6x6x6xf32>
// CHECK-NEXT:      graph.yield %[[C]] : tensor<1x6x6x6xf32>
// CHECK-NEXT:    }
// CPU-LABEL:   func.func @nchw_scalar
// CPU:           %c = graph.fused {kernel_config = {kernel = "pointwise", co_block = 2 : i64, x_block = 2 : i64, vec = 8 : i64, work_group = array<i64: 4, 16, 1>}} -> tensor<1x6x6x6xf32> {
// CPU-NEXT:        graph.conv2d %x, %w :
func.func @nchw_scalar(%x: tensor<1x4x6x6xf32>) -> tensor<1x6x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<6x4x1x1xf32>
  %c = graph.conv2d %x, %w : tensor<1x4x6x6xf32>, tensor<6x4x1x1xf32> -> tensor<1x6x6x6xf32>
  func.return %c : tensor<1x6x6x6xf32>
}

// -----

// Depthwise NCHW convs. On the GPU both take the float4 kernel (4 channels). On the CPU
// the stride-1 one runs as float8 vectors over its flattened plane (kernel "plane": its
// output rows are as wide as its input's); the stride-2 one cannot, and keeps vec4.

// CHECK-LABEL: func.func @nchw_depthwise
// CHECK:         %c = graph.fused {kernel_config = {kernel = "vec4", co_block = 4 : i64, x_block = 1 : i64}} -> tensor<1x8x16x16xf32> {
// CHECK-NEXT:      graph.conv2d %x, %w {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>} :
// CHECK:         %s = graph.fused {kernel_config = {kernel = "vec4", co_block = 4 : i64, x_block = 1 : i64}} -> tensor<1x8x8x8xf32> {
// CHECK-NEXT:      graph.conv2d %x, %w {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} :
// CPU-LABEL:   func.func @nchw_depthwise
// CPU:           %c = graph.fused {kernel_config = {kernel = "plane", co_block = 1 : i64, vec = 8 : i64}} -> tensor<1x8x16x16xf32> {
// CPU-NEXT:        graph.conv2d %x, %w {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>} :
// CPU:           %s = graph.fused {kernel_config = {kernel = "vec4", co_block = 4 : i64, x_block = 4 : i64}} -> tensor<1x8x8x8xf32> {
// CPU-NEXT:        graph.conv2d %x, %w {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} :
func.func @nchw_depthwise(%x: tensor<1x8x16x16xf32>) -> (tensor<1x8x16x16xf32>, tensor<1x8x8x8xf32>) {
  %w = graph.constant dense<0.5> : tensor<8x1x3x3xf32>
  %c = graph.conv2d %x, %w {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x16x16xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x16x16xf32>
  %s = graph.conv2d %x, %w {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x8x16x16xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x8x8xf32>
  func.return %c, %s : tensor<1x8x16x16xf32>, tensor<1x8x8x8xf32>
}

// -----

// NCHW4c conv, 8 input channels (2 blocks): 4 pixels and 1 channel block per
// work-item; no split-K (a part must keep >= 8 input channel blocks). When the output
// is only 2 pixels wide, x_block is clamped to 2.

// CHECK-LABEL: func.func @packed
// CHECK:         %c = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
// CHECK-NEXT:      graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} :
// CHECK:         %s = graph.fused {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<1x2x2x2x4xf32, nchw4c, global> {
// CHECK-NEXT:      graph.conv2d %x, %w {strides = array<i64: 4, 4>} :
// CPU-LABEL:   func.func @packed
// CPU:           %c = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
// CPU-NEXT:        graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} :
// WG-LABEL:    func.func @packed
// WG:            %c = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64, work_group = array<i64: 16, 4, 1>}} -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
// WG-NEXT:         graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} :
func.func @packed(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x2x2x4xf32, nchw4c, global>) {
  %w = graph.constant dense<0.5> : tensor<2x8x3x3x4xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x3x3x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %s = graph.conv2d %x, %w {strides = array<i64: 4, 4>} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x3x3x4xf32> -> !texture.tensor<1x2x2x2x4xf32, nchw4c, global>
  func.return %c, %s : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x2x2x4xf32, nchw4c, global>
}

// -----

// A small late NCHW4c conv (7x7 output, 128 input channels = 32 blocks):
// ceil(7 / 4) * 7 * 8 = 112 work-items, far below split-k-items (8192). On the GPU the
// input channels are split: min(8, ceil(8192 / 112), 32 / 8) = 4 parts. The CPU target
// never splits. The config sits on the conv + relu region. A depthwise conv of the same
// size (a region of its own) is never split, computes one pixel per work-item on GPUs and reads each input row
// segment once (dw_rows).
// With overrides, `loc:late_conv` asks for split_k = 2 and x_block = 2 (keys merged over the
// defaults).

// CHECK-LABEL: func.func @late
// CHECK:         %r = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 4 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
// CHECK:         %d = graph.fused {kernel_config = {x_block = 1 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 1 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<1x32x7x7x4xf32, nchw4c, global> {
// CHECK-NEXT:      graph.conv2d %x, %dw {groups = 128 : i64} :
// CPU-LABEL:   func.func @late
// CPU:           %r = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
// WG-LABEL:    func.func @late
// WG:            %r = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 4 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64, work_group = array<i64: 16, 4, 1>}}
// OVR-LABEL:   func.func @late
// OVR:           %r = graph.fused {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 2 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}}
func.func @late(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> (!texture.tensor<1x8x7x7x4xf32, nchw4c, global>, !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) {
  %w = graph.constant dense<0.5> : tensor<8x128x1x1x4xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %dw = graph.constant dense<0.5> : tensor<32x1x1x1x4xf32>
  %c = graph.conv2d %x, %w, %b : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> loc("late_conv")
  %r = graph.relu %c : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  %d = graph.conv2d %x, %dw {groups = 128 : i64} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<32x1x1x1x4xf32> -> !texture.tensor<1x32x7x7x4xf32, nchw4c, global>
  func.return %r, %d : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>, !texture.tensor<1x32x7x7x4xf32, nchw4c, global>
}

// -----

// A config already in the input (written by hand, or by an earlier run) is kept, on a
// region and on a lone op (graph-fuse moves the lone op's to its one-op region), and
// completed when partial: absent keys take DEFAULT_RULES'
// values (a GPU's without split-K, on every target: the region's conv gets the vec4 kernel
// its x_block = 2 belongs to), so the lowering reads complete configs only. Overrides do not
// apply to it. The lone relu (a region of its own) gets an override keyed by its
// signature in OVR.

// CHECK-LABEL: func.func @kept
// CHECK:         %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 2 : i64}} -> tensor<1x8x6x6xf32> {
// CHECK:         %c2 = graph.fused {kernel_config = {kernel = "scalar", co_block = 1 : i64}} -> tensor<1x8x6x6xf32> {
// CHECK-NEXT:      %[[C2:.+]] = graph.conv2d %r, %w : tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x6x6xf32>
// CHECK-NEXT:      graph.yield %[[C2]] : tensor<1x8x6x6xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %s = graph.fused -> tensor<1x8x6x6xf32> {
// CHECK-NEXT:      %[[S:.+]] = graph.relu %y : tensor<1x8x6x6xf32>
// CHECK-NEXT:      graph.yield %[[S]] : tensor<1x8x6x6xf32>
// CHECK-NEXT:    }
// CPU-LABEL:   func.func @kept
// CPU:           %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 2 : i64}} -> tensor<1x8x6x6xf32> {
// CPU:           %c2 = graph.fused {kernel_config = {kernel = "scalar", co_block = 1 : i64}} -> tensor<1x8x6x6xf32> {
// CPU-NEXT:        graph.conv2d %r, %w :
// WG-LABEL:    func.func @kept
// WG:            %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 2 : i64}} -> tensor<1x8x6x6xf32> {
// WG:            %c2 = graph.fused {kernel_config = {kernel = "scalar", co_block = 1 : i64}} -> tensor<1x8x6x6xf32> {
// WG-NEXT:         graph.conv2d %r, %w :
// WG:            %s = graph.fused {kernel_config = {work_group = array<i64: 16, 4, 1>}} -> tensor<1x8x6x6xf32> {
// WG-NEXT:         graph.relu %y : tensor<1x8x6x6xf32>
// OVR-LABEL:   func.func @kept
// OVR:           %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 2 : i64}} -> tensor<1x8x6x6xf32> {
// OVR:           %s = graph.fused {kernel_config = {work_group = array<i64: 64>}} -> tensor<1x8x6x6xf32> {
// OVR-NEXT:        graph.relu %y : tensor<1x8x6x6xf32>
func.func @kept(%x: tensor<1x8x6x6xf32>, %y: tensor<1x8x6x6xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %r = graph.fused {kernel_config = {x_block = 2 : i64}} -> tensor<1x8x6x6xf32> {
    %c = graph.conv2d %x, %w : tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x6x6xf32>
    %a = graph.relu %c : tensor<1x8x6x6xf32>
    graph.yield %a : tensor<1x8x6x6xf32>
  }
  %c2 = graph.conv2d %r, %w {kernel_config = {kernel = "scalar", co_block = 1 : i64}} : tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x6x6xf32>
  %s = graph.relu %y : tensor<1x8x6x6xf32>
  func.return %c2, %s : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>
}
