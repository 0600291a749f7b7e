// RUN: adreno-opt %s -p 'annotate-texture-scope{target=tiny-test overrides="%S/Inputs/per_node_scope.json"}' | filecheck %s
// RUN: adreno-opt %s -p 'annotate-texture-scope{target=tiny-test images=false overrides="%S/Inputs/per_node_scope.json"}' | filecheck %s --check-prefix=OFF
// RUN: not adreno-opt %s -p 'annotate-texture-scope{target=tiny-test overrides="%S/Inputs/per_node_scope_bad.json"}' 2>&1 | filecheck %s --check-prefix=BAD

// Per-node memory scopes from the overrides file: the `scope` key of a `loc:NODE` entry
// ("image", "buffer", "texture", "texture-nhwc") decides where that node's result
// tensors live. On the tiny-test profile (64 x 64 images) the pass alone would put the
// 8x8 results in "texture" images and keep the 64x64 ones in buffers:
// `loc:relu_a` keeps its 8x8 result in a buffer (its `winograd` key is conv-winograd's),
// `loc:pool_b` takes the "texture-nhwc" mapping (h = N*C4 = 8, w = H*W = 64), and
// `loc:relu_tiny` asks for an image where one fits anyway. An entry naming a node the
// module does not have (another model's) is no error. images=false (the buffer plan)
// keeps every tensor in a buffer whatever the file says.

// CHECK-LABEL: func.func @main
// CHECK:       graph.relu %{{.*}} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("relu_a")
// CHECK:       graph.max_pool {{.*}} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, #texture.image<texture-nhwc, h = 8, w = 64>> loc("pool_b")
// CHECK:       graph.relu %{{.*}} -> !texture.tensor<1x8x8x8x4xf32, nchw4c, #texture.image<texture, h = 64, w = 8>> loc("relu_tiny")
// CHECK:       graph.relu %{{.*}} : !texture.tensor<1x8x64x64x4xf32, nchw4c, global> loc("relu_big")

// OFF-NOT:     #texture.image

// An image request a tensor cannot satisfy is an error naming the node and the reason:
// 1x8x64x64 NCHW4c needs a 64 x 512 ("texture") or 4096 x 8 ("texture-nhwc") image.

// BAD: error: 'graph.relu' at loc("relu_big"): {{.*}}per_node_scope_bad.json: entry 'loc:relu_big' asks for "scope": "image", but shape [1, 8, 64, 64, 4] fits no image of tiny-test (width x height: texture 64x512, texture-nhwc 4096x8; limits 64 x 64)

func.func @main(%x: tensor<1x32x8x8xf32>, %big: tensor<1x32x64x64xf32>) -> (tensor<1x32x8x8xf32>, tensor<1x32x64x64xf32>) {
  %p = texture.pack %x : tensor<1x32x8x8xf32> -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global>
  %a = graph.relu %p : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("relu_a")
  %b = graph.max_pool %a {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (!texture.tensor<1x8x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("pool_b")
  %t = graph.relu %b : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> loc("relu_tiny")
  %u = texture.unpack %t : !texture.tensor<1x8x8x8x4xf32, nchw4c, global> -> tensor<1x32x8x8xf32>
  %pb = texture.pack %big : tensor<1x32x64x64xf32> -> !texture.tensor<1x8x64x64x4xf32, nchw4c, global>
  %rb = graph.relu %pb : !texture.tensor<1x8x64x64x4xf32, nchw4c, global> loc("relu_big")
  %ub = texture.unpack %rb : !texture.tensor<1x8x64x64x4xf32, nchw4c, global> -> tensor<1x32x64x64xf32>
  func.return %u, %ub : tensor<1x32x8x8xf32>, tensor<1x32x64x64xf32>
}
