// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl' -o %t
// RUN: filecheck %s --check-prefix=IR < %t
// RUN: filecheck %s --check-prefix=DUP < %t
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl' -t opencl -o %t.cl
// RUN: filecheck %s --check-prefix=C < %t.cl

// Regression tests for lean kernel IR. The pipeline here has NO `cse`: the kernel
// builder itself must not build a pure op twice (it hash-conses them, scoped by
// dominance), and window loops stay `scf.for` loops marked `opencl.unroll` instead of
// copies of the tap. Before, a 3x3 depthwise conv's nine taps were unrolled in the IR
// and every lane of every pixel recomputed the tap's bounds checks (four times per
// pixel), so the kernel was over 2800 lines before CSE.

// Depthwise 3x3, stride 2, padding 1, four channels x four pixels per work-item.
// In the IR the kw loop's body is one tap. Its bounds checks: the row check (two compares)
// once, one column check (two compares) per pixel, ten compares in all; a pixel's
// condition is computed once and serves its four lane loads (one plane each), and the
// three later pixels reuse the row check.
// IR-LABEL: opencl.kernel @dwconv3x3_s2_c4x4(
// IR:         scf.for %kh = {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// IR:           scf.for %kw = {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// IR-COUNT-4:     arith.cmpi
// IR-NOT:         arith.cmpi
// IR:             %[[YOK:[0-9a-z_]+]] = arith.andi %{{.*}}, %{{.*}} : i1
// IR-NEXT:        %{{.*}} = arith.andi %[[YOK]], %{{.*}} : i1
// IR-NEXT:        %[[OK0:[0-9a-z_]+]] = arith.andi %{{.*}}, %{{.*}} : i1
// IR-NOT:         arith.cmpi
// IR:             arith.select %[[OK0]], %{{.*}}, %{{.*}} : i32
// IR-NOT:         arith.cmpi
// IR:             arith.select %[[OK0]], %{{.*}}, %{{.*}} : i32
// IR-NOT:         arith.cmpi
// IR:             arith.select %[[OK0]], %{{.*}}, %{{.*}} : i32
// IR-NOT:         arith.cmpi
// IR:             arith.select %[[OK0]], %{{.*}}, %{{.*}} : i32
// IR-NOT:         arith.cmpi
// IR:             opencl.vec_make
// IR-NEXT:        math.fma
// IR-COUNT-2:     arith.cmpi
// IR-NOT:         arith.cmpi
// IR:             arith.andi %[[YOK]], %{{.*}} : i1
// IR-NOT:         arith.cmpi
// IR:             opencl.vec_make
// IR-NEXT:        math.fma
// IR-COUNT-2:     arith.cmpi
// IR-NOT:         arith.cmpi
// IR:             arith.andi %[[YOK]], %{{.*}} : i1
// IR-NOT:         arith.cmpi
// IR:             opencl.vec_make
// IR-NEXT:        math.fma
// IR-COUNT-2:     arith.cmpi
// IR-NOT:         arith.cmpi
// IR:             arith.andi %[[YOK]], %{{.*}} : i1
// IR-NOT:         arith.cmpi
// IR:             opencl.vec_make
// IR-NEXT:        math.fma
// IR-NEXT:        scf.yield
// IR-NEXT:      } {opencl.unroll = 0 : i64}
// IR-NEXT:      scf.yield
// IR-NEXT:    } {opencl.unroll = 0 : i64}

// No duplicates (DUP prefix): the pure index expressions of the tap, each built once in the kw body: the
// batch offset n * 8, the input row iy0 + kh, its compares, its row offset and the
// row check (all identical for the four lanes and the four pixels).
// DUP-LABEL: opencl.kernel @dwconv3x3_s2_c4x4(
// DUP:         scf.for %kw =
// DUP:         %[[NB:[0-9a-z_]+]] = arith.muli %n, %{{.*}} : i32
// DUP-NOT:     arith.muli %n,
// DUP:         %[[IY:[0-9a-z_]+]] = arith.addi %iy0, %kh : i32
// DUP:         %[[YLO:[0-9a-z_]+]] = arith.cmpi sge, %[[IY]], %{{.*}} : i32
// DUP:         %[[YHI:[0-9a-z_]+]] = arith.cmpi slt, %[[IY]], %{{.*}} : i32
// DUP:         %[[ROW:[0-9a-z_]+]] = arith.muli %[[IY]], %{{.*}} : i32
// DUP:         %[[YOK:[0-9a-z_]+]] = arith.andi %[[YLO]], %[[YHI]] : i1
// DUP-NOT:     arith.muli %n,
// DUP-NOT:     arith.addi %iy0, %kh
// DUP-NOT:     arith.cmpi {{[a-z]+}}, %[[IY]],
// DUP-NOT:     arith.muli %[[IY]],
// DUP-NOT:     arith.andi %[[YLO]], %[[YHI]]
// DUP:         scf.yield

// Printed (C prefix): the loops, each directly preceded by `#pragma unroll`; the kh loop only
// copies the four carried accumulators before the kw loop. The row check is one
// named value in the kw body, not repeated.
// C-LABEL: __kernel void dwconv3x3_s2_c4x4(
// C:           #pragma unroll
// C-NEXT:      for (int kh = 0; kh < 3; ++kh) {
// C-NEXT:          float4 {{v[0-9]+}} = {{v[0-9]+}};
// C-NEXT:          float4 {{v[0-9]+}} = {{v[0-9]+}};
// C-NEXT:          float4 {{v[0-9]+}} = {{v[0-9]+}};
// C-NEXT:          float4 {{v[0-9]+}} = {{v[0-9]+}};
// C-NEXT:          #pragma unroll
// C-NEXT:          for (int kw = 0; kw < 3; ++kw) {
// C-NOT:               #pragma
// C:                   const int [[IY:v[0-9]+]] = iy0 + kh;
// C:                   const int [[YOK:v[0-9]+]] = ([[IY]] >= 0) & ([[IY]] < 7);
// C-NOT:               ([[IY]] >= 0)
// C-NOT:               #pragma
// C:               }
// C-NOT:           #pragma
// C:           }
func.func @depthwise(%x: tensor<2x8x7x7xf32>) -> tensor<2x8x4x4xf32> {
  %w = graph.constant dense<0.25> : tensor<8x1x3x3xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : tensor<2x8x7x7xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x4x4xf32>
  func.return %c : tensor<2x8x4x4xf32>
}

// -----

// A dense 3x3 conv, 4 channels x 4 pixels per work-item. The tap's row index
// iy0 + kh and its row offset are built once per kw body (shared by the four pixels).
// The epilogue computes the block's base output index once (the only multiplies of
// the epilogue); each of the 16 stores adds a constant to it (+36 per channel, +1
// per pixel), where unrolled IR used to rebuild the whole index per element.
// DUP-LABEL: opencl.kernel @conv3x3_c4x4(
// DUP:         scf.for %kw =
// DUP:         %[[IY:[0-9a-z_]+]] = arith.addi %iy0, %kh : i32
// DUP:         arith.muli %[[IY]], %{{.*}} : i32
// DUP-NOT:     arith.addi %iy0, %kh
// DUP-NOT:     arith.muli %[[IY]],
// DUP:         scf.yield
// DUP:         } {opencl.unroll = 0 : i64}
// DUP:         } {opencl.unroll = 0 : i64}
// DUP:         arith.muli %z, %{{.*}} : i32
// DUP:         %[[BASE:[0-9a-z_]+]] = arith.addi %{{.*}}, %ox : i32
// DUP-NEXT:    opencl.store %{{.*}}, %out[%[[BASE]]]
// DUP-NOT:     arith.muli
// DUP:         opencl.return
// IR-LABEL: opencl.kernel @conv3x3_c4x4(
// IR:          %[[BASE:[0-9a-z_]+]] = arith.addi %{{.*}}, %ox : i32
// IR-NEXT:     opencl.store %{{.*}}, %out[%[[BASE]]]
// IR-COUNT-15: opencl.store %{{.*}}, %out[%{{.*}}]
// IR-NOT:      opencl.store
// IR:          opencl.return
func.func @conv(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}

// -----

// `opencl.unroll` written by hand on an `scf.for` in a kernel: the attribute survives
// the pipeline, N > 0 prints as `#pragma unroll N`, 0 as a bare `#pragma unroll`, and
// a loop without the attribute gets no pragma.
// IR-LABEL: opencl.kernel @unroll_hints(
// IR:         scf.for %k = {{.*}} {
// IR:         } {opencl.unroll = 4 : i64}
// IR:         scf.for %j = {{.*}} {
// IR:         } {opencl.unroll = 0 : i64}
// IR:         scf.for %r = {{.*}} {
// IR-NOT:     opencl.unroll
// IR:         opencl.return
// C-LABEL: __kernel void unroll_hints(
// C:           #pragma unroll 4
// C-NEXT:      for (int k = 0; k < 16; ++k) {
// C:           #pragma unroll{{$}}
// C-NEXT:      for (int j = 0; j < 3; ++j) {
// C-NOT:       #pragma
// C:           for (int r = 0; r < 16; ++r) {
// C-NOT:       #pragma
// C:       }
builtin.module {
  opencl.kernel @unroll_hints(%a: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
    %row = opencl.global_id 0
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %c16 = arith.constant 16 : i32
    %zero = arith.constant 0.000000e+00 : f32
    %base = arith.muli %row, %c16 : i32
    %sum = scf.for %k = %c0 to %c16 step %c1 iter_args(%s = %zero) -> (f32) : i32 {
      %idx = arith.addi %base, %k : i32
      %x = opencl.load %a[%idx] : !opencl.ptr<global, f32>
      %s1 = arith.addf %s, %x : f32
      scf.yield %s1 : f32
    } {opencl.unroll = 4 : i64}
    %tri = scf.for %j = %c0 to %c3 step %c1 iter_args(%t = %sum) -> (f32) : i32 {
      %x = opencl.load %a[%j] : !opencl.ptr<global, f32>
      %t1 = arith.addf %t, %x : f32
      scf.yield %t1 : f32
    } {opencl.unroll = 0 : i64}
    %all = scf.for %r = %c0 to %c16 step %c1 iter_args(%u = %tri) -> (f32) : i32 {
      %x = opencl.load %a[%r] : !opencl.ptr<global, f32>
      %u1 = arith.maximumf %u, %x : f32
      scf.yield %u1 : f32
    }
    opencl.store %all, %out[%row] : !opencl.ptr<global, f32>
    opencl.return
  }
}
