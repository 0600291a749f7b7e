// RUN: adreno-opt %s -p 'conv-winograd{overrides="%S/Inputs/per_node_winograd.json"}' | filecheck %s
// RUN: not adreno-opt %s -p 'conv-winograd{overrides="%S/Inputs/per_node_winograd_bad.json"}' 2>&1 | filecheck %s --check-prefix=BAD

// Per-node Winograd choices from the overrides file: the `winograd` key of a `loc:NODE`
// entry (0 direct, 2 or 4 the tile) decides that conv, before the `tile` option and the
// rule. Here both convs would take tile 4 by the Adreno 740 rule (128 channels, 16x16):
// `loc:conv_direct` keeps the direct convolution (its select-kernel-config key split_k
// is not this pass's), `loc:conv_f2` takes F(2x2,3x3). Entries for nodes that are not in
// the module (another model's) and entries without `winograd` are no error. The file
// does not write the `winograd` attribute.

// CHECK-LABEL: func.func @per_node
// CHECK:         %[[D:[a-z0-9_]+]] = graph.conv2d %x, {{.*}} {pads = array<i64: 1, 1, 1, 1>} :
// CHECK-SAME:    loc("conv_direct")
// CHECK-NOT:     graph.conv2d
// CHECK:         texture.winograd_input %[[D]] {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} {{.*}} loc("conv_f2")
// CHECK-NEXT:    texture.winograd_matmul
// CHECK-NEXT:    texture.winograd_output {{.*}} {tile = 2 : i64} {{.*}} loc("conv_f2")
// CHECK:         graph.relu {{.*}} loc("relu_buf")

// An entry forcing Winograd on a conv that cannot take it (stride 2) is an error naming
// the conv, the file's entry and the reason.

// BAD: error: 'graph.conv2d' at loc("conv_strided"): {{.*}}per_node_winograd_bad.json: entry 'loc:conv_strided' has "winograd": 2, which asks for Winograd, but stride [2, 2] is not 1

func.func @per_node(%x: !texture.tensor<1x32x16x16x4xf32, nchw4c, global>) -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<32x128x3x3x4xf32>
  %b = graph.constant dense<1.0> : tensor<128xf32>
  %d = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>, tensor<32x128x3x3x4xf32>, tensor<128xf32> -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> loc("conv_direct")
  %c = graph.conv2d %d, %w, %b {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>, tensor<32x128x3x3x4xf32>, tensor<128xf32> -> !texture.tensor<1x32x16x16x4xf32, nchw4c, global> loc("conv_f2")
  %r = graph.relu %c : !texture.tensor<1x32x16x16x4xf32, nchw4c, global> loc("relu_buf")
  %s = graph.conv2d %r, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>, tensor<32x128x3x3x4xf32>, tensor<128xf32> -> !texture.tensor<1x32x8x8x4xf32, nchw4c, global> loc("conv_strided")
  %u = texture.unpack %s : !texture.tensor<1x32x8x8x4xf32, nchw4c, global> -> tensor<1x128x8x8xf32>
  func.return %r : !texture.tensor<1x32x16x16x4xf32, nchw4c, global>
}
