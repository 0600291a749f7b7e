// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t && filecheck %s < %t

// Max pool 3x3, stride 2, padding 1, ceil mode (6x6 -> 4x4), with a fused ReLU.
// One work-item per output element, grid (OW, OH, N * C); the window starts at
// (oy * 2 - 1, ox * 2 - 1), starts from -inf and skips taps outside the input.
// The window is a kh/kw loop nest carrying the running max, both loops marked
// `opencl.unroll = 0` (unrolled fully by the OpenCL compiler): its body is one tap,
// one masked load and one max, and there are no other input loads. The max is
// arith.maximumf (NaN if either operand is: a window holding a NaN is NaN, as in
// PyTorch), selected only for taps inside the input, so padding never wins.

// CHECK-LABEL: opencl.kernel @maxpool3x3_relu(%input: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[TWO:[0-9a-z_]+]] = arith.constant 2 : i32
// CHECK-NEXT:    %[[SY:[0-9a-z_]+]] = arith.muli %oy, %[[TWO]] : i32
// CHECK-NEXT:    %[[ONE:[0-9a-z_]+]] = arith.constant 1 : i32
// CHECK-NEXT:    %y0 = arith.subi %[[SY]], %[[ONE]] : i32
// CHECK-NEXT:    %[[SX:[0-9a-z_]+]] = arith.muli %ox, %[[TWO]] : i32
// CHECK-NEXT:    %x0 = arith.subi %[[SX]], %[[ONE]] : i32
// CHECK:         %[[NINF:[0-9a-z_]+]] = arith.constant 0xff800000 : f32
// CHECK-NOT:     opencl.load %input
// CHECK:         %[[ACC:[0-9a-z_]+]] = scf.for %kh = %[[K0:[0-9a-z_]+]] to %[[K3:[0-9a-z_]+]] step %{{.*}} iter_args(%[[A:[0-9a-z_]+]] = %[[NINF]]) -> (f32) : i32 {
// CHECK-NEXT:      %[[ROW:[0-9a-z_]+]] = scf.for %kw = %[[K0]] to %[[K3]] step %{{.*}} iter_args(%[[M0:[0-9a-z_]+]] = %[[A]]) -> (f32) : i32 {
// CHECK-NEXT:        %[[IY:[0-9a-z_]+]] = arith.addi %y0, %kh : i32
// CHECK-NEXT:        %[[IX:[0-9a-z_]+]] = arith.addi %x0, %kw : i32
// CHECK:             %{{.*}} = arith.muli %[[IY]], %{{.*}} : i32
// CHECK:             %[[IDX:[0-9a-z_]+]] = arith.select %[[OK:[0-9a-z_]+]], %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:        %[[V:[0-9a-z_]+]] = opencl.load %input[%[[IDX]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:        %[[M:[0-9a-z_]+]] = arith.maximumf %[[M0]], %[[V]] : f32
// CHECK-NEXT:        %[[N:[0-9a-z_]+]] = arith.select %[[OK]], %[[M]], %[[M0]] : f32
// CHECK-NEXT:        scf.yield %[[N]] : f32
// CHECK-NEXT:      } {opencl.unroll = 0 : i64}
// CHECK-NEXT:      scf.yield %[[ROW]] : f32
// CHECK-NEXT:    } {opencl.unroll = 0 : i64}
// CHECK-NOT:     opencl.load %input
// CHECK:         %[[ZERO:[0-9a-z_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.maximumf %[[ACC]], %[[ZERO]] : f32
// CHECK:         opencl.store %[[R]], %out
// CHECK-LABEL: func.func @max_ceil(%x: !opencl.buffer<144xf32>) -> !opencl.buffer<64xf32> {
// CHECK-NEXT:    %[[P:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<64xf32>
// CHECK-NEXT:    opencl.launch @maxpool3x3_relu(%x, %[[P]]) global [4, 4, 4] : (!opencl.buffer<144xf32>, !opencl.buffer<64xf32>)
// CHECK-NEXT:    func.return %[[P]]
func.func @max_ceil(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x4x4xf32> {
  %p = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x4x6x6xf32>) -> tensor<1x4x4x4xf32>
  %r = graph.relu %p : tensor<1x4x4x4xf32>
  func.return %r : tensor<1x4x4x4xf32>
}

// -----

// Average pool with count_include_pad and bottom/right padding 1 (5x5 -> 3x3): the
// 2x2 window is a kh/kw loop nest marked for unrolling, summing one masked tap per
// iteration; the divisor, after the loops, is the window clipped to the padded input,
// min(y0 + 2, 5 + 1) - y0 times min(x0 + 2, 5 + 1) - x0.

// CHECK-LABEL: opencl.kernel @avgpool2x2(%input: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[SUM:[0-9a-z_]+]] = scf.for %kh = %{{.*}} to %[[K:[0-9a-z_]+]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) : i32 {
// CHECK-NEXT:      %[[ROW:[0-9a-z_]+]] = scf.for %kw = %{{.*}} to %[[K]] step %{{.*}} iter_args(%[[S:[0-9a-z_]+]] = %{{.*}}) -> (f32) : i32 {
// CHECK:             %[[V:[0-9a-z_]+]] = opencl.load %input
// CHECK-NEXT:        %[[VV:[0-9a-z_]+]] = arith.select %{{.*}}, %[[V]], %{{.*}} : f32
// CHECK-NEXT:        %[[T:[0-9a-z_]+]] = arith.addf %[[S]], %[[VV]] : f32
// CHECK-NEXT:        scf.yield %[[T]] : f32
// CHECK-NEXT:      } {opencl.unroll = 0 : i64}
// CHECK-NEXT:      scf.yield %[[ROW]] : f32
// CHECK-NEXT:    } {opencl.unroll = 0 : i64}
// CHECK-NEXT:    %[[Y1:[0-9a-z_]+]] = arith.addi %[[Y0:[0-9a-z_]+]], %[[K]] : i32
// CHECK-NEXT:    %[[HP:[0-9a-z_]+]] = arith.constant 6 : i32
// CHECK-NEXT:    %[[YE:[0-9a-z_]+]] = arith.minsi %[[Y1]], %[[HP]] : i32
// CHECK-NEXT:    %[[X1:[0-9a-z_]+]] = arith.addi %[[X0:[0-9a-z_]+]], %[[K]] : i32
// CHECK-NEXT:    %[[XE:[0-9a-z_]+]] = arith.minsi %[[X1]], %[[HP]] : i32
// CHECK-NEXT:    %[[DY:[0-9a-z_]+]] = arith.subi %[[YE]], %[[Y0]] : i32
// CHECK-NEXT:    %[[DX:[0-9a-z_]+]] = arith.subi %[[XE]], %[[X0]] : i32
// CHECK-NEXT:    %[[CNT:[0-9a-z_]+]] = arith.muli %[[DY]], %[[DX]] : i32
// CHECK-NEXT:    %[[F:[0-9a-z_]+]] = arith.sitofp %[[CNT]] : i32 to f32
// CHECK-NEXT:    %[[AVG:[0-9a-z_]+]] = arith.divf %[[SUM]], %[[F]] : f32
// CHECK:         opencl.store %[[AVG]], %out
// CHECK-LABEL: func.func @avg_include_pad
// CHECK:         opencl.launch @avgpool2x2(%x, %{{.*}}) global [3, 3, 6] : (!opencl.buffer<150xf32>, !opencl.buffer<54xf32>)
func.func @avg_include_pad(%x: tensor<2x3x5x5xf32>) -> tensor<2x3x3x3xf32> {
  %p = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, count_include_pad = 1 : i64} : (tensor<2x3x5x5xf32>) -> tensor<2x3x3x3xf32>
  func.return %p : tensor<2x3x3x3xf32>
}

// -----

// Ceil mode without padding (5x5 -> 3x3): the last window hangs over the edge (the
// 2x2 loop nest, marked for unrolling, masks its taps) and the divisor counts only
// the taps inside: (min(y0 + 2, 5) - max(y0, 0)) * (...).

// CHECK-LABEL: opencl.kernel @avgpool2x2(
// CHECK:         %[[SUM:[0-9a-z_]+]] = scf.for %kh = {{.*}} -> (f32) : i32 {
// CHECK-NEXT:      scf.for %kw = {{.*}} -> (f32) : i32 {
// CHECK-COUNT-1:     opencl.load %input
// CHECK-NOT:         opencl.load %input
// CHECK:             scf.yield
// CHECK-NEXT:      } {opencl.unroll = 0 : i64}
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    } {opencl.unroll = 0 : i64}
// CHECK-NEXT:    %[[Y1:[0-9a-z_]+]] = arith.addi %[[Y0:[0-9a-z_]+]], %{{.*}} : i32
// CHECK-NEXT:    %[[H:[0-9a-z_]+]] = arith.constant 5 : i32
// CHECK-NEXT:    %[[YE:[0-9a-z_]+]] = arith.minsi %[[Y1]], %[[H]] : i32
// CHECK-NEXT:    %[[X1:[0-9a-z_]+]] = arith.addi %[[X0:[0-9a-z_]+]], %{{.*}} : i32
// CHECK-NEXT:    %[[XE:[0-9a-z_]+]] = arith.minsi %[[X1]], %[[H]] : i32
// CHECK-NEXT:    %[[YS:[0-9a-z_]+]] = arith.maxsi %[[Y0]], %[[ZERO:[0-9a-z_]+]] : i32
// CHECK-NEXT:    %[[DY:[0-9a-z_]+]] = arith.subi %[[YE]], %[[YS]] : i32
// CHECK-NEXT:    %[[XS:[0-9a-z_]+]] = arith.maxsi %[[X0]], %[[ZERO]] : i32
// CHECK-NEXT:    %[[DX:[0-9a-z_]+]] = arith.subi %[[XE]], %[[XS]] : i32
// CHECK-NEXT:    %[[CNT:[0-9a-z_]+]] = arith.muli %[[DY]], %[[DX]] : i32
// CHECK-NEXT:    %[[F:[0-9a-z_]+]] = arith.sitofp %[[CNT]] : i32 to f32
// CHECK-NEXT:    arith.divf %[[SUM]], %[[F]] : f32
// CHECK-LABEL: func.func @avg_ceil
// CHECK:         opencl.launch @avgpool2x2(%x, %{{.*}}) global [3, 3, 6]
func.func @avg_ceil(%x: tensor<2x3x5x5xf32>) -> tensor<2x3x3x3xf32> {
  %p = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<2x3x5x5xf32>) -> tensor<2x3x3x3xf32>
  func.return %p : tensor<2x3x3x3xf32>
}

// -----

// Global average pool: one work-item per (n, c), a loop over the 16 pixels of the
// plane, times 1/16. The reshape that follows costs nothing (same buffer returned).

// CHECK-LABEL: opencl.kernel @reduce_mean(%input: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[N16:[0-9a-z_]+]] = arith.constant 16 : i32
// CHECK:         %[[S:[0-9a-z_]+]] = scf.for %r = %{{.*}} to %[[N16]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) : i32 {
// CHECK:           opencl.load %input
// CHECK:           arith.addf
// CHECK:         }
// CHECK-NEXT:    %[[INV:[0-9a-z_]+]] = arith.constant 6.250000e-02 : f32
// CHECK-NEXT:    %[[M:[0-9a-z_]+]] = arith.mulf %[[S]], %[[INV]] : f32
// CHECK-NEXT:    opencl.store %[[M]], %out[%i] : !opencl.ptr<global, f32>
// CHECK-LABEL: func.func @gap(%x: !opencl.buffer<96xf32>) -> !opencl.buffer<6xf32> {
// CHECK-NEXT:    %[[G:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<6xf32>
// CHECK-NEXT:    opencl.launch @reduce_mean(%x, %[[G]]) global [6] : (!opencl.buffer<96xf32>, !opencl.buffer<6xf32>)
// CHECK-NEXT:    func.return %[[G]] : !opencl.buffer<6xf32>
func.func @gap(%x: tensor<2x3x4x4xf32>) -> tensor<2x3xf32> {
  %g = graph.global_avg_pool %x : (tensor<2x3x4x4xf32>) -> tensor<2x3x1x1xf32>
  %f = graph.reshape %g : (tensor<2x3x1x1xf32>) -> tensor<2x3xf32>
  func.return %f : tensor<2x3xf32>
}

// -----

// Windows larger than 3x3 (here 4x4, 16 taps) are the same kh/kw loop nest, NOT
// marked for unrolling: no `opencl.unroll` in the kernel, one load in the body.

// CHECK-LABEL: opencl.kernel @maxpool4x4(
// CHECK-NOT:     opencl.unroll
// CHECK:         scf.for %kh = %{{.*}} to %[[K4:[0-9a-z_]+]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) : i32 {
// CHECK-NEXT:      scf.for %kw = %{{.*}} to %[[K4]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) : i32 {
// CHECK-COUNT-1:     opencl.load %input
// CHECK-NOT:     opencl.load
// CHECK-NOT:     opencl.unroll
// CHECK:         opencl.return
// CHECK-LABEL: func.func @big_window
// CHECK:         opencl.launch @maxpool4x4(%x, %{{.*}}) global [2, 2, 2]
func.func @big_window(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x2x2xf32> {
  %p = graph.max_pool %x {kernel_shape = array<i64: 4, 4>, strides = array<i64: 4, 4>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x2x2xf32>
  func.return %p : tensor<1x2x2x2xf32>
}
