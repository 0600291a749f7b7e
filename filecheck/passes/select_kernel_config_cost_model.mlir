// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config{cost-model="%S/Inputs/cost_model_small_co_block.json"}' | filecheck %s
// RUN: adreno-opt %s -p 'graph-fuse,select-kernel-config' | filecheck %s --check-prefix=RULES
// RUN: not adreno-opt %s -p 'graph-fuse,select-kernel-config{target=pocl-cpu cost-model="%S/Inputs/cost_model_small_co_block.json"}' 2>&1 | filecheck %s --check-prefix=MISMATCH
// RUN: not adreno-opt %s -p 'graph-fuse,select-kernel-config{cost-model="%S/Inputs/kernel_config_overrides.json"}' 2>&1 | filecheck %s --check-prefix=CORRUPT

// A cost model (adreno_mlir.tuning.cost_model; this one is written by hand: one tree that
// predicts co_block 4 (or less) e^-1 times the default's time with x_block 2 or more, e^-0.5
// with x_block 1) chooses among the tuner's candidates of every kernel without an override:
// the conv gets co_block 4 and x_block 2 instead of the rules' co_block 8 and x_block 1.
// The pool has no keys to choose. The artifact is for adreno-740: another target is an error
// naming the file, and so is a JSON file that is no cost model.

// CHECK-LABEL: func.func @nchw
// CHECK:         %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 4 : i64, x_block = 2 : i64}} -> tensor<1x8x6x6xf32> {
// CHECK:         %m = graph.fused -> tensor<1x8x5x5xf32> {
// RULES-LABEL:   func.func @nchw
// RULES:         %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 8 : i64, x_block = 1 : i64}} -> tensor<1x8x6x6xf32> {
// MISMATCH:      error: select-kernel-config: cost model {{.*}}cost_model_small_co_block.json is for target profile 'adreno-740' (devices matching 'Adreno'), not 'pocl-cpu'
// CORRUPT:       error: cost model {{.*}}kernel_config_overrides.json is not a usable adreno-mlir-cost-model artifact
func.func @nchw(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x5x5xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32> loc("nchw_conv")
  %r = graph.relu %c : tensor<1x8x6x6xf32>
  %m = graph.max_pool %r {kernel_shape = array<i64: 2, 2>} : (tensor<1x8x6x6xf32>) -> tensor<1x8x5x5xf32>
  func.return %m : tensor<1x8x5x5xf32>
}
