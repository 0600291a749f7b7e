// RUN: adreno-opt %s | adreno-opt | filecheck %s
// RUN: adreno-opt %s -p graph-fuse{epilogues=false},convert-graph-to-opencl 2>&1 | filecheck %s --check-prefix=LOWER

// Integer tensors computed at run time are f32 tensors holding integers (dialects/graph.py,
// "integers"): an i32 model input converted once (graph.int_to_float), a cumulative sum,
// truncation, integer division and remainders, a take on float ids. Round trip, and the
// lowering of each.

// CHECK-LABEL: func.func @positions
// CHECK:         %mask = graph.int_to_float %ids : (tensor<2x8xi32>) -> tensor<2x8xf32>
// CHECK:         %cs = graph.cumsum %mask {axis = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK:         %rev = graph.cumsum %mask {axis = 1 : i64, exclusive = 1 : i64, reverse = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK:         %t = graph.trunc %rev : tensor<2x8xf32>
// CHECK:         %q = graph.int_div %cs, %t : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK:         %r = graph.int_mod %q, %t : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK:         %rf = graph.int_fmod %r, %t : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK:         %e = graph.take %table, %rf {axis = 0 : i64} : (tensor<20x4xf32>, tensor<2x8xf32>) -> tensor<2x8x4xf32>

// LOWER-LABEL: opencl.kernel @int_to_float(%input: !opencl.ptr<global, i32>, %out: !opencl.ptr<global, f32>)
// LOWER:         arith.sitofp
// LOWER-LABEL: opencl.kernel @cumsum(
// LOWER:         scf.for
// LOWER-LABEL: opencl.kernel @cumsum_exclusive_reverse(
// LOWER:         scf.for
// LOWER:         math.trunc
// LOWER:         arith.divsi
// LOWER:         arith.remsi
// LOWER-LABEL: opencl.kernel @take(%input: !opencl.ptr<global, f32>, %ids: !opencl.ptr<global, f32>, %out: !opencl.ptr<global, f32>)
// LOWER:         arith.cmpf oge
// LOWER:         arith.fptosi
// LOWER:         arith.minsi
// LOWER-LABEL: func.func @positions(%ids: !opencl.buffer<16xi32>) -> !opencl.buffer<64xf32>
// LOWER:         opencl.launch @int_to_float(%ids, %{{.*}}) global [16]
// LOWER:         opencl.launch @cumsum(%{{.*}}, %{{.*}}) global [2]
func.func @positions(%ids: tensor<2x8xi32>) -> tensor<2x8x4xf32> attributes {graph.inputs = ["ids"], graph.outputs = ["e"]} {
  %table = graph.constant @table : tensor<20x4xf32>
  %mask = graph.int_to_float %ids : (tensor<2x8xi32>) -> tensor<2x8xf32>
  %cs = graph.cumsum %mask {axis = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %rev = graph.cumsum %mask {axis = 1 : i64, exclusive = 1 : i64, reverse = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %t = graph.trunc %rev : tensor<2x8xf32>
  %q = graph.int_div %cs, %t : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = graph.int_mod %q, %t : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %rf = graph.int_fmod %r, %t : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %e = graph.take %table, %rf {axis = 0 : i64} : (tensor<20x4xf32>, tensor<2x8xf32>) -> tensor<2x8x4xf32>
  func.return %e : tensor<2x8x4xf32>
}
