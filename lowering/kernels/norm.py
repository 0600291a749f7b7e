"""Row normalizations: LayerNorm (and RMS normalization, `center` False) over the
trailing axes, one row per work-item or per work-group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, broadcast_strides, numel, work_group_allsum


@dataclass(frozen=True)
class LayerNormSpec(KernelSpec):
    """`rows` rows of `length` contiguous floats: out = (x - mean) / sqrt(var + eps) *
    scale + bias, scale and bias read at `scale_strides`/`bias_strides` over the row's
    trailing shape `row_shape` (contiguous, or 0 where they broadcast).

    Two reductions (the mean, then the mean square of x - mean) rather than one pass of
    sum and sum of squares: E[x^2] - E[x]^2 cancels catastrophically when |mean| >> std.
    Rows are short (256-1024 floats for transformers), so the second and third reads hit
    the cache. `items` = 1: a work-item loops over its row; a power of two >= 2 (the
    the row family's work-items per row, lowering/families/rows.py): a work-group per row, work-item l taking elements l,
    l + items, ... (adjacent work-items read adjacent floats), sums by `work_group_allsum`."""

    rows: int
    row_shape: tuple[int, ...]
    scale_strides: tuple[int, ...]
    bias_strides: tuple[int, ...] | None
    epsilon: float
    items: int = 1
    center: bool = True
    """False: RMS normalization (no mean subtracted: x / sqrt(mean(x^2) + eps))."""
    inner: int = 1
    """A row's elements are `inner` floats apart (graph.channel_norm on NCHW: a pixel's
    channels, H*W apart): row r starts at (r // inner) * length * inner + r % inner, so
    neighbouring rows (pixels) are neighbouring floats."""

    @property
    def length(self) -> int:
        return numel(self.row_shape)

    def base_name(self) -> str:
        kind = ("layer_norm" if self.center else "rms_norm") + ("_channels" if self.inner > 1 else "")
        return kind + (f"_wg{self.items}" if self.items > 1 else "")

    def input_names(self) -> tuple[str, ...]:
        return ("input", "scale") + (("bias",) if self.bias_strides is not None else ())

    def global_size(self) -> tuple[int, ...]:
        return (self.items, self.rows) if self.items > 1 else (self.rows,)

    def local_size(self) -> tuple[int, ...] | None:
        return (self.items, 1) if self.items > 1 else None

    def _param_index(self, kb: KernelBuilder, j: SSAValue, strides: tuple[int, ...]) -> SSAValue:
        if strides == broadcast_strides(self.row_shape, self.row_shape):  # scale/bias of the row's own shape
            return j
        return kb.linear(kb.unravel(j, self.row_shape), strides)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        ins, _, out = self.split_args(args)
        x, scale = ins[0], ins[1]
        bias = ins[2] if len(ins) > 2 else None
        n = self.length
        grouped = self.items > 1
        row = kb.global_id(1 if grouped else 0, "row")
        if self.inner > 1:
            base = kb.add(kb.mul(kb.div(row, self.inner), n * self.inner), kb.rem(row, self.inner), "base")
        else:
            base = kb.mul(row, n, "base")
        lid = kb.local_id(0, "l") if grouped else kb.i(0)
        step = self.items if grouped else 1

        def at(k: KernelBuilder, j: SSAValue) -> SSAValue:
            return k.add(base, k.mul(j, self.inner) if self.inner > 1 else j)

        def row_sum(term: Callable[[KernelBuilder, SSAValue], SSAValue], hint: str) -> SSAValue:
            (partial,) = kb.for_(lid, n, step, [kb.f(0.0)],
                                 lambda k, j, a: [k.fadd(a[0], term(k, k.load(x, at(k, j))))], "j")
            total = work_group_allsum(kb, partial, lid, self.items, hint) if grouped else partial
            return kb.fmul(total, 1.0 / n, hint)

        mean = row_sum(lambda k, v: v, "mean") if self.center else None

        def square(k: KernelBuilder, v: SSAValue) -> SSAValue:
            d = k.fsub(v, mean) if mean is not None else v
            return k.fmul(d, d)

        var = row_sum(square, "var")
        inv = kb.fdiv(1.0, kb.sqrt(kb.fadd(var, self.epsilon)), "inv_std")

        def write(k: KernelBuilder, j: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            idx = at(k, j)
            v = k.load(x, idx)
            centered = k.fsub(v, mean) if mean is not None else v
            y = k.fmul(k.fmul(centered, inv), k.load(scale, self._param_index(k, j, self.scale_strides)))
            if bias is not None:
                y = k.fadd(y, k.load(bias, self._param_index(k, j, self.bias_strides)))
            k.store(y, out, idx)
            return []

        kb.for_(lid, n, step, [], write, "j")

