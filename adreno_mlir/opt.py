"""`adreno-opt`: the mlir-opt of adreno-mlir (textual IR in, `-p pass,pass` out).

It is xDSL's `xdsl-opt` with the project's dialects, passes and targets registered
(`-t opencl` prints OpenCL C), source locations printed by default, and every
user error turned into a located diagnostic and a non-zero exit instead of a
Python traceback.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from adreno_mlir import weights
from adreno_mlir.errors import CompileError
from adreno_mlir.pass_options import parse_passes
from adreno_mlir.universe import ADRENO_UNIVERSE, _mlir_target


class AdrenoOptMain(xDSLOptMain):
    version_format = "adreno-opt (xdsl {xdsl_version})"

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in ADRENO_UNIVERSE.all_dialects.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in ADRENO_UNIVERSE.all_passes.items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets.update(ADRENO_UNIVERSE.all_targets)
        self.available_targets["mlir"] = _mlir_target

    def setup_pipeline(self):
        # Every pass name and option is checked first: a bad one is a one-line error naming
        # the pass, the option and the values it takes (adreno_mlir.pass_options).
        parse_passes(self.available_passes, self.args.passes)
        super().setup_pipeline()

    def apply_passes(self, prog):
        super().apply_passes(prog)
        # Weights must exist on disk, where the output says, for the output to re-parse
        # (only IR output refers to them: `-t opencl` prints code without weights).
        if not self.args.target.startswith("mlir"):
            return
        output = Path(self.args.output_file) if self.args.output_file else None
        stem = Path(self.args.input_file).stem if self.args.input_file else "stdin"
        weights.flush(prog, output, stem)

    def prepare_output(self):
        """`-o FILE` collects the output and writes it when the run succeeds (`run`): a
        failed run leaves no empty or half-written FILE (and an existing one as it was)."""
        if not self.args.output_file:
            return sys.stdout
        self._pending = _Pending()
        return self._pending

    def run(self):
        if self.args.input_file:
            weights.base_directory = Path(self.args.input_file).resolve().parent
        super().run()
        pending = getattr(self, "_pending", None)
        if pending is not None:
            out = Path(self.args.output_file)
            tmp = out.with_name(f".{out.name}.tmp")
            tmp.write_text(pending.getvalue())
            tmp.replace(out)


class _Pending(io.StringIO):
    """The output of a run to `-o FILE`, kept until the run has succeeded (xDSL closes the
    stream in a `finally`, so closing must not drop it)."""

    def close(self) -> None:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    try:
        AdrenoOptMain(description="adreno-mlir modular optimizer driver", args=argv).run()
    except (ParseError, DiagnosticException, PassFailedException, CompileError) as e:
        print(f"error: {e}" if not isinstance(e, ParseError) else str(e), file=sys.stderr)
        for note in getattr(e, "__notes__", []):  # the IR with the failing op marked
            print(note, file=sys.stderr)
        return 1
    except ArgSpecParseError as e:  # a BaseException in xDSL: would escape `except Exception`
        print(f"error: {e}", file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # e.g. -o under a regular file, a directory, no permission
        print(f"error: cannot {'write' if e.filename != _input_file(argv) else 'read'} {e.filename}: "
              f"{e.strerror or e}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as e:
        source = _input_file(argv) or "the input"
        print(f"error: {source} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
              "adreno-opt reads textual IR (.mlir)", file=sys.stderr)
        return 1
    except (KeyError, ValueError) as e:
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug of ours, reported as one
        from adreno_mlir.errors import report_internal_error

        return report_internal_error("adreno-opt", e)
    return 0


def _input_file(argv: Sequence[str] | None) -> str | None:
    """The positional input file of an adreno-opt command line (for error messages)."""
    args = list(sys.argv[1:] if argv is None else argv)
    takes_value = {"-p", "--passes", "-t", "--target", "-o", "--output-file"}
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in takes_value:
            skip = True
        elif not a.startswith("-"):
            return a
    return None


if __name__ == "__main__":
    sys.exit(main())
