// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config' | filecheck %s --check-prefix=CONFIG
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' | filecheck %s --check-prefix=LAUNCH
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl' -t opencl -o %t && filecheck %s < %t

// GEMV (issue 13): a batch-1 classifier has 1000 outputs and K = 1280. On a GPU target
// (adreno-740, the default) select-kernel-config splits each output's reduction over
// k_split = 64 work-items of one work-group (few outputs, K >= 256); on the CPU profile
// k_split is 8 (what gained on PoCL: float4 loads), 1 where float4 does not apply;
// always written out because the lowering's defaults are the GPU rules.
//
// transB = 1: K is contiguous in B, one output per work-group (col = group id), local
// size [64, 1]. K % 4 == 0 and M = 1: float4 loads of A's row and B's row, item s taking
// float4s s, s + 64, ...; then a halving tree in a __local array (barriers between
// steps, the last pair added by item 0), alpha, bias and relu by item 0, one store.

// CONFIG-LABEL: func.func @classifier
// CONFIG:         %r = graph.fused {kernel_config = {k_split = 64 : i64, tile_m = 1 : i64, tile_n = 1 : i64, k_unroll = 0 : i64, local_tile = 0 : i64}} -> tensor<1x1000xf32> {
// CPU-LABEL:    func.func @classifier
// CPU:            %r = graph.fused {kernel_config = {k_split = 8 : i64, tile_m = 1 : i64, tile_n = 1 : i64, k_unroll = 0 : i64, local_tile = 0 : i64}} -> tensor<1x1000xf32> {
// LAUNCH-LABEL: func.func @classifier
// LAUNCH:         opencl.launch @gemm_ksplit_add_relu(%x, %{{.*}}, %{{.*}}, %{{.*}}) global [64000, 1] local [64, 1] :

// CHECK-LABEL: __kernel void gemm_ksplit_add_relu(
// CHECK:         __local float partial[64];
// CHECK-NEXT:    const int row = (int)get_global_id(1);
// CHECK-NEXT:    const int col = (int)get_group_id(0);
// CHECK-NEXT:    const int s = (int)get_local_id(0);
// CHECK-NEXT:    const int [[B4:v[0-9]+]] = col * 320;
// CHECK-NEXT:    float4 [[ACC:v[0-9]+]] = (float4)(0.0f);
// CHECK-NEXT:    for (int j = s; j < 320; j += 64) {
// CHECK-NEXT:        const float4 [[VA:v[0-9]+]] = ((__global const float4*)a)[j];
// CHECK-NEXT:        const float4 [[VB:v[0-9]+]] = ((__global const float4*)b)[[[B4]] + j];
// CHECK-NEXT:        [[ACC]] = fma([[VA]], [[VB]], [[ACC]]);
// CHECK-NEXT:    }
// CHECK-NEXT:    partial[s] = ([[ACC]].s0 + [[ACC]].s1) + ([[ACC]].s2 + [[ACC]].s3);
// CHECK-NEXT:    barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:    if (s < 32) {
// CHECK-NEXT:        const float [[P:v[0-9]+]] = partial[s];
// CHECK-NEXT:        const float [[Q:v[0-9]+]] = partial[s + 32];
// CHECK-NEXT:        partial[s] = [[P]] + [[Q]];
// CHECK-NEXT:    }
// CHECK-NEXT:    barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:    if (s < 16) {
// CHECK-COUNT-4: barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:    if (s == 0) {
// CHECK-NEXT:        const float [[S0:v[0-9]+]] = partial[0];
// CHECK-NEXT:        const float [[S1:v[0-9]+]] = partial[1];
// CHECK-NEXT:        const float [[BIAS:v[0-9]+]] = x0[col];
// CHECK-NEXT:        out[(row * 1000) + col] = adreno_fmax_float(([[S0]] + [[S1]]) + [[BIAS]], 0.0f);
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @classifier(%x: tensor<1x1280xf32>) -> tensor<1x1000xf32> {
  %w = graph.constant dense<0.25> : tensor<1000x1280xf32>
  %b = graph.constant dense<0.5> : tensor<1000xf32>
  %g = graph.gemm %x, %w, %b {trans_b = 1 : i64} : tensor<1x1280xf32>, tensor<1000x1280xf32>, tensor<1000xf32> -> tensor<1x1000xf32>
  %r = graph.relu %g : tensor<1x1000xf32>
  func.return %r : tensor<1x1000xf32>
}

// -----

// MatMul 1x300 by 300x20: B is [K, N], columns contiguous. Neighbouring work-items take
// neighbouring columns (c, 8 per work-group) so their loads of a row of B coalesce, and
// k_split = 32 items per column: local size [8, 32, 1]. 20 columns round up to 24: the
// last group's extra columns load column 19 (min) and never store.

// CONFIG-LABEL: func.func @matvec
// CONFIG:         %y = graph.fused {kernel_config = {k_split = 32 : i64, tile_m = 1 : i64, tile_n = 1 : i64, k_unroll = 0 : i64, local_tile = 0 : i64}} -> tensor<1x20xf32> {
// CONFIG-NEXT:      %[[Y:.+]] = graph.matmul %x, %w : (tensor<1x300xf32>, tensor<300x20xf32>) -> tensor<1x20xf32>
// CONFIG-NEXT:      graph.yield %[[Y]] : tensor<1x20xf32>
// CONFIG-NEXT:    }
// CPU-LABEL:    func.func @matvec
// CPU:            %y = graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 1 : i64, tile_n = 4 : i64, k_unroll = 0 : i64, local_tile = 0 : i64}} -> tensor<1x20xf32> {
// CPU-NEXT:         graph.matmul %x, %w :
// LAUNCH-LABEL: func.func @matvec
// LAUNCH:         opencl.launch @matmul_ksplit(%x, %{{.*}}, %{{.*}}) global [24, 32, 1] local [8, 32, 1] :

// CHECK-LABEL: __kernel void matmul_ksplit(
// CHECK:         __local float partial[256];
// CHECK-NEXT:    const int row = (int)get_group_id(1);
// CHECK-NEXT:    const int col = (int)get_global_id(0);
// CHECK-NEXT:    const int s = (int)get_local_id(1);
// CHECK-NEXT:    const int c = (int)get_local_id(0);
// CHECK:         const int [[COL:v[0-9]+]] = min(col, 19);
// CHECK:         for (int kk = s; kk < 300; kk += 32) {
// CHECK-NEXT:        const float [[VA:v[0-9]+]] = a[kk];
// CHECK-NEXT:        const float [[VB:v[0-9]+]] = b[[[COL]] + (kk * 20)];
// CHECK:         const int [[MINE:v[0-9]+]] = (s * 8) + c;
// CHECK-NEXT:    partial[[[MINE]]] = {{v[0-9]+}};
// CHECK-NEXT:    barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:    if (s < 16) {
// CHECK-NEXT:        const float {{v[0-9]+}} = partial[[[MINE]]];
// CHECK-NEXT:        const float {{v[0-9]+}} = partial[((s + 16) * 8) + c];
// CHECK:         if ((s == 0) & (col < 20)) {
// CHECK-NEXT:        const float [[S0:v[0-9]+]] = partial[c];
// CHECK-NEXT:        const float [[S1:v[0-9]+]] = partial[c + 8];
// CHECK-NEXT:        out[((z + row) * 20) + col] = [[S0]] + [[S1]];
func.func @matvec(%x: tensor<1x300xf32>) -> tensor<1x20xf32> {
  %w = graph.constant dense<0.25> : tensor<300x20xf32>
  %y = graph.matmul %x, %w : (tensor<1x300xf32>, tensor<300x20xf32>) -> tensor<1x20xf32>
  func.return %y : tensor<1x20xf32>
}

// -----

// K = 200 < 256: the serial kernel (k_split = 1), no work-group reduction.

// CONFIG-LABEL: func.func @short_k
// CONFIG:         %g = graph.fused {kernel_config = {k_split = 1 : i64, tile_m = 1 : i64, tile_n = 1 : i64, k_unroll = 0 : i64, local_tile = 0 : i64}} -> tensor<1x10xf32> {
// CONFIG-NEXT:      %[[G:.+]] = graph.gemm %x, %w {trans_b = 1 : i64} :
// CONFIG-NEXT:      graph.yield %[[G]] : tensor<1x10xf32>
// CONFIG-NEXT:    }
// CHECK-LABEL: __kernel void gemm(
// CHECK-NOT:     barrier
// CHECK:         for (int kk = 0; kk < 200; ++kk) {
func.func @short_k(%x: tensor<1x200xf32>) -> tensor<1x10xf32> {
  %w = graph.constant dense<0.25> : tensor<10x200xf32>
  %g = graph.gemm %x, %w {trans_b = 1 : i64} : tensor<1x200xf32>, tensor<10x200xf32> -> tensor<1x10xf32>
  func.return %g : tensor<1x10xf32>
}
