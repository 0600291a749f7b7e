// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl,cse' -t opencl -o %t && filecheck %s < %t

// A small classifier, lowered and printed as one OpenCL C program: 1x1 conv + bias +
// ReLU (float4 schedule, 4 channels x 2 pixels per work-item), a free flatten, and a
// fully connected layer (gemm, transB, bias fused as its epilogue). Only kernels are
// printed, not the host function. The conv's input channel count is a kernel argument.
// A 1x1 window is no loop (no kh/kw, no `#pragma unroll`): the loop over input
// channels holds the one tap. The eight stores share one base index (the block's
// first element) plus a constant offset each: +4 per channel (OH * OW), +1 per pixel.

// CHECK:       #pragma OPENCL FP_CONTRACT OFF
// CHECK-NOT:   sampler_t
// CHECK-LABEL: __kernel void conv1x1_c4x2_relu(
// CHECK-NEXT:      __global const float* input,
// CHECK-NEXT:      __global const float* weight,
// CHECK-NEXT:      __global const float* bias,
// CHECK-NEXT:      __global float* out,
// CHECK-NEXT:      int ci
// CHECK-NEXT:  ) {
// CHECK-NEXT:      const int oy = (int)get_global_id(1);
// CHECK-NEXT:      const int z = (int)get_global_id(2);
// CHECK-NEXT:      const int ox = ((int)get_global_id(0)) * 2;
// CHECK-NEXT:      const int [[OX1:v[0-9]+]] = ox + 1;
// CHECK-NEXT:      const int x_base = (z * ci) * 4;
// CHECK-NEXT:      const float4 bias0 = ((__global const float4*)bias)[0];
// CHECK-NEXT:      float4 [[ACC0:[a-z0-9_]+]] = bias0;
// CHECK-NEXT:      float4 [[ACC1:[a-z0-9_]+]] = bias0;
// CHECK-NEXT:      for (int [[I:[a-z0-9_]+]] = 0; [[I]] < ci; ++[[I]]) {
// CHECK-NEXT:          const int [[PLANE:v[0-9]+]] = x_base + ([[I]] * 4);
// CHECK-NEXT:          const float4 [[WV:v[0-9]+]] = ((__global const float4*)weight)[[[I]]];
// CHECK-NEXT:          const int [[ROW:v[0-9]+]] = oy * 2;
// CHECK-NEXT:          const float [[X0:v[0-9]+]] = input{{\[}}[[PLANE]] + ([[ROW]] + ox)];
// CHECK-NEXT:          const float [[X1:v[0-9]+]] = input{{\[}}[[PLANE]] + ([[ROW]] + [[OX1]])];
// CHECK-NEXT:          const float4 [[N0:[a-z0-9_]+]] = fma((float4)([[X0]]), [[WV]], [[ACC0]]);
// CHECK-NEXT:          const float4 [[N1:[a-z0-9_]+]] = fma((float4)([[X1]]), [[WV]], [[ACC1]]);
// CHECK-NEXT:          [[ACC0]] = [[N0]];
// CHECK-NEXT:          [[ACC1]] = [[N1]];
// CHECK-NEXT:      }
// CHECK-NEXT:      const int [[O:v[0-9]+]] = ((((z * 4) * 2) + oy) * 2) + ox;
// CHECK-NEXT:      out{{\[}}[[O]]] = adreno_fmax_float([[ACC0]].s0, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O]] + 4] = adreno_fmax_float([[ACC0]].s1, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O]] + 8] = adreno_fmax_float([[ACC0]].s2, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O]] + 12] = adreno_fmax_float([[ACC0]].s3, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O]] + 1] = adreno_fmax_float([[ACC1]].s0, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O]] + 5] = adreno_fmax_float([[ACC1]].s1, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O]] + 9] = adreno_fmax_float([[ACC1]].s2, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O]] + 13] = adreno_fmax_float([[ACC1]].s3, 0.0f);
// CHECK-NEXT:  }

// CHECK-LABEL: __kernel void gemm_add(
// CHECK-NEXT:      __global const float* a,
// CHECK-NEXT:      __global const float* b,
// CHECK-NEXT:      __global const float* x0,
// CHECK-NEXT:      __global float* out
// CHECK-NEXT:  ) {
// CHECK-NEXT:      const int col = (int)get_global_id(0);
// CHECK-NEXT:      const int row = (int)get_global_id(1);
// CHECK-NEXT:      float [[ACC:v[0-9]+]] = 0.0f;
// CHECK-NEXT:      for (int kk = 0; kk < 16; ++kk) {
// CHECK-NEXT:          const float [[A:v[0-9]+]] = a[(row * 16) + kk];
// CHECK-NEXT:          const float [[B:v[0-9]+]] = b[(col * 16) + kk];
// CHECK-NEXT:          [[ACC]] = fma([[A]], [[B]], [[ACC]]);
// CHECK-NEXT:      }
// CHECK-NEXT:      const float [[C:v[0-9]+]] = x0[col];
// CHECK-NEXT:      out[(row * 3) + col] = [[ACC]] + [[C]];
// CHECK-NEXT:  }
// CHECK-NOT:   __kernel
// CHECK-NOT:   main
func.func @main(%x: tensor<1x2x2x2xf32>) -> tensor<1x3xf32> {
  %w = graph.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]]]> : tensor<4x2x1x1xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = graph.conv2d %x, %w, %b : tensor<1x2x2x2xf32>, tensor<4x2x1x1xf32>, tensor<4xf32> -> tensor<1x4x2x2xf32>
  %r = graph.relu %c : tensor<1x4x2x2xf32>
  %f = graph.reshape %r : (tensor<1x4x2x2xf32>) -> tensor<1x16xf32>
  %fw = graph.constant dense<0.25> : tensor<3x16xf32>
  %fb = graph.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  %g = graph.gemm %f, %fw, %fb {trans_b = 1 : i64} : tensor<1x16xf32>, tensor<3x16xf32>, tensor<3xf32> -> tensor<1x3xf32>
  func.return %g : tensor<1x3xf32>
}

// -----

// A padded 3x3 conv: inside the loop over input channels the window is a `for` over
// kh holding a `for` over kw, each directly preceded by `#pragma unroll` (the OpenCL
// compiler unrolls the nine taps; the C holds one). The kw body is one tap: a float4
// of weights at (kh * 3 + kw), the row check shared by both pixels, and per pixel a
// masked load: taps that can fall outside the input are masked, the address clamped
// to 0 (never out of bounds) and the value replaced by 0. The accumulators are carried
// through both loops.

// CHECK:       #pragma OPENCL FP_CONTRACT OFF
// CHECK-LABEL: __kernel void conv3x3_c4x2(
// CHECK:           const int iy0 = oy - 1;
// CHECK:           for (int [[I:[a-z0-9_]+]] = 0; [[I]] < ci; ++[[I]]) {
// CHECK-NEXT:          const int [[PLANE:v[0-9]+]] = x_base + ([[I]] * 4);
// CHECK-NEXT:          const int [[WBASE:v[0-9]+]] = [[I]] * 9;
// CHECK-NEXT:          float4 [[H0:v[0-9]+]] = {{v[0-9]+}};
// CHECK-NEXT:          float4 [[H1:v[0-9]+]] = {{v[0-9]+}};
// CHECK-NEXT:          #pragma unroll
// CHECK-NEXT:          for (int kh = 0; kh < 3; ++kh) {
// CHECK-NEXT:              float4 [[A0:v[0-9]+]] = [[H0]];
// CHECK-NEXT:              float4 [[A1:v[0-9]+]] = [[H1]];
// CHECK-NEXT:              #pragma unroll
// CHECK-NEXT:              for (int kw = 0; kw < 3; ++kw) {
// CHECK-NEXT:                  const float4 [[WV:v[0-9]+]] = ((__global const float4*)weight)[[[WBASE]] + ((kh * 3) + kw)];
// CHECK-NEXT:                  const int [[IY:v[0-9]+]] = iy0 + kh;
// CHECK-NEXT:                  const int [[IX0:v[0-9]+]] = {{v[0-9]+}} + kw;
// CHECK-NEXT:                  const int [[ROW:v[0-9]+]] = [[IY]] * 2;
// CHECK-NEXT:                  const int [[OKY:v[0-9]+]] = ([[IY]] >= 0) & ([[IY]] < 2);
// CHECK-NEXT:                  const int [[OK0:v[0-9]+]] = ([[OKY]] & ([[IX0]] >= 0)) & ([[IX0]] < 2);
// CHECK-NEXT:                  const float [[T0:v[0-9]+]] = input{{\[}}[[OK0]] ? ([[PLANE]] + ([[ROW]] + [[IX0]])) : 0];
// CHECK-NEXT:                  const int [[IX1:v[0-9]+]] = {{v[0-9]+}} + kw;
// CHECK-NEXT:                  const int [[OK1:v[0-9]+]] = ([[OKY]] & ([[IX1]] >= 0)) & ([[IX1]] < 2);
// CHECK-NEXT:                  const float [[T1:v[0-9]+]] = input{{\[}}[[OK1]] ? ([[PLANE]] + ([[ROW]] + [[IX1]])) : 0];
// CHECK-NEXT:                  const float4 [[N0:[a-z0-9_]+]] = fma((float4)([[OK0]] ? [[T0]] : 0.0f), [[WV]], [[A0]]);
// CHECK-NEXT:                  const float4 [[N1:[a-z0-9_]+]] = fma((float4)([[OK1]] ? [[T1]] : 0.0f), [[WV]], [[A1]]);
// CHECK-NEXT:                  [[A0]] = [[N0]];
// CHECK-NEXT:                  [[A1]] = [[N1]];
// CHECK-NEXT:              }
// CHECK-NOT:           #pragma unroll
// CHECK:           }
// CHECK-NOT:       #pragma unroll
// CHECK:           const int [[O:v[0-9]+]] = {{.*}} + oy) * 2) + ox;
// CHECK-NEXT:      out{{\[}}[[O]]] = {{v[0-9]+}}.s0;
func.func @main(%x: tensor<1x1x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %w = graph.constant dense<1.0> : tensor<4x1x3x3xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x1x2x2xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x2x2xf32>
  func.return %c : tensor<1x4x2x2xf32>
}
