// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,select-kernel-config{min-work-items=1},convert-graph-to-opencl,cse' -t opencl -o %t && filecheck %s < %t

// A small classifier, lowered and printed as one OpenCL C program: 1x1 conv + bias +
// ReLU (float4 schedule, 4 channels x 2 pixels per work-item), a free flatten, and a
// fully connected layer (gemm, transB, bias fused as its epilogue). Only kernels are
// printed, not the host function. The conv's input channel count is a kernel argument.

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
// CHECK-NEXT:      const float4 bias0 = vload4(0, bias);
// CHECK-NEXT:      float4 [[ACC0:[a-z0-9_]+]] = bias0;
// CHECK-NEXT:      float4 [[ACC1:[a-z0-9_]+]] = bias0;
// CHECK-NEXT:      for (int [[I:[a-z0-9_]+]] = 0; [[I]] < ci; ++[[I]]) {
// CHECK-NEXT:          const int [[PLANE:v[0-9]+]] = x_base + ([[I]] * 4);
// CHECK-NEXT:          const float4 [[WV:v[0-9]+]] = vload4([[I]], weight);
// CHECK-NEXT:          const int [[ROW:v[0-9]+]] = oy * 2;
// CHECK-NEXT:          const float [[X0:v[0-9]+]] = input{{\[}}[[PLANE]] + ([[ROW]] + ox)];
// CHECK-NEXT:          const float [[X1:v[0-9]+]] = input{{\[}}[[PLANE]] + ([[ROW]] + [[OX1]])];
// CHECK-NEXT:          const float4 [[N0:[a-z0-9_]+]] = fma((float4)([[X0]]), [[WV]], [[ACC0]]);
// CHECK-NEXT:          const float4 [[N1:[a-z0-9_]+]] = fma((float4)([[X1]]), [[WV]], [[ACC1]]);
// CHECK-NEXT:          [[ACC0]] = [[N0]];
// CHECK-NEXT:          [[ACC1]] = [[N1]];
// CHECK-NEXT:      }
// CHECK-NEXT:      const int [[CO:v[0-9]+]] = z * 4;
// CHECK-NEXT:      const int [[O0:v[0-9]+]] = (([[CO]] * 2) + oy) * 2;
// CHECK-NEXT:      out{{\[}}[[O0]] + ox] = fmax([[ACC0]].s0, 0.0f);
// CHECK-NEXT:      const int [[O1:v[0-9]+]] = ((([[CO]] + 1) * 2) + oy) * 2;
// CHECK-NEXT:      out{{\[}}[[O1]] + ox] = fmax([[ACC0]].s1, 0.0f);
// CHECK-NEXT:      const int [[O2:v[0-9]+]] = ((([[CO]] + 2) * 2) + oy) * 2;
// CHECK-NEXT:      out{{\[}}[[O2]] + ox] = fmax([[ACC0]].s2, 0.0f);
// CHECK-NEXT:      const int [[O3:v[0-9]+]] = ((([[CO]] + 3) * 2) + oy) * 2;
// CHECK-NEXT:      out{{\[}}[[O3]] + ox] = fmax([[ACC0]].s3, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O0]] + [[OX1]]] = fmax([[ACC1]].s0, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O1]] + [[OX1]]] = fmax([[ACC1]].s1, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O2]] + [[OX1]]] = fmax([[ACC1]].s2, 0.0f);
// CHECK-NEXT:      out{{\[}}[[O3]] + [[OX1]]] = fmax([[ACC1]].s3, 0.0f);
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

// A padded 3x3 conv: taps that can fall outside the input are masked, the address
// clamped to 0 (never out of bounds) and the value replaced by 0.

// CHECK:       #pragma OPENCL FP_CONTRACT OFF
// CHECK-LABEL: __kernel void conv3x3_c4x2(
// CHECK:           const int iy0 = oy - 1;
// CHECK:           for (int [[I:[a-z0-9_]+]] = 0; [[I]] < ci; ++[[I]]) {
// CHECK:               const int [[OK:v[0-9]+]] = ([[OKY:v[0-9]+]] & [[OKX0:v[0-9]+]]) & [[OKX1:v[0-9]+]];
// CHECK-NEXT:          const float [[T:v[0-9]+]] = input{{\[}}[[OK]] ? ({{.*}}) : 0];
// CHECK:               fma((float4)([[OK]] ? [[T]] : 0.0f), {{.*}}
// CHECK:           }
// CHECK:           const int [[O:v[0-9]+]] = {{.*}} + oy) * 2;
// CHECK-NEXT:      out{{\[}}[[O]] + ox] = {{v[0-9]+}}.s0;
func.func @main(%x: tensor<1x1x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %w = graph.constant dense<1.0> : tensor<4x1x3x3xf32>
  %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x1x2x2xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x2x2xf32>
  func.return %c : tensor<1x4x2x2xf32>
}
