"""Element-wise and data-movement kernels: one work-item per element.

`MapSpec` covers unary/binary ops with broadcasting, fused element-wise chains,
transpose, slice and each input of a concat: every input (and the output) is read
at `base + sum(coord * stride)` over an iteration shape. Where an operand's strides
are the contiguous ones of the iteration space, the flat work-item id is used as
its index directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.expr import Expr, emit_expr, memo_loader
from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, contiguous_strides, numel




@dataclass(frozen=True)
class Access:
    """Where an operand lives relative to the iteration space."""

    base: int
    strides: tuple[int, ...]


@dataclass(frozen=True)
class MapSpec(KernelSpec):
    shape: tuple[int, ...]
    inputs: tuple[Access, ...]
    out: Access
    expr: Expr
    kind: str = "map"
    out_offset_arg: bool = False
    """Add an `out_offset` launch argument to the output index (concat copies share
    one kernel per input shape, whatever their offset)."""

    def scalar_names(self) -> tuple[str, ...]:
        return ("out_offset",) if self.out_offset_arg else ()

    def base_name(self) -> str:
        from adreno_mlir.lowering.expr import describe

        return describe(self.expr) or self.kind

    def input_names(self) -> tuple[str, ...]:
        return tuple(f"in{k}" for k in range(len(self.inputs)))

    def shared(self) -> "MapSpec":
        """Strides over unit dimensions are never used, nor is the extent of the outermost
        dimension (see KernelBuilder.unravel): both are zeroed for the kernel's identity."""
        import dataclasses

        unit = [d == 1 for d in self.shape]
        first = next((d for d in range(len(self.shape)) if not unit[d]), None)

        def norm(acc: Access) -> Access:
            return Access(acc.base, tuple(0 if u else st for u, st in zip(unit, acc.strides)))

        shape = tuple(0 if d == first else e for d, e in enumerate(self.shape))
        return dataclasses.replace(self, shape=shape, inputs=tuple(norm(a) for a in self.inputs),
                                   out=norm(self.out))

    def global_size(self) -> tuple[int, ...]:
        return (numel(self.shape),)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, _, out = self.split_args(args)
        gid = kb.global_id(0, "i")
        dense = tuple(0 if e == 1 else st for e, st in zip(self.shape, contiguous_strides(self.shape)))
        coords: list[SSAValue] | None = None

        def index(acc: Access) -> SSAValue:
            nonlocal coords
            if acc.strides == dense or numel(self.shape) == 1 and not any(acc.strides):
                return kb.add(gid, acc.base) if acc.strides == dense else kb.i(acc.base)
            if coords is None:
                coords = kb.unravel(gid, self.shape)
            return kb.linear(coords, acc.strides, acc.base)

        def load(k: int) -> SSAValue:
            return kb.load(ins[k], index(self.inputs[k]))

        value = emit_expr(kb, self.expr, None, memo_loader(load))
        out_index = index(self.out)
        if self.out_offset_arg:
            out_index = kb.add(out_index, self.scalar(args, "out_offset"))
        kb.store(value, out, out_index)


@dataclass(frozen=True)
class GatherSpec(KernelSpec):
    """`graph.gather` whose indices are not evenly spaced (evenly spaced ones became
    slices): the input viewed as [outer, axis_len, inner], the output as [outer, count,
    inner]; output element (o, p, i) copies input (o, indices[p], i). The indices come
    from a constant table argument of floats (weights are float buffers; integers below
    2**24 are exact in a float, which the lowering checks)."""

    outer: int
    axis_len: int
    count: int
    inner: int

    def base_name(self) -> str:
        return "gather"

    def input_names(self) -> tuple[str, ...]:
        return ("input", "indices")

    def global_size(self) -> tuple[int, ...]:
        return (self.outer * self.count * self.inner,)

    def source_row(self, kb: KernelBuilder, indices: SSAValue, p: SSAValue) -> SSAValue:
        """The input row that output row `p` copies."""
        return kb.to_int(kb.load(indices, p))

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x, indices), _, out = self.split_args(args)
        gid = kb.global_id(0, "i")
        o, p, i = kb.unravel(gid, (self.outer, self.count, self.inner), ("o", "p", "in"))
        src = self.source_row(kb, indices, p)
        index = kb.add(kb.mul(kb.add(kb.mul(o, self.axis_len), src), self.inner), i)
        kb.store(kb.load(x, index), out, gid)


@dataclass(frozen=True)
class TakeSpec(GatherSpec):
    """`graph.take`, a gather with run-time indices (an embedding lookup). A negative
    id counts from the end (ONNX); ids are clamped into the table so a bad id can never
    read outside it. i32 ids come from a model input, which the runtime checks before it
    uploads them, so clamping never decides a result; float ids (`float_ids`: integers
    computed on device, e.g. position ids) outside [-axis_len, axis_len), or NaN, read
    row 0 (ONNX leaves them undefined)."""

    float_ids: bool = False

    def base_name(self) -> str:
        return "take"

    def input_names(self) -> tuple[str, ...]:
        return ("input", "ids")

    def pointer_types(self) -> dict:
        from adreno_mlir.lowering.kernel_builder import GLOBAL_I32

        return {} if self.float_ids else {"ids": GLOBAL_I32}

    def source_row(self, kb: KernelBuilder, indices: SSAValue, p: SSAValue) -> SSAValue:
        raw = kb.load(indices, p, "id")
        if self.float_ids:  # in range (ordered compares: NaN is not) before the conversion
            inside = kb.and_(kb.fcmp("oge", raw, float(-self.axis_len)), kb.fcmp("olt", raw, float(self.axis_len)))
            raw = kb.to_int(kb.select(inside, raw, kb.f(0.0)))
        wrapped = kb.select(kb.cmp("slt", raw, 0), kb.add(raw, self.axis_len), raw)
        return kb.min_i(kb.max_i(wrapped, 0), self.axis_len - 1)


@dataclass(frozen=True)
class IntToFloatSpec(KernelSpec):
    """`graph.int_to_float`: an i32 buffer (an integer model input) as floats, one
    work-item per element (exact: the runtime checked |v| < 2**24)."""

    size: int

    def base_name(self) -> str:
        return "int_to_float"

    def pointer_types(self) -> dict:
        from adreno_mlir.lowering.kernel_builder import GLOBAL_I32

        return {"input": GLOBAL_I32}

    def shared(self) -> "IntToFloatSpec":
        return IntToFloatSpec(size=0)

    def global_size(self) -> tuple[int, ...]:
        return (self.size,)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split_args(args)
        gid = kb.global_id(0, "i")
        kb.store(kb.to_float(kb.load(x, gid)), out, gid)
