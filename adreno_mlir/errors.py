"""One exception type for every user-facing compiler error."""


class CompileError(Exception):
    """A problem with the user's model, IR or options; the message says what to do.

    The CLI prints it as `error: <message>` and exits non-zero, never a traceback.
    """


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
