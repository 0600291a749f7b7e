// RUN: adreno-opt %s --split-input-file -p 'merge-split-convs{target=adreno-740}' | filecheck %s --check-prefix=GPU
// RUN: adreno-opt %s --split-input-file -p 'merge-split-convs{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: adreno-opt %s --split-input-file -p 'merge-split-convs{target=adreno-740 max-flop-ratio=0}' | filecheck %s --check-prefix=OFF

// merge-split-convs: the convolutions of a channel split that a concat joins become one.
// Groups-1 parts: one dense conv, block-diagonal over the parts' input channels (part p
// reads channel 0 into outputs 0-1 with a bias, part q channel 1 into output 2 without
// one: its bias is 0). 2x the parts' multiply-adds, under the GPU bound of 4; on a CPU
// target (bound 1: no zero taps) and with max-flop-ratio=0 the split stays.

// GPU-LABEL: func.func @pointwise
// GPU-DAG:     %[[W:.+]] = graph.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}0.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}0.000000e+00]]], {{\[\[\[}}0.000000e+00]], {{\[\[}}5.000000e+00]]]]> : tensor<3x2x1x1xf32>
// GPU-DAG:     %[[B:.+]] = graph.constant dense<[1.000000e+00, 2.000000e+00, 0.000000e+00]> : tensor<3xf32>
// GPU:         %y = graph.conv2d %x, %[[W]], %[[B]] : tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32> -> tensor<1x3x4x4xf32> loc("cat")
// GPU-NEXT:    func.return %y
// GPU-NOT:     graph.concat
// CPU-LABEL: func.func @pointwise
// CPU-COUNT-2: graph.conv2d
// CPU:         graph.concat
// OFF-LABEL: func.func @pointwise
// OFF-COUNT-2: graph.slice
// OFF:         graph.concat
func.func @pointwise(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %a = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32>
  %b = graph.slice %x {starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32>
  %w1 = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %b1 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %w2 = graph.constant dense<[[[[5.0]]]]> : tensor<1x1x1x1xf32>
  %p = graph.conv2d %a, %w1, %b1 : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32> loc("p")
  %q = graph.conv2d %b, %w2 : tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x4x4xf32> loc("q")
  %y = graph.concat %p, %q {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x3x4x4xf32> loc("cat")
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

// Depthwise parts (groups = their channels), stride 2: a 1x1 and a 1x3 window padded one
// column on each side. The merged window is the 1x3 one; the 1x1 tap sits at its centre
// (the column it read), so the merged conv has groups 2 and the 1x3 part's padding.

// GPU-LABEL: func.func @depthwise
// GPU:         %[[W:.+]] = graph.constant dense<{{\[\[\[\[}}0.000000e+00, 7.000000e+00, 0.000000e+00]]], {{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00]]]]> : tensor<2x1x1x3xf32>
// GPU:         %y = graph.conv2d %x, %[[W]] {strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 1>, groups = 2 : i64} : tensor<1x2x5x5xf32>, tensor<2x1x1x3xf32> -> tensor<1x2x3x3xf32>
// GPU-NEXT:    func.return %y
// CPU-LABEL: func.func @depthwise
// CPU:         graph.concat
func.func @depthwise(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %a = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x1x5x5xf32>
  %b = graph.slice %x {starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x1x5x5xf32>
  %w1 = graph.constant dense<[[[[7.0]]]]> : tensor<1x1x1x1xf32>
  %w2 = graph.constant dense<[[[[1.0, 2.0, 3.0]]]]> : tensor<1x1x1x3xf32>
  %p = graph.conv2d %a, %w1 {strides = array<i64: 2, 2>, groups = 1 : i64} : tensor<1x1x5x5xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x3x3xf32>
  %q = graph.conv2d %b, %w2 {strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 1>, groups = 1 : i64} : tensor<1x1x5x5xf32>, tensor<1x1x1x3xf32> -> tensor<1x1x3x3xf32>
  %y = graph.concat %p, %q {axis = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// Equal windows cost no zero taps: merged on a CPU target too.

// CPU-LABEL: func.func @equal_windows
// CPU:         %y = graph.conv2d %x, %{{.+}} {groups = 2 : i64} : tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x4x4xf32>
// CPU-NOT:     graph.concat
func.func @equal_windows(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %a = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32>
  %b = graph.slice %x {starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32>
  %w1 = graph.constant dense<[[[[7.0]]]]> : tensor<1x1x1x1xf32>
  %w2 = graph.constant dense<[[[[3.0]]]]> : tensor<1x1x1x1xf32>
  %p = graph.conv2d %a, %w1 {groups = 1 : i64} : tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x4x4xf32>
  %q = graph.conv2d %b, %w2 {groups = 1 : i64} : tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x4x4xf32>
  %y = graph.concat %p, %q {axis = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Slices that skip a channel (0 and 2 of 3) do not cover the input: left as they are.

// GPU-LABEL: func.func @gap
// CPU-LABEL: func.func @gap
// GPU-COUNT-2: graph.slice
// GPU:         graph.concat
func.func @gap(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %a = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x3x4x4xf32>) -> tensor<1x1x4x4xf32>
  %b = graph.slice %x {starts = array<i64: 0, 2, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x3x4x4xf32>) -> tensor<1x1x4x4xf32>
  %w1 = graph.constant dense<[[[[7.0]]]]> : tensor<1x1x1x1xf32>
  %w2 = graph.constant dense<[[[[3.0]]]]> : tensor<1x1x1x1xf32>
  %p = graph.conv2d %a, %w1 : tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x4x4xf32>
  %q = graph.conv2d %b, %w2 : tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x4x4xf32>
  %y = graph.concat %p, %q {axis = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
