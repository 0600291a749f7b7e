"""Where one inference's device time goes, per ONNX node: `adreno-mlir profile`.

Why: `analyze` says what each kernel should cost and `tune` what each kernel signature
can gain; a profile says what each kernel costs now, on this device, keyed the same way
(by the ONNX node whose location the kernel carries), so the three tables join.

The measurement (docs/profile.md):

* `repeat` inferences on a profiling queue after `warmup` untimed ones (pyopencl path:
  the same kernels and launch order as the native runtime); every launch's
  CL_PROFILING_COMMAND_START/END from its event.
* Per launch the median over the runs; per node the sum of its launches' medians (a
  split-K convolution is two launches, a node whose layout conversion the passes inserted
  has none: conversions are rows of their own, `<kernel name>`).
* Achieved GFLOP/s and GB/s divide `analyze`'s FLOPs and compulsory bytes of the node's
  kernel by the measured time; `est us` is analyze's roofline estimate for the same
  kernel on the compile's target profile, `x est` the measured time over it.
* The trace is the inference (of the `repeat`) whose first-start-to-last-end span is the
  median one, with the events' own timestamps relative to its first start: gaps between
  kernels are the device's idle time, not an artifact of summing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adreno_mlir.errors import CompileError
from adreno_mlir.runtime.plan import row_key

__all__ = ["LaunchTiming", "NodeRow", "Profile", "format_table", "plot_profile", "profile_model", "write_trace"]

LAYOUT_FAMILY = "layout"
"""The family of launches without a node (layout conversions the passes inserted)."""


@dataclass(frozen=True)
class LaunchTiming:
    """One launch of the plan: its median device time and its place in the traced run."""

    index: int
    kernel: str
    node: str
    """The ONNX node (Launch.node), "" for a launch the compiler inserted."""
    median_ms: float
    start_us: float
    """Start in the traced inference, relative to its first launch's start."""
    duration_us: float
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None


@dataclass
class NodeRow:
    """The launches of one ONNX node (or of one inserted kernel), with analyze's figures."""

    node: str
    """The ONNX node name, or `<kernel name>` for launches without one."""
    family: str
    """The kernel family (analyze's `kind`: conv4c, gemm, ...), `layout` for inserted kernels."""
    kernels: list[str]
    launches: int
    device_ms: float
    share: float
    """device_ms over the model's total (0..1)."""
    nodes: list[str] = field(default_factory=list)
    """Every ONNX node the kernel computes (a fused region's head and tail), from analyze."""
    flops: int | None = None
    bytes: int | None = None
    estimate_us: float | None = None
    bound: str | None = None

    @property
    def gflops_per_s(self) -> float | None:
        return None if self.flops is None or self.device_ms <= 0 else self.flops / (self.device_ms * 1e6)

    @property
    def gb_per_s(self) -> float | None:
        return None if self.bytes is None or self.device_ms <= 0 else self.bytes / (self.device_ms * 1e6)

    @property
    def versus_estimate(self) -> float | None:
        """Measured time over analyze's estimate (1 = at the roofline)."""
        return None if not self.estimate_us else self.device_ms * 1000 / self.estimate_us


@dataclass
class Profile:
    """`profile_model`'s result."""

    model: str
    device: str
    plan: str
    repeat: int
    launches: list[LaunchTiming]
    rows: list[NodeRow]
    """Per node, longest first."""
    span_ms: float
    """First start to last end of the traced (median-span) inference."""
    target: str = ""
    estimates: str = ""
    """Why the roofline columns are empty ("" when they are filled)."""

    @property
    def total_ms(self) -> float:
        """The sum over launches of their median device time."""
        return sum(t.median_ms for t in self.launches)

    def by_node(self) -> dict[str, float]:
        """{node: device ms}, as the rows have it."""
        return {r.node: r.device_ms for r in self.rows}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "adreno-mlir-profile/1", "model": self.model, "device": self.device, "plan": self.plan,
            "target": self.target, "repeat": self.repeat, "total_device_ms": self.total_ms,
            "span_ms": self.span_ms, "estimates": self.estimates or "analyze's roofline on the target profile",
            "nodes": [{**asdict(r), "gflops_per_s": r.gflops_per_s, "gb_per_s": r.gb_per_s,
                       "versus_estimate": r.versus_estimate} for r in self.rows],
            "launches": [{**asdict(t), "global_size": list(t.global_size),
                          "local_size": None if t.local_size is None else list(t.local_size)}
                         for t in self.launches],
        }

    def trace(self) -> dict[str, Any]:
        """The traced inference as Chrome trace-event JSON (chrome://tracing, Perfetto):
        one complete ("X") event per launch, named by its node, its family as category."""
        family = {}
        for r in self.rows:
            family[r.node] = r.family
        events: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": f"{self.device}"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "OpenCL queue"}},
        ]
        for t in self.launches:
            key = row_key(t.node, t.kernel)
            events.append({
                "name": key, "cat": family.get(key, LAYOUT_FAMILY), "ph": "X", "pid": 1, "tid": 1,
                "ts": round(t.start_us, 3), "dur": round(t.duration_us, 3),
                "args": {"kernel": t.kernel, "launch": t.index, "node": t.node,
                         "global": list(t.global_size),
                         "local": None if t.local_size is None else list(t.local_size)}})
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"model": self.model, "device": self.device, "plan": self.plan,
                              "span_ms": self.span_ms}}


# --------------------------------------------------------------------------- measuring


def profile_model(model, feeds: Mapping[str, np.ndarray], *, repeat: int = 10, warmup: int = 2,
                  analysis=None, name: str = "") -> Profile:
    """Profile a compiled or loaded model (`adreno_mlir.compile`/`load`) on `feeds`.

    analysis: `adreno_mlir.analyze.analyze_model`'s result for the same model and plan
    (its FLOPs, bytes and estimates fill the roofline columns), a string saying why there
    is none (e.g. "an artifact has no graph IR"), or None."""
    if repeat < 1 or warmup < 0:
        raise CompileError(f"profile: repeat must be >= 1 and warmup >= 0 (got {repeat}, {warmup})")
    ex = model.executable
    plan = ex.plan
    inputs = model._check_inputs(feeds)
    if not plan.launches:
        raise CompileError("profile: the model has no kernel launches (its outputs are constants)")
    starts, ends = ex.profile_events(inputs, repeat, warmup)
    durations = (ends - starts) / 1e3  # us
    medians = np.median(durations, axis=0) / 1e3  # ms
    spans = ends.max(axis=1) - starts.min(axis=1)
    traced = int(np.argsort(spans)[len(spans) // 2])
    origin = starts[traced].min()
    launches = [LaunchTiming(i, l.kernel, l.node, float(medians[i]), float((starts[traced, i] - origin) / 1e3),
                             float(durations[traced, i]), tuple(l.global_size), l.local_size)
                for i, l in enumerate(plan.launches)]
    costs: dict[str, list] = {}
    why = ""
    if analysis is None:
        why = "no analysis given"
    elif isinstance(analysis, str):
        why = analysis
    else:
        for c in analysis.costs:
            costs.setdefault(c.name, []).append(c)
    total = sum(t.median_ms for t in launches) or 1.0
    rows: dict[str, NodeRow] = {}
    for t in launches:
        key = row_key(t.node, t.kernel)
        row = rows.get(key)
        if row is None:
            cs = costs.get(t.node, []) if t.node else []
            row = rows[key] = NodeRow(
                node=key, family=cs[0].kind if cs else (LAYOUT_FAMILY if not t.node else _family_of_kernel(t.kernel)),
                kernels=[], launches=0, device_ms=0.0, share=0.0,
                nodes=list(dict.fromkeys(n for c in cs for n in c.nodes)) or ([t.node] if t.node else []),
                flops=sum(c.flops for c in cs) if cs else None,
                bytes=sum(c.total_bytes for c in cs) if cs else None,
                estimate_us=sum(c.estimate_us for c in cs) if cs else None,
                bound=cs[0].bound if cs else None)
        if t.kernel not in row.kernels:
            row.kernels.append(t.kernel)
        row.launches += 1
        row.device_ms += t.median_ms
    for row in rows.values():
        row.share = row.device_ms / total
    target = ""
    if analysis is not None and not isinstance(analysis, str):
        target = analysis.profile.name
    return Profile(model=name, device=model.device_name, plan=model.plan, repeat=repeat, launches=launches,
                   rows=sorted(rows.values(), key=lambda r: -r.device_ms),
                   span_ms=float(spans[traced]) / 1e6, target=target, estimates=why)


def _family_of_kernel(kernel: str) -> str:
    """A family name for a launch analyze did not see: its kernel name's stem."""
    return kernel.split("_", 1)[0]


# --------------------------------------------------------------------------- output


def format_table(profile: Profile, top: int | None = None) -> list[str]:
    """The table lines: nodes by device time (longest first), then the totals."""
    from adreno_mlir.printing import cut_name

    shown = profile.rows[:top] if top else profile.rows
    width = min(44, max([len("node")] + [len(r.node) for r in shown]))
    fam_w = min(12, max([len("family")] + [len(r.family) for r in shown]))

    def num(v: float | None, spec: str, w: int) -> str:
        return f"{v:{w}{spec}}" if v is not None else f"{'-':>{w}}"

    lines = [f"{'node':<{width}}  {'family':<{fam_w}}  {'launch':>6}  {'device ms':>9}  {'share':>6}  "
             f"{'GFLOP/s':>8}  {'GB/s':>7}  {'est us':>8}  {'x est':>6}  bound"]
    for r in shown:
        lines.append(f"{cut_name(r.node, width):<{width}}  {cut_name(r.family, fam_w):<{fam_w}}  {r.launches:6d}  "
                     f"{r.device_ms:9.4f}  {100 * r.share:5.1f}%  {num(r.gflops_per_s, '.1f', 8)}  "
                     f"{num(r.gb_per_s, '.1f', 7)}  {num(r.estimate_us, '.2f', 8)}  "
                     f"{num(r.versus_estimate, '.2f', 6)}  {r.bound or '-'}")
    if top and len(profile.rows) > top:
        rest = profile.rows[top:]
        lines.append(f"... {len(rest)} more rows (--top {top}): {sum(r.device_ms for r in rest):.4f} ms, "
                     f"{100 * sum(r.share for r in rest):.1f}%")
    families: dict[str, float] = {}
    for r in profile.rows:
        families[r.family] = families.get(r.family, 0.0) + r.device_ms
    lines.append(f"total: {len(profile.launches)} launches, {profile.total_ms:.4f} ms device time (sum of the "
                 f"per-launch medians over {profile.repeat} runs); first start to last end {profile.span_ms:.4f} ms")
    lines.append("by family: " + ", ".join(f"{f} {ms:.3f} ms ({100 * ms / max(profile.total_ms, 1e-12):.0f}%)"
                                           for f, ms in sorted(families.items(), key=lambda kv: -kv[1])))
    if profile.estimates:
        lines.append(f"no roofline columns: {profile.estimates}")
    else:
        lines.append(f"est us / bound: adreno-mlir analyze's roofline on target {profile.target}; "
                     "GFLOP/s and GB/s: its FLOPs and bytes over the measured time")
    return lines


def write_trace(profile: Profile, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(profile.trace(), indent=0) + "\n")
    return path


def require_matplotlib():
    """matplotlib.pyplot on the Agg backend, or a CompileError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise CompileError("--plot needs matplotlib, which is not installed: pip install 'adreno-mlir[plot]' "
                           "(or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_profile(profile: Profile, path: str | Path, top: int = 20) -> Path:
    """A horizontal bar plot of the `top` longest nodes, coloured by family, as PNG."""
    plt = require_matplotlib()
    from adreno_mlir.printing import cut_name

    rows = profile.rows[:top][::-1]
    families = list(dict.fromkeys(r.family for r in profile.rows))
    cmap = plt.get_cmap("tab10" if len(families) <= 10 else "tab20")
    colour = {f: cmap(i % cmap.N) for i, f in enumerate(families)}
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.6))
    ax.barh(range(len(rows)), [r.device_ms for r in rows], color=[colour[r.family] for r in rows])
    ax.set_yticks(range(len(rows)), [cut_name(r.node, 48) for r in rows], fontsize=7)
    ax.set_xlabel("device time per inference (ms, median)")
    device = profile.device.split(" (", 1)[0]  # the name, without the driver's version string
    ax.set_title(f"{profile.model}: {profile.total_ms:.3f} ms on {device}\n{profile.plan}", fontsize=9)
    shown = list(dict.fromkeys(r.family for r in rows[::-1]))
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colour[f]) for f in shown], labels=shown, fontsize=7,
              loc="lower right", title="family", title_fontsize=7)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
