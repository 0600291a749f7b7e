"""The graph.fused verifier on hand-edited regions (IR changed after graph-fuse, then
compiled with the rest of the pipeline): a region that yields a value other than its
last op's, broadcasts its head to a larger shape, or holds a second convolution must be
rejected with an error naming graph.fused, or else compile to what its IR says
(compared with onnxruntime on the default OpenCL device) -- never a silently wrong
kernel or a Python exception from inside the lowering.
"""

from __future__ import annotations

import onnx
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region
from xdsl.utils.exceptions import VerifyException

import adreno_mlir
from adreno_mlir.context import make_context
from adreno_mlir.dialects import graph, texture
from adreno_mlir.frontend import import_onnx
from adreno_mlir.pipeline import run_pipeline
from tests.test_custom_pipelines import (
    CLEAR_ERRORS,
    assert_matches,
    conv_relu_model,
    reference,
    se_model,
    two_conv_model,
    x_for,
)


def graph_after(model: onnx.ModelProto, spec: str) -> ModuleOp:
    module = import_onnx(model)
    run_pipeline(make_context(), module, spec)
    return module


REST = "select-kernel-config{target=pocl-cpu},split-k,convert-graph-to-opencl,cse"
TO_FUSE = ("graph-canonicalize,fold-batchnorm,graph-canonicalize,convert-layout-nchw4c{storage=f32},"
           "conv-winograd{target=pocl-cpu},annotate-texture-scope{target=pocl-cpu images=true},graph-fuse")


def fused_ops(module: ModuleOp) -> list[graph.FusedOp]:
    return [o for o in module.walk() if isinstance(o, graph.FusedOp)]


def fused_groups(module: ModuleOp) -> list[graph.FusedOp]:
    """The regions that fuse something (graph-fuse gives every other kernel a region of one op)."""
    return [o for o in fused_ops(module) if len(o.ops) > 1]


def unwrap(region: graph.FusedOp) -> Operation:
    """Take the one op of `region` out of it (a kernel outside a region, to hand-edit)."""
    (op,) = region.ops
    op.detach()
    region.parent.insert_op_before(op, region)
    region.result.replace_all_uses_with(op.results[0])
    region.body.block.erase_op(region.body.block.last_op)
    region.detach()
    region.erase()
    return op


def _verify_or_run(module: ModuleOp, model_for_reference: onnx.ModelProto, match: str) -> None:
    """The hand-edited module must be rejected by its verifier (message matching
    `match`), or else compile to what its IR says (compared with onnxruntime)."""
    try:
        module.verify()
    except VerifyException as e:
        assert match in str(e), str(e)
        return
    try:
        cm = adreno_mlir.compile(module, target="pocl-cpu", layout="nchw4c", textures=True, pipeline=REST)
    except CLEAR_ERRORS as e:
        assert match in str(e), str(e)
        return
    feeds = x_for(model_for_reference)
    assert_matches(cm.run(feeds)["y"], reference(model_for_reference, feeds)["y"])


def test_fused_region_yielding_a_value_other_than_its_last_op():
    """graph.fused's verifier accepts a region whose yield is not the last op's result
    (the later ops are dead), but the lowering (Group.result in lowering/groups.py)
    computes the last op's value: the region yields the conv's output but the kernel
    stores relu(conv) -- silently wrong."""
    module = graph_after(conv_relu_model(), TO_FUSE)
    (fused,) = fused_groups(module)
    head, relu = fused.ops
    assert isinstance(head, texture.WinogradOutputOp) and isinstance(relu, graph.ReluOp)
    fused.body.block.last_op.operands = [head.results[0]]  # yield the conv, not the ReLU
    _verify_or_run(module, conv_relu_model(relu=False), "graph.fused")


def test_fused_region_broadcasting_its_head_to_a_larger_shape():
    """A region `gap -> sigmoid -> mul(., x)` (the mul's result is larger than the
    head's) is what graph-fuse refuses to form, but the graph.fused verifier accepts it
    and the lowering runs the mean kernel over the larger output: NaN / garbage."""
    module = graph_after(se_model(), TO_FUSE)
    (fused,) = fused_groups(module)
    (mul,) = [o for o in module.walk() if isinstance(o, graph.MulOp)]
    unwrap(mul.parent_op())  # the multiply alone, to move into the pool's region
    ret = mul.results[0]
    new = graph.FusedOp(ret.type, Region(Block()))
    fused.parent.insert_op_after(new, mul)
    for o in fused.ops:
        o.detach()
        new.body.block.add_op(o)
    sig = new.ops[-1].results[0]
    mul.operands = [sig if v is fused.result else v for v in mul.operands]
    mul.detach()
    new.body.block.add_op(mul)
    new.body.block.add_op(graph.YieldOp(ret))
    ret.replace_uses_with_if(new.result, lambda use: use.operation.parent_op() is not new)
    fused.detach()
    fused.erase()
    _verify_or_run(module, se_model(), "graph.fused")


def test_fused_region_holding_a_second_convolution():
    """A region `conv -> relu -> conv` verifies (any graph/texture op may sit in a
    region), then the lowering crashes with AttributeError: 'Conv2dOp' object has no
    attribute 'kind' (lowering/groups.py group_expression) instead of a clear error."""
    model = two_conv_model()
    module = graph_after(model, TO_FUSE.replace("images=true", "images=false"))
    first = next(f for f in fused_ops(module) if isinstance(f.head, graph.Conv2dOp))
    conv2 = next(o for o in module.walk() if isinstance(o, graph.Conv2dOp) and o.input is first.result)
    relu = first.ops[-1]
    for v in conv2.operands[1:]:  # conv2's weight and bias constants go before the region
        if v.owner.parent is first.parent:
            v.owner.detach()
            first.parent.insert_op_before(v.owner, first)
    y2 = conv2.results[0]
    y2.replace_all_uses_with(first.result)  # the region's result is conv2's value now
    conv2.operands = [relu.results[0] if v is first.result else v for v in conv2.operands]
    conv2.detach()
    first.body.block.insert_op_before(conv2, first.body.block.last_op)
    first.body.block.last_op.operands = [y2]
    _verify_or_run(module, model, "graph.fused")
