// RUN: %python %S/Inputs/make_models.py %t
// RUN: not adreno-mlir import %t/unsupported.onnx 2>&1 | filecheck %s --check-prefix=OPS
// RUN: not adreno-mlir import %t/dynamic.onnx 2>&1 | filecheck %s --check-prefix=DYN
// RUN: adreno-mlir import %t/dynamic.onnx --dim batch=2 | filecheck %s --check-prefix=BOUND
// RUN: not adreno-mlir import %t/truncated.onnx 2>&1 | filecheck %s --check-prefix=TRUNC
// RUN: not adreno-mlir import %t/missing.onnx 2>&1 | filecheck %s --check-prefix=NOFILE

// Every unsupported op type is listed once with all of its nodes; no traceback.
// OPS: error: the model uses operators adreno-mlir does not support:
// OPS-NEXT: Sin (2 nodes): /sin1, /sin2
// OPS-NEXT: TopK (1 node): /topk
// OPS-NOT: Traceback

// DYN: error: model input 'x' has a dynamic shape ['batch', 8]; adreno-mlir compiles static shapes: bind its dims at compile time, e.g. compile(model, input_shapes={'x': (1, 8)}) or dims={'batch': 1}; on the command line --input-shape x:1,8 or --dim batch=1
// BOUND: func.func @main(%x: tensor<2x8xf32>)
// TRUNC: error: {{.*}}truncated.onnx: {{.*}}
// TRUNC-NOT: Traceback
// NOFILE: error: {{.*}}missing.onnx: no such file
