"""The exceptions adreno-mlir raises on purpose, one family under `AdrenoError`:

    AdrenoError                       catch this for "anything adreno-mlir refused"
    ├── CompileError                  the model, IR, options or device cannot be compiled or loaded
    │   ├── FrontendError             (adreno_mlir.frontend) the ONNX file or graph
    │   ├── LoweringError             (lowering.groups) an op or fused region with no kernel
    │   ├── RangeError                (adreno_mlir.range_guard) values beyond fp16 storage
    │   ├── DeviceError, ImageLimitError, PlanError (adreno_mlir.runtime) the device or the plan
    │   ├── ArtifactError             (adreno_mlir.artifact) a saved model that cannot be read or written
    │   └── NativeRuntimeError        (adreno_mlir.runtime.native) the C runtime is missing or refused
    └── InputError (also a ValueError) the feeds given to run()/profile(): names, shapes, dtypes

Every message names what is wrong (the node, op, file or input) and what to do. The CLIs
print `error: <message>` and exit 1, never a traceback. Anything else escaping is a bug
of adreno-mlir, reported as an internal error.
"""


class AdrenoError(Exception):
    """Base of every error adreno-mlir raises on purpose."""


class CompileError(AdrenoError):
    """A problem with the user's model, IR or options; the message says what to do.

    The CLI prints it as `error: <message>` and exits non-zero, never a traceback.
    """


class InputError(AdrenoError, ValueError):
    """Bad inputs to `run()` / `profile()` (unknown or missing names, wrong shape or dtype).
    Also a ValueError, as a wrong argument value is in Python."""


def read_json(path, error: type[AdrenoError], prefix: str = "", what: str = ""):
    """The JSON value in file `path`; an unreadable file or invalid JSON raises `error`
    naming the file (`prefix` starts the message, e.g. the pass that reads it; `what`
    says what the file is). A name ending in `.gz` is read through gzip (the tuning corpus)."""
    import gzip
    import json
    from pathlib import Path

    try:
        if str(path).endswith(".gz"):
            with gzip.open(path, "rt") as f:
                return json.loads(f.read())
        return json.loads(Path(path).read_text())
    except OSError as e:
        raise error(f"{prefix}cannot read {what}{path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{prefix}{path} is not valid JSON: {e}") from None


def op_where(op) -> str:
    """`'graph.conv2d' at loc("/layer1/conv")`: how errors name an op (its ONNX node)."""
    desc = getattr(op.location, "desc", None)
    return f"'{op.name}' at loc(\"{desc.data}\")" if desc is not None else f"'{op.name}'"


def report_internal_error(tool: str, exc: BaseException) -> int:
    """Last resort for a bug in the compiler itself: one line that says so (the
    traceback only with ADRENO_MLIR_DEBUG=1), exit status 2."""
    import os
    import sys
    import traceback

    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" ({os.path.basename(where.filename)}:{where.lineno})" if where else ""
    print(f"{tool}: internal compiler error{at}: {type(exc).__name__}: {exc}", file=sys.stderr)
    if os.environ.get("ADRENO_MLIR_DEBUG"):
        traceback.print_exception(exc)
    else:
        print("this is a bug in adreno-mlir; rerun with ADRENO_MLIR_DEBUG=1 for the traceback "
              "and report it", file=sys.stderr)
    return 2
