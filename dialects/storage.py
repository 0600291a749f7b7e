"""The `storage` attribute of plan-memory: where a value lives when it shares an allocation.

    %22 = graph.fused {storage = {alloc = 0 : i64, c4_offset = 16 : i64}} -> ... { graph.split_k_sum ... }

says the region's result lives in shared allocation 0 from channel block 16 on (passes/plan_memory.py
explains the plan). This module is the attribute's schema, what the pass writes and the lowering
reads (`read_storage` checks hand-edited IR for what the lowering relies on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr
from xdsl.ir import Block, Operation, OpResult, SSAValue

from adreno_mlir.dialects import graph, texture
from adreno_mlir.errors import CompileError, op_where

STORAGE_ATTR = "storage"

OFFSET_WRITERS: tuple[type[Operation], ...] = (
    graph.Conv2dOp, graph.SplitKSumOp, graph.MaxPoolOp, graph.AvgPoolOp, graph.GlobalAvgPoolOp,
    graph.ReduceMeanOp, graph.ResizeOp, texture.WinogradOutputOp,
)
"""Heads (besides element-wise ops) whose NCHW4c kernels store through
`PackedSpec.finish_pixel`, which adds a `c4_offset` launch argument to the output
channel block."""


def packed_type(value: SSAValue) -> texture.TextureTensorType | None:
    t = value.type
    if isinstance(t, texture.TextureTensorType) and t.layout_name == "nchw4c":
        return t
    return None


def concat_head(op: Operation) -> graph.ConcatOp | None:
    """The `graph.concat` that `op` (its region, or the op itself) is, or None."""
    head = op.head if isinstance(op, graph.FusedOp) else op
    return head if isinstance(head, graph.ConcatOp) else None


def concat_of(value: SSAValue) -> graph.ConcatOp | None:
    """The `graph.concat` whose stored value `value` is (its region's result), or None."""
    if not isinstance(value, OpResult) or value.index != 0:
        return None
    return concat_head(value.owner)


def stored_value(op: Operation) -> SSAValue:
    """The value the kernel of `op` stores: its region's result (or its own, outside one)."""
    return graph.kernel_op(op).results[0]


def writer_of(value: SSAValue) -> Operation | None:
    """The op whose kernel writes `value` and can write it at a channel offset (a
    `graph.fused` region, a `graph.concat`'s included, or a lone op), or None."""
    if not isinstance(value, OpResult) or graph.loaded_by_reader(value.owner):
        return None  # no kernel writes an on_load region's value
    op = value.owner
    head = op.head if isinstance(op, graph.FusedOp) else op
    if isinstance(head, (graph.ConcatOp, *OFFSET_WRITERS)) or graph.is_elementwise(head):
        return op
    return None


kernel_reads = graph.kernel_reads


def input_slots(op: graph.ConcatOp, base: int) -> list[tuple[SSAValue, int]]:
    """Each input with the channel block where it starts, the concat starting at `base`."""
    slots, at = [], base
    for v in op.inputs:
        slots.append((v, at))
        at += v.type.shape[1]
    return slots


# --------------------------------------------------------------------------- reading it back


@dataclass
class Storage:
    """The `storage` attributes of one function, checked: where each value lives."""

    slots: dict[SSAValue, tuple[int, int]] = field(default_factory=dict)
    """Value (a fused region's result and its yielded value alike) -> (alloc, c4_offset)."""
    types: dict[int, texture.TextureTensorType] = field(default_factory=dict)
    """Each allocation as one tensor: its members' type with the largest extent."""
    names: dict[int, str | None] = field(default_factory=dict)
    """Each allocation's name: its largest member's (the concat that holds all)."""

    def offset(self, value: SSAValue) -> int:
        return self.slots.get(value, (None, 0))[1]

    def in_place(self, value: SSAValue, concat: SSAValue, c4: int) -> bool:
        """Whether `value` already sits at channel block `c4` of `concat`'s storage."""
        here = self.slots.get(concat)
        return here is not None and self.slots.get(value) == (here[0], here[1] + c4)


def _storage_error(op: Operation, why: str) -> CompileError:
    return CompileError(f"{op_where(op)}: {STORAGE_ATTR} attribute: {why} (plan-memory writes these attributes; "
                        "delete it to give the value storage of its own)")


def read_storage(block: Block) -> Storage:
    """The `storage` attributes of a function body, checked for what the lowering relies
    on (hand-edited IR gets an error naming the op, never a wrong result)."""
    st = Storage()
    members: dict[int, list[tuple[Operation, SSAValue, int]]] = {}
    for op in block.ops:
        attr = op.attributes.get(STORAGE_ATTR)
        if attr is None:
            continue
        fields = attr.data if isinstance(attr, DictionaryAttr) else {}
        g, s = fields.get("alloc"), fields.get("c4_offset")
        if not (isinstance(g, IntegerAttr) and isinstance(s, IntegerAttr) and set(fields) == {"alloc", "c4_offset"}
                and g.value.data >= 0 and s.value.data >= 0):
            raise _storage_error(op, "expected {alloc = N : i64, c4_offset = K : i64} with N, K >= 0")
        # A region's stored value is its first result (a second one is its pool partials).
        v = op.result if isinstance(op, graph.FusedOp) else op.results[0] if len(op.results) == 1 else None
        t = None if v is None else packed_type(v)
        if t is None or t.shape[0] != 1:
            raise _storage_error(op, "only an NCHW4c tensor of batch 1 can share storage")
        if writer_of(v) is None:
            raise _storage_error(op, "this op's kernel cannot write at a channel offset")
        if s.value.data > 0 and any(not isinstance(u.operation, graph.ConcatOp) for u in v.uses):
            raise _storage_error(op, "a value at a non-zero c4_offset may be read by concats only")
        slot = (g.value.data, s.value.data)
        st.slots[v] = slot
        if isinstance(op, graph.FusedOp):
            st.slots[op.yielded] = slot
        members.setdefault(slot[0], []).append((op, v, slot[1]))
    for g, ms in members.items():
        first = ms[0][1].type
        for op, v, _ in ms:
            t = v.type
            if (t.element, t.scope_name, t.shape[2:4]) != (first.element, first.scope_name, first.shape[2:4]):
                raise _storage_error(op, f"alloc {g} mixes {first} and {t}: members need one memory, element "
                                          "type, height and width")
        c4 = max(s + v.type.shape[1] for _, v, s in ms)
        st.names[g] = max(ms, key=lambda m: m[1].type.shape[1])[1].name_hint
        st.types[g] = texture.TextureTensorType.make((1, c4, *first.shape[2:4], 4), first.element, "nchw4c",
                                                     first.scope_name)
        leaves = sorted(((s, s + v.type.shape[1], op) for op, v, s in ms if concat_head(op) is None),
                        key=lambda leaf: leaf[:2])
        for (_, hi, _), (lo, _, op) in pairwise(leaves):
            if lo < hi:
                raise _storage_error(op, f"its channel blocks overlap another value's in alloc {g}")
    for g, ms in members.items():
        for op, v, s in ms:
            concat = concat_head(op)
            if concat is not None:
                copied = [u for u, c in input_slots(concat, s) if st.slots.get(u) != (g, c)]
                bad = [u for u in copied if st.slots.get(u, (None,))[0] == g]
                if bad:
                    raise _storage_error(op, f"it would copy a value of alloc {g} into alloc {g}")
                for u, c in input_slots(concat, s):
                    if u in copied and any(concat_head(o2) is None and w is not u
                                           and c2 < c + u.type.shape[1] and c < c2 + w.type.shape[1]
                                           for o2, w, c2 in ms):
                        raise _storage_error(op, f"its copy of an input would overwrite a value of alloc {g}")
            elif st.types[g].is_image and any(st.slots.get(r, (None,))[0] == g for r in kernel_reads(op)):
                raise _storage_error(op, f"its kernel reads image alloc {g} while writing into it")
    return st
