// RUN: adreno-opt %s | adreno-opt | filecheck %s
// RUN: adreno-opt %s --print-op-generic | adreno-opt | filecheck %s

// graph.group_query_attention: a decoder's grouped-query attention over a KV cache that lives
// on the device ([B, KVH, L, D], written in place at start[b] + s before the op attends). The
// caches are function arguments (state: `graph.state` pairs each present with its past) that
// no other op reads. Round trip of its forms, and through the generic form (the operand
// segments of the optional key/value and cos/sin): q, k and v packed in one query
// ([B, S, (H + 2 KVH) D]) or key and value apart ([B, S, KVH D]); with or without the rotary
// tables cos/sin ([P, D / 2]); halves or interleaved pairs (`interleaved = 1`; 0, the
// default, is not printed).

// Packed, no rotary: decode (S = 1), 4 query heads over 2 KV heads, D = 4, L = 16.
// CHECK-LABEL: func.func @packed
// CHECK-SAME:    graph.state = {present_key = "past_key", present_value = "past_value"}
// CHECK-NEXT:    %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
// CHECK-NEXT:    func.return %o : tensor<1x1x16xf32>
func.func @packed(%qkv: tensor<1x1x32xf32>, %pk: tensor<1x2x16x4xf32>, %pv: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x16xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}

// Key and value apart, rotary by halves: prefill (S = 3), batch 2, 8 heads over 2, D = 8,
// tables of 32 positions.
// CHECK-LABEL: func.func @separate_rotary
// CHECK-NEXT:    %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start cos %cos sin %sin {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 0.353553385 : f32} : tensor<2x3x64xf32> key tensor<2x3x16xf32> value tensor<2x3x16xf32> cache tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32> at tensor<2x1xf32> cos tensor<32x4xf32> sin tensor<32x4xf32> -> tensor<2x3x64xf32>
// CHECK-NEXT:    func.return %o : tensor<2x3x64xf32>
func.func @separate_rotary(%q: tensor<2x3x64xf32>, %k: tensor<2x3x16xf32>, %v: tensor<2x3x16xf32>, %pk: tensor<2x2x32x8xf32>, %pv: tensor<2x2x32x8xf32>, %start: tensor<2x1xf32>, %cos: tensor<32x4xf32>, %sin: tensor<32x4xf32>) -> tensor<2x3x64xf32> attributes {graph.inputs = ["q", "k", "v", "past_key", "past_value", "start", "cos", "sin"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start cos %cos sin %sin {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 0.353553385 : f32} : tensor<2x3x64xf32> key tensor<2x3x16xf32> value tensor<2x3x16xf32> cache tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32> at tensor<2x1xf32> cos tensor<32x4xf32> sin tensor<32x4xf32> -> tensor<2x3x64xf32>
  func.return %o : tensor<2x3x64xf32>
}

// Packed, rotary on interleaved pairs, the tables weights (graph.constant), the start
// computed (as the importer does: seqlens_k + 1 - S).
// CHECK-LABEL: func.func @packed_interleaved
// CHECK:         %cos = graph.constant @cos : tensor<16x2xf32>
// CHECK-NEXT:    %sin = graph.constant @sin : tensor<16x2xf32>
// CHECK:         %start = graph.add %seqlens, %offset : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    %o = graph.group_query_attention %qkv cache %pk, %pv at %start cos %cos sin %sin {num_heads = 2 : i64, kv_num_heads = 1 : i64, scale = 5.000000e-01 : f32, interleaved = 1 : i64} : tensor<1x2x16xf32> cache tensor<1x1x16x4xf32>, tensor<1x1x16x4xf32> at tensor<1x1xf32> cos tensor<16x2xf32> sin tensor<16x2xf32> -> tensor<1x2x8xf32>
// CHECK-NEXT:    func.return %o : tensor<1x2x8xf32>
func.func @packed_interleaved(%qkv: tensor<1x2x16xf32>, %pk: tensor<1x1x16x4xf32>, %pv: tensor<1x1x16x4xf32>, %seqlens: tensor<1x1xf32>) -> tensor<1x2x8xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "seqlens_k"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %cos = graph.constant @cos : tensor<16x2xf32>
  %sin = graph.constant @sin : tensor<16x2xf32>
  %offset = graph.constant @offset : tensor<1x1xf32>
  %start = graph.add %seqlens, %offset : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start cos %cos sin %sin {num_heads = 2 : i64, kv_num_heads = 1 : i64, scale = 5.000000e-01 : f32, interleaved = 1 : i64} : tensor<1x2x16xf32> cache tensor<1x1x16x4xf32>, tensor<1x1x16x4xf32> at tensor<1x1xf32> cos tensor<16x2xf32> sin tensor<16x2xf32> -> tensor<1x2x8xf32>
  func.return %o : tensor<1x2x8xf32>
}

// Key and value apart, no rotary, as many KV heads as query heads (plain multi-head), the
// whole cache filled at once (S = L).
// CHECK-LABEL: func.func @separate_mha
// CHECK-NEXT:    %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start {num_heads = 2 : i64, kv_num_heads = 2 : i64, scale = 1.000000e+00 : f32} : tensor<1x8x8xf32> key tensor<1x8x8xf32> value tensor<1x8x8xf32> cache tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> at tensor<1x1xf32> -> tensor<1x8x8xf32>
func.func @separate_mha(%q: tensor<1x8x8xf32>, %k: tensor<1x8x8xf32>, %v: tensor<1x8x8xf32>, %pk: tensor<1x2x8x4xf32>, %pv: tensor<1x2x8x4xf32>, %start: tensor<1x1xf32>) -> tensor<1x8x8xf32> attributes {graph.inputs = ["q", "k", "v", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start {num_heads = 2 : i64, kv_num_heads = 2 : i64, scale = 1.000000e+00 : f32} : tensor<1x8x8xf32> key tensor<1x8x8xf32> value tensor<1x8x8xf32> cache tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> at tensor<1x1xf32> -> tensor<1x8x8xf32>
  func.return %o : tensor<1x8x8xf32>
}
