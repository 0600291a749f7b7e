// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},convert-graph-to-opencl,cse' | filecheck %s

// graph.pad is one kernel, one work-item per output element: each axis maps its output
// coordinate to a source coordinate. Constant mode checks only the bounds an axis can
// leave (H is padded on both sides: two compares; W is cropped by 1 at the start and
// padded by 2 at the end: only the upper compare, then +1 for the crop), loads at a
// clamped index (0 when out of range) and selects the constant.

// CHECK-LABEL: opencl.kernel @pad_constant(%input: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NEXT:    %i = opencl.global_id 0
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : i32
// CHECK-NEXT:    %[[W:.*]] = arith.remsi %i, %[[C5]] : i32
// CHECK-NEXT:    %[[Q:.*]] = arith.divsi %i, %[[C5]] : i32
// CHECK-NEXT:    %[[H:.*]] = arith.remsi %[[Q]], %[[C5]] : i32
// CHECK-NEXT:    %[[NC:.*]] = arith.divsi %[[Q]], %[[C5]] : i32
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[JH:.*]] = arith.subi %[[H]], %[[C1]] : i32
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[GE:.*]] = arith.cmpi sge, %[[JH]], %[[C0]] : i32
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[LTH:.*]] = arith.cmpi slt, %[[JH]], %[[C3]] : i32
// CHECK-NEXT:    %[[LTW:.*]] = arith.cmpi slt, %[[W]], %[[C3]] : i32
// CHECK-NEXT:    %[[SW:.*]] = arith.addi %[[W]], %[[C1]] : i32
// CHECK-NEXT:    %[[A1:.*]] = arith.andi %[[GE]], %[[LTH]] : i1
// CHECK-NEXT:    %[[VALID:.*]] = arith.andi %[[A1]], %[[LTW]] : i1
// CHECK:         %[[IDX:.*]] = arith.addi %{{.*}}, %[[SW]] : i32
// CHECK-NEXT:    %[[SAFE:.*]] = arith.select %[[VALID]], %[[IDX]], %[[C0]] : i32
// CHECK-NEXT:    %[[V:.*]] = opencl.load %input[%[[SAFE]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:    %[[PADV:.*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:    %[[R:.*]] = arith.select %[[VALID]], %[[V]], %[[PADV]] : f32
// CHECK-NEXT:    opencl.store %[[R]], %out[%i] : !opencl.ptr<global, f32>
// CHECK-NEXT:    opencl.return
// CHECK-LABEL: func.func @constant(%x: !opencl.buffer<24xf32>) -> !opencl.buffer<50xf32> {
// CHECK-NEXT:    %p = opencl.alloc_buffer : !opencl.buffer<50xf32>
// CHECK-NEXT:    opencl.launch @pad_constant(%x, %p) global [50] : (!opencl.buffer<24xf32>, !opencl.buffer<50xf32>)
func.func @constant(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x5x5xf32> {
  %p = graph.pad %x {pads = array<i64: 0, 0, 1, -1, 0, 0, 1, 2>, value = 2.5 : f32} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x5xf32>
  func.return %p : tensor<1x2x5x5xf32>
}

// -----

// Edge clamps (max with 0, min with extent - 1), reflect mirrors (|j|, then
// min(j, 2 (extent - 1) - j)), wrap adds a multiple of the extent before the
// remainder (OpenCL's % keeps the sign). No bounds checks, no select: every output
// element reads one input element.

// CHECK-LABEL: opencl.kernel @pad_edge(
// CHECK:         %[[J:.*]] = arith.subi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[LO:.*]] = arith.maxsi %[[J]], %[[C0]] : i32
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : i32
// CHECK-NEXT:    %{{.*}} = arith.minsi %[[LO]], %[[C2]] : i32
// CHECK-NOT:     arith.select
// CHECK:         opencl.return
// CHECK-LABEL: opencl.kernel @pad_reflect(
// CHECK:         %[[J:.*]] = arith.subi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[NJ:.*]] = arith.subi %[[C0]], %[[J]] : i32
// CHECK-NEXT:    %[[ABS:.*]] = arith.maxsi %[[J]], %[[NJ]] : i32
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT:    %[[M:.*]] = arith.subi %[[C4]], %[[ABS]] : i32
// CHECK-NEXT:    %{{.*}} = arith.minsi %[[ABS]], %[[M]] : i32
// CHECK-NOT:     arith.select
// CHECK:         opencl.return
// CHECK-LABEL: opencl.kernel @pad_wrap(
// CHECK:         %[[J:.*]] = arith.subi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[P:.*]] = arith.addi %[[J]], %[[C3]] : i32
// CHECK-NEXT:    %{{.*}} = arith.remsi %[[P]], %[[C3]] : i32
// CHECK-NOT:     arith.select
// CHECK:         opencl.return
// CHECK-LABEL: func.func @modes(
// CHECK:         opencl.launch @pad_edge(%x, %{{.*}}) global [70]
// CHECK:         opencl.launch @pad_reflect(%x, %{{.*}}) global [70]
// CHECK:         opencl.launch @pad_wrap(%x, %{{.*}}) global [70]
func.func @modes(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>) {
  %e = graph.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 1>, mode = "edge"} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>
  %r = graph.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 1>, mode = "reflect"} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>
  %w = graph.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 1>, mode = "wrap"} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>
  func.return %e, %r, %w : tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>
}

// -----

// graph.expand is a copy whose input strides are 0 on broadcast axes: [3, 1, 4] read
// at [2, 3, 5, 4] coordinates uses only the channel (stride 4) and the last axis.

// CHECK-LABEL: opencl.kernel @expand(%in0: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>) {
// CHECK-NEXT:    %i = opencl.global_id 0
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT:    %[[W:.*]] = arith.remsi %i, %[[C4]] : i32
// CHECK-NEXT:    %[[Q:.*]] = arith.divsi %i, %[[C4]] : i32
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : i32
// CHECK-NEXT:    %[[Q2:.*]] = arith.divsi %[[Q]], %[[C5]] : i32
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[C:.*]] = arith.remsi %[[Q2]], %[[C3]] : i32
// CHECK-NEXT:    %[[CS:.*]] = arith.muli %[[C]], %[[C4]] : i32
// CHECK-NEXT:    %[[IDX:.*]] = arith.addi %[[CS]], %[[W]] : i32
// CHECK-NEXT:    %[[V:.*]] = opencl.load %in0[%[[IDX]]] : !opencl.ptr<global, f32>
// CHECK-NEXT:    opencl.store %[[V]], %out[%i] : !opencl.ptr<global, f32>
// CHECK-LABEL: func.func @broadcast(%x: !opencl.buffer<12xf32>) -> !opencl.buffer<120xf32> {
// CHECK-NEXT:    %e = opencl.alloc_buffer : !opencl.buffer<120xf32>
// CHECK-NEXT:    opencl.launch @expand(%x, %e) global [120]
func.func @broadcast(%x: tensor<3x1x4xf32>) -> tensor<2x3x5x4xf32> {
  %e = graph.expand %x : (tensor<3x1x4xf32>) -> tensor<2x3x5x4xf32>
  func.return %e : tensor<2x3x5x4xf32>
}

// -----

// A slice with negative steps reads at negative strides from its start element
// (1 * 12 + 2 * 4 + 3 = 23); a concat on the last axis copies each input at its offset
// along that axis (0, then 4) into rows of 6.

// CHECK-LABEL: opencl.kernel @slice(
// CHECK-DAG:     arith.constant -12 : i32
// CHECK-DAG:     arith.constant -4 : i32
// CHECK-DAG:     arith.constant -2 : i32
// CHECK:         %[[B:.*]] = arith.constant 23 : i32
// CHECK-NEXT:    %[[IDX:.*]] = arith.addi %{{.*}}, %[[B]] : i32
// CHECK-NEXT:    opencl.load %in0[%[[IDX]]]
// CHECK-LABEL: opencl.kernel @concat_copy(
// CHECK:         arith.constant 18 : i32
// CHECK:         arith.constant 6 : i32
// CHECK:         arith.addi %{{.*}}, %out_offset : i32
// CHECK-LABEL: func.func @slice_concat(
// CHECK:         opencl.launch @slice(%x, %[[S:.*]]) global [12]
// CHECK:         %[[C:.*]] = opencl.alloc_buffer : !opencl.buffer<36xf32>
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    opencl.launch @concat_copy(%x, %[[C]], %[[O0]]) global [24]
// CHECK-NEXT:    %[[O4:.*]] = arith.constant 4 : i32
// CHECK-NEXT:    opencl.launch @concat_copy_1(%[[S]], %[[C]], %[[O4]]) global [12]
func.func @slice_concat(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x6xf32> {
  %s = graph.slice %x {starts = array<i64: 0, 1, 2, 3>, steps = array<i64: 1, -1, -1, -2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %c = graph.concat %x, %s {axis = 3 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x6xf32>
  func.return %c : tensor<1x2x3x6xf32>
}
