// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Image extent does not match the `texture` mapping (h = N*C4*H = 1792).
func.func @f(%t: !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1791, w = 112>>) {
  func.return
}
// CHECK: image extent mismatch: scope texture maps shape [1, 16, 112, 112, 4] to h = 1792, w = 112, got h = 1791, w = 112

// -----

// Packed layout whose last dimension is not 4.
func.func @f(%t: !texture.tensor<1x16x112x112x8xf32, nchw4c, global>) {
  func.return
}
// CHECK: packed layout nchw4c expects last dimension 4, got 8

// -----

// Rank does not match the layout.
func.func @f(%t: !texture.tensor<1x16x112x4xf32, nchw4c, global>) {
  func.return
}
// CHECK: layout nchw4c expects a rank-5 shape, got rank 4 ([1, 16, 112, 4])

// -----

// Unknown memory scope.
func.func @f() attributes {s = #texture.scope<texture-foo>} {
  func.return
}
// CHECK: unknown memory scope 'texture-foo', expected one of global, texture, texture-nhwc, texture-weight

// -----

// Unknown memory scope in a type.
func.func @f(%t: !texture.tensor<1x16x112x112x4xf32, nchw4c, shared>) {
  func.return
}
// CHECK: unknown memory scope 'shared', expected one of global, texture, texture-nhwc, texture-weight

// -----

// An image scope without its extent.
func.func @f(%t: !texture.tensor<1x16x112x112x4xf32, nchw4c, texture-nhwc>) {
  func.return
}
// CHECK: memory scope 'texture-nhwc' needs an image extent: use #texture.image<texture-nhwc, h = ..., w = ...>

// -----

// `global` is not an image scope.
func.func @f() attributes {i = #texture.image<global, h = 4, w = 4>} {
  func.return
}
// CHECK: image scope must be one of texture, texture-nhwc, texture-weight, got 'global'

// -----

// Unknown layout.
func.func @f() attributes {l = #texture.layout<nchw8c>} {
  func.return
}
// CHECK: unknown layout 'nchw8c', expected one of nchw, nhwc, nchw4c, nhwc4c, oihw, oihw4o, hwio4o

// -----

// Element type must be f32 or f16.
func.func @f(%t: !texture.tensor<1x16x112x112x4xi8, nchw4c, global>) {
  func.return
}
// CHECK: texture tensor element type must be f32 or f16, got i8

// -----

// An unpacked layout cannot live in an image.
func.func @f(%t: !texture.tensor<1x16x112x4xf32, nhwc, #texture.image<texture, h = 1792, w = 112>>) {
  func.return
}
// CHECK: image memory needs a packed layout (hwio4o, nchw4c, nhwc4c, oihw4o), got nhwc

// -----

// Wrong packed shape: C = 3 packs into one 4-wide block, not two.
func.func @f(%t: tensor<1x3x224x224xf32>) {
  %p = texture.pack %t : tensor<1x3x224x224xf32> -> !texture.tensor<1x2x224x224x4xf32, nchw4c, global>
  func.return
}
// CHECK: Operation does not verify: texture.pack: layout nchw4c maps logical shape [1, 3, 224, 224] to [1, 1, 224, 224, 4], got [1, 2, 224, 224, 4]

// -----

// pack may narrow f32 -> f16, nothing else.
func.func @f(%t: tensor<1x3x224x224xf16>) {
  %p = texture.pack %t : tensor<1x3x224x224xf16> -> !texture.tensor<1x1x224x224x4xf32, nchw4c, global>
  func.return
}
// CHECK: Operation does not verify: element type may only change f32 -> f16, got f16 -> f32

// -----

// pack needs a static 4-D input.
func.func @f(%t: tensor<3x224x224xf32>) {
  %p = texture.pack %t : tensor<3x224x224xf32> -> !texture.tensor<1x1x224x224x4xf32, nchw4c, global>
  func.return
}
// CHECK: Operation does not verify: texture.pack input must be a static 4-D tensor, got tensor<3x224x224xf32>

// -----

// unpack: ceil(C/4) must equal C4 (8 channels need 2 blocks, the input has 1).
func.func @f(%p: !texture.tensor<1x1x224x224x4xf32, nchw4c, global>) {
  %t = texture.unpack %p : !texture.tensor<1x1x224x224x4xf32, nchw4c, global> -> tensor<1x8x224x224xf32>
  func.return
}
// CHECK: Operation does not verify: texture.unpack: layout nchw4c maps logical shape [1, 8, 224, 224] to [1, 2, 224, 224, 4], got [1, 1, 224, 224, 4]

// -----

// pack_weights: wrong packed shape.
func.func @f(%w: tensor<64x3x7x7xf32>) {
  %p = texture.pack_weights %w : tensor<64x3x7x7xf32> -> tensor<64x3x7x7x4xf32> {layout = #texture.layout<oihw4o>}
  func.return
}
// CHECK: Operation does not verify: texture.pack_weights: layout oihw4o maps logical shape [64, 3, 7, 7] to [16, 3, 7, 7, 4], got [64, 3, 7, 7, 4]

// -----

// pack_weights: an activation layout.
func.func @f(%w: tensor<64x3x7x7xf32>) {
  %p = texture.pack_weights %w : tensor<64x3x7x7xf32> -> tensor<64x1x7x7x4xf32> {layout = #texture.layout<nchw4c>}
  func.return
}
// CHECK: Operation does not verify: texture.pack_weights needs a weight layout (hwio4o, oihw, oihw4o), got nchw4c

// -----

// cast_scope changes memory only.
func.func @f(%a: !texture.tensor<1x16x112x112x4xf32, nchw4c, global>) {
  %b = texture.cast_scope %a : !texture.tensor<1x16x112x112x4xf32, nchw4c, global> -> !texture.tensor<1x16x112x112x4xf16, nchw4c, global>
  func.return
}
// CHECK: Operation does not verify: texture.cast_scope may only change memory: shape, element type and layout must match
