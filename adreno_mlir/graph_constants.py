"""Reading and creating `graph.constant`s: the passes that compute weights and the lowering share these."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from adreno_mlir.weights import WeightStore, store_of
from adreno_mlir.dialects import graph

INLINE_LIMIT = 8
"""Constants with at most this many elements are printed inline as dense<...>."""


def module_of(op: Operation) -> ModuleOp:
    top = op
    while top.parent_op() is not None:
        top = top.parent_op()
    assert isinstance(top, ModuleOp)
    return top


def constant_value(value: SSAValue, store: WeightStore | None = None) -> np.ndarray | None:
    """The array behind a `graph.constant` result, or None."""
    op = value.owner
    if not isinstance(op, graph.ConstantOp):
        return None
    shape = graph.shape_of(value)
    if op.value is not None:
        return np.array(op.value.get_values(), dtype=np.float32).reshape(shape)
    if store is None:
        store = store_of(module_of(op))
    arr = np.asarray(store[op.weight_name], dtype=np.float32)
    if list(arr.shape) != list(shape) and arr.size != int(np.prod(shape, dtype=np.int64)):
        from adreno_mlir.errors import CompileError

        raise CompileError(f"weight @{op.weight_name} ({store.path_of(op.weight_name)}) has shape {list(arr.shape)}, "
                           f"but its graph.constant says {list(shape)}; the weights folder does not belong to "
                           "this IR (import the model again)")
    return arr.reshape(shape)


def new_constant(store: WeightStore, arr: np.ndarray, hint: str) -> graph.ConstantOp:
    """A constant holding `arr`: inline when small, else a new weight in `store`."""
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    t = TensorType(graph.f32, list(arr.shape))
    if arr.size <= INLINE_LIMIT:
        return graph.ConstantOp(t, value=DenseIntOrFPElementsAttr.from_list(t, arr.reshape(-1).tolist()))
    return graph.ConstantOp(t, ref=store.add(hint, arr))


def erase_dead_constants(module: ModuleOp) -> None:
    """Erase the `graph.constant`s nothing reads any more (the weights a pass replaced)."""
    for c in [o for o in module.walk() if isinstance(o, graph.ConstantOp) and not o.result.uses]:
        c.detach()
        c.erase()
