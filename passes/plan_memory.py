"""`plan-memory`: values that share storage, so channel concats copy nothing.

A channel concat of NCHW4c tensors with batch 1 is a run of channel blocks, and a
prefix of those blocks has exactly the layout of a smaller tensor: in a buffer
(index ((c4 * H) + h) * W + w) and in both image mappings (`texture`: row c4 * H + h;
`texture-nhwc`: row c4). So a kernel that produces a concat input can write straight
into the input's channel slice of the concat's storage, and the concat copies nothing.
DenseNet is the case that matters: each dense layer reads concat_k = concat(f0, ...,
f_k-1) and the block's last concat holds all of them, so one allocation of the last
concat holds every f_j and every concat_k is a prefix of it (before this pass the
copies were 55% of DenseNet-121's device time on the H200).

The decision is an attribute on the kernel that writes each value placed in shared
storage (its `graph.fused` region; a concat's region too):

    %22 = graph.fused {storage = {alloc = 0 : i64, c4_offset = 16 : i64}} -> ... { graph.split_k_sum ... }
    %23 = graph.fused {storage = {alloc = 0 : i64, c4_offset = 0 : i64}} -> ... { graph.concat %6, %22 ... }

"The result lives in shared allocation 0 from channel block 16 on." The allocation is
as large as its largest member (max of c4_offset + the member's channel blocks); all
members take the same memory (buffer, or an image of one mapping) and element type.
A concat with `storage` copies only the inputs that are not already at their slot
(same `alloc`, `c4_offset` = the concat's + the channel blocks before the input);
convert-graph-to-opencl reads these attributes (`read_storage` checks them) and
decides nothing itself. Edit or delete one to change the plan: a concat without
`storage`, or an input without it, gets its copy back.

A concat input is placed at its slot (else it keeps its copy) when

- it is an NCHW4c tensor of batch 1 with the concat's height, width and element type
  (`graph.concat` on `!texture.tensor` is on channels, every input a multiple of 4
  channels: convert-layout-nchw4c converts no other);
- a kernel writes it that can write at a channel offset (`OFFSET_WRITERS`, element-wise
  kernels, or another concat placed inside this one): not a model input's pack, a
  constant, a reshape view or a split-K partial sum;
- at a non-zero offset, every reader of it is a concat (other kernels read a value
  from channel block 0 of its storage; a concat copying it reads at the offset);
- it is not already placed elsewhere (a value used by two concats at different
  offsets lives in one, the other copies it), and is not read twice by one concat;
- its slot overlaps no other value of the allocation; for an image allocation, no
  kernel that writes into it reads from it (one kernel cannot read and write an image;
  a buffer it can, at other channel blocks); and it can move to the allocation's
  memory: any value can move to a buffer, to an image only when all its readers read
  images (every kernel that writes at an offset writes images too).

Concats are visited last to first, so the largest (DenseNet's last concat of a block)
founds the allocation, and an earlier concat whose inputs already sit in it becomes a
view at their offset. The allocation's memory is the founding concat's, as
annotate-texture-scope chose it (a buffer: concats were copies); members placed in it
change their type to that memory. Plain NCHW concats (the `nchw` plan, or inputs of
other channel counts) keep their copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from adreno_mlir.dialects import graph
from adreno_mlir.dialects.storage import (  # noqa: F401 - the attribute's schema, re-exported for passes
    OFFSET_WRITERS, STORAGE_ATTR, Storage, concat_head, concat_of, input_slots, kernel_reads, packed_type, read_storage,
    stored_value, writer_of)
from adreno_mlir.passes.annotate_texture_scope import reads_images


def concat_ok(op: graph.ConcatOp) -> bool:
    """A channel concat of NCHW4c tensors of batch 1 and one element type and extent."""
    t = packed_type(op.result)
    if t is None or op.axis.value.data != 1 or t.shape[0] != 1:
        return False
    for v in op.inputs:
        s = packed_type(v)
        if s is None or s.shape[0] != 1 or s.shape[2:4] != t.shape[2:4] or s.element != t.element:
            return False
    return True


@dataclass
class _Alloc:
    root: SSAValue
    scope: str  # "global" | "texture" | "texture-nhwc"
    c4: int
    members: list[SSAValue] = field(default_factory=list)
    claims: list[tuple[int, int, SSAValue]] = field(default_factory=list)
    """Channel-block ranges written by one value each: a placed value's, or the copy
    a concat makes of an input that could not be placed."""


class _Planner:
    def __init__(self, block: Block):
        self.block = block
        self.slot: dict[SSAValue, tuple[int, int]] = {}
        self.allocs: list[_Alloc] = []
        self.done: set[Operation] = set()

    # ------------------------------------------------------------------ checks

    def free(self, a: _Alloc, lo: int, hi: int, v: SSAValue) -> bool:
        """No other value writes into [lo, hi) (a copy of `v` itself at exactly that
        range is the same data)."""
        return all(c == (lo, hi, v) or c[1] <= lo or hi <= c[0] for c in a.claims)

    def view_ok(self, op: graph.ConcatOp, g: int, base: int) -> bool:
        """`op` can live in allocation `g` from channel block `base`: each input is at
        its slot there already, or its slot is free (and `op` will not copy a value
        of `g` into `g`)."""
        a = self.allocs[g]
        out = stored_value(op)
        if base < 0 or base + out.type.shape[1] > a.c4 or not self.movable(out, a):
            return False
        if base > 0 and any(not isinstance(u.operation, graph.ConcatOp) for u in out.uses):
            return False  # its other readers read from channel block 0
        for v, s in input_slots(op, base):
            where = self.slot.get(v)
            if where == (g, s):
                continue
            if (where is not None and where[0] == g) or not self.free(a, s, s + v.type.shape[1], v):
                return False
        return not self.read_by_members(out, g, base)

    def movable(self, v: SSAValue, a: _Alloc) -> bool:
        """`v` can take the allocation's memory: every kernel reads buffers, images only
        those with image support. (Every writer, `v`'s included, stores through
        `Packed.write`, which writes images too: split_k_sum carries no ImageOperands
        trait only because split-k runs after annotate-texture-scope.)"""
        t = packed_type(v)
        if t.scope_name == a.scope or a.scope == "global":
            return True
        return all(reads_images(u.operation, v) for u in v.uses)

    def read_by_members(self, v: SSAValue, g: int, s: int) -> bool:
        """Whether a kernel writing into allocation `g` would read `v` placed at `s`
        in `g`: a member concat's copy of `v` (a value at two places), or, for an
        image, a member's kernel (one kernel cannot read and write an image; a buffer
        it may, at other channel blocks)."""
        image = self.allocs[g].scope != "global"
        for m in self.allocs[g].members:
            concat = concat_of(m)
            if concat is not None:
                if any(u is v and t != s for u, t in input_slots(concat, self.slot[m][1])):
                    return True
            elif image and v in kernel_reads(m.owner):
                return True
        return False

    def can_place(self, v: SSAValue, g: int, s: int, concat: graph.ConcatOp) -> bool:
        a = self.allocs[g]
        t, root = packed_type(v), a.root.type
        if t is None or v in self.slot or sum(u is v for u in concat.inputs) > 1:
            return False
        if t.shape[0] != 1 or t.shape[2:4] != root.shape[2:4] or t.element != root.element:
            return False
        op = writer_of(v)
        if op is None or (s > 0 and any(not isinstance(u.operation, graph.ConcatOp) for u in v.uses)):
            return False
        if not self.free(a, s, s + t.shape[1], v) or not self.movable(v, a):
            return False
        concat = concat_of(v)
        if concat is not None:
            return concat not in self.done and concat_ok(concat) and self.view_ok(concat, g, s)
        if a.scope != "global" and any(self.slot.get(r, (None,))[0] == g for r in kernel_reads(op)):
            return False  # it would read and write one image
        return not self.read_by_members(v, g, s)

    # ------------------------------------------------------------------ planning

    def place(self, v: SSAValue, g: int, s: int) -> None:
        a = self.allocs[g]
        self.slot[v] = (g, s)
        a.members.append(v)
        claim = (s, s + v.type.shape[1], v)
        if concat_of(v) is None and claim not in a.claims:
            a.claims.append(claim)

    def place_inputs(self, op: graph.ConcatOp, g: int, base: int) -> None:
        self.done.add(op)
        a = self.allocs[g]
        for v, s in input_slots(op, base):
            if self.slot.get(v) == (g, s):
                continue
            if self.can_place(v, g, s, op):
                self.place(v, g, s)
                if concat_of(v) is not None:
                    self.place_inputs(concat_of(v), g, s)
            elif (s, s + v.type.shape[1], v) not in a.claims:
                a.claims.append((s, s + v.type.shape[1], v))  # the concat's copy writes there

    def view_of(self, op: graph.ConcatOp) -> tuple[int, int] | None:
        """An allocation where `op`'s inputs already sit at their slots (`op` a prefix,
        or any run, of a later concat), if `op` fits there."""
        for v, s in input_slots(op, 0):
            if v in self.slot:
                g, at = self.slot[v]
                if self.view_ok(op, g, at - s):
                    return g, at - s
        return None

    def run(self) -> None:
        for op in reversed([c for c in map(concat_head, self.block.ops) if c is not None]):
            if op in self.done or not concat_ok(op):
                continue
            where = self.view_of(op)
            if where is None:
                t = op.result.type
                self.allocs.append(_Alloc(stored_value(op), t.scope_name, t.shape[1]))
                where = (len(self.allocs) - 1, 0)
            self.place(stored_value(op), *where)
            self.place_inputs(op, *where)

    def write(self) -> None:
        """The `storage` attributes (allocations numbered in program order) and the
        members' types in their allocation's memory."""
        order = {op: i for i, op in enumerate(self.block.ops)}
        used = [a for a in self.allocs if len(a.members) > 1]
        used.sort(key=lambda a: min(order[m.owner] for m in a.members))
        for number, a in enumerate(used):
            for m in a.members:
                s = self.slot[m][1]
                m.owner.attributes[STORAGE_ATTR] = DictionaryAttr(
                    {"alloc": IntegerAttr(number, 64), "c4_offset": IntegerAttr(s, 64)})
                if m.type.scope_name != a.scope:
                    retype(m, m.type.with_memory(a.scope))


def retype(value: OpResult, new: Attribute) -> None:
    """Give an op's result (for a fused region also its yielded value) the type `new`."""
    op = value.owner
    if isinstance(op, graph.FusedOp):
        Rewriter.replace_value_with_new_type(op.yielded, new)
    Rewriter.replace_value_with_new_type(value, new)


@dataclass(frozen=True)
class PlanMemory(ModulePass):
    """Place concat inputs in their concat's storage (see the module docstring)."""

    name = "plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            planner = _Planner(fn.body.block)
            planner.run()
            planner.write()
