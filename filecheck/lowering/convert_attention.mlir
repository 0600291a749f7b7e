// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t && filecheck %s < %t

// graph.attention: one kernel, one work-group per (batch entry, query row). The row's
// scores live in a __local array of L floats (declared first, at kernel scope):
// scores scaled and biased, their max, exp(s - max) written back in place with the
// row's sum, then each output column as sum_j p_j * V[j, c] times 1 / sum.
// Here batch 2, M = 3, D = 4, L = 5, Dv = 6, a [M, L] bias read at m * 5 + j;
// tile = 0 (the row kernel), reduce_items absent: 1, one work-item per row, no barriers, grid [1, 6]. Keys come
// 4 per step (L = 5: the last block clamped to key L - 1), columns 1 (Dv % 4 != 0).

// CHECK-LABEL: opencl.kernel @attention_bias(%q: !opencl.ptr<global, f32>, %k: !opencl.ptr<global, f32>, %v: !opencl.ptr<global, f32>, %bias: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) attributes {reqd_work_group_size = array<i64: 1, 1, 1>} {
// CHECK-NEXT:    %scores = opencl.local_alloc {size = 5 : i64} : !opencl.ptr<local, f32>
// CHECK-NEXT:    %r = opencl.global_id 1
// CHECK-NOT:     opencl.barrier
// CHECK:         %[[MAX:[0-9a-z_]+]] = scf.for %jb = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[M:[0-9a-z_]+]] = %{{.*}}) -> (f32) : i32 {
// CHECK:           arith.minsi
// CHECK:           %[[S:[0-9a-z_]+]], %{{.*}}, %{{.*}}, %{{.*}} = scf.for %dd =
// CHECK:             opencl.load %q[
// CHECK-COUNT-4:     math.fma
// CHECK:           %[[SC:[0-9a-z_]+]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK:           %[[B:[0-9a-z_]+]] = opencl.load %bias[
// CHECK-NEXT:      %[[SB:[0-9a-z_]+]] = arith.addf %[[SC]], %[[B]] : f32
// CHECK-NEXT:      opencl.store %[[SB]], %scores[%{{.*}}] : !opencl.ptr<local, f32>
// CHECK-NEXT:      %[[NM:[0-9a-z_]+]] = arith.maximumf %[[M]], %[[SB]] : f32
// CHECK:         %[[SUM:[0-9a-z_]+]] = scf.for %j =
// CHECK-NEXT:      %[[X:[0-9a-z_]+]] = opencl.load %scores[%j] : !opencl.ptr<local, f32>
// CHECK-NEXT:      %[[D:[0-9a-z_]+]] = arith.subf %[[X]], %[[MAX]] : f32
// CHECK-NEXT:      %[[P:[0-9a-z_]+]] = math.exp %[[D]] : f32
// CHECK-NEXT:      opencl.store %[[P]], %scores[%j] : !opencl.ptr<local, f32>
// CHECK:         %inv = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:         scf.for %c =
// CHECK:           scf.for %j_1 =
// CHECK-NEXT:        opencl.load %scores[%j_1] : !opencl.ptr<local, f32>
// CHECK:             opencl.load %v[
// CHECK:           arith.mulf %{{.*}}, %inv : f32
// CHECK:           opencl.store %{{.*}}, %out[
// CHECK-NOT:     opencl.barrier
// CHECK:         opencl.return
// CHECK-LABEL: func.func @attn(
// CHECK:         %o = opencl.alloc_buffer : !opencl.buffer<36xf32>
// CHECK-NEXT:    opencl.launch @attention_bias(%q, %kt, %v, %b, %o) global [1, 6] local [1, 1]
func.func @attn(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x5xf32>, %v: tensor<2x5x6xf32>, %b: tensor<3x5xf32>) -> tensor<2x3x6xf32> {
  %o = graph.attention %q, %kt, %v, %b {kernel_config = {tile = 0 : i64}, scale = 0.5 : f32} : tensor<2x3x4xf32>, tensor<2x4x5xf32>, tensor<2x5x6xf32>, tensor<3x5xf32> -> tensor<2x3x6xf32>
  func.return %o : tensor<2x3x6xf32>
}

// -----

// reduce_items = 4 with the perms of an exported multi-head attention: q [1, 8, 2, 4]
// read as [1, 2, 8, 4] (head stride 4, row stride 8), k read as [1, 2, 4, 8] (d stride
// 1, key stride 8). Work-item l takes keys 4l.. (blocks of 4) and columns likewise; the max and the
// sum are work-group reductions (fmax, then add), then a barrier before the columns.

// CHECK-LABEL: opencl.kernel @attention_wg4(
// CHECK-NEXT:    %scores = opencl.local_alloc {size = 8 : i64} : !opencl.ptr<local, f32>
// CHECK-NEXT:    %r = opencl.global_id 1
// CHECK-NEXT:    %l = opencl.local_id 0
// CHECK:         %[[MAX:[0-9a-z_]+]] = scf.for %jb = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:         %row_max = opencl.local_alloc {size = 4 : i64} : !opencl.ptr<local, f32>
// CHECK-NEXT:    opencl.store %[[MAX]], %row_max[%l]
// CHECK:         arith.maximumf
// CHECK:         scf.for %j = %l to %{{.*}} step %{{.*}} iter_args
// CHECK:         %row_sum = opencl.local_alloc {size = 4 : i64} : !opencl.ptr<local, f32>
// CHECK:         opencl.barrier local
// CHECK:         %inv = arith.divf
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for %j_1 =
// CHECK-NOT:       opencl.barrier
// CHECK:         opencl.return
// CHECK-LABEL: func.func @attn_wg(
// CHECK:         opencl.launch @attention_wg4(%q, %k, %v, %o) global [4, 16] local [4, 1]
func.func @attn_wg(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32> {
  %o = graph.attention %q, %k, %v {kernel_config = {reduce_items = 4 : i64}, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 3, 1>, v_perm = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  func.return %o : tensor<1x2x8x4xf32>
}

// -----

// The tiled kernel: tile = 2 query rows a work-group, key_split = 2 work-items a row
// (work-item l: row l % 2, share l / 2), K/V tiles of kv_tile = 4 keys. Batch 2, M = 3
// (2 tiles of rows, the second with a row past M), D = 4, L = 5 (a ragged second key
// tile), Dv = 6. Local memory: 4 K rows of 4 + 4 V rows of 6, padded by 4 and 1 floats
// (under 8 rows a work-group) = 4 * 8 + 4 * 7 = 60 floats. Each tile: a barrier, the
// copies (K by columns: kt is [D, L], its keys contiguous; V along its rows), a
// barrier, two keys per work-item scored at once (float4 reads of local K rows; the key
// past L masked to -inf), one rescale. Then the shares combine through local memory: maxima, sums, then the
// columns of the output chunk by chunk.

// CHECK-LABEL: opencl.kernel @attention_bias_t2_s2_kv4(
// CHECK-NEXT:    %kv_tile = opencl.local_alloc {size = 60 : i64} : !opencl.ptr<local, f32>
// CHECK-NEXT:    %l = opencl.local_id 0
// CHECK:         %t = arith.remsi %l,
// CHECK:         %share = arith.divsi %l,
// CHECK:         %{{.*}} = scf.for %j0 = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK-NEXT:      opencl.barrier local
// CHECK:           scf.for %e =
// CHECK:             opencl.load %k[
// CHECK:           scf.for %e_1 =
// CHECK:             opencl.load %v[
// CHECK:           opencl.barrier local
// CHECK:           opencl.vload %kv_tile[
// CHECK:           arith.select
// CHECK:           opencl.vload %kv_tile[
// CHECK:           arith.select
// CHECK:           math.exp
// CHECK:           scf.yield
// CHECK:         opencl.barrier local
// CHECK:         opencl.barrier local
// CHECK:         %inv = arith.divf
// CHECK:         scf.for %c = %share to
// CHECK:           scf.if
// CHECK:             opencl.store %{{.*}}, %out[
// CHECK:         opencl.return
// CHECK-LABEL: func.func @attn_tiled(
// CHECK:         opencl.launch @attention_bias_t2_s2_kv4(%q, %kt, %v, %b, %o) global [4, 4] local [4, 1]
func.func @attn_tiled(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x5xf32>, %v: tensor<2x5x6xf32>, %b: tensor<3x5xf32>) -> tensor<2x3x6xf32> {
  %o = graph.attention %q, %kt, %v, %b {kernel_config = {tile = 2 : i64, key_split = 2 : i64, kv_tile = 4 : i64}, scale = 0.5 : f32} : tensor<2x3x4xf32>, tensor<2x4x5xf32>, tensor<2x5x6xf32>, tensor<3x5xf32> -> tensor<2x3x6xf32>
  func.return %o : tensor<2x3x6xf32>
}
