// RUN: adreno-opt %s --split-input-file -p split-k | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'select-kernel-config,split-k' | filecheck %s --check-prefix=SELECT

// split-k carries out `split_k = S > 1` of an NCHW4c conv's kernel_config:
//   graph.conv2d_split_k (S partial sums stacked on the batch axis, f32, no bias)
//   graph.split_k_sum    (adds the parts and the bias)
// The sum takes the conv's place in its fused region, so the epilogue stays with it.
// The partial-sum op keeps the blocking keys (without split_k); the region keeps only
// work_group. Both keep the conv's location.

// CHECK-LABEL: func.func @fused
// CHECK:         %[[P:.+]] = graph.conv2d_split_k %x, %w {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64, work_group = array<i64: 8, 8, 1>}, parts = 4 : i64} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32> -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global> loc("late_conv")
// CHECK-NEXT:    %r = graph.fused {kernel_config = {work_group = array<i64: 8, 8, 1>}} -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[S:.+]] = graph.split_k_sum %[[P]], %b {parts = 4 : i64} : !texture.tensor<4x8x7x7x4xf32, nchw4c, global>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> loc("late_conv")
// CHECK-NEXT:      %[[A:.+]] = graph.add %[[S]], %y
// CHECK-NEXT:      %[[R:.+]] = graph.relu %[[A]]
// CHECK-NEXT:      graph.yield %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
// CHECK-NOT:     graph.conv2d
func.func @fused(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, %y: !texture.tensor<1x8x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x1x1x4xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %r = graph.fused {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 4 : i64, work_group = array<i64: 8, 8, 1>}} -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w, %b : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> loc("late_conv")
    %a = graph.add %c, %y : (!texture.tensor<1x8x7x7x4xf32, nchw4c, global>, !texture.tensor<1x8x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
    %rr = graph.relu %a : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
    graph.yield %rr : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  }
  func.return %r : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}

// -----

// A lone conv without bias, 3x3 with padding: the attributes go to the partial op, the
// sum has no bias operand. Only split_k in the config (written by hand): the partial op's
// config is completed from the defaults (its own split at 1), the sum keeps none (no
// work_group or compute to carry).

// CHECK-LABEL: func.func @lone
// CHECK:         %[[P:.+]] = graph.conv2d_split_k %x, %w {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}, parts = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x3x3x4xf32> -> !texture.tensor<2x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:    %c = graph.split_k_sum %[[P]] {parts = 2 : i64} : !texture.tensor<2x8x7x7x4xf32, nchw4c, global> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:    func.return %c
func.func @lone(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x3x3x4xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, kernel_config = {split_k = 2 : i64}} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x3x3x4xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}

// -----

// Nothing to do: split_k = 1, no config at all, and NCHW (plain tensor) convs.
// With select-kernel-config (adreno-740) first, it gives the first two convs split_k = 1 here
// (2 input channel blocks: too few to split), so split-k leaves them too.

// CHECK-LABEL: func.func @untouched
// CHECK:         graph.conv2d %x, %w {kernel_config = {split_k = 1 : i64}}
// CHECK:         graph.conv2d %x, %w :
// CHECK:         graph.conv2d %n, %wn :
// CHECK-NOT:     split_k_sum
// SELECT-LABEL: func.func @untouched
// SELECT:         graph.conv2d %x, %w {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}}
// SELECT:         graph.conv2d %x, %w {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}}
// SELECT-NOT:     split_k_sum
func.func @untouched(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, %n: tensor<1x8x8x8xf32>) -> (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<1x8x8x8xf32>) {
  %w = graph.constant dense<0.5> : tensor<2x8x1x1x4xf32>
  %wn = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %a = graph.conv2d %x, %w {kernel_config = {split_k = 1 : i64}} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %b = graph.conv2d %x, %w : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %c = graph.conv2d %n, %wn : tensor<1x8x8x8xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x8x8xf32>
  func.return %a, %b, %c : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<1x8x8x8xf32>
}

// -----

// The pipeline: select-kernel-config picks split_k = 4 for this small late conv on the
// default GPU target (see select_kernel_config.mlir), split-k carries it out.

// SELECT-LABEL: func.func @selected
// SELECT:         %[[P:.+]] = graph.conv2d_split_k %x, %w {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}, parts = 4 : i64} : {{.*}} -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global>
// SELECT-NEXT:    %c = graph.split_k_sum %[[P]], %b {parts = 4 : i64}
// SELECT-NEXT:    func.return %c
func.func @selected(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x1x1x4xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %c = graph.conv2d %x, %w, %b : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  func.return %c : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}
