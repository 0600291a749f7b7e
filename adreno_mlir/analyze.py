"""An analytical (roofline) model of every kernel of a compiled plan: `adreno-mlir analyze`.

Why: a first answer to "where does the time go, and is it the arithmetic or the memory?"
without a device, on any target profile with peak figures (adreno_mlir/target.py), and a
cheap estimate the autotuner can rank candidate configs with before measuring them.

The model (docs/analyze.md):

* It reads the graph-level module right after the `config` stage (select-kernel-config has
  run): a kernel is an op with `is_kernel(op)` at the top level of a function; a
  `graph.fused` region is one kernel, its head's work plus its element-wise tail.
* FLOPs (an FMA counts 2): convolution 2*N*Co*Ho*Wo*(Ci/groups)*Kh*Kw (the NCHW4c
  shapes, i.e. with channels padded to blocks of 4: that work is done); Gemm / MatMul /
  MatMulNBits 2*M*N*K*batch (not the dequantizing); the three Winograd kernels their actual
  work (the non-zero transform terms the kernels emit, lowering/kernels/winograd.py, and
  2*alpha^2*K*C*P for the product); local pools one op per window element; global pools and reductions the input
  numel; LayerNorm and (Log)Softmax 5*numel; fused attention both products plus 5 per
  score; a decoder's grouped-query attention the same over the whole cache (its bytes too:
  the cost at the last position of the context) plus the rotary embedding; element-wise ops numel each; data movement (pack, unpack, concat, slice,
  transpose, pad, gather, nearest resize, ...) 0. Ops without a formula count the numel of
  their results.
* Bytes: every value the kernel reads from outside itself (activations, weights and
  constants; each once, a broadcast operand at its own size) plus the value it writes, at
  4 bytes an f32 element and 2 an f16 one. Values in an image scope (annotate-texture-scope's
  `#texture.image<...>`) count as `texture_bytes`, the others as `global_bytes`. Both cross
  the DRAM interface: the memory term uses their sum (compulsory traffic; caches are assumed
  to absorb re-reads).
* Time: max(flops / peak, bytes / bandwidth) + a launch overhead (`LAUNCH_OVERHEAD_US`: 2 us
  on GPUs, 5 us on CPUs; assumptions of the order of an OpenCL launch on either). The peak is
  the FP16 one for kernels whose config computes in half, else the FP32 one.
* `estimate_config_us` (for the autotuner) multiplies the roofline by an occupancy penalty
  max(1, target / work-items) for configs that leave too few parallel work-items, and adds
  the split-K partial sums' round trip through memory.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from adreno_mlir.errors import CompileError
from adreno_mlir.plan import CompilePlan

__all__ = [
    "LAUNCH_OVERHEAD_US",
    "PLANS",
    "Analysis",
    "KernelCost",
    "analyze_model",
    "estimate_config_us",
    "kernel_costs",
    "kernel_flops",
    "occupancy_target",
    "work_items",
]

LAUNCH_OVERHEAD_US = {"gpu": 2.0, "cpu": 5.0}
"""Fixed cost added to every kernel's roofline time (an assumption: the order of an OpenCL
kernel launch on a GPU driver and on PoCL's CPU device)."""

GPU_ITEMS_PER_UNIT = 2048
"""Work-items per compute unit that keep a GPU busy (an assumption: an NVIDIA SM holds up to
2048 resident threads; enough to hide memory latency)."""
GPU_ITEMS_UNKNOWN = 16384
"""A GPU's occupancy target when its compute units are unknown (the named Adreno profiles):
select-kernel-config's `min_work_items`, the compiler's own "fills a GPU" threshold."""
CPU_ITEMS_PER_CORE = 2
"""Work-items per CPU core (an assumption: two keep every core busy through the tail)."""

PLANS: dict[str, tuple[bool, str]] = {
    "texture": (True, "nchw4c"),  # NCHW4c in images where legal
    "buffer4c": (False, "nchw4c"),  # NCHW4c in global buffers
    "nchw": (False, "nchw"),  # plain NCHW buffers (fp32 only)
}
"""`--plan` names: (textures, layout), as bench/bench.py's plans of the same names."""


@dataclass(frozen=True)
class KernelCost:
    """The roofline estimate of one kernel (see the module docstring for the model)."""

    name: str
    """ONNX node name of the kernel op's location (what its launches carry); for a fused
    region the last fused node's name. Kernels without one get `<op>#<index>`."""
    kind: str
    """The kernel's family (conv4c, conv, gemm, reduce, ...: lowering/families), else the head op's name."""
    signature: str
    config: dict[str, Any] = field(hash=False)
    flops: int
    global_bytes: int
    texture_bytes: int
    intensity: float
    """FLOPs per byte moved (global + texture)."""
    estimate_us: float
    """max(compute_us, memory_us) + the launch overhead."""
    bound: str
    """"compute" or "memory": the larger roofline term."""
    compute_us: float = 0.0
    memory_us: float = 0.0
    nodes: tuple[str, ...] = ()
    """ONNX node names of every op of the kernel (head first), for matching launches."""

    @property
    def total_bytes(self) -> int:
        return self.global_bytes + self.texture_bytes


# --------------------------------------------------------------------------- sizes


def _numel(shape: Iterable[int]) -> int:
    return math.prod(int(d) for d in shape)


def _element_bytes(element) -> int:
    width = getattr(element, "bitwidth", None)
    if isinstance(width, int) and width > 0:
        return max(1, width // 8)
    return 4


def value_bytes(value: SSAValue) -> tuple[int, bool]:
    """(bytes, lives in an image) of a tensor value as stored: a `!texture.tensor` at its
    packed shape (channels padded to blocks of 4), a builtin tensor at its shape."""
    from adreno_mlir.dialects import texture

    t = value.type
    if isinstance(t, texture.TextureTensorType):
        return _numel(t.shape) * _element_bytes(t.element), t.is_image
    if isinstance(t, TensorType):
        return _numel(t.get_shape()) * _element_bytes(t.get_element_type()), False
    return 0, False


def _value_numel(value: SSAValue) -> int:
    from adreno_mlir.dialects import graph

    try:
        return _numel(graph.shape_of(value))
    except Exception:  # noqa: BLE001 - a type without a logical shape: its stored size
        from adreno_mlir.dialects import texture

        t = value.type
        return _numel(t.shape) if isinstance(t, texture.TextureTensorType) else 1


def _members(kop: Operation) -> list[Operation]:
    from adreno_mlir.dialects import graph

    return kop.ops if isinstance(kop, graph.FusedOp) else [kop]


def kernel_bytes(kop: Operation) -> tuple[int, int]:
    """(global bytes, texture bytes) a kernel moves: each value it reads from outside (once)
    and the value it writes."""
    from adreno_mlir.dialects import graph

    # Values without a kernel (an on_load region's, graph.scale_channels') are read through.
    values = [*graph.kernel_reads(kop), *kop.results]
    glob = tex = 0
    for v in values:
        n, image = value_bytes(v)
        if image:
            tex += n
        else:
            glob += n
    return glob, tex


# --------------------------------------------------------------------------- FLOPs


def _combine_flops(coeffs) -> int:
    """FLOPs of winograd._combine: the non-zero terms only, +-1 as an add, others as an FMA."""
    terms = sorted((float(c) for c in coeffs if c != 0), key=lambda c: c != 1.0)
    if not terms:
        return 0
    return (0 if terms[0] == 1.0 else 1) + sum(1 if abs(c) == 1.0 else 2 for c in terms[1:])


@functools.cache
def winograd_transform_flops(tile: int) -> tuple[int, int]:
    """FLOPs per (tile, channel) of the input transform B^T d B and of the output transform
    A^T m A, as the kernels emit them (`_sandwich(left, t, right)`: a combine of `left`'s row
    per element of left @ t, then of `right`'s row per element of the result)."""
    from adreno_mlir.kernel_math.winograd import winograd_matrices

    bt, _, at = winograd_matrices(tile)
    alpha = tile + 2
    rows_b = sum(_combine_flops(r) for r in bt)
    rows_a = sum(_combine_flops(r) for r in at)
    return 2 * alpha * rows_b, alpha * rows_a + tile * rows_a


_DATA_MOVEMENT = (
    "texture.pack", "texture.unpack", "texture.cast_scope", "texture.alloc", "texture.pack_weights",
    "graph.concat", "graph.slice", "graph.transpose", "graph.pad", "graph.expand", "graph.gather",
    "graph.take", "graph.reshape",
)


def op_flops(op: Operation) -> int:
    """FLOPs of one graph/texture op (module docstring: the formulas)."""
    from adreno_mlir.dialects import graph, texture

    name = op.name
    if name in _DATA_MOVEMENT:
        return 0
    if isinstance(op, (graph.Conv2dOp, graph.Conv2dSplitKOp)):
        n, co, ho, wo = graph.shape_of(op.results[0])
        if isinstance(op, graph.Conv2dSplitKOp):
            n //= op.parts.value.data
        _, cig, kh, kw = graph.weight_shape(op.weight)
        return 2 * n * co * ho * wo * cig * kh * kw
    if isinstance(op, graph.ConvTranspose2dOp):
        n, ci, hi, wi = graph.shape_of(op.input)
        _, cog, kh, kw = graph.shape_of(op.weight)
        return 2 * n * ci * hi * wi * cog * kh * kw
    if isinstance(op, graph.GemmOp):
        a = graph.shape_of(op.a)
        k = a[0] if op.trans_a.value.data else a[1]
        m, n = graph.shape_of(op.result)
        return 2 * m * n * k
    if isinstance(op, graph.MatMulOp):
        return 2 * op.lhs_shape()[-1] * _value_numel(op.result)  # 2*M*N*K*batch
    if isinstance(op, graph.MatMulNBitsOp):  # as a matmul's: the dequantizing shifts and masks are not counted
        return 2 * op.k * _value_numel(op.result)
    if isinstance(op, graph.GroupQueryAttentionOp):  # at the full cache: the rows a token reads at the last position
        b, s, length, d, table = op.geometry
        rotary = 6 * b * s * (op.heads + op.kv_heads) * (d // 2) if table else 0
        return b * s * op.heads * length * (4 * d + 5) + rotary
    if isinstance(op, graph.AttentionOp):
        scores = _numel(op.scores_shape())
        d, dv = op.read_shape("q")[-1], op.read_shape("v")[-1]
        return 2 * scores * d + 2 * scores * dv + 5 * scores
    if isinstance(op, texture.WinogradInputOp):
        _, c4, _, p, _ = op.result.type.shape
        return p * 4 * c4 * winograd_transform_flops(op.tile_size)[0]
    if isinstance(op, texture.WinogradMatmulOp):
        a2, c4, _, p, _ = op.input.type.shape
        k4 = op.result.type.shape[1]
        return 2 * a2 * (4 * k4) * (4 * c4) * p
    if isinstance(op, texture.WinogradOutputOp):
        _, k4, _, p, _ = op.input.type.shape
        m = op.tile_size
        per = winograd_transform_flops(m)[1] + (m * m if op.bias is not None else 0)
        return p * 4 * k4 * per
    if isinstance(op, graph.PoolOp):
        kh, kw = graph.ints(op.kernel_shape)
        return _value_numel(op.result) * kh * kw
    if isinstance(op, (graph.GlobalAvgPoolOp, graph.ReduceOp)):
        return _value_numel(op.input)
    if isinstance(op, (graph.LayerNormOp, graph.ChannelNormOp, graph.SoftmaxOp, graph.LogSoftmaxOp)):
        return 5 * _value_numel(op.input)
    if isinstance(op, graph.SplitKSumOp):
        return _value_numel(op.partial)
    if isinstance(op, graph.ResizeOp):
        taps = {"linear": 4, "cubic": 16}.get(op.mode.data, 0)  # nearest: a copy
        return 2 * taps * _value_numel(op.result)
    # element-wise ops (numel each) and anything without a formula: numel of the results
    return sum(_value_numel(r) for r in op.results)


def kernel_flops(kop: Operation) -> int:
    """FLOPs of a kernel: its head's, plus numel per op of a fused element-wise tail, plus
    those of the `graph.fused {on_load}` regions it computes as it loads them (once each:
    the tiled on-load schedule)."""
    members = _members(kop)
    from adreno_mlir.dialects import graph

    loaded = {id(r): r for m in members for v in m.operands if (r := graph.on_load_region(v)) is not None}
    return (op_flops(members[0]) + sum(_value_numel(m.results[0]) for m in members[1:])
            + sum(kernel_flops(r) for r in loaded.values()))


# --------------------------------------------------------------------------- roofline


def _require_peaks(profile) -> None:
    if not profile.has_peaks:
        raise CompileError(
            f"target profile '{profile.name}' has no peak figures (peak GFLOP/s and memory GB/s are unknown), "
            "which the roofline model needs; analyze for adreno-660, adreno-740, or auto / device-<name> "
            "(estimated from the OpenCL device)")


def _peak_gflops(profile, cfg: dict[str, Any]) -> float:
    if cfg.get("compute") == "f16" and profile.peak_gflops_fp16 > 0:
        return profile.peak_gflops_fp16
    return profile.peak_gflops_fp32


def launch_overhead_us(profile) -> float:
    return LAUNCH_OVERHEAD_US["gpu" if profile.is_gpu else "cpu"]


def roofline_us(flops: int, nbytes: int, profile, cfg: dict[str, Any]) -> tuple[float, float]:
    """(compute us, memory us): flops / peak and bytes / bandwidth."""
    return flops / (_peak_gflops(profile, cfg) * 1e3), nbytes / (profile.memory_gbps * 1e3)


def node_names(kop: Operation) -> tuple[str, ...]:
    """ONNX node names of the kernel's ops (head first, then the tail; the kernel op's own
    name last when it differs), without repeats."""
    names = []
    for o in [*_members(kop), kop]:
        desc = getattr(o.location, "desc", None)
        if desc is not None:
            names.append(desc.data)
    return tuple(dict.fromkeys(names))


def kernel_ops(module: ModuleOp) -> list[Operation]:
    """The kernels of every graph function of `module`, in program order."""
    from adreno_mlir.dialects.graph import is_kernel

    ops = []
    for fn in module.body.block.ops:
        if isinstance(fn, func.FuncOp):
            ops += [op for op in fn.body.block.ops if is_kernel(op)]
    return ops


def kernel_costs(module: ModuleOp, profile) -> list[KernelCost]:
    """The roofline estimate of every kernel of a graph-level `module` after the `config`
    stage, in program order, for `profile` (a `TargetProfile` with peak figures)."""
    from adreno_mlir.lowering.families import PLAIN, config_of, family_of, head_of, kernel_signature

    _require_peaks(profile)
    overhead = launch_overhead_us(profile)
    costs = []
    for i, kop in enumerate(kernel_ops(module)):
        head = head_of(kop)
        cfg = config_of(kop)
        flops = kernel_flops(kop)
        glob, tex = kernel_bytes(kop)
        compute_us, memory_us = roofline_us(flops, glob + tex, profile, cfg)
        desc = getattr(kop.location, "desc", None)
        name = desc.data if desc is not None else f"<{head.name.split('.', 1)[-1]}>#{i}"
        costs.append(KernelCost(
            name=name, kind=family_of(head).name if family_of(head) is not PLAIN else head.name,
            signature=kernel_signature(kop), config=cfg,
            flops=flops, global_bytes=glob, texture_bytes=tex,
            intensity=flops / max(1, glob + tex),
            estimate_us=max(compute_us, memory_us) + overhead,
            bound="compute" if compute_us >= memory_us else "memory",
            compute_us=compute_us, memory_us=memory_us, nodes=node_names(kop)))
    return costs


# --------------------------------------------------------------------------- configs


def occupancy_target(profile) -> int:
    """Work-items a kernel needs to keep `profile`'s device busy (assumptions: see
    GPU_ITEMS_PER_UNIT, GPU_ITEMS_UNKNOWN, CPU_ITEMS_PER_CORE)."""
    if profile.is_gpu:
        return profile.compute_units * GPU_ITEMS_PER_UNIT if profile.compute_units else GPU_ITEMS_UNKNOWN
    return CPU_ITEMS_PER_CORE * (profile.compute_units or 4)


def _cdiv(a: int, b: int) -> int:
    return -(-a // max(1, b))


def work_items(kop: Operation, cfg: dict[str, Any]) -> int:
    """Parallel work-items the kernel runs with config `cfg`: its family's count
    (`Family.work_items`, e.g. an NCHW4c conv's grid; one per output element, or per float4
    on NCHW4c tensors, for a kernel without schedule keys)."""
    from adreno_mlir.lowering.families import family_of, head_of

    head = head_of(kop)
    return family_of(head).work_items(head, cfg, kop)


def estimate_config_us(op: Operation, cfg: dict[str, Any], profile) -> float:
    """The roofline time of the kernel `op` belongs to under config `cfg` (keys it lacks take
    the lowering's defaults), for ranking candidate configs before measuring them:

        (max(flops / peak, bytes / bandwidth) * max(1, target / work_items)) + launch overhead

    The penalty: a config that leaves fewer parallel work-items than the device needs
    (`occupancy_target`) cannot reach either roof; the time grows as the work-items
    shrink. Redundant traffic where it is certain, as the kernel's family counts it
    (`Family.extra_bytes`: split-K's partial outputs written and read back). Other reuse
    (pixel and channel blocking, tiles) changes cache behaviour this model does not know, so only
    their effect on the work-item count is counted."""
    from adreno_mlir.lowering.families import family_of, head_of, kernel_op, validate_config

    _require_peaks(profile)
    kop = kernel_op(op)
    cfg = validate_config(kop, dict(cfg))
    flops = kernel_flops(kop)
    glob, tex = kernel_bytes(kop)
    head = head_of(kop)
    nbytes = glob + tex + family_of(head).extra_bytes(head, cfg, value_bytes(kop.results[0])[0])
    compute_us, memory_us = roofline_us(flops, nbytes, profile, cfg)
    penalty = max(1.0, occupancy_target(profile) / max(1, work_items(kop, cfg)))
    return max(compute_us, memory_us) * penalty + launch_overhead_us(profile)


# --------------------------------------------------------------------------- a whole model


@dataclass
class Analysis:
    """`analyze_model`'s result."""

    costs: list[KernelCost]
    profile: Any
    plan: str
    """The resolved plan, as `CompiledModel.plan` describes it."""
    pipeline: str
    """The stages run (up to and including `config`)."""
    module: ModuleOp = field(repr=False)
    compile_plan: CompilePlan | None = field(default=None, repr=False)
    """The plan analyzed (adreno_mlir.plan); `plan` is its `describe()`."""

    @property
    def total_us(self) -> float:
        return sum(c.estimate_us for c in self.costs)

    def to_json(self) -> dict[str, Any]:
        p = self.profile
        return {
            "target": p.name, "plan": self.plan, "pipeline": self.pipeline,
            **({"options": self.compile_plan.record()} if self.compile_plan is not None else {}),
            "peaks": {"gflops_fp32": p.peak_gflops_fp32, "gflops_fp16": p.peak_gflops_fp16,
                      "memory_gbps": p.memory_gbps, "source": p.peak_source,
                      "launch_overhead_us": launch_overhead_us(p)},
            "total_estimate_us": self.total_us,
            "kernels": [{**asdict(c), "config": {k: list(v) if isinstance(v, tuple) else v
                                                 for k, v in c.config.items()},
                         "nodes": list(c.nodes)} for c in self.costs],
        }


def analyze_model(model: str | Path | Any, target: str = "adreno-740", *, plan: str | CompilePlan | None = None,
                  precision: str = "fp32", device: str | None = None, input_shapes=None, dims=None) -> Analysis:
    """Import `model` (an .onnx path, ModelProto or imported graph module), run the plan's
    stages up to and including `config`, and estimate every kernel on `target`.

    plan: "texture", "buffer4c", "nchw" (`PLANS`), or None for the target's default plan
    (as `compile()` picks it); or a `CompilePlan` (adreno_mlir.plan.make_plan), which then
    replaces target, precision and device.

    input_shapes / dims: static sizes for an ONNX model's dynamic input dims, as `compile()`
    takes them ({input: shape}, {dim_param: size})."""
    from adreno_mlir.context import make_context
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.pipeline import pipeline_string, run_stages
    from adreno_mlir.plan import make_plan

    if not isinstance(plan, CompilePlan):
        if plan is not None and plan not in PLANS:
            raise CompileError(f"unknown plan {plan!r}; choose one of {', '.join(PLANS)} (or leave it out)")
        textures, layout = PLANS[plan] if plan is not None else (None, None)
    if isinstance(model, (str, Path)) and not Path(model).is_file():
        raise CompileError(f"no such model file: {model}")
    if not isinstance(plan, CompilePlan):
        plan = make_plan(target, device, textures=textures, precision=precision, layout=layout)
    _require_peaks(plan.profile)
    if isinstance(model, ModuleOp):
        from adreno_mlir.weights import attach, store_of

        if input_shapes or dims:
            raise CompileError("input_shapes= and dims= bind the dynamic dims of an ONNX model; an imported graph "
                               "module has static shapes already")
        module = model.clone()
        attach(module, store_of(model).overlay())  # the passes' weights never land in the caller's store
    else:
        module = import_onnx(model, input_shapes=input_shapes, dims=dims)
    stages = plan.stages(until="config")
    run_stages(make_context(), module, stages)
    return Analysis(costs=kernel_costs(module, plan.profile), profile=plan.profile, plan=plan.describe(),
                    pipeline=pipeline_string(stages), module=module, compile_plan=plan)
