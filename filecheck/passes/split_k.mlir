// RUN: adreno-opt %s --split-input-file -p split-k | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'select-kernel-config,split-k' | filecheck %s --check-prefix=SELECT
// RUN: adreno-opt %s --split-input-file -p 'select-kernel-config,split-k' -o %t.mlir && adreno-opt %t.mlir --split-input-file > /dev/null

// split-k carries out `split_k = S > 1` of an NCHW4c conv's kernel_config:
//   graph.conv2d_split_k (S partial sums stacked on the batch axis, f32, no bias)
//   graph.split_k_sum    (adds the parts and the bias)
// The sum takes the conv's place in its fused region (graph-fuse gives every kernel one),
// so the epilogue stays with it; the partial-sum op gets a region of its own, placed
// before, whose value the sum reads. The partial sums' region carries the blocking keys
// (without split_k); the conv's region keeps only work_group. Both ops keep the conv's
// location.
// The third RUN line reads the output back: every value is defined where it is read (the
// sum reads the partial sums' region, not the op inside it).

// CHECK-LABEL: func.func @fused
// CHECK:         %[[P:.+]] = graph.fused {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64, work_group = array<i64: 8, 8, 1>}} -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[PC:.+]] = graph.conv2d_split_k %x, %w {parts = 4 : i64} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32> -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global> loc("late_conv")
// CHECK-NEXT:      graph.yield %[[PC]] : !texture.tensor<4x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:    } loc("late_conv")
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

// A conv alone in its region (no epilogue), without bias, 3x3 with padding: the
// attributes go to the partial op, the sum has no bias operand and is alone in the conv's
// region. Only split_k in the config (written by hand): the partial sums' config is
// completed from the defaults (its own split at 1), the sum's region keeps none (no
// work_group or compute to carry).

// CHECK-LABEL: func.func @lone
// CHECK:         %[[P:.+]] = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<2x8x7x7x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[PC:.+]] = graph.conv2d_split_k %x, %w {parts = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x3x3x4xf32> -> !texture.tensor<2x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:      graph.yield %[[PC]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = graph.fused -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[S:.+]] = graph.split_k_sum %[[P]] {parts = 2 : i64} : !texture.tensor<2x8x7x7x4xf32, nchw4c, global> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:      graph.yield %[[S]] : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c
func.func @lone(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x3x3x4xf32>
  %c = graph.fused {kernel_config = {split_k = 2 : i64}} -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
    %cc = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x3x3x4xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
    graph.yield %cc : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  }
  func.return %c : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}

// -----

// Nothing to do: split_k = 1, no config at all, and NCHW (plain tensor) convs.
// With select-kernel-config (adreno-740) first, it gives the first two convs split_k = 1 here
// (2 input channel blocks: too few to split), so split-k leaves them too.

// CHECK-LABEL: func.func @untouched
// CHECK:         %a = graph.fused {kernel_config = {split_k = 1 : i64}}
// CHECK-NEXT:      graph.conv2d %x, %w :
// CHECK:         %b = graph.fused ->
// CHECK-NEXT:      graph.conv2d %x, %w :
// CHECK:         %c = graph.fused ->
// CHECK-NEXT:      graph.conv2d %n, %wn :
// CHECK-NOT:     split_k
// SELECT-LABEL: func.func @untouched
// SELECT:         %a = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}}
// SELECT-NEXT:      graph.conv2d %x, %w :
// SELECT:         %b = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}}
// SELECT-NEXT:      graph.conv2d %x, %w :
// SELECT-NOT:     split_k_sum
func.func @untouched(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, %n: tensor<1x8x8x8xf32>) -> (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<1x8x8x8xf32>) {
  %w = graph.constant dense<0.5> : tensor<2x8x1x1x4xf32>
  %wn = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %a = graph.fused {kernel_config = {split_k = 1 : i64}} -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
    %ac = graph.conv2d %x, %w : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
    graph.yield %ac : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  }
  %b = graph.fused -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
    %bc = graph.conv2d %x, %w : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x1x1x4xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
    graph.yield %bc : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  }
  %c = graph.fused -> tensor<1x8x8x8xf32> {
    %cc = graph.conv2d %n, %wn : tensor<1x8x8x8xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x8x8xf32>
    graph.yield %cc : tensor<1x8x8x8xf32>
  }
  func.return %a, %b, %c : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<1x8x8x8xf32>
}

// -----

// The pipeline: select-kernel-config picks split_k = 4 for this small late conv on the
// default GPU target (see select_kernel_config.mlir), split-k carries it out.

// SELECT-LABEL: func.func @selected
// SELECT:         %[[P:.+]] = graph.fused {kernel_config = {x_block = 4 : i64, co_blocks = 1 : i64, split_k = 1 : i64, dw_rows = 0 : i64, reduce_items = 1 : i64, dw_tile = 0 : i64}} -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global> {
// SELECT-NEXT:      %[[PC:.+]] = graph.conv2d_split_k %x, %w {parts = 4 : i64} : {{.*}} -> !texture.tensor<4x8x7x7x4xf32, nchw4c, global>
// SELECT-NEXT:      graph.yield %[[PC]]
// SELECT-NEXT:    }
// SELECT-NEXT:    %c = graph.fused -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
// SELECT-NEXT:      %[[S:.+]] = graph.split_k_sum %[[P]], %b {parts = 4 : i64}
// SELECT-NEXT:      graph.yield %[[S]]
// SELECT-NEXT:    }
// SELECT-NEXT:    func.return %c
func.func @selected(%x: !texture.tensor<1x32x7x7x4xf32, nchw4c, global>) -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<8x128x1x1x4xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %c = graph.fused -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global> {
    %cc = graph.conv2d %x, %w, %b : !texture.tensor<1x32x7x7x4xf32, nchw4c, global>, tensor<8x128x1x1x4xf32>, tensor<32xf32> -> !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
    graph.yield %cc : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
  }
  func.return %c : !texture.tensor<1x8x7x7x4xf32, nchw4c, global>
}
