// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl,cse' -o %t && filecheck %s < %t
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config,convert-graph-to-opencl,cse' -t opencl -o %t.cl && filecheck %s --check-prefix=C < %t.cl
// RUN: adreno-opt %s --split-input-file -p 'convert-layout-nchw4c,annotate-texture-scope{images=true}' -o %t.4c && filecheck %s --check-prefix=LAYOUT < %t.4c

// Transposed convolution 3x3, stride 2, pads 1, output_padding 1 (5x6 -> 10x12), bias,
// fused ReLU: one kernel in gather form, one work-item per output pixel, grid
// (OW, OH, N * C_out) = (12, 10, 6). For each tap row kh the source row is
// t = oy + 1 - kh, iy = t / 2, valid when t >= 0, iy < 5 and t % 2 == 0 (computed
// once per row); each tap's loop over the 4 input channels runs 4 times when the tap
// reaches an input pixel and 0 times otherwise, so its loads need no masks. Weights
// stay [C_in, C_out, KH, KW] (input channel stride 6 * 9 = 54), the accumulator starts
// at the bias, ReLU before the store.

// CHECK-LABEL: opencl.kernel @conv_transpose3x3_s2_relu(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %bias: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %acc = opencl.load %bias[%z] : !opencl.ptr<global, f32>
// CHECK:         %acc_1 = scf.for %kh = %{{.*}} iter_args(%[[A:[0-9a-z_]+]] = %acc) -> (f32) : i32 {
// CHECK:           %[[T:[0-9a-z_]+]] = arith.subi %{{.*}}, %kh : i32
// CHECK-NEXT:      %[[TWO:[0-9a-z_]+]] = arith.constant 2 : i32
// CHECK-NEXT:      %[[IY:[0-9a-z_]+]] = arith.divsi %[[T]], %[[TWO]] : i32
// CHECK-NEXT:      %[[GE:[0-9a-z_]+]] = arith.cmpi sge, %[[T]], %{{.*}} : i32
// CHECK-NEXT:      %[[H:[0-9a-z_]+]] = arith.constant 5 : i32
// CHECK-NEXT:      %[[LT:[0-9a-z_]+]] = arith.cmpi slt, %[[IY]], %[[H]] : i32
// CHECK-NEXT:      %[[REM:[0-9a-z_]+]] = arith.remsi %[[T]], %[[TWO]] : i32
// CHECK-NEXT:      %[[DIV:[0-9a-z_]+]] = arith.cmpi eq, %[[REM]], %{{.*}} : i32
// CHECK:           %[[ROWOK:[0-9a-z_]+]] = arith.andi %{{.*}}, %[[DIV]] : i1
// CHECK:           scf.for %kw = {{.*}} {
// CHECK-NOT:         scf.for %kh
// CHECK:             %[[FOUR:[0-9a-z_]+]] = arith.constant 4 : i32
// CHECK-NEXT:        %[[TRIPS:[0-9a-z_]+]] = arith.select %{{.*}}, %[[FOUR]], %{{.*}} : i32
// CHECK:             scf.for %ci = %{{.*}} to %[[TRIPS]] step %{{.*}} iter_args(%[[S:[0-9a-z_]+]] = %{{.*}}) -> (f32) : i32 {
// CHECK:               %[[X:[0-9a-z_]+]] = opencl.load %input[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-NEXT:          %[[WS:[0-9a-z_]+]] = arith.constant 54 : i32
// CHECK:               %[[W:[0-9a-z_]+]] = opencl.load %weight[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-NEXT:          %[[F:[0-9a-z_]+]] = math.fma %[[X]], %[[W]], %[[S]] : f32
// CHECK-NEXT:          scf.yield %[[F]] : f32
// CHECK-NEXT:        }
// CHECK:           } {opencl.unroll = 0 : i64}
// CHECK:         } {opencl.unroll = 0 : i64}
// CHECK:         %[[R:[0-9a-z_]+]] = arith.maximumf %acc_1, %{{.*}} : f32
// CHECK:         opencl.store %[[R]], %out[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-LABEL: func.func @up(%x: !opencl.buffer<120xf32>) -> !opencl.buffer<720xf32> {
// CHECK:         opencl.launch @conv_transpose3x3_s2_relu(%x, %{{.*}}, %{{.*}}, %{{.*}}) global [12, 10, 6]
// CHECK-NOT:     opencl.launch

// C:      __kernel void conv_transpose3x3_s2_relu(
// C:        const float acc = bias[z];
// C:        #pragma unroll
// C-NEXT:   for (int kh = 0; kh < 3; ++kh) {
// C:          const int [[ROWOK:v[0-9]+]] = (([[T:v[0-9]+]] >= 0) & ([[IY:v[0-9]+]] < 5)) & (([[T]] % 2) == 0);
// C:          #pragma unroll
// C-NEXT:     for (int kw = 0; kw < 3; ++kw) {
// C:            for (int ci = 0; ci < (({{.*}}[[ROWOK]]{{.*}}) ? 4 : 0); ++ci) {
// C-NEXT:         const float [[X:v[0-9]+]] = input[{{.*}}(ci * 30)];
// C-NEXT:         const float [[W:v[0-9]+]] = weight[{{.*}}(ci * 54)];
// C-NEXT:         {{v[0-9]+}} = fma([[X]], [[W]], {{v[0-9]+}});
// C:        out[(((z * 10) + oy) * 12) + ox] = adreno_fmax_float(acc_1, 0.0f);
func.func @up(%x: tensor<1x4x5x6xf32>) -> tensor<1x6x10x12xf32> {
  %w = graph.constant dense<0.5> : tensor<4x6x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %y = graph.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : tensor<1x4x5x6xf32>, tensor<4x6x3x3xf32>, tensor<6xf32> -> tensor<1x6x10x12xf32>
  %r = graph.relu %y : tensor<1x6x10x12xf32>
  func.return %r : tensor<1x6x10x12xf32>
}

// -----

// Groups (3 groups of 2 input and 2 output channels), 1x1 window, stride 1, no bias,
// run-time weights: output channel co reads input channels from ci0 = (co / 2) * 2 and
// weights [ci][co % 2]. No tap can miss (t = oy is always in range), so there are no
// checks and no window loops: the channel loop runs 2 times, the accumulator starts at 0.

// CHECK-LABEL: opencl.kernel @conv_transpose1x1(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %co = arith.remsi %z, %{{.*}} : i32
// CHECK:         %[[TWO:[0-9a-z_]+]] = arith.constant 2 : i32
// CHECK-NEXT:    %[[G:[0-9a-z_]+]] = arith.divsi %co, %[[TWO]] : i32
// CHECK-NEXT:    %ci0 = arith.muli %[[G]], %[[TWO]] : i32
// CHECK-NEXT:    %m = arith.remsi %co, %[[TWO]] : i32
// CHECK-NOT:     arith.cmpi
// CHECK-NOT:     arith.select
// CHECK:         %[[ZERO:[0-9a-z_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT:     arith.cmpi
// CHECK-NOT:     arith.select
// CHECK:         scf.for %ci = %{{.*}} to %[[TWO]] step %{{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32) : i32 {
// CHECK-LABEL: func.func @grouped(%x: !opencl.buffer<240xf32>, %w: !opencl.buffer<12xf32>) -> !opencl.buffer<240xf32> {
// CHECK-NEXT:    %y = opencl.alloc_buffer : !opencl.buffer<240xf32>
// CHECK-NEXT:    opencl.launch @conv_transpose1x1(%x, %w, %y) global [5, 4, 12]

// C-LABEL: __kernel void conv_transpose1x1(
// C:         for (int ci = 0; ci < 2; ++ci) {
func.func @grouped(%x: tensor<2x6x4x5xf32>, %w: tensor<6x2x1x1xf32>) -> tensor<2x6x4x5xf32> {
  %y = graph.conv_transpose2d %x, %w {groups = 3 : i64} : tensor<2x6x4x5xf32>, tensor<6x2x1x1xf32> -> tensor<2x6x4x5xf32>
  func.return %y : tensor<2x6x4x5xf32>
}

// -----

// Between NCHW4c convolutions: convert-layout-nchw4c packs the convolutions (images with
// annotate-texture-scope) but leaves the transposed convolution on plain tensors (it has
// no NCHW4c kernel): its input is unpacked; the ReLU on its plain result stays plain too
// (it fuses into the transposed convolution) and is packed for the next convolution.

// LAYOUT-LABEL: func.func @between
// LAYOUT:         graph.conv2d {{.*}} -> !texture.tensor<1x2x6x6x4xf32, nchw4c, #texture.image
// LAYOUT-NEXT:    %c0 = texture.unpack %{{.*}} -> tensor<1x8x6x6xf32>
// LAYOUT:         %u = graph.conv_transpose2d %c0, %w1 {strides = array<i64: 2, 2>} : tensor<1x8x6x6xf32>, tensor<8x6x2x2xf32> -> tensor<1x6x12x12xf32>
// LAYOUT-NEXT:    %r = graph.relu %u : tensor<1x6x12x12xf32>
// LAYOUT-NEXT:    %{{[0-9]+}} = texture.pack %r : tensor<1x6x12x12xf32> -> !texture.tensor<1x2x12x12x4xf32, nchw4c, #texture.image
func.func @between(%x: tensor<1x3x6x6xf32>) -> tensor<1x4x12x12xf32> {
  %w0 = graph.constant dense<0.25> : tensor<8x3x3x3xf32>
  %c0 = graph.conv2d %x, %w0 {pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x6x6xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  %w1 = graph.constant dense<0.5> : tensor<8x6x2x2xf32>
  %u = graph.conv_transpose2d %c0, %w1 {strides = array<i64: 2, 2>} : tensor<1x8x6x6xf32>, tensor<8x6x2x2xf32> -> tensor<1x6x12x12xf32>
  %r = graph.relu %u : tensor<1x6x12x12xf32>
  %w2 = graph.constant dense<0.125> : tensor<4x6x3x3xf32>
  %y = graph.conv2d %r, %w2 {pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x12x12xf32>, tensor<4x6x3x3xf32> -> tensor<1x4x12x12xf32>
  func.return %y : tensor<1x4x12x12xf32>
}
