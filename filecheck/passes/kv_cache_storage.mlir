// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16}' | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16}' | adreno-opt --split-input-file | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16}' --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16}' --print-op-generic | adreno-opt --split-input-file | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16},kv-cache-storage{element=f16}' | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16}' | adreno-opt --split-input-file -p 'kv-cache-storage{element=f16}' | filecheck %s
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f32}' | filecheck %s --check-prefix=F32
// RUN: adreno-opt %s --split-input-file -p kv-cache-storage | filecheck %s --check-prefix=F32
// RUN: adreno-opt %s --split-input-file -o %t.plain
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f32}' -o %t.f32 && diff %t.plain %t.f32
// RUN: adreno-opt %s --split-input-file -p kv-cache-storage -o %t.default && diff %t.plain %t.default
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16},graph-fuse,select-kernel-config{target=nvidia-h200},convert-graph-to-opencl' | filecheck %s --check-prefix=LOWER
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16},graph-fuse,select-kernel-config{target=nvidia-h200},convert-graph-to-opencl' -t opencl | filecheck %s --check-prefix=CL
// RUN: adreno-opt %s --split-input-file -p 'kv-cache-storage{element=f16},graph-fuse,select-kernel-config{target=nvidia-h200},convert-graph-to-opencl' -t opencl | filecheck %s --check-prefix=NOFP16
// RUN: not adreno-opt %s --split-input-file -p 'kv-cache-storage{element=bf16}' 2>&1 | filecheck %s --check-prefix=BAD

// kv-cache-storage{element=f16} (passes/kv_cache_storage.py): a decoder's KV caches kept in
// halves on the device. The k_cache / v_cache operands of every graph.group_query_attention
// (function arguments: state, `graph.state`) are retyped from f32 to f16 tensors, and the
// function's signature with them; every other argument, the op's other operands, its
// result and the function's results stay f32. The attributes (graph.inputs, graph.state)
// are kept as they were.
//
// The RUN lines: the f16 result (prefix CHECK) round-trips (the second RUN parses the
// printed IR; the fourth its generic form, whose function_type, prefix GENERIC, is the
// signature the pass rewrote, not only the block's argument types), and the pass is
// idempotent (applied twice in one pipeline, and again to its printed output: the caches
// are f16 already, nothing changes). element=f32, and the pass without options (f32 is the
// default), leave the module as it is: prefix F32 checks the f32 signatures, and `diff`
// compares the output with the plain parse-and-print of this file. Prefix LOWER lowers the
// f16 result for the H200: the kernels that touch a cache take `!opencl.ptr<global, f16>`
// cache arguments and are named with a `_f16` suffix (the writes are opencl.vstore_half of
// f32 values, the reads opencl.vload_half widening to f32); the combine of the splits reads
// only f32 partials and keeps its name; the host function's cache buffers are f16. Prefix
// CL prints it as OpenCL C: `__global half*` caches (const where only read), vload_half4 /
// vstore_half (OpenCL 1.2 core); prefix NOFP16 checks that there is no cl_khr_fp16 pragma
// anywhere. Prefix BAD checks that an element type other than f32 or f16 is refused, naming
// the option's choices.

// BAD: error: kv-cache-storage: option element must be a string, one of f32, f16; got 'bf16'
// BAD-NOT: Traceback

// NOFP16-NOT:   cl_khr_fp16

// Decode, packed q/k/v, rotary (the tables are weights: f32), 8 heads over 2 KV heads,
// D = 16, L = 256 (filecheck/lowering/convert_gqa.mlir's @decode).
// CHECK-LABEL:  func.func @decode(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x256x16xf16>, %pv: tensor<1x2x256x16xf16>, %seqlens: tensor<1x1xf32>) -> tensor<1x1x128xf32>
// CHECK-SAME:     attributes {graph.inputs = ["qkv", "past_key", "past_value", "seqlens_k"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}}
// CHECK-NEXT:     %cos = graph.constant @cos : tensor<256x8xf32>
// CHECK-NEXT:     %sin = graph.constant @sin : tensor<256x8xf32>
// CHECK-NEXT:     %o = graph.group_query_attention %qkv cache %pk, %pv at %seqlens cos %cos sin %sin {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32} : tensor<1x1x192xf32> cache tensor<1x2x256x16xf16>, tensor<1x2x256x16xf16> at tensor<1x1xf32> cos tensor<256x8xf32> sin tensor<256x8xf32> -> tensor<1x1x128xf32>
// CHECK-NEXT:     func.return %o : tensor<1x1x128xf32>

// GENERIC:      sym_name = "decode", function_type = (tensor<1x1x192xf32>, tensor<1x2x256x16xf16>, tensor<1x2x256x16xf16>, tensor<1x1xf32>) -> tensor<1x1x128xf32>
// GENERIC:        ^bb0(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x256x16xf16>, %pv: tensor<1x2x256x16xf16>, %seqlens: tensor<1x1xf32>):

// F32-LABEL:    func.func @decode(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %seqlens: tensor<1x1xf32>) -> tensor<1x1x128xf32>
// F32:            graph.group_query_attention %qkv cache %pk, %pv at %seqlens cos %cos sin %sin {{.*}} : tensor<1x1x192xf32> cache tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> at

// LOWER-LABEL:  opencl.kernel @gqa_update_rotary_f16(%qkv: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %cos: !opencl.ptr<global, f32>, %sin: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f16>, %v_cache: !opencl.ptr<global, f16>, %out: !opencl.ptr<global, f32>) {
// LOWER:          opencl.load %cos[
// LOWER:          opencl.vstore_half %{{.*}}, %k_cache[%{{.*}}] : f32, !opencl.ptr<global, f16>
// LOWER:          opencl.vstore_half %{{.*}}, %v_cache[%{{.*}}] : f32, !opencl.ptr<global, f16>
// LOWER-LABEL:  opencl.kernel @gqa_attention_g4_split8_wg64_f16(%q: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f16>, %v_cache: !opencl.ptr<global, f16>, %start: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) attributes {reqd_work_group_size = array<i64: 64, 1, 1>} {
// LOWER-NOT:      opencl.vstore_half
// LOWER:          opencl.vload_half %k_cache[%{{.*}}] : !opencl.ptr<global, f16> -> vector<4xf32>
// LOWER-NOT:      opencl.vstore_half
// LOWER:          opencl.vload_half %v_cache[%{{.*}}] : !opencl.ptr<global, f16> -> vector<4xf32>
// LOWER-NOT:      opencl.vstore_half
// LOWER-LABEL:  opencl.kernel @gqa_combine_split8(%partial: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// LOWER-LABEL:  func.func @decode(%qkv: !opencl.buffer<192xf32>, %pk: !opencl.buffer<8192xf16>, %pv: !opencl.buffer<8192xf16>, %seqlens: !opencl.buffer<1xf32>) -> !opencl.buffer<128xf32>
// LOWER-SAME:     graph.state = {present_key = "past_key", present_value = "past_value"}
// LOWER-NEXT:     %q_rotated = opencl.alloc_buffer : !opencl.buffer<128xf32>
// LOWER-NEXT:     %cos = opencl.weight @cos : !opencl.buffer<2048xf32>
// LOWER-NEXT:     %sin = opencl.weight @sin : !opencl.buffer<2048xf32>
// LOWER-NEXT:     opencl.launch @gqa_update_rotary_f16(%qkv, %seqlens, %cos, %sin, %pk, %pv, %q_rotated) global [96] : (!opencl.buffer<192xf32>, !opencl.buffer<1xf32>, !opencl.buffer<2048xf32>, !opencl.buffer<2048xf32>, !opencl.buffer<8192xf16>, !opencl.buffer<8192xf16>, !opencl.buffer<128xf32>)
// LOWER-NEXT:     %o = opencl.alloc_buffer : !opencl.buffer<128xf32>
// LOWER-NEXT:     %attention_splits = opencl.alloc_buffer : !opencl.buffer<1152xf32>
// LOWER-NEXT:     opencl.launch @gqa_attention_g4_split8_wg64_f16(%q_rotated, %pk, %pv, %seqlens, %attention_splits) global [64, 2, 8] local [64, 1, 1] : (!opencl.buffer<128xf32>, !opencl.buffer<8192xf16>, !opencl.buffer<8192xf16>, !opencl.buffer<1xf32>, !opencl.buffer<1152xf32>)
// LOWER-NEXT:     opencl.launch @gqa_combine_split8(%attention_splits, %seqlens, %o) global [16, 8] :
// LOWER-NEXT:     func.return %o : !opencl.buffer<128xf32>

// As OpenCL C: the update writes the caches (not const), the attention only reads them
// (const); halves move with vload_half4 / vstore_half, no cl_khr_fp16.
// CL-LABEL:     __kernel void gqa_update_rotary_f16(
// CL:               __global half* k_cache,
// CL-NEXT:          __global half* v_cache,
// CL:               vstore_half({{.*}}, 0, k_cache + {{.*}});
// CL:               vstore_half({{.*}}, 0, v_cache + {{.*}});
// CL-LABEL:     __kernel void gqa_attention_g4_split8_wg64_f16(
// CL:               __global const half* k_cache,
// CL-NEXT:          __global const half* v_cache,
// CL:               const float4 {{.*}} = vload_half4(0, k_cache + {{.*}});
// CL:               const float4 {{.*}} = vload_half4(0, v_cache + {{.*}});
// CL-LABEL:     __kernel void gqa_combine_split8(
// CL-NOT:           half
func.func @decode(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %seqlens: tensor<1x1xf32>) -> tensor<1x1x128xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "seqlens_k"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %cos = graph.constant @cos : tensor<256x8xf32>
  %sin = graph.constant @sin : tensor<256x8xf32>
  %o = graph.group_query_attention %qkv cache %pk, %pv at %seqlens cos %cos sin %sin {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32} : tensor<1x1x192xf32> cache tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> at tensor<1x1xf32> cos tensor<256x8xf32> sin tensor<256x8xf32> -> tensor<1x1x128xf32>
  func.return %o : tensor<1x1x128xf32>
}

// -----

// Key and value apart, a prefill of 4 tokens: q, k, v and start are arguments too, and
// stay f32; only the caches (the 4th and 5th arguments) change. (`kernel_config = {tile = 4}`:
// the prefill kernel tiled over the chunk, which the H200's default leaves for so few tokens.)
// CHECK-LABEL:  func.func @prefill(%q: tensor<1x4x128xf32>, %k: tensor<1x4x32xf32>, %v: tensor<1x4x32xf32>, %pk: tensor<1x2x256x16xf16>, %pv: tensor<1x2x256x16xf16>, %start: tensor<1x1xf32>) -> tensor<1x4x128xf32>
// CHECK-NEXT:     %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start {kernel_config = {tile = 4 : i64}, num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32} : tensor<1x4x128xf32> key tensor<1x4x32xf32> value tensor<1x4x32xf32> cache tensor<1x2x256x16xf16>, tensor<1x2x256x16xf16> at tensor<1x1xf32> -> tensor<1x4x128xf32>
// CHECK-NEXT:     func.return %o : tensor<1x4x128xf32>

// GENERIC:      sym_name = "prefill", function_type = (tensor<1x4x128xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x2x256x16xf16>, tensor<1x2x256x16xf16>, tensor<1x1xf32>) -> tensor<1x4x128xf32>
// F32-LABEL:    func.func @prefill(%q: tensor<1x4x128xf32>, %k: tensor<1x4x32xf32>, %v: tensor<1x4x32xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %start: tensor<1x1xf32>) -> tensor<1x4x128xf32>

// LOWER-LABEL:  opencl.kernel @gqa_update_f16(%q: !opencl.ptr<global, f32>, %k: !opencl.ptr<global, f32>, %v: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f16>, %v_cache: !opencl.ptr<global, f16>, %out: !opencl.ptr<global, f32>) {
// LOWER:          opencl.vstore_half %{{.*}}, %k_cache[%{{.*}}] : f32, !opencl.ptr<global, f16>
// LOWER:          opencl.vstore_half %{{.*}}, %v_cache[%{{.*}}] : f32, !opencl.ptr<global, f16>
// LOWER-LABEL:  opencl.kernel @gqa_prefill_g4_t4_kv32_f16(%q: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f16>, %v_cache: !opencl.ptr<global, f16>, %start: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// LOWER:          %[[K:.*]] = opencl.vload_half %k_cache[%[[AT:.*]]] : !opencl.ptr<global, f16> -> vector<4xf32>
// LOWER-NEXT:     opencl.vstore %[[K]], %k_tile[%e] : vector<4xf32>, !opencl.ptr<local, f32>
// LOWER-NEXT:     %[[V:.*]] = opencl.vload_half %v_cache[%[[AT]]] : !opencl.ptr<global, f16> -> vector<4xf32>
// LOWER-NEXT:     opencl.vstore %[[V]], %v_tile[%e] : vector<4xf32>, !opencl.ptr<local, f32>
// LOWER-LABEL:  func.func @prefill(%q: !opencl.buffer<512xf32>, %k: !opencl.buffer<128xf32>, %v: !opencl.buffer<128xf32>, %pk: !opencl.buffer<8192xf16>, %pv: !opencl.buffer<8192xf16>, %start: !opencl.buffer<1xf32>) -> !opencl.buffer<512xf32>
// LOWER:          opencl.launch @gqa_update_f16(%q, %k, %v, %start, %pk, %pv, %q_rotated) global [384] :
// LOWER:          opencl.launch @gqa_prefill_g4_t4_kv32_f16(%q_rotated, %pk, %pv, %start, %o) global [16, 2] local [16, 1] :

// CL-LABEL:     __kernel void gqa_update_f16(
// CL-LABEL:     __kernel void gqa_prefill_g4_t4_kv32_f16(
// CL:               __global const half* k_cache,
// CL-NEXT:          __global const half* v_cache,
func.func @prefill(%q: tensor<1x4x128xf32>, %k: tensor<1x4x32xf32>, %v: tensor<1x4x32xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %start: tensor<1x1xf32>) -> tensor<1x4x128xf32> attributes {graph.inputs = ["q", "k", "v", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32, kernel_config = {tile = 4 : i64}} : tensor<1x4x128xf32> key tensor<1x4x32xf32> value tensor<1x4x32xf32> cache tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> at tensor<1x1xf32> -> tensor<1x4x128xf32>
  func.return %o : tensor<1x4x128xf32>
}

// -----

// Two layers (two attention ops, each with its own caches, a matmul between them): all
// four caches are retyped; the matmul's weight (a 2-D f32 argument) is not.
// CHECK-LABEL:  func.func @two_layers(%x: tensor<1x1x32xf32>, %pk0: tensor<1x2x16x4xf16>, %pv0: tensor<1x2x16x4xf16>, %pk1: tensor<1x2x16x4xf16>, %pv1: tensor<1x2x16x4xf16>, %start: tensor<1x1xf32>, %w: tensor<16x32xf32>) -> tensor<1x1x16xf32>
// CHECK-SAME:     graph.state = {present_key_0 = "past_key_0", present_value_0 = "past_value_0", present_key_1 = "past_key_1", present_value_1 = "past_value_1"}
// CHECK-NEXT:     %a = graph.group_query_attention %x cache %pk0, %pv0 at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
// CHECK-NEXT:     %h = graph.matmul %a, %w : (tensor<1x1x16xf32>, tensor<16x32xf32>) -> tensor<1x1x32xf32>
// CHECK-NEXT:     %o = graph.group_query_attention %h cache %pk1, %pv1 at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16> at tensor<1x1xf32> -> tensor<1x1x16xf32>
// CHECK-NEXT:     func.return %o : tensor<1x1x16xf32>

// GENERIC:      sym_name = "two_layers", function_type = (tensor<1x1x32xf32>, tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16>, tensor<1x2x16x4xf16>, tensor<1x1xf32>, tensor<16x32xf32>) -> tensor<1x1x16xf32>
// F32-LABEL:    func.func @two_layers(%x: tensor<1x1x32xf32>, %pk0: tensor<1x2x16x4xf32>, %pv0: tensor<1x2x16x4xf32>, %pk1: tensor<1x2x16x4xf32>, %pv1: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>, %w: tensor<16x32xf32>) -> tensor<1x1x16xf32>

// The two layers share the kernels (one geometry), each launch with its own caches.
// LOWER-LABEL:  opencl.kernel @gqa_update_f16(%qkv: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f16>, %v_cache: !opencl.ptr<global, f16>, %out: !opencl.ptr<global, f32>) {
// LOWER-LABEL:  opencl.kernel @gqa_attention_g2_wg64_f16(%q: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f16>, %v_cache: !opencl.ptr<global, f16>, %start: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// LOWER-LABEL:  opencl.kernel @matmul(%a: !opencl.ptr<global, f32>, %b: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// LOWER-LABEL:  func.func @two_layers(%x: !opencl.buffer<32xf32>, %pk0: !opencl.buffer<128xf16>, %pv0: !opencl.buffer<128xf16>, %pk1: !opencl.buffer<128xf16>, %pv1: !opencl.buffer<128xf16>, %start: !opencl.buffer<1xf32>, %w: !opencl.buffer<512xf32>) -> !opencl.buffer<16xf32>
// LOWER:          opencl.launch @gqa_update_f16(%x, %start, %pk0, %pv0, %q_rotated) global [16] :
// LOWER:          opencl.launch @gqa_attention_g2_wg64_f16(%q_rotated, %pk0, %pv0, %start, %a) global [64, 2, 1] local [64, 1, 1] :
// LOWER:          opencl.launch @matmul(%a, %w, %h)
// LOWER:          opencl.launch @gqa_update_f16(%h, %start, %pk1, %pv1, %q_rotated_1) global [16] :
// LOWER:          opencl.launch @gqa_attention_g2_wg64_f16(%q_rotated_1, %pk1, %pv1, %start, %o) global [64, 2, 1] local [64, 1, 1] :

// CL-LABEL:     __kernel void gqa_update_f16(
// CL-LABEL:     __kernel void gqa_attention_g2_wg64_f16(
// CL-LABEL:     __kernel void matmul(__global const float* a, __global const float* b, __global float* out) {
func.func @two_layers(%x: tensor<1x1x32xf32>, %pk0: tensor<1x2x16x4xf32>, %pv0: tensor<1x2x16x4xf32>, %pk1: tensor<1x2x16x4xf32>, %pv1: tensor<1x2x16x4xf32>, %start: tensor<1x1xf32>, %w: tensor<16x32xf32>) -> tensor<1x1x16xf32> attributes {graph.inputs = ["x", "past_key_0", "past_value_0", "past_key_1", "past_value_1", "start", "w"], graph.outputs = ["o"], graph.state = {present_key_0 = "past_key_0", present_value_0 = "past_value_0", present_key_1 = "past_key_1", present_value_1 = "past_value_1"}} {
  %a = graph.group_query_attention %x cache %pk0, %pv0 at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  %h = graph.matmul %a, %w : (tensor<1x1x16xf32>, tensor<16x32xf32>) -> tensor<1x1x32xf32>
  %o = graph.group_query_attention %h cache %pk1, %pv1 at %start {num_heads = 4 : i64, kv_num_heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<1x1x32xf32> cache tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32> at tensor<1x1xf32> -> tensor<1x1x16xf32>
  func.return %o : tensor<1x1x16xf32>
}

// -----

// No attention: a 4-D f32 argument shaped like a cache is no cache; nothing changes.
// CHECK-LABEL:  func.func @no_attention(%x: tensor<1x2x16x4xf32>) -> tensor<1x2x16x4xf32> {
// CHECK-NEXT:     %r = graph.relu %x : tensor<1x2x16x4xf32>
// GENERIC:      sym_name = "no_attention", function_type = (tensor<1x2x16x4xf32>) -> tensor<1x2x16x4xf32>
// F32-LABEL:    func.func @no_attention(%x: tensor<1x2x16x4xf32>) -> tensor<1x2x16x4xf32> {
// LOWER-LABEL:  func.func @no_attention(%x: !opencl.buffer<128xf32>) -> !opencl.buffer<128xf32>
// CL-LABEL:     __kernel void {{.*}}(__global const float* {{.*}}, __global float* {{.*}}) {
func.func @no_attention(%x: tensor<1x2x16x4xf32>) -> tensor<1x2x16x4xf32> {
  %r = graph.relu %x : tensor<1x2x16x4xf32>
  func.return %r : tensor<1x2x16x4xf32>
}
