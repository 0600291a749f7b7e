"""Named pipelines: the pass sequences `compile()` and the CLI run, stage by stage.

Each stage is an `adreno-opt -p` pipeline string, so any intermediate IR that
`adreno-mlir compile -o DIR` writes can be fed back to `adreno-opt` with the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

GRAPH_OPT = ("graph-opt", "graph-canonicalize,fold-batchnorm,graph-canonicalize")


def stages_for(layout: str, textures: bool, storage: str, target: str,
               work_group: tuple[int, ...] = (), gpu: bool = True) -> list[tuple[str, str]]:
    """The stage list of a compile: graph cleanups, then (for NCHW4c) the layout and
    memory-scope passes, then the lowering (with a preferred local size, if any; on CPUs
    without the GPU-occupancy schedules: smaller pixel blocks and split-K only cost there)."""
    options = []
    if work_group:
        options.append("work-group=" + ",".join(str(d) for d in work_group))
    if not gpu:
        options += ["min-work-items=0", "split-k-items=0"]
    lower = "convert-graph-to-opencl" + ("{" + " ".join(options) + "}" if options else "")
    if layout == "nchw":
        return [GRAPH_OPT, ("opencl", lower)]
    images = "true" if textures else "false"
    return [
        GRAPH_OPT,
        ("layout", f"convert-layout-nchw4c{{storage={storage}}}"),
        ("scope", f"annotate-texture-scope{{target={target} images={images}}}"),
        ("opencl", lower),
    ]



@dataclass
class StageResult:
    name: str
    pipeline: str
    seconds: float


def run_pipeline(ctx: Context, module: ModuleOp, spec: str) -> None:
    from adreno_mlir.universe import ADRENO_UNIVERSE

    available = dict(ADRENO_UNIVERSE.all_passes)
    from xdsl.transforms import get_all_passes

    for name, factory in get_all_passes().items():
        available.setdefault(name, factory)
    PassPipeline.parse_spec(available, spec).apply(ctx, module)


def run_stages(
    ctx: Context,
    module: ModuleOp,
    stages: list[tuple[str, str]],
    after_stage: Callable[[str, ModuleOp], None] | None = None,
) -> list[StageResult]:
    import time

    results = []
    for name, spec in stages:
        start = time.perf_counter()
        run_pipeline(ctx, module, spec)
        module.verify()
        results.append(StageResult(name, spec, time.perf_counter() - start))
        if after_stage is not None:
            after_stage(name, module)
    return results
