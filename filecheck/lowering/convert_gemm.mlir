// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t && filecheck %s < %t

// Gemm with transB and a bias, then ReLU: one kernel. One work-item per output
// element, grid (N, M) = (3, 2). B is read transposed (b[col * K + kk]); the bias C
// (shape N) is the epilogue's extra input, read at x0[col], added before the ReLU.

// CHECK-LABEL: opencl.kernel @gemm_add_relu(%a: !opencl.ptr<global, f32>, %b: !opencl.ptr<global, f32>, %x0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NEXT:    %col = opencl.global_id 0
// CHECK-NEXT:    %row = opencl.global_id 1
// CHECK-NEXT:    %[[ZERO:[0-9a-z_]+]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[K:[0-9a-z_]+]] = arith.constant 16 : i32
// CHECK:         %[[ACC:[0-9a-z_]+]] = scf.for %kk = %{{.*}} to %[[K]] step %{{.*}} iter_args(%[[S:[0-9a-z_]+]] = %[[ZERO]]) -> (f32) : i32 {
// CHECK-NEXT:      %[[RA:[0-9a-z_]+]] = arith.muli %row, %[[K]] : i32
// CHECK-NEXT:      %[[IA:[0-9a-z_]+]] = arith.addi %[[RA]], %kk : i32
// CHECK-NEXT:      %[[CB:[0-9a-z_]+]] = arith.muli %col, %[[K]] : i32
// CHECK-NEXT:      %[[IB:[0-9a-z_]+]] = arith.addi %[[CB]], %kk : i32
// CHECK-NEXT:      %[[VA:[0-9a-z_]+]] = opencl.load %a[%[[IA]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:      %[[VB:[0-9a-z_]+]] = opencl.load %b[%[[IB]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:      %[[F:[0-9a-z_]+]] = math.fma %[[VA]], %[[VB]], %[[S]] : f32
// CHECK-NEXT:      scf.yield %[[F]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = opencl.load %x0[%col] : !opencl.ptr<global, f32>
// CHECK-NEXT:    %[[SUM:[0-9a-z_]+]] = arith.addf %[[ACC]], %[[C]] : f32
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.maximumf %[[SUM]], %[[ZERO]] : f32
// CHECK-NEXT:    %[[N:[0-9a-z_]+]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[ROW:[0-9a-z_]+]] = arith.muli %row, %[[N]] : i32
// CHECK-NEXT:    %[[IDX:[0-9a-z_]+]] = arith.addi %[[ROW]], %col : i32
// CHECK-NEXT:    opencl.store %[[R]], %out[%[[IDX]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:    opencl.return
// CHECK-LABEL: func.func @fc(%x: !opencl.buffer<32xf32>) -> !opencl.buffer<6xf32> {
// CHECK-DAG:     %[[B:[0-9a-z_]+]] = opencl.weight @{{.*}} : !opencl.buffer<3xf32>
// CHECK-DAG:     %[[W:[0-9a-z_]+]] = opencl.weight @{{.*}} : !opencl.buffer<48xf32>
// CHECK:         %[[OUT:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<6xf32>
// CHECK-NEXT:    opencl.launch @gemm_add_relu(%x, %[[W]], %[[B]], %[[OUT]]) global [3, 2] : (!opencl.buffer<32xf32>, !opencl.buffer<48xf32>, !opencl.buffer<3xf32>, !opencl.buffer<6xf32>)
// CHECK-NEXT:    func.return %[[OUT]] : !opencl.buffer<6xf32>
func.func @fc(%x: tensor<2x16xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<0.25> : tensor<3x16xf32>
  %b = graph.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  %g = graph.gemm %x, %w, %b {trans_b = 1 : i64} : tensor<2x16xf32>, tensor<3x16xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %r = graph.relu %g : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// transA (A is KxM: a[kk * M + row]), alpha = 0.5 on the product, beta = 2 on C;
// C is Mx1, broadcast along the row: read at x0[row].

// CHECK-LABEL: opencl.kernel @gemm_scale_add(%a: !opencl.ptr<global, f32>, %b: !opencl.ptr<global, f32>, %x0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[ACC:[0-9a-z_]+]] = scf.for %kk =
// CHECK-NEXT:      %[[M:[0-9a-z_]+]] = arith.constant 2 : i32
// CHECK-NEXT:      %[[KM:[0-9a-z_]+]] = arith.muli %kk, %[[M]] : i32
// CHECK-NEXT:      %[[IA:[0-9a-z_]+]] = arith.addi %[[KM]], %row : i32
// CHECK-NEXT:      %[[N:[0-9a-z_]+]] = arith.constant 3 : i32
// CHECK-NEXT:      %[[KN:[0-9a-z_]+]] = arith.muli %kk, %[[N]] : i32
// CHECK-NEXT:      %[[IB:[0-9a-z_]+]] = arith.addi %[[KN]], %col : i32
// CHECK-NEXT:      opencl.load %a[%[[IA]]]
// CHECK-NEXT:      opencl.load %b[%[[IB]]]
// CHECK:         }
// CHECK-NEXT:    %[[ALPHA:[0-9a-z_]+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    %[[P:[0-9a-z_]+]] = arith.mulf %[[ACC]], %[[ALPHA]] : f32
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = opencl.load %x0[%row] : !opencl.ptr<global, f32>
// CHECK-NEXT:    %[[BETA:[0-9a-z_]+]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %[[BC:[0-9a-z_]+]] = arith.mulf %[[C]], %[[BETA]] : f32
// CHECK-NEXT:    %[[SUM:[0-9a-z_]+]] = arith.addf %[[P]], %[[BC]] : f32
// CHECK:         opencl.store %[[SUM]], %out
// CHECK-LABEL: func.func @scaled(%a: !opencl.buffer<10xf32>, %b: !opencl.buffer<15xf32>, %c: !opencl.buffer<2xf32>) -> !opencl.buffer<6xf32> {
// CHECK-NEXT:    %[[G:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<6xf32>
// CHECK-NEXT:    opencl.launch @gemm_scale_add(%a, %b, %c, %[[G]]) global [3, 2]
// CHECK-NEXT:    func.return %[[G]]
func.func @scaled(%a: tensor<5x2xf32>, %b: tensor<5x3xf32>, %c: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %g = graph.gemm %a, %b, %c {trans_a = 1 : i64, alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32} : tensor<5x2xf32>, tensor<5x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}

// -----

// beta = 0: C is not read at all (no extra kernel argument, not passed).

// CHECK-LABEL: opencl.kernel @gemm(%a: !opencl.ptr<global, f32>, %b: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NOT:     arith.addf
// CHECK:         opencl.return
// CHECK-LABEL: func.func @beta_zero(
// CHECK-NEXT:    %[[G:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<12xf32>
// CHECK-NEXT:    opencl.launch @gemm(%a, %b, %[[G]]) global [3, 4] : (!opencl.buffer<20xf32>, !opencl.buffer<15xf32>, !opencl.buffer<12xf32>)
func.func @beta_zero(%a: tensor<4x5xf32>, %b: tensor<5x3xf32>, %c: tensor<3xf32>) -> tensor<4x3xf32> {
  %g = graph.gemm %a, %b, %c {beta = 0.000000e+00 : f32} : tensor<4x5xf32>, tensor<5x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  func.return %g : tensor<4x3xf32>
}

// -----

// Global average pool -> flatten -> fully connected: the reshape is free (the pool's
// buffer goes straight into the gemm).

// CHECK-LABEL: func.func @head(%x: !opencl.buffer<32xf32>) -> !opencl.buffer<2xf32> {
// CHECK:         %[[G:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<8xf32>
// CHECK-NEXT:    opencl.launch @reduce_mean(%x, %[[G]]) global [8]
// CHECK:         opencl.launch @gemm_add(%[[G]], %{{.*}}, %{{.*}}, %{{.*}}) global [2, 1]
// CHECK-NOT:     opencl.launch
func.func @head(%x: tensor<1x8x2x2xf32>) -> tensor<1x2xf32> {
  %g = graph.global_avg_pool %x : (tensor<1x8x2x2xf32>) -> tensor<1x8x1x1xf32>
  %f = graph.reshape %g : (tensor<1x8x1x1xf32>) -> tensor<1x8xf32>
  %w = graph.constant dense<1.0> : tensor<2x8xf32>
  %b = graph.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %y = graph.gemm %f, %w, %b {trans_b = 1 : i64} : tensor<1x8xf32>, tensor<2x8xf32>, tensor<2xf32> -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
