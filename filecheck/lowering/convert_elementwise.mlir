// RUN: adreno-opt %s --split-input-file -p 'graph-fuse,convert-graph-to-opencl,cse' -o %t && filecheck %s < %t
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},convert-graph-to-opencl,cse' -o %t && filecheck %s --check-prefix=NOFUSE < %t

// add -> mul -> sigmoid with single-use intermediates: one kernel, one work-item per
// element. Broadcast operands are read through zero strides: the 1-element constant
// at index 0, the 4x1x1 one at the channel coordinate (not at the element index).

// CHECK-LABEL: opencl.kernel @add_mul_sigmoid(%in0: !opencl.ptr<global, f32>, %in1: !opencl.ptr<global, f32>, %in2: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NEXT:    %i = opencl.global_id 0
// CHECK:         %[[X:[0-9a-z_]+]] = opencl.load %in0[%{{.*}}] : !opencl.ptr<global, f32>
// CHECK:         %[[Z:[0-9a-z_]+]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[ONE:[0-9a-z_]+]] = opencl.load %in1[%[[Z]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:    %[[A:[0-9a-z_]+]] = arith.addf %[[X]], %[[ONE]] : f32
// CHECK-NEXT:    %[[S:[0-9a-z_]+]] = opencl.load %in2[%{{[0-9]+}}] : !opencl.ptr<global, f32>
// CHECK-NEXT:    %[[M:[0-9a-z_]+]] = arith.mulf %[[A]], %[[S]] : f32
// CHECK-NEXT:    %[[N:[0-9a-z_]+]] = arith.negf %[[M]] : f32
// CHECK-NEXT:    %[[E:[0-9a-z_]+]] = math.exp %[[N]] : f32
// CHECK-NEXT:    %[[F1:[0-9a-z_]+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[D:[0-9a-z_]+]] = arith.addf %[[F1]], %[[E]] : f32
// CHECK-NEXT:    %[[SIG:[0-9a-z_]+]] = arith.divf %[[F1]], %[[D]] : f32
// CHECK-NEXT:    opencl.store %[[SIG]], %out[%i] : !opencl.ptr<global, f32>
// CHECK-NEXT:    opencl.return
// CHECK-NOT:   opencl.kernel
// CHECK-LABEL: func.func @chain(%x: !opencl.buffer<16xf32>) -> !opencl.buffer<16xf32> {
// CHECK-NEXT:    %[[ONEB:[0-9a-z_]+]] = opencl.weight @{{.*}} : !opencl.buffer<1xf32>
// CHECK-NEXT:    %[[SB:[0-9a-z_]+]] = opencl.weight @{{.*}} : !opencl.buffer<4xf32>
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<16xf32>
// CHECK-NEXT:    opencl.launch @add_mul_sigmoid(%x, %[[ONEB]], %[[SB]], %[[R]]) global [16] : (!opencl.buffer<16xf32>, !opencl.buffer<1xf32>, !opencl.buffer<4xf32>, !opencl.buffer<16xf32>)
// CHECK-NEXT:    func.return %[[R]] : !opencl.buffer<16xf32>

// Without fusion: three kernels, three launches, two intermediate buffers.
// NOFUSE-LABEL: func.func @chain(
// NOFUSE:         opencl.launch @add(%x, %{{.*}}, %[[A:[0-9a-z_]+]]) global [16]
// NOFUSE:         opencl.launch @mul(%[[A]], %{{.*}}, %[[M:[0-9a-z_]+]]) global [16]
// NOFUSE:         opencl.launch @sigmoid(%[[M]], %{{.*}}) global [16]
func.func @chain(%x: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %one = graph.constant dense<1.0> : tensor<1xf32>
  %s = graph.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %a = graph.add %x, %one : (tensor<1x4x2x2xf32>, tensor<1xf32>) -> tensor<1x4x2x2xf32>
  %m = graph.mul %a, %s : (tensor<1x4x2x2xf32>, tensor<4x1x1xf32>) -> tensor<1x4x2x2xf32>
  %r = graph.sigmoid %m : tensor<1x4x2x2xf32>
  func.return %r : tensor<1x4x2x2xf32>
}

// -----

// A value read by two element-wise ops that meet again stays in the chain: relu, exp
// and the mul that reads relu's output again are one kernel, which computes relu once.
// A single element-wise op named like an OpenCL built-in (sqrt) gets a `_map` suffix.

// CHECK-LABEL: opencl.kernel @relu_exp_mul(%in0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NEXT:    %i = opencl.global_id 0
// CHECK-NEXT:    %[[V:[0-9a-z_]+]] = opencl.load %in0[%i]
// CHECK-NEXT:    %[[Z:[0-9a-z_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.maximumf %[[V]], %[[Z]] : f32
// CHECK-NEXT:    %[[E:[0-9a-z_]+]] = math.exp %[[R]] : f32
// CHECK-NEXT:    %[[P:[0-9a-z_]+]] = arith.mulf %[[E]], %[[R]] : f32
// CHECK-NEXT:    opencl.store %[[P]], %out[%i]
// CHECK-LABEL: opencl.kernel @sqrt_kernel(
// CHECK-LABEL: func.func @split(%x: !opencl.buffer<6xf32>) -> (!opencl.buffer<6xf32>, !opencl.buffer<6xf32>) {
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<6xf32>
// CHECK-NEXT:    opencl.launch @relu_exp_mul(%x, %[[Y]]) global [6]
// CHECK-NEXT:    %[[Q:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<6xf32>
// CHECK-NEXT:    opencl.launch @sqrt_kernel(%x, %[[Q]]) global [6]
// CHECK-NEXT:    func.return %[[Y]], %[[Q]]
func.func @split(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %r = graph.relu %x : tensor<2x3xf32>
  %e = graph.exp %r : tensor<2x3xf32>
  %y = graph.mul %e, %r : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %q = graph.sqrt %x : tensor<2x3xf32>
  func.return %y, %q : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Unary parameters and operand order: clip(0, 6), leaky_relu(0.1), then y - that.

// CHECK-LABEL: opencl.kernel @clip_leaky_relu_sub(%in0: !opencl.ptr<global, f32>, %in1: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-DAG:     %[[Y:[0-9a-z_]+]] = opencl.load %in0[%i]
// CHECK-DAG:     %[[X:[0-9a-z_]+]] = opencl.load %in1[%i]
// CHECK:         %[[LO:[0-9a-z_]+]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK-NEXT:    %[[SIX:[0-9a-z_]+]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = arith.minimumf %[[LO]], %[[SIX]] : f32
// CHECK:         arith.constant 1.000000e-01 : f32
// CHECK:         %[[L:[0-9a-z_]+]] = arith.addf
// CHECK-NEXT:    %[[D:[0-9a-z_]+]] = arith.subf %[[Y]], %[[L]] : f32
// CHECK-NEXT:    opencl.store %[[D]], %out[%i]
// CHECK-LABEL: func.func @params(%x: !opencl.buffer<8xf32>, %y: !opencl.buffer<8xf32>)
// CHECK:         opencl.launch @clip_leaky_relu_sub(%y, %x, %{{.*}}) global [8]
func.func @params(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %c = graph.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<8xf32>
  %l = graph.leaky_relu %c {alpha = 0.1 : f32} : tensor<8xf32>
  %s = graph.sub %y, %l : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %s : tensor<8xf32>
}

// -----

// Concat along axis 1: one copy per input into the same buffer. The offset along the
// axis is a launch argument, so inputs of one shape share a kernel: offsets 0, 6, 12
// and 15 for x, y (both 1x2x3), z (1x1x3, its own kernel) and x again.

// CHECK-LABEL: opencl.kernel @concat_copy(%in0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>, %out_offset: i32) {
// CHECK:         %[[V:[0-9a-z_]+]] = opencl.load %in0[%i]
// CHECK:         %[[IDX:[0-9a-z_]+]] = arith.addi %{{.*}}, %out_offset : i32
// CHECK-NEXT:    opencl.store %[[V]], %out[%[[IDX]]]
// CHECK-LABEL: opencl.kernel @concat_copy_1(%in0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>, %out_offset: i32) {
// CHECK-NOT:   opencl.kernel
// CHECK-LABEL: func.func @concat(%x: !opencl.buffer<6xf32>, %y: !opencl.buffer<6xf32>, %z: !opencl.buffer<3xf32>) -> !opencl.buffer<21xf32> {
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<21xf32>
// CHECK-NEXT:    %[[O0:[0-9a-z_]+]] = arith.constant 0 : i32
// CHECK-NEXT:    opencl.launch @concat_copy(%x, %[[C]], %[[O0]]) global [6]
// CHECK-NEXT:    %[[O1:[0-9a-z_]+]] = arith.constant 6 : i32
// CHECK-NEXT:    opencl.launch @concat_copy(%y, %[[C]], %[[O1]]) global [6]
// CHECK-NEXT:    %[[O2:[0-9a-z_]+]] = arith.constant 12 : i32
// CHECK-NEXT:    opencl.launch @concat_copy_1(%z, %[[C]], %[[O2]]) global [3]
// CHECK-NEXT:    %[[O3:[0-9a-z_]+]] = arith.constant 15 : i32
// CHECK-NEXT:    opencl.launch @concat_copy(%x, %[[C]], %[[O3]]) global [6]
// CHECK-NEXT:    func.return %[[C]]
func.func @concat(%x: tensor<1x2x3xf32>, %y: tensor<1x2x3xf32>, %z: tensor<1x1x3xf32>) -> tensor<1x7x3xf32> {
  %c = graph.concat %x, %y, %z, %x {axis = 1 : i64} : (tensor<1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x1x3xf32>, tensor<1x2x3xf32>) -> tensor<1x7x3xf32>
  func.return %c : tensor<1x7x3xf32>
}

// -----

// Transpose 2x3x4 by (2, 0, 1): the output is written contiguously; output coordinate
// (a, b, c) reads input offset a * 1 + b * 12 + c * 4.

// CHECK-LABEL: opencl.kernel @transpose(%in0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[C:[0-9a-z_]+]] = arith.remsi %i, %{{.*}} : i32
// CHECK:         %[[B:[0-9a-z_]+]] = arith.remsi
// CHECK-NEXT:    %[[A:[0-9a-z_]+]] = arith.divsi
// CHECK-NEXT:    %[[S12:[0-9a-z_]+]] = arith.constant 12 : i32
// CHECK-NEXT:    %[[B12:[0-9a-z_]+]] = arith.muli %[[B]], %[[S12]] : i32
// CHECK-NEXT:    %[[AB:[0-9a-z_]+]] = arith.addi %[[A]], %[[B12]] : i32
// CHECK-NEXT:    %[[S4:[0-9a-z_]+]] = arith.constant 4 : i32
// CHECK-NEXT:    %[[C4:[0-9a-z_]+]] = arith.muli %[[C]], %[[S4]] : i32
// CHECK-NEXT:    %[[IDX:[0-9a-z_]+]] = arith.addi %[[AB]], %[[C4]] : i32
// CHECK-NEXT:    %[[V:[0-9a-z_]+]] = opencl.load %in0[%[[IDX]]]
// CHECK-NEXT:    opencl.store %[[V]], %out[%i]
// CHECK-LABEL: func.func @permute(%x: !opencl.buffer<24xf32>) -> !opencl.buffer<24xf32> {
// CHECK-NEXT:    %[[T:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<24xf32>
// CHECK-NEXT:    opencl.launch @transpose(%x, %[[T]]) global [24]
func.func @permute(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return %t : tensor<4x2x3xf32>
}

// -----

// Strided slice of 1x4x6 from (0, 1, 1) by steps (1, 2, 2): base 1 * 6 + 1 = 7,
// strides 2 * 6 = 12 and 2 * 1 = 2.

// CHECK-LABEL: opencl.kernel @slice(%in0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK:         %[[S12:[0-9a-z_]+]] = arith.constant 12 : i32
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.muli %{{.*}}, %[[S12]] : i32
// CHECK:         %[[C:[0-9a-z_]+]] = arith.muli %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %[[RC:[0-9a-z_]+]] = arith.addi %[[R]], %[[C]] : i32
// CHECK-NEXT:    %[[BASE:[0-9a-z_]+]] = arith.constant 7 : i32
// CHECK-NEXT:    %[[IDX:[0-9a-z_]+]] = arith.addi %[[RC]], %[[BASE]] : i32
// CHECK-NEXT:    %[[V:[0-9a-z_]+]] = opencl.load %in0[%[[IDX]]]
// CHECK-NEXT:    opencl.store %[[V]], %out[%i]
// CHECK-LABEL: func.func @strided(%x: !opencl.buffer<24xf32>) -> !opencl.buffer<6xf32> {
// CHECK-NEXT:    %[[S:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<6xf32>
// CHECK-NEXT:    opencl.launch @slice(%x, %[[S]]) global [6]
func.func @strided(%x: tensor<1x4x6xf32>) -> tensor<1x2x3xf32> {
  %s = graph.slice %x {starts = array<i64: 0, 1, 1>, steps = array<i64: 1, 2, 2>} : (tensor<1x4x6xf32>) -> tensor<1x2x3xf32>
  func.return %s : tensor<1x2x3xf32>
}

// -----

// Reshapes are free: they reuse their input's buffer, before and after a kernel.

// CHECK-LABEL: func.func @reshapes(%x: !opencl.buffer<16xf32>) -> !opencl.buffer<16xf32> {
// CHECK-NEXT:    %[[E:[0-9a-z_]+]] = opencl.alloc_buffer : !opencl.buffer<16xf32>
// CHECK-NEXT:    opencl.launch @relu(%x, %[[E]]) global [16]
// CHECK-NEXT:    func.return %[[E]] : !opencl.buffer<16xf32>
func.func @reshapes(%x: tensor<1x4x2x2xf32>) -> tensor<4x4xf32> {
  %r = graph.reshape %x : (tensor<1x4x2x2xf32>) -> tensor<1x16xf32>
  %e = graph.relu %r : tensor<1x16xf32>
  %q = graph.reshape %e : (tensor<1x16xf32>) -> tensor<4x4xf32>
  func.return %q : tensor<4x4xf32>
}
