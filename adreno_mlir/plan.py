"""The compile plan: every compile option, checked and resolved once.

`make_plan` turns the user's options (`compile()`'s keywords, the CLI's flags, `analyze`'s,
a tuning job's) into one frozen `CompilePlan`: layout, textures, precision, the target
profile (its name and the resolved `TargetProfile`), the work-group policy, the kernel-config
overrides file and the tuning database. Everything downstream derives from the plan and
nothing re-checks an option:

    plan = make_plan("adreno-740", precision="fp16-acc32")
    plan.stages()                  # the pipeline stages (adreno-opt -p strings)
    plan.describe(), plan.record()  # CompiledModel.plan / .options, an artifact's manifest
    adreno_mlir.compile("model.onnx", plan=plan)
    adreno_mlir.api.lower(module, plan)

A bad option is a `CompileError` naming the parameter, the value and the choices
(adreno_mlir.options), raised before any work is done. The device is touched only where
an option needs it: `target="auto"` (the device's own profile, named
`device-<device name>`) and `tuning_db=` (its entries are per device).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adreno_mlir.errors import CompileError
from adreno_mlir.target import TargetProfile

__all__ = ["CompilePlan", "PipelineArg", "make_plan"]

PipelineArg = str | Callable[[str], str] | None
"""A pipeline for `compile(pipeline=...)`: an `adreno-opt -p` string, or a function
that takes the default pipeline string of the plan and returns the one to run."""


@dataclass(frozen=True)
class CompilePlan:
    """The resolved options of one compile (build it with `make_plan`)."""

    layout: str
    """"nchw" (plain fp32 buffers) or "nchw4c" (the texture-level pipeline)."""
    textures: bool
    """NCHW4c activations in images wherever legal."""
    precision: str
    """"fp32", "fp16-acc32" or "fp16" (adreno_mlir.options.Precision)."""
    target: str
    """The target profile's name, as the passes' `target=` options name it (`auto` is
    resolved to the device's `device-<device name>`, which replays under adreno-opt)."""
    profile: TargetProfile
    """The resolved profile of `target`."""
    work_group: str | tuple[int, ...] = "driver"
    """The work-group policy: "driver", "auto" (the profile's preferred size on GPUs) or
    a preferred local size."""
    device: str | None = None
    """The OpenCL device spec the plan was resolved for (as `compile(device=...)`)."""
    tuning_db: str | None = None
    """The tuning database whose best entries are in `overrides_file` (None: none)."""
    overrides_source: str = ""
    """What the user gave as overrides, in words for messages: the file, "the overrides
    dict", or "" for none."""
    overrides_file: str = ""
    """The merged JSON file select-kernel-config reads (tuning database entries, then the
    overrides; adreno_mlir.tuning.overrides_file_for), "" for none."""
    kv_cache: str = "f32"
    """The storage of a decoder's KV caches: "f32", or "f16" (the `kv-cache-storage` pass
    keeps them in halves; passes/kv_cache_storage.py). Nothing else reads it."""
    cost_model: str = ""
    """The learned-defaults artifact select-kernel-config consults where no override entry
    names a kernel (adreno_mlir.tuning.cost_model; "" for the rules alone)."""

    # ------------------------------------------------------------------ derived options

    @property
    def storage(self) -> str:
        """The element type of stored activations (convert-layout-nchw4c's `storage=`)."""
        from adreno_mlir.options import Precision

        return Precision(self.precision).storage

    @property
    def compute(self) -> str:
        """The arithmetic of NCHW4c kernels (select-kernel-config's `compute=`)."""
        from adreno_mlir.options import Precision

        return Precision(self.precision).compute

    @property
    def local_size(self) -> tuple[int, ...]:
        """The preferred local size select-kernel-config writes (`()`: the driver's choice)."""
        if self.work_group == "driver":
            return ()
        if self.work_group == "auto":
            return tuple(self.profile.preferred_work_group_size) if self.profile.is_gpu else ()
        return tuple(self.work_group)

    def context(self):
        """The OpenCL context of the plan's device (adreno_mlir.runtime.default_context)."""
        from adreno_mlir.runtime import default_context

        return default_context(self.device)

    # ------------------------------------------------------------------ the pipeline

    def stages(self, until: str | None = None) -> list[tuple[str, str]]:
        """The plan's stages, (name, `adreno-opt -p` string) each (adreno_mlir.pipeline.
        stages_for); with `until`, those up to and including the stage of that name."""
        from adreno_mlir.pipeline import stages_for

        stages = stages_for(self.layout, self.textures, self.storage, self.target, self.local_size, self.compute,
                            self.overrides_file, profile=self.profile, kv_cache=self.kv_cache,
                            cost_model=self.cost_model)
        if until is None:
            return stages
        names = [n for n, _ in stages]
        return stages[: names.index(until) + 1]

    def pipeline_string(self) -> str:
        """The plan's whole pipeline as one `adreno-opt -p` string."""
        from adreno_mlir.pipeline import pipeline_string

        return pipeline_string(self.stages())

    def pipeline_stages(self, pipeline: PipelineArg = None) -> list[tuple[str, str]]:
        """The stages a compile runs: the plan's, or a caller's `pipeline` (a string, or a
        function of the plan's string) as one stage per pass."""
        from adreno_mlir.pipeline import pipeline_string, stages_of_pipeline

        stages = self.stages()
        if pipeline is None:
            return stages
        spec = pipeline(pipeline_string(stages)) if callable(pipeline) else pipeline
        if not isinstance(spec, str) or not spec.strip():
            raise CompileError(f"pipeline must be a non-empty pass pipeline string (or a function returning one), "
                               f"got {spec!r}")
        return stages_of_pipeline(spec)

    # ------------------------------------------------------------------ variants

    def with_buffers(self) -> CompilePlan:
        """The same plan with every activation in a global buffer (compile()'s fallback
        when the device cannot hold the texture plan's images)."""
        return dataclasses.replace(self, textures=False)

    def with_overrides(self, overrides: str | Path | dict | None) -> CompilePlan:
        """The same plan with these kernel-config overrides (a JSON file or a dict)
        instead of its own, merged after its tuning database's entries (the tuner
        measures each configuration this way)."""
        source, merged = _overrides(self.device, self.tuning_db, overrides)
        return dataclasses.replace(self, overrides_source=source, overrides_file=merged)

    # ------------------------------------------------------------------ records

    def describe(self, custom_pipeline: bool = False) -> str:
        """The one-line description of the plan (`CompiledModel.plan`, an artifact's
        `plan`, `analyze`'s header)."""
        return (f"layout {self.layout}, {'textures' if self.textures else 'buffers'}, {self.precision}, "
                f"target {self.target}" + (", f16 KV cache" if self.kv_cache == "f16" else "")
                + (", learned defaults" if self.cost_model else "")
                + (" (custom pipeline: see .pipeline)" if custom_pipeline else ""))

    def record(self, custom_pipeline: bool = False) -> dict:
        """The resolved options as plain JSON values (`CompiledModel.options`, an
        artifact's manifest `options`, docs/artifact.md)."""
        return ({"layout": self.layout, "textures": bool(self.textures), "precision": str(self.precision),
                 "storage": self.storage, "target": self.target,
                 "work_group": str(self.work_group) if isinstance(self.work_group, str) else list(self.work_group),
                 "custom_pipeline": bool(custom_pipeline)}
                | ({"kv_cache": self.kv_cache} if self.kv_cache != "f32" else {})
                | ({"cost_model": Path(self.cost_model).name} if self.cost_model else {}))

    def config_source_names(self) -> tuple[str, str]:
        """(merged file, what the user gave) for messages that name the file
        select-kernel-config read (("", "") without overrides)."""
        if not self.overrides_file:
            return "", ""
        given = [self.overrides_source] if self.overrides_source else []
        given += [f"tuning database {self.tuning_db}"] if self.tuning_db is not None else []
        return self.overrides_file, f"{' and '.join(given)} (merged into {self.overrides_file})"


def _device_of(device: str | None):
    from adreno_mlir.runtime import default_context

    return default_context(device).devices[0]  # cached per device spec


def _overrides(device: str | None, tuning_db: str | None, overrides: Any) -> tuple[str, str]:
    """(overrides_source, overrides_file) of a plan."""
    if tuning_db is None and overrides is None:
        return "", ""
    from adreno_mlir.tuning import overrides_file_for

    source = "" if overrides is None else str(overrides) if isinstance(overrides, (str, Path)) else "the overrides dict"
    # the device only matters for the tuning database's entries (they are per device)
    merged = overrides_file_for(_device_of(device) if tuning_db is not None else None, tuning_db, overrides)
    return source, merged


def make_plan(
    target: str = "auto",
    device: str | None = None,
    *,
    textures: bool | None = None,
    precision: str = "fp32",
    layout: str | None = None,
    work_group: str | tuple[int, ...] = "driver",
    tuning_db: str | Path | None = None,
    overrides: str | Path | dict | None = None,
    kv_cache: str | None = None,
    cost_model: str | Path | None = "auto",
) -> CompilePlan:
    """The plan of a compile with these options (`compile()`'s, which documents them).

    Every option is checked (type and value) before the device is touched; a bad one is a
    `CompileError` naming the parameter, the value and the choices (adreno_mlir.options).
    Defaults are resolved here: `textures=None` is images on GPU targets with image
    support, `layout=None` nchw4c with textures, fp16 storage or on CPUs (else nchw), `kv_cache=None`
    (a decoder's KV cache storage, "f32" or "f16") f32 (compile_decoder asks for f16 with fp16
    storage). `cost_model`: "auto" (default: the learned-defaults artifact shipped
    for the target profile, adreno_mlir.tuning.cost_model.shipped_for; none: the rules), an
    artifact's path, or None / "" (the rules alone)."""
    from adreno_mlir.options import (
        Layout,
        Precision,
        WorkGroup,
        check_device,
        check_layout,
        check_precision,
        check_target,
        check_textures,
        check_work_group,
    )
    from adreno_mlir.target import get_profile, live_profile

    work_group = check_work_group(work_group)
    target = check_target(target)
    device = check_device(device)
    textures = check_textures(textures)
    checked = check_precision(precision)
    layout = check_layout(layout)
    if target == "auto":
        # The live device's name, `device-<device name>`, which `get_profile` (and so the
        # passes, and adreno-opt replaying the pipeline on this machine) resolves from the
        # device itself; nothing is registered, so compiling never grows the registry.
        profile = live_profile(_device_of(device))
    else:
        try:
            profile = get_profile(target)
        except ValueError as e:
            raise CompileError(str(e)) from None
    target_name = profile.name if target == "auto" else target
    if checked == Precision.FP16 and not profile.supports_fp16:
        raise CompileError(f"precision='fp16' computes in half, which target profile '{target_name}' does not support "
                           "(no cl_khr_fp16); use precision='fp16-acc32' (fp16 storage, fp32 arithmetic) or a target "
                           "with half arithmetic (adreno-*)")
    if textures is None:
        textures = profile.is_gpu and profile.supports_images
    if layout is None:
        # CPUs too: NCHW4c buffers beat the NCHW plan on every one of the ten shared CNNs on
        # PoCL (1.2-2.1x, Winograd F(4,3) among the reasons; docs/bench/issue30/cpu-layout)
        # and on three of four on Intel's CPU runtime; transformers are even.
        layout = Layout.NCHW4C if textures or checked != Precision.FP32 or not profile.is_gpu else Layout.NCHW
    if layout == Layout.NCHW and (textures or checked != Precision.FP32):
        needs = [f"textures={textures!r}"] if textures else []
        needs += [f"precision={checked.value!r}"] if checked != Precision.FP32 else []
        raise CompileError(f"layout='nchw' is the fp32 buffer path: {' and '.join(needs)} need "
                           "layout='nchw4c' (or leave layout=None)")
    if kv_cache is None:
        kv_cache = "f32"
    if kv_cache not in ("f32", "f16"):
        raise CompileError(f"kv_cache must be 'f32' or 'f16' (the storage of a decoder's KV cache), got {kv_cache!r}")
    tuning_db = None if tuning_db is None else str(tuning_db)
    source, merged = _overrides(device, tuning_db, overrides)
    if cost_model == "auto":
        from adreno_mlir.tuning.cost_model import shipped_for

        cost_model = shipped_for(profile)
    elif cost_model:
        cost_model = str(Path(cost_model).resolve())
        if not Path(cost_model).is_file():
            raise CompileError(f"cost_model: {cost_model} does not exist (a learned-defaults artifact: "
                               "python -m adreno_mlir.tuning.cost_model train ... --out FILE)")
    return CompilePlan(
        layout=layout.value, textures=bool(textures), precision=checked.value, target=target_name, profile=profile,
        work_group=work_group.value if isinstance(work_group, WorkGroup) else work_group,
        device=device, tuning_db=tuning_db, overrides_source=source, overrides_file=merged, kv_cache=kv_cache,
        cost_model=cost_model or "")
