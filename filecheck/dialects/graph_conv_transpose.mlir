// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

// graph.conv_transpose2d: round trip (attributes at their defaults are not printed; the
// generic form parses to the same op), then the verifier's errors, each naming the
// attribute or operand and the expected shape.
// Output extent: stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end.

// CHECK-LABEL: func.func @round_trip
// CHECK:   %y = graph.conv_transpose2d %x, %w, %b {strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
// CHECK:   %u = graph.conv_transpose2d %y, %w2 : tensor<1x6x8x8xf32>, tensor<6x2x2x2xf32> -> tensor<1x2x9x9xf32>
// CHECK:   %d = graph.conv_transpose2d %u, %w3 {strides = array<i64: 2, 1>, dilations = array<i64: 2, 3>} : tensor<1x2x9x9xf32>, tensor<2x1x3x3xf32> -> tensor<1x1x21x15xf32>
// CHECK:   %g = graph.conv_transpose2d %d, %w4 : tensor<1x1x21x15xf32>, tensor<1x3x1x1xf32> -> tensor<1x3x21x15xf32>
func.func @round_trip(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<6xf32>, %w2: tensor<6x2x2x2xf32>,
                      %w3: tensor<2x1x3x3xf32>, %w4: tensor<1x3x1x1xf32>) -> tensor<1x3x21x15xf32> {
  %y = graph.conv_transpose2d %x, %w, %b {strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  %u = graph.conv_transpose2d %y, %w2 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x6x8x8xf32>, tensor<6x2x2x2xf32> -> tensor<1x2x9x9xf32>
  %d = graph.conv_transpose2d %u, %w3 {strides = array<i64: 2, 1>, dilations = array<i64: 2, 3>} : tensor<1x2x9x9xf32>, tensor<2x1x3x3xf32> -> tensor<1x1x21x15xf32>
  %g = "graph.conv_transpose2d"(%d, %w4) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x1x21x15xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x21x15xf32>
  func.return %g : tensor<1x3x21x15xf32>
}

// -----

func.func @bad_shape(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x9x8xf32> {
  %y = graph.conv_transpose2d %x, %w {strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x9x8xf32>
  func.return %y : tensor<1x6x9x8xf32>
}
// CHECK: 'graph.conv_transpose2d' result shape [1, 6, 9, 8] does not match the shape implied by its operands and attributes: [1, 6, 8, 8]

// -----

func.func @in_channels(%x: tensor<1x4x3x3xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x3x5x5xf32> {
  %y = graph.conv_transpose2d %x, %w : tensor<1x4x3x3xf32>, tensor<2x3x3x3xf32> -> tensor<1x3x5x5xf32>
  func.return %y : tensor<1x3x5x5xf32>
}
// CHECK: 'graph.conv_transpose2d' weight [C_in, C_out / groups, KH, KW] has 2 input channels but the input has 4

// -----

func.func @groups(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x9x5x5xf32> {
  %y = graph.conv_transpose2d %x, %w {groups = 3 : i64} : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x9x5x5xf32>
  func.return %y : tensor<1x9x5x5xf32>
}
// CHECK: 'graph.conv_transpose2d' groups = 3 must divide input channels (4)

// -----

func.func @bias(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x6x5x5xf32> {
  %y = graph.conv_transpose2d %x, %w, %b {groups = 2 : i64} : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>, tensor<3xf32> -> tensor<1x6x5x5xf32>
  func.return %y : tensor<1x6x5x5xf32>
}
// CHECK: 'graph.conv_transpose2d' bias must have shape [6], got [3]

// -----

func.func @output_padding_len(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %y = graph.conv_transpose2d %x, %w {output_padding = array<i64: 1>} : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x3x6x6xf32>
  func.return %y : tensor<1x3x6x6xf32>
}
// CHECK: 'graph.conv_transpose2d' output_padding must have 2 values, got [1]

// -----

func.func @negative_pads(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %y = graph.conv_transpose2d %x, %w {pads = array<i64: 0, 0, -1, -1>} : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x3x6x6xf32>
  func.return %y : tensor<1x3x6x6xf32>
}
// CHECK: 'graph.conv_transpose2d' strides/dilations must be >= 1, pads and output_padding >= 0

// -----

func.func @empty(%x: tensor<1x4x1x1xf32>, %w: tensor<4x3x1x1xf32>) -> tensor<1x3x0x0xf32> {
  %y = graph.conv_transpose2d %x, %w {pads = array<i64: 1, 1, 0, 0>} : tensor<1x4x1x1xf32>, tensor<4x3x1x1xf32> -> tensor<1x3x0x0xf32>
  func.return %y : tensor<1x3x0x0xf32>
}
// CHECK: 'graph.conv_transpose2d' pads [1, 1, 0, 0] leave an empty output (0 x 0)

// -----

func.func @rank(%x: tensor<1x4x3xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x3x5xf32> {
  %y = graph.conv_transpose2d %x, %w : tensor<1x4x3xf32>, tensor<4x3x3xf32> -> tensor<1x3x5xf32>
  func.return %y : tensor<1x3x5xf32>
}
// CHECK: 'graph.conv_transpose2d' expects a 4-D input and 4-D weights, got [1, 4, 3] and [4, 3, 3]
