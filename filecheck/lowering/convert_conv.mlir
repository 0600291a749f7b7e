// RUN: adreno-opt %s --split-input-file -p 'fold-batchnorm,graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl,cse' -o %t && filecheck %s < %t
// RUN: adreno-opt %s --split-input-file -p 'fold-batchnorm,graph-fuse,select-kernel-config{vectorize=false min-work-items=1},convert-graph-to-opencl,cse' -o %t && filecheck %s --check-prefix=SCALAR < %t

// (min-work-items=1 keeps the 4-pixel blocks these small shapes would otherwise give up.)
// conv + bias + ReLU + residual add is ONE kernel and ONE launch. 8 output channels:
// float4 schedule with 8 channels x 4 pixels per work-item, weights packed OIHW4o at
// compile time (same size, new weight), bias read as float4s. The number of input
// channels is a launch argument (`ci`), the loop bound over input channels.
// Inside that loop the 3x3 window is a kh/kw loop nest carrying the eight
// accumulators (not nine copies of the tap), both loops marked `opencl.unroll = 0`
// (unrolled fully by the OpenCL compiler). The kw body is ONE tap: two float4 weight
// loads (channels 0-3 and 4-7), then per pixel one masked input load (index and value
// selected on the bounds check), splat and used by two fmas; nothing else in the body
// loads or accumulates.
// Grid: (ceil(6 / 4), 6, 1 * 8 / 8). OW = 6 is not a multiple of 4: pixels 1..3 of
// a work-item are stored under a guard.

// CHECK-LABEL: opencl.kernel @conv3x3_c8x4_relu_add(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %bias: !opencl.ptr<global, f32>, %x0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>, %ci: i32) {
// CHECK:         opencl.vload4 %bias
// CHECK:         scf.for %{{.*}} = %{{.*}} to %ci step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK:           scf.for %kh = %[[K0:[0-9a-z_]+]] to %[[K3:[0-9a-z_]+]] step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK-NEXT:        scf.for %kw = %[[K0]] to %[[K3]] step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK:               %[[W0:[0-9a-z_]+]] = opencl.vload4 %weight
// CHECK:               %[[W1:[0-9a-z_]+]] = opencl.vload4 %weight
// CHECK:               %[[I0:[0-9a-z_]+]] = arith.select %[[OK0:[0-9a-z_]+]], %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:          %[[L0:[0-9a-z_]+]] = opencl.load %input[%[[I0]]] : !opencl.ptr<global, f32>
// CHECK:               %[[V0:[0-9a-z_]+]] = arith.select %[[OK0]], %[[L0]], %{{.*}} : f32
// CHECK-NEXT:          %[[S0:[0-9a-z_]+]] = opencl.vec_splat %[[V0]] : vector<4xf32>
// CHECK-NEXT:          math.fma %[[S0]], %[[W0]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:          math.fma %[[S0]], %[[W1]], %{{.*}} : vector<4xf32>
// CHECK-NOT:           opencl.vload4
// CHECK:               opencl.load %input
// CHECK:               %[[S1:[0-9a-z_]+]] = opencl.vec_splat
// CHECK-NEXT:          math.fma %[[S1]], %[[W0]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:          math.fma %[[S1]], %[[W1]], %{{.*}} : vector<4xf32>
// CHECK:               opencl.load %input
// CHECK:               %[[S2:[0-9a-z_]+]] = opencl.vec_splat
// CHECK-NEXT:          math.fma %[[S2]], %[[W0]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:          math.fma %[[S2]], %[[W1]], %{{.*}} : vector<4xf32>
// CHECK:               opencl.load %input
// CHECK:               %[[S3:[0-9a-z_]+]] = opencl.vec_splat
// CHECK-NEXT:          math.fma %[[S3]], %[[W0]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:          math.fma %[[S3]], %[[W1]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:          scf.yield
// CHECK-NEXT:        } {opencl.unroll = 0 : i64}
// CHECK-NEXT:        scf.yield
// CHECK-NEXT:      } {opencl.unroll = 0 : i64}
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NOT:     opencl.unroll
// Epilogue, lane by lane: max(acc, 0) + residual, then the store.
// CHECK:         %[[L:[0-9a-z_]+]] = opencl.vec_extract %{{.*}}[0] : f32
// CHECK-NEXT:    %[[ZERO:[0-9a-z_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.maximumf %[[L]], %[[ZERO]] : f32
// CHECK:         %[[RES:[0-9a-z_]+]] = opencl.load %x0[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-NEXT:    %[[SUM:[0-9a-z_]+]] = arith.addf %[[R]], %[[RES]] : f32
// CHECK:         opencl.store %[[SUM]], %out[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK:         scf.if
// CHECK:         scf.if
// CHECK:         scf.if
// CHECK-NOT:     scf.if
// CHECK:         opencl.return
// CHECK-NOT:   opencl.kernel
// CHECK-LABEL: func.func @residual(%x: !opencl.buffer<288xf32>) -> !opencl.buffer<288xf32> {
// CHECK-DAG:     %[[W:[0-9a-z_]+]] = opencl.weight @{{.*}}_oihw4o : !opencl.buffer<576xf32>
// CHECK-DAG:     %[[B:[0-9a-z_]+]] = opencl.weight @{{.*}} : !opencl.buffer<8xf32>
// CHECK:         %[[OUT:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<288xf32>
// CHECK-NEXT:    %[[CI:[0-9a-z_]+]] = arith.constant 8 : i32
// CHECK-NEXT:    opencl.launch @conv3x3_c8x4_relu_add(%x, %[[W]], %[[B]], %x, %[[OUT]], %[[CI]]) global [2, 6, 1] : (!opencl.buffer<288xf32>, !opencl.buffer<576xf32>, !opencl.buffer<8xf32>, !opencl.buffer<288xf32>, !opencl.buffer<288xf32>, i32)
// CHECK-NEXT:    func.return %[[OUT]] : !opencl.buffer<288xf32>

// Scalar schedule: one work-item per pixel and 8 channels; the weights are used as is.
// The same kh/kw loop nest, carrying eight f32 accumulators; its body is one tap: one
// masked input load feeding eight fmas (each with its own scalar weight load).
// SCALAR-LABEL: opencl.kernel @conv3x3_relu_add(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %bias: !opencl.ptr<global, f32>, %x0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// SCALAR-NOT:     vector<4xf32>
// SCALAR:         scf.for %ci = {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) : i32 {
// SCALAR:           scf.for %kh = {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) : i32 {
// SCALAR-NEXT:        scf.for %kw = {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) : i32 {
// SCALAR:               %[[I:[0-9a-z_]+]] = arith.select %[[OK:[0-9a-z_]+]], %{{.*}}, %{{.*}} : i32
// SCALAR-NEXT:          %[[L:[0-9a-z_]+]] = opencl.load %input[%[[I]]] : !opencl.ptr<global, f32>
// SCALAR:               %[[X:[0-9a-z_]+]] = arith.select %[[OK]], %[[L]], %{{.*}} : f32
// SCALAR-COUNT-8:       math.fma %[[X]], %{{.*}}, %{{.*}} : f32
// SCALAR-NEXT:          scf.yield
// SCALAR-NEXT:        } {opencl.unroll = 0 : i64}
// SCALAR-NEXT:        scf.yield
// SCALAR-NEXT:      } {opencl.unroll = 0 : i64}
// SCALAR-NOT:     vector<4xf32>
// SCALAR:         opencl.return
// SCALAR-LABEL: func.func @residual
// SCALAR:         %[[W:[0-9a-z_]+]] = opencl.weight @w : !opencl.buffer<576xf32>
// SCALAR:         opencl.launch @conv3x3_relu_add(%x, %[[W]], %{{.*}}, %x, %{{.*}}) global [6, 6, 1]
func.func @residual(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32> -> tensor<1x8x6x6xf32>
  %r = graph.relu %c : tensor<1x8x6x6xf32>
  %a = graph.add %r, %x : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  func.return %a : tensor<1x8x6x6xf32>
}

// -----

// Convs with the same geometry and different weights share one kernel, also when
// they differ only in input channels (4 and 8, passed at launch).
// A 1x1 window is no loop at all: the only loop is the one over input channels, its
// body one tap (a float4 of weights, four pixel loads). Without padding the window
// never leaves the input: no bounds checks, and OW = 4 = x_block: no store guards.

// CHECK-LABEL: opencl.kernel @conv1x1_c4x4(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>, %ci: i32) {
// CHECK-NOT:     arith.cmpi
// CHECK:         scf.for %ci_1 = %{{.*}} to %ci step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK-NOT:       scf.for
// CHECK-NOT:       arith.cmpi
// CHECK:           opencl.vload4 %weight[%ci_1]
// CHECK-COUNT-4:   opencl.load %input
// CHECK-NOT:       arith.cmpi
// CHECK:           scf.yield
// CHECK-NEXT:    }
// CHECK-NOT:     arith.cmpi
// CHECK-NOT:     scf.if
// CHECK-NOT:     opencl.unroll
// CHECK:         opencl.return
// CHECK-NOT:   opencl.kernel
// CHECK-LABEL: func.func @dedupe(%x: !opencl.buffer<64xf32>, %y: !opencl.buffer<128xf32>) -> (!opencl.buffer<64xf32>, !opencl.buffer<64xf32>) {
// CHECK-NEXT:    %[[W1:[0-9a-z_]+]] = opencl.weight @{{.*}}_oihw4o : !opencl.buffer<16xf32>
// CHECK-NEXT:    %[[C1:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<64xf32>
// CHECK-NEXT:    %[[CI4:[0-9a-z_]+]] = arith.constant 4 : i32
// CHECK-NEXT:    opencl.launch @conv1x1_c4x4(%x, %[[W1]], %[[C1]], %[[CI4]]) global [1, 4, 1]
// CHECK-NEXT:    %[[W2:[0-9a-z_]+]] = opencl.weight @{{.*}}_oihw4o_1 : !opencl.buffer<16xf32>
// CHECK-NEXT:    %[[C2:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<64xf32>
// CHECK-NEXT:    opencl.launch @conv1x1_c4x4(%[[C1]], %[[W2]], %[[C2]], %[[CI4]]) global [1, 4, 1]
// CHECK-NEXT:    %[[W3:[0-9a-z_]+]] = opencl.weight @{{.*}}_oihw4o_2 : !opencl.buffer<32xf32>
// CHECK-NEXT:    %[[C3:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<64xf32>
// CHECK-NEXT:    %[[CI8:[0-9a-z_]+]] = arith.constant 8 : i32
// CHECK-NEXT:    opencl.launch @conv1x1_c4x4(%y, %[[W3]], %[[C3]], %[[CI8]]) global [1, 4, 1]
// CHECK-NEXT:    func.return %[[C2]], %[[C3]] : !opencl.buffer<64xf32>, !opencl.buffer<64xf32>
func.func @dedupe(%x: tensor<1x4x4x4xf32>, %y: tensor<1x8x4x4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %w1 = graph.constant dense<1.0> : tensor<4x4x1x1xf32>
  %w2 = graph.constant dense<2.0> : tensor<4x4x1x1xf32>
  %w3 = graph.constant dense<3.0> : tensor<4x8x1x1xf32>
  %c1 = graph.conv2d %x, %w1 : tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x4x4xf32>
  %c2 = graph.conv2d %c1, %w2 : tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x4x4xf32>
  %c3 = graph.conv2d %y, %w3 : tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32> -> tensor<1x4x4x4xf32>
  func.return %c2, %c3 : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// Depthwise, stride 2, padding 1: four channels per work-item, each lane from its
// own input plane (vec_make of four masked loads) times one float4 of packed weights;
// no loop over input channels, only the kh/kw window nest (marked for unrolling). Its
// body is one tap: one float4 weight load, then per pixel four lane loads, a vec_make
// and one fma. Grid: (ceil(4 / 4), 4, 2 * 8 / 4).

// CHECK-LABEL: opencl.kernel @dwconv3x3_s2_c4x4(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NOT:     scf.for %ci
// CHECK:         scf.for %kh = {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK-NEXT:      scf.for %kw = {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK:             %[[WV:[0-9a-z_]+]] = opencl.vload4 %weight[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK:             arith.cmpi sge
// CHECK-COUNT-4:     opencl.load %input
// CHECK:             %[[V0:[0-9a-z_]+]] = opencl.vec_make %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:        math.fma %[[V0]], %[[WV]], %{{.*}} : vector<4xf32>
// CHECK-COUNT-4:     opencl.load %input
// CHECK:             %[[V1:[0-9a-z_]+]] = opencl.vec_make %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:        math.fma %[[V1]], %[[WV]], %{{.*}} : vector<4xf32>
// CHECK-COUNT-4:     opencl.load %input
// CHECK:             %[[V2:[0-9a-z_]+]] = opencl.vec_make %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:        math.fma %[[V2]], %[[WV]], %{{.*}} : vector<4xf32>
// CHECK-COUNT-4:     opencl.load %input
// CHECK:             %[[V3:[0-9a-z_]+]] = opencl.vec_make %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:        math.fma %[[V3]], %[[WV]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:        scf.yield
// CHECK-NEXT:      } {opencl.unroll = 0 : i64}
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    } {opencl.unroll = 0 : i64}
// CHECK-NOT:     scf.for
// CHECK:         opencl.return
// CHECK-LABEL: func.func @depthwise(%x: !opencl.buffer<784xf32>) -> !opencl.buffer<256xf32> {
// CHECK-NEXT:    %[[W:[0-9a-z_]+]] = opencl.weight @{{.*}}_oihw4o : !opencl.buffer<72xf32>
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<256xf32>
// CHECK-NEXT:    opencl.launch @dwconv3x3_s2_c4x4(%x, %[[W]], %[[C]]) global [1, 4, 4]
func.func @depthwise(%x: tensor<2x8x7x7xf32>) -> tensor<2x8x4x4xf32> {
  %w = graph.constant dense<0.25> : tensor<8x1x3x3xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : tensor<2x8x7x7xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x4x4xf32>
  func.return %c : tensor<2x8x4x4xf32>
}

// -----

// Grouped (not depthwise) convolution takes the scalar schedule with unpacked weights;
// 3 channels per group allow one channel per work-item. Grid: (5, 5, 1 * 6 / 1).
// The input channel base is the group's: (co / 3) * 2. Within the loop over the
// group's 2 input channels, the kh/kw nest's body is exactly one tap: a masked input
// load, a weight load and one fma into the carried accumulator.

// CHECK-LABEL: opencl.kernel @conv3x3(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[THREE:[0-9a-z_]+]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[G:[0-9a-z_]+]] = arith.divsi %{{.*}}, %[[THREE]] : i32
// CHECK-NEXT:    %[[TWO:[0-9a-z_]+]] = arith.constant 2 : i32
// CHECK-NEXT:    %ci0 = arith.muli %[[G]], %[[TWO]] : i32
// CHECK:         scf.for %ci = %{{.*}} to %[[TWO]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) : i32 {
// CHECK:           scf.for %kh = %{{.*}} to %[[THREE]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) : i32 {
// CHECK-NEXT:        scf.for %kw = %{{.*}} to %[[THREE]] step %{{.*}} iter_args(%[[ACC:[0-9a-z_]+]] = %{{.*}}) -> (f32) : i32 {
// CHECK:               %[[I:[0-9a-z_]+]] = arith.select %[[OK:[0-9a-z_]+]], %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:          %[[X:[0-9a-z_]+]] = opencl.load %input[%[[I]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:          %[[XV:[0-9a-z_]+]] = arith.select %[[OK]], %[[X]], %{{.*}} : f32
// CHECK:               %[[WT:[0-9a-z_]+]] = opencl.load %weight[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-NEXT:          %[[F:[0-9a-z_]+]] = math.fma %[[XV]], %[[WT]], %[[ACC]] : f32
// CHECK-NEXT:          scf.yield %[[F]] : f32
// CHECK-NEXT:        } {opencl.unroll = 0 : i64}
// CHECK-NEXT:        scf.yield %{{.*}} : f32
// CHECK-NEXT:      } {opencl.unroll = 0 : i64}
// CHECK-NOT:     vector<4xf32>
// CHECK:         opencl.return
// CHECK-LABEL: func.func @grouped(%x: !opencl.buffer<100xf32>) -> !opencl.buffer<150xf32> {
// CHECK-NEXT:    %[[W:[0-9a-z_]+]] = opencl.weight @w : !opencl.buffer<108xf32>
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<150xf32>
// CHECK-NEXT:    opencl.launch @conv3x3(%x, %[[W]], %[[C]]) global [5, 5, 6]
func.func @grouped(%x: tensor<1x4x5x5xf32>) -> tensor<1x6x5x5xf32> {
  %w = graph.constant dense<1.0> : tensor<6x2x3x3xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x5x5xf32>
  func.return %c : tensor<1x6x5x5xf32>
}

// -----

// A 5x5 window (25 taps, more than 3x3) is the same kh/kw loop nest, NOT marked for
// unrolling: no `opencl.unroll` anywhere in the kernel. One tap per iteration (one
// float4 weight load, four pixel loads and fmas).

// CHECK-LABEL: opencl.kernel @conv5x5_c4x4(
// CHECK-NOT:     opencl.unroll
// CHECK:         %[[K5:[0-9a-z_]+]] = arith.constant 5 : i32
// CHECK:         scf.for %ci_1 = %{{.*}} to %ci step
// CHECK:           scf.for %kh = %[[K0:[0-9a-z_]+]] to %[[K5]] step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK-NEXT:        scf.for %kw = %[[K0]] to %[[K5]] step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK:               %[[WV:[0-9a-z_]+]] = opencl.vload4 %weight
// CHECK-COUNT-4:       math.fma %{{.*}}, %[[WV]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:          scf.yield
// CHECK-NOT:     opencl.unroll
// CHECK:         opencl.return
// CHECK-LABEL: func.func @conv5x5
// CHECK:         opencl.launch @conv5x5_c4x4(%x, %{{.*}}, %{{.*}}, %{{.*}}) global [2, 6, 1]
func.func @conv5x5(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x5x5xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 2, 2, 2, 2>} : tensor<1x4x6x6xf32>, tensor<4x4x5x5xf32> -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}

// -----

// A 1x3 window is a single loop over kw (no kh loop), marked for unrolling; padding
// only left and right: the rows never leave the input, so only columns are checked.

// CHECK-LABEL: opencl.kernel @conv1x3_c4x4(
// CHECK-NOT:     scf.for %kh
// CHECK:         scf.for %ci_1 = %{{.*}} to %ci step
// CHECK-NOT:       scf.for %kh
// CHECK:           scf.for %kw = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK-NEXT:        %[[WI:[0-9a-z_]+]] = arith.addi %{{.*}}, %kw : i32
// CHECK-NEXT:        %[[WV:[0-9a-z_]+]] = opencl.vload4 %weight[%[[WI]]]
// CHECK-NOT:         arith.cmpi {{[a-z]+}}, %oy
// CHECK-COUNT-4:     math.fma %{{.*}}, %[[WV]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:        scf.yield
// CHECK-NEXT:      } {opencl.unroll = 0 : i64}
// CHECK-NEXT:      scf.yield
// CHECK-NOT:     scf.for %kh
// CHECK:         opencl.return
func.func @row_conv(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x1x3xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 0, 1, 0, 1>} : tensor<1x4x4x4xf32>, tensor<4x4x1x3xf32> -> tensor<1x4x4x4xf32>
  func.return %c : tensor<1x4x4x4xf32>
}

// -----

// OW = 5 with 4 pixels per work-item: columns past the edge are clamped to OW - 1 = 4
// for reading, and pixels 1..3 are only stored when inside. Grid: (2, 5, 1).

// CHECK-LABEL: opencl.kernel @conv1x1_c4x4(
// CHECK:         %[[OX:[0-9a-z_]+]] = arith.muli %gx, %[[FOUR:[0-9a-z_]+]] : i32
// CHECK:         arith.minsi %{{.*}}, %[[FOUR]] : i32
// CHECK:         %[[C:[0-9a-z_]+]] = arith.cmpi slt, %{{.*}}, %[[FIVE:[0-9a-z_]+]] : i32
// CHECK-NEXT:    scf.if %[[C]] {
// CHECK:         scf.if
// CHECK:         scf.if
// CHECK-NOT:     scf.if
// CHECK:         opencl.return
// CHECK-LABEL: func.func @ragged
// CHECK:         opencl.launch @conv1x1_c4x4(%x, %{{.*}}, %{{.*}}, %{{.*}}) global [2, 5, 1]
func.func @ragged(%x: tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32> {
  %w = graph.constant dense<1.0> : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w : tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x5x5xf32>
  func.return %c : tensor<1x4x5x5xf32>
}

// -----

// The lowering folds batch norms first: conv + BN + ReLU is one launch of a conv
// kernel that gained a bias, with the folded weights packed.

// CHECK-LABEL: opencl.kernel @conv1x1_c4x2_relu(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %bias: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>, %ci: i32) {
// CHECK-NOT:   opencl.kernel
// CHECK-LABEL: func.func @conv_bn_relu(%x: !opencl.buffer<16xf32>) -> !opencl.buffer<16xf32> {
// CHECK-DAG:     %[[W:[0-9a-z_]+]] = opencl.weight @conv_weight_bn_oihw4o : !opencl.buffer<16xf32>
// CHECK-DAG:     %[[B:[0-9a-z_]+]] = opencl.weight @{{.*}} : !opencl.buffer<4xf32>
// CHECK:         %[[R:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<16xf32>
// CHECK-NEXT:    %[[CI:[0-9a-z_]+]] = arith.constant 4 : i32
// CHECK-NEXT:    opencl.launch @conv1x1_c4x2_relu(%x, %[[W]], %[[B]], %[[R]], %[[CI]]) global [1, 2, 1]
// CHECK-NEXT:    func.return %[[R]]
func.func @conv_bn_relu(%x: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %w = graph.constant dense<1.0> : tensor<4x4x1x1xf32>
  %s = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = graph.conv2d %x, %w : tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x2x2xf32>
  %n = graph.batch_norm %c, %s, %s, %s, %s : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  %r = graph.relu %n : tensor<1x4x2x2xf32>
  func.return %r : tensor<1x4x2x2xf32>
}
