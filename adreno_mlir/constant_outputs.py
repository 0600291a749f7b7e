"""Constant model outputs of element types the graph dialect has no tensors for.

A model output that no graph input reaches is a constant. A float32 one stays in the
graph function like any value (`func.return` of a `graph.constant`, or of something
graph-canonicalize folds into one); the lowering returns it as an `opencl.weight`, and
the launch plan turns that into a constant output (`adreno_mlir.runtime.plan`).

Integer, boolean and other non-float32 constants (a `Shape` of a static input is int64,
a comparison of constants is bool) cannot be graph tensors: the importer keeps them out
of the function, in the function attribute

    graph.constant_outputs = {s = dense<[1, 3, 4, 4]> : tensor<4xi64>, mask = @mask}

(small values inline, larger ones by reference to the weight store, as `graph.constant`
does), while `graph.outputs` still lists every model output in the model's order. The
function returns the outputs that are not in the attribute, in that order.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    SymbolRefAttr,
    TensorType,
    f16,
    f32,
    f64,
)
from xdsl.ir import Attribute

from adreno_mlir.errors import CompileError
from adreno_mlir.weights import WeightStore

ATTR = "graph.constant_outputs"
INLINE_LIMIT = 8
"""Values with at most this many elements are written inline (as `graph.constant` does)."""


def _element_type(dtype: np.dtype) -> Attribute | None:
    if dtype == np.bool_:
        return IntegerType(1)
    if dtype.kind in "iu":
        return IntegerType(dtype.itemsize * 8, Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS)
    return {np.dtype(np.float16): f16, np.dtype(np.float32): f32, np.dtype(np.float64): f64}.get(dtype)


def _numpy_dtype(element: Attribute) -> np.dtype:
    if isinstance(element, IntegerType):
        if element.width.data == 1:
            return np.dtype(np.bool_)
        kind = "u" if element.signedness.data == Signedness.UNSIGNED else "i"
        return np.dtype(f"{kind}{element.width.data // 8}")
    for t, d in ((Float16Type, np.float16), (Float32Type, np.float32), (Float64Type, np.float64)):
        if isinstance(element, t):
            return np.dtype(d)
    raise CompileError(f"{ATTR}: element type {element} is not a constant output type")


def supported(dtype: np.dtype) -> bool:
    """Whether a constant output of `dtype` can be returned (bool, ints, f16/f32/f64)."""
    return _element_type(np.dtype(dtype)) is not None


def to_attr(arr: np.ndarray, store: WeightStore, hint: str) -> Attribute:
    """The attribute value holding `arr` (inline, or a new entry of `store`)."""
    arr = np.ascontiguousarray(arr)
    element = _element_type(arr.dtype)
    if element is None:
        raise CompileError(f"constant output '{hint}' has element type {arr.dtype}, which cannot be returned")
    if arr.size > INLINE_LIMIT:
        return SymbolRefAttr(store.add(hint, arr))
    t = TensorType(element, list(arr.shape))
    values = arr.reshape(-1).tolist()
    if arr.dtype == np.bool_:
        values = [int(v) for v in values]
    return DenseIntOrFPElementsAttr.from_list(t, values)


def from_attr(name: str, value: Attribute, store: WeightStore) -> np.ndarray:
    """The array an attribute value holds (in its own dtype and shape)."""
    if isinstance(value, SymbolRefAttr):
        return np.asarray(store[value.root_reference.data])
    if isinstance(value, DenseIntOrFPElementsAttr):
        dtype = _numpy_dtype(value.get_element_type())
        values = np.array(value.get_values())
        arr = values != 0 if dtype == np.bool_ else values.astype(dtype)
        return arr.reshape(value.get_shape())
    raise CompileError(f"{ATTR}: output '{name}' must be a dense<...> value or a @weight reference, got {value}")


def constant_outputs(attributes: Mapping[str, Attribute], store: WeightStore) -> dict[str, np.ndarray]:
    """{output name: value} of a function's `graph.constant_outputs` (empty without one)."""
    attr = attributes.get(ATTR)
    if attr is None:
        return {}
    if not isinstance(attr, DictionaryAttr):
        raise CompileError(f"{ATTR} must be a dictionary {{name = dense<...> or @weight}}, got {attr}")
    return {k: from_attr(k, v, store) for k, v in attr.data.items()}


def returned_names(output_names: list[str], attributes: Mapping[str, Attribute]) -> list[str]:
    """The outputs the function returns: `graph.outputs` less the constant ones."""
    attr = attributes.get(ATTR)
    constant = set(attr.data) if isinstance(attr, DictionaryAttr) else set()
    unknown = constant - set(output_names)
    if unknown:
        raise CompileError(f"{ATTR} names {sorted(unknown)}, which graph.outputs does not list")
    return [n for n in output_names if n not in constant]
