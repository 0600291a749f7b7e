"""`graph-fuse`: group ops that one kernel computes into `graph.fused` regions.

A group starts at a *head*: an op whose kernel can run an element-wise epilogue
(convolution, gemm, pools, global average pool, keepdims spatial mean, resize, the
Winograd output transform) or an element-wise op that starts a chain of its own. It
then follows the head's value while

- the value has exactly one user (a value read by two ops must be materialised, so
  the second reader is never fused away),
- that user is element-wise, not already in a group, and
- the user's result has the value's shape (the epilogue runs once per output element;
  the user's other operand is read through broadcasting).

A value read by two element-wise ops that meet again (SiLU, `x * sigmoid(x)`; `x +
relu(x)`) is no exception to the first rule: the group takes
all of them when every op of that little graph has the shape, only one of them (the
last) is read outside it, and it has at most `MAX_TAIL` ops. The kernel computes x once
and reads it from a register twice.

So conv + bias + ReLU + residual add, an SE block's conv + hard-sigmoid, hard-swish and
SiLU chains each become one region, and the lowering one kernel. (The SE block's final
`x * scale` stays a kernel of its own: its result has the block input's shape, not
the 1x1 scale's, so it cannot be the scale conv's epilogue.) Every other kernel, a
group of one op, gets a region too, as IREE forms a dispatch region per kernel: the
passes after this one and the lowering see kernels as regions only (`graph.is_kernel`),
and convert-graph-to-opencl refuses a compute op outside one. Not wrapped: constants,
views (reshape), ops their reader computes on load, and the packing of a constant. The
region is placed where the group's last op stood, so every outside value it reads is
defined by then.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from adreno_mlir.dialects import graph
from adreno_mlir.pass_options import CheckedPass, option



def is_elementwise(op: Operation) -> bool:
    return graph.is_elementwise(op)


def can_take_epilogue(op: Operation) -> bool:
    """Whether `op`'s kernel can apply a fused element-wise tail to its value."""
    if isinstance(op, graph.ReduceOp) and not op.keepdims.value.data:
        return False  # epilogue coordinates are those of the keepdims shape
    return graph.is_epilogue_head(op) or is_elementwise(op)


def _single_user(op: Operation) -> Operation | None:
    users = {u.operation for u in op.results[0].uses}
    return users.pop() if len(users) == 1 else None


def _joins(user: Operation | None, op: Operation) -> bool:
    return (
        user is not None
        and user.parent is op.parent
        and is_elementwise(user)
        and graph.shape_of(user.results[0]) == graph.shape_of(op.results[0])
    )


MAX_TAIL = 4
"""The most element-wise ops a value read twice may fan out to before they meet again."""


def _meeting_tail(op: Operation) -> list[Operation] | None:
    """The element-wise ops that read `op`'s value more than once and meet in one op
    (SiLU: sigmoid(x) and x * that), in program order with the meeting op last; None
    unless all of them join `op` (same block and shape), only the last is read outside
    them, and there are at most MAX_TAIL."""
    members = {u.operation for u in op.results[0].uses}
    if len(members) < 2:
        return None
    for _ in range(MAX_TAIL):
        if len(members) > MAX_TAIL or not all(_joins(m, op) and not isinstance(m.parent_op(), graph.FusedOp)
                                              for m in members):
            return None
        escaping = [m for m in members if any(u.operation not in members for u in m.results[0].uses)
                    or not m.results[0].uses]
        if len(escaping) == 1:
            block = op.parent
            order = {o: i for i, o in enumerate(block.ops)} if block is not None else {}
            tail = sorted(members, key=lambda m: order.get(m, 0))
            return tail if tail[-1] is escaping[0] else None
        members |= {u.operation for m in escaping for u in m.results[0].uses}
    return None


def fusion_chain(head: Operation) -> list[Operation]:
    """The head and the element-wise ops that follow it into one kernel."""
    chain = [head]
    while True:
        user = _single_user(chain[-1])
        if _joins(user, chain[-1]):
            chain.append(user)
            continue
        tail = _meeting_tail(chain[-1])
        if tail is None:
            return chain
        chain += tail


def absorbed_upstream(op: Operation) -> bool:
    """An element-wise op that the group of one of its producers will take in."""
    if not is_elementwise(op):
        return False
    for v in op.operands:
        p = v.owner
        if isinstance(p, Operation) and p.parent is op.parent and len(p.results) == 1 \
                and can_take_epilogue(p) and op in fusion_chain(p)[1:]:
            return True
    return False


@dataclass
class FormFusedGroup(RewritePattern):
    """Wrap each kernel (a head and its element-wise followers, or a lone op) into a
    `graph.fused` region."""

    epilogues: bool = True

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, graph.FusedOp) or isinstance(op.parent_op(), graph.FusedOp) or len(op.results) != 1:
            return
        if not graph.is_kernel(op) or (self.epilogues and absorbed_upstream(op)):
            return
        chain = fusion_chain(op) if self.epilogues and can_take_epilogue(op) else [op]
        graph.FusedOp.wrap(chain, rewriter)
        rewriter.has_done_action = True


@dataclass(frozen=True)
class GraphFuse(CheckedPass):
    name = "graph-fuse"

    epilogues: bool = option(True)
    """False: no element-wise op joins its producer's kernel; every kernel op gets a region
    of one op (a kernel of its own, as the unfused baseline of a measurement)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FormFusedGroup(self.epilogues), apply_recursively=False).rewrite_module(op)
