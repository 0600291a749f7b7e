"""Named pipelines: the pass sequences `compile()` and the CLI run, stage by stage
(a `CompilePlan`'s `stages()`, adreno_mlir.plan, are `stages_for` its options).

Each stage is an `adreno-opt -p` pipeline string, so any intermediate IR that
`adreno-mlir compile -o DIR` writes can be fed back to `adreno-opt` with the rest.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import VerifyException

from adreno_mlir.errors import CompileError

def graph_opt(target: str, kv_cache: str = "f32") -> tuple[str, str]:
    """Graph cleanups (the convolutions of a channel split joined by a concat merged
    before batch norms fold, so a batch norm after the concat folds into the merged one),
    then attention fusion (after canonicalize has folded the key
    transposes into the MatMuls' perms; before layout: graph.attention stays plain;
    `fuse-attention` fuses for GPU targets only, where it pays), and, with `kv_cache`
    "f16", a decoder's KV caches kept in halves (`kv-cache-storage`)."""
    return ("graph-opt", f"graph-canonicalize,merge-split-convs{{target={target}}},fold-batchnorm,graph-canonicalize,fuse-attention{{target={target}}},"
                         "fuse-rms-norm" + (f",kv-cache-storage{{element={kv_cache}}}" if kv_cache != "f32" else ""))


def stages_for(layout: str, textures: bool, storage: str, target: str,
               work_group: tuple[int, ...] = (), compute: str = "f32",
               overrides: str = "", *, profile=None, kv_cache: str = "f32",
               cost_model: str = "") -> list[tuple[str, str]]:
    """The stage list of a compile. Every decision is a pass of its own: graph cleanups,
    (NCHW4c) layout, Winograd, memory scopes, then fusion, per-kernel configs from the
    target profile, split-K, shared storage for concats (plan-memory) and the lowering.
    The NCHW plan runs the same passes; conv-winograd, split-k and plan-memory find
    nothing to do there (all three apply to NCHW4c tensors only). `compute` "f16"
    (precision fp16) has select-kernel-config give every NCHW4c kernel `compute = "f16"`;
    `overrides` names a JSON file of kernel configs for it (a tuning database's best
    entries, `compile(tuning_db=...)`), and conv-winograd and annotate-texture-scope read
    its per-node `winograd` and `scope` keys. `profile` is `target`'s TargetProfile where the
    caller has it (a `CompilePlan`'s, adreno_mlir.plan, which builds its stages here);
    else it is looked up by name. `cost_model` names a learned-defaults artifact
    (adreno_mlir.tuning.cost_model) select-kernel-config consults for kernels no override
    entry names."""
    config = f"select-kernel-config{{target={target}"
    if compute != "f32":
        config += f" compute={compute}"
    if work_group:
        config += " work-group=" + ",".join(str(d) for d in work_group)
    if overrides:
        config += f' overrides="{overrides}"'
    if cost_model:
        config += f' cost-model="{cost_model}"'
    config += "}"
    if profile is None:
        from adreno_mlir.target import get_profile

        profile = get_profile(target)
    # PoCL vectorizes a * b + c but not fma() (TargetProfile.split_fma, lowering/opencl_printer.py).
    lowering = "convert-graph-to-opencl" + ("{fma=contract}" if profile.split_fma else "")
    tail = [
        ("fuse", "graph-fuse"),
        ("config", config),
        ("split-k", "split-k"),
        ("memory", "plan-memory"),
        ("opencl", lowering),
    ]
    # The overrides file's `loc:NODE` entries may also say `winograd` and `scope`: per-node
    # choices conv-winograd and annotate-texture-scope read (the option only with a file, so
    # the default pipeline strings stay as they were; `images=` stays last, where
    # bench/bench.py's texture-rows plan appends `mapping=`).
    per_node = f' overrides="{overrides}"' if overrides else ""
    winograd = ("winograd", f"conv-winograd{{target={target}{per_node}}}")
    if layout == "nchw":
        return [graph_opt(target, kv_cache), winograd, *tail]
    images = "true" if textures else "false"
    return [
        graph_opt(target, kv_cache),
        ("layout", f"convert-layout-nchw4c{{storage={storage}}}"),
        winograd,
        ("scope", f"annotate-texture-scope{{target={target}{per_node} images={images}}}"),
        tail[0],
        ("pool-partials", f"fuse-pool-partials{{target={target}}}"),
        ("channel-scale", "fuse-channel-scale"),
        ("depthwise-load", f"fuse-depthwise-load{{target={target}}}"),
        *tail[1:],
    ]


def pipeline_string(stages: list[tuple[str, str]]) -> str:
    """The whole pipeline as one `adreno-opt -p` string."""
    return ",".join(spec for _, spec in stages)


def split_pipeline(spec: str) -> list[str]:
    """The top-level passes of a pipeline string (commas inside `{...}` options stay)."""
    parts, depth, cur = [], 0, ""
    for ch in spec:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def stages_of_pipeline(spec: str) -> list[tuple[str, str]]:
    """A user's pipeline string as stages, one per pass (named after the pass)."""
    stages, seen = [], {}
    for entry in split_pipeline(spec):
        name = entry.split("{", 1)[0].strip()
        seen[name] = seen.get(name, 0) + 1
        stages.append((name if seen[name] == 1 else f"{name}-{seen[name]}", entry))
    return stages


@dataclass
class StageResult:
    name: str
    pipeline: str
    seconds: float


@functools.cache
def _installed_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Ours, those of every installed `xdsl.universe` plugin, and xDSL's (looked up once:
    reading the entry points costs ~2 ms, and a compile runs nine stages)."""
    from xdsl.transforms import get_all_passes
    from xdsl.universe import Universe

    from adreno_mlir.universe import ADRENO_UNIVERSE

    available = dict(ADRENO_UNIVERSE.all_passes)
    try:
        plugins = Universe.get_multiverse().all_passes
    except Exception:  # noqa: BLE001 - a broken third-party plugin must not break compiles
        plugins = {}
    for source in (plugins, get_all_passes()):
        for name, factory in source.items():
            available.setdefault(name, factory)
    return available


def available_passes(extra: Sequence[type[ModulePass]] = ()) -> dict[str, Callable[[], type[ModulePass]]]:
    """Passes a pipeline string may name: `extra` (a caller's own pass classes) first,
    then the installed ones."""
    available: dict[str, Callable[[], type[ModulePass]]] = {}
    for cls in extra:
        if not (isinstance(cls, type) and issubclass(cls, ModulePass)):
            raise CompileError(f"passes= takes ModulePass subclasses, got {cls!r}")
        available[cls.name] = (lambda c: lambda: c)(cls)
    for name, factory in _installed_passes().items():
        available.setdefault(name, factory)
    return available


def build_pipeline(spec: str, extra: Sequence[type[ModulePass]] = ()) -> PassPipeline:
    """The passes of pipeline string `spec` (ours, installed ones and `extra`), every pass
    name and option checked: a bad one is a `PassOptionError` (a CompileError) naming the
    pass, the option and the values it takes (adreno_mlir.pass_options)."""
    from adreno_mlir.pass_options import parse_passes

    hint = (f" in pipeline '{spec}'; pass your own ModulePass classes with passes=[...] or register them through "
            "the xdsl.universe entry point")
    return PassPipeline(tuple(parse_passes(available_passes(extra), spec, unknown_pass_hint=hint)))


def run_pipeline(ctx: Context, module: ModuleOp, spec: str, extra: Sequence[type[ModulePass]] = ()) -> None:
    build_pipeline(spec, extra).apply(ctx, module)


def _verify_all() -> bool:
    """`ADRENO_MLIR_VERIFY=all` verifies everything after every stage (the test suite sets it)."""
    return os.environ.get("ADRENO_MLIR_VERIFY", "").lower() in ("1", "all", "true")


def verify_lowered(module: ModuleOp) -> None:
    """Verify a lowered module except the bodies of its kernels.

    Kernel bodies come straight from the kernel builder, which verifies every op as it
    builds it (`lowering/kernel_builder.py`; a copy of an op template through its
    template, which has the same kind, attributes and types); verifying whole kernels
    again costs more than building them (about 1 s of MobileNetV2's compile). They are verified whenever
    the IR is kept or written, after every pass of a custom pipeline, when
    `ADRENO_MLIR_VERIFY=all` (the test suite), and by `adreno-opt` on any IR it reads."""
    from adreno_mlir.dialects import opencl

    module.verify(verify_nested_ops=False)
    for op in module.body.block.ops:
        op.verify(verify_nested_ops=not isinstance(op, opencl.KernelOp))


def run_stages(
    ctx: Context,
    module: ModuleOp,
    stages: list[tuple[str, str]],
    after_stage: Callable[[str, ModuleOp], None] | None = None,
    extra: Sequence[type[ModulePass]] = (),
    verify_each: bool = False,
) -> list[StageResult]:
    """Run `stages` in order. The IR is verified after every stage when `verify_each`
    (a caller's own pipeline: its passes may be anyone's) or when the stage's IR is
    handed to `after_stage` (written out or kept); else before the lowering and after
    the last stage: our small graph-level passes cost less to run than to verify after
    each (10 ms a stage on MobileNetV2), and a broken graph is still caught before it
    is lowered."""
    import time

    # Every stage's passes are made (and their options checked) before the first one runs.
    pipelines = [build_pipeline(spec, extra) for _, spec in stages]
    results = []
    for i, ((name, spec), pipeline) in enumerate(zip(stages, pipelines)):
        start = time.perf_counter()
        pipeline.apply(ctx, module)
        last = i == len(stages) - 1
        try:
            if last and not (verify_each or after_stage is not None or _verify_all()):
                verify_lowered(module)
            elif verify_each or after_stage is not None or last or "convert-graph-to-opencl" in stages[i + 1][1]:
                module.verify()
        except VerifyException as e:  # the op's message (with its location) first, the marked IR as a note
            message, _, ir = str(e).partition("\n")
            error = CompileError(f"the IR after stage '{name}' ({spec}) does not verify: {message}")
            if ir:
                error.add_note(ir)
            raise error from None
        results.append(StageResult(name, spec, time.perf_counter() - start))
        if after_stage is not None:
            after_stage(name, module)
    return results
