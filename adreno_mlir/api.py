"""The Python API, modelled on onnxruntime's InferenceSession.

    cm = adreno_mlir.compile("model.onnx")          # or an onnx.ModelProto
    outputs = cm.run({"input": x})                   # {output_name: np.ndarray}
    cm.input_names, cm.output_names, cm.source       # cm.source is the OpenCL C
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from adreno_mlir.context import make_context
from adreno_mlir.errors import CompileError
from adreno_mlir.frontend import import_onnx
from adreno_mlir.pipeline import StageResult, run_stages, stages_for
from adreno_mlir.printing import module_to_text
from adreno_mlir.weights import store_of


@dataclass
class CompiledModel:
    """A model compiled for one OpenCL device; `run` executes it."""

    module: ModuleOp
    source: str
    input_names: list[str]
    output_names: list[str]
    input_shapes: dict[str, tuple[int, ...]]
    output_shapes: dict[str, tuple[int, ...]]
    stages: list[StageResult]
    stage_ir: dict[str, str] = field(default_factory=dict, repr=False)
    executable: object = field(default=None, repr=False)
    compile_seconds: float = 0.0
    plan: str = ""
    """Layout, memory (textures or buffers), precision and target profile actually used."""

    @property
    def device_name(self) -> str:
        from adreno_mlir.runtime import describe_device

        return describe_device(self.executable.device)

    def _check_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        if not isinstance(feeds, Mapping):
            raise ValueError(f"run() takes a dict of inputs {{name: array}}; expected names {self.input_names}")
        unknown = sorted(set(feeds) - set(self.input_names))
        missing = [n for n in self.input_names if n not in feeds]
        if unknown or missing:
            raise ValueError(
                f"wrong input names: expected {self.input_names}"
                + (f", missing {missing}" if missing else "")
                + (f", unknown {unknown}" if unknown else "")
            )
        arrays = []
        for name in self.input_names:
            x = feeds[name]
            if not isinstance(x, np.ndarray):
                raise ValueError(f"input '{name}' must be a numpy array, got {type(x).__name__}")
            if x.dtype != np.float32:
                raise ValueError(f"input '{name}' has dtype {x.dtype}; expected float32")
            if tuple(x.shape) != self.input_shapes[name]:
                raise ValueError(
                    f"input '{name}' has shape {list(x.shape)}; expected {list(self.input_shapes[name])}"
                )
            arrays.append(x)
        return arrays

    def profile(self, feeds: Mapping[str, np.ndarray], repeat: int = 5) -> dict[str, float]:
        """Device milliseconds per kernel (summed over its launches), from OpenCL events."""
        return self.executable.profile(self._check_inputs(feeds), repeat)

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        arrays = self._check_inputs(feeds)
        outs = self.executable.run(arrays)
        return {
            name: out.reshape(self.output_shapes[name])
            for name, out in zip(self.output_names, outs)
        }


def _shapes(module: ModuleOp) -> tuple[dict, dict]:
    from xdsl.dialects import func

    from adreno_mlir.dialects import graph

    fn = next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))
    ins = [a.data for a in fn.attributes["graph.inputs"].data]
    outs = [a.data for a in fn.attributes["graph.outputs"].data]
    in_shapes = {n: graph.shape_of(a.type) for n, a in zip(ins, fn.args)}
    out_shapes = {n: graph.shape_of(t) for n, t in zip(outs, fn.function_type.outputs.data)}
    return in_shapes, out_shapes


PRECISIONS = {"fp32": "f32", "fp16-acc32": "f16"}


def _resolve_target(target: str, context) -> str:
    """Name of the profile to compile for; `auto` registers the live device's profile."""
    from adreno_mlir.target import get_profile, profile_from_device, register_profile

    if target != "auto":
        try:
            get_profile(target)
        except ValueError as e:
            raise CompileError(str(e)) from None
        return target
    import dataclasses

    live = profile_from_device(context.devices[0])
    name = "device-" + "".join(ch if ch.isalnum() else "-" for ch in live.name[5:]).strip("-").lower()
    register_profile(dataclasses.replace(live, name=name))
    return name


def work_group_sizes(work_group: str | tuple[int, ...], target_name: str) -> tuple[int, ...]:
    from adreno_mlir.target import get_profile

    if work_group == "driver":
        return ()
    if work_group == "auto":
        profile = get_profile(target_name)
        return tuple(profile.preferred_work_group_size) if profile.is_gpu else ()
    if isinstance(work_group, str) or not all(isinstance(d, int) and d > 0 for d in work_group):
        raise CompileError(f"work_group must be 'auto', 'driver' or a tuple of positive ints, got {work_group!r}")
    return tuple(work_group)


def plan_options(target: str, device: str | None, textures: bool | None, precision: str,
                 layout: str | None) -> tuple[str, bool, str, str]:
    """Resolve (layout, textures, storage element, target profile name) for a compile."""
    from adreno_mlir.runtime import default_context
    from adreno_mlir.target import get_profile

    if precision == "fp16":
        raise CompileError(
            "precision='fp16' (half arithmetic) is not implemented; use 'fp16-acc32' for fp16 "
            "storage with fp32 accumulation"
        )
    if precision not in PRECISIONS:
        raise CompileError(f"unknown precision '{precision}'; choose one of fp32, fp16-acc32")
    target_name = _resolve_target(target, default_context(device))
    profile = get_profile(target_name)
    if textures is None:
        textures = profile.is_gpu and profile.supports_images
    if layout is None:
        layout = "nchw4c" if textures or precision != "fp32" else "nchw"
    if layout not in ("nchw", "nchw4c"):
        raise CompileError(f"unknown layout '{layout}'; choose nchw or nchw4c")
    if layout == "nchw" and (textures or precision != "fp32"):
        raise CompileError("layout='nchw' is the fp32 buffer path: textures and fp16 storage need nchw4c")
    return layout, bool(textures), PRECISIONS[precision], target_name


def lower(
    module: ModuleOp,
    layout: str,
    textures: bool,
    storage: str,
    target_name: str,
    work_group: tuple[int, ...] = (),
    after_stage=None,
) -> tuple[list[StageResult], str]:
    """Run a plan's stages on `module` (in place); returns the stage timings and the
    OpenCL C program. `compile()` and `adreno-mlir compile` both lower through here."""
    from adreno_mlir.lowering.opencl_printer import opencl_source

    from adreno_mlir.target import get_profile

    gpu = get_profile(target_name).is_gpu
    stages = run_stages(make_context(), module,
                        stages_for(layout, textures, storage, target_name, work_group, gpu), after_stage)
    return stages, opencl_source(module)


def compile(
    model: str | Path | onnx.ModelProto | ModuleOp,
    target: str = "auto",
    device: str | None = None,
    *,
    textures: bool | None = None,
    precision: str = "fp32",
    layout: str | None = None,
    work_group: str | tuple[int, ...] = "driver",
    keep_ir: bool = False,
) -> CompiledModel:
    """Compile an ONNX model (path, ModelProto or imported graph module) for an OpenCL device.

    target:    a target profile (see `adreno_mlir.target`); `"auto"` reads the device.
    device:    the OpenCL device (default: PYOPENCL_CTX, else PoCL's CPU device).
    textures:  True puts NCHW4c activations in images wherever legal, False forces the
               buffer plan; None (default) uses images on GPU targets with image support.
    precision: "fp32", or "fp16-acc32" (fp16 storage in half images/buffers, fp32
               arithmetic; needs no cl_khr_fp16). "fp16" (half arithmetic) is refused
               with an explanation: it is not implemented.
    layout:    "nchw4c" (texture-level pipeline) or "nchw" (plain buffers, fp32 only);
               default nchw4c when textures or fp16 storage are used, else nchw.
    work_group: local sizes: "driver" (default: the OpenCL driver picks), "auto" (the
               target's preferred size on GPUs), or a preferred (x, y, z). Explicit sizes
               are experimental: the H200's driver rejected some launches with them.
    """
    from adreno_mlir.runtime import Executable, default_context
    from adreno_mlir.runtime.executor import ImageLimitError

    start = time.perf_counter()
    layout, textures, storage, target_name = plan_options(target, device, textures, precision, layout)
    context = default_context(device)
    # The caller's module is never changed; with textures a pristine copy is kept for
    # the buffer-plan fallback.
    graph = model.clone() if isinstance(model, ModuleOp) else import_onnx(model)
    in_shapes, out_shapes = _shapes(graph)
    stage_ir: dict[str, str] = {"graph": module_to_text(graph)} if keep_ir else {}

    def keep(name: str, m: ModuleOp) -> None:
        if keep_ir:
            stage_ir[name] = module_to_text(m)

    wg = work_group_sizes(work_group, target_name)
    module = graph.clone() if textures else graph
    stages, source = lower(module, layout, textures, storage, target_name, wg, keep)
    try:
        executable = Executable(module, source, store_of(module), context)
    except ImageLimitError:
        if not textures:
            raise
        # The device cannot hold the texture plan's images: the buffer plan instead.
        module, textures = graph, False
        stages, source = lower(module, layout, False, storage, target_name, wg, keep)
        executable = Executable(module, source, store_of(module), context)
    return CompiledModel(
        module=module, source=source,
        input_names=list(in_shapes), output_names=list(out_shapes),
        input_shapes=in_shapes, output_shapes=out_shapes,
        stages=stages, stage_ir=stage_ir, executable=executable,
        compile_seconds=time.perf_counter() - start,
        plan=f"layout {layout}, {'textures' if textures else 'buffers'}, {precision}, target {target_name}",
    )
