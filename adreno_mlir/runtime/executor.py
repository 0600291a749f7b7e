"""From a lowered module to something that runs, with the IR walked exactly once.

`Executable` builds the module's OpenCL program, uploads every weight once, creates
the buffers (reusing the memory of intermediates whose lifetimes do not overlap) and
turns the host function into a flat list of (kernel, global size, local size) with
arguments already set. `run()` then only copies inputs in, enqueues that list and
reads outputs back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, f16
from xdsl.ir import SSAValue

from adreno_mlir.errors import CompileError
from adreno_mlir.weights import WeightStore
from adreno_mlir.dialects import opencl

MF = cl.mem_flags


class RuntimeError_(CompileError):
    pass


@dataclass
class Launch:
    kernel: cl.Kernel
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    name: str


def _host_function(module: ModuleOp) -> func.FuncOp:
    fns = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    for fn in fns:
        if any(isinstance(o, opencl.LaunchOp) for o in fn.body.block.ops) or fn.sym_name.data == "main":
            return fn
    raise RuntimeError_("the module has no host function (run convert-graph-to-opencl first)")


def check_device_limits(fn: func.FuncOp, device: cl.Device) -> None:
    """Refuse a plan whose images the device cannot hold (before any CL call fails)."""
    images = [op.results[0].type for op in fn.body.block.ops if isinstance(op, opencl.AllocImageOp)]
    if not images:
        return
    if not device.image_support:
        raise ImageLimitError(f"{device.name} has no image support; compile with textures=False")
    too_big = [t for t in images if t.width.data > device.image2d_max_width or t.height.data > device.image2d_max_height]
    if too_big:
        t = max(too_big, key=lambda t: t.width.data * t.height.data)
        raise ImageLimitError(
            f"the plan needs {len(too_big)} image(s) larger than {device.name} allows "
            f"({device.image2d_max_width}x{device.image2d_max_height}), e.g. {t.width.data}x{t.height.data}; "
            "compile for this device's profile (target='auto') or with textures=False"
        )


class ImageLimitError(CompileError):
    """The compiled texture plan does not fit the device's image limits."""


class Executable:
    def __init__(self, module: ModuleOp, source: str, store: WeightStore, context: cl.Context,
                 options: tuple[str, ...] = ("-cl-std=CL1.2",)):
        self.context = context
        self.device = context.devices[0]
        self.queue = cl.CommandQueue(context)
        try:
            self.program = cl.Program(context, source).build(options=list(options))
        except cl.RuntimeError as e:
            raise RuntimeError_(f"the OpenCL compiler rejected the generated program:\n{e}") from None
        fn = _host_function(module)
        check_device_limits(fn, self.device)
        self.input_names = [a.data for a in fn.attributes["graph.inputs"].data]
        self.output_names = [a.data for a in fn.attributes["graph.outputs"].data]
        self.input_shapes: list[tuple[int, ...]] = []
        self._plan(fn, store)

    # ------------------------------------------------------------------ planning

    def _plan(self, fn: func.FuncOp, store: WeightStore) -> None:
        ops = list(fn.body.block.ops)
        ret = ops[-1]
        assert isinstance(ret, func.ReturnOp)
        # last use (op index) of every value, for memory reuse
        last_use: dict[SSAValue, int] = {}
        for i, op in enumerate(ops):
            for v in op.operands:
                last_use[v] = i
        pinned = set(ret.operands) | set(fn.body.block.args)
        buffers: dict[SSAValue, cl.Buffer] = {}
        free: dict[int, list[cl.Buffer]] = {}
        self.weights: list[cl.Buffer] = []
        self.launches: list[Launch] = []
        self.inputs: list[cl.Buffer] = []
        for arg in fn.body.block.args:
            buf = cl.Buffer(self.context, MF.READ_WRITE, max(4, arg.type.nbytes))
            buffers[arg] = buf
            self.inputs.append(buf)
        for i, op in enumerate(ops):
            if isinstance(op, opencl.WeightOp):
                name = op.symbol.root_reference.data
                dtype = np.float16 if op.results[0].type.element == f16 else np.float32
                arr = np.ascontiguousarray(np.asarray(store[name], dtype=dtype).reshape(-1))
                if arr.size != op.results[0].type.size.data:
                    raise RuntimeError_(f"weight @{name} has {arr.size} elements, the IR expects "
                                        f"{op.results[0].type.size.data}")
                buf = cl.Buffer(self.context, MF.READ_ONLY | MF.COPY_HOST_PTR, hostbuf=arr)
                buffers[op.results[0]] = buf
                self.weights.append(buf)
            elif isinstance(op, opencl.AllocBufferOp):
                nbytes = max(4, op.results[0].type.nbytes)
                pool = free.get(nbytes)
                value = op.results[0]
                buffers[value] = pool.pop() if pool and value not in pinned else cl.Buffer(self.context, MF.READ_WRITE, nbytes)
            elif isinstance(op, opencl.AllocImageOp):
                t = op.results[0].type
                key = ("image", t.width.data, t.height.data, t.format.data)
                pool = free.get(key)
                value = op.results[0]
                buffers[value] = pool.pop() if pool and value not in pinned else self._image(t)
            elif isinstance(op, opencl.LaunchOp):
                kname = op.kernel.root_reference.data
                kernel = cl.Kernel(self.program, kname)
                for k, v in enumerate(op.args):
                    kernel.set_arg(k, buffers[v])
                local = op.local_sizes
                if local is not None:
                    limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device)
                    if int(np.prod(local)) > limit:
                        local = None  # this kernel cannot take the planned size here: driver's choice
                self.launches.append(Launch(kernel, op.global_sizes, local, kname))
            elif isinstance(op, arith.ConstantOp):
                buffers[op.results[0]] = np.int32(op.value.value.data)  # a scalar launch argument
            elif isinstance(op, func.ReturnOp):
                pass
            else:
                raise RuntimeError_(f"cannot execute host op '{op.name}'")
            # release intermediates whose last use is this op
            for v in dict.fromkeys(op.operands):  # a value passed twice is released once
                if last_use.get(v) != i or v in pinned:
                    continue
                if isinstance(v.owner, opencl.AllocBufferOp):
                    free.setdefault(max(4, v.type.nbytes), []).append(buffers[v])
                elif isinstance(v.owner, opencl.AllocImageOp):
                    t = v.type
                    free.setdefault(("image", t.width.data, t.height.data, t.format.data), []).append(buffers[v])
        self.outputs = [(buffers[v], v.type.size.data) for v in ret.operands]
        # Kernel arguments do not keep buffers alive: hold every one for our lifetime.
        self.buffers = list({id(b): b for b in buffers.values()}.values())

    def _image(self, t: opencl.ImageType) -> cl.Image:
        fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.HALF_FLOAT if t.format.data == "rgba_f16"
                             else cl.channel_type.FLOAT)
        return cl.create_image(self.context, MF.READ_WRITE, fmt, shape=(t.width.data, t.height.data))

    # ------------------------------------------------------------------ running

    def profile(self, inputs: list[np.ndarray], repeat: int = 5) -> dict[str, float]:
        """Device time per kernel (ms, median over `repeat` runs, summed over launches),
        from OpenCL profiling events on a separate profiling queue."""
        q = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        for buf, arr in zip(self.inputs, inputs):
            cl.enqueue_copy(q, buf, np.ascontiguousarray(arr, dtype=np.float32))
        runs: list[dict[str, float]] = []
        for _ in range(repeat):
            events = [(l.name, cl.enqueue_nd_range_kernel(q, l.kernel, l.global_size, l.local_size))
                      for l in self.launches]
            q.finish()
            totals: dict[str, float] = {}
            for name, ev in events:
                totals[name] = totals.get(name, 0.0) + (ev.profile.end - ev.profile.start) * 1e-6
            runs.append(totals)
        return {k: float(np.median([r[k] for r in runs])) for k in runs[0]}

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        q = self.queue
        for buf, arr in zip(self.inputs, inputs):
            cl.enqueue_copy(q, buf, np.ascontiguousarray(arr, dtype=np.float32), is_blocking=False)
        for launch in self.launches:
            cl.enqueue_nd_range_kernel(q, launch.kernel, launch.global_size, launch.local_size)
        results = []
        for buf, size in self.outputs:
            out = np.empty(size, np.float32)
            cl.enqueue_copy(q, out, buf, is_blocking=False)
            results.append(out)
        q.finish()
        return results
