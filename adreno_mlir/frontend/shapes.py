"""Fixed input shapes for ONNX models exported with dynamic axes.

adreno-mlir compiles static shapes. A model whose inputs have symbolic dims (`dim_param`
strings such as "batch" or "sequence", or dims with no value at all) is compiled for
sizes given at compile time, as `tvmc --input-shapes` and TVM's `shape_dict` do:

    adreno_mlir.compile(model, input_shapes={"input_ids": (1, 128)})   # whole shapes per input
    adreno_mlir.compile(model, dims={"batch": 1, "sequence": 128})    # named dims, in every input
    adreno-mlir run model.onnx --input-shape input_ids:1,128           # the same on the command line
    adreno-mlir run model.onnx --dim batch=1 --dim sequence=128

`bind_input_shapes` rewrites the graph inputs' dims (and the same named dims in the graph
outputs and value_info, so shape inference agrees); the importer's ONNX shape inference
(with data propagation) then makes every other tensor static. A named dim bound by one
input's shape in `input_shapes` is bound in every input that names it.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence

import onnx

from adreno_mlir.frontend.onnx_importer import FrontendError

__all__ = ["bind_in_place", "bind_input_shapes", "bound_input_shapes", "dynamic_input_message"]

Dim = int | str | None
"""A declared dim: a fixed size, a dim_param name, or None (no value, no name)."""


def _declared(vi: onnx.ValueInfoProto) -> list[Dim] | None:
    """The input's declared dims; None where it has no shape at all (unknown rank)."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    out: list[Dim] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            out.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def _shown(dims: list[Dim] | None) -> str:
    return "of unknown rank" if dims is None else "[" + ", ".join("?" if d is None else repr(d) if isinstance(d, str)
                                                                  else str(d) for d in dims) + "]"


def _positive(value, what: str) -> int:
    if isinstance(value, bool):
        raise FrontendError(f"{what} must be a positive integer, not {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise FrontendError(f"{what} must be a positive integer, not {value!r}") from None
    if v <= 0:
        raise FrontendError(f"{what} is {v}; dims must be positive (adreno-mlir compiles no empty tensors)")
    return int(v)


def _inputs(graph: onnx.GraphProto, initializer_names: Iterable[str] | None
            ) -> tuple[list[onnx.ValueInfoProto], set[str]]:
    inits = {i.name for i in graph.initializer} if initializer_names is None else set(initializer_names)
    return [vi for vi in graph.input if vi.name not in inits], inits


def _resolve(graph: onnx.GraphProto, input_shapes: Mapping[str, Sequence[int]] | None,
             dims: Mapping[str, int] | None, initializer_names: Iterable[str] | None = None
             ) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Check the bindings against the graph's inputs: ({input: its static shape} for every
    input, {dim_param: size} bound). Raises FrontendError naming what does not fit."""
    inputs, inits = _inputs(graph, initializer_names)
    names = [vi.name for vi in inputs]
    declared = {vi.name: _declared(vi) for vi in inputs}
    if input_shapes is not None and not isinstance(input_shapes, Mapping):
        raise FrontendError(f"input_shapes must map input names to shapes, e.g. {{{names[0] if names else 'x'!r}: "
                            f"(1, 128)}}, not {type(input_shapes).__name__}")
    if dims is not None and not isinstance(dims, Mapping):
        raise FrontendError(f"dims must map dim names to sizes, e.g. {{'batch': 1}}, not {type(dims).__name__}")
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in (input_shapes or {}).items():
        if name not in declared:
            init = " (it is an initializer, a weight)" if name in inits else ""
            raise FrontendError(f"input_shapes (--input-shape) names '{name}', which is not a model input{init}; "
                                f"the model's inputs are {names}")
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
            raise FrontendError(f"input_shapes['{name}'] must be a sequence of positive integers, e.g. (1, 128), "
                                f"not {shape!r}")
        shapes[name] = tuple(_positive(d, f"input_shapes['{name}'] axis {axis}") for axis, d in enumerate(shape))

    params: dict[str, list[str]] = {}  # dim_param -> the inputs naming it
    for name, ds in declared.items():
        for d in ds or []:
            if isinstance(d, str) and name not in params.setdefault(d, []):
                params[d].append(name)
    bound: dict[str, int] = {}
    source: dict[str, str] = {}
    for key, value in (dims or {}).items():
        if not isinstance(key, str):
            raise FrontendError(f"dims keys are dim names (strings), not {key!r}")
        if key not in params:
            have = (f"the model's inputs name the dims {list(params)}" if params else
                    "the model's inputs have no named dims (bind their shapes with input_shapes / --input-shape)")
            raise FrontendError(f"dims (--dim) binds '{key}', which no model input names; {have}")
        bound[key] = _positive(value, f"dims['{key}']")
        source[key] = f"dims['{key}'] (--dim {key}=...)"

    for name, given in shapes.items():
        decl = declared[name]
        if decl is None:
            continue
        if len(given) != len(decl):
            raise FrontendError(f"the shape {list(given)} given for input '{name}' (input_shapes / --input-shape) has "
                                f"{len(given)} dims, but the model's input '{name}' has {len(decl)}: {_shown(decl)}")
        for axis, (g, d) in enumerate(zip(given, decl)):
            if isinstance(d, int) and d != g:
                raise FrontendError(f"the shape {list(given)} given for input '{name}' (input_shapes / --input-shape) "
                                    f"has {g} at axis {axis}, but the model's input '{name}' has the fixed size {d} "
                                    f"there: {_shown(decl)} (only its dynamic dims can be chosen)")
            if isinstance(d, str):
                if d in bound and bound[d] != g:
                    raise FrontendError(f"dim '{d}' is bound twice with different sizes: {g} by the shape of input "
                                        f"'{name}' (axis {axis}, input_shapes / --input-shape) and {bound[d]} by "
                                        f"{source[d]}")
                bound[d] = g
                source[d] = f"the shape of input '{name}'"

    result: dict[str, list[int]] = {}
    still: list[str] = []
    for name, decl in declared.items():
        if name in shapes:
            result[name] = list(shapes[name])
            continue
        now = None if decl is None else [bound.get(d, d) if isinstance(d, str) else d for d in decl]
        if now is None or not all(isinstance(d, int) for d in now):
            still.append(f"'{name}' ({_shown(decl)}" + (")" if now is None or now == decl else
                                                         f", bound so far {_shown(now)})"))
            continue
        result[name] = now
    if still:
        open_params = sorted({d for n in declared if n not in shapes for d in declared[n] or []
                              if isinstance(d, str) and d not in bound})
        more = (f", or bind {', '.join(map(repr, open_params))} with dims={{{', '.join(f'{p!r}: N' for p in open_params)}}}"
                f" ({' '.join(f'--dim {p}=N' for p in open_params)})") if open_params else ""
        several = len(still) > 1
        raise FrontendError(f"model input{'s' if several else ''} {', '.join(still)} still "
                            f"{'have' if several else 'has'} dynamic dims after binding; give "
                            f"{'their whole shapes' if several else 'its whole shape'} with input_shapes "
                            f"(--input-shape NAME:D1,D2,...){more}")
    return result, bound


def _set_dims(vi: onnx.ValueInfoProto, shape: list[int] | None, bound: Mapping[str, int]) -> None:
    """Give `vi` the static `shape`, or (None) replace its bound dim_params by their sizes."""
    if not vi.type.HasField("tensor_type"):
        return
    tt = vi.type.tensor_type
    if shape is not None:
        tt.ClearField("shape")
        tt.shape.SetInParent()  # a rank-0 input keeps an (empty) shape: a scalar, not unknown rank
        for d in shape:
            tt.shape.dim.add().dim_value = d
        return
    if not tt.HasField("shape"):
        return
    for d in tt.shape.dim:
        if d.HasField("dim_param") and d.dim_param in bound:
            d.dim_value = bound[d.dim_param]  # clears dim_param (a oneof)


def _wanted(input_shapes, dims) -> bool:
    return bool(input_shapes) or bool(dims)


def bind_in_place(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None = None,
                  dims: Mapping[str, int] | None = None, *, initializer_names: Iterable[str] | None = None) -> None:
    """`bind_input_shapes` on a model the caller owns (the importer's own copy of the graph,
    whose initializers stay in the caller's model: `initializer_names` are theirs)."""
    if not _wanted(input_shapes, dims):
        return
    g = model.graph
    shapes, bound = _resolve(g, input_shapes, dims, initializer_names)
    for vi in g.input:
        if vi.name in shapes:
            _set_dims(vi, shapes[vi.name], bound)
    for vi in list(g.output) + list(g.value_info):  # the same named dims, so shape inference agrees
        _set_dims(vi, None, bound)


def bind_input_shapes(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None = None,
                      dims: Mapping[str, int] | None = None) -> onnx.ModelProto:
    """A copy of `model` whose graph inputs have the static shapes given: `input_shapes`
    ({input name: whole shape}; it must keep the input's rank and fixed dims) and `dims`
    ({dim_param: size}, bound in every input that names it, and in the graph outputs and
    value_info). Every input must be static afterwards. The caller's model is never
    changed; with nothing to bind, `model` itself is returned (no copy). The copy holds
    the weights too (one copy of them: `import_onnx(model, input_shapes=..., dims=...)`
    binds without copying weights at all). Raises FrontendError naming the input or dim
    that does not fit (an unknown name lists the model's inputs or named dims)."""
    if not _wanted(input_shapes, dims):
        return model
    _resolve(model.graph, input_shapes, dims)  # check before copying anything
    out = onnx.ModelProto()
    out.CopyFrom(model)
    bind_in_place(out, input_shapes, dims)
    return out


def bound_input_shapes(graph: onnx.GraphProto, input_shapes: Mapping[str, Sequence[int]] | None = None,
                       dims: Mapping[str, int] | None = None) -> dict[str, tuple[int, ...]] | None:
    """{input: static shape} after binding, without changing `graph`; None with nothing to
    bind (the declared shapes stand). Raises FrontendError as `bind_input_shapes` does."""
    if not _wanted(input_shapes, dims):
        return None
    shapes, _ = _resolve(graph, input_shapes, dims)
    return {n: tuple(s) for n, s in shapes.items()}


def dynamic_input_message(name: str, dims: Sequence[onnx.TensorShapeProto.Dimension]) -> str:
    """The importer's refusal of an input left dynamic, saying how to bind its dims."""
    decl: list[Dim] = []
    for d in dims:
        decl.append(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else
                    d.dim_param if d.HasField("dim_param") and d.dim_param else None)
    example = [d if isinstance(d, int) else (1 if axis == 0 else 128) for axis, d in enumerate(decl)]
    shape = "(" + ", ".join(map(str, example)) + ("," if len(example) == 1 else "") + ")"
    named = {d: v for d, v in zip(decl, example) if isinstance(d, str)}
    api = f"compile(model, input_shapes={{{name!r}: {shape}}})"
    cli = f"--input-shape {name}:{','.join(map(str, example))}"
    if named:
        api += f" or dims={{{', '.join(f'{k!r}: {v}' for k, v in named.items())}}}"
        cli += " or " + " ".join(f"--dim {k}={v}" for k, v in named.items())
    return (f"model input '{name}' has a dynamic shape {_shown(decl)}; adreno-mlir compiles static shapes: bind its "
            f"dims at compile time, e.g. {api}; on the command line {cli} (the sizes here are examples)")
