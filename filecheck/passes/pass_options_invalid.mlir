// Bad pass options: every error names the pass, the option and what it accepts (its
// type, its range or choices; for an unknown option, the pass's options), on one line,
// with a non-zero exit and no traceback.

// RUN: not adreno-opt %s -p 'split-k{max-factor=-1}' 2>&1 | filecheck %s --check-prefix=NOOPT
// NOOPT: error: split-k: unknown option 'max-factor'; split-k has no options
// NOOPT-NOT: Traceback

// RUN: not adreno-opt %s -p 'graph-fuse{nope=1}' 2>&1 | filecheck %s --check-prefix=FUSE
// FUSE: error: graph-fuse: unknown option 'nope'; its options: epilogues (true or false)
// FUSE-NOT: Traceback

// RUN: not adreno-opt %s -p 'graph-fuse{epilogues=maybe}' 2>&1 | filecheck %s --check-prefix=EPILOGUES
// EPILOGUES: error: graph-fuse: option epilogues must be true or false; got 'maybe'

// RUN: not adreno-opt %s -p 'conv-winograd{tile=abc}' 2>&1 | filecheck %s --check-prefix=TILE
// TILE: error: conv-winograd: option tile must be a string or an integer, one of auto, 2, 4, off; got 'abc'

// RUN: not adreno-opt %s -p 'conv-winograd{tile=2=4}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: error: cannot parse pass pipeline 'conv-winograd{tile=2=4}': Malformed pass arguments, expected either a space or `}` here (column 21, in option tile of conv-winograd: a string or an integer, one of auto, 2, 4, off)

// RUN: not adreno-opt %s -p 'select-kernel-config{conv-co-block=0}' 2>&1 | filecheck %s --check-prefix=RANGE
// RANGE: error: select-kernel-config: option conv-co-block must be an integer, one of 1, 2, 4, 8; got 0

// RUN: not adreno-opt %s -p 'select-kernel-config{conv-co-block=abc}' 2>&1 | filecheck %s --check-prefix=TYPE
// TYPE: error: select-kernel-config: option conv-co-block must be an integer, one of 1, 2, 4, 8; got 'abc'

// RUN: not adreno-opt %s -p 'select-kernel-config{conv-co-block}' 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: error: select-kernel-config: option conv-co-block needs a value: conv-co-block=V with V an integer, one of 1, 2, 4, 8

// RUN: not adreno-opt %s -p 'select-kernel-config{conv-co-block=}' 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: error: cannot parse pass pipeline 'select-kernel-config{conv-co-block=}': Unknown argument value, wrap argument in quotes to pass arbitrary string values (column 36, in option conv-co-block of select-kernel-config: an integer, one of 1, 2, 4, 8)

// RUN: not adreno-opt %s -p 'select-kernel-config{conv-co-blok=4}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: select-kernel-config: unknown option 'conv-co-blok' (did you mean conv-co-block?); its options: target (a target profile: {{.*}}), conv-co-block (an integer, one of 1, 2, 4, 8), conv-x-block (an integer, one of 1, 2, 4), vectorize (true or false), packed-co-blocks (an integer, one of 1, 2), min-work-items (an integer >= 0), split-k-items (an integer >= 0), work-group (up to 3 integers >= 1, separated by commas), overrides ({{.*}}), compute (a string, one of f32, f16)

// RUN: not adreno-opt %s -p 'select-kernel-config{vectorize=maybe}' 2>&1 | filecheck %s --check-prefix=BOOL
// BOOL: error: select-kernel-config: option vectorize must be true or false; got 'maybe'

// RUN: not adreno-opt %s -p 'select-kernel-config{min-work-items=-5}' 2>&1 | filecheck %s --check-prefix=NEG
// NEG: error: select-kernel-config: option min-work-items must be an integer >= 0; got -5

// RUN: not adreno-opt %s -p 'select-kernel-config{work-group=16,0}' 2>&1 | filecheck %s --check-prefix=WG
// WG: error: select-kernel-config: option work-group must be up to 3 integers >= 1, separated by commas; got 16,0

// RUN: not adreno-opt %s -p 'fuse-pool-partials{target-items=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// ZERO: error: fuse-pool-partials: option target-items must be an integer >= 1; got 0

// RUN: not adreno-opt %s -p 'fuse-pool-partials{pixels-per-item=1.5}' 2>&1 | filecheck %s --check-prefix=FLOAT
// FLOAT: error: fuse-pool-partials: option pixels-per-item must be an integer >= 1; got 1.5

// RUN: not adreno-opt %s -p 'annotate-texture-scope{images=3}' 2>&1 | filecheck %s --check-prefix=IMAGES
// IMAGES: error: annotate-texture-scope: option images must be true or false; got 3

// RUN: not adreno-opt %s -p 'annotate-texture-scope{mapping=foo}' 2>&1 | filecheck %s --check-prefix=MAPPING
// MAPPING: error: annotate-texture-scope: option mapping must be a string, one of auto, texture, texture-nhwc; got 'foo'

// RUN: not adreno-opt %s -p 'convert-layout-nchw4c{storage=f8}' 2>&1 | filecheck %s --check-prefix=STORAGE
// STORAGE: error: convert-layout-nchw4c: option storage must be a string, one of f32, f16; got 'f8'

// RUN: not adreno-opt %s -p 'fuse-attention{target=nope}' 2>&1 | filecheck %s --check-prefix=TARGET
// TARGET: error: fuse-attention: option target must be a target profile: adreno-660, adreno-740, pocl-cpu, nvidia-opencl, nvidia-h200, tiny-test, auto or device-<OpenCL device name>; got 'nope'

// RUN: not adreno-opt %s -p 'graph-canonicalize,fuse-depthwise-load{target=7}' 2>&1 | filecheck %s --check-prefix=TARGET-TYPE
// TARGET-TYPE: error: fuse-depthwise-load: option target must be a target profile: {{.*}}; got 7

// RUN: not adreno-opt %s -p 'graph-fuse{epilogues=false},convert-graph-to-opencl{fma=fused}' 2>&1 | filecheck %s --check-prefix=FMA
// FMA: error: convert-graph-to-opencl: option fma must be a string, one of call, split, contract; got 'fused'

// RUN: not adreno-opt %s -p 'graph-fuze' 2>&1 | filecheck %s --check-prefix=PASS
// PASS: error: unknown pass 'graph-fuze' (did you mean graph-fuse?)

func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {graph.inputs = ["x"], graph.outputs = ["y"]} {
  %y = graph.relu %x : tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
