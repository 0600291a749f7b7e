// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: adreno-opt %s --split-input-file --verify-diagnostics -p graph-canonicalize | filecheck %s --check-prefix=CANON
// Data-movement ops: graph.pad and graph.expand print as they parse (default mode
// "constant" and value 0 are not printed), slices with negative steps and concats on any
// axis verify; identity pads/expands canonicalize away; then one verifier error per chunk.

// CHECK-LABEL: func.func @round_trip
// CANON-LABEL: func.func @round_trip
func.func @round_trip(%x: tensor<2x3x4x5xf32>) -> (tensor<2x3x6x8xf32>, tensor<2x3x3x9xf32>, tensor<2x4x6x5xf32>,
                                                   tensor<2x3x4x11xf32>, tensor<3x2x3x4x5xf32>, tensor<2x3x2x5xf32>,
                                                   tensor<2x3x4x10xf32>, tensor<4x3x4x5xf32>) {
  // CHECK-NEXT: %c = graph.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 1>, value = 1.500000e+00 : f32} : (tensor<2x3x4x5xf32>) -> tensor<2x3x6x8xf32>
  %c = graph.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 1>, mode = "constant", value = 1.5 : f32} : (tensor<2x3x4x5xf32>) -> tensor<2x3x6x8xf32>
  // Negative pads crop: H keeps rows 1..3, then gets none back; W gets 4 more.
  // CHECK-NEXT: %r = graph.pad %x {pads = array<i64: 0, 0, -1, 2, 0, 0, 0, 2>, mode = "reflect"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x3x9xf32>
  %r = graph.pad %x {pads = array<i64: 0, 0, -1, 2, 0, 0, 0, 2>, mode = "reflect"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x3x9xf32>
  // CHECK-NEXT: %e = graph.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 1, 1, 0>, mode = "edge"} : (tensor<2x3x4x5xf32>) -> tensor<2x4x6x5xf32>
  %e = graph.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 1, 1, 0>, mode = "edge"} : (tensor<2x3x4x5xf32>) -> tensor<2x4x6x5xf32>
  // wrap may pad by more than the axis holds (periodic)
  // CHECK-NEXT: %w = graph.pad %x {pads = array<i64: 0, 0, 0, 6, 0, 0, 0, 0>, mode = "wrap"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x11xf32>
  %w = graph.pad %x {pads = array<i64: 0, 0, 0, 6, 0, 0, 0, 0>, mode = "wrap"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x11xf32>
  // A higher rank: the input aligns to the right and repeats 3 times.
  // CHECK-NEXT: %b = graph.expand %x : (tensor<2x3x4x5xf32>) -> tensor<3x2x3x4x5xf32>
  %b = graph.expand %x : (tensor<2x3x4x5xf32>) -> tensor<3x2x3x4x5xf32>
  // Rows 3 and 1 (start 3, step -2).
  // CHECK-NEXT: %s = graph.slice %x {starts = array<i64: 0, 0, 3, 0>, steps = array<i64: 1, 1, -2, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x2x5xf32>
  %s = graph.slice %x {starts = array<i64: 0, 0, 3, 0>, steps = array<i64: 1, 1, -2, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x2x5xf32>
  // CHECK-NEXT: %k = graph.concat %x, %x {axis = 3 : i64} : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x10xf32>
  %k = graph.concat %x, %x {axis = 3 : i64} : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x10xf32>
  // CHECK-NEXT: %n = graph.concat %x, %x {axis = 0 : i64} : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<4x3x4x5xf32>
  %n = graph.concat %x, %x {axis = 0 : i64} : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<4x3x4x5xf32>
  func.return %c, %r, %e, %w, %b, %s, %k, %n : tensor<2x3x6x8xf32>, tensor<2x3x3x9xf32>, tensor<2x4x6x5xf32>,
                                               tensor<2x3x4x11xf32>, tensor<3x2x3x4x5xf32>, tensor<2x3x2x5xf32>,
                                               tensor<2x3x4x10xf32>, tensor<4x3x4x5xf32>
}

// -----

// All-zero pads (any mode) and an expand to the input's own shape are the input.
// CANON-LABEL: func.func @identities
// CANON-SAME:    (%[[X:.*]]: tensor<1x3x4x5xf32>)
// CANON-NEXT:    %[[R:.*]] = graph.relu %[[X]]
// CANON-NEXT:    %[[P:.*]] = graph.pad %[[R]] {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 1>}
// CANON-NEXT:    func.return %[[P]] : tensor<1x3x4x6xf32>
func.func @identities(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x4x6xf32> {
  %a = graph.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>, mode = "reflect"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x4x5xf32>
  %b = graph.expand %a : (tensor<1x3x4x5xf32>) -> tensor<1x3x4x5xf32>
  %c = graph.pad %b {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x4x5xf32>
  %r = graph.relu %c : tensor<1x3x4x5xf32>
  %p = graph.pad %r {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 1>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x4x6xf32>
  func.return %p : tensor<1x3x4x6xf32>
}

// -----

func.func @pad_mode(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x5x5xf32> {
  %p = graph.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, 0>, mode = "symmetric"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x5xf32>
  func.return %p : tensor<1x3x5x5xf32>
}
// CHECK: 'graph.pad' mode 'symmetric' is not one of ['constant', 'reflect', 'edge', 'wrap']

// -----

func.func @pad_count(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x5x5xf32> {
  %p = graph.pad %x {pads = array<i64: 1, 0>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x5xf32>
  func.return %p : tensor<1x3x5x5xf32>
}
// CHECK: 'graph.pad' pads [1, 0] must have 2 * rank = 8 values (begins, then ends)

// -----

func.func @pad_shape(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x6x5xf32> {
  %p = graph.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, 0>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x6x5xf32>
  func.return %p : tensor<1x3x6x5xf32>
}
// CHECK: 'graph.pad' result shape [1, 3, 6, 5] does not match the shape implied by its operands and attributes: [1, 3, 5, 5]

// -----

// Reflection mirrors once: a pad must be smaller than the (cropped) extent.
func.func @pad_reflect(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x7x5xf32> {
  %p = graph.pad %x {pads = array<i64: 0, 0, -1, 0, 0, 0, 4, 0>, mode = "reflect"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x5xf32>
  func.return %p : tensor<1x3x7x5xf32>
}
// CHECK: 'graph.pad' reflect pads [4] on axis 2 must be smaller than the 3 element(s) left after cropping (one reflection)

// -----

func.func @pad_crop_all(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x4x2xf32> {
  %p = graph.pad %x {pads = array<i64: 0, 0, 0, -5, 0, 0, 0, 2>, mode = "edge"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x4x2xf32>
  func.return %p : tensor<1x3x4x2xf32>
}
// CHECK: 'graph.pad' pads [0, 0, 0, -5, 0, 0, 0, 2] crop away all of axis 3 (size 5); mode 'edge' needs at least one element to read

// -----

func.func @expand_incompatible(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %e = graph.expand %x : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return %e : tensor<4x3xf32>
}
// CHECK: 'graph.expand' cannot broadcast [2, 3] to [4, 3]

// -----

func.func @expand_lower_rank(%x: tensor<1x2x3xf32>) -> tensor<2x3xf32> {
  %e = graph.expand %x : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}
// CHECK: 'graph.expand' cannot broadcast [1, 2, 3] to [2, 3]

// -----

// A negative step walks down from start: 3 rows from row 1 would read row -1.
func.func @slice_negative_step(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x3x5xf32> {
  %s = graph.slice %x {starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 1, -1, 1>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x3x5xf32>
  func.return %s : tensor<1x3x3x5xf32>
}
// CHECK: 'graph.slice' dimension 2 reads outside the input (start 1, step -1, 3 elements, size 4)
