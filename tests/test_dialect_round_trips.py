"""Printed IR parses back to the same IR.

Every op of the graph, texture and opencl dialects must be printed and re-parsed by a
round-trip case under filecheck/dialects: a RUN line `adreno-opt %s | adreno-opt |
filecheck %s` (or its `sed` form that feeds only the first chunk, or the
`--split-input-file` form), so a new op without a round trip fails here. Which ops a
file round-trips is found by parsing exactly the text its RUN line feeds to adreno-opt,
not by grepping names (CHECK lines and comments name ops too).

Lowered IR round-trips too, non-finite constants included (a max pool's -inf).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.parser import Parser

from adreno_mlir.context import make_context
from adreno_mlir.dialects import graph, opencl, texture
from tests.conftest import REPO

DIALECT_FILES = REPO / "filecheck" / "dialects"

_FIRST_CHUNK = r"sed -e '/\^\\/\\/ -----/,\$d' %s \| adreno-opt"
ROUND_TRIP_RUN = re.compile(
    r"^// RUN: (?P<src>" + _FIRST_CHUNK + r"|adreno-opt %s)(?P<first>[^|]*)\| adreno-opt(?P<second>[^|]*)"
    r"\| filecheck %s\s*$")
"""A RUN line that parses and prints the file (or its first `// -----` chunk), then
parses and prints that again, and checks the text: no pass pipeline, no diagnostics."""

_NOT_ROUND_TRIP_FLAGS = ("-p", "--pass-pipeline", "--verify-diagnostics", "-t")


def round_tripped_texts(path: Path) -> list[str]:
    """The texts that the round-trip RUN lines of `path` give adreno-opt to parse (one
    per `// -----` chunk under --split-input-file); [] if the file has none."""
    text = path.read_text()
    texts: list[str] = []
    for line in text.splitlines():
        m = ROUND_TRIP_RUN.match(line)
        if not m or any(flag in (m["first"] + m["second"]).split() for flag in _NOT_ROUND_TRIP_FLAGS):
            continue
        body = text.split("\n// -----", 1)[0] if m["src"].startswith("sed") else text
        texts += body.split("\n// -----") if "--split-input-file" in m["first"] else [body]
    return texts


def round_tripped_ops() -> dict[str, set[str]]:
    """{op name: the filecheck/dialects files that round-trip it}."""
    seen: dict[str, set[str]] = {}
    for path in sorted(DIALECT_FILES.glob("*.mlir")):
        for text in round_tripped_texts(path):
            for op in Parser(make_context(), text, name=str(path)).parse_module().walk():
                seen.setdefault(op.name, set()).add(path.name)
    return seen


@pytest.fixture(scope="module")
def covered() -> dict[str, set[str]]:
    return round_tripped_ops()


def test_round_trip_files_are_found(covered):
    """The scan sees the files it should (a changed RUN syntax would hide them all)."""
    files = set().union(*covered.values())
    assert {"graph.mlir", "graph_kernels.mlir", "texture.mlir", "opencl.mlir"} <= files, sorted(files)
    assert not any(name.endswith("_invalid.mlir") for name in files), sorted(files)


@pytest.mark.parametrize("dialect", [graph.Graph, texture.Texture, opencl.OpenCL], ids=lambda d: d.name)
def test_every_op_has_a_round_trip(dialect, covered):
    missing = sorted(op.name for op in dialect.operations if op.name not in covered)
    assert not missing, (
        f"{dialect.name} ops that no round-trip RUN file under filecheck/dialects prints and parses back "
        f"(`// RUN: adreno-opt %s | adreno-opt | filecheck %s`): {missing}")


def test_max_pool_minus_infinity_survives_printing_lowered_ir(tmp_path):
    """xDSL 0.74 parses a printed non-finite vector splat (`dense<0xff800000>`) back as
    4286578688.0: a max pool's -inf start value changed when lowered IR was printed and
    re-read with adreno-opt (a silent wrong answer for anyone editing lowered IR). The
    kernel builder now splats the scalar, which round-trips."""
    import onnx.helper as h

    import adreno_mlir
    from adreno_mlir.lowering.opencl_printer import opencl_source
    from adreno_mlir.printing import module_to_text

    g = h.make_graph([h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], "g",
                     [h.make_tensor_value_info("x", 1, [1, 8, 6, 6])], [h.make_tensor_value_info("y", 1, [1, 8, 6, 6])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    cm = adreno_mlir.compile(model, textures=True, target="adreno-740")
    text = module_to_text(cm.module)
    again = Parser(make_context(), text).parse_module()
    assert module_to_text(again) == text
    assert opencl_source(again) == cm.source
    assert "-INFINITY" in cm.source
