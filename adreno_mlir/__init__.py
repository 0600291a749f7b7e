"""adreno-mlir: ONNX models to OpenCL C for mobile GPUs, as an xDSL dialect pipeline."""

from adreno_mlir.errors import CompileError

__all__ = ["CompileError"]
