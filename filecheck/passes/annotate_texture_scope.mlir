// RUN: adreno-opt %s -p 'annotate-texture-scope{target=adreno-740}' | filecheck %s
// RUN: adreno-opt %s -p 'annotate-texture-scope{target=tiny-test}' | filecheck %s --check-prefix=TINY
// RUN: adreno-opt %s -p 'annotate-texture-scope{target=adreno-740 images=false}' | filecheck %s --check-prefix=OFF

// With Adreno's 16384-pixel limit every activation becomes an image, in the most
// balanced mapping: 1x8x64x64 NCHW4c ("texture": 64 x 512, "texture-nhwc": 4096 x 8)
// takes "texture". The tiny-test profile (64 x 64 images) does not fit the 64x64
// activations, which fall back to global buffers, but fits the pooled 8x8 ones.
// images=false forces the buffer plan.

// CHECK-LABEL: func.func @main
// CHECK:      texture.pack %x : tensor<1x32x64x64xf32> -> !texture.tensor<1x8x64x64x4xf32, nchw4c, #texture.image<texture, h = 512, w = 64>>
// CHECK:      graph.relu %{{.*}} : !texture.tensor<1x8x64x64x4xf32, nchw4c, #texture.image<texture, h = 512, w = 64>>{{$}}
// CHECK:      graph.max_pool {{.*}} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, #texture.image<texture, h = 64, w = 8>>
// CHECK:      texture.pack %s : tensor<1x32x1x1xf32> -> !texture.tensor<1x8x1x1x4xf32, nchw4c, #texture.image<texture, h = 8, w = 1>>
// CHECK:      graph.mul {{.*}} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, #texture.image<texture, h = 64, w = 8>>
// CHECK:      texture.unpack {{.*}} : !texture.tensor<1x8x8x8x4xf32, nchw4c, #texture.image<texture, h = 64, w = 8>> -> tensor<1x32x8x8xf32>

// TINY:      texture.pack %x : tensor<1x32x64x64xf32> -> !texture.tensor<1x8x64x64x4xf32, nchw4c, global>
// TINY:      graph.relu %{{.*}} : !texture.tensor<1x8x64x64x4xf32, nchw4c, global>{{$}}
// TINY:      graph.max_pool {{.*}} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, #texture.image<texture, h = 64, w = 8>>
// TINY:      graph.mul {{.*}} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, #texture.image<texture, h = 64, w = 8>>

// OFF-NOT:   #texture.image

func.func @main(%x: tensor<1x32x64x64xf32>, %s: tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32> {
  %p = texture.pack %x : tensor<1x32x64x64xf32> -> !texture.tensor<1x8x64x64x4xf32, nchw4c, global>
  %r = graph.relu %p : !texture.tensor<1x8x64x64x4xf32, nchw4c, global>
  %m = graph.max_pool %r {kernel_shape = array<i64: 8, 8>, strides = array<i64: 8, 8>} : (!texture.tensor<1x8x64x64x4xf32, nchw4c, global>) -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  %ps = texture.pack %s : tensor<1x32x1x1xf32> -> !texture.tensor<1x8x1x1x4xf32, nchw4c, global>
  %y = graph.mul %m, %ps : (!texture.tensor<1x8x8x8x4xf32, nchw4c, global>, !texture.tensor<1x8x1x1x4xf32, nchw4c, global>) -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  %u = texture.unpack %y : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> -> tensor<1x32x8x8xf32>
  func.return %u : tensor<1x32x8x8xf32>
}
