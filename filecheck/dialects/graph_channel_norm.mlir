// RUN: adreno-opt %s --split-input-file | adreno-opt --split-input-file | filecheck %s
// RUN: adreno-opt %s --split-input-file -p graph-canonicalize | filecheck %s --check-prefix=CANON
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt -p 'graph-fuse{epilogues=false},select-kernel-config{target=adreno-740},convert-graph-to-opencl,cse' | filecheck %s --check-prefix=NCHW
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt -p 'convert-layout-nchw4c,annotate-texture-scope{target=adreno-740},graph-fuse,select-kernel-config{target=adreno-740},convert-graph-to-opencl' | filecheck %s --check-prefix=PACKED

// graph.channel_norm: a normalization over the channels of each pixel (ConvNeXt's
// LayerNorm2d). On NCHW it is the row normalization with a row's channels H*W = 15 floats
// apart (`layer_norm_channels`: one pixel a work-item, 15 of them, row r starting at
// (r / 15) * 8 * 15 + r % 15); on NCHW4c one work-item per pixel reads its channel
// blocks as float4s (here from an image), three loops: the mean, the variance, the write.

// CHECK-LABEL: func.func @cn
// CHECK:         %y = graph.channel_norm %x, %s, %b {epsilon = 1.000000e-03 : f32} : tensor<1x8x3x5xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x8x3x5xf32>
// NCHW-LABEL: opencl.kernel @layer_norm_channels(
// NCHW:         %row = opencl.global_id 0
// NCHW:         arith.divsi %row
// NCHW:         arith.remsi %row
// NCHW-NOT:     opencl.barrier
// NCHW-LABEL: func.func @cn
// NCHW:         opencl.launch @layer_norm_channels(%x, %s, %b, %y) global [15]
// PACKED-LABEL: opencl.kernel @channel_norm_4c(%input: !opencl.image2d<read>, %scale: !opencl.ptr<global, f32>, %bias: !opencl.ptr<global, f32>, %out: !opencl.image2d<write>)
// PACKED-COUNT-3: opencl.read_imagef %input
// PACKED:         opencl.vload4 %scale
// PACKED:         opencl.vload4 %bias
// PACKED:         opencl.write_image
// PACKED-LABEL: func.func @cn
// PACKED:         opencl.launch @channel_norm_4c({{.*}}) global [5, 3, 1]
func.func @cn(%x: tensor<1x8x3x5xf32>) -> tensor<1x8x3x5xf32> attributes {graph.inputs = ["x"], graph.outputs = ["y"]} {
  %s = graph.constant dense<1.5> : tensor<8xf32>
  %b = graph.constant dense<0.25> : tensor<8xf32>
  %y = graph.channel_norm %x, %s, %b {epsilon = 1.000000e-03 : f32} : tensor<1x8x3x5xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x8x3x5xf32>
  func.return %y : tensor<1x8x3x5xf32>
}

// -----

// RMS form (center = 0), no bias.

// CHECK-LABEL: func.func @rms
// CHECK:         graph.channel_norm %x, %s {center = 0 : i64} : tensor<2x6x4x4xf32>, tensor<6xf32> -> tensor<2x6x4x4xf32>
func.func @rms(%x: tensor<2x6x4x4xf32>, %s: tensor<6xf32>) -> tensor<2x6x4x4xf32> {
  %y = graph.channel_norm %x, %s {center = 0 : i64} : tensor<2x6x4x4xf32>, tensor<6xf32> -> tensor<2x6x4x4xf32>
  func.return %y : tensor<2x6x4x4xf32>
}

// -----

// graph-canonicalize folds transpose to NHWC -> layer_norm over the last axis (scale and
// bias of one value per channel) -> transpose back into one channel_norm, with the
// layer_norm's epsilon and location.

// CANON-LABEL: func.func @folded
// CANON-NOT:     graph.transpose
// CANON:         %y = graph.channel_norm %x, %s, %b {epsilon = 1.000000e-06 : f32} : tensor<1x8x3x5xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x8x3x5xf32> loc("ln")
// CANON-NEXT:    func.return %y
func.func @folded(%x: tensor<1x8x3x5xf32>) -> tensor<1x8x3x5xf32> {
  %s = graph.constant dense<1.5> : tensor<8xf32>
  %b = graph.constant dense<0.25> : tensor<8xf32>
  %t = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x5xf32>) -> tensor<1x3x5x8xf32>
  %n = graph.layer_norm %t, %s, %b {axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<1x3x5x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x3x5x8xf32> loc("ln")
  %y = graph.transpose %n {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x5x8xf32>) -> tensor<1x8x3x5xf32>
  func.return %y : tensor<1x8x3x5xf32>
}

// -----

// Left as they are: the NHWC normalization read by another op too; a normalization over
// the last two axes; transposes that do not undo each other.

// CANON-LABEL: func.func @kept
// CANON:         graph.transpose
// CANON:         graph.layer_norm
// CANON:         graph.transpose
// CANON-NOT:     graph.channel_norm
func.func @kept(%x: tensor<1x8x3x5xf32>) -> (tensor<1x8x3x5xf32>, tensor<1x3x5x8xf32>) {
  %s = graph.constant dense<1.5> : tensor<8xf32>
  %t = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x5xf32>) -> tensor<1x3x5x8xf32>
  %n = graph.layer_norm %t, %s {axis = -1 : i64} : tensor<1x3x5x8xf32>, tensor<8xf32> -> tensor<1x3x5x8xf32>
  %y = graph.transpose %n {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x5x8xf32>) -> tensor<1x8x3x5xf32>
  func.return %y, %n : tensor<1x8x3x5xf32>, tensor<1x3x5x8xf32>
}

// -----

// CANON-LABEL: func.func @two_axes
// CANON-NOT:     graph.channel_norm
func.func @two_axes(%x: tensor<1x8x3x5xf32>) -> tensor<1x8x3x5xf32> {
  %s = graph.constant dense<1.5> : tensor<5x8xf32>
  %t = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x5xf32>) -> tensor<1x3x5x8xf32>
  %n = graph.layer_norm %t, %s {axis = 2 : i64} : tensor<1x3x5x8xf32>, tensor<5x8xf32> -> tensor<1x3x5x8xf32>
  %y = graph.transpose %n {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x5x8xf32>) -> tensor<1x8x3x5xf32>
  func.return %y : tensor<1x8x3x5xf32>
}

// -----

// CANON-LABEL: func.func @other_perm
// CANON-NOT:     graph.channel_norm
func.func @other_perm(%x: tensor<1x8x3x5xf32>) -> tensor<1x5x8x3xf32> {
  %s = graph.constant dense<1.5> : tensor<8xf32>
  %t = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x5xf32>) -> tensor<1x3x5x8xf32>
  %n = graph.layer_norm %t, %s {axis = -1 : i64} : tensor<1x3x5x8xf32>, tensor<8xf32> -> tensor<1x3x5x8xf32>
  %y = graph.transpose %n {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x5x8xf32>) -> tensor<1x5x8x3xf32>
  func.return %y : tensor<1x5x8x3xf32>
}
