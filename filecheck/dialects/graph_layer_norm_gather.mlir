// RUN: adreno-opt %s --split-input-file | adreno-opt --split-input-file | filecheck %s
// RUN: adreno-opt %s --split-input-file -p graph-canonicalize | filecheck %s --check-prefix=CANON
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},select-kernel-config{target=adreno-740},convert-graph-to-opencl,cse' | filecheck %s --check-prefix=GPU
// RUN: adreno-opt %s --split-input-file -p 'graph-fuse{epilogues=false},select-kernel-config{target=pocl-cpu},convert-graph-to-opencl,cse' | filecheck %s --check-prefix=CPU

// graph.layer_norm over the trailing axes: two reductions (the mean, then the mean square
// of x - mean: no cancellation), then (x - mean) / sqrt(var + eps) * scale + bias. A row
// of 64: on a GPU profile a work-group of 32 per row (`reduce_items`; each sum is a
// work_group_allsum in its own local array), on a CPU one work-item loops over the row.

// CHECK-LABEL: func.func @ln
// CHECK:         %y = graph.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.000000e-03 : f32} : tensor<2x5x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x5x64xf32>
// GPU-LABEL: opencl.kernel @layer_norm_wg32(
// GPU:         %row = opencl.global_id 1
// GPU:         %l = opencl.local_id 0
// GPU:         %mean = opencl.local_alloc {size = 32 : i64} : !opencl.ptr<local, f32>
// GPU:         opencl.barrier local
// GPU:         %var = opencl.local_alloc {size = 32 : i64} : !opencl.ptr<local, f32>
// GPU:         opencl.barrier local
// GPU:         math.sqrt
// GPU-LABEL: func.func @ln
// GPU:         opencl.launch @layer_norm_wg32(%x, %s, %b, %y) global [32, 10] local [32, 1]
// CPU-LABEL: opencl.kernel @layer_norm(
// CPU-NOT:     opencl.barrier
// CPU-LABEL: func.func @ln
// CPU:         opencl.launch @layer_norm(%x, %s, %b, %y) global [10]
func.func @ln(%x: tensor<2x5x64xf32>) -> tensor<2x5x64xf32> attributes {graph.inputs = ["x"], graph.outputs = ["y"]} {
  %s = graph.constant dense<1.5> : tensor<64xf32>
  %b = graph.constant dense<0.25> : tensor<64xf32>
  %y = graph.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.000000e-03 : f32} : tensor<2x5x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x5x64xf32>
  func.return %y : tensor<2x5x64xf32>
}

// -----

// graph.gather with constant indices: evenly spaced ones (attention's q/k/v split takes
// index 1 of a [3, ...] tensor) canonicalize to a slice plus a reshape; arbitrary ones
// keep the op and lower to the index-table kernel.

// CHECK-LABEL: func.func @gathers
// CHECK:         graph.gather %x {axis = 0 : i64, indices = array<i64: 1>, indices_shape = array<i64>}
// CHECK:         graph.gather %x {axis = 2 : i64, indices = array<i64: 3, 0, 3>, indices_shape = array<i64: 3>}
// CANON-LABEL: func.func @gathers
// CANON:         %[[S:.*]] = graph.slice %x {starts = array<i64: 1, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<3x4x5xf32>) -> tensor<1x4x5xf32>
// CANON-NEXT:    %{{.*}} = graph.reshape %[[S]] : (tensor<1x4x5xf32>) -> tensor<4x5xf32>
// CANON-NEXT:    %many = graph.gather %x {axis = 2 : i64
// (Without graph-canonicalize both gathers take the table kernel.)
// CPU-LABEL: opencl.kernel @gather_1(%input: !opencl.ptr<global, f32>, %indices: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// CPU:         %[[T:.*]] = opencl.load %indices[%p] : !opencl.ptr<global, f32>
// CPU:         arith.fptosi %[[T]]
// CPU-LABEL: func.func @gathers
// CPU:         %[[TABLE:.*]] = opencl.weight @x_indices_1 : !opencl.buffer<3xf32>
// CPU:         opencl.launch @gather_1(%x, %[[TABLE]], %many) global [36]
func.func @gathers(%x: tensor<3x4x5xf32>) -> (tensor<4x5xf32>, tensor<3x4x3xf32>) attributes {graph.inputs = ["x"], graph.outputs = ["one", "many"]} {
  %one = graph.gather %x {axis = 0 : i64, indices = array<i64: 1>, indices_shape = array<i64>} : (tensor<3x4x5xf32>) -> tensor<4x5xf32>
  %many = graph.gather %x {axis = 2 : i64, indices = array<i64: 3, 0, 3>, indices_shape = array<i64: 3>} : (tensor<3x4x5xf32>) -> tensor<3x4x3xf32>
  func.return %one, %many : tensor<4x5xf32>, tensor<3x4x3xf32>
}
