"""`adreno-mlir`: import, compile and run ONNX models from the command line.

Every user error prints `error: ...` (naming the node/op and what to do) and exits 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from adreno_mlir.errors import AdrenoError


def _cmd_import(args: argparse.Namespace) -> int:
    from adreno_mlir.cli_run import shape_options
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.printing import module_to_text
    from adreno_mlir.weights import save_beside

    module = import_onnx(args.model, **shape_options(args))
    if args.output and args.output != "-":
        out = Path(args.output)
        save_beside(module, out)
        out.write_text(module_to_text(module))
    else:
        sys.stdout.write(module_to_text(module))
    return 0


def _cmd_example(args: argparse.Namespace) -> int:
    from adreno_mlir.examples import write_example

    path = write_example(args.name, args.output, args.seed)
    print(f"wrote {path}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's error convention: usage errors (a bad flag value, a missing
    argument) print the usage and `error: ...` and exit 1, like every other user error."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(1)


def _verbosity_arguments(p: argparse.ArgumentParser, default) -> None:
    """-q / -v, on `adreno-mlir` and on every command (`adreno-mlir -q run ...` and
    `adreno-mlir run -q ...` alike; a command's own flags win)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", default=default if default is not None else False,
                   help="only errors: no warnings, no progress bars")
    g.add_argument("-v", "--verbose", action="count", default=default if default is not None else 0,
                   help="log progress (-v: INFO, -vv: DEBUG)")


def build_parser() -> argparse.ArgumentParser:
    from adreno_mlir.cli_run import _version

    p = _Parser(prog="adreno-mlir", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"adreno-mlir {_version()}")
    _verbosity_arguments(p, None)
    sub = p.add_subparsers(dest="command", required=True)

    imp = sub.add_parser("import", help="import an ONNX model as graph-dialect IR")
    imp.add_argument("model", help="path of the .onnx file")
    imp.add_argument("-o", "--output", help="output .mlir file (weights go to <name>.weights/); default stdout")
    from adreno_mlir.cli_run import shape_arguments

    shape_arguments(imp)
    imp.set_defaults(func=_cmd_import)

    ex = sub.add_parser("example", help="write an ONNX model the project builds itself")
    ex.add_argument("name", help="example name (tinynet)")
    ex.add_argument("-o", "--output", required=True, help="output .onnx file")
    ex.add_argument("--seed", type=int, default=0)
    ex.set_defaults(func=_cmd_example)

    from adreno_mlir import cli_run

    cli_run.add_commands(sub)
    for command in sub.choices.values():
        _verbosity_arguments(command, argparse.SUPPRESS)
    return p


def _log_level(args: argparse.Namespace) -> int:
    """WARNING by default, ERROR with -q, INFO with -v, DEBUG with -vv."""
    if args.quiet:
        return logging.ERROR
    return {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)


class _StderrHandler(logging.StreamHandler):
    """Writes to the sys.stderr of the moment (a test's captured one too)."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = _log_level(args)
    if args.quiet and hasattr(args, "no_progress"):
        args.no_progress = True  # `tune`: no progress bar
    logger = logging.getLogger("adreno_mlir")
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s: %(name)s: %(message)s"))
    old_level = logger.level
    logger.setLevel(level)
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings():
            if args.quiet:  # adreno-mlir's warnings (program cache, native runtime) are WARNING level
                warnings.simplefilter("ignore")
            return args.func(args)
    except AdrenoError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug of ours, reported as one
        from adreno_mlir.errors import report_internal_error

        return report_internal_error("adreno-mlir", e)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


if __name__ == "__main__":  # python -m adreno_mlir.cli
    sys.exit(main())
