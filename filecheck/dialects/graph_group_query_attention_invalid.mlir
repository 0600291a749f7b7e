// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s

// graph.group_query_attention's verifier: num_heads a multiple of kv_num_heads; key with
// value and cos with sin; both caches [B, KVH, L, D]; the query [B, S, (H + 2 KVH) D]
// packed, [B, S, H D] with key and value; S new tokens within the L cache rows; one start
// per batch row; rotary tables [P, D / 2]; and the caches, written in place, function
// arguments (state) that no other op reads.

func.func @heads(%qkv: tensor<1x1x28xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x12xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 3 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x28xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x12xf32>
  func.return %o : tensor<1x1x12xf32>
}
// CHECK: 'graph.group_query_attention' num_heads = 3 must be a positive multiple of kv_num_heads = 2

// -----

func.func @no_heads(%qkv: tensor<1x1x16xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x0xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 0 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x16xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x0xf32>
  func.return %o : tensor<1x1x0xf32>
}
// CHECK: 'graph.group_query_attention' num_heads = 0 must be a positive multiple of kv_num_heads = 2

// -----

func.func @key_alone(%q: tensor<1x1x16xf32>, %k: tensor<1x1x8xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %q key %k cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x16xf32> key tensor<1x1x8xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' takes key and value together (or neither: packed)

// -----

func.func @cos_alone(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>, %cos: tensor<16x2xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start cos %cos {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> cos tensor<16x2xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' takes cos and sin together

// -----

func.func @cache_shapes(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x8x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x8x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' caches must both be [B, 2, L, D], got [1, 2, 16, 4] and [1, 2, 8, 4]

// -----

func.func @cache_heads(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x4x16x4xf32>, %pv: tensor<1x4x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x4x16x4xf32>, tensor<1x4x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' caches must both be [B, 2, L, D], got [1, 4, 16, 4] and [1, 4, 16, 4]

// -----

// Packed: the query holds q, k and v, (4 + 2 * 2) * 4 = 32 wide, not H * D = 16.
func.func @packed_width(%qkv: tensor<1x1x16xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x16xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' query must be [1, S, 32], got [1, 1, 16]

// -----

// With key and value the query is q alone: H * D = 16, not the packed 32.
func.func @unpacked_width(%q: tensor<1x1x32xf32>, %k: tensor<1x1x8xf32>, %v: tensor<1x1x8xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> key tensor<1x1x8xf32> value tensor<1x1x8xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' query must be [1, S, 16], got [1, 1, 32]

// -----

func.func @query_batch(%qkv: tensor<2x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<2x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<2x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<2x1x16xf32>
  func.return %o : tensor<2x1x16xf32>
}
// CHECK: 'graph.group_query_attention' query must be [1, S, 32], got [2, 1, 32]

// -----

func.func @key_shape(%q: tensor<1x1x16xf32>, %k: tensor<1x1x16xf32>, %v: tensor<1x1x8xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x16xf32> key tensor<1x1x16xf32> value tensor<1x1x8xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' key must be [1, 1, 8], got [1, 1, 16]

// -----

func.func @too_many_tokens(%qkv: tensor<1x20x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x20x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x20x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x20x16xf32>
  func.return %o : tensor<1x20x16xf32>
}
// CHECK: 'graph.group_query_attention' 20 new tokens do not fit a cache of 16

// -----

func.func @start_count(%qkv: tensor<2x1x32xf32>, %pk: tensor<2x2x16x4xf32>, %pv: tensor<2x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<2x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<2x1x32xf32> cache tensor<2x2x16x4xf32>, tensor<2x2x16x4xf32> at tensor<1x1xf32> -> tensor<2x1x16xf32>
  func.return %o : tensor<2x1x16xf32>
}
// CHECK: 'graph.group_query_attention' start must hold 2 positions

// -----

// Rotary over all of D: the tables are D / 2 = 2 wide (partial rotary is not supported).
func.func @cos_width(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>, %cos: tensor<16x4xf32>, %sin: tensor<16x4xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start cos %cos sin %sin {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> cos tensor<16x4xf32> sin tensor<16x4xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' cos must be [P, 2] (rotary over all of D = 4), got [16, 4]

// -----

func.func @sin_width(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>, %cos: tensor<16x2xf32>, %sin: tensor<16x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start cos %cos sin %sin {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> cos tensor<16x2xf32> sin tensor<16x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' sin must be [P, 2] (rotary over all of D = 4), got [16, 1]

// -----

func.func @output_shape(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x32xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x32xf32>
  func.return %o : tensor<1x1x32xf32>
}
// CHECK: 'graph.group_query_attention' result shape [1, 1, 32] does not match the shape implied by its operands and attributes: [1, 1, 16]

// -----

// The key cache also read by another op: whether it saw the rows before or after the write
// would depend on the order of the kernels.
func.func @cache_read(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> (tensor<1x1x16xf32>, tensor<1x2x16x4xf32>) {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  %r = graph.relu %pk : tensor<1x2x16x4xf32>
  func.return %o, %r : tensor<1x1x16xf32>, tensor<1x2x16x4xf32>
}
// CHECK: 'graph.group_query_attention' writes its caches in place, but 'graph.relu' reads its k_cache too

// -----

// Two ops writing one cache: each is the other's other reader.
func.func @cache_twice(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  %o2 = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  %r = graph.add %o, %o2 : (tensor<1x1x16xf32>, tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
  func.return %r : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' writes its caches in place, but 'graph.group_query_attention' reads its k_cache too

// -----

// The value cache computed (here a weight), not a function argument.
func.func @cache_computed(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %pv = graph.constant @pv : tensor<1x2x16x4xf32>
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' writes its caches in place: v_cache must be a function argument (state kept on the device), not a computed value

// -----

// One value as both caches: the keys and values would overwrite each other.
func.func @one_cache_twice(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pk at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' k_cache and v_cache are one value; each needs its own buffer

// -----

// Integer caches: the kernels read and write floats (f32, or f16 storage).
func.func @int_cache(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xi32>, %pv: tensor<1x2x16x4xi32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xi32>, tensor<1x2x16x4xi32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// CHECK: 'graph.group_query_attention' k_cache must be an f32 or f16 (storage) tensor, got tensor<1x2x16x4xi32>

// -----

// An odd head size: the kernels move pairs of elements.
func.func @odd_head(%qkv: tensor<1x1x24xf32>, %pk: tensor<1x2x16x3xf32>, %pv: tensor<1x2x16x3xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x12xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x24xf32> cache tensor<1x2x16x3xf32>, tensor<1x2x16x3xf32> at tensor<1x1xf32> -> tensor<1x1x12xf32>
  func.return %o : tensor<1x1x12xf32>
}
// CHECK: 'graph.group_query_attention' head size 3 must be even (its kernels move pairs of elements)
