// RUN: adreno-opt %s | adreno-opt | filecheck %s
// RUN: adreno-opt %s --split-input-file --verify-diagnostics -p graph-fuse{epilogues=false},convert-graph-to-opencl 2>&1 | filecheck %s --check-prefix=LOWER

// graph.take: a gather with run-time i32 ids (an embedding lookup). Round trip, and the
// lowering: the model input is an i32 buffer, the kernel reads `int` ids, wraps negative
// ones and clamps into the table.

// CHECK-LABEL: func.func @embed
// CHECK:         %e = graph.take %table, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<1x12xi32>) -> tensor<1x12x16xf32>
// LOWER-LABEL: opencl.kernel @take(%input: !opencl.ptr<global, f32>, %ids: !opencl.ptr<global, i32>, %out: !opencl.ptr<global, f32>)
// LOWER:         %id = opencl.load %ids[%{{.*}}] : !opencl.ptr<global, i32>
// LOWER:         arith.select
// LOWER:         arith.minsi
// LOWER-LABEL: func.func @embed(%ids: !opencl.buffer<12xi32>) -> !opencl.buffer<192xf32>
// LOWER:         opencl.launch @take(%{{.*}}, %ids, %{{.*}}) global [192]
func.func @embed(%ids: tensor<1x12xi32>) -> tensor<1x12x16xf32> attributes {graph.inputs = ["ids"], graph.outputs = ["e"]} {
  %table = graph.constant @table : tensor<50x16xf32>
  %e = graph.take %table, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<1x12xi32>) -> tensor<1x12x16xf32>
  func.return %e : tensor<1x12x16xf32>
}
