"""`adreno-opt`: the mlir-opt of adreno-mlir (textual IR in, `-p pass,pass` out).

It is xDSL's `xdsl-opt` with the project's dialects, passes and targets registered
(`-t opencl` prints OpenCL C), source locations printed by default, and every
user error turned into a located diagnostic and a non-zero exit instead of a
Python traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from adreno_mlir import weights
from adreno_mlir.errors import CompileError
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

    def apply_passes(self, prog):
        super().apply_passes(prog)
        # Weights created by passes must outlive this process for the output to re-parse.
        if self.args.output_file:
            directory = Path(self.args.output_file).with_suffix(".weights")
        else:  # beside the current directory, never in the input's (source) folder
            stem = Path(self.args.input_file).stem if self.args.input_file else "stdin"
            directory = Path.cwd() / f"{stem}.opt.weights"
        weights.flush(prog, directory)

    def run(self):
        if self.args.input_file:
            weights.base_directory = Path(self.args.input_file).resolve().parent
        super().run()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        AdrenoOptMain(description="adreno-mlir modular optimizer driver", args=argv).run()
    except (ParseError, DiagnosticException, PassFailedException, CompileError) as e:
        print(f"error: {e}" if not isinstance(e, ParseError) else str(e), file=sys.stderr)
        for note in getattr(e, "__notes__", []):  # the IR with the failing op marked
            print(note, file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (KeyError, ValueError) as e:
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
