"""Kernels as the lowering sees them: a head op plus the element-wise ops fused after it.

Each `graph.fused` region (graph-fuse forms one per kernel) is one group. The lowering
never decides fusion: it only reads the regions.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from adreno_mlir.dialects import graph, texture
from adreno_mlir.errors import CompileError, op_where
from adreno_mlir.lowering.expr import Bin, Expr, In, Src, Tern, Un


class LoweringError(CompileError):
    pass


where = op_where


def is_elementwise(op: Operation) -> bool:
    return graph.is_elementwise(op)


@dataclass
class Group:
    """Graph ops computed by one kernel: `ops[0]` is the head, the rest its fused
    element-wise tail; `fused` is the `graph.fused` region they came from."""

    ops: list[Operation]
    fused: graph.FusedOp

    @property
    def head(self) -> Operation:
        return self.ops[0]

    @property
    def result(self) -> SSAValue:
        """The value the kernel writes (the yielded value of a fused region)."""
        return self.ops[-1].results[0]

    @property
    def kernel_op(self) -> Operation:
        """The op that carries the `kernel_config`."""
        return self.fused

    @property
    def location(self):
        return self.kernel_op.location

    @property
    def packed(self) -> bool:
        """Whether this is an NCHW4c (texture-level) kernel."""
        return isinstance(self.head, (texture.PackOp, texture.UnpackOp)) or isinstance(
            self.result.type, texture.TextureTensorType)

    @property
    def pool_partials(self) -> graph.PoolPartialsOp | None:
        """The `graph.pool_partials` the kernel also writes (fuse-pool-partials), if any."""
        return self.fused.pool_partials

    @property
    def has_epilogue(self) -> bool:
        return len(self.ops) > 1 or is_elementwise(self.head)


def groups_of(block: Block) -> list[Group]:
    """The kernels of a function body, in program order: its `graph.fused` regions
    (`graph.is_kernel` says which ops are kernels; graph-fuse gives each its region)."""
    groups: list[Group] = []
    for op in block.ops:
        if isinstance(op, graph.BatchNormOp):
            raise LoweringError(f"{where(op)}: batch norm has no kernel; run fold-batchnorm before the lowering")
        if isinstance(op, func.ReturnOp) or not graph.is_kernel(op):
            continue  # no kernel: views, constants, ops that their reader computes as it loads
        if not isinstance(op, graph.FusedOp):
            if not op.name.startswith(("graph.", "texture.")):
                raise LoweringError(f"{where(op)}: cannot lower this op to OpenCL")
            raise LoweringError(f"{where(op)}: '{op.name}' is not in a graph.fused region; run graph-fuse before "
                                "convert-graph-to-opencl (it gives every kernel its region)")
        groups.append(Group(op.ops, op))
    return groups


def group_expression(group: Group) -> tuple[Expr, list[SSAValue]]:
    """The element-wise part of a group as an expression over Src() (the head's value,
    unless the head is element-wise itself) and In(k), k indexing the returned extra
    inputs (each distinct outside value once)."""
    extras: list[SSAValue] = []
    elementwise_head = is_elementwise(group.head)
    members = set(group.ops) if elementwise_head else set(group.ops[1:])
    head_value = None if elementwise_head else group.head.results[0]

    def expr(v: SSAValue) -> Expr:
        if head_value is not None and v is head_value:
            return Src()
        owner = v.owner
        if owner in members:  # each element-wise op names its kind and parameters
            if isinstance(owner, graph.UnaryOp):
                return Un(owner.kind, expr(owner.input), owner.expr_params())
            if isinstance(owner, graph.TernaryOp):
                return Tern(owner.kind, expr(owner.a), expr(owner.b), expr(owner.c))
            return Bin(owner.kind, expr(owner.lhs), expr(owner.rhs))
        if v not in extras:
            extras.append(v)
        return In(extras.index(v))

    return expr(group.result), extras


class KernelPattern:
    """A conversion pattern: lowers the groups whose head is one of `heads` (at the
    NCHW level when `packed` is False, at the NCHW4c level when True) to kernels and
    launches, reading the group's `kernel_config` (`cfg`, defaults filled in)."""

    heads: tuple[type[Operation], ...] = ()
    packed: bool = False

    def matches(self, group: Group) -> bool:
        return isinstance(group.head, self.heads) and group.packed == self.packed

    def lower(self, hb, group: Group, cfg: dict, loc) -> None:
        raise NotImplementedError
