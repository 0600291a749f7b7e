// RUN: %python %S/Inputs/make_constant_output_models.py %t
// RUN: adreno-mlir import %t/constant_outputs.onnx | filecheck %s
// RUN: adreno-mlir import %t/constant_outputs.onnx -o %t/co.mlir && adreno-opt %t/co.mlir > %t/again.mlir
// RUN: adreno-opt %t/co.mlir -p 'graph-canonicalize,graph-fuse{epilogues=false},convert-graph-to-opencl' -o %t/host.mlir && filecheck %s --check-prefix=HOST < %t/host.mlir
// The round trip's diff comes last: lit's built-in diff resets PYTHONPATH for the RUN
// lines after it (they would run the installed adreno-mlir, not this checkout's).
// RUN: diff %t/co.mlir %t/again.mlir

// Constant model outputs (no graph input reaches them). A float32 one is a graph.constant
// the function returns like any value (the launch plan returns it as a constant). One of
// another element type (Shape's int64, a comparison's bool) has no graph tensor: it stays
// out of the function, in graph.constant_outputs (inline up to 8 elements, else a weight),
// while graph.outputs keeps every output in the model's order. The lowering carries the
// attribute to the host function.

// CHECK: func.func @main(%x: tensor<1x3x2x2xf32>) -> (tensor<2x2xf32>, tensor<1x3x2x2xf32>)
// CHECK-SAME: graph.outputs = ["w_plus_b", "s", "y", "mask", "big"]
// CHECK-SAME: graph.constant_outputs = {s = dense<[1, 3, 2, 2]> : tensor<4xi64>, mask = dense<{{\[\[}}false, false], [true, false]]> : tensor<2x2xi1>, big = @big}
// CHECK: %y = graph.relu %x
// CHECK: %w_plus_b = graph.constant dense<{{\[\[}}2.000000e+00, -1.000000e+00], [4.000000e+00, 1.500000e+00]]> : tensor<2x2xf32>
// CHECK: func.return %w_plus_b, %y : tensor<2x2xf32>, tensor<1x3x2x2xf32>

// HOST: func.func @main(%x: !opencl.buffer<12xf32>) -> (!opencl.buffer<4xf32>, !opencl.buffer<12xf32>)
// HOST-SAME: graph.constant_outputs = {s = dense<[1, 3, 2, 2]> : tensor<4xi64>, {{.*}}big = @big}
// HOST: %w_plus_b = opencl.weight @w_plus_b : !opencl.buffer<4xf32>
// HOST: func.return %w_plus_b, %y : !opencl.buffer<4xf32>, !opencl.buffer<12xf32>
