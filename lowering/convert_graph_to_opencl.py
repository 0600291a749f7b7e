"""`convert-graph-to-opencl`: graph ops become `opencl.kernel`s plus a host program.

The graph function `@main` is replaced by a host function of the same name whose
arguments and results are `!opencl.buffer`s: weights become `opencl.weight @name`,
intermediate tensors `opencl.alloc_buffer`/`alloc_image`, and each kernel one or more
`opencl.launch`es in program order. Reshapes are free (the buffer is reused).

This pass decides nothing about the schedule. Each `graph.fused` region (from
`graph-fuse`) becomes one kernel, every other op a kernel of its own; each is lowered
by the one conversion pattern for its head's op kind (its family's, lowering/families/, or
`nchw_lowering.py` / `packed_lowering.py` for kernels without schedule keys), which reads the
kernel's `kernel_config` attribute: complete, as select-kernel-config writes it (a kernel of a
family with keys and no config is an error, not a default).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType

from adreno_mlir.dialects import texture
from adreno_mlir.lowering.groups import Group, KernelPattern, LoweringError, groups_of, where
from adreno_mlir.lowering.host_builder import HostBuilder
from adreno_mlir.lowering.nchw_lowering import NCHW_PATTERNS
from adreno_mlir.lowering.opencl_printer import FMA_ATTR, FMA_MODES, VECTOR_ACCESS_ATTR, VECTOR_ACCESS_MODES
from adreno_mlir.lowering.packed_lowering import PACKED_PATTERNS
from adreno_mlir.pass_options import CheckedPass, option
from adreno_mlir.lowering import families

__all__ = ["ConvertGraphToOpenCL", "LoweringError", "PATTERNS"]


PATTERNS: tuple[KernelPattern, ...] = (*NCHW_PATTERNS, *PACKED_PATTERNS, *families.patterns())


def lower_group(hb: HostBuilder, group: Group, patterns=PATTERNS) -> None:
    pattern = next((p for p in patterns if p.matches(group)), None)
    if pattern is None:
        raise LoweringError(f"{where(group.head)}: no OpenCL lowering for this op")
    cfg = families.lowering_config(group.kernel_op)
    hb.config = cfg
    pattern.lower(hb, group, cfg, group.location)
    if group.fused is not None:
        hb.buffers[group.fused.result] = hb.buffer(group.result)
        if group.pool_partials is not None:
            hb.buffers[group.fused.partials] = hb.buffer(group.pool_partials.result)


@dataclass(frozen=True)
class ConvertGraphToOpenCL(CheckedPass):
    """Lower every graph function to OpenCL kernels and a host program."""

    name = "convert-graph-to-opencl"

    fma: str = option("", choices=FMA_MODES)
    """How the OpenCL C printer writes multiply-adds (`math.fma`) in this program: `call`
    (`fma(a, b, c)`), `split` (`a * b + c` under FP_CONTRACT OFF) or `contract` (`a * b + c`
    that the compiler may fuse: PoCL's default, whose vectorizer skips fma(); see
    lowering/opencl_printer.py FMA_MODES). Recorded as the module attribute `opencl.fma`,
    so `-t opencl` prints the same program; empty: not recorded (the printer's default)."""

    vector_access: str = option("", choices=VECTOR_ACCESS_MODES)
    """How the printer writes vector loads and stores in this program: `typed` (through a
    pointer of the vector's type where the address is provably aligned) or `vload` (every
    one as vloadN / vstoreN; lowering/opencl_printer.py VECTOR_ACCESS_MODES). Recorded as the
    module attribute `opencl.vector_access`; empty: not recorded (the printer's default,
    `typed`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.fma:
            op.attributes[FMA_ATTR] = StringAttr(self.fma)
        if self.vector_access:
            op.attributes[VECTOR_ACCESS_ATTR] = StringAttr(self.vector_access)
        kernels: dict[str, str] = {}  # kernel name by spec_key, across the module's functions
        for fn in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
            if not any(isinstance(t, (TensorType, texture.TextureTensorType)) for t in types):
                continue  # already a host function (or nothing tensor-level in it)
            hb = HostBuilder(op, fn, kernels)
            for group in groups_of(fn.body.block):
                lower_group(hb, group)
            host = hb.finish()
            op.body.block.insert_op_before(host, fn)
            fn.detach()
            fn.erase(safe_erase=False)
