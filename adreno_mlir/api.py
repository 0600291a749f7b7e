"""The Python API, modelled on onnxruntime's InferenceSession.

    cm = adreno_mlir.compile("model.onnx")          # or an onnx.ModelProto
    outputs = cm.run({"input": x})                   # {output_name: np.ndarray}
    cm.input_names, cm.output_names, cm.source       # cm.source is the OpenCL C

Code written for onnxruntime works with the session swapped (RunnableModel,
adreno_mlir/runtime/model.py): `cm.run(None, {"input": x})` (a list in graph output
order; or a list of output names), `cm.get_inputs()` / `cm.get_outputs()` (NodeArgs:
`.name`, `.shape`, `.type`) and `cm.get_providers()`.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass

from adreno_mlir.context import make_context
from adreno_mlir.errors import CompileError
from adreno_mlir.frontend import import_onnx
from adreno_mlir.pipeline import StageResult, run_stages
from adreno_mlir.plan import CompilePlan, PipelineArg, make_plan
from adreno_mlir.printing import module_to_text
from adreno_mlir.runtime.model import RunnableModel
from adreno_mlir.runtime.program_cache import CacheArg, cache_dir
from adreno_mlir.weights import store_of


@dataclass
class CompiledModel(RunnableModel):
    """A model compiled for one OpenCL device; `run` executes it (`run(feeds)` -> dict, or
    onnxruntime's `run(output_names, feeds)` -> list, with `get_inputs()`/`get_outputs()`),
    `save` writes it as an artifact that `adreno_mlir.load` runs without the compiler
    (docs/artifact.md)."""

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
    """Layout, memory (textures or buffers), precision and target profile actually used
    (`compile_plan.describe()`)."""
    pipeline: str = ""
    """The pass pipeline that was run: `adreno-opt -p PIPELINE` replays it on the graph IR."""
    options: dict = field(default_factory=dict)
    """The resolved plan options (layout, textures, precision, storage, target,
    work_group, custom_pipeline), as an artifact's manifest records them
    (`compile_plan.record()`)."""
    compile_plan: CompilePlan | None = field(default=None, repr=False)
    """The plan compiled (adreno_mlir.plan): `plan` and `options` describe it; after the
    buffer-plan fallback, the buffer plan."""
    tune_report: Any = field(default=None, repr=False)
    """`compile(tune_budget_s=...)`'s tuning report (adreno_mlir.tuning.TuneReport), else None."""

    def save(self, path: str | Path, *, binaries: bool = True) -> Path:
        """Write the compiled model as an artifact directory (`X.adreno/`, see
        docs/artifact.md); `binaries` also stores the program binary built for this
        device, so `load()` on the same device and driver skips the OpenCL build."""
        from adreno_mlir.artifact import save_compiled

        return save_compiled(self, path, binaries=binaries)


@contextlib.contextmanager
def _naming_config_sources(plan: CompilePlan):
    """Errors and warnings of the passes name the file select-kernel-config read: the
    merged copy in the cache folder (tuning/overrides_file_for). Where they do, name what
    the user gave instead (the overrides file, the tuning database, or the dict)."""
    merged_file, name = plan.config_source_names()
    if not merged_file:
        yield
        return

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
    plan: CompilePlan,
    *,
    after_stage: Callable[[str, ModuleOp], None] | None = None,
    pipeline: PipelineArg = None,
    passes: Sequence[type[ModulePass]] = (),
    timings: dict[str, float] | None = None,
) -> tuple[list[StageResult], str]:
    """Run `plan`'s stages (or a caller's `pipeline`, which may name the pass classes in
    `passes`) on `module` in place; returns the stage timings and the OpenCL C program
    (`timings`, when given, gets the printing time as "print"; `after_stage(name, module)`
    sees the IR after each stage). `compile()` and `adreno-mlir compile` both lower
    through here; errors that name the plan's merged overrides file name what the user
    gave instead."""
    from adreno_mlir.lowering.opencl_printer import opencl_source

    if not isinstance(plan, CompilePlan):
        raise CompileError(f"lower() takes a CompilePlan (adreno_mlir.plan.make_plan), got {type(plan).__name__}")
    with _naming_config_sources(plan):
        stages = run_stages(make_context(), module, plan.pipeline_stages(pipeline), after_stage, passes,
                            verify_each=pipeline is not None)
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
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    dims: Mapping[str, int] | None = None,
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
    plan: CompilePlan | None = None,
    memory=None,
    cost_model: str | Path | None = "auto",
    tune_budget_s: float | None = None,
) -> CompiledModel:
    """Compile an ONNX model (path, ModelProto or imported graph module) for an OpenCL device.

    target:    a target profile (see `adreno_mlir.target`); `"auto"` reads the device.
    device:    the OpenCL device (default: PYOPENCL_CTX, else PoCL's CPU device).
    input_shapes: static shapes for an ONNX model exported with dynamic axes, as
               {input name: shape}, e.g. {"input_ids": (1, 128)}: a shape keeps the
               input's rank and fixed dims, and binds its named dims in every input.
    dims:      named dims (dim_param) to bind in every input, e.g. {"batch": 1,
               "sequence": 128}. Every input must be static after both; the caller's
               model is not changed (adreno_mlir.frontend.shapes).
    textures:  True puts NCHW4c activations in images wherever legal, False forces the
               buffer plan; None (default) uses images on GPU targets with image support.
    precision: "fp32"; "fp16-acc32" (fp16 storage in half images/buffers, fp32
               arithmetic; needs no cl_khr_fp16); or "fp16" (fp16 storage and half
               arithmetic in every NCHW4c kernel: `compute = "f16"` in each kernel_config;
               refused on a device without cl_khr_fp16).
    layout:    "nchw4c" (texture-level pipeline) or "nchw" (plain buffers, fp32 only);
               default nchw4c when textures or fp16 storage are used or the target is a
               CPU (NCHW4c buffers there: docs/bench/issue30/cpu-layout), else nchw.
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
    cost_model: learned defaults (adreno_mlir.tuning.cost_model): "auto" (default) the
               artifact shipped for the target profile (today the H200's; the rules where
               none is), an artifact's path, or None for the rules alone;
               select-kernel-config takes its choice for every kernel no tuning_db or
               overrides entry names (visible in `cm.pipeline` and the IR's kernel_config).
    plan:      a `CompilePlan` (adreno_mlir.plan.make_plan) instead of target, device,
               textures, precision, layout, work_group, tuning_db and overrides, which
               then stay at their defaults. Without it, those options make the plan
               (`cm.compile_plan`), checked once before any work is done.
    memory:    an `adreno_mlir.runtime.DeviceMemory` of the plan's device to share with other
               compiled models: weights of the same name and values are uploaded once, and
               state (a decoder's KV cache, `graph.state`) is one buffer for all of them
               (adreno_mlir.generation compiles a decoder's two programs so).
    tune_budget_s: tune first, for about this many seconds (adreno_mlir.tuning.tune: the
               search ordered by the cost model where one ships for the device, so a short
               budget goes to the kernels it predicts to gain most), into `tuning_db`
               (default: `tuning.db` in the cache's `tuning` folder, so that compiling again
               resumes the search rather than starts it over), then compile with that
               database. A progress bar on a terminal's stderr; `cm.tune_report` is the
               report. Needs an ONNX model (path or ModelProto), not an imported module.
    """
    from adreno_mlir.runtime import Executable
    from adreno_mlir.runtime.device import check_half_support
    from adreno_mlir.runtime.executor import ImageLimitError
    from adreno_mlir.runtime.native import resolve_runtime

    start = time.perf_counter()
    cache_dir(cache)  # a bad `cache` argument fails now, not after the lowering
    runtime = resolve_runtime(runtime)
    tune_report = None
    if tune_budget_s is not None:
        if plan is not None:
            raise CompileError("compile(tune_budget_s=...) makes its plan from target, device, textures, precision, "
                               "layout and work_group; with plan= tune first (adreno_mlir.tuning.tune) and give the "
                               "database to make_plan(tuning_db=...)")
        tuning_db, tune_report = _tune_first(model, tune_budget_s, tuning_db, device, input_shapes, dims,
                                             dict(target=target, textures=textures, precision=precision,
                                                  layout=layout, work_group=work_group), cost_model)
    if plan is None:
        plan = make_plan(target, device, textures=textures, precision=precision, layout=layout,
                         work_group=work_group, tuning_db=tuning_db, overrides=overrides, cost_model=cost_model)
    else:
        _check_plan_alone(plan, target=target, device=device, textures=textures, precision=precision, layout=layout,
                          work_group=work_group, tuning_db=tuning_db, overrides=overrides, cost_model=cost_model)
    context = plan.context()
    if plan.compute == "f16":
        check_half_support(context.devices[0])
    if plan.overrides_file and isinstance(pipeline, str):
        raise CompileError("tuning_db= and overrides= apply to the plan's pipeline; with your own pipeline string "
                           f'give select-kernel-config{{overrides="{plan.overrides_file}"}} in it (or pass pipeline '
                           "as a function that edits the default string)")
    # The caller's module is never changed; with textures a pristine copy is kept for
    # the buffer-plan fallback.
    t_import = time.perf_counter()
    if isinstance(model, ModuleOp) and (input_shapes or dims):
        raise CompileError("input_shapes= and dims= bind the dynamic dims of an ONNX model; an imported graph module "
                           "has static shapes already (bind them when importing: import_onnx(model, "
                           "input_shapes=..., dims=...))")
    if plan.storage == "f16" and calibration is not False and not isinstance(model, ModuleOp):
        from adreno_mlir.frontend import bind_input_shapes, load_model
        from adreno_mlir.range_guard import check_fp16_range

        # Loaded once, bound once (a copy only where something is bound): the guard and the import see the same shapes.
        model = bind_input_shapes(load_model(model), input_shapes, dims)
        input_shapes = dims = None
        check_fp16_range(model, calibration)
    if isinstance(model, ModuleOp):
        from adreno_mlir.weights import attach

        graph = model.clone()
        attach(graph, store_of(model).overlay())  # the compile's weights never land in the caller's store
    else:
        graph = import_onnx(model, input_shapes=input_shapes, dims=dims)
    timings = {"import": time.perf_counter() - t_import}
    in_shapes, out_shapes = io_shapes(graph)
    stage_ir: dict[str, str] = {"graph": module_to_text(graph)} if keep_ir else {}

    def keep(name: str, m: ModuleOp) -> None:
        stage_ir[name] = module_to_text(m)

    after_stage = keep if keep_ir else None
    module = graph.clone() if plan.textures else graph
    stages, source = lower(module, plan, after_stage=after_stage, pipeline=pipeline, passes=passes, timings=timings)

    def instantiate(module: ModuleOp, source: str) -> Executable:
        return Executable(module, source, store_of(module), context, cache=cache,
                          input_shapes=in_shapes, output_shapes=out_shapes, runtime=runtime, memory=memory)

    t_setup = time.perf_counter()
    try:
        executable = instantiate(module, source)
    except ImageLimitError:
        if not plan.textures:
            raise
        # The device cannot hold the texture plan's images: the buffer plan instead.
        module, plan = graph, plan.with_buffers()
        stages, source = lower(module, plan, after_stage=after_stage, pipeline=pipeline, passes=passes,
                               timings=timings)
        executable = instantiate(module, source)
    total = time.perf_counter() - start
    lowering = sum(st.seconds for st in stages if st.name == "opencl")
    timings.update(passes=sum(st.seconds for st in stages) - lowering, lowering=lowering,
                   program=executable.build_info.seconds,
                   setup=time.perf_counter() - t_setup - executable.build_info.seconds)
    timings["other"] = max(0.0, total - sum(timings.values()))
    timings = {k: timings[k] for k in ("import", "passes", "lowering", "print", "program", "setup", "other")}
    custom = pipeline is not None
    # state (a decoder's cache) is not fed: it stays on the device
    fed = {t.name for t in executable.plan.fed_inputs}
    in_shapes = {k: v for k, v in in_shapes.items() if k in fed}
    return CompiledModel(
        module=module, source=source, timings=timings,
        input_names=list(in_shapes), output_names=list(out_shapes),
        input_shapes=in_shapes, output_shapes=out_shapes,
        stages=stages, stage_ir=stage_ir, executable=executable,
        pipeline=",".join(st.pipeline for st in stages),
        compile_seconds=total,
        plan=plan.describe(custom), options=plan.record(custom), compile_plan=plan, tune_report=tune_report,
    )


def _tune_first(model, budget_s: float, tuning_db, device, input_shapes, dims, options: dict, cost_model):
    """compile(tune_budget_s=...): (the database, the report) of a tuning run on `model`."""
    import sys
    import tempfile

    from adreno_mlir.runtime.program_cache import cache_root
    from adreno_mlir.tuning.tuner import tune

    if not isinstance(budget_s, (int, float)) or isinstance(budget_s, bool) or budget_s <= 0:
        raise CompileError(f"compile(tune_budget_s={budget_s!r}): give a positive number of seconds")
    if isinstance(model, ModuleOp):
        raise CompileError("compile(tune_budget_s=...) tunes an ONNX model (a path or ModelProto): its workers import "
                           "it themselves; pass the .onnx file rather than the imported module")
    if tuning_db is None:
        root = cache_root("tuning")
        root.mkdir(parents=True, exist_ok=True)
        tuning_db = root / "tuning.db"
    interactive = sys.stderr.isatty()
    say = (lambda m: print(m, file=sys.stderr)) if interactive else None
    opts = {k: v for k, v in options.items() if v is not None}
    if isinstance(model, onnx.ModelProto):
        with tempfile.TemporaryDirectory(prefix="adreno-mlir-tune-model-") as tmp:
            path = str(Path(tmp) / "model.onnx")
            onnx.save(model, path)
            report = tune(path, str(tuning_db), device=device, compile_options=opts, trials=64, budget_s=budget_s,
                          progress=interactive, log=say, input_shapes=input_shapes, dims=dims,
                          cost_model=cost_model)
    else:
        report = tune(str(model), str(tuning_db), device=device, compile_options=opts, trials=64, budget_s=budget_s,
                      progress=interactive, log=say, input_shapes=input_shapes, dims=dims, cost_model=cost_model)
    return str(tuning_db), report


_PLAN_KEYWORDS = {"target": "auto", "device": None, "textures": None, "precision": "fp32", "layout": None,
                  "work_group": "driver", "tuning_db": None, "overrides": None,
                  "cost_model": "auto"}
"""compile()'s options that a `plan=` replaces, and their defaults."""


def _check_plan_alone(plan, **given) -> None:
    """`compile(plan=...)`: a CompilePlan, and none of the options it replaces."""
    if not isinstance(plan, CompilePlan):
        raise CompileError(f"invalid plan={plan!r}; pass a CompilePlan (adreno_mlir.plan.make_plan) or None")
    extra = [k for k, v in given.items()
             if not (v is None if _PLAN_KEYWORDS[k] is None else isinstance(v, str) and v == _PLAN_KEYWORDS[k])]
    if extra:
        raise CompileError(f"compile(plan=...) takes the plan's options from the plan; {', '.join(extra)} "
                           "given too (pass them to adreno_mlir.plan.make_plan instead)")
