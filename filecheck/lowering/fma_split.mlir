// RUN: adreno-opt %s -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl{fma=split}' -t opencl | filecheck %s --check-prefix=SPLIT
// RUN: adreno-opt %s -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl{fma=split}' | filecheck %s --check-prefix=ATTR
// RUN: adreno-opt %s -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl' -t opencl | filecheck %s --check-prefix=CALL
// RUN: adreno-opt %s -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl' -t 'opencl{fma=split}' | filecheck %s --check-prefix=SPLIT
// RUN: adreno-opt %s -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl{fma=contract}' -t opencl | filecheck %s --check-prefix=CONTRACT
// RUN: not adreno-opt %s -p 'graph-fuse{epilogues=false},select-kernel-config{split-k-items=0},convert-graph-to-opencl{fma=fused}' 2>&1 | filecheck %s --check-prefix=BAD

// How multiply-adds print. GPUs: fma(a, b, c), one instruction. split: a * b + c under
// FP_CONTRACT OFF, which PoCL's work-group vectorizer widens and its fma() call it does
// not (a 1x1 conv: 3.1 against 20.7 GFLOP/s). contract (compile() lowers with it for
// profiles with split_fma, PoCL): a * b + c without the pragma, so that the compiler may
// fuse it into vector multiply-adds (resnet18 62.0 -> 52.7 ms on PoCL). The choice is the
// module attribute opencl.fma, so `-t opencl` of the lowered IR prints the same program;
// the printer's own option applies without it.

// ATTR: builtin.module attributes {{{.*}}opencl.fma = "split"{{.*}}}
// SPLIT:     #pragma OPENCL FP_CONTRACT OFF
// SPLIT-NOT: fma(
// SPLIT:     {{v[0-9]+}} * {{v[0-9]+}} + {{[a-z0-9_]+}};
// CONTRACT-NOT: FP_CONTRACT
// CONTRACT-NOT: fma(
// CONTRACT:     {{v[0-9]+}} * {{v[0-9]+}} + {{[a-z0-9_]+}};
// CALL:      fma(
// BAD: convert-graph-to-opencl: option fma must be a string, one of call, split, contract; got 'fused'

func.func @fc(%x: tensor<2x16xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<0.25> : tensor<3x16xf32>
  %g = graph.gemm %x, %w {trans_b = 1 : i64} : tensor<2x16xf32>, tensor<3x16xf32> -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}
