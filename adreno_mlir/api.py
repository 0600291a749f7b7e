"""The Python API, modelled on onnxruntime's InferenceSession.

    cm = adreno_mlir.compile("model.onnx")          # or an onnx.ModelProto
    outputs = cm.run({"input": x})                   # {output_name: np.ndarray}
    cm.input_names, cm.output_names, cm.source       # cm.source is the OpenCL C
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass

from adreno_mlir.context import make_context
from adreno_mlir.errors import CompileError
from adreno_mlir.frontend import import_onnx
from adreno_mlir.pipeline import (
    StageResult,
    pipeline_string,
    run_stages,
    stages_for,
    stages_of_pipeline,
)
from adreno_mlir.printing import module_to_text
from adreno_mlir.runtime.model import RunnableModel
from adreno_mlir.runtime.program_cache import CacheArg, cache_dir
from adreno_mlir.weights import store_of


@dataclass
class CompiledModel(RunnableModel):
    """A model compiled for one OpenCL device; `run` executes it, `save` writes it as an
    artifact that `adreno_mlir.load` runs without the compiler (docs/artifact.md)."""

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
    timings: dict[str, float] = field(default_factory=dict)
    """Where `compile_seconds` went: "import" (ONNX to graph IR), "passes" (graph-level
    stages), "lowering" (convert-graph-to-opencl), "print" (OpenCL C), "program" (program
    build or cache load, see `build_info`), "setup" (weights upload, buffers, launch
    list) and "other" (option checks, device lookup)."""
    plan: str = ""
    """Layout, memory (textures or buffers), precision and target profile actually used."""
    pipeline: str = ""
    """The pass pipeline that was run: `adreno-opt -p PIPELINE` replays it on the graph IR."""
    options: dict = field(default_factory=dict)
    """The resolved plan options (layout, textures, precision, storage, target,
    work_group, custom_pipeline), as an artifact's manifest records them."""

    def save(self, path: str | Path, *, binaries: bool = True) -> Path:
        """Write the compiled model as an artifact directory (`X.adreno/`, see
        docs/artifact.md); `binaries` also stores the program binary built for this
        device, so `load()` on the same device and driver skips the OpenCL build."""
        from adreno_mlir.artifact import save_compiled

        return save_compiled(self, path, binaries=binaries)


@contextlib.contextmanager
def _naming_config_sources(merged_file: str, tuning_db, overrides):
    """Errors and warnings of the passes name the file select-kernel-config read: the
    merged copy in the cache folder (tuning/overrides_file_for). Where they do, name what
    the user gave instead (the overrides file, the tuning database, or the dict)."""
    if not merged_file:
        yield
        return
    given = [str(overrides) if isinstance(overrides, (str, Path)) else "the overrides dict"
             ] if overrides is not None else []
    given += [f"tuning database {tuning_db}"] if tuning_db is not None else []
    name = f"{' and '.join(given)} (merged into {merged_file})"

    def named(text: str) -> str:
        return text.replace(merged_file, name)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except CompileError as e:
            if merged_file not in str(e):
                raise
            try:
                renamed = type(e)(named(str(e)))
            except TypeError:  # a subclass with another constructor
                renamed = CompileError(named(str(e)))
            raise renamed from None
        finally:
            pending = list(caught)
    for w in pending:
        warnings.warn_explicit(named(str(w.message)), w.category, w.filename, w.lineno)


def io_shapes(module: ModuleOp) -> tuple[dict, dict]:
    """{name: shape} of the graph function's inputs and of its outputs (before lowering)."""
    from xdsl.dialects import func

    from adreno_mlir.dialects import graph

    fn = next((op for op in module.body.block.ops if isinstance(op, func.FuncOp)), None)
    if fn is None:
        raise CompileError("the module has no func.func to compile")
    missing = [k for k in ("graph.inputs", "graph.outputs") if k not in fn.attributes]
    if missing:
        raise CompileError(f"func @{fn.sym_name.data} has no {' or '.join(missing)} attribute (the ONNX input and "
                           "output names, as the importer writes them: attributes {graph.inputs = [\"x\"], "
                           "graph.outputs = [\"y\"]}); add them to compile hand-written IR")
    from adreno_mlir.constant_outputs import constant_outputs, returned_names

    ins = [a.data for a in fn.attributes["graph.inputs"].data]
    outs = [a.data for a in fn.attributes["graph.outputs"].data]
    in_shapes = {n: graph.shape_of(a.type) for n, a in zip(ins, fn.args)}
    names, types = returned_names(outs, fn.attributes), fn.function_type.outputs.data
    if len(names) != len(types):
        raise CompileError(f"func @{fn.sym_name.data} returns {len(types)} values but graph.outputs (less "
                           f"graph.constant_outputs) names {len(names)}: {names}")
    returned = dict(zip(names, types))
    constants = constant_outputs(fn.attributes, store_of(module))  # non-float32 ones
    out_shapes = {n: graph.shape_of(returned[n]) if n in returned else tuple(constants[n].shape) for n in outs}
    return in_shapes, out_shapes


def _resolve_target(target: str, context) -> str:
    """Name of the profile to compile for. `auto` becomes the live device's name,
    `device-<device name>`, which `get_profile` (and so the passes, and `adreno-opt`
    replaying the pipeline on this machine) resolves from the device itself; nothing is
    registered, so compiling never grows the profile registry."""
    from adreno_mlir.target import get_profile, live_profile

    if target != "auto":
        try:
            get_profile(target)
        except ValueError as e:
            raise CompileError(str(e)) from None
        return target
    return live_profile(context.devices[0]).name


def work_group_sizes(work_group: str | tuple[int, ...], target_name: str) -> tuple[int, ...]:
    """The preferred local size for convert-graph-to-opencl (`()`: the driver's choice)."""
    from adreno_mlir.options import WorkGroup, check_work_group
    from adreno_mlir.target import get_profile

    work_group = check_work_group(work_group)
    if work_group == WorkGroup.DRIVER:
        return ()
    if work_group == WorkGroup.AUTO:
        profile = get_profile(target_name)
        return tuple(profile.preferred_work_group_size) if profile.is_gpu else ()
    return work_group


def plan_options(target: str, device: str | None, textures: bool | None, precision: str,
                 layout: str | None) -> tuple[str, bool, str, str]:
    """Resolve (layout, textures, storage element, target profile name) for a compile.

    Every option is checked (type and value) before the device is touched; a bad one is a
    `CompileError` naming the parameter, the value and the choices (see adreno_mlir.options)."""
    from adreno_mlir.options import (
        Layout,
        Precision,
        check_device,
        check_layout,
        check_precision,
        check_target,
        check_textures,
    )
    from adreno_mlir.runtime import default_context
    from adreno_mlir.target import get_profile

    target = check_target(target)
    device = check_device(device)
    textures = check_textures(textures)
    precision = check_precision(precision)
    layout = check_layout(layout)
    target_name = _resolve_target(target, default_context(device))
    profile = get_profile(target_name)
    if precision == Precision.FP16 and not profile.supports_fp16:
        raise CompileError(f"precision='fp16' computes in half, which target profile '{target_name}' does not support "
                           "(no cl_khr_fp16); use precision='fp16-acc32' (fp16 storage, fp32 arithmetic) or a target "
                           "with half arithmetic (adreno-*)")
    if textures is None:
        textures = profile.is_gpu and profile.supports_images
    if layout is None:
        layout = Layout.NCHW4C if textures or precision != Precision.FP32 else Layout.NCHW
    if layout == Layout.NCHW and (textures or precision != Precision.FP32):
        needs = [f"textures={textures!r}"] if textures else []
        needs += [f"precision={precision.value!r}"] if precision != Precision.FP32 else []
        raise CompileError(f"layout='nchw' is the fp32 buffer path: {' and '.join(needs)} need "
                           "layout='nchw4c' (or leave layout=None)")
    return layout.value, bool(textures), precision.storage, target_name


PipelineArg = str | Callable[[str], str] | None
"""A pipeline for `compile(pipeline=...)`: an `adreno-opt -p` string, or a function
that takes the default pipeline string of the plan and returns the one to run."""


def plan_pipeline(layout: str, textures: bool, storage: str, target_name: str,
                  work_group: tuple[int, ...] = (), pipeline: PipelineArg = None,
                  compute: str = "f32", overrides: str = "") -> list[tuple[str, str]]:
    """The stages a compile runs: the plan's default stages, or a caller's pipeline
    (one stage per pass)."""
    stages = stages_for(layout, textures, storage, target_name, work_group, compute, overrides)
    if pipeline is None:
        return stages
    spec = pipeline(pipeline_string(stages)) if callable(pipeline) else pipeline
    if not isinstance(spec, str) or not spec.strip():
        raise CompileError(f"pipeline must be a non-empty pass pipeline string (or a function returning one), "
                           f"got {spec!r}")
    return stages_of_pipeline(spec)


def gc_paused(fn):
    """Run `fn` with Python's cyclic garbage collector paused (restored afterwards).

    A compile allocates hundreds of thousands of small IR objects while the process
    keeps as many alive (built kernels, op templates, the caller's models); every few
    thousand allocations the collector would walk all of them, which was up to half of
    a compile (MobileNetV2: 0.45 s paused vs 0.84-1.0 s, in a process that had compiled
    four other models). Cyclic garbage from the compile is collected by the next
    automatic collection after it."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        global _gc_pauses, _gc_was_enabled
        with _gc_lock:  # compiles in several threads: the first pauses, the last restores
            if _gc_pauses == 0:
                _gc_was_enabled = gc.isenabled()
                gc.disable()
            _gc_pauses += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with _gc_lock:
                _gc_pauses -= 1
                if _gc_pauses == 0 and _gc_was_enabled:
                    gc.enable()

    return wrapper


_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = True


@gc_paused
def lower(
    module: ModuleOp,
    layout: str,
    textures: bool,
    storage: str,
    target_name: str,
    work_group: tuple[int, ...] = (),
    after_stage=None,
    pipeline: PipelineArg = None,
    passes: Sequence[type[ModulePass]] = (),
    timings: dict[str, float] | None = None,
    compute: str = "f32",
    overrides: str = "",
) -> tuple[list[StageResult], str]:
    """Run a plan's stages (or a caller's `pipeline`, which may name the pass classes in
    `passes`) on `module` in place; returns the stage timings and the OpenCL C program
    (`timings`, when given, gets the printing time as "print").
    `compile()` and `adreno-mlir compile` both lower through here."""
    from adreno_mlir.lowering.opencl_printer import opencl_source

    stages = run_stages(make_context(), module,
                        plan_pipeline(layout, textures, storage, target_name, work_group, pipeline, compute,
                                      overrides),
                        after_stage, passes, verify_each=pipeline is not None)
    if any(isinstance(o, (func.FuncOp,)) and any(isinstance(t, TensorType) for t in o.function_type.inputs.data)
           for o in module.body.block.ops):
        raise CompileError("the pipeline did not lower the model to OpenCL: end it with convert-graph-to-opencl")
    start = time.perf_counter()
    source = opencl_source(module)
    if timings is not None:
        timings["print"] = time.perf_counter() - start
    return stages, source


@gc_paused
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
    pipeline: PipelineArg = None,
    passes: Sequence[type[ModulePass]] = (),
    cache: CacheArg = None,
    runtime: str | None = None,
    calibration=None,
    tuning_db: str | Path | None = None,
    overrides: str | Path | dict | None = None,
) -> CompiledModel:
    """Compile an ONNX model (path, ModelProto or imported graph module) for an OpenCL device.

    target:    a target profile (see `adreno_mlir.target`); `"auto"` reads the device.
    device:    the OpenCL device (default: PYOPENCL_CTX, else PoCL's CPU device).
    textures:  True puts NCHW4c activations in images wherever legal, False forces the
               buffer plan; None (default) uses images on GPU targets with image support.
    precision: "fp32"; "fp16-acc32" (fp16 storage in half images/buffers, fp32
               arithmetic; needs no cl_khr_fp16); or "fp16" (fp16 storage and half
               arithmetic in every NCHW4c kernel: `compute = "f16"` in each kernel_config;
               refused on a device without cl_khr_fp16).
    layout:    "nchw4c" (texture-level pipeline) or "nchw" (plain buffers, fp32 only);
               default nchw4c when textures or fp16 storage are used, else nchw.
    work_group: local sizes: "driver" (default: the OpenCL driver picks), "auto" (the
               target's preferred size on GPUs), or a preferred (x, y, z). Explicit sizes
               are experimental: the H200's driver rejected some launches with them.
    pipeline:  the passes to run instead of the plan's default (`cm.pipeline` shows the
               default): an `adreno-opt -p` string, or a function that edits the default
               string (e.g. inserts a pass of your own after graph-fuse). It must end with
               convert-graph-to-opencl.
    passes:    your own `ModulePass` classes, so the pipeline can name them (installed
               `xdsl.universe` plugins are found without this).
    cache:     the program binary cache (adreno_mlir.runtime.program_cache): None for
               the default folder ($ADRENO_MLIR_CACHE_DIR or the platform's user cache),
               False for none, or a folder. `cm.build_info` says whether it hit.
    calibration: for fp16 storage (precision "fp16-acc32" or "fp16"), the inputs of the fp32 run
               that checks every value stays within fp16's range ({name: array}; default
               seeded random normal data); False skips the check (adreno_mlir.range_guard).
    runtime:   the launch path of `run`: "auto" (default, or $ADRENO_MLIR_RUNTIME: the
               native C runtime of runtime/c when it is built, else pyopencl), "native"
               or "pyopencl" (adreno_mlir.runtime.native). `cm.runtime` says which ran.
    tuning_db: a tuning database (`adreno-mlir tune`): the best measured kernel configs
               for this device, driver and compiler version become select-kernel-config's
               overrides (visible in `cm.pipeline`); entries for other devices, drivers or
               compiler versions are ignored with a warning (adreno_mlir.tuning).
    overrides: kernel configs to apply (a JSON file, or the same as a dict): see
               select-kernel-config. Entries from `tuning_db` come first, these win.
    """
    from adreno_mlir.options import check_precision, check_work_group
    from adreno_mlir.runtime import Executable, default_context
    from adreno_mlir.runtime.device import check_half_support
    from adreno_mlir.runtime.executor import ImageLimitError
    from adreno_mlir.runtime.native import resolve_runtime

    start = time.perf_counter()
    cache_dir(cache)  # a bad `cache` argument fails now, not after the lowering
    runtime = resolve_runtime(runtime)
    work_group = check_work_group(work_group)
    layout, textures, storage, target_name = plan_options(target, device, textures, precision, layout)
    checked = check_precision(precision)
    compute, precision = checked.compute, checked.value
    context = default_context(device)
    if compute == "f16":
        check_half_support(context.devices[0])
    overrides_file = ""
    if tuning_db is not None or overrides is not None:
        from adreno_mlir.tuning import overrides_file_for

        overrides_file = overrides_file_for(context.devices[0], tuning_db, overrides)
        if isinstance(pipeline, str):
            raise CompileError("tuning_db= and overrides= apply to the plan's pipeline; with your own pipeline string "
                               f'give select-kernel-config{{overrides="{overrides_file}"}} in it (or pass pipeline '
                               "as a function that edits the default string)")
    # The caller's module is never changed; with textures a pristine copy is kept for
    # the buffer-plan fallback.
    t_import = time.perf_counter()
    if storage == "f16" and calibration is not False and not isinstance(model, ModuleOp):
        from adreno_mlir.frontend.onnx_importer import load_model
        from adreno_mlir.range_guard import check_fp16_range

        check_fp16_range(load_model(model), calibration)
    if isinstance(model, ModuleOp):
        from adreno_mlir.weights import attach

        graph = model.clone()
        attach(graph, store_of(model).overlay())  # the compile's weights never land in the caller's store
    else:
        graph = import_onnx(model)
    timings = {"import": time.perf_counter() - t_import}
    in_shapes, out_shapes = io_shapes(graph)
    stage_ir: dict[str, str] = {"graph": module_to_text(graph)} if keep_ir else {}

    def keep(name: str, m: ModuleOp) -> None:
        if keep_ir:
            stage_ir[name] = module_to_text(m)

    wg = work_group_sizes(work_group, target_name)
    module = graph.clone() if textures else graph
    with _naming_config_sources(overrides_file, tuning_db, overrides):
        stages, source = lower(module, layout, textures, storage, target_name, wg, keep if keep_ir else None, pipeline,
                               passes, timings, compute, overrides_file)
    def instantiate(module: ModuleOp, source: str) -> Executable:
        return Executable(module, source, store_of(module), context, cache=cache,
                          input_shapes=in_shapes, output_shapes=out_shapes, runtime=runtime)

    t_setup = time.perf_counter()
    try:
        executable = instantiate(module, source)
    except ImageLimitError:
        if not textures:
            raise
        # The device cannot hold the texture plan's images: the buffer plan instead.
        module, textures = graph, False
        with _naming_config_sources(overrides_file, tuning_db, overrides):
            stages, source = lower(module, layout, False, storage, target_name, wg, keep if keep_ir else None,
                                   pipeline, passes, timings, compute, overrides_file)
        executable = instantiate(module, source)
    total = time.perf_counter() - start
    lowering = sum(st.seconds for st in stages if st.name == "opencl")
    timings.update(passes=sum(st.seconds for st in stages) - lowering, lowering=lowering,
                   program=executable.build_info.seconds,
                   setup=time.perf_counter() - t_setup - executable.build_info.seconds)
    timings["other"] = max(0.0, total - sum(timings.values()))
    timings = {k: timings[k] for k in ("import", "passes", "lowering", "print", "program", "setup", "other")}
    return CompiledModel(
        module=module, source=source, timings=timings,
        input_names=list(in_shapes), output_names=list(out_shapes),
        input_shapes=in_shapes, output_shapes=out_shapes,
        stages=stages, stage_ir=stage_ir, executable=executable,
        pipeline=",".join(st.pipeline for st in stages),
        compile_seconds=total,
        plan=describe_plan(layout, textures, precision, target_name, pipeline is not None),
        options=plan_record(layout, textures, precision, storage, target_name, work_group, pipeline is not None),
    )


def describe_plan(layout: str, textures: bool, precision: str, target_name: str, custom_pipeline: bool) -> str:
    """`CompiledModel.plan`: the one-line description of the plan actually used."""
    return (f"layout {layout}, {'textures' if textures else 'buffers'}, {precision}, target {target_name}"
            + (" (custom pipeline: see .pipeline)" if custom_pipeline else ""))


def plan_record(layout: str, textures: bool, precision: str, storage: str, target_name: str,
                work_group, custom_pipeline: bool) -> dict:
    """`CompiledModel.options`: the resolved plan options, as an artifact's manifest
    records them (plain JSON values)."""
    return {"layout": layout, "textures": bool(textures), "precision": str(precision), "storage": storage,
            "target": target_name,
            "work_group": str(work_group) if isinstance(work_group, str) else list(work_group),
            "custom_pipeline": bool(custom_pipeline)}
