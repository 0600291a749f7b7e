// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

// kernel_config is checked by the IR verifier against its kernel family's schema
// (lowering/families/: keys, allowed values, rules), on a graph.fused region and on an op
// not in one yet. Each error names the kernel's head op and its location.

func.func @unknown_key(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %r = graph.fused {kernel_config = {x_blok = 2 : i64}} -> tensor<1x8x6x6xf32> {
    %c = graph.conv2d %x, %w : tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x6x6xf32> loc("conv0")
    graph.yield %c : tensor<1x8x6x6xf32>
  }
  func.return %r : tensor<1x8x6x6xf32>
}
// CHECK: 'graph.conv2d' at loc("conv0"): kernel_config key 'x_blok' is not used by this kernel; known keys: co_block, kernel, vec, work_group, x_block

// -----

func.func @bad_value_on_a_lone_op(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %c = graph.conv2d %x, %w {kernel_config = {co_block = 3 : i64}} : tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x6x6xf32> loc("conv1")
  func.return %c : tensor<1x8x6x6xf32>
}
// CHECK: 'graph.conv2d' at loc("conv1"): kernel_config co_block = 3 is not one of [1, 2, 4, 8, 16]

// -----

func.func @bad_choice(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %r = graph.fused {kernel_config = {kernel = "tiled"}} -> tensor<1x8x6x6xf32> {
    %c = graph.conv2d %x, %w : tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x6x6xf32> loc("conv2")
    graph.yield %c : tensor<1x8x6x6xf32>
  }
  func.return %r : tensor<1x8x6x6xf32>
}
// CHECK: 'graph.conv2d' at loc("conv2"): kernel_config kernel must be one of

// -----

// A family rule: split-K is for groups-1 convolutions (conv4c's check).

func.func @rule(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.25> : tensor<4x1x3x3x4xf32>
  %r = graph.fused {kernel_config = {split_k = 2 : i64}} -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, tensor<4x1x3x3x4xf32> -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> loc("dw")
    graph.yield %c : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %r : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.conv2d' at loc("dw"): split_k applies to convolutions with groups = 1 only

// -----

func.func @not_a_dictionary(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %r = graph.fused {kernel_config = 3 : i64} -> tensor<1x4xf32> {
    %a = graph.relu %x : tensor<1x4xf32> loc("relu")
    graph.yield %a : tensor<1x4xf32>
  }
  func.return %r : tensor<1x4xf32>
}
// CHECK: kernel_config must be a dictionary, got 3 : i64

// -----

func.func @work_group(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %r = graph.fused {kernel_config = {work_group = array<i64: 0, 4>}} -> tensor<1x4xf32> {
    %a = graph.relu %x : tensor<1x4xf32> loc("relu")
    graph.yield %a : tensor<1x4xf32>
  }
  func.return %r : tensor<1x4xf32>
}
// CHECK: 'graph.relu' at loc("relu"): kernel_config work_group must be 0-3 positive ints, got (0, 4)
