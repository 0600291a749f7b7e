"""Textual IR in and out, the same way everywhere (CLI, adreno-opt, tests)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.target import Target


def module_to_text(module: ModuleOp, generic: bool = False, props_as_attrs: bool = False) -> str:
    """Print with source locations (the ONNX node names), leaving out unknown ones."""
    out = io.StringIO()
    Printer(
        stream=out,
        print_debuginfo=True,
        print_generic_format=generic,
        print_properties_as_attributes=props_as_attrs,
    ).print_op(module)
    out.write("\n")
    return out.getvalue().replace(" loc(unknown)", "")


def cut_name(name: str, width: int) -> str:
    """`name` in at most `width` characters: "..." and its tail when it is longer (node
    names differ at their ends, `/layer1/layer1.0/conv1/Conv`). The tables of `analyze`
    and `tune` cut node names this way."""
    if len(name) <= width:
        return name
    return "..." + name[len(name) - (width - 3):] if width > 3 else name[:width]


def parse_module(ctx: Context, text: str, name: str = "<input>") -> ModuleOp:
    return Parser(ctx, text, name).parse_module()


@dataclass(frozen=True)
class MLIRWithLocationsTarget(Target):
    """`-t mlir` for adreno-opt: the IR with its `loc(...)`s (ONNX node names)."""

    name = "mlir"
    print_generic_format: bool = False
    print_properties_as_attributes: bool = False
    print_debuginfo: bool = True  # always on: locations are the ONNX node names
    syntax_highlight: bool = False

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(
            module_to_text(module, self.print_generic_format, self.print_properties_as_attributes)
        )
