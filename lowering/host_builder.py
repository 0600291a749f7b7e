"""The host side of the lowering: buffers, images, weights and kernel launches.

`HostBuilder` builds the host function that replaces a graph function: arguments and
results become `!opencl.buffer`s, weights `opencl.weight @name`, intermediate tensors
`opencl.alloc_buffer`/`alloc_image`, and each kernel one or more `opencl.launch`es in
program order. Kernels are generated from hashable specs (`lowering/kernels`); a spec
seen before reuses its kernel, so repeated blocks share code.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f16, f32, i32
from xdsl.ir import Block, Operation, Region, SSAValue

from adreno_mlir.dialects import graph, opencl, texture
from adreno_mlir.lowering.groups import LoweringError, where
from adreno_mlir.lowering.kernels.common import KernelSpec
from adreno_mlir.lowering.kernels.packed import PackedSpec
from adreno_mlir.lowering.opencl_printer import C_KEYWORDS
from adreno_mlir.dialects.storage import read_storage
from adreno_mlir.weights import store_of


def local_size(grid: Sequence[int], preferred: Sequence[int]) -> tuple[int, ...] | None:
    """A local size that divides `grid` exactly (kernels have no bounds checks for
    rounded-up grids), close to `preferred`: per axis the largest divisor within the
    preferred extent, then spare capacity goes to the axes that can still grow."""
    if not preferred:
        return None
    pref = list(preferred) + [1] * (len(grid) - len(preferred))
    budget = math.prod(pref)

    def best(g: int, limit: int) -> int:
        return max(d for d in range(1, min(g, max(1, limit)) + 1) if g % d == 0)

    local = [best(g, p) for g, p in zip(grid, pref)]
    for d, g in enumerate(grid):
        rest = math.prod(local) // local[d]
        local[d] = best(g, budget // rest)
    return tuple(local)


def numel(t) -> int:
    return int(math.prod(graph.shape_of(t)))


_BUILT: OrderedDict[str, opencl.KernelOp] = OrderedDict()
_BUILT_LOCK = threading.Lock()
BUILT_KERNELS_KEPT = 1024
"""Kernels kept per process (least recently used dropped first)."""


def spec_key(spec: KernelSpec) -> str:
    """The identity of a kernel: its spec's repr. Specs compare floats by value, so a
    clip to -0.0 would equal one to 0.0 and a NaN parameter would equal nothing; their
    reprs tell -0.0 from 0.0 and NaN from NaN like the kernels' constants do."""
    return repr(spec)


def built_kernel(spec: KernelSpec, name: str) -> opencl.KernelOp:
    """The kernel of `spec` named `name`. Each spec is built once per process; later
    uses (the same layer shape in another model, or the same model compiled again) get
    a copy of it, which costs a fraction of building it. Specs are frozen and hold
    everything a kernel depends on, so a copy is exactly what building would give."""
    key = spec_key(spec)
    with _BUILT_LOCK:
        proto = _BUILT.pop(key, None)
    if proto is None:
        proto = spec.build(name)
        local = spec.local_size()
        if local is not None and proto.reqd_work_group_size is None:
            # The kernel counts on this work-group (local sums, tiles in local memory): the
            # driver must refuse any other (NULL included) instead of running it wrong.
            proto.reqd_work_group_size = opencl._i64_array([*local, *(1,) * (3 - len(local))])
    with _BUILT_LOCK:  # (re)inserted as the most recently used
        _BUILT[key] = proto
        while len(_BUILT) > BUILT_KERNELS_KEPT:
            _BUILT.popitem(last=False)
    kernel = proto.clone()
    kernel.sym_name = StringAttr(name)
    return kernel


class HostBuilder:
    """Builds the host function and the kernels for one graph function."""

    def __init__(self, module: ModuleOp, fn: func.FuncOp, kernels: dict):
        self.module = module
        self.fn = fn
        self.kernels: dict[str, str] = kernels
        """Kernel name by spec_key, shared by the host functions of one module."""
        self.names: set[str] = set(kernels.values()) | {
            o.sym_name.data for o in module.body.block.ops if hasattr(o, "sym_name")
        }
        self.store = store_of(module)
        self.config: dict[str, Any] = {}
        """The `kernel_config` of the kernel being lowered (set by the driver)."""
        # Model inputs are f32 buffers, integer ones (token ids) i32, and f16 state (a KV
        # cache kept in halves, `kv-cache-storage`) f16.
        in_types = [opencl.BufferType(numel(a.type), a.type.get_element_type() if a.type.get_element_type() in (i32, f16)
                                      else f32) for a in fn.args]
        self.block = Block(arg_types=in_types)
        self.buffers: dict[SSAValue, SSAValue] = {}
        self._int_constants: dict[int, SSAValue] = {}
        self._half_weights: dict[SSAValue, SSAValue] = {}
        self.storage = read_storage(fn.body.block)
        """Values that plan-memory placed in shared allocations (`storage` attributes)."""
        self._shared: dict[int, SSAValue] = {}
        for old, new in zip(fn.args, self.block.args):
            self.buffers[old] = new
            new.name_hint = old.name_hint

    # ------------------------------------------------------------------ buffers

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def buffer(self, value: SSAValue) -> SSAValue:
        if value in self.buffers:
            return self.buffers[value]
        owner = value.owner
        if isinstance(owner, graph.ReshapeOp):
            buf = self.buffer(owner.input)
        elif isinstance(owner, graph.ScaleChannelsOp):
            raise LoweringError(
                f"{where(owner)}: graph.scale_channels has no kernel of its own; only a groups-1 convolution can "
                "read it (it scales the pixels it loads). Use graph.mul for any other reader")
        elif isinstance(owner, graph.SumPartialsOp):
            raise LoweringError(
                f"{where(owner)}: graph.sum_partials has no kernel of its own; only a 1x1 convolution on the "
                "1x1 mean can read it (it adds the tiles as it loads). Read the graph.pool_partials' producer "
                "through a graph.global_avg_pool instead")
        elif graph.on_load_region(value) is not None:
            raise LoweringError(
                f"{where(owner)}: this graph.fused region is on_load: it has no kernel of its own, and only a "
                "groups-1 1x1 convolution with stride 1 and no padding can read it (computing each pixel as it "
                "loads it). Delete the region's on_load attribute to give it a kernel")
        elif isinstance(owner, texture.PackOp) and isinstance(owner.input.owner, graph.ConstantOp):
            buf = self.packed_constant(owner)
        elif isinstance(owner, graph.ConstantOp):
            name = owner.weight_name
            if name is None:
                arr = np.array(owner.value.get_values(), dtype=np.float32)
                name = self.store.add(value.name_hint or "const", arr)
            # i32 constants (a quantized weight's packed words) stay integers
            element = i32 if isinstance(value.type, TensorType) and value.type.element_type == i32 else f32
            buf = self.emit(opencl.WeightOp(name, opencl.BufferType(numel(value.type), element))).results[0]
            buf.name_hint = value.name_hint
        else:
            raise LoweringError(f"value {value.name_hint or ''} is used before it is computed")
        self.buffers[value] = buf
        return buf

    @property
    def compute(self) -> str:
        """The arithmetic of the kernel being lowered: its config's `compute` (f32 or f16)."""
        return self.config.get("compute", "f32")

    def weight_buffer(self, value: SSAValue) -> SSAValue:
        """A weight or bias operand in the type the kernel computes in: the f32 buffer,
        or for a half kernel a half copy (made once per value). A weight beyond half's
        range is an error naming it, never a silent inf."""
        if self.compute != "f16":
            return self.buffer(value)
        if value in self._half_weights:
            return self._half_weights[value]
        arr = np.asarray(self.constant_array(value), np.float32)
        finite = arr[np.isfinite(arr)]
        peak = float(np.abs(finite).max()) if finite.size else 0.0
        name = value.name_hint or "weight"
        if peak > float(np.finfo(np.float16).max):
            op = value.owner
            raise LoweringError(
                f"{where(op) if isinstance(op, Operation) else name}: weight '{name}' reaches {peak:.4g}, beyond "
                "fp16's largest value 65504, so a kernel computing in half cannot hold it; set compute = \"f32\" "
                "in this kernel's kernel_config, or compile with precision='fp16-acc32' or 'fp32'")
        buf = self.weight(name + "_f16", np.ascontiguousarray(arr.astype(np.float16)))
        buf.name_hint = name
        self._half_weights[value] = buf
        return buf

    def constant_array(self, value: SSAValue) -> np.ndarray:
        from adreno_mlir.graph_constants import constant_value

        return constant_value(value, self.store)

    def weight(self, hint: str, array: np.ndarray) -> SSAValue:
        """Upload an array computed at lowering time as a new weight."""
        name = self.store.add(hint, array)
        element = f16 if array.dtype == np.float16 else i32 if array.dtype == np.int32 else f32
        return self.emit(opencl.WeightOp(name, opencl.BufferType(array.size, element))).results[0]

    def packed_constant(self, op: texture.PackOp) -> SSAValue:
        """A packed constant operand: NCHW4c data computed now, uploaded as a weight."""
        arr = self.constant_array(op.input)
        n, c, h, w = arr.shape
        t = op.result.type
        data = np.zeros(t.shape, np.float32)
        data.reshape(n, -1, h, w)[:, :c] = arr
        data = data.reshape(n, t.shape[1], 4, h, w).transpose(0, 1, 3, 4, 2)
        half = t.element == f16
        return self.weight((op.input.name_hint or "const") + "_nchw4c" + ("_f16" if half else ""),
                           np.ascontiguousarray(data.astype(np.float16 if half else np.float32)))

    def int_constant(self, v: int) -> SSAValue:
        from xdsl.dialects import arith
        from xdsl.dialects.builtin import IntegerAttr, i32

        v = int(v)
        if v not in self._int_constants:  # one constant per value in the host function
            self._int_constants[v] = self.emit(arith.ConstantOp(IntegerAttr(v, i32))).results[0]
        return self._int_constants[v]

    def alloc(self, value: SSAValue) -> SSAValue:
        """A new buffer or image for `value`; for a value in shared storage its
        allocation, made (at the allocation's full extent) when its first member is
        written. Members are one host value, so the launch plan keeps the allocation
        until the last launch that reads or writes any of them."""
        slot = self.storage.slots.get(value)
        if slot is not None:
            shared = self._shared.get(slot[0])
            if shared is None:
                shared = self._new_alloc(self.storage.types[slot[0]], self.storage.names[slot[0]])
                self._shared[slot[0]] = shared
            self.buffers[value] = shared
            return shared
        buf = self._new_alloc(value.type, value.name_hint)
        self.buffers[value] = buf
        return buf

    def scratch(self, count: int, hint: str) -> SSAValue:
        """A buffer of `count` f32 that a kernel hands to the next one (split-K partial
        sums) and no graph value names; the launch plan frees it after its last reader."""
        buf = self.emit(opencl.AllocBufferOp(opencl.BufferType(count, f32))).results[0]
        buf.name_hint = hint
        return buf

    def channel_offset(self, value: SSAValue) -> int:
        """The channel block at which `value` starts in its shared allocation (0 if it
        has its own): the `c4_offset` its writer adds to the output channel block."""
        return self.storage.offset(value)

    def _new_alloc(self, t, name_hint: str | None) -> SSAValue:
        if isinstance(t, texture.TextureTensorType) and t.is_image:
            w, h = t.image_extent
            fmt = "rgba_f16" if t.element == f16 else "rgba_f32"
            op = opencl.AllocImageOp(opencl.ImageType(w, h, fmt))
        elif isinstance(t, texture.TextureTensorType):
            op = opencl.AllocBufferOp(opencl.BufferType(t.num_elements, t.element))
        else:
            op = opencl.AllocBufferOp(opencl.BufferType(numel(t), f32))
        buf = self.emit(op).results[0]
        buf.name_hint = name_hint
        return buf

    # ------------------------------------------------------------------ kernels

    def kernel(self, spec: KernelSpec) -> str:
        key = spec_key(spec)
        if key not in self.kernels:
            base = spec.base_name()
            if base in C_KEYWORDS:
                # A kernel named like an OpenCL built-in (`exp`, `sqrt`) shadows it: PoCL
                # then cannot find the kernel, other compilers reject the program.
                base += "_kernel"
            name, n = base, 0
            while name in self.names:
                n += 1
                name = f"{base}_{n}"
            self.names.add(name)
            self.kernels[key] = name
            self.module.body.block.insert_op_before(built_kernel(spec, name), self.fn)
        return self.kernels[key]

    def launch(self, spec: KernelSpec, args: Sequence[SSAValue], loc, scalars: Sequence[int] = ()) -> None:
        """Launch `spec`'s kernel; an NCHW4c kernel computes in its config's `compute`
        type (its weight operands must come from `weight_buffer`)."""
        if isinstance(spec, PackedSpec) and spec.compute != self.compute:
            spec = dataclasses.replace(spec, compute=self.compute)
        grid = spec.global_size()
        required = spec.local_size()
        spec = spec.shared()  # extents the kernel does not need are dropped from its identity
        name = self.kernel(spec)
        values = [self.int_constant(v) for v in scalars]
        local = required if required is not None else local_size(grid, self.config.get("work_group", ()))
        op = self.emit(opencl.LaunchOp(name, [*args, *values], grid, local))
        op.location = loc

    def finish(self) -> func.FuncOp:
        ret = self.fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        outs = [self.buffer(v) for v in ret.operands]
        self.emit(func.ReturnOp(*outs))
        host = func.FuncOp(
            self.fn.sym_name.data,
            ([a.type for a in self.block.args], [o.type for o in outs]),
            Region(self.block),
        )
        for k, v in self.fn.attributes.items():
            if k.startswith("graph."):
                host.attributes[k] = v
        return host
