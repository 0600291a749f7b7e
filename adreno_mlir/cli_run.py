"""`adreno-mlir compile` and `adreno-mlir run` (added once the OpenCL path exists)."""

from __future__ import annotations

import argparse


def add_commands(sub: argparse._SubParsersAction) -> None:
    return None
