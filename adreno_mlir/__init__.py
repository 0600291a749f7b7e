"""adreno-mlir: ONNX models to OpenCL C for mobile GPUs, as an xDSL dialect pipeline."""

import os as _os

# The compiler's folders (dialects/, passes/, lowering/) sit beside this package in the
# repository and install as adreno_mlir.dialects etc. (pyproject's package-dir). When
# the package runs straight from a checkout without being installed (PYTHONPATH=repo,
# as on the GPU machine), the repository root joins this package's search path so those
# names resolve the same way.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "dialects")) and _os.path.isfile(
        _os.path.join(_root, "dialects", "graph.py")):
    __path__.append(_root)

from adreno_mlir.errors import AdrenoError, CompileError, InputError


def compile(*args, **kwargs):
    """See `adreno_mlir.api.compile`."""
    from adreno_mlir.api import compile as _compile

    return _compile(*args, **kwargs)


def compile_decoder(*args, **kwargs):
    """See `adreno_mlir.generation.compile_decoder`: a decoder's prefill and decode
    programs sharing weights and a KV cache on the device, and `generate()`."""
    from adreno_mlir.generation import compile_decoder as _compile_decoder

    return _compile_decoder(*args, **kwargs)


def load(path, device=None, cache=None, runtime=None):
    """See `adreno_mlir.artifact.load`: run a saved artifact without the compiler
    (imports no xDSL)."""
    from adreno_mlir.artifact import load as _load

    return _load(path, device=device, cache=cache, runtime=runtime)


__all__ = ["AdrenoError", "CompileError", "InputError", "compile", "compile_decoder", "load"]
