// RUN: adreno-opt %s | adreno-opt | filecheck %s
// RUN: adreno-opt %s --print-op-generic | adreno-opt | filecheck %s

// Attributes: every layout, every scope, images of each mapping (the scope defaults to `texture`).
func.func @attrs() attributes {
  l0 = #texture.layout<nchw>, l1 = #texture.layout<nhwc>, l2 = #texture.layout<nchw4c>,
  l3 = #texture.layout<nhwc4c>, l4 = #texture.layout<oihw>, l5 = #texture.layout<oihw4o>,
  l6 = #texture.layout<hwio4o>,
  s0 = #texture.scope<global>, s1 = #texture.scope<texture>,
  s2 = #texture.scope<texture-nhwc>, s3 = #texture.scope<texture-weight>,
  i0 = #texture.image<texture, h = 1792, w = 112>,
  i1 = #texture.image<texture-nhwc, h = 16, w = 12544>,
  i2 = #texture.image<texture-weight, h = 16, w = 147>,
  i3 = #texture.image<h = 224, w = 224>
} {
  func.return
}

// CHECK:      func.func @attrs() attributes {l0 = #texture.layout<nchw>, l1 = #texture.layout<nhwc>, l2 = #texture.layout<nchw4c>,
// CHECK-SAME: l3 = #texture.layout<nhwc4c>, l4 = #texture.layout<oihw>, l5 = #texture.layout<oihw4o>, l6 = #texture.layout<hwio4o>,
// CHECK-SAME: s0 = #texture.scope<global>, s1 = #texture.scope<texture>, s2 = #texture.scope<texture-nhwc>, s3 = #texture.scope<texture-weight>,
// CHECK-SAME: i0 = #texture.image<texture, h = 1792, w = 112>, i1 = #texture.image<texture-nhwc, h = 16, w = 12544>,
// CHECK-SAME: i2 = #texture.image<texture-weight, h = 16, w = 147>, i3 = #texture.image<texture, h = 224, w = 224>} {

// Types: global buffers in every layout, images of each mapping, f16 storage.
func.func @types(
  %t0: !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>>,
  %t1: !texture.tensor<1x16x112x112x4xf32, nchw4c, global>,
  %t2: !texture.tensor<1x16x112x112x4xf16, nchw4c, #texture.image<texture-nhwc, h = 16, w = 12544>>,
  %t3: !texture.tensor<1x112x112x16x4xf32, nhwc4c, #texture.image<texture-nhwc, h = 112, w = 1792>>,
  %t4: !texture.tensor<16x3x7x7x4xf32, oihw4o, #texture.image<texture-weight, h = 16, w = 147>>,
  %t5: !texture.tensor<3x3x64x16x4xf16, hwio4o, global>,
  %t6: !texture.tensor<1x3x224x224xf32, nchw, global>,
  %t7: !texture.tensor<1x224x224x3xf32, nhwc, global>,
  %t8: !texture.tensor<64x3x7x7xf32, oihw, global>
) {
  func.return
}

// CHECK-LABEL: func.func @types(%t0: !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>>,
// CHECK-SAME: %t1: !texture.tensor<1x16x112x112x4xf32, nchw4c, global>,
// CHECK-SAME: %t2: !texture.tensor<1x16x112x112x4xf16, nchw4c, #texture.image<texture-nhwc, h = 16, w = 12544>>,
// CHECK-SAME: %t3: !texture.tensor<1x112x112x16x4xf32, nhwc4c, #texture.image<texture-nhwc, h = 112, w = 1792>>,
// CHECK-SAME: %t4: !texture.tensor<16x3x7x7x4xf32, oihw4o, #texture.image<texture-weight, h = 16, w = 147>>,
// CHECK-SAME: %t5: !texture.tensor<3x3x64x16x4xf16, hwio4o, global>,
// CHECK-SAME: %t6: !texture.tensor<1x3x224x224xf32, nchw, global>,
// CHECK-SAME: %t7: !texture.tensor<1x224x224x3xf32, nhwc, global>,
// CHECK-SAME: %t8: !texture.tensor<64x3x7x7xf32, oihw, global>) {

// Ops.
func.func @ops(%x: tensor<1x3x224x224xf32>, %w: tensor<64x3x7x7xf32>, %w3: tensor<64x64x3x3xf32>) -> tensor<1x3x224x224xf32> {
  %p = texture.pack %x : tensor<1x3x224x224xf32> -> !texture.tensor<1x1x224x224x4xf32, nchw4c, #texture.image<texture, h = 224, w = 224>>
  %h = texture.pack %x : tensor<1x3x224x224xf32> -> !texture.tensor<1x1x224x224x4xf16, nchw4c, global>
  %n = texture.pack %x : tensor<1x3x224x224xf32> -> !texture.tensor<1x224x224x1x4xf32, nhwc4c, #texture.image<texture-nhwc, h = 224, w = 224>>
  %a = texture.alloc : !texture.tensor<1x16x112x112x4xf32, nchw4c, global>
  %i = texture.cast_scope %a : !texture.tensor<1x16x112x112x4xf32, nchw4c, global> -> !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>>
  %g = texture.cast_scope %i : !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>> -> !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture-nhwc, h = 16, w = 12544>>
  %pw = texture.pack_weights %w : tensor<64x3x7x7xf32> -> tensor<16x3x7x7x4xf32> {layout = #texture.layout<oihw4o>}
  %hw = texture.pack_weights %w3 : tensor<64x64x3x3xf32> -> tensor<3x3x64x16x4xf16> {layout = #texture.layout<hwio4o>}
  %u = texture.unpack %p : !texture.tensor<1x1x224x224x4xf32, nchw4c, #texture.image<texture, h = 224, w = 224>> -> tensor<1x3x224x224xf32>
  %u16 = texture.unpack %h : !texture.tensor<1x1x224x224x4xf16, nchw4c, global> -> tensor<1x3x224x224xf32>
  func.return %u : tensor<1x3x224x224xf32>
}

// CHECK-LABEL: func.func @ops(
// CHECK-NEXT:  %p = texture.pack %x : tensor<1x3x224x224xf32> -> !texture.tensor<1x1x224x224x4xf32, nchw4c, #texture.image<texture, h = 224, w = 224>>
// CHECK-NEXT:  %h = texture.pack %x : tensor<1x3x224x224xf32> -> !texture.tensor<1x1x224x224x4xf16, nchw4c, global>
// CHECK-NEXT:  %n = texture.pack %x : tensor<1x3x224x224xf32> -> !texture.tensor<1x224x224x1x4xf32, nhwc4c, #texture.image<texture-nhwc, h = 224, w = 224>>
// CHECK-NEXT:  %a = texture.alloc : !texture.tensor<1x16x112x112x4xf32, nchw4c, global>
// CHECK-NEXT:  %i = texture.cast_scope %a : !texture.tensor<1x16x112x112x4xf32, nchw4c, global> -> !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>>
// CHECK-NEXT:  %g = texture.cast_scope %i : !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture, h = 1792, w = 112>> -> !texture.tensor<1x16x112x112x4xf32, nchw4c, #texture.image<texture-nhwc, h = 16, w = 12544>>
// CHECK-NEXT:  %pw = texture.pack_weights %w : tensor<64x3x7x7xf32> -> tensor<16x3x7x7x4xf32> {layout = #texture.layout<oihw4o>}
// CHECK-NEXT:  %hw = texture.pack_weights %w3 : tensor<64x64x3x3xf32> -> tensor<3x3x64x16x4xf16> {layout = #texture.layout<hwio4o>}
// CHECK-NEXT:  %u = texture.unpack %p : !texture.tensor<1x1x224x224x4xf32, nchw4c, #texture.image<texture, h = 224, w = 224>> -> tensor<1x3x224x224xf32>
// CHECK-NEXT:  %u16 = texture.unpack %h : !texture.tensor<1x1x224x224x4xf16, nchw4c, global> -> tensor<1x3x224x224xf32>
// CHECK-NEXT:  func.return %u : tensor<1x3x224x224xf32>

// The Winograd ops (conv-winograd): F(4x4,3x3) with padding and a bias, and F(2x2,3x3)
// without either, reading its input from an image.
func.func @winograd(%x: !texture.tensor<1x32x16x16x4xf32, nchw4c, global>,
                    %xi: !texture.tensor<1x16x16x16x4xf32, nchw4c, #texture.image<texture, h = 256, w = 16>>)
    -> (!texture.tensor<1x32x16x16x4xf32, nchw4c, global>, !texture.tensor<1x16x14x14x4xf32, nchw4c, global>) {
  %u = graph.constant @winograd_u : tensor<36x32x128x4xf32>
  %b = graph.constant @winograd_b : tensor<128xf32>
  %v = texture.winograd_input %x {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x16x16x4xf32, nchw4c, global> -> !texture.tensor<36x32x1x16x4xf32, nchw4c, global> loc("conv_a")
  %m = texture.winograd_matmul %v, %u : !texture.tensor<36x32x1x16x4xf32, nchw4c, global>, tensor<36x32x128x4xf32> -> !texture.tensor<36x32x1x16x4xf32, nchw4c, global> loc("conv_a")
  %y = texture.winograd_output %m, %b {tile = 4 : i64} : !texture.tensor<36x32x1x16x4xf32, nchw4c, global>, tensor<128xf32> -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> loc("conv_a")
  %u2 = graph.constant @winograd_u2 : tensor<16x16x64x4xf32>
  %v2 = texture.winograd_input %xi {tile = 2 : i64, pads = array<i64: 0, 0, 0, 0>} : !texture.tensor<1x16x16x16x4xf32, nchw4c, #texture.image<texture, h = 256, w = 16>> -> !texture.tensor<16x16x1x49x4xf32, nchw4c, global>
  %m2 = texture.winograd_matmul %v2, %u2 : !texture.tensor<16x16x1x49x4xf32, nchw4c, global>, tensor<16x16x64x4xf32> -> !texture.tensor<16x16x1x49x4xf32, nchw4c, global>
  %y2 = texture.winograd_output %m2 {tile = 2 : i64} : !texture.tensor<16x16x1x49x4xf32, nchw4c, global> -> !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
  func.return %y, %y2 : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>, !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
}

// CHECK-LABEL: func.func @winograd(
// CHECK-NEXT:  %u = graph.constant @winograd_u : tensor<36x32x128x4xf32>
// CHECK-NEXT:  %b = graph.constant @winograd_b : tensor<128xf32>
// CHECK-NEXT:  %v = texture.winograd_input %x {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x16x16x4xf32, nchw4c, global> -> !texture.tensor<36x32x1x16x4xf32, nchw4c, global> loc("conv_a")
// CHECK-NEXT:  %m = texture.winograd_matmul %v, %u : !texture.tensor<36x32x1x16x4xf32, nchw4c, global>, tensor<36x32x128x4xf32> -> !texture.tensor<36x32x1x16x4xf32, nchw4c, global> loc("conv_a")
// CHECK-NEXT:  %y = texture.winograd_output %m, %b {tile = 4 : i64} : !texture.tensor<36x32x1x16x4xf32, nchw4c, global>, tensor<128xf32> -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> loc("conv_a")
// CHECK-NEXT:  %u2 = graph.constant @winograd_u2 : tensor<16x16x64x4xf32>
// CHECK-NEXT:  %v2 = texture.winograd_input %xi {tile = 2 : i64, pads = array<i64: 0, 0, 0, 0>} : !texture.tensor<1x16x16x16x4xf32, nchw4c, #texture.image<texture, h = 256, w = 16>> -> !texture.tensor<16x16x1x49x4xf32, nchw4c, global>
// CHECK-NEXT:  %m2 = texture.winograd_matmul %v2, %u2 : !texture.tensor<16x16x1x49x4xf32, nchw4c, global>, tensor<16x16x64x4xf32> -> !texture.tensor<16x16x1x49x4xf32, nchw4c, global>
// CHECK-NEXT:  %y2 = texture.winograd_output %m2 {tile = 2 : i64} : !texture.tensor<16x16x1x49x4xf32, nchw4c, global> -> !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
// CHECK-NEXT:  func.return %y, %y2 : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>, !texture.tensor<1x16x14x14x4xf32, nchw4c, global>
