"""NCHW4c element-wise maps: a float4 expression of its inputs per output pixel, which
also copies a concat input into its channel slice of the output (an output channel offset)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.expr import describe
from adreno_mlir.lowering.kernel_builder import KernelBuilder
from adreno_mlir.lowering.kernels.packed import PackedSpec


@dataclass(frozen=True)
class PackedMapSpec(PackedSpec):
    """out[n, c4 + c4_offset, h, w] = expr(inputs at (n, c4, h, w), broadcasting).

    Grid is over `shape` (the inputs' space); with a channel offset (`offset_arg`) it
    copies one concat input into its slice of the output."""

    shape: tuple[int, int, int, int] = (1, 1, 1, 1)
    src_offset_arg: bool = False
    """Read the inputs at channel block `c4 + src_c4_offset` (a launch argument): a
    concat's copy of a value that plan-memory placed at a channel offset of another
    concat's storage."""

    def scalar_names(self) -> tuple[str, ...]:
        return ("src_c4_offset",) if self.src_offset_arg else ()

    def base_name(self) -> str:
        return f"{describe(self.pepi.expr) or 'copy'}_4c"

    def head_args(self):
        return []

    def shared_changes(self, norm) -> dict:
        return {"shape": (self.shape[0], 0, *self.shape[2:])}

    def grid(self):
        n, c4, h, w = self.shape
        return (w, h, n * c4)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        _, extras, out = self.split(args)
        c4n = self.shape[1]
        w, h, z = kb.global_id(0, "w"), kb.global_id(1, "h"), kb.global_id(2, "z")
        n, c4 = self.split_z(kb, z, c4n)
        c4_in = kb.add(c4, self.scalar(args, "src_c4_offset")) if self.src_offset_arg else c4
        value = self.pepi.apply(kb, None, extras, n, c4_in, h, w)
        self.out.write(kb, out, value, n, self.out_block(kb, out, c4), h, w)
