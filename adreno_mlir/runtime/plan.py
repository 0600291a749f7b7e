"""The launch plan: what a lowered model does at run time, as plain data.

A lowered module's host function (`func.func` of `opencl.*` ops) says which buffers and
images exist, which weights are uploaded and which kernels are launched with which
arguments. `plan_from_module` walks it once and writes the answer down as a `Plan`:
dataclasses of ints and strings only, with no pyopencl and no xDSL objects inside. That
split is what lets one plan be

* instantiated on a pyopencl context (`adreno_mlir.runtime.executor.Executable`),
* saved in a compiled-model artifact and loaded without the compiler
  (`adreno_mlir.artifact`, format in docs/artifact.md), and
* executed by a C program that reads the same manifest.

Memory reuse is already decided in the plan: an intermediate whose last use has passed
gives its allocation back, and a later intermediate of exactly the same byte size (or
the same image extent and format) takes it. A runtime therefore just creates every
`Plan.allocations` entry once; it never needs liveness information.

This module imports neither xDSL nor pyopencl at module level (`plan_from_module`
imports xDSL when it is called), so `adreno_mlir.load` stays free of the compiler.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from adreno_mlir.errors import CompileError

if TYPE_CHECKING:  # only for annotations: importing them would pull in xDSL
    from xdsl.dialects.builtin import ModuleOp

    from adreno_mlir.weights import WeightStore

WEIGHT_ALIGNMENT = 64
"""Byte alignment of every weight in the weights blob (a cache line; also enough for
any OpenCL vector type, so a C runtime may map the file and point at it directly)."""

DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32}
"""Element types a plan's weights, inputs and outputs may have, by manifest name (i32
weights: the packed words of quantized weights, format version 4)."""

TENSOR_DTYPES = {"f32": np.float32, "i32": np.int32, "f16": np.float16}
"""Element types of model inputs and outputs: f32; i32 for integer inputs (token ids of an
embedding lookup, attention masks, token type ids), whose `bound` says which values are
valid; f16 for state inputs only (a KV cache kept in halves, never fed or returned)."""

CONSTANT_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bool": np.bool_,
                   "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                   "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
"""Element types of constant outputs (`Tensor.constant`): the ONNX type of the output,
whatever it is (a Shape is i64, a mask bool), since the runtime only copies the bytes."""

IMAGE_FORMATS = ("rgba_f32", "rgba_f16")
"""2D image formats: CL_RGBA with CL_FLOAT or CL_HALF_FLOAT channels."""

DEFAULT_BUILD_OPTIONS: tuple[str, ...] = ("-cl-std=CL1.2",)


class PlanError(CompileError):
    """The host function cannot be turned into a plan (an op the runtime cannot execute)."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class BufferAlloc:
    """A read-write `cl_mem` buffer of `nbytes` bytes (at least 4: OpenCL refuses 0)."""

    nbytes: int
    kind: str = field(default="buffer", init=False)


@dataclass(frozen=True)
class ImageAlloc:
    """A read-write 2D image of `width` x `height` RGBA pixels in `format` (IMAGE_FORMATS)."""

    width: int
    height: int
    format: str
    kind: str = field(default="image", init=False)


Allocation = BufferAlloc | ImageAlloc


@dataclass(frozen=True)
class Weight:
    """A read-only buffer filled from `[offset, offset + nbytes)` of the weights blob.

    The values are exactly what the kernels read (already packed, transformed and
    converted to `dtype`), so a runtime uploads the bytes as they are."""

    name: str
    dtype: str  # "f32" | "f16" | "i32"
    count: int  # elements
    offset: int  # bytes into the blob, a multiple of WEIGHT_ALIGNMENT
    nbytes: int  # count * element size


@dataclass(frozen=True)
class Constant:
    """Where a constant output's value lies: `nbytes` bytes at `offset` of the weights
    blob (after every weight, a multiple of WEIGHT_ALIGNMENT), little-endian, row-major."""

    offset: int
    nbytes: int


@dataclass(frozen=True)
class Tensor:
    """A model input or output: a dense row-major (`layout` "nchw", i.e. the ONNX shape
    as given) array of `dtype` living in allocation `allocation` (a BufferAlloc).

    An output that no input reaches is a constant: `constant` says where its value lies
    in the weights blob, `allocation` is -1, `dtype` is any of CONSTANT_DTYPES, and no
    launch computes it; a runtime returns a copy of those bytes."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    allocation: int
    layout: str = "nchw"
    bound: int | None = None
    """i32 inputs: valid values are in [-bound, bound); a runtime rejects others. For token
    ids only used by Gathers the bound is the extent of the smallest table they index
    (negative ids count from its end); for an input the model also computes with (an
    attention mask, token type ids, ids compared with a padding id) it is at most 2**24,
    as the kernels hold those values as float32 (`graph.int_to_float`)."""
    constant: Constant | None = None

    @property
    def count(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


@dataclass(frozen=True)
class Arg:
    """One kernel argument. `kind` is

    * "allocation": the `cl_mem` of `Plan.allocations[index]`,
    * "weight": the `cl_mem` of `Plan.weights[index]`,
    * "i32" / "f32": a scalar passed by value (`value`).

    Inputs and outputs are allocations too (see `Tensor.allocation`), so a launch that
    reads the model input names the input's allocation."""

    kind: str
    index: int = 0
    value: int | float = 0


@dataclass(frozen=True)
class Launch:
    """`clEnqueueNDRangeKernel(kernel, global_size, local_size)` after setting `args`.

    `local_size` None means NULL (the driver chooses). A runtime must also pass NULL when
    the planned size exceeds the kernel's CL_KERNEL_WORK_GROUP_SIZE on its device."""

    kernel: str
    args: tuple[Arg, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    node: str = ""
    """The ONNX node the launch computes (its kernel's location: for a fused region the
    name `analyze` gives the kernel), "" when it has none (a layout conversion the passes
    inserted). Informational: profilers key their rows by it, a runtime may ignore it."""

    @property
    def row(self) -> str:
        """The profile row the launch counts towards: its node, or `<kernel>` without one."""
        return row_key(self.node, self.kernel)


def row_key(node: str, kernel: str) -> str:
    """A profile row's name: the ONNX node, or `<kernel name>` for an inserted kernel."""
    return node or f"<{kernel}>"


@dataclass(frozen=True)
class State:
    """A model input that lives on the device between runs and that the launches update in
    place (a decoder's KV cache: `graph.group_query_attention` writes its new rows), standing
    for the ONNX output `output` (the present that shares the past's buffer). A runtime
    creates its allocation zero-filled, never copies it in or out per run, and lets several
    programs of one model share it (a decoder's prefill and decode programs)."""

    input: str
    output: str
    allocation: int


@dataclass(frozen=True)
class Plan:
    """Everything a runtime needs besides the OpenCL C source and the weight bytes."""

    allocations: tuple[Allocation, ...]
    weights: tuple[Weight, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    launches: tuple[Launch, ...]
    build_options: tuple[str, ...] = DEFAULT_BUILD_OPTIONS
    states: tuple[State, ...] = ()
    """Inputs that are state (`State`): not fed per run."""

    @property
    def fed_inputs(self) -> tuple[Tensor, ...]:
        """The inputs a run copies in (every input but the states), in input order."""
        names = {s.input for s in self.states}
        return tuple(t for t in self.inputs if t.name not in names)

    @property
    def weights_nbytes(self) -> int:
        """Size of the weights blob (the end of the last weight or constant output)."""
        return max((offset + nbytes for _, _, offset, nbytes in self.blob_entries()), default=0)

    @property
    def computed_outputs(self) -> tuple[Tensor, ...]:
        """The outputs that launches write (each in its allocation), in output order."""
        return tuple(t for t in self.outputs if t.constant is None)

    @property
    def constant_outputs(self) -> tuple[Tensor, ...]:
        """The outputs that are constants (`Tensor.constant`), in output order."""
        return tuple(t for t in self.outputs if t.constant is not None)

    def blob_entries(self) -> list[tuple[str, np.dtype, int, int]]:
        """(name, numpy dtype, offset, bytes) of everything in the weights blob: the
        weights in `weights` order, then the constant outputs in output order (the
        order of `plan_from_module`'s arrays)."""
        return ([(w.name, np.dtype(DTYPES[w.dtype]), w.offset, w.nbytes) for w in self.weights]
                + [(t.name, np.dtype(CONSTANT_DTYPES[t.dtype]), t.constant.offset, t.constant.nbytes)
                   for t in self.constant_outputs])

    @property
    def images(self) -> list[ImageAlloc]:
        return [a for a in self.allocations if isinstance(a, ImageAlloc)]

    @property
    def kernel_names(self) -> list[str]:
        """Each launched kernel once, in first-launch order."""
        return list(dict.fromkeys(launch.kernel for launch in self.launches))

    # ------------------------------------------------------------ JSON (manifest)

    def to_json(self) -> dict[str, Any]:
        """The plan's manifest fields (docs/artifact.md describes each)."""

        def alloc(i: int, a: Allocation) -> dict[str, Any]:
            if isinstance(a, BufferAlloc):
                return {"id": i, "kind": "buffer", "bytes": a.nbytes}
            return {"id": i, "kind": "image", "width": a.width, "height": a.height, "format": a.format}

        def arg(a: Arg) -> dict[str, Any]:
            if a.kind in ("allocation", "weight"):
                return {"kind": a.kind, "id": a.index}
            return {"kind": a.kind, "value": a.value}

        def tensor(t: Tensor) -> dict[str, Any]:
            if t.constant is not None:
                return {"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "layout": t.layout,
                        "constant": {"offset": t.constant.offset, "bytes": t.constant.nbytes}}
            out = {"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "layout": t.layout,
                   "allocation": t.allocation}
            if t.bound is not None:
                out["bound"] = t.bound
            return out

        states = {"state": [{"input": st.input, "output": st.output, "allocation": st.allocation}
                            for st in self.states]} if self.states else {}
        return {
            **states,
            "build_options": list(self.build_options),
            "inputs": [tensor(t) for t in self.inputs],
            "outputs": [tensor(t) for t in self.outputs],
            "allocations": [alloc(i, a) for i, a in enumerate(self.allocations)],
            "weights": [{"id": i, "name": w.name, "dtype": w.dtype, "count": w.count, "offset": w.offset,
                         "bytes": w.nbytes} for i, w in enumerate(self.weights)],
            "launches": [{"kernel": launch.kernel, "args": [arg(a) for a in launch.args],
                          "global": list(launch.global_size),
                          "local": None if launch.local_size is None else list(launch.local_size),
                          **({"node": launch.node} if launch.node else {})}
                         for launch in self.launches],
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Plan:
        """Read `to_json`'s fields back, checking types and references; a malformed
        manifest raises `PlanError` saying which entry is wrong."""
        try:
            allocations: list[Allocation] = []
            for i, a in enumerate(data["allocations"]):
                if a["id"] != i:
                    raise PlanError(f"allocations[{i}] has id {a['id']}; ids must be 0, 1, 2, ... in order")
                if a["kind"] == "buffer":
                    allocations.append(BufferAlloc(_positive(a["bytes"], f"allocations[{i}].bytes")))
                elif a["kind"] == "image":
                    if a["format"] not in IMAGE_FORMATS:
                        raise PlanError(f"allocations[{i}] has image format {a['format']!r}; "
                                        f"expected one of {IMAGE_FORMATS}")
                    allocations.append(ImageAlloc(_positive(a["width"], f"allocations[{i}].width"),
                                                  _positive(a["height"], f"allocations[{i}].height"),
                                                  a["format"]))
                else:
                    raise PlanError(f"allocations[{i}] has unknown kind {a['kind']!r}")
            weights = []
            for i, w in enumerate(data["weights"]):
                if w["id"] != i or w["dtype"] not in DTYPES:
                    raise PlanError(f"weights[{i}] is malformed: {w}")
                if w["bytes"] != w["count"] * np.dtype(DTYPES[w["dtype"]]).itemsize:
                    raise PlanError(f"weights[{i}] ({w['name']}): {w['count']} {w['dtype']} elements "
                                    f"cannot take {w['bytes']} bytes")
                weights.append(Weight(str(w["name"]), w["dtype"], int(w["count"]), int(w["offset"]),
                                      int(w["bytes"])))

            def tensor(t: Mapping[str, Any], where: str) -> Tensor:
                if "constant" in t:
                    return constant_output(t, where)
                k = t["allocation"]
                if not (0 <= k < len(allocations)) or not isinstance(allocations[k], BufferAlloc):
                    raise PlanError(f"{where} ({t['name']}) names allocation {k}, which is not a buffer")
                if t["dtype"] not in TENSOR_DTYPES or (t["dtype"] == "i32") != ("bound" in t):
                    raise PlanError(f"{where} ({t['name']}) has dtype {t['dtype']!r}"
                                    + (" without a bound" if t["dtype"] == "i32" else ""))
                bound = None if "bound" not in t else _positive(t["bound"], f"{where}.bound")
                return Tensor(str(t["name"]), tuple(int(d) for d in t["shape"]), t["dtype"], k,
                              t.get("layout", "nchw"), bound)

            weights_end = max((w.offset + w.nbytes for w in weights), default=0)

            def constant_output(t: Mapping[str, Any], where: str) -> Tensor:
                name, c, dtype = t["name"], t["constant"], t["dtype"]
                if not where.startswith("outputs") or "allocation" in t:
                    raise PlanError(f"{where} ({name}) has a constant value: only outputs may, and then without "
                                    "an allocation")
                if dtype not in CONSTANT_DTYPES:
                    raise PlanError(f"{where} ({name}) has dtype {dtype!r}; a constant output has one of "
                                    f"{', '.join(CONSTANT_DTYPES)}")
                shape = tuple(int(d) for d in t["shape"])
                offset, nbytes = c["offset"], c["bytes"]
                count = int(np.prod(shape, dtype=np.int64)) if shape else 1
                if nbytes != count * np.dtype(CONSTANT_DTYPES[dtype]).itemsize:
                    raise PlanError(f"{where} ({name}): {count} {dtype} elements take "
                                    f"{count * np.dtype(CONSTANT_DTYPES[dtype]).itemsize} bytes, not {nbytes}")
                if not isinstance(offset, int) or offset < weights_end or offset % WEIGHT_ALIGNMENT:
                    raise PlanError(f"{where} ({name}): constant offset {offset!r} must be a multiple of "
                                    f"{WEIGHT_ALIGNMENT} after the last weight (byte {weights_end})")
                return Tensor(str(name), shape, dtype, -1, t.get("layout", "nchw"), constant=Constant(offset, nbytes))

            def arg(a: Mapping[str, Any], where: str) -> Arg:
                kind = a["kind"]
                if kind in ("allocation", "weight"):
                    table = allocations if kind == "allocation" else weights
                    if not 0 <= a["id"] < len(table):
                        raise PlanError(f"{where} names {kind} {a['id']}, which does not exist")
                    return Arg(kind, int(a["id"]))
                if kind == "i32":
                    return Arg(kind, value=int(a["value"]))
                if kind == "f32":
                    return Arg(kind, value=float(a["value"]))
                raise PlanError(f"{where} has unknown argument kind {kind!r}")

            launches = []
            for i, launch in enumerate(data["launches"]):
                gs = tuple(int(g) for g in launch["global"])
                ls = None if launch["local"] is None else tuple(int(v) for v in launch["local"])
                if not 1 <= len(gs) <= 3 or (ls is not None and len(ls) != len(gs)):
                    raise PlanError(f"launches[{i}] ({launch['kernel']}) has global {gs} / local {ls}")
                launches.append(Launch(str(launch["kernel"]),
                                       tuple(arg(a, f"launches[{i}].args[{k}]") for k, a in enumerate(launch["args"])),
                                       gs, ls, str(launch.get("node", ""))))
            inputs = tuple(tensor(t, f"inputs[{i}]") for i, t in enumerate(data["inputs"]))
            outputs = tuple(tensor(t, f"outputs[{i}]") for i, t in enumerate(data["outputs"]))
            states = tuple(State(str(st["input"]), str(st["output"]), int(st["allocation"]))
                           for st in data.get("state", []))
            check_states(states, inputs, outputs)
            return Plan(
                allocations=tuple(allocations), weights=tuple(weights), inputs=inputs, outputs=outputs,
                launches=tuple(launches),
                build_options=tuple(str(o) for o in data.get("build_options", DEFAULT_BUILD_OPTIONS)),
                states=states,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise PlanError(f"malformed launch plan: {type(e).__name__}: {e}") from None


def check_states(states: Sequence[State], inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
    """Each state names an f32 or f16 input living in the state's allocation, and an output
    name that is no output of the plan; f16 inputs and outputs are state, never fed or
    returned (PlanError otherwise)."""
    ins, outs = {t.name: t for t in inputs}, {t.name for t in outputs}
    for st in states:
        i = ins.get(st.input)
        if i is None or i.dtype not in ("f32", "f16") or i.allocation != st.allocation:
            raise PlanError(f"state '{st.input}' must be an f32 or f16 input in allocation {st.allocation}")
        if st.output in outs:
            raise PlanError(f"state '{st.input}' stands for output '{st.output}', which the plan also returns")
    kept = {st.input for st in states}
    for t in [*inputs, *outputs]:
        if t.dtype == "f16" and t.constant is None and t.name not in kept:
            raise PlanError(f"'{t.name}' is f16, which only state (a KV cache kept on the device) may be; a run "
                            "exchanges f32 and i32 arrays")


def _positive(v: Any, where: str) -> int:
    if not isinstance(v, int) or v <= 0:
        raise PlanError(f"{where} must be a positive integer, got {v!r}")
    return v


def image_limit_problem(plan: Plan, image_support: bool, max_width: int, max_height: int,
                        device_name: str) -> str | None:
    """Why `plan`'s images do not fit a device with these limits (None if they do).

    Plain numbers in, so the check needs no IR and no pyopencl: `Executable` asks it
    before any CL call would fail, for a fresh compile and for a loaded artifact alike."""
    images = plan.images
    if not images:
        return None
    if not image_support:
        return f"{device_name} has no image support; compile with textures=False"
    too_big = [a for a in images if a.width > max_width or a.height > max_height]
    if not too_big:
        return None
    t = max(too_big, key=lambda a: a.width * a.height)
    return (f"the plan needs {len(too_big)} image(s) larger than {device_name} allows "
            f"({max_width}x{max_height}), e.g. {t.width}x{t.height}; "
            "compile for this device's profile (target='auto') or with textures=False")


def memory_limit_problem(plan: Plan, max_alloc: int, global_mem: int, device_name: str) -> str | None:
    """Why `plan`'s buffers do not fit a device whose largest allocation is `max_alloc`
    bytes and whose memory is `global_mem` bytes (None if they do); names the tensor
    (model input or output) or weight when it can."""
    def gib(n: int) -> str:
        return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"

    owners = {t.allocation: f"{kind} '{t.name}' {list(t.shape)}" for kind, ts in
              (("input", plan.inputs), ("output", plan.computed_outputs)) for t in ts}
    for i, a in enumerate(plan.allocations):
        if isinstance(a, BufferAlloc) and max_alloc and a.nbytes > max_alloc:
            what = owners.get(i, f"an intermediate tensor (allocation {i})")
            return (f"{what} needs {gib(a.nbytes)} in one buffer, more than {device_name}'s largest allocation "
                    f"({gib(max_alloc)}); use a smaller input shape")
    for w in plan.weights:
        if max_alloc and w.nbytes > max_alloc:
            return (f"weight '{w.name}' needs {gib(w.nbytes)} in one buffer, more than {device_name}'s largest "
                    f"allocation ({gib(max_alloc)})")
    total = sum(a.nbytes if isinstance(a, BufferAlloc) else a.width * a.height * (8 if a.format == "rgba_f16" else 16)
                for a in plan.allocations) + sum(w.nbytes for w in plan.weights)
    if global_mem and total > global_mem:
        return f"the model needs {gib(total)} of device memory; {device_name} has {gib(global_mem)}"
    return None


# --------------------------------------------------------------------------- from IR


def host_function(module: ModuleOp):
    """The module's host `func.func` (the one with launches, or `@main`)."""
    from xdsl.dialects import func

    from adreno_mlir.dialects import opencl

    fns = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    for fn in fns:
        if any(isinstance(o, opencl.LaunchOp) for o in fn.body.block.ops) or fn.sym_name.data == "main":
            return fn
    raise PlanError("the module has no host function (run convert-graph-to-opencl first)")


def plan_from_module(
    module: ModuleOp,
    store: WeightStore,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    output_shapes: Mapping[str, Sequence[int]] | None = None,
    build_options: Sequence[str] = DEFAULT_BUILD_OPTIONS,
) -> tuple[Plan, list[np.ndarray]]:
    """Walk the host function of a lowered module once; return its `Plan` and the weight
    arrays (flat, C-contiguous, in each weight's dtype, in `Plan.weights` order), followed
    by the values of the constant outputs (`Plan.blob_entries` order).

    A constant output is a returned `opencl.weight` (a float32 output no input reaches)
    or an entry of the host function's `graph.constant_outputs` (any other element type,
    adreno_mlir/constant_outputs.py); a weight that only the return reads gets no device
    buffer.

    The lowered IR knows only element counts of inputs and outputs; `input_shapes` and
    `output_shapes` (by name, from the graph before lowering) give them their ONNX
    shapes, otherwise they are 1-D. Weights named twice with the same dtype become one
    weight. Liveness-based reuse is exactly what the executor did before plans existed:
    buffers are pooled by byte size, images by (width, height, format); inputs and
    outputs are never shared."""
    from xdsl.dialects import arith, func
    from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f16, f32, i32

    from adreno_mlir.constant_outputs import constant_outputs, returned_names
    from adreno_mlir.dialects import opencl

    fn = host_function(module)
    ops = list(fn.body.block.ops)
    ret = ops[-1]
    if not isinstance(ret, func.ReturnOp):
        raise PlanError("the host function does not end with func.return")
    input_names = [a.data for a in fn.attributes["graph.inputs"].data]
    all_output_names = [a.data for a in fn.attributes["graph.outputs"].data]
    output_names = returned_names(all_output_names, fn.attributes)
    if len(output_names) != len(ret.operands):
        raise PlanError(f"the host function returns {len(ret.operands)} values for the outputs {output_names}")
    attr_constants = constant_outputs(fn.attributes, store)  # non-float32 constant outputs

    last_use: dict[Any, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            last_use[v] = i
    pinned = set(ret.operands) | set(fn.body.block.args)

    allocations: list[Allocation] = []
    weights: list[Weight] = []
    arrays: list[np.ndarray] = []
    weight_ids: dict[tuple[str, str], int] = {}
    refs: dict[Any, Arg] = {}  # SSA value -> how a launch refers to it
    free: dict[Any, list[int]] = {}  # pool key -> free allocation ids
    launches: list[Launch] = []
    returned_weights: dict[Any, np.ndarray] = {}  # weight value returned as an output -> its f32 values
    offset = 0

    def pool_key(t) -> Any:
        if isinstance(t, opencl.ImageType):
            return ("image", t.width.data, t.height.data, t.format.data)
        return max(4, t.nbytes)

    def new_alloc(t) -> int:
        if isinstance(t, opencl.ImageType):
            allocations.append(ImageAlloc(t.width.data, t.height.data, t.format.data))
        else:
            allocations.append(BufferAlloc(max(4, t.nbytes)))
        return len(allocations) - 1

    def check_f32_buffer(v, what: str) -> None:
        if not (isinstance(v.type, opencl.BufferType) and v.type.element == f32):
            raise PlanError(f"{what} has type {v.type}; the runtime exchanges f32 buffers only")

    bounds = fn.attributes.get("graph.index_bounds")
    bounds = {} if bounds is None else {k: v.value.data for k, v in bounds.data.items()}
    state_attr = fn.attributes.get("graph.state")
    state_inputs = {past.data for past in ({} if state_attr is None else state_attr.data).values()}

    def half_state(name: str, v) -> bool:
        """A state input kept in halves (a KV cache after kv-cache-storage{element=f16}):
        no run copies it, so it need not be f32."""
        return name in state_inputs and isinstance(v.type, opencl.BufferType) and v.type.element == f16

    for name, arg in zip(input_names, fn.body.block.args):
        if not (name in bounds and isinstance(arg.type, opencl.BufferType) and arg.type.element == i32) and \
                not half_state(name, arg):
            check_f32_buffer(arg, "a model input")
        refs[arg] = Arg("allocation", new_alloc(arg.type))

    for i, op in enumerate(ops):
        if isinstance(op, opencl.WeightOp):
            t = op.results[0].type
            if not isinstance(t, opencl.BufferType):
                raise PlanError(f"weight @{op.symbol.root_reference.data} is an image; the runtime "
                                "uploads weights as buffers only")
            name = op.symbol.root_reference.data
            dtype = "f16" if t.element == f16 else "i32" if t.element == i32 else "f32"
            key = (name, dtype)
            value = op.results[0]
            if value in pinned:  # a constant output: the runtime returns these values itself
                check_f32_buffer(value, f"output '{output_names[list(ret.operands).index(value)]}'")
                returned_weights[value] = np.asarray(store[name], dtype=np.float32)
                if all(use.operation is ret for use in value.uses):
                    continue  # no kernel reads it: no device buffer
            if key not in weight_ids:
                arr = np.ascontiguousarray(np.asarray(store[name], dtype=DTYPES[dtype]).reshape(-1))
                if arr.size != t.size.data:
                    raise PlanError(f"weight @{name} has {arr.size} elements, the IR expects {t.size.data}")
                weights.append(Weight(name, dtype, int(arr.size), offset, int(arr.nbytes)))
                arrays.append(arr)
                offset += -(-arr.nbytes // WEIGHT_ALIGNMENT) * WEIGHT_ALIGNMENT
                weight_ids[key] = len(weights) - 1
            refs[op.results[0]] = Arg("weight", weight_ids[key])
        elif isinstance(op, (opencl.AllocBufferOp, opencl.AllocImageOp)):
            value = op.results[0]
            pool = free.get(pool_key(value.type))
            refs[value] = Arg("allocation", pool.pop() if pool and value not in pinned else new_alloc(value.type))
        elif isinstance(op, opencl.LaunchOp):
            desc = getattr(op.location, "desc", None)
            launches.append(Launch(op.kernel.root_reference.data, tuple(refs[v] for v in op.args),
                                   tuple(op.global_sizes), op.local_sizes, desc.data if desc is not None else ""))
        elif isinstance(op, arith.ConstantOp):
            attr = op.value
            if isinstance(attr, IntegerAttr) and op.result.type == i32:
                refs[op.results[0]] = Arg("i32", value=int(attr.value.data))
            elif isinstance(attr, FloatAttr) and op.result.type == f32:
                refs[op.results[0]] = Arg("f32", value=float(attr.value.data))
            else:
                raise PlanError(f"cannot pass the host constant {attr} to a kernel (i32 and f32 only)")
        elif isinstance(op, func.ReturnOp):
            pass
        else:
            raise PlanError(f"cannot execute host op '{op.name}'")
        # intermediates whose last use is this op give their allocation back
        for v in dict.fromkeys(op.operands):  # a value passed twice is released once
            if last_use.get(v) != i or v in pinned:
                continue
            if isinstance(v.owner, (opencl.AllocBufferOp, opencl.AllocImageOp)):
                free.setdefault(pool_key(v.type), []).append(refs[v].index)

    def shape_of(name: str, v, shapes: Mapping[str, Sequence[int]] | None, what: str) -> tuple[int, ...]:
        shape = tuple(int(d) for d in shapes[name]) if shapes and name in shapes else (v.type.size.data,)
        if int(np.prod(shape, dtype=np.int64)) != v.type.size.data:
            raise PlanError(f"{what} '{name}' has shape {list(shape)} but {v.type.size.data} elements in the IR")
        return shape

    def tensor(name: str, v, shapes: Mapping[str, Sequence[int]] | None, what: str) -> Tensor:
        integer = what == "input" and name in bounds
        half = what == "input" and half_state(name, v)
        if not integer and not half:
            check_f32_buffer(v, f"{what} '{name}'")
        ref = refs[v]
        if ref.kind != "allocation":
            raise PlanError(f"{what} '{name}' is a host constant ({ref.kind}); the runtime cannot return it")
        shape = shape_of(name, v, shapes, what)
        return Tensor(name, shape, "i32", ref.index, bound=bounds[name]) if integer else \
            Tensor(name, shape, "f16" if half else "f32", ref.index)

    # Constant outputs: their values go into the blob after the weights, in output order.
    dtype_names = {np.dtype(t): k for k, t in CONSTANT_DTYPES.items()}
    constant_arrays: list[np.ndarray] = []

    def constant(name: str, arr: np.ndarray, shape: tuple[int, ...]) -> Tensor:
        nonlocal offset
        arr = np.ascontiguousarray(arr).reshape(-1)
        if arr.dtype not in dtype_names:
            raise PlanError(f"output '{name}' is a constant of element type {arr.dtype}, which the runtime "
                            f"cannot return ({', '.join(CONSTANT_DTYPES)} only)")
        t = Tensor(name, shape, dtype_names[arr.dtype], -1, constant=Constant(offset, int(arr.nbytes)))
        constant_arrays.append(arr)
        offset += -(-arr.nbytes // WEIGHT_ALIGNMENT) * WEIGHT_ALIGNMENT
        return t

    returned = dict(zip(output_names, ret.operands))
    outputs = []
    for name in all_output_names:
        if name in attr_constants:
            arr = attr_constants[name]
            outputs.append(constant(name, arr, tuple(int(d) for d in arr.shape)))
        elif returned[name] in returned_weights:
            v = returned[name]
            outputs.append(constant(name, returned_weights[v], shape_of(name, v, output_shapes, "output")))
        else:
            outputs.append(tensor(name, returned[name], output_shapes, "output"))
    inputs = tuple(tensor(n, a, input_shapes, "input") for n, a in zip(input_names, fn.body.block.args))
    in_allocations = {t.name: t.allocation for t in inputs}
    states = tuple(State(past.data, present, in_allocations.get(past.data, -1))
                   for present, past in ({} if state_attr is None else state_attr.data).items())
    check_states(states, inputs, outputs)
    plan = Plan(
        allocations=tuple(allocations), weights=tuple(weights), inputs=inputs,
        outputs=tuple(outputs), launches=tuple(launches), build_options=tuple(build_options), states=states,
    )
    return plan, arrays + constant_arrays


def weight_chunks(plan: Plan, arrays: Sequence[np.ndarray]) -> Iterator[bytes]:
    """The weights blob in pieces, for writing it without holding it twice in memory:
    each array's little-endian bytes at its offset (`Plan.blob_entries`: the weights,
    then the constant outputs), zero padding before it up to that offset (and none after
    the last one)."""
    position = 0
    for (name, dtype, offset, nbytes), arr in zip(plan.blob_entries(), arrays, strict=True):
        data = np.ascontiguousarray(arr, dtype=dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype).tobytes()
        if len(data) != nbytes:
            raise PlanError(f"weight {name}: {len(data)} bytes given, the plan says {nbytes}")
        yield bytes(offset - position)
        yield data
        position = offset + nbytes


def unpack_weights(plan: Plan, blob: bytes | memoryview) -> list[np.ndarray]:
    """Views of the weights blob (no copies), one array per `Plan.blob_entries` entry:
    per weight, then per constant output."""
    if len(blob) < plan.weights_nbytes:
        raise PlanError(f"the weights blob has {len(blob)} bytes; the plan needs {plan.weights_nbytes}")
    return [np.frombuffer(blob, dtype=dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype,
                          count=nbytes // dtype.itemsize, offset=offset)
            for _, dtype, offset, nbytes in plan.blob_entries()]
