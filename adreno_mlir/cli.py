"""`adreno-mlir`: import, compile and run ONNX models from the command line.

Every user error prints `error: ...` (naming the node/op and what to do) and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from adreno_mlir.errors import AdrenoError


def _cmd_import(args: argparse.Namespace) -> int:
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.printing import module_to_text
    from adreno_mlir.weights import save_beside

    module = import_onnx(args.model)
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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="adreno-mlir", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    imp = sub.add_parser("import", help="import an ONNX model as graph-dialect IR")
    imp.add_argument("model", help="path of the .onnx file")
    imp.add_argument("-o", "--output", help="output .mlir file (weights go to <name>.weights/); default stdout")
    imp.set_defaults(func=_cmd_import)

    ex = sub.add_parser("example", help="write an ONNX model the project builds itself")
    ex.add_argument("name", help="example name (tinynet)")
    ex.add_argument("-o", "--output", required=True, help="output .onnx file")
    ex.add_argument("--seed", type=int, default=0)
    ex.set_defaults(func=_cmd_example)

    from adreno_mlir import cli_run

    cli_run.add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
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


if __name__ == "__main__":  # python -m adreno_mlir.cli
    sys.exit(main())
