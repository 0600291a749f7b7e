"""Op traits shared by the dialects: what passes need to know about an op, attached to
the op instead of kept in per-pass tables of op classes.

Query with `op.has_trait(T)` / `op.get_trait(T)` (or the helpers below). The graph
dialect re-exports these (`graph.Elementwise`, `graph.is_elementwise`, ...); they live
here, depending on nothing else of the project, so that texture ops can carry them too
(texture.py cannot import graph.py, which imports it).

- `Elementwise`: every graph `UnaryOp`/`BinaryOp`/`TernaryOp` (fusable into an epilogue or a chain).
- `EpilogueHead`: the op's kernel can end in a fused element-wise epilogue.
- `ImageOperands`: the op has an NCHW4c kernel that reads the named operands from 2-D
  images (and writes its result to one unless `writes=False`); `annotate-texture-scope`
  uses it.
- `NCHW4cConvertible`: the op has NCHW4c kernels (`convert-layout-nchw4c` may move it).
- `LoadedByReader`: the op has no kernel; the kernel that reads its result computes it
  from the op's operands as it loads them (`graph.sum_partials`, `graph.scale_channels`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.traits import OpTrait


@dataclass(frozen=True)
class Elementwise(OpTrait):
    """An element-wise op (every graph `UnaryOp`/`BinaryOp`/`TernaryOp`): its class has a `KIND`
    (`op.kind`), computes with `emit` (OpenCL, through a kernel builder), folds with
    `evaluate` (numpy) and gives its attributes to expressions with `expr_params()`;
    `graph.ELEMENTWISE_BY_KIND` maps a kind back to its class."""


@dataclass(frozen=True)
class EpilogueHead(OpTrait):
    """The op's kernel can end in a fused chain of element-wise ops (an epilogue applied
    to each output value before it is stored). A reduction (`graph.reduce_*`) without
    keepdims cannot in practice: the epilogue uses the keepdims coordinates."""


@dataclass(frozen=True)
class ImageOperands(OpTrait):
    """The op has an NCHW4c kernel that can read its operands from 2-D images and, when
    `writes`, write its result to one.

    `operands`: names of the operand fields that may be images (empty: every operand);
    e.g. a convolution reads only its `input` from an image, weights and bias stay
    buffers."""

    operands: tuple[str, ...] = ()
    writes: bool = True

    def reads(self, op: Operation, value: SSAValue) -> bool:
        """Whether `op` can read `value` (one of its operands) from an image."""
        if not self.operands:
            return True
        return any(getattr(op, name) is value for name in self.operands)


@dataclass(frozen=True)
class NCHW4cConvertible(OpTrait):
    """The op has NCHW4c kernels (`convert-layout-nchw4c` may move it to packed tensors;
    the pass still checks the op's shapes and attributes)."""


@dataclass(frozen=True)
class LoadedByReader(OpTrait):
    """The op has no kernel and no storage: the kernel that reads its result (a
    convolution) computes it from the op's operands while loading them. The lowering
    skips it, select-kernel-config gives it no config, and plan-memory counts its
    operands as read by that reader. (`graph.loaded_by_reader` asks for this trait, and
    for `graph.fused {on_load}` regions, which their reader computes in the same way.)"""


def is_elementwise(op: Operation) -> bool:
    return op.has_trait(Elementwise)


def is_epilogue_head(op: Operation) -> bool:
    """The op's kernel can take a fused element-wise epilogue (see `EpilogueHead`)."""
    return op.has_trait(EpilogueHead)
