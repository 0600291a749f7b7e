// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt | adreno-opt | filecheck %s
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt --print-op-generic | adreno-opt | filecheck %s
// RUN: sed -e '/^\/\/ -----/,$d' %s | adreno-opt --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: adreno-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ERR

// graph.group_query_attention with its KV caches stored in halves (f16 tensors, what
// `kv-cache-storage{element=f16}` makes of the f32 caches; the kernels still compute in
// f32). The caches' element type is the storage, f32 or f16, and both caches have the same
// one; every other operand (query, key, value, start, cos, sin) is still f32. The first
// chunk round-trips (parse, print, parse again; and through the generic form); the chunks
// after it must fail to verify with the messages below (filecheck/dialects/
// graph_group_query_attention_invalid.mlir has the f32 cases).

// Packed, no rotary: decode, 4 query heads over 2 KV heads, D = 4, L = 16.
// CHECK-LABEL: func.func @packed_f16(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x16x4xf16>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32>
// CHECK-SAME:    graph.state = {present_key = "past_key", present_value = "past_value"}
// CHECK-NEXT:    %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
// CHECK-NEXT:    func.return %o : tensor<1x1x16xf32>
func.func @packed_f16(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x16x4xf16>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}

// Key and value apart, rotary by halves (f32 tables), prefill of 3 tokens, batch 2.
// CHECK-LABEL: func.func @separate_rotary_f16
// CHECK-NEXT:    %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start cos %cos sin %sin {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 0.353553385 : f32} : tensor<2x3x64xf32> key tensor<2x3x16xf32> value tensor<2x3x16xf32> cache tensor<2x2x32x8xf16>, tensor<2x2x32x8xf16> at tensor<2x1xf32> cos tensor<32x4xf32> sin tensor<32x4xf32> -> tensor<2x3x64xf32>
// CHECK-NEXT:    func.return %o : tensor<2x3x64xf32>
func.func @separate_rotary_f16(%q: tensor<2x3x64xf32>, %k: tensor<2x3x16xf32>, %v: tensor<2x3x16xf32>, %pk: tensor<2x2x32x8xf16>, %pv: tensor<2x2x32x8xf16>, %start: tensor<2x1xf32>, %cos: tensor<32x4xf32>, %sin: tensor<32x4xf32>) -> tensor<2x3x64xf32> attributes {graph.inputs = ["q", "k", "v", "past_key", "past_value", "start", "cos", "sin"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start cos %cos sin %sin {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 0.353553385 : f32} : tensor<2x3x64xf32> key tensor<2x3x16xf32> value tensor<2x3x16xf32> cache tensor<2x2x32x8xf16>, tensor<2x2x32x8xf16> at tensor<2x1xf32> cos tensor<32x4xf32> sin tensor<32x4xf32> -> tensor<2x3x64xf32>
  func.return %o : tensor<2x3x64xf32>
}

// In the generic form the f16 caches are the 2nd and 3rd operand segments' types.
// GENERIC-LABEL: sym_name = "packed_f16"
// GENERIC:       %o = "graph.group_query_attention"(%qkv, %pk, %pv, %start) <{num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32, interleaved = 0 : i64}> {operandSegmentSizes = array<i32: 1, 0, 0, 1, 1, 1, 0, 0>} : (tensor<1x1x32xf32>, tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16>, tensor<1x1xf32>) -> tensor<1x1x16xf32>
// GENERIC-LABEL: sym_name = "separate_rotary_f16"
// GENERIC:       %o = "graph.group_query_attention"(%q, %k, %v, %pk, %pv, %start, %cos, %sin) <{{.*}}> {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>} : (tensor<2x3x64xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x2x32x8xf16>, tensor<2x2x32x8xf16>, tensor<2x1xf32>, tensor<32x4xf32>, tensor<32x4xf32>) -> tensor<2x3x64xf32>

// -----

// One storage for both caches: an f32 key cache with an f16 value cache ...
func.func @mixed(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf16>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' k_cache and v_cache must have one storage type, got tensor<1x2x16x4xf32> and tensor<1x2x16x4xf16>

// -----

// ... or the other way round.
func.func @mixed_swapped(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' k_cache and v_cache must have one storage type, got tensor<1x2x16x4xf16> and tensor<1x2x16x4xf32>

// -----

// Integer caches: the kernels read and write floats (f32, or halves widened to f32).
func.func @int_cache(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xi32>, %pv: tensor<1x2x16x4xi32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xi32>, tensor<1x2x16x4xi32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' k_cache must be an f32 or f16 (storage) tensor, got tensor<1x2x16x4xi32>

// -----

// The element type is checked before the two are compared: an f16 key cache with an i32
// value cache names the value cache.
func.func @int_value_cache(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x16x4xi32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xi32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' v_cache must be an f32 or f16 (storage) tensor, got tensor<1x2x16x4xi32>

// -----

// bf16 is no storage the kernels know.
func.func @bf16_cache(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xbf16>, %pv: tensor<1x2x16x4xbf16>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xbf16>, tensor<1x2x16x4xbf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' k_cache must be an f32 or f16 (storage) tensor, got tensor<1x2x16x4xbf16>

// -----

// Only the caches may be halves: an f16 query (with f16 caches) is refused.
func.func @f16_query(%qkv: tensor<1x1x32xf16>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x16x4xf16>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf16> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' query must be an f32 tensor, got tensor<1x1x32xf16>

// -----

func.func @f16_start(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x16x4xf16>, %start: tensor<1x1xf16>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16> at tensor<1x1xf16> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' start must be an f32 tensor, got tensor<1x1xf16>

// -----

// f16 caches are checked like f32 ones: both [B, KVH, L, D].
func.func @f16_cache_shapes(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x8x4xf16>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x8x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}
// ERR: 'graph.group_query_attention' caches must both be [B, 2, L, D], got [1, 2, 16, 4] and [1, 2, 8, 4]

// -----

// ... and still written in place: no other reader of an f16 cache either.
func.func @f16_cache_read(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf16>, %pv: tensor<1x2x16x4xf16>, %start: tensor<1x1xf32>) -> (tensor<1x1x16xf32>, tensor<1x2x16x4xf16>) {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  %r = graph.relu %pv : tensor<1x2x16x4xf16>
  func.return %o, %r : tensor<1x1x16xf32>, tensor<1x2x16x4xf16>
}
// ERR: 'graph.group_query_attention' writes its caches in place, but 'graph.relu' reads its v_cache too
