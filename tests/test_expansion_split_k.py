"""select-kernel-config keeps an expansion that a depthwise conv reads in one launch.

On the H200 a depthwise kernel that reads what a split-K sum kernel has just written took
~5 us more than after a direct conv, and the direct expansion was about as fast as split-K's
two launches (docs/bench/issue13, session 5). The same 1x1 conv read by another 1x1 conv
keeps split-K. Both compute what onnxruntime does."""

from __future__ import annotations

import pytest
from onnx import helper, numpy_helper
from xdsl.parser import Parser

import numpy as np

import adreno_mlir
from adreno_mlir.context import make_context
from adreno_mlir.passes.select_kernel_config import config_of, is_kernel
from tests.test_depthwise_load import PLANS, TOLERANCE, block_model
from tests.test_squeeze_excite import _check, _f, _model


def _config(cm, node: str) -> dict:
    """The kernel_config of the kernel whose head is ONNX node `node` (config stage)."""
    module = Parser(make_context(), cm.stage_ir["config"]).parse_module()
    found = []
    for op in module.walk():
        head = op.head if hasattr(op, "head") and is_kernel(op) else op
        loc = getattr(head.location, "desc", None)
        if is_kernel(op) and loc is not None and loc.data == node:
            found.append(config_of(op))
    assert len(found) == 1, found
    return found[0]


def two_convs(c: int = 64, e: int = 384, h: int = 7):
    """x -> 1x1 `expand` (c -> e) + bias -> Relu -> 1x1 `project` (e -> c): the expansion's
    reader is a groups-1 conv."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal(s) / np.sqrt(f)).astype(np.float32), n)
             for n, s, f in (("we", (e, c, 1, 1), c), ("be", (e,), 1), ("wp", (c, e, 1, 1), e))]
    nodes = [helper.make_node("Conv", ["x", "we", "be"], ["a"], name="expand"),
             helper.make_node("Relu", ["a"], ["r"], name="expand_act"),
             helper.make_node("Conv", ["r", "wp"], ["y"], name="project")]
    return _model(nodes, [_f("x", [1, c, h, h])], [_f("y", [1, c, h, h])], inits)


@pytest.mark.parametrize("plan", ["nchw4c-buffers", "nchw4c-textures"])
def test_expansion_read_by_a_depthwise_conv_is_not_split(plan):
    # 7x7 x 384 channels from 64: a grid of 1344 work-items, which GPU targets split
    # (two parts of 8 input channel blocks) when the reader is not a depthwise conv.
    plain = adreno_mlir.compile(two_convs(), keep_ir=True, **PLANS[plan])
    assert _config(plain, "expand")["split_k"] == 2
    _check(plain, two_convs(), TOLERANCE)

    for act in ("Relu6", "SiLU"):
        model = block_model(64, 384, 7, act=act)
        cm = adreno_mlir.compile(model, keep_ir=True, **PLANS[plan])
        assert _config(cm, "expand")["split_k"] == 1, act
        _check(cm, model, TOLERANCE)


def test_an_override_still_splits_the_expansion(tmp_path):
    """The rule is a default: an override of split_k on the expansion is kept."""
    import json

    model = block_model(64, 384, 7)
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"loc:expand": {"split_k": 2}}))
    cm = adreno_mlir.compile(model, keep_ir=True, overrides=str(path), **PLANS["nchw4c-buffers"])
    assert _config(cm, "expand")["split_k"] == 2
    _check(cm, model, TOLERANCE)
