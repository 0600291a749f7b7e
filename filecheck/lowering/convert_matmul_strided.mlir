// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' | filecheck %s --check-prefix=LAUNCH
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -t opencl -o %t && filecheck %s < %t
// RUN: not adreno-opt %S/Inputs/matmul_strided_tile_n.mlir -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t.err 2>&1 | filecheck %s --check-prefix=ERR

// A graph.matmul with lhs_perm / rhs_perm reads its stored operand through permuted
// strides: no transpose kernel. Kernels reading a non-contiguous operand are named
// with _tA / _tB / _tAB.

// Attention scores q @ transpose(k, (0, 1, 3, 2)): B's K stride is 1, its column
// stride D = 16; each batch entry (z) is 160 floats in both operands.

// LAUNCH-LABEL: func.func @scores
// LAUNCH:         opencl.launch @matmul_tB(%q, %k, %{{.*}}) global [10, 10, 4] :

// CHECK-LABEL: __kernel void matmul_tB(
// CHECK:         const int [[BATCH:v[0-9]+]] = z * 160;
// CHECK-NEXT:    const int [[AROW:v[0-9]+]] = [[BATCH]] + (row * 16);
// CHECK-NEXT:    const int [[BCOL:v[0-9]+]] = [[BATCH]] + (col * 16);
// CHECK:         for (int kk = 0; kk < 16; ++kk) {
// CHECK-NEXT:        const float [[VB:v[0-9]+]] = b[[[BCOL]] + kk];
// CHECK-NEXT:        const float [[VA:v[0-9]+]] = a[[[AROW]] + kk];
// CHECK:         out[(((z * 10) + row) * 10) + col] =
func.func @scores(%q: tensor<1x4x10x16xf32>, %k: tensor<1x4x10x16xf32>) -> tensor<1x4x10x10xf32> {
  %s = graph.matmul %q, %k {rhs_perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x10x16xf32>, tensor<1x4x10x16xf32>) -> tensor<1x4x10x10xf32>
  func.return %s : tensor<1x4x10x10xf32>
}

// -----

// A head split [L, H, D] -> [H, L, D] on the left (batch stride D = 16, row stride
// H * D = 64) against shared weights, with a bias epilogue. A's batch and rows do not
// nest, so the batch stays a grid axis (no batch-as-rows collapse).

// LAUNCH-LABEL: func.func @heads
// LAUNCH:         opencl.launch @matmul_tA_add(%x, %{{.*}}, %{{.*}}, %{{.*}}) global [12, 10, 4] :

// CHECK-LABEL: __kernel void matmul_tA_add(
// CHECK:         const int [[AROW:v[0-9]+]] = (z * 16) + (row * 64);
// CHECK:         for (int kk = 0; kk < 16; ++kk) {
// CHECK-NEXT:        const float [[VB:v[0-9]+]] = b[col + (kk * 12)];
// CHECK-NEXT:        const float [[VA:v[0-9]+]] = a[[[AROW]] + kk];
// CHECK:         const float [[BIAS:v[0-9]+]] = x0[col];
// CHECK-NEXT:    out[(((z * 10) + row) * 12) + col] = {{v[0-9]+}} + [[BIAS]];
func.func @heads(%x: tensor<10x4x16xf32>) -> tensor<4x10x12xf32> {
  %w = graph.constant dense<0.25> : tensor<16x12xf32>
  %b = graph.constant dense<0.5> : tensor<12xf32>
  %m = graph.matmul %x, %w {lhs_perm = array<i64: 1, 0, 2>} : (tensor<10x4x16xf32>, tensor<16x12xf32>) -> tensor<4x10x12xf32>
  %y = graph.add %m, %b : (tensor<4x10x12xf32>, tensor<12xf32>) -> tensor<4x10x12xf32>
  func.return %y : tensor<4x10x12xf32>
}

// -----

// x [K = 16, 2, 5] read as [2, 5, K]: batch stride 5 and row stride 1 nest, so the
// batch becomes rows (10 rows of stride 1, K stride 10), one grid layer.

// LAUNCH-LABEL: func.func @rows
// LAUNCH:         opencl.launch @matmul_tA(%x, %{{.*}}, %{{.*}}) global [12, 10, 1] :

// CHECK-LABEL: __kernel void matmul_tA(
// CHECK:         for (int kk = 0; kk < 16; ++kk) {
// CHECK-NEXT:        const float {{v[0-9]+}} = b[{{v[0-9]+}} + (kk * 12)];
// CHECK-NEXT:        const float {{v[0-9]+}} = a[{{v[0-9]+}} + (kk * 10)];
func.func @rows(%x: tensor<16x2x5xf32>) -> tensor<2x5x12xf32> {
  %w = graph.constant dense<0.25> : tensor<16x12xf32>
  %m = graph.matmul %x, %w {lhs_perm = array<i64: 1, 2, 0>} : (tensor<16x2x5xf32>, tensor<16x12xf32>) -> tensor<2x5x12xf32>
  func.return %m : tensor<2x5x12xf32>
}

// -----

// Probabilities @ head-split values: B's columns are contiguous and its K (16) and
// batch (8) strides multiples of 4, so tile_n = 4 reads float4 rows of B in place:
// float4 index (z * 8) / 4 + col + kk * 16 / 4. K = 7: A a float at a time.

// LAUNCH-LABEL: func.func @values
// LAUNCH:         opencl.launch @matmul_2x4_tB(%p, %v, %{{.*}}) global [2, 4, 2] :

// CHECK-LABEL: __kernel void matmul_2x4_tB(
// CHECK:         const int [[B4:v[0-9]+]] = ((z * 8) / 4) + col;
// CHECK:         for (int kk = 0; kk < 7; ++kk) {
// CHECK-NEXT:        const float4 {{v[0-9]+}} = ((__global const float4*)b)[[[B4]] + (kk * 4)];
func.func @values(%p: tensor<1x2x7x7xf32>, %v: tensor<1x7x2x8xf32>) -> tensor<1x2x7x8xf32> {
  %m = graph.matmul %p, %v {rhs_perm = array<i64: 0, 2, 1, 3>, kernel_config = {k_split = 1 : i64, tile_m = 2 : i64, tile_n = 4 : i64}} : (tensor<1x2x7x7xf32>, tensor<1x7x2x8xf32>) -> tensor<1x2x7x8xf32>
  func.return %m : tensor<1x2x7x8xf32>
}

// -----

// Split-K on the scores: the transposed B is K-contiguous, so one output per work-group
// (local [4, 1, 1]), and with A K-contiguous too and every stride a multiple of 4 the
// shares are float4 loads (strides in float4s: batch 40, rows and columns 4).

// LAUNCH-LABEL: func.func @scores_split
// LAUNCH:         opencl.launch @matmul_ksplit_tB(%q, %k, %{{.*}}) global [40, 10, 4] local [4, 1, 1] :

// CHECK-LABEL: __kernel void matmul_ksplit_tB(
// CHECK:         const int [[BATCH:v[0-9]+]] = z * 40;
// CHECK-NEXT:    const int [[A4:v[0-9]+]] = [[BATCH]] + (row * 4);
// CHECK-NEXT:    const int [[B4:v[0-9]+]] = [[BATCH]] + (col * 4);
// CHECK:         for (int j = s; j < 4; j += 4) {
// CHECK-NEXT:        const float4 {{v[0-9]+}} = ((__global const float4*)a)[[[A4]] + j];
// CHECK-NEXT:        const float4 {{v[0-9]+}} = ((__global const float4*)b)[[[B4]] + j];
func.func @scores_split(%q: tensor<1x4x10x16xf32>, %k: tensor<1x4x10x16xf32>) -> tensor<1x4x10x10xf32> {
  %s = graph.matmul %q, %k {rhs_perm = array<i64: 0, 1, 3, 2>, kernel_config = {k_split = 4 : i64}} : (tensor<1x4x10x16xf32>, tensor<1x4x10x16xf32>) -> tensor<1x4x10x10xf32>
  func.return %s : tensor<1x4x10x10xf32>
}

// tile_n = 4 where B's columns are strided (Inputs/matmul_strided_tile_n.mlir): an
// error naming the op, never a wrong float4 read.
// ERR: error: 'graph.matmul' at loc("scores"): kernel_config: tile_n = 4 reads B's rows as float4s, but B is read with K stride 1, column stride 16
// ERR-SAME: use tile_n = 1
