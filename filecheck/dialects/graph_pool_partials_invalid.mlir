// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of fuse-pool-partials' ops: `graph.fused` with a `partials` result,
// `graph.pool_partials` (per-tile means, only inside a fused region) and
// `graph.sum_partials` (the mean the tiles add up to). Shapes in the messages are the
// logical NCHW shapes of the NCHW4c tensors.

// A partials result, but the region yields one value.
func.func @yield_one(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    graph.yield %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.fused' body must end in 'graph.yield' of 2 values (the result and its pool partials)

// -----

// No partials result, but the region yields two values.
func.func @yield_two(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.fused' body must end in 'graph.yield' of 1 value

// -----

// A pool_partials in a region without a partials result.
func.func @no_partials_result(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
    graph.yield %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.fused' holds a graph.pool_partials but has no partials result

// -----

// The second yielded value is not a graph.pool_partials.
func.func @second_not_pool(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, %y: !texture.tensor<1x4x2x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %n = graph.neg %y : !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
    graph.yield %h, %n : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.fused' with partials must yield, second, the graph.pool_partials of the value it yields first

// -----

// The pool_partials pools another value than the one the region yields first.
func.func @pools_other_value(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %s = graph.sigmoid %h : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
    graph.yield %s, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.fused' with partials must yield, second, the graph.pool_partials of the value it yields first

// -----

// The region's partials type differs from what it yields (2 tiles vs 4).
func.func @partials_type(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 4 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x4x1x4xf32, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x4x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.fused' partials are !texture.tensor<1x4x2x1x4xf32, nchw4c, global> but the region yields !texture.tensor<1x4x4x1x4xf32, nchw4c, global>

// -----

// tiles = 0 (the result type has 1 tile: a zero dimension is no legal type).
func.func @tiles_zero(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 0 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.pool_partials' tiles must be in 1..64 (the pixels), got 0

// -----

// More tiles than pixels: 65 tiles of a 8x8 plane.
func.func @tiles_over_pixels(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x65x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 65 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x65x1x4xf32, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x65x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.pool_partials' tiles must be in 1..64 (the pixels), got 65

// -----

// The result shape does not match tiles (3 tiles, a result of 2).
func.func @result_shape(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 3 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.pool_partials' result shape [1, 16, 2, 1] does not match the shape implied by its operands and attributes: [1, 16, 3, 1]

// -----

// The result has fewer channels than the input.
func.func @result_channels(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x2x1x4xf32, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x2x2x1x4xf32, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x2x1x4xf32, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.pool_partials' result shape [1, 8, 2, 1] does not match the shape implied by its operands and attributes: [1, 16, 2, 1]

// -----

// Half partials: they are f32 in a global buffer.
func.func @result_f16(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf16, nchw4c, global> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf16, nchw4c, global>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf16, nchw4c, global>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.pool_partials' result must be an f32 NCHW4c tensor in a global buffer

// -----

// Partials in an image.
func.func @result_image(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global> {
  %d, %t = graph.fused -> !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, #texture.image<texture, h = 8, w = 1>> {
    %h = graph.relu %x : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
    %p = graph.pool_partials %h {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf32, nchw4c, #texture.image<texture, h = 8, w = 1>>
    graph.yield %h, %p : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>, !texture.tensor<1x4x2x1x4xf32, nchw4c, #texture.image<texture, h = 8, w = 1>>
  }
  func.return %d : !texture.tensor<1x4x8x8x4xf32, nchw4c, global>
}
// CHECK: 'graph.pool_partials' result must be an f32 NCHW4c tensor in a global buffer

// -----

// A plain (NCHW) input.
func.func @plain_input(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %d, %t = graph.fused -> tensor<1x16x8x8xf32>, tensor<1x16x2x1xf32> {
    %h = graph.relu %x : tensor<1x16x8x8xf32>
    %p = graph.pool_partials %h {tiles = 2 : i64} : tensor<1x16x8x8xf32> -> tensor<1x16x2x1xf32>
    graph.yield %h, %p : tensor<1x16x8x8xf32>, tensor<1x16x2x1xf32>
  }
  func.return %d : tensor<1x16x8x8xf32>
}
// CHECK: 'graph.pool_partials' reads an NCHW4c texture tensor

// -----

// pool_partials outside a graph.fused region.
func.func @outside_region(%x: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x2x1x4xf32, nchw4c, global> {
  %p = graph.pool_partials %x {tiles = 2 : i64} : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
  func.return %p : !texture.tensor<1x4x2x1x4xf32, nchw4c, global>
}
// CHECK: 'graph.pool_partials' expects parent op 'graph.fused'

// -----

// sum_partials result shape: the mean is N x C x 1 x 1, not N x C x tiles x 1.
func.func @sum_shape(%t: !texture.tensor<1x4x3x1x4xf32, nchw4c, global>) -> !texture.tensor<1x4x3x1x4xf32, nchw4c, global> {
  %m = graph.sum_partials %t : !texture.tensor<1x4x3x1x4xf32, nchw4c, global> -> !texture.tensor<1x4x3x1x4xf32, nchw4c, global>
  func.return %m : !texture.tensor<1x4x3x1x4xf32, nchw4c, global>
}
// CHECK: 'graph.sum_partials' result shape [1, 16, 3, 1] does not match the shape implied by its operands and attributes: [1, 16, 1, 1]

// -----

// sum_partials result channels differ from the partials'.
func.func @sum_channels(%t: !texture.tensor<1x4x3x1x4xf32, nchw4c, global>) -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global> {
  %m = graph.sum_partials %t : !texture.tensor<1x4x3x1x4xf32, nchw4c, global> -> !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
  func.return %m : !texture.tensor<1x2x1x1x4xf32, nchw4c, global>
}
// CHECK: 'graph.sum_partials' result shape [1, 8, 1, 1] does not match the shape implied by its operands and attributes: [1, 16, 1, 1]

// -----

// sum_partials of something that is not tiles (N x C x tiles x 1): an 8x8 plane.
func.func @sum_not_tiles(%t: !texture.tensor<1x4x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global> {
  %m = graph.sum_partials %t : !texture.tensor<1x4x8x8x4xf32, nchw4c, global> -> !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
  func.return %m : !texture.tensor<1x4x1x1x4xf32, nchw4c, global>
}
// CHECK: 'graph.sum_partials' reads graph.pool_partials tiles (N x C x tiles x 1)
