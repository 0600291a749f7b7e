// RUN: %python %S/Inputs/make_models.py %t
// RUN: not adreno-mlir import %t/unsupported.onnx 2>&1 | filecheck %s --check-prefix=OPS
// RUN: not adreno-mlir import %t/dynamic.onnx 2>&1 | filecheck %s --check-prefix=DYN
// RUN: not adreno-mlir import %t/truncated.onnx 2>&1 | filecheck %s --check-prefix=TRUNC
// RUN: not adreno-mlir import %t/missing.onnx 2>&1 | filecheck %s --check-prefix=NOFILE

// Every unsupported op type is listed once with all of its nodes; no traceback.
// OPS: error: the model uses operators adreno-mlir does not support:
// OPS-NEXT: Sin (2 nodes): /sin1, /sin2
// OPS-NEXT: TopK (1 node): /topk
// OPS-NOT: Traceback

// DYN: error: model input 'x' has a dynamic shape ['batch', 8]; adreno-mlir compiles static shapes only
// TRUNC: error: {{.*}}truncated.onnx: {{.*}}
// TRUNC-NOT: Traceback
// NOFILE: error: {{.*}}missing.onnx: no such file
