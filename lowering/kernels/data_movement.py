"""Data-movement kernels that are not one strided copy (`MapSpec` covers transpose,
slice, expand and each input of a concat).

`PadSpec` is `graph.pad`: one work-item per output element, which works out its source
coordinate on every axis (crop offset, then the mode's rule outside the kept range)
and copies one element, or stores the constant. Axes whose output range provably maps
inside the input get no checks at all, so a pad of H and W only costs two compares
(constant) or two min/max (edge, reflect) per element.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.common import KernelSpec, contiguous_strides, numel


@dataclass(frozen=True)
class PadSpec(KernelSpec):
    """`graph.pad` on a plain tensor. `axes` holds, per axis, (first, kept, before) of
    `PadOp.axis_geometry`: output coordinate o reads crop element j = o - before, i.e.
    input element first + j when 0 <= j < kept; outside that range `mode` decides:
    constant (the `value`), edge (j clamped), reflect (-j, or 2 (kept - 1) - j: the
    verifier allows a single reflection only), wrap (j modulo kept)."""

    x_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    axes: tuple[tuple[int, int, int], ...]
    mode: str
    value: float = 0.0

    def base_name(self) -> str:
        return f"pad_{self.mode}"

    def global_size(self) -> tuple[int, ...]:
        return (numel(self.out_shape),)

    def _source(self, kb: KernelBuilder, c, d: int) -> tuple[SSAValue | int, list]:
        """The input coordinate along axis `d` for output coordinate `c` (an SSA value,
        or a Python int on unit axes), and the conditions under which it is valid
        (constant mode only)."""
        first, kept, before = self.axes[d]
        j = kb.sub(c, before)
        lo, hi = -before, self.out_shape[d] - 1 - before  # the range j takes
        if 0 <= lo and hi < kept:
            return kb.add(j, first), []
        if self.mode == "constant":
            if kept < 1:
                return 0, [False]
            conds = []
            if lo < 0:
                conds.append(kb.cmp("sge", j, 0))
            if hi >= kept:
                conds.append(kb.cmp("slt", j, kept))
            return kb.add(j, first), conds
        if isinstance(j, int):  # a unit axis: the rule applied now
            j = {"edge": lambda v: min(max(v, 0), kept - 1),
                 "reflect": lambda v: min(abs(v), 2 * (kept - 1) - abs(v)),
                 "wrap": lambda v: v % kept}[self.mode](j)
            return j + first, []
        if self.mode == "edge":
            if lo < 0:
                j = kb.max_i(j, 0)
            if hi >= kept:
                j = kb.min_i(j, kept - 1)
        elif self.mode == "reflect":
            if lo < 0:
                j = kb.max_i(j, kb.sub(0, j))  # |j|
            if hi >= kept:
                j = kb.min_i(j, kb.sub(2 * (kept - 1), j))
        elif self.mode == "wrap":
            # j >= lo: adding a multiple of kept makes it non-negative for OpenCL's `%`
            j = kb.rem(kb.add(j, -(lo // kept) * kept) if lo < 0 else j, kept)
        else:
            raise ValueError(f"pad mode '{self.mode}' has no kernel")
        return kb.add(j, first), []

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split_args(args)
        gid = kb.global_id(0, "i")
        coords = kb.unravel(gid, self.out_shape)
        sources, conds = [], []
        for d, c in enumerate(coords):
            s, cs = self._source(kb, c, d)
            sources.append(s)
            conds += cs
        valid = kb.all_of(conds)
        if valid is False:  # every element is padding
            kb.store(kb.f(self.value), out, gid)
            return
        index = kb.linear(sources, contiguous_strides(self.x_shape))
        if valid is None:
            kb.store(kb.load(x, index), out, gid)
            return
        # Out-of-range work-items read element 0 (always there) and keep the constant.
        v = kb.load(x, kb.select(valid, kb.i(index), kb.i(0)))
        kb.store(kb.select(valid, v, kb.f(self.value)), out, gid)

