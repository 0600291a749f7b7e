// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -o %t && filecheck %s < %t
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{split-k-items=0},convert-graph-to-opencl,cse' -t opencl -o %t.cl && filecheck %s --check-prefix=OCL < %t.cl
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu}' | filecheck %s --check-prefix=CPU
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{target=pocl-cpu},convert-graph-to-opencl,cse' -o %t.cpu && filecheck %s --check-prefix=CPULOW < %t.cpu
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config' | filecheck %s --check-prefix=GPU

// The two NCHW convolution kernels of CPU targets, forced here with a `kernel_config`
// written in the IR (first three chunks), and picked by select-kernel-config on a CPU
// target but not on the default GPU target (last chunk).

// kernel = "pointwise" (PointwiseSpec): a 1x1 stride-1 conv, 6 -> 12 channels, batch 2,
// with a fused ReLU. A work-item computes x_block = 2 vectors of vec = 8 consecutive
// pixels of the flattened 7x7 plane for co_block = 4 output channels: 8 float8
// accumulators, two vloads of the input per input channel, four scalar weights
// (packed [CO/4][CI][4]: one row of 4 per input channel) each splatted and used by two
// fmas. The plane (49 pixels) is not a multiple of the pixel step 16: the work-item
// whose block passes the end runs the remaining pixels one at a time (scalar loop).
// Grid: (ceil(49 / 16), 2 * 12 / 4) = (4, 6).

// CHECK-LABEL: opencl.kernel @conv1x1_pw8x2c4_relu(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %bias: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[GX:[0-9a-z_]+]] = opencl.global_id 0
// CHECK:         %[[C16:[0-9a-z_]+]] = arith.constant 16 : i32
// CHECK-NEXT:    %p0 = arith.muli %[[GX]], %[[C16]] : i32
// CHECK:         %[[C49:[0-9a-z_]+]] = arith.constant 49 : i32
// CHECK:         %[[C24:[0-9a-z_]+]] = arith.constant 24 : i32
// CHECK-NEXT:    %w_base = arith.muli %{{.*}}, %[[C24]] : i32
// CHECK:         %[[END:[0-9a-z_]+]] = arith.addi %p0, %[[C16]] : i32
// CHECK-NEXT:    %[[FULL:[0-9a-z_]+]] = arith.cmpi sle, %[[END]], %[[C49]] : i32
// CHECK-NEXT:    scf.if %[[FULL]] {
// CHECK-COUNT-4:   opencl.load %bias
// CHECK-COUNT-4:   opencl.vec_splat %{{.*}} : vector<8xf32>
// CHECK:           scf.for %ci = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) : i32 {
// CHECK-NEXT:        %[[ROW0:[0-9a-z_]+]] = arith.muli %ci, %[[C49]] : i32
// CHECK-NEXT:        %[[ROW:[0-9a-z_]+]] = arith.addi %x_base, %[[ROW0]] : i32
// CHECK-NEXT:        %[[X0:[0-9a-z_]+]] = opencl.vload %input[%[[ROW]]] : !opencl.ptr<global, f32> -> vector<8xf32>
// CHECK:             %[[ROW8:[0-9a-z_]+]] = arith.addi %[[ROW]], %{{.*}} : i32
// CHECK-NEXT:        %[[X1:[0-9a-z_]+]] = opencl.vload %input[%[[ROW8]]] : !opencl.ptr<global, f32> -> vector<8xf32>
// CHECK-NOT:         opencl.vload
// CHECK:             %[[W0:[0-9a-z_]+]] = opencl.load %weight[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-NEXT:        %[[S0:[0-9a-z_]+]] = opencl.vec_splat %[[W0]] : vector<8xf32>
// CHECK-NEXT:        math.fma %[[X0]], %[[S0]], %{{.*}} : vector<8xf32>
// CHECK-NEXT:        math.fma %[[X1]], %[[S0]], %{{.*}} : vector<8xf32>
// CHECK-COUNT-3:     opencl.load %weight
// CHECK-NOT:         opencl.load
// CHECK-NOT:         opencl.vload
// CHECK:             scf.yield {{.*}} : vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>
// CHECK-NEXT:      }
// ReLU on whole vectors, then eight float8 stores (4 channels x 2 vectors).
// CHECK:           arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:      opencl.vstore %{{.*}}, %out[%out_base] : vector<8xf32>, !opencl.ptr<global, f32>
// CHECK-COUNT-7:   opencl.vstore %{{.*}}, %out[%{{.*}}] : vector<8xf32>, !opencl.ptr<global, f32>
// CHECK-NOT:       opencl.vstore
// The scalar tail (the else branch): pixels p0 .. 48, one at a time, four f32 accumulators.
// CHECK:         } else {
// CHECK:           scf.for %p = %p0 to %[[C49]] step %{{.*}} : i32 {
// CHECK:             scf.for %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) : i32 {
// CHECK-NOT:           opencl.vload
// CHECK:               opencl.load %input[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-COUNT-4:       opencl.load %weight
// CHECK:             arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4:     opencl.store %{{.*}}, %out[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-NOT:         opencl.store
// CHECK-NOT:         opencl.vstore
// CHECK:         opencl.return
// CHECK-LABEL: func.func @pointwise(%x: !opencl.buffer<588xf32>) -> !opencl.buffer<1176xf32> {
// CHECK:         %[[PW:[0-9a-z_]+]] = opencl.weight @conv_weight_pw4 : !opencl.buffer<72xf32>
// CHECK:         %[[B:[0-9a-z_]+]] = opencl.weight @b : !opencl.buffer<12xf32>
// CHECK:         %[[OUT:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<1176xf32>
// CHECK-NEXT:    opencl.launch @conv1x1_pw8x2c4_relu(%x, %[[PW]], %[[B]], %[[OUT]]) global [4, 6] : (!opencl.buffer<588xf32>, !opencl.buffer<72xf32>, !opencl.buffer<12xf32>, !opencl.buffer<1176xf32>)
// CHECK-NEXT:    func.return %[[OUT]]

// OCL-LABEL: __kernel void conv1x1_pw8x2c4_relu(
// OCL:           const int p0 = ((int)get_global_id(0)) * 16;
// OCL:           if ((p0 + 16) <= 49) {
// OCL:               for (int ci = 0; ci < 6; ++ci) {
// OCL:                   const float8 [[X0:v[0-9]+]] = vload8(0, input + [[ROW:v[0-9]+]]);
// OCL-NEXT:              const float8 [[X1:v[0-9]+]] = vload8(0, input + ([[ROW]] + 8));
// OCL:                   fma([[X0]], [[S:v[0-9]+]], {{v[0-9]+}});
// OCL:                   fma([[X1]], [[S]], {{v[0-9]+}});
// OCL:               }
// The output planes of the 4 channels are 49 floats apart; the second vector is 8 further.
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + out_base);
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + (out_base + 49));
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + (out_base + 98));
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + (out_base + 147));
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + (out_base + 8));
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + (out_base + 57));
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + (out_base + 106));
// OCL-NEXT:          vstore8(adreno_fmax_float8({{v[0-9]+}}, (float8)(0.0f)), 0, out + (out_base + 155));
// OCL-NEXT:      } else {
// OCL-NEXT:          for (int p = p0; p < 49; ++p) {
// OCL-NOT:               vload
// OCL:                   out[{{.*}}] = adreno_fmax_float({{v[0-9]+}}, 0.0f);
// OCL-NEXT:              out[{{.*}} + 49] = adreno_fmax_float({{v[0-9]+}}, 0.0f);
// OCL-NEXT:              out[{{.*}} + 98] = adreno_fmax_float({{v[0-9]+}}, 0.0f);
// OCL-NEXT:              out[{{.*}} + 147] = adreno_fmax_float({{v[0-9]+}}, 0.0f);
// OCL-NEXT:          }
// OCL-NEXT:      }
// OCL-NEXT:  }

func.func @pointwise(%x: tensor<2x6x7x7xf32>) -> tensor<2x12x7x7xf32> {
  %w = graph.constant dense<0.5> : tensor<12x6x1x1xf32>
  %b = graph.constant dense<1.0> : tensor<12xf32>
  %r = graph.fused {kernel_config = {kernel = "pointwise", co_block = 4 : i64, x_block = 2 : i64, vec = 8 : i64}} -> tensor<2x12x7x7xf32> {
    %c = graph.conv2d %x, %w, %b : tensor<2x6x7x7xf32>, tensor<12x6x1x1xf32>, tensor<12xf32> -> tensor<2x12x7x7xf32>
    %a = graph.relu %c : tensor<2x12x7x7xf32>
    graph.yield %a : tensor<2x12x7x7xf32>
  }
  func.return %r : tensor<2x12x7x7xf32>
}

// An explicit config is kept by select-kernel-config, on either target.
// CPU-LABEL: func.func @pointwise
// CPU:         graph.fused {kernel_config = {kernel = "pointwise", co_block = 4 : i64, x_block = 2 : i64, vec = 8 : i64}}
// GPU-LABEL: func.func @pointwise
// GPU:         graph.fused {kernel_config = {kernel = "pointwise", co_block = 4 : i64, x_block = 2 : i64, vec = 8 : i64}}

// -----

// A pointwise config other than the CPU default: float4 vectors, one vector and two
// channels per work-item, no bias. The 4x4 plane is a multiple of the pixel step 4:
// no branch and no scalar tail. Weights packed [CO/2][CI][2] (`_pw2`).
// Grid: (16 / 4, 1 * 4 / 2) = (4, 2).

// CHECK-LABEL: opencl.kernel @conv1x1_pw4x1c2(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NOT:     scf.if
// CHECK:         scf.for %ci = {{.*}} -> (vector<4xf32>, vector<4xf32>) : i32 {
// CHECK:           %[[X:[0-9a-z_]+]] = opencl.vload %input[%{{.*}}] : !opencl.ptr<global, f32> -> vector<4xf32>
// CHECK-NOT:       opencl.vload
// CHECK:           math.fma %[[X]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:           math.fma %[[X]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    opencl.vstore %{{.*}}, %out[%out_base] : vector<4xf32>, !opencl.ptr<global, f32>
// CHECK:         opencl.vstore %{{.*}}, %out[%{{.*}}] : vector<4xf32>, !opencl.ptr<global, f32>
// CHECK-NEXT:    opencl.return
// CHECK-LABEL: func.func @pointwise_even(%x: !opencl.buffer<64xf32>) -> !opencl.buffer<64xf32> {
// CHECK-NEXT:    %[[PW:[0-9a-z_]+]] = opencl.weight @conv_weight_pw2 : !opencl.buffer<16xf32>
// CHECK-NEXT:    %[[OUT:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<64xf32>
// CHECK-NEXT:    opencl.launch @conv1x1_pw4x1c2(%x, %[[PW]], %[[OUT]]) global [4, 2] :

// OCL-LABEL: __kernel void conv1x1_pw4x1c2(
// OCL-NOT:       if (
// OCL:           for (int ci = 0; ci < 4; ++ci) {
// OCL-NEXT:          const float4 {{v[0-9]+}} = *((__global const float4*)(input + (x_base + (ci * 16))));
// OCL:           *((__global float4*)(out + out_base)) = {{v[0-9]+}};
// OCL-NEXT:      *((__global float4*)(out + (out_base + 16))) = {{v[0-9]+}};
// OCL-NEXT:  }

func.func @pointwise_even(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w {kernel_config = {kernel = "pointwise", co_block = 2 : i64, x_block = 1 : i64, vec = 4 : i64}} : tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x4x4xf32>
  func.return %c : tensor<1x4x4x4xf32>
}

// -----

// kernel = "plane" (PlaneSpec): a 3x3 pad-1 stride-1 depthwise conv, 8 channels,
// batch 2, 7x7, with a fused clip (ReLU6; graph-fuse moves the kernel_config written on
// the conv to the fused op). A work-item computes 8 consecutive pixels of one flattened
// plane. If all reads stay inside the plane (p0 - 8 >= 0, p0 + 7 + 8 < 49,
// p0 + 8 <= 49): the left and right columns of the window get a lane mask each (a
// float8 of 1/0 made once), then a loop over the window's rows (marked for unrolling)
// reads each tap with ONE vload8 at its flat offset (-8, -7, -6 plus 7 per row), the
// masked columns through one select each; one vstore8. Otherwise (scf.if's else) a loop
// over the 8 lanes computes each pixel with scalar loads over the usual window loop
// nest and stores it under a guard.
// Grid: (ceil(49 / 8), 2 * 8) = (7, 16).

// CHECK-LABEL: opencl.kernel @dwconv3x3_pl8_clip(%input: !opencl.ptr<global, f32>, %weight: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[C8:[0-9a-z_]+]] = arith.constant 8 : i32
// CHECK:         %[[C49:[0-9a-z_]+]] = arith.constant 49 : i32
// CHECK:         %p0 = arith.muli %{{.*}}, %[[C8]] : i32
// CHECK-NOT:     scf.if
// CHECK:         %[[LO:[0-9a-z_]+]] = arith.constant -8 : i32
// CHECK-NEXT:    %[[P_LO:[0-9a-z_]+]] = arith.addi %p0, %[[LO]] : i32
// CHECK:         arith.cmpi sge, %[[P_LO]], %{{.*}} : i32
// CHECK:         %[[C15:[0-9a-z_]+]] = arith.constant 15 : i32
// CHECK-NEXT:    %[[P_HI:[0-9a-z_]+]] = arith.addi %p0, %[[C15]] : i32
// CHECK-NEXT:    arith.cmpi slt, %[[P_HI]], %[[C49]] : i32
// CHECK:         %[[OK:[0-9a-z_]+]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:    %[[INSIDE:[0-9a-z_]+]] = arith.andi %[[OK]], %{{.*}} : i1
// CHECK-NEXT:    scf.if %[[INSIDE]] {
// Two column masks (kw = 0 and kw = 2), made before the loops.
// CHECK:           %[[MASK0:[0-9a-z_]+]] = opencl.vec_make {{.*}} : vector<8xf32>
// CHECK:           %[[MASK2:[0-9a-z_]+]] = opencl.vec_make {{.*}} : vector<8xf32>
// CHECK:           scf.for %ci =
// CHECK:             scf.for %kh = {{.*}} -> (vector<8xf32>) : i32 {
// Three vload8 per row of the window; the outer two columns masked.
// CHECK:               %[[L0:[0-9a-z_]+]] = opencl.vload %input[%{{.*}}] : !opencl.ptr<global, f32> -> vector<8xf32>
// CHECK-NEXT:          opencl.select_nonzero %[[MASK0]], %[[L0]], %{{.*}} : vector<8xf32>
// CHECK:               %[[L1:[0-9a-z_]+]] = opencl.vload %input[%{{.*}}] : !opencl.ptr<global, f32> -> vector<8xf32>
// CHECK-NOT:           opencl.select_nonzero %{{.*}}, %[[L1]]
// CHECK:               %[[L2:[0-9a-z_]+]] = opencl.vload %input[%{{.*}}] : !opencl.ptr<global, f32> -> vector<8xf32>
// CHECK-NEXT:          opencl.select_nonzero %[[MASK2]], %[[L2]], %{{.*}} : vector<8xf32>
// CHECK-NOT:           opencl.vload
// CHECK:             } {opencl.unroll = 0 : i64}
// CHECK:           arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           arith.minimumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           opencl.vstore %{{.*}}, %out[%{{.*}}] : vector<8xf32>, !opencl.ptr<global, f32>
// CHECK-NEXT:    } else {
// CHECK:           scf.for %lane =
// CHECK-NOT:         opencl.vload
// CHECK:             scf.for %kw =
// CHECK-NOT:         opencl.vstore
// CHECK:             scf.if
// CHECK:               opencl.store %{{.*}}, %out[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK-NOT:       opencl.store
// CHECK:         opencl.return
// CHECK-LABEL: func.func @depthwise(%x: !opencl.buffer<784xf32>) -> !opencl.buffer<784xf32> {
// CHECK-NEXT:    %[[W:[0-9a-z_]+]] = opencl.weight @{{[0-9a-z_]+}} : !opencl.buffer<72xf32>
// CHECK-NEXT:    %[[OUT:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<784xf32>
// CHECK-NEXT:    opencl.launch @dwconv3x3_pl8_clip(%x, %[[W]], %[[OUT]]) global [7, 16] : (!opencl.buffer<784xf32>, !opencl.buffer<72xf32>, !opencl.buffer<784xf32>)

// OCL-LABEL: __kernel void dwconv3x3_pl8_clip(
// OCL:           const int p0 = ((int)get_global_id(0)) * 8;
// OCL:           if ((((p0 + (-8)) >= 0) & ((p0 + 15) < 49)) & ((p0 + 8) <= 49)) {
// OCL:               #pragma unroll
// OCL-NEXT:          for (int kh = 0; kh < 3; ++kh) {
// OCL:                   const float8 {{v[0-9]+}} = vload8(0, input + ([[S:v[0-9]+]] + ([[R:v[0-9]+]] + (-8))));
// OCL:                   const float8 {{v[0-9]+}} = vload8(0, input + ([[S]] + ([[R]] + (-7))));
// OCL:                   const float8 {{v[0-9]+}} = vload8(0, input + ([[S]] + ([[R]] + (-6))));
// The masked columns: a vector ?: per tap.
// OCL:                   = fma(({{v[0-9]+}} != (float8)(0.0f)) ? {{v[0-9]+}} : (float8)(0.0f),
// ReLU6 on the whole vector and one float8 store.
// OCL-NOT:           vload
// OCL:               vstore8(adreno_fmin_float8(adreno_fmax_float8({{.*}}, (float8)(0.0f)), (float8)(6.0f)), 0, out + {{.*}});
// OCL-NEXT:      } else {
// OCL-NEXT:          for (int lane = 0; lane < 8; ++lane) {
// OCL-NOT:           vload
// OCL:               out[{{.*}}] = adreno_fmin_float(adreno_fmax_float(
// OCL-NOT:           vstore

func.func @depthwise(%x: tensor<2x8x7x7xf32>) -> tensor<2x8x7x7xf32> {
  %w = graph.constant dense<0.25> : tensor<8x1x3x3xf32>
  %d = graph.conv2d %x, %w {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>, kernel_config = {kernel = "plane", vec = 8 : i64}} : tensor<2x8x7x7xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x7x7xf32>
  %r = graph.clip %d {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x8x7x7xf32>
  func.return %r : tensor<2x8x7x7xf32>
}

// CPU-LABEL: func.func @depthwise
// CPU:         graph.fused {kernel_config = {kernel = "plane", co_block = 1 : i64, vec = 8 : i64}}
// GPU-LABEL: func.func @depthwise
// GPU:         graph.fused {kernel_config = {kernel = "plane", co_block = 1 : i64, vec = 8 : i64}}

// -----

// The same two convs without a config. On the CPU target select-kernel-config picks
// the configs written above (co_block 4: the largest of 4, 2, 1 that divides 12; a
// work_group may be added), and the lowering makes the same two kernels and grids.
// On the default (GPU) target neither kernel is chosen: both take the
// float4-over-channels kernel ("vec4").

// CPU-LABEL: func.func @defaults
// CPU:         %a = graph.fused {kernel_config = {kernel = "pointwise", co_block = 4 : i64, x_block = 2 : i64, vec = 8 : i64{{(, work_group = array<i64: [0-9, ]+>)?}}}} -> tensor<2x12x7x7xf32> {
// CPU-NEXT:      graph.conv2d %x, %w, %b :
// CPU-NEXT:      graph.relu
// CPU:         %r = graph.fused {kernel_config = {kernel = "plane", {{(co_block = 1 : i64, )?}}vec = 8 : i64}} -> tensor<2x8x7x7xf32> {
// CPU-NEXT:      graph.conv2d %y, %dw {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>} :
// CPU-NEXT:      graph.clip

// CPULOW-LABEL: func.func @defaults(
// CPULOW:         opencl.launch @conv1x1_pw8x2c4_relu(%x, %{{.*}}) global [4, 6]{{( local \[[0-9, ]+\])?}} :
// CPULOW:         opencl.launch @dwconv3x3_pl8_clip(%y, %{{.*}}) global [7, 16]{{( local \[[0-9, ]+\])?}} :

// GPU-LABEL: func.func @defaults
// GPU-NOT:     kernel = "pointwise"
// GPU-NOT:     kernel = "plane"
// GPU:         %a = graph.fused {kernel_config = {kernel = "vec4", co_block = 4 : i64, x_block = 1 : i64}} -> tensor<2x12x7x7xf32> {
// GPU-NOT:     kernel = "pointwise"
// GPU-NOT:     kernel = "plane"
// GPU:         %r = graph.fused {kernel_config = {kernel = "vec4", co_block = 4 : i64, x_block = 1 : i64}} -> tensor<2x8x7x7xf32> {
// GPU-NOT:     kernel = "pointwise"
// GPU-NOT:     kernel = "plane"

func.func @defaults(%x: tensor<2x6x7x7xf32>, %y: tensor<2x8x7x7xf32>) -> (tensor<2x12x7x7xf32>, tensor<2x8x7x7xf32>) {
  %w = graph.constant dense<0.5> : tensor<12x6x1x1xf32>
  %b = graph.constant dense<1.0> : tensor<12xf32>
  %c = graph.conv2d %x, %w, %b : tensor<2x6x7x7xf32>, tensor<12x6x1x1xf32>, tensor<12xf32> -> tensor<2x12x7x7xf32>
  %a = graph.relu %c : tensor<2x12x7x7xf32>
  %dw = graph.constant dense<0.25> : tensor<8x1x3x3xf32>
  %d = graph.conv2d %y, %dw {groups = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<2x8x7x7xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x7x7xf32>
  %r = graph.clip %d {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x8x7x7xf32>
  func.return %a, %r : tensor<2x12x7x7xf32>, tensor<2x8x7x7xf32>
}
