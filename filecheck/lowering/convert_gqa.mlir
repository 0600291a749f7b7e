// RUN: sed '/^\/\/ BEGIN REFUSED/,$d' %s | adreno-opt --split-input-file -p 'graph-fuse,select-kernel-config{target=nvidia-h200}' | filecheck %s --check-prefix=H200
// RUN: sed '/^\/\/ BEGIN REFUSED/,$d' %s | adreno-opt --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: sed '/^\/\/ BEGIN REFUSED/,$d' %s | adreno-opt --split-input-file -p 'graph-fuse,select-kernel-config{target=nvidia-h200},convert-graph-to-opencl' | filecheck %s --check-prefix=H200-L
// RUN: sed '/^\/\/ BEGIN REFUSED/,$d' %s | adreno-opt --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu},convert-graph-to-opencl' | filecheck %s --check-prefix=CPU-L
// RUN: sed -n '/^\/\/ BEGIN REFUSED/,$p' %s | not adreno-opt -p 'graph-fuse,select-kernel-config{target=nvidia-h200},convert-graph-to-opencl' 2>&1 | filecheck %s --check-prefix=REFUSED
// RUN: sed -n '/^\/\/ BEGIN REFUSED/,$p' %s | sed 's/, kernel_config = {splits = 1 : i64}//' | adreno-opt -p 'graph-fuse,select-kernel-config{target=pocl-cpu}' | filecheck %s --check-prefix=LONGEST

// The gqa family (graph.group_query_attention, lowering/families/gqa.py): three kernels per op
// (lowering/kernels/gqa.py). gqa_update rotates q and k at each token's position (start[b] + s),
// writes q to a scratch buffer (%q_rotated) and k and v into the caches, in place; then
// gqa_attention_g<G> (flash-decoding: one work-group per token, KV head and split of the cache
// rows, the G = H / KVH query heads of a KV head sharing it) reads the caches; with splits > 1
// it writes partials [.., splits, G, D + 2] (%attention_splits) that gqa_combine_split<N> adds
// up, with one split it writes the output itself. The caches are the host function's arguments
// (state, `graph.state`): the same buffers go to the update and the attention kernels, and no
// copy of them is made.
//
// kernel_config {splits, items} (one token a work-group) or {tile, kv_tile} (prefill tiled over
// the chunk): on a GPU 64 work-items a work-group; a decode step (S = 1)
// splits the cache in chunks of at least 64 rows until there are about two work-groups per
// compute unit (the H200 has 132); several tokens (prefill) take the tiled kernel where its
// work-groups fill the compute units. On a CPU a
// decode step takes one work-item, the fewest splits local memory (4096 floats: G * (D + rows of
// a split)) allows.

// Decode, packed q/k/v, rotary: 8 heads over 2 KV heads (G = 4), D = 16, L = 256. On the H200
// 8 splits of 32 rows (16 would make chunks of 16, under 32), far from 264 work-groups; on the
// CPU 4 * (16 + 256) floats fit: one split, no combine.
// H200-LABEL:   func.func @decode
// H200:           graph.fused {kernel_config = {splits = 8 : i64, items = 64 : i64}}
// CPU-LABEL:    func.func @decode
// CPU:            graph.fused {kernel_config = {splits = 1 : i64, items = 1 : i64}}

// H200-L-LABEL: opencl.kernel @gqa_update_rotary(%qkv: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %cos: !opencl.ptr<global, f32>, %sin: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f32>, %v_cache: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// H200-L:         opencl.load %cos[
// H200-L:         opencl.store %{{.*}}, %k_cache[
// H200-L:         opencl.store %{{.*}}, %v_cache[
// H200-L-LABEL: opencl.kernel @gqa_attention_g4_split8_wg64(%q: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f32>, %v_cache: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) attributes {reqd_work_group_size = array<i64: 64, 1, 1>} {
// H200-L-NEXT:    %q_rows = opencl.local_alloc {size = 64 : i64} : !opencl.ptr<local, f32>
// H200-L-NEXT:    %scores = opencl.local_alloc {size = 128 : i64} : !opencl.ptr<local, f32>
// H200-L-NOT:     opencl.store %{{.*}}, %k_cache
// H200-L-NOT:     opencl.store %{{.*}}, %v_cache
// H200-L-LABEL: opencl.kernel @gqa_combine_split8(%partial: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// H200-L-LABEL: func.func @decode(%qkv: !opencl.buffer<192xf32>, %pk: !opencl.buffer<8192xf32>, %pv: !opencl.buffer<8192xf32>, %seqlens: !opencl.buffer<1xf32>) -> !opencl.buffer<128xf32>
// H200-L-SAME:    graph.state = {present_key = "past_key", present_value = "past_value"}
// H200-L-NEXT:    %q_rotated = opencl.alloc_buffer : !opencl.buffer<128xf32>
// H200-L-NEXT:    %cos = opencl.weight @cos : !opencl.buffer<2048xf32>
// H200-L-NEXT:    %sin = opencl.weight @sin : !opencl.buffer<2048xf32>
// H200-L-NEXT:    opencl.launch @gqa_update_rotary(%qkv, %seqlens, %cos, %sin, %pk, %pv, %q_rotated) global [96] :
// H200-L-NEXT:    %o = opencl.alloc_buffer : !opencl.buffer<128xf32>
// H200-L-NEXT:    %attention_splits = opencl.alloc_buffer : !opencl.buffer<1152xf32>
// H200-L-NEXT:    opencl.launch @gqa_attention_g4_split8_wg64(%q_rotated, %pk, %pv, %seqlens, %attention_splits) global [64, 2, 8] local [64, 1, 1] :
// H200-L-NEXT:    opencl.launch @gqa_combine_split8(%attention_splits, %seqlens, %o) global [16, 8] :
// H200-L-NEXT:    func.return %o : !opencl.buffer<128xf32>

// CPU-L-LABEL:  opencl.kernel @gqa_update_rotary(
// CPU-L-LABEL:  opencl.kernel @gqa_attention_g4(%q: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f32>, %v_cache: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) attributes {reqd_work_group_size = array<i64: 1, 1, 1>} {
// CPU-L-NEXT:     %q_rows = opencl.local_alloc {size = 64 : i64} : !opencl.ptr<local, f32>
// CPU-L-NEXT:     %scores = opencl.local_alloc {size = 1024 : i64} : !opencl.ptr<local, f32>
// CPU-L-NOT:    opencl.kernel @gqa_combine
// CPU-L-LABEL:  func.func @decode(%qkv: !opencl.buffer<192xf32>, %pk: !opencl.buffer<8192xf32>, %pv: !opencl.buffer<8192xf32>, %seqlens: !opencl.buffer<1xf32>)
// CPU-L:          opencl.launch @gqa_update_rotary(%qkv, %seqlens, %cos, %sin, %pk, %pv, %q_rotated) global [96] :
// CPU-L-NEXT:     %o = opencl.alloc_buffer : !opencl.buffer<128xf32>
// CPU-L-NEXT:     opencl.launch @gqa_attention_g4(%q_rotated, %pk, %pv, %seqlens, %o) global [1, 2, 1] local [1, 1, 1] :
// CPU-L-NEXT:     func.return %o : !opencl.buffer<128xf32>
func.func @decode(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %seqlens: tensor<1x1xf32>) -> tensor<1x1x128xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "seqlens_k"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %cos = graph.constant @cos : tensor<256x8xf32>
  %sin = graph.constant @sin : tensor<256x8xf32>
  %o = graph.group_query_attention %qkv cache %pk, %pv at %seqlens cos %cos sin %sin {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32} : tensor<1x1x192xf32> cache tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> at tensor<1x1xf32> cos tensor<256x8xf32> sin tensor<256x8xf32> -> tensor<1x1x128xf32>
  func.return %o : tensor<1x1x128xf32>
}

// -----

// Decode over a long cache (L = 2048), key and value apart, no rotary. On the H200 32 splits
// (the most) of 64 rows; on the CPU 4 * (16 + 2048 / s) floats fit from s = 4: 4 splits, and
// so a combine there too.
// H200-LABEL:   func.func @long
// H200:           graph.fused {kernel_config = {splits = 32 : i64, items = 64 : i64}}
// CPU-LABEL:    func.func @long
// CPU:            graph.fused {kernel_config = {splits = 4 : i64, items = 1 : i64}}

// H200-L-LABEL: opencl.kernel @gqa_update(%q: !opencl.ptr<global, f32>, %k: !opencl.ptr<global, f32>, %v: !opencl.ptr<global, f32>, %start: !opencl.ptr<global, f32>, %k_cache: !opencl.ptr<global, f32>, %v_cache: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// H200-L-LABEL: func.func @long(
// H200-L:         opencl.launch @gqa_update(%q, %k, %v, %start, %pk, %pv, %q_rotated) global [96] :
// H200-L:         %attention_splits = opencl.alloc_buffer : !opencl.buffer<4608xf32>
// H200-L-NEXT:    opencl.launch @gqa_attention_g4_split32_wg64(%q_rotated, %pk, %pv, %start, %attention_splits) global [64, 2, 32] local [64, 1, 1] :
// H200-L-NEXT:    opencl.launch @gqa_combine_split32(%attention_splits, %start, %o) global [16, 8] :
// CPU-L-LABEL:  func.func @long(
// CPU-L:          opencl.launch @gqa_update(%q, %k, %v, %start, %pk, %pv, %q_rotated) global [96] :
// CPU-L:          %attention_splits = opencl.alloc_buffer : !opencl.buffer<576xf32>
// CPU-L-NEXT:     opencl.launch @gqa_attention_g4_split4(%q_rotated, %pk, %pv, %start, %attention_splits) global [1, 2, 4] local [1, 1, 1] :
// CPU-L-NEXT:     opencl.launch @gqa_combine_split4(%attention_splits, %start, %o) global [16, 8] :
func.func @long(%q: tensor<1x1x128xf32>, %k: tensor<1x1x32xf32>, %v: tensor<1x1x32xf32>, %pk: tensor<1x2x2048x16xf32>, %pv: tensor<1x2x2048x16xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x128xf32> attributes {graph.inputs = ["q", "k", "v", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %q key %k value %v cache %pk, %pv at %start {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32} : tensor<1x1x128xf32> key tensor<1x1x32xf32> value tensor<1x1x32xf32> cache tensor<1x2x2048x16xf32>, tensor<1x2x2048x16xf32> at tensor<1x1xf32> -> tensor<1x1x128xf32>
  func.return %o : tensor<1x1x128xf32>
}

// -----

// Prefill (4 tokens): the kernel tiled over the chunk (gqa_prefill_g<G>_t<tile>_kv<kv_tile>,
// lowering/kernels/gqa.py GQAPrefillSpec): one work-group per tile of tokens and KV head, a
// work-item per token and query head (4 x 4 = 16), K/V tiles of 32 rows in local memory,
// where its work-groups fill the target's compute units (or it does not say how many), and on
// CPUs. On the H200 2 of them would leave 130 of its 132 compute units idle: one token
// a work-group instead (8 work-groups of 64 items), no splits, no combine.
// H200-LABEL:   func.func @prefill(
// H200:           graph.fused {kernel_config = {splits = 1 : i64, items = 64 : i64, tile = 0 : i64}}
// CPU-LABEL:    func.func @prefill(
// CPU:            graph.fused {kernel_config = {tile = 4 : i64, kv_tile = 32 : i64}}
// H200-L-NOT:   opencl.kernel @gqa_combine
// H200-L-LABEL: func.func @prefill(
// H200-L:         opencl.launch @gqa_update(%qkv, %start, %pk, %pv, %q_rotated) global [384] :
// H200-L-NEXT:    %o = opencl.alloc_buffer : !opencl.buffer<512xf32>
// H200-L-NEXT:    opencl.launch @gqa_attention_g4_wg64(%q_rotated, %pk, %pv, %start, %o) global [64, 8, 1] local [64, 1, 1] :
// H200-L-NEXT:    func.return %o : !opencl.buffer<512xf32>
// CPU-L-LABEL:  opencl.kernel @gqa_prefill_g4_t4_kv32(
// CPU-L-SAME:     reqd_work_group_size = array<i64: 16, 1, 1>
// CPU-L:          %k_tile = opencl.local_alloc {size = 512 : i64} : !opencl.ptr<local, f32>
// CPU-L-NEXT:     %v_tile = opencl.local_alloc {size = 512 : i64} : !opencl.ptr<local, f32>
// CPU-L-LABEL:  func.func @prefill(
// CPU-L:          opencl.launch @gqa_update(%qkv, %start, %pk, %pv, %q_rotated) global [384] :
// CPU-L-NEXT:     %o = opencl.alloc_buffer : !opencl.buffer<512xf32>
// CPU-L-NEXT:     opencl.launch @gqa_prefill_g4_t4_kv32(%q_rotated, %pk, %pv, %start, %o) global [16, 2] local [16, 1] :
// CPU-L-NEXT:     func.return %o : !opencl.buffer<512xf32>
func.func @prefill(%qkv: tensor<1x4x192xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %start: tensor<1x1xf32>) -> tensor<1x4x128xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32} : tensor<1x4x192xf32> cache tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> at tensor<1x1xf32> -> tensor<1x4x128xf32>
  func.return %o : tensor<1x4x128xf32>
}

// -----

// tile = 0 written by hand: one token a work-group (the split kernel), completed with the
// GPU's 64 work-items on both targets (a config written by hand reads the same everywhere).
// H200-LABEL:   func.func @prefill_per_token
// H200:           graph.fused {kernel_config = {splits = 1 : i64, items = 64 : i64, tile = 0 : i64}}
// CPU-LABEL:    func.func @prefill_per_token
// CPU:            graph.fused {kernel_config = {splits = 1 : i64, items = 64 : i64, tile = 0 : i64}}
// H200-L-LABEL: func.func @prefill_per_token(
// H200-L:         opencl.launch @gqa_attention_g4_wg64(%q_rotated, %pk, %pv, %start, %o) global [64, 8, 1] local [64, 1, 1] :
func.func @prefill_per_token(%qkv: tensor<1x4x192xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %start: tensor<1x1xf32>) -> tensor<1x4x128xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32, kernel_config = {tile = 0 : i64}} : tensor<1x4x192xf32> cache tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> at tensor<1x1xf32> -> tensor<1x4x128xf32>
  func.return %o : tensor<1x4x128xf32>
}

// -----

// A config written by hand is kept on both targets (on the CPU, 8 work-items a work-group too).
// H200-LABEL:   func.func @edited
// H200:           graph.fused {kernel_config = {splits = 4 : i64, items = 8 : i64}}
// CPU-LABEL:    func.func @edited
// CPU:            graph.fused {kernel_config = {splits = 4 : i64, items = 8 : i64}}
// H200-L-LABEL: opencl.kernel @gqa_attention_g4_split4_wg8(
// H200-L-SAME:    reqd_work_group_size = array<i64: 8, 1, 1>
// H200-L-LABEL: func.func @edited(
// H200-L:         opencl.launch @gqa_attention_g4_split4_wg8(%q_rotated, %pk, %pv, %start, %attention_splits) global [8, 2, 4] local [8, 1, 1] :
// H200-L-NEXT:    opencl.launch @gqa_combine_split4(%attention_splits, %start, %o) global [16, 8] :
// CPU-L-LABEL:  func.func @edited(
// CPU-L:          opencl.launch @gqa_attention_g4_split4_wg8(%q_rotated, %pk, %pv, %start, %attention_splits) global [8, 2, 4] local [8, 1, 1] :
// CPU-L-NEXT:     opencl.launch @gqa_combine_split4(%attention_splits, %start, %o) global [16, 8] :
func.func @edited(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x256x16xf32>, %pv: tensor<1x2x256x16xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x128xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32, kernel_config = {splits = 4 : i64, items = 8 : i64}} : tensor<1x1x192xf32> cache tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> at tensor<1x1xf32> -> tensor<1x1x128xf32>
  func.return %o : tensor<1x1x128xf32>
}

// BEGIN REFUSED
// L = 8192 in one split: 4 * (16 + 8192) floats of local memory a work-group; 16 splits are
// the fewest that fit (4 * (16 + 512)). A config asking for one is refused (the kernel_config
// check runs when the IR is verified); without it, the CPU (as few splits as fit) takes 16.
// REFUSED:      error: 'graph.group_query_attention': splits = 1 leaves more cache rows per work-group than local memory holds; at least 16
// LONGEST-LABEL: func.func @refused
// LONGEST:        graph.fused {kernel_config = {splits = 16 : i64, items = 1 : i64}}
func.func @refused(%qkv: tensor<1x1x192xf32>, %pk: tensor<1x2x8192x16xf32>, %pv: tensor<1x2x8192x16xf32>, %start: tensor<1x1xf32>) -> tensor<1x1x128xf32> attributes {graph.inputs = ["qkv", "past_key", "past_value", "start"], graph.outputs = ["o"], graph.state = {present_key = "past_key", present_value = "past_value"}} {
  %o = graph.group_query_attention %qkv cache %pk, %pv at %start {num_heads = 8 : i64, kv_num_heads = 2 : i64, scale = 2.500000e-01 : f32, kernel_config = {splits = 1 : i64}} : tensor<1x1x192xf32> cache tensor<1x2x8192x16xf32>, tensor<1x2x8192x16xf32> at tensor<1x1xf32> -> tensor<1x1x128xf32>
  func.return %o : tensor<1x1x128xf32>
}
