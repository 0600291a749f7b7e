"""Measuring kernel configurations on one OpenCL device, in a process of its own.

The tuner never builds or runs a candidate in its own process: a configuration that
hangs the device or crashes the driver must cost one measurement, not the tuning run.
`DeviceWorker` owns a child process (multiprocessing, spawn) that imports the model
once and then answers requests: compile the model with a set of kernel configurations
(select-kernel-config overrides keyed by kernel signature), check every output against
the default configuration's outputs on the same seeded random inputs, and time every
launch with OpenCL events (warm-up, then `repeat` runs). A request that does not answer
within the timeout kills the child (a hang); a child that dies is a crash. Either way
the next request starts a fresh child.

Launch times are attributed to kernel signatures through the launches' locations (the
ONNX node of each kernel): every launch of a node (a split-K convolution's partial and
summing kernels, a Winograd convolution's transforms) counts towards the tunable kernel
of that node, so a configuration pays for the extra kernels it causes.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Job:
    """What a worker measures: a model, how it is compiled, and how it is timed."""

    model: str | bytes
    """Path of the .onnx file (or its bytes, for workers on other hosts)."""
    device: str | None = None
    """The OpenCL device (as `compile(device=...)`)."""
    compile_options: dict = field(default_factory=dict)
    """target, textures, precision, layout, work_group (as `compile`): the worker makes
    its `CompilePlan` of them once (adreno_mlir.plan.make_plan, on its own device)."""
    repeat: int = 10
    warmup: int = 2
    rtol: float = 1e-4
    """Largest error allowed against the default's outputs, relative to their largest
    magnitude (fp16 storage needs more: the tuner passes 2e-2)."""
    seed: int = 0
    fault_hook: str = ""
    """`module:function` called in the worker with each request's overrides, returning
    None or a fault to act out ("hang", "crash", "wrong", "build"): how the tests make a
    candidate fail in each way without a broken device."""
    input_shapes: dict | None = None
    dims: dict | None = None
    """Static sizes for the model's dynamic input dims (as `compile(input_shapes=, dims=)`)."""
    decoder: tuple[str, int, int] | None = None
    """(program, max_context, prefill_chunk): tune one generation program of an
    onnxruntime-genai decoder ("decode" or "prefill", adreno_mlir/frontend/decoder.py)."""


@dataclass
class Result:
    """The answer to one request."""

    status: str
    """"ok", or why it failed: compile_error, build_error, wrong_output, timeout, crash."""
    times: dict[str, list[float]] = field(default_factory=dict)
    """Per kernel signature, its device ms in every run (its launches summed)."""
    total: list[float] = field(default_factory=list)
    """The model's device ms (every launch) in every run."""
    default_times: dict[str, list[float]] = field(default_factory=dict)
    """The same for the default configuration, run alternately with this one (a load on
    the machine that comes and goes moves both alike: compare the two)."""
    default_total: list[float] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    worker: str = ""


@dataclass
class Setup:
    """What a worker reports when it starts: the device and the model's kernels."""

    device_key: Any
    spaces: list
    baseline: Result
    seconds: float
    profile: str = ""
    """The name of the target profile the worker's plan compiles for (which shipped cost
    model orders the search: adreno_mlir.tuning.cost_model.shipped_for)."""
    node_spaces: list = field(default_factory=list)
    """Per-node choices to search (`space.node_space`): each Winograd-eligible conv's tile.
    Their times (`Result.times` under the space's key) are the node's launches, summed."""


def _scratch_dir() -> str:
    """A new folder `cache_root("tune")/<this pid>-<random>`, after removing the folders of
    tuner processes that no longer run (a tuner killed before its `close`)."""
    import shutil

    from adreno_mlir.runtime.program_cache import cache_root

    root = cache_root("tune")
    root.mkdir(parents=True, exist_ok=True)
    for old in root.iterdir():
        pid = old.name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:  # that tuner is gone
            shutil.rmtree(old, ignore_errors=True)
        except OSError:  # alive, another user's
            pass
    return tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root)


class WorkerFailed(Exception):
    """The worker process hung (timeout) or died (crash)."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------- the child


class _Measurer:
    """The child's state: the imported model, its reference outputs, its kernels."""

    def __init__(self, job: Job, scratch: str):
        from adreno_mlir.frontend import import_onnx
        from adreno_mlir.plan import make_plan
        from adreno_mlir.runtime import default_context
        from adreno_mlir.tuning.db import device_key

        self.job = job
        path = job.model
        if isinstance(path, bytes):
            name = Path(scratch) / "model.onnx"
            name.write_bytes(path)
            path = str(name)
        if job.decoder is not None:
            from adreno_mlir.frontend.decoder import import_decoder_program

            self.graph = import_decoder_program(path, *job.decoder)
        else:
            self.graph = import_onnx(path, input_shapes=job.input_shapes, dims=job.dims)
        self.device = default_context(job.device).devices[0]
        self.key = device_key(self.device)
        # The rules, not the learned defaults: every row's default is the rules' config (the
        # cost model's targets are times relative to it), and candidates are overrides.
        self.plan = make_plan(device=job.device, cost_model=None, **job.compile_options)
        """The plan every measurement compiles (with that measurement's overrides)."""
        self.hook = _load_hook(job.fault_hook)
        self.node_spaces: list = []
        self.model_key = ""
        """The model's `conv_winograd.model_key` (texture-level plans), its node entries' scope."""
        self.node_keys: dict[str, list[str]] = {}
        """Launch location (ONNX node) -> the keys of the per-node choices whose time it counts
        towards (`loc:NODE@model:KEY`...): those whose footprint holds it."""
        self.spaces, self.loc_to_sig = self._kernels()
        self.reference: list[np.ndarray] | None = None
        self.feeds: dict[str, np.ndarray] = {}
        self.default = None
        """The default configuration's compiled model and its launches' locations."""

    def _kernels(self):
        """The tunable kernels (after select-kernel-config) and, per ONNX node, the
        signature its launches count towards."""
        from adreno_mlir.context import make_context
        from adreno_mlir.dialects import graph
        from adreno_mlir.lowering.families import CONFIG_ATTR, is_kernel
        from adreno_mlir.pipeline import run_stages
        from adreno_mlir.tuning.space import space_of
        from adreno_mlir.weights import attach, store_of

        module = self.graph.clone()
        attach(module, store_of(self.graph).overlay())
        stages = self.plan.stages(until="config")
        names = [n for n, _ in stages]
        split = names.index("winograd") if "winograd" in names else len(stages)
        run_stages(make_context(), module, stages[:split])
        eligible: dict[str, str] = {}
        if split < len(stages):
            from adreno_mlir.passes.conv_winograd import model_key

            key = model_key(module)  # as conv-winograd and annotate-texture-scope will compute it
            eligible = {n: key for n in self._winograd_nodes(module)}
            self.model_key = key
        run_stages(make_context(), module, stages[split:])
        if split < len(stages):  # the texture-level plan: conv-winograd and annotate-texture-scope run
            self._node_spaces(module, eligible)
        profile = self.plan.profile
        gpu = profile.is_gpu
        spaces: dict[str, Any] = {}
        loc_to_sig: dict[str, str] = {}
        ambiguous: set[str] = set()
        """Signatures sharing a node with another tunable kernel: their times cannot be
        told apart, so they are not tuned."""
        for op in module.walk():
            if CONFIG_ATTR not in op.attributes or not is_kernel(op):
                continue
            space = space_of(op, gpu)
            if space is None:
                continue
            space = space.with_pruning(op, profile)
            # Every node of the kernel: a split-K convolution's partial kernel carries the
            # conv's node, its summing kernel the fused tail's.
            members = [op, *op.ops] if isinstance(op, graph.FusedOp) else [op]
            for desc in {getattr(m.location, "desc", None) for m in members} - {None}:
                loc = desc.data
                if loc in loc_to_sig and loc_to_sig[loc] != space.signature:
                    ambiguous |= {loc_to_sig[loc], space.signature}
                loc_to_sig[loc] = space.signature
            spaces.setdefault(space.signature, space)
        for sig in ambiguous:
            spaces.pop(sig, None)
        loc_to_sig = {k: v for k, v in loc_to_sig.items() if v in spaces}
        return list(spaces.values()), loc_to_sig

    def _winograd_nodes(self, module) -> list[str]:
        """Before conv-winograd: the ONNX nodes of the convs that can take either tile."""
        from adreno_mlir.dialects import graph
        from adreno_mlir.passes.conv_winograd import ineligible_reason, node_of

        return [n for o in module.walk() if isinstance(o, graph.Conv2dOp)
                and (n := node_of(o)) is not None and ineligible_reason(o) is None]

    def _node_spaces(self, module, eligible: dict[str, str]) -> None:
        """After select-kernel-config, the per-node choices (`space.node_space`):

        - `winograd`: each eligible conv's tiles, its default the tile the plan gave it (a
          texture.winograd_output at its location, else 0 = direct); its footprint the
          launches of its kernels (at its location and those of the ops fused with it: a
          conv + ReLU kernel carries the ReLU's node);
        - `scope`: each kernel result the plan put in an image, "image" or "buffer", named
          by the node that computes the stored value (the ReLU of a conv + ReLU kernel, as
          annotate-texture-scope reads the key); its footprint the writing kernel and its
          readers, whose loads change with it.

        A choice's time is that of the launches in its footprint."""
        from xdsl.dialects import func

        from adreno_mlir.dialects import graph, texture
        from adreno_mlir.passes.conv_winograd import node_of
        from adreno_mlir.tuning.space import node_space

        def locs_of(op) -> set[str]:
            ops = [op, *op.ops] if isinstance(op, graph.FusedOp) else [op]
            return {n for m in ops if (n := node_of(m)) is not None}

        fns = [f for f in module.body.block.ops if isinstance(f, func.FuncOp)]
        kernels = [o for f in fns for o in f.body.block.ops]

        def top(op):
            while op.parent_op() is not None and not isinstance(op.parent_op(), func.FuncOp):
                op = op.parent_op()
            return op

        tiles = {node_of(o): o.tile.value.data for o in module.walk() if isinstance(o, texture.WinogradOutputOp)}
        group: dict[str, set[str]] = {node: {node} for node in eligible}
        for f in kernels:
            if isinstance(f, graph.FusedOp):
                locs = locs_of(f)
                for node in locs & set(eligible):
                    group[node] |= locs
        owner: dict[str, str] = {}
        shared: set[str] = set()
        for node, locs in group.items():
            for loc in locs:
                if loc in owner:  # two eligible convs in one kernel: their times cannot be told apart
                    shared |= {owner[loc], node}
                owner[loc] = node
        spaces = [node_space(node, key, "winograd", tiles.get(node, 0), (0, 2, 4), frozenset(group[node]))
                  for node, key in eligible.items() if node not in shared]
        key = self.model_key
        stored: dict[str, set[str]] = {}
        for k in kernels:
            if isinstance(k, func.ReturnOp) or not k.results:
                continue
            r = k.results[0]
            if not (isinstance(r.type, texture.TextureTensorType) and r.type.is_image):
                continue
            inner = k
            if isinstance(k, graph.FusedOp):
                y = k.body.block.last_op
                inner = y.operands[0].owner if y is not None and y.operands else k
            node = node_of(inner)
            if node is None or all(node_of(u.operation) == node for u in r.uses):
                continue  # read only within its node (a Winograd conv's V and M): the key does not move it
            readers = {top(u.operation) for u in r.uses}
            stored.setdefault(node, set()).update(locs_of(k), *(locs_of(u) for u in readers))
        spaces += [node_space(node, key, "scope", "image", ("image", "buffer"), frozenset(fp))
                   for node, fp in stored.items()]
        self.node_spaces.extend(spaces)
        for sp in spaces:
            for loc in sp.footprint:
                self.node_keys.setdefault(loc, []).append(sp.signature)

    def measure(self, overrides: dict[str, dict], worker: str) -> Result:
        import adreno_mlir
        from adreno_mlir.errors import CompileError
        from adreno_mlir.runtime.executor import RuntimeError_

        start = time.perf_counter()
        fault = self.hook(overrides) if self.hook is not None and overrides else None
        if fault == "hang":
            while True:
                time.sleep(60)
        if fault == "crash":
            os._exit(134)
        try:
            plan = self.plan.with_overrides(overrides) if overrides else self.plan
            cm = adreno_mlir.compile(self.graph, plan=plan, runtime="pyopencl", calibration=False)
            if fault == "build":
                raise RuntimeError_("the OpenCL compiler rejected the generated program:\n(fault hook) build failure")
        except RuntimeError_ as e:
            return Result("build_error", error=str(e)[:2000], seconds=time.perf_counter() - start, worker=worker)
        except CompileError as e:
            return Result("compile_error", error=str(e)[:2000], seconds=time.perf_counter() - start, worker=worker)
        except Exception as e:  # noqa: BLE001 - a configuration the compiler did not expect
            return Result("compile_error", error=f"internal compiler error: {type(e).__name__}: {e}"[:2000],
                          seconds=time.perf_counter() - start, worker=worker)
        if not self.feeds:
            self.feeds = _random_feeds(cm, self.job.seed)
        outs = list(cm.run(self.feeds).values())
        if fault == "wrong":
            outs = [o + 1.0 for o in outs]
        if self.reference is None:
            self.reference = outs
        else:
            err = _max_error(outs, self.reference)
            if not err <= self.job.rtol:
                return Result("wrong_output", error=f"max error {err:.3g} against the default configuration's outputs "
                              f"(limit {self.job.rtol:g})", seconds=time.perf_counter() - start, worker=worker)
        locs = _launch_locations(cm.module)
        inputs = cm._check_inputs(self.feeds)
        if len(locs) != len(cm.executable.plan.launches):
            return Result("crash", error=f"{len(locs)} launch locations for {len(cm.executable.plan.launches)} "
                          "launches", worker=worker)
        if self.default is None:  # the baseline
            runs = cm.executable.profile_launches(inputs, self.job.repeat, self.job.warmup)
            self.default = (cm, locs)
            times, total = self._attribute(runs, locs)
            return Result("ok", times, total, times, total, seconds=time.perf_counter() - start, worker=worker)
        # Alternate default and candidate runs, one inference each, after the warm-ups.
        dcm, dlocs = self.default
        cm.executable.profile_launches(inputs, 1, self.job.warmup)
        dcm.executable.profile_launches(inputs, 1, 0)
        runs = np.zeros((self.job.repeat, len(locs)))
        druns = np.zeros((self.job.repeat, len(dlocs)))
        for r in range(self.job.repeat):
            druns[r] = dcm.executable.profile_launches(inputs, 1, 0)[0]
            runs[r] = cm.executable.profile_launches(inputs, 1, 0)[0]
        times, total = self._attribute(runs, locs)
        dtimes, dtotal = self._attribute(druns, dlocs)
        return Result("ok", times, total, dtimes, dtotal, seconds=time.perf_counter() - start, worker=worker)

    def _attribute(self, runs: np.ndarray, locs: list[str | None]) -> tuple[dict[str, list[float]], list[float]]:
        """Per signature (and per node with choices, under its key), the summed time of its
        launches in every run; and the totals."""
        times: dict[str, np.ndarray] = {}
        for k, loc in enumerate(locs):
            for sig in (self.loc_to_sig.get(loc), *self.node_keys.get(loc, ())):
                if sig is not None:
                    times[sig] = times.get(sig, 0.0) + runs[:, k]
        return {s: [float(x) for x in t] for s, t in times.items()}, [float(x) for x in runs.sum(axis=1)]


def _launch_locations(module) -> list[str | None]:
    """The ONNX node of every launch, in launch order (the runtime plan's order)."""
    from adreno_mlir.dialects import opencl

    descs = [getattr(o.location, "desc", None) for o in module.walk() if isinstance(o, opencl.LaunchOp)]
    return [d.data if d is not None else None for d in descs]


def _random_feeds(cm, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    bounds = {t.name: t.bound for t in cm.launch_plan.inputs if t.dtype == "i32"}
    return {n: (rng.integers(0, bounds[n], cm.input_shapes[n]).astype(np.int64) if n in bounds
                else rng.standard_normal(cm.input_shapes[n]).astype(np.float32)) for n in cm.input_names}


def _max_error(outs: list[np.ndarray], ref: list[np.ndarray]) -> float:
    worst = 0.0
    for o, r in zip(outs, ref):
        scale = max(float(np.abs(r).max()) if r.size else 0.0, 1e-30)
        diff = np.abs(o.astype(np.float64) - r)
        if not np.all(np.isfinite(o)):
            return float("inf")
        worst = max(worst, float(diff.max()) / scale if diff.size else 0.0)
    return worst


def _load_hook(spec: str):
    if not spec:
        return None
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _child_main(conn, job: Job, worker: str, scratch: str) -> None:
    """The child process: set up, then answer measure requests until told to stop."""
    try:
        t = time.perf_counter()
        m = _Measurer(job, scratch)
        baseline = m.measure({}, worker)
        conn.send(("setup", Setup(m.key, m.spaces, baseline, time.perf_counter() - t, m.plan.profile.name,
                                    m.node_spaces)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises it
        from adreno_mlir.errors import AdrenoError

        if isinstance(e, AdrenoError):  # the model's own problem (weights missing, an op refused): its message
            conn.send(("error", str(e)))
        else:  # a bug of ours: where it happened
            conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"))
        return
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        try:
            conn.send(("result", m.measure(msg, worker)))
        except BaseException as e:  # noqa: BLE001 - a failure of the measurement itself
            conn.send(("result", Result("crash", error=f"{type(e).__name__}: {e}"[:2000], worker=worker)))


# --------------------------------------------------------------------------- the parent side


class DeviceWorker:
    """One OpenCL device's measuring process, restarted after a hang or a crash."""

    def __init__(self, job: Job, name: str = "worker0", setup_timeout: float = 600.0):
        self.job = job
        self.name = name
        self.setup_timeout = setup_timeout
        self.proc = None
        self.conn = None
        self.setup: Setup | None = None
        self.restarts = 0
        self.scratch = _scratch_dir()
        """The child's files (the model, when it came as bytes); `close` removes it. It lives
        in the cache (`cache_root("tune")/<pid>-...`), not in the temporary folder: one a
        killed tuner left behind is removed by the next tuner. Override files go to
        `cache_root("overrides")`, content-named (`compile(overrides=dict)`)."""

    def start(self) -> Setup:
        """Start the child (if it is not running): it imports the model, measures the
        default configuration and returns the kernels and their spaces."""
        if self.proc is not None and self.proc.is_alive():
            return self.setup
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_child_main, args=(child, self.job, self.name, self.scratch), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        kind, payload = self._receive(self.setup_timeout, "setting up")
        if kind == "error":
            self.stop()
            from adreno_mlir.errors import CompileError

            raise CompileError(f"tuning worker {self.name} could not compile and run the model with its default "
                               f"configuration: {payload}")
        if self.setup is None:
            self.setup = payload
        else:
            self.restarts += 1
        return payload

    def measure(self, overrides: dict[str, dict], timeout: float) -> Result:
        """Compile, check and time the model with `overrides`. A hang (no answer within
        `timeout` seconds) or a crash is a Result with status "timeout" / "crash"; the
        worker restarts on the next request."""
        start = time.perf_counter()
        try:
            self.start()
            self.conn.send(overrides)
            kind, payload = self._receive(timeout, "measuring")
        except WorkerFailed as e:
            return Result(e.status, error=str(e), seconds=time.perf_counter() - start, worker=self.name)
        except (OSError, BrokenPipeError) as e:
            self.stop()
            return Result("crash", error=f"worker {self.name}: {e}", seconds=time.perf_counter() - start,
                          worker=self.name)
        return payload

    def _receive(self, timeout: float, what: str):
        if not self.conn.poll(timeout):
            self.stop()
            raise WorkerFailed("timeout", f"worker {self.name} gave no answer within {timeout:.0f} s while {what} "
                                          "(killed)")
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            code = self.proc.exitcode if self.proc is not None else None
            self.stop()
            raise WorkerFailed("crash", f"worker {self.name} died while {what} (exit code {code})") from None

    def close(self) -> None:
        """Stop the child for good and remove its files."""
        self.stop()
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                try:
                    self.conn.send(None)
                except (OSError, BrokenPipeError):
                    pass
                self.proc.join(0.5)
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        self.proc = None
        self.conn = None
