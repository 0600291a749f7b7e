"""Every shared torchvision graph imports, verifies, prints and re-parses to identical text."""

from __future__ import annotations

import time

import pytest
from xdsl.dialects import func

from adreno_mlir.context import make_context
from adreno_mlir.frontend import import_onnx
from adreno_mlir.printing import module_to_text, parse_module
from adreno_mlir.dialects import graph
from tests.conftest import MODEL_NAMES


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_import_roundtrip(name, model_path):
    module = import_onnx(model_path(name))
    module.verify()
    text = module_to_text(module)
    again = parse_module(make_context(), text)
    again.verify()
    assert module_to_text(again) == text
    # static shapes only, and no ONNX shape plumbing survives
    ops = list(module.walk())
    assert not any(type(op).__name__ in ("ShapeOp", "GatherOp") for op in ops)
    fn = next(op for op in ops if isinstance(op, func.FuncOp))
    assert [a.data for a in fn.attributes["graph.inputs"].data] == ["input"]
    convs = [op for op in ops if isinstance(op, graph.Conv2dOp)]
    assert convs and all(op.location.desc.data.endswith("Conv") for op in convs)
    assert len(text) < 1_000_000


def test_resnet50_import_under_budget(model_path):
    path = model_path("resnet50")
    import_onnx(path)  # warm caches (first protobuf/onnx imports)
    start = time.perf_counter()
    module = import_onnx(path)
    module.verify()
    text = module_to_text(module)
    elapsed = time.perf_counter() - start
    assert len(text) < 1_000_000, f"ResNet-50 IR is {len(text)} bytes"
    # Generous bound for slow CI machines; the closing note reports the measured figure.
    assert elapsed < 10.0, f"import+verify+print took {elapsed:.2f} s"
