"""NCHW4c kernels at the NCHW boundary: pack an NCHW float buffer into NCHW4c, unpack it back."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from adreno_mlir.lowering.kernel_builder import GLOBAL_F32, KernelBuilder
from adreno_mlir.lowering.kernels.packed import Packed, PackedSpec


@dataclass(frozen=True)
class PackSpec(PackedSpec):
    """NCHW float buffer -> NCHW4c (channels past C read as zero)."""

    channels: int = 0

    def base_name(self) -> str:
        return "pack_nchw4c"

    def head_args(self):
        return [("input", GLOBAL_F32)]

    def shared(self) -> PackSpec:
        return self  # every extent stays in the kernel's identity

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split(args)
        n, c4, h, w = self.pixel_ids(kb)
        _, _, H, W = self.out.shape
        lanes = []
        for k in range(4):
            c = kb.add(kb.mul(c4, 4), k)
            valid = kb.cmp("slt", c, self.channels)
            idx = kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, self.channels), c), H), h), W), w)
            lanes.append(kb.masked_load(x, idx, valid))
        self.out.write(kb, out, kb.vec(lanes), n, c4, h, w)


@dataclass(frozen=True)
class UnpackSpec(PackedSpec):
    """NCHW4c -> NCHW float buffer of `channels` channels (padding dropped)."""

    src: Packed = None  # type: ignore[assignment]
    channels: int = 0

    def base_name(self) -> str:
        return "unpack_nchw4c"

    def grid(self):
        n, c4, h, w = self.src.shape
        return (w, h, n * c4)

    def head_args(self):
        return [("input", self.src.arg_type(False))]

    def out_arg(self):
        return ("out", GLOBAL_F32)

    def shared(self) -> UnpackSpec:
        return self  # every extent stays in the kernel's identity (z is split by the input's channel blocks)

    def body(self, kb: KernelBuilder, args: list[SSAValue]) -> None:
        (x,), _, out = self.split(args)
        _, c4n, H, W = self.src.shape
        w, h, z = kb.global_id(0, "w"), kb.global_id(1, "h"), kb.global_id(2, "z")
        n, c4 = kb.div(z, c4n, "n"), kb.rem(z, c4n, "c4")
        v = self.src.read(kb, x, n, c4, h, w)
        for k in range(4):
            c = kb.add(kb.mul(c4, 4), k)
            idx = kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, self.channels), c), H), h), W), w)
            kb.guard([kb.cmp("slt", c, self.channels)], lambda k2, k=k, idx=idx: k2.store(k2.lane(v, k), out, idx))
