// RUN: adreno-opt %s --split-input-file -p graph-fuse | filecheck %s
// RUN: adreno-opt %s --split-input-file -p graph-fuse,select-kernel-config,convert-graph-to-opencl,cse -o %t && filecheck %s --check-prefix=LAUNCH < %t
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false}' | filecheck %s --check-prefix=NOEPI

// graph-fuse wraps a head and the element-wise ops that follow it (single user, same
// shape) into one `graph.fused` region, and every other kernel op into a region of its
// own (one region per kernel, as IREE forms a dispatch region per kernel). The LAUNCH
// run lowers every case: one `opencl.launch` per region, nothing more. The NOEPI run
// (`graph-fuse{epilogues=false}`) fuses nothing: each kernel op gets a region alone.
// (select-kernel-config is in the LAUNCH run because the lowering's defaults for an
// unconfigured NCHW conv, co_block = 8, are refused for the 4-channel convs below.)

// conv + bias + ReLU + residual add: one region headed by the conv; the region takes
// the name of the last op and replaces it; the outside values (weights, residual) are
// read from inside the region.

// CHECK-LABEL: func.func @residual(%x: tensor<1x8x6x6xf32>)
// CHECK:         %[[W:.+]] = graph.constant dense<5.000000e-01> : tensor<8x8x3x3xf32>
// CHECK:         %[[B:.+]] = graph.constant dense<{{.*}}> : tensor<8xf32>
// CHECK-NEXT:    %a = graph.fused -> tensor<1x8x6x6xf32> {
// CHECK-NEXT:      %[[C:.+]] = graph.conv2d %x, %[[W]], %[[B]] {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32> -> tensor<1x8x6x6xf32>
// CHECK-NEXT:      %[[R:.+]] = graph.relu %[[C]] : tensor<1x8x6x6xf32>
// CHECK-NEXT:      %[[A:.+]] = graph.add %[[R]], %x : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
// CHECK-NEXT:      graph.yield %[[A]] : tensor<1x8x6x6xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %a : tensor<1x8x6x6xf32>

// LAUNCH-LABEL: func.func @residual
// LAUNCH-COUNT-1: opencl.launch @conv3x3_{{.*}}_relu_add(
// LAUNCH-NOT:     opencl.launch
func.func @residual(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32> -> tensor<1x8x6x6xf32>
  %r = graph.relu %c : tensor<1x8x6x6xf32>
  %a = graph.add %r, %x : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  func.return %a : tensor<1x8x6x6xf32>
}

// -----

// Squeeze-and-excitation: global_avg_pool -> conv -> relu -> conv -> hard_sigmoid -> mul.
// - The pool's only user is a conv (not element-wise): the pool gets a region of its
//   own.
// - conv + relu: one region.
// - conv + hard_sigmoid: one region. The mul `x * s` is NOT in it: its result
//   (1x16x8x8) is larger than the conv's (1x16x1x1), and an epilogue runs once per
//   element of the head's output. The mul (broadcasting) gets a region of its own.
// 4 kernels, 4 regions: pool, conv+relu, conv+hard_sigmoid, mul.

// CHECK-LABEL: func.func @se(%x: tensor<1x16x8x8xf32>)
// CHECK:         %p = graph.fused -> tensor<1x16x1x1xf32> {
// CHECK-NEXT:      %[[P:.+]] = graph.global_avg_pool %x : (tensor<1x16x8x8xf32>) -> tensor<1x16x1x1xf32>
// CHECK-NEXT:      graph.yield %[[P]] : tensor<1x16x1x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = graph.fused -> tensor<1x4x1x1xf32> {
// CHECK-NEXT:      %[[C1:.+]] = graph.conv2d %p, %w1, %b1
// CHECK-NEXT:      %[[R:.+]] = graph.relu %[[C1]] : tensor<1x4x1x1xf32>
// CHECK-NEXT:      graph.yield %[[R]] : tensor<1x4x1x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %s = graph.fused -> tensor<1x16x1x1xf32> {
// CHECK-NEXT:      %[[C2:.+]] = graph.conv2d %r, %w2, %b2
// CHECK-NEXT:      %[[S:.+]] = graph.hard_sigmoid %[[C2]] : tensor<1x16x1x1xf32>
// CHECK-NEXT:      graph.yield %[[S]] : tensor<1x16x1x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %m = graph.fused -> tensor<1x16x8x8xf32> {
// CHECK-NEXT:      %[[M:.+]] = graph.mul %x, %s : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:      graph.yield %[[M]] : tensor<1x16x8x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %m : tensor<1x16x8x8xf32>

// LAUNCH-LABEL: func.func @se
// LAUNCH-COUNT-4: opencl.launch
// LAUNCH-NOT:     opencl.launch
func.func @se(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w1 = graph.constant dense<0.5> : tensor<4x16x1x1xf32>
  %b1 = graph.constant dense<0.1> : tensor<4xf32>
  %w2 = graph.constant dense<0.25> : tensor<16x4x1x1xf32>
  %b2 = graph.constant dense<0.2> : tensor<16xf32>
  %p = graph.global_avg_pool %x : (tensor<1x16x8x8xf32>) -> tensor<1x16x1x1xf32>
  %c1 = graph.conv2d %p, %w1, %b1 : tensor<1x16x1x1xf32>, tensor<4x16x1x1xf32>, tensor<4xf32> -> tensor<1x4x1x1xf32>
  %r = graph.relu %c1 : tensor<1x4x1x1xf32>
  %c2 = graph.conv2d %r, %w2, %b2 : tensor<1x4x1x1xf32>, tensor<16x4x1x1xf32>, tensor<16xf32> -> tensor<1x16x1x1xf32>
  %s = graph.hard_sigmoid %c2 : tensor<1x16x1x1xf32>
  %m = graph.mul %x, %s : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %m : tensor<1x16x8x8xf32>
}

// -----

// Hard-swish written out: x * clip(x + 3, 0, 6) / 6. No compute head: the add heads
// the chain (its producer is a function argument) and clip, mul, div follow it. %x
// has three readers, which does not matter: only values produced inside the chain
// must have one user.

// CHECK-LABEL: func.func @hard_swish_chain(%x: tensor<1x8x4x4xf32>)
// CHECK:         %d = graph.fused -> tensor<1x8x4x4xf32> {
// CHECK-NEXT:      %[[A:.+]] = graph.add %x, %three
// CHECK-NEXT:      %[[C:.+]] = graph.clip %[[A]] {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32}
// CHECK-NEXT:      %[[M:.+]] = graph.mul %x, %[[C]]
// CHECK-NEXT:      %[[D:.+]] = graph.div %[[M]], %six
// CHECK-NEXT:      graph.yield %[[D]] : tensor<1x8x4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %d

// LAUNCH-LABEL: func.func @hard_swish_chain
// LAUNCH-COUNT-1: opencl.launch @add_clip_mul_div(
// LAUNCH-NOT:     opencl.launch
func.func @hard_swish_chain(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %three = graph.constant dense<3.0> : tensor<1xf32>
  %six = graph.constant dense<6.0> : tensor<1xf32>
  %a = graph.add %x, %three : (tensor<1x8x4x4xf32>, tensor<1xf32>) -> tensor<1x8x4x4xf32>
  %c = graph.clip %a {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x8x4x4xf32>
  %m = graph.mul %x, %c : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %d = graph.div %m, %six : (tensor<1x8x4x4xf32>, tensor<1xf32>) -> tensor<1x8x4x4xf32>
  func.return %d : tensor<1x8x4x4xf32>
}

// -----

// The conv result is read by the relu AND the add, which meet again: the group takes
// both (the kernel computes the conv once and reads it from a register twice), as it
// takes SiLU's x * sigmoid(x).

// CHECK-LABEL: func.func @two_users(%x: tensor<1x4x4x4xf32>)
// CHECK:         %a = graph.fused -> tensor<1x4x4x4xf32> {
// CHECK-NEXT:      %c = graph.conv2d %x, %w : tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:      %r = graph.relu %c : tensor<1x4x4x4xf32>
// CHECK-NEXT:      %[[A:.+]] = graph.add %r, %c
// CHECK-NEXT:      graph.yield %[[A]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %a

// LAUNCH-LABEL: func.func @two_users
// LAUNCH-NEXT:    opencl.weight
// LAUNCH-NEXT:    %a = opencl.alloc_buffer
// LAUNCH-NEXT:    %{{.*}} = arith.constant
// LAUNCH-NEXT:    opencl.launch @conv1x1_{{[a-z0-9_]*}}relu_add{{[a-z0-9_]*}}(%x,
// LAUNCH-NOT:     opencl.launch
func.func @two_users(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w : tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x4x4xf32>
  %r = graph.relu %c : tensor<1x4x4x4xf32>
  %a = graph.add %r, %c : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %a : tensor<1x4x4x4xf32>
}

// -----

// reduce_mean with keepdims = 0 takes no epilogue (its output coordinates are not those
// of the keepdims shape): it and the relu after it get a region each. A keepdims = 1
// mean heads a region with its sigmoid.

// CHECK-LABEL: func.func @reduce_mean_keepdims
// CHECK:         %m = graph.fused -> tensor<1x8xf32> {
// CHECK-NEXT:      %[[M:.+]] = graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:      graph.yield %[[M]] : tensor<1x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = graph.fused -> tensor<1x8xf32> {
// CHECK-NEXT:      %[[R:.+]] = graph.relu %m : tensor<1x8xf32>
// CHECK-NEXT:      graph.yield %[[R]] : tensor<1x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %s = graph.fused -> tensor<1x8x1x1xf32> {
// CHECK-NEXT:      %[[K:.+]] = graph.reduce_mean %x {axes = array<i64: 2, 3>}
// CHECK-NEXT:      %[[S:.+]] = graph.sigmoid %[[K]]
// CHECK-NEXT:      graph.yield %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %s

// LAUNCH-LABEL: func.func @reduce_mean_keepdims
// LAUNCH:         opencl.launch @reduce_mean(%x, %m)
// LAUNCH:         opencl.launch @relu(%m, %r)
// LAUNCH:         opencl.launch @reduce_mean_sigmoid(%x, %s)
// LAUNCH-NOT:     opencl.launch
func.func @reduce_mean_keepdims(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8xf32>, tensor<1x8x1x1xf32>) {
  %m = graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8xf32>
  %r = graph.relu %m : tensor<1x8xf32>
  %k = graph.reduce_mean %x {axes = array<i64: 2, 3>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x1x1xf32>
  %s = graph.sigmoid %k : tensor<1x8x1x1xf32>
  func.return %r, %s : tensor<1x8xf32>, tensor<1x8x1x1xf32>
}

// -----

// The same on NCHW4c texture tensors: conv + bias + relu + residual add is one region
// (the NCHW4c conv has OIHW4o-packed weights, CO/4 x CI x KH x KW x 4).

// CHECK-LABEL: func.func @packed(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>)
// CHECK:         %a = graph.fused -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
// CHECK-NEXT:      %[[C:.+]] = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x3x3x4xf32>, tensor<8xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:      %[[R:.+]] = graph.relu %[[C]] : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:      %[[A:.+]] = graph.add %[[R]], %x
// CHECK-NEXT:      graph.yield %[[A]] : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %a

// LAUNCH-LABEL: func.func @packed
// LAUNCH-COUNT-1: opencl.launch @conv3x3_4c{{.*}}_relu_add(
// LAUNCH-NOT:     opencl.launch
func.func @packed(%x: !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global> {
  %w = graph.constant dense<0.5> : tensor<2x8x3x3x4xf32>
  %b = graph.constant dense<0.25> : tensor<8xf32>
  %c = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>, tensor<2x8x3x3x4xf32>, tensor<8xf32> -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %r = graph.relu %c : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  %a = graph.add %r, %x : (!texture.tensor<1x2x8x8x4xf32, nchw4c, global>, !texture.tensor<1x2x8x8x4xf32, nchw4c, global>) -> !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
  func.return %a : !texture.tensor<1x2x8x8x4xf32, nchw4c, global>
}

// -----

// graph-fuse{epilogues=false}: no element-wise op joins its producer's kernel, so the
// relu -> exp chain (one region with the default options) becomes two one-op regions,
// the exp's reading the relu's result.

// CHECK-LABEL: func.func @relu_exp_chain(%x: tensor<1x8x4x4xf32>)
// CHECK-NEXT:    %e = graph.fused -> tensor<1x8x4x4xf32> {
// CHECK-NEXT:      %r = graph.relu %x : tensor<1x8x4x4xf32>
// CHECK-NEXT:      %[[E:.+]] = graph.exp %r : tensor<1x8x4x4xf32>
// CHECK-NEXT:      graph.yield %[[E]] : tensor<1x8x4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %e

// NOEPI-LABEL: func.func @relu_exp_chain(%x: tensor<1x8x4x4xf32>)
// NOEPI-NEXT:    %r = graph.fused -> tensor<1x8x4x4xf32> {
// NOEPI-NEXT:      %[[R:.+]] = graph.relu %x : tensor<1x8x4x4xf32>
// NOEPI-NEXT:      graph.yield %[[R]] : tensor<1x8x4x4xf32>
// NOEPI-NEXT:    }
// NOEPI-NEXT:    %e = graph.fused -> tensor<1x8x4x4xf32> {
// NOEPI-NEXT:      %[[E:.+]] = graph.exp %r : tensor<1x8x4x4xf32>
// NOEPI-NEXT:      graph.yield %[[E]] : tensor<1x8x4x4xf32>
// NOEPI-NEXT:    }
// NOEPI-NEXT:    func.return %e

// LAUNCH-LABEL: func.func @relu_exp_chain
// LAUNCH-COUNT-1: opencl.launch @relu_exp(
// LAUNCH-NOT:     opencl.launch
func.func @relu_exp_chain(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %r = graph.relu %x : tensor<1x8x4x4xf32>
  %e = graph.exp %r : tensor<1x8x4x4xf32>
  func.return %e : tensor<1x8x4x4xf32>
}

// -----

// What is no kernel gets no region: constants, `graph.reshape` views and the
// `texture.pack` of a constant (packed at compile time). Only the add, which reads
// them, is a kernel and gets a region.

// CHECK-LABEL: func.func @no_kernels(%x: tensor<1x16xf32>)
// CHECK-NEXT:    %c = graph.constant dense<1.000000e+00> : tensor<1x4x2x2xf32>
// CHECK-NEXT:    %p = texture.pack %c : tensor<1x4x2x2xf32> -> !texture.tensor<1x1x2x2x4xf32, nchw4c, global>
// CHECK-NEXT:    %v = graph.reshape %x : (tensor<1x16xf32>) -> tensor<1x4x2x2xf32>
// CHECK-NEXT:    %a = graph.fused -> tensor<1x4x2x2xf32> {
// CHECK-NEXT:      %[[A:.+]] = graph.add %v, %c : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
// CHECK-NEXT:      graph.yield %[[A]] : tensor<1x4x2x2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %a, %p
// CHECK-NOT:     graph.fused

// NOEPI-LABEL: func.func @no_kernels(%x: tensor<1x16xf32>)
// NOEPI-NEXT:    %c = graph.constant
// NOEPI-NEXT:    %p = texture.pack %c
// NOEPI-NEXT:    %v = graph.reshape %x
// NOEPI-NEXT:    %a = graph.fused -> tensor<1x4x2x2xf32> {
// NOEPI-NEXT:      %[[A:.+]] = graph.add %v, %c
// NOEPI-NEXT:      graph.yield %[[A]] : tensor<1x4x2x2xf32>
// NOEPI-NEXT:    }
// NOEPI-NEXT:    func.return %a, %p

// LAUNCH-LABEL: func.func @no_kernels
// LAUNCH-COUNT-1: opencl.launch @add(
// LAUNCH-NOT:     opencl.launch
func.func @no_kernels(%x: tensor<1x16xf32>) -> (tensor<1x4x2x2xf32>, !texture.tensor<1x1x2x2x4xf32, nchw4c, global>) {
  %c = graph.constant dense<1.0> : tensor<1x4x2x2xf32>
  %p = texture.pack %c : tensor<1x4x2x2xf32> -> !texture.tensor<1x1x2x2x4xf32, nchw4c, global>
  %v = graph.reshape %x : (tensor<1x16xf32>) -> tensor<1x4x2x2xf32>
  %a = graph.add %v, %c : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  func.return %a, %p : tensor<1x4x2x2xf32>, !texture.tensor<1x1x2x2x4xf32, nchw4c, global>
}
