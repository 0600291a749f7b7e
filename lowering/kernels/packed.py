"""NCHW4c storage: how a kernel reaches a packed tensor, and what every packed kernel shares.

A packed tensor lives in a global buffer (float4 per pixel, or half4 for fp16
storage) or in a 2-D image (RGBA = the 4 channels; half-float images give fp16
storage). `Packed` hides which: kernels address pixels as (n, c4, h, w), and a pixel
comes as the kernel's data type whatever the storage:

| kernel computes in | f32 buffer | f16 buffer | image |
|---|---|---|---|
| f32 (fp32, fp16-acc32) | `vload4` | `vload_half4` | `read_imagef` |
| f16 (fp16, `compute = "f16"`) | `convert_half4(vload4)` | `vload4` of half | `read_imageh` |

and writes mirror the reads (half kernels need cl_khr_fp16). `PackedSpec` is the base of
every NCHW4c kernel (every work-item handles whole pixels of four channels, a float4);
`PackedEpilogue` is a fused float4 element-wise tail.

The kernels, by family:

| file | kernels |
|---|---|
| `packed_layout.py` | pack / unpack at the NCHW boundary |
| `packed_conv.py` | convolution (an input source and a reduction), the pooled depthwise conv, split-K's sum |
| `packed_pool.py` | max / avg pool, spatial mean, normalization over channels |
| `packed_resize.py` | resize |
| `packed_map.py` | element-wise maps (and channel concat through an output channel offset) |
| `winograd.py` | Winograd F(2,3) / F(4,3) transforms and products |
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.dialects.builtin import VectorType, f16, f32, i32
from xdsl.ir import Attribute, SSAValue

from adreno_mlir.dialects import opencl, texture
from adreno_mlir.lowering.expr import Expr, Src, describe, emit_expr, memo_loader
from adreno_mlir.lowering.kernel_builder import GLOBAL_F16, GLOBAL_F32, KernelBuilder, finish, new_kernel
from adreno_mlir.lowering.kernels.common import KernelSpec


@dataclass(frozen=True)
class Packed:
    """How a kernel reaches an NCHW4c tensor of shape (N, C4, H, W)."""

    shape: tuple[int, int, int, int]
    kind: str = "buf"  # "buf" | "img"
    mapping: str = "texture"  # image mapping: "texture" | "texture-nhwc"
    element: str = "f32"  # storage: "f32" | "f16"

    def arg_type(self, write: bool) -> Attribute:
        if self.kind == "img":
            return opencl.Image2DType("write" if write else "read")
        return opencl.PointerType("global", f16 if self.element == "f16" else f32)

    def pixel(self, kb: KernelBuilder, n, c4, h, w):
        """Image coordinates (x, y) of a pixel."""
        _, C4, H, W = self.shape
        if self.mapping == "texture-nhwc":
            return kb.add(kb.mul(h, W), w), kb.add(kb.mul(n, C4), c4)
        return w, kb.add(kb.mul(kb.add(kb.mul(n, C4), c4), H), h)

    def index(self, kb: KernelBuilder, n, c4, h, w):
        _, C4, H, W = self.shape
        return kb.add(kb.mul(kb.add(kb.mul(kb.add(kb.mul(n, C4), c4), H), h), W), w)

    def read(self, kb: KernelBuilder, ptr: SSAValue, n, c4, h, w) -> SSAValue:
        """The pixel as a vector of the kernel's data type (`kb.ftype`)."""
        if self.kind == "img":
            x, y = self.pixel(kb, n, c4, h, w)
            return kb.emit(opencl.ReadImageOp(ptr, kb.i(x), kb.i(y), VectorType(kb.ftype, [4])))
        idx = kb.i(self.index(kb, n, c4, h, w))
        if self.element == "f16" and not kb.half:
            return kb.emit(opencl.VLoadHalf4Op(ptr, idx))
        return kb.cast(kb.emit(opencl.VLoad4Op(ptr, idx)), kb.ftype)

    def write(self, kb: KernelBuilder, ptr: SSAValue, value: SSAValue, n, c4, h, w) -> None:
        """Store a float4 or half4 pixel (converted to the storage's type where needed)."""
        if self.kind == "img":
            x, y = self.pixel(kb, n, c4, h, w)
            kb.emit(opencl.WriteImageOp(ptr, kb.i(x), kb.i(y), value))
            return
        idx = kb.i(self.index(kb, n, c4, h, w))
        half_value = value.type.element_type == f16
        if self.element == "f16" and not half_value:
            kb.emit(opencl.VStoreHalf4Op(value, ptr, idx))
        else:
            kb.emit(opencl.VStore4Op(kb.cast(value, f16 if self.element == "f16" else f32), ptr, idx))

    def read_masked(self, kb: KernelBuilder, ptr, n, c4, h, w, valid) -> SSAValue:
        """The pixel, or zeros where `valid` is false (address clamped in bounds)."""
        if valid is None or valid is True:
            return self.read(kb, ptr, n, c4, h, w)
        zero = kb.vector().f(0.0)
        if valid is False:
            return zero
        v = self.read(kb, ptr, n, c4, kb.select(valid, kb.i(h), kb.i(0)), kb.select(valid, kb.i(w), kb.i(0)))
        return kb.select(valid, v, zero)


def packed_of(value: SSAValue) -> Packed:
    """The accessor of an NCHW4c value: the memory annotate-texture-scope gave it
    (global buffer or image, and which mapping) and its storage element."""
    t = value.type
    assert isinstance(t, texture.TextureTensorType), t
    n, c4, h, w, _ = t.shape
    element = "f16" if t.element == f16 else "f32"
    if t.is_image:
        return Packed((n, c4, h, w), "img", t.scope_name, element)
    return Packed((n, c4, h, w), "buf", "texture", element)


@dataclass(frozen=True)
class PackedEpilogue:
    """Float4 element-wise tail; extra input k is read at the output pixel, with
    coordinate 0 on the axes (n, h, w) where it broadcasts."""

    expr: Expr = Src()
    extras: tuple[tuple[Packed, tuple[bool, bool, bool]], ...] = ()

    def suffix(self) -> str:
        d = describe(self.expr)
        return f"_{d}" if d else ""

    def apply(self, kb: KernelBuilder, value: SSAValue | None, ptrs, n, c4, h, w) -> SSAValue:
        if self.expr == Src():
            return value

        def load(k: int) -> SSAValue:
            acc, (bn, bh, bw) = self.extras[k]
            return acc.read(kb, ptrs[k], 0 if bn else n, c4, 0 if bh else h, 0 if bw else w)

        return emit_expr(kb.vector(), self.expr, value, memo_loader(load))


@dataclass(frozen=True)
class PackedSpec(KernelSpec):
    """Base: head inputs, then epilogue extras, then the output."""

    out: Packed
    pepi: PackedEpilogue = field(default_factory=PackedEpilogue)
    compute: str = "f32"
    """The type the kernel computes in: "f32", or "f16" (half arithmetic: pixels,
    weights and biases as half4; `kernel_config` compute, precision fp16)."""
    offset_arg: bool = False
    """Write output channel block c4 at c4 + `c4_offset`, a launch argument (the last):
    the output is a channel slice of a larger allocation (a concat's copy, or a value
    plan-memory placed in a concat's storage). A launch argument, not a constant, so
    the 58 convolutions DenseNet-121 writes into its concats at 58 offsets share one
    kernel. Batch 1 only: then a channel slice is one run of the layout."""

    @property
    def ftype(self) -> Attribute:
        return f16 if self.compute == "f16" else f32

    @property
    def weight_type(self) -> Attribute:
        """Weights and biases are uploaded in the compute type."""
        return GLOBAL_F16 if self.compute == "f16" else GLOBAL_F32

    def head_args(self) -> list[tuple[str, Attribute]]:
        raise NotImplementedError

    def out_arg(self) -> tuple[str, Attribute]:
        return ("out", self.out.arg_type(True))

    def launch_scalars(self) -> tuple[str, ...]:
        """The kernel's i32 arguments after the output: its own (`scalar_names`), then
        `c4_offset` when it writes at a channel offset (`offset_arg`)."""
        return (*self.scalar_names(), *(("c4_offset",) if self.offset_arg else ()))

    def scalar(self, args, name: str) -> SSAValue:
        names = self.launch_scalars()
        return args[len(args) - len(names) + names.index(name)]

    def build(self, name: str) -> opencl.KernelOp:
        args = [*self.head_args(), *[(f"x{k}", p.arg_type(False)) for k, (p, _) in enumerate(self.pepi.extras)],
                self.out_arg(), *[(n, i32) for n in self.launch_scalars()]]
        kernel, kb = new_kernel(name, args, self.ftype)
        self.body(kb, list(kernel.args))
        finish(kb)
        if self.offset_arg and not kernel.args[-1].uses:
            # A kernel that writes without going through `finish_pixel`/`out_block`
            # would silently write at offset 0: refuse it instead.
            raise AssertionError(f"{name}: the kernel ignores its output channel offset (c4_offset)")
        return kernel

    def split(self, args: list[SSAValue]) -> tuple[list[SSAValue], list[SSAValue], SSAValue]:
        n = len(self.head_args())
        args = args[: len(args) - len(self.launch_scalars())]
        return args[:n], args[n:-1], args[-1]

    def out_block(self, kb: KernelBuilder, out: SSAValue, c4):
        """The channel block at which output block `c4` is stored: c4 itself, or with
        `offset_arg` c4 + the `c4_offset` argument (found through `out`, the kernel's
        output argument, so the writers need no extra parameter)."""
        if not self.offset_arg:
            return c4
        return kb.add(c4, self.scalar(list(out.block.args), "c4_offset"))

    def grid(self) -> tuple[int, int, int]:
        n, c4, h, w = self.out.shape
        return (w, h, n * c4)

    def global_size(self) -> tuple[int, ...]:
        return self.grid()

    def split_z(self, kb: KernelBuilder, z: SSAValue, c4n: int):
        """(n, c4) from the grid's third id; with batch 1 it is c4 itself."""
        if self.out.shape[0] == 1:
            return 0, z
        return kb.div(z, c4n, "n"), kb.rem(z, c4n, "c4")

    def pixel_ids(self, kb: KernelBuilder):
        """(n, c4, h, w) of this work-item for the default grid (W, H, N*C4)."""
        _, c4n, _, _ = self.out.shape
        w, h, z = kb.global_id(0, "w"), kb.global_id(1, "h"), kb.global_id(2, "z")
        n, c4 = self.split_z(kb, z, c4n)
        return n, c4, h, w

    def shared(self) -> PackedSpec:
        """With batch 1 no kernel reads a channel-block count (n is 0 and c4 comes
        straight from the grid), so those extents are zeroed for the kernel's identity:
        the output's, the epilogue extras', `src`'s where the spec has one, and those of
        the fields a subclass names (`shared_changes`)."""
        if self.out.shape[0] != 1:
            return self

        def norm(p: Packed | None) -> Packed | None:
            return None if p is None else dataclasses.replace(p, shape=(1, 0, *p.shape[2:]))

        changes = {"out": norm(self.out),
                   "pepi": dataclasses.replace(self.pepi, extras=tuple((norm(p), b) for p, b in self.pepi.extras))}
        if getattr(self, "src", None) is not None and self.src.shape[0] == 1:
            changes["src"] = norm(self.src)
        changes.update(self.shared_changes(norm))
        return dataclasses.replace(self, **changes)

    def shared_changes(self, norm) -> dict:
        """`shared()`'s changes to a subclass's own fields; `norm(p)` is the batch-1
        accessor `p` without its channel-block count."""
        return {}

    def finish_pixel(self, kb: KernelBuilder, extras, out, value, n, c4, h, w) -> SSAValue:
        """Epilogue (its extra inputs read at the pixel's own coordinates) and store (at
        the output's channel offset, if any); returns the value stored."""
        value = self.pepi.apply(kb, value, extras, n, c4, h, w)
        self.out.write(kb, out, value, n, self.out_block(kb, out, c4), h, w)
        return value


def block_sum(kb: KernelBuilder, accs: list[SSAValue], partial) -> list[SSAValue]:
    """`accs` (f32 accumulators) plus `partial(kb, zeros)`, the half partial sums of one
    step of a reduction loop started from half zeros: how a half kernel keeps its
    products and short sums in half and its long sums in f32 (the convolutions'
    and the Winograd product's input-channel loops)."""
    zero = kb.vector().f(0.0)
    parts = partial(kb, [zero] * len(accs))
    vf = kb.vector(f32)
    return [vf.fadd(a, kb.cast(p, f32)) for a, p in zip(accs, parts)]
