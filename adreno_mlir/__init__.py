"""adreno-mlir: ONNX models to OpenCL C for mobile GPUs, as an xDSL dialect pipeline."""

from adreno_mlir.errors import CompileError


def compile(*args, **kwargs):
    """See `adreno_mlir.api.compile`."""
    from adreno_mlir.api import compile as _compile

    return _compile(*args, **kwargs)


__all__ = ["CompileError", "compile"]
