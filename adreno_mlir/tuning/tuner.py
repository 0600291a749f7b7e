"""The search: which configurations to measure, in what order, and what to keep.

Every kernel signature of the model has its own search: exhaustive when its space has
no more candidates than the trial budget, else Optuna's TPE sampler (ask/tell, seeded).
Measurements go in *rounds*: one compile of the whole model in which every signature
still searching gets its next candidate, timed per signature from the launches' OpenCL
events. A model of 20 signatures and 16 trials is about 16 compiles, not 320.

A round that fails (the compiler refuses a configuration, the OpenCL build fails, the
outputs differ from the default's, the worker hangs or crashes) is split in halves and
each half measured again, down to the one configuration at fault, which is recorded as
failed and never tried or chosen again. The other halves' measurements count.

Everything measured is written to the database as it arrives, so an interrupted run
loses at most the rounds in flight; a second run with the same database skips every
configuration already measured (its Optuna study is told the stored results), which is
how `tune` resumes.

After the search, the best configuration of each signature (if it beats the default by
more than the noise) is checked in the whole model against the default, alternating
the two; a tuned model that is not faster drops its least useful entries until it is
(they are marked `slower_in_model`): tuned is never slower than untuned. The report's
model figures are that check's final measurement, the one pair measured together; its
rows say per signature why a faster candidate was not kept.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adreno_mlir.errors import CompileError
from adreno_mlir.printing import cut_name
from adreno_mlir.tuning.db import DeviceKey, Row, TuningDB, canonical
from adreno_mlir.tuning.space import NODE_KIND, Space
from adreno_mlir.tuning.worker import DeviceWorker, Job, Result


def noise_margin(times: list[float]) -> float:
    """The relative difference below which two kernels count as equally fast: 2%, or
    three times the relative median absolute deviation of the default's runs."""
    if len(times) < 3:
        return 0.05
    med = float(np.median(times))
    mad = float(np.median(np.abs(np.asarray(times) - med)))
    return max(0.02, 3 * mad / med if med > 0 else 0.0)


class Search:
    """One signature's search: the candidates still to measure and what is known.

    With `predicted` (the cost model's time of each candidate over the default's) the
    search is *guided*: the `GUIDED_FIRST` candidates predicted fastest first, then (a space
    larger than `trials`) Optuna's TPE, told what they measured, or (a smaller one) the rest
    in order of predicted time. Without: every candidate when they fit in `trials`, else
    TPE. (Measured on the H200: the model's own order alone did worse than TPE at a 60 s
    budget; its next picks resemble its first, which the learned defaults already have.)"""

    def __init__(self, space: Space, trials: int, seed: int, predicted: dict[str, float] | None = None):
        self.space = space
        self.trials = trials
        self.known: dict[str, tuple[str, float | None]] = {}
        """canonical config -> (status, median ms)"""
        self.pending: dict[str, Any] = {}
        """canonical config -> Optuna trial (or None) of configs in flight."""
        self.predicted = dict(predicted or {})
        """canonical config -> predicted time / the default's (guided searches only)."""
        self._exhaustive = None
        self._prefix: deque = deque()
        """A guided search's first candidates (the model's picks) before TPE takes over."""
        self.study = None
        candidates = space.candidates()
        order = sorted(candidates[1:], key=lambda c: self.predicted.get(canonical(c), math.inf)) \
            if self.predicted else []  # sorted() is stable: equals stay in suggestion order
        if self.predicted and len(candidates) <= trials:
            self._exhaustive = deque(order)
        elif len(candidates) <= trials:
            self._exhaustive = deque(candidates[1:])  # the default is measured by the baseline
        else:
            try:
                import optuna
            except ImportError:
                raise CompileError(
                    f"tune: {len(candidates)} configurations of {space.signature[:60]} need Optuna's search, which is not "
                    "installed: pip install optuna (a dependency of adreno-mlir), or give --trials "
                    f"{len(candidates)} to measure every one") from None

            optuna.logging.set_verbosity(optuna.logging.WARNING)
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(8, max(2, trials // 2)))
            self.study = optuna.create_study(direction="minimize", sampler=sampler)
            self._prefix = deque(order[:GUIDED_FIRST])

    @property
    def used(self) -> int:
        return len(self.known) + len(self.pending)

    @property
    def guided(self) -> bool:
        return bool(self.predicted)

    def _unmeasured(self, queue) -> dict[str, Any] | None:
        return next((c for c in queue or () if canonical(c) not in self.known and canonical(c) not in self.pending),
                    None)

    def next_gain(self, default_ms: float) -> float:
        """A guided search's predicted gain (ms) from its next candidate: the best time known
        (the default's, `default_ms`, or a faster measured one) less the candidate's predicted
        time; 0.0 once TPE picks the candidates (no prediction); -inf when nothing is left."""
        if self.done():
            return -math.inf
        nxt = self._unmeasured(self._prefix) if self.study is not None else self._unmeasured(self._exhaustive)
        if nxt is None:
            return 0.0 if self.study is not None else -math.inf
        best = min([default_ms] + [ms for st, ms in self.known.values() if st == "ok" and ms is not None])
        return best - self.predicted.get(canonical(nxt), math.inf) * default_ms

    def predicted_best(self) -> float:
        """The lowest predicted time over the default's (1.0 unguided, or nothing predicted faster)."""
        return min([1.0, *self.predicted.values()])

    def done(self) -> bool:
        if self.used >= self.trials:
            return True
        if self._exhaustive is not None:
            return not any(canonical(c) not in self.known and canonical(c) not in self.pending
                           for c in self._exhaustive)
        return False

    def next(self) -> dict[str, Any] | None:
        """The next configuration to measure (None: nothing left)."""
        if self.done():
            return None
        while self._prefix:
            cfg = self._prefix.popleft()
            if canonical(cfg) not in self.known and canonical(cfg) not in self.pending:
                self.pending[canonical(cfg)] = None
                return cfg
        if self._exhaustive is not None:
            while self._exhaustive:
                cfg = self._exhaustive.popleft()
                key = canonical(cfg)
                if key not in self.known and key not in self.pending:
                    self.pending[key] = None
                    return cfg
            return None
        import optuna

        for _ in range(64):  # points already known are told at once; ask again
            trial = self.study.ask()
            point = {k: _decode(trial.suggest_categorical(k, [_encode(c) for c in choices]))
                     for k, choices in self.space.dims}
            cfg = self.space.normalize(point)
            key = canonical(cfg)
            if key in self.space.pruned:  # refused or predicted far slower: not measured
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            if key in self.known:
                status, ms = self.known[key]
                if status == "ok":
                    self.study.tell(trial, ms)
                else:
                    self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                continue
            if key in self.pending:
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            self.pending[key] = trial
            return cfg
        return None

    def tell(self, cfg: dict[str, Any], status: str, ms: float | None) -> None:
        key = canonical(cfg)
        trial = self.pending.pop(key, None)
        self.known[key] = (status, ms)
        if trial is None and self.study is not None:
            self._teach(cfg, status, ms)
        if trial is not None and self.study is not None:
            import optuna

            if status == "ok":
                self.study.tell(trial, ms)
            else:
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)

    def _teach(self, cfg: dict[str, Any], status: str, ms: float | None) -> None:
        """Tell the TPE study a result it did not ask for (a guided pick), as the point of
        the dimensions the configuration holds (a key its kernel dropped counts as the
        dimension's first choice); a configuration outside the dimensions is not told."""
        import optuna

        params, dists = {}, {}
        for k, choices in self.space.dims:
            enc = [_encode(c) for c in choices]
            v = _encode(cfg.get(k, choices[0]))
            if v not in enc:
                return
            params[k], dists[k] = v, optuna.distributions.CategoricalDistribution(enc)
        state = optuna.trial.TrialState.COMPLETE if status == "ok" and ms is not None else optuna.trial.TrialState.FAIL
        self.study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, state=state,
                                                       value=ms if state == optuna.trial.TrialState.COMPLETE else None))

    def best(self) -> tuple[float | None, float | None]:
        """(default ms, best ms) of what is known."""
        default = self.known.get(canonical(self.space.default), (None, None))[1]
        oks = [ms for st, ms in self.known.values() if st == "ok" and ms is not None]
        return default, (min(oks) if oks else None)


def _encode(v: Any) -> Any:
    return "x".join(str(d) for d in v) if isinstance(v, tuple) else v


def _decode(v: Any) -> Any:
    if isinstance(v, str) and "x" in v and all(p.isdigit() for p in v.split("x")):
        return tuple(int(p) for p in v.split("x"))
    return v


@dataclass
class SignatureReport:
    signature: str
    kind: str
    node: str
    default_ms: float | None
    best_ms: float | None
    config: dict[str, Any] | None
    measured: int
    failed: int
    kept_ms: float | None = None
    """The kept configuration's time in the search (the default's when the default is kept)."""
    kept_reason: str = ""
    """Why the default is kept although a candidate measured faster ("" otherwise): its gain
    was within the noise (`_choose`), or the model check dropped it (`_confirm`)."""


@dataclass
class TuneReport:
    device: DeviceKey
    signatures: list[SignatureReport]
    untuned_ms: float
    """The model's device time with the default configurations, and (tuned_ms) with the kept
    entries: the final measurement of the model-level check, the two run alternately."""
    tuned_ms: float
    seconds: float
    rounds: int
    failures: dict[str, int] = field(default_factory=dict)
    chosen: dict[str, dict[str, Any]] = field(default_factory=dict)
    workers: int = 1
    interrupted: bool = False
    pruned: int = 0
    """Candidates not measured: refused by the lowering's checks, or predicted by the
    roofline model PRUNE_FACTOR times slower than the default."""
    model_agreement: float | None = None
    """Mean Spearman rank correlation, over signatures with 4+ measured candidates, between
    the roofline model's estimates and the measured times of the candidates."""
    cost_model: str = ""
    """The cost model (its file) that ordered the search ("" for none: TPE / exhaustive)."""
    guided: int = 0
    """How many signatures it ordered (the others: heads it never saw, searched as without it)."""
    predicted_speedup: float | None = None
    """The kernels' summed default time over their summed best predicted times (guided runs)."""
    kernel_speedup: float | None = None
    """The same from the measurements at the end of the search (before the model check)."""

    @property
    def speedup(self) -> float:
        return self.untuned_ms / self.tuned_ms if self.tuned_ms > 0 else 1.0


class Progress:
    """A tqdm bar in three phases: "setup" (the workers compile the model with its default
    configurations and measure it: the time so far), "search" (candidates measured, the
    kernels done, the speed-up the kernels' own times estimate, in a guided search beside
    the speed-up the cost model predicted, the budget left) and "model
    check" (the tuned model against the default: each whole-model measurement is a step).
    Disabled (`--no-progress`), it prints nothing; `write` then just logs."""

    SETUP_FORMAT = "{desc}: compiling the model with its default configurations and measuring it ({elapsed})"

    def __init__(self, enabled: bool, budget_s: float | None):
        self.bar = None
        self.budget_s = budget_s
        self.start = time.perf_counter()
        self.phase = "setup"
        self.post: dict[str, str] = {}
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=None, unit="cand", desc="setup", dynamic_ncols=True, bar_format=self.SETUP_FORMAT)

    def search(self, total: int) -> None:
        """The search phase: `total` candidates to measure."""
        self.phase = "search"
        if self.bar is not None:
            self.bar.bar_format = None
            self.bar.set_description("search", refresh=False)
            self.bar.reset(total=total)

    def update(self, n: int, speedup: float, signatures_done: int, signatures: int,
               predicted: float | None = None) -> None:
        """`n` more candidates measured; `speedup` is what the kernels' measured times
        estimate so far, `predicted` (guided searches) what the cost model predicted."""
        if self.bar is None:
            return
        self.post = {"kernels done": f"{signatures_done}/{signatures}"}
        if predicted is not None:
            self.post["predicted"] = f"x{predicted:.3f}"
            self.post["measured"] = f"x{speedup:.3f}"
        else:
            self.post["kernel est."] = f"x{speedup:.3f}"
        self._budget()
        self.bar.set_postfix(self.post, refresh=False)
        self.bar.update(n)

    def check(self, steps: int) -> None:
        """Enter the model check with `steps` whole-model measurements to come, or (in it
        already) add `steps` more."""
        if self.bar is None:
            return
        if self.phase != "model check":
            self.phase = "model check"
            self.bar.set_description("model check", refresh=False)
            self.bar.unit = "run"
            self.post = {}
            self.bar.set_postfix_str("", refresh=False)
            self.bar.reset(total=steps)
        else:
            self.bar.total += steps
        self.bar.refresh()

    def step(self, note: str = "") -> None:
        """One measurement of the model check done."""
        if self.bar is not None:
            self.bar.set_postfix_str(note, refresh=False)
            self.bar.update(1)

    def tick(self) -> None:
        """Redraw (the time so far, the budget left) while waiting for a measurement."""
        if self.bar is not None:
            if self.phase == "search" and self._budget():
                self.bar.set_postfix(self.post, refresh=False)
            self.bar.refresh()

    def _budget(self) -> bool:
        if not self.budget_s:
            return False
        self.post["budget left"] = f"{max(0.0, self.budget_s - (time.perf_counter() - self.start)):.0f}s"
        return True

    def wait_for(self, fn: Callable, *args):
        """fn(*args), redrawing the bar every half second until it returns."""
        if self.bar is None:
            return fn(*args)
        ex = ThreadPoolExecutor(1)
        try:
            f = ex.submit(fn, *args)
            while not wait([f], timeout=0.5).done:
                self.tick()
            return f.result()
        finally:  # after Ctrl-C, not waiting for the measurement (closing the worker ends it)
            ex.shutdown(wait=False)

    def write(self, say: Callable[[str], None], message: str) -> None:
        """`say(message)` above the bar (a log line printed over it would break it)."""
        if self.bar is None:
            say(message)
            return
        with self.bar.external_write_mode():
            say(message)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


TUNE_OPTIONS = ("target", "textures", "precision", "layout", "work_group")
"""The plan options (adreno_mlir.plan.make_plan's) a tuning run's `compile_options` may set."""


def tune(
    model: str,
    db_path: str,
    *,
    device: str | None = None,
    devices: list[str] | None = None,
    compile_options: dict | None = None,
    trials: int = 16,
    budget_s: float | None = None,
    timeout_s: float = 120.0,
    repeat: int = 10,
    workers: int = 1,
    ray: bool = False,
    ray_address: str | None = None,
    progress: bool = True,
    fault_hook: str = "",
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    input_shapes: dict | None = None,
    dims: dict | None = None,
    decoder: tuple[str, int, int] | None = None,
    cost_model: str | None = "auto",
) -> TuneReport:
    """Tune every kernel signature of `model` on the device(s) and store the measurements
    in the database `db_path`; returns the report (see the module docstring).

    devices: one worker per entry (OpenCL device specs, as `compile(device=...)`);
             default `[device] * workers`, or with a local Ray and one worker, every
             local device with the same platform and name as `device`.
    ray / ray_address: run the workers as Ray actors (a local Ray, or join a cluster).
    compile_options: the plan options (`TUNE_OPTIONS`, as `compile()` takes them); each
             worker makes its `CompilePlan` of them once, on its own device.
    input_shapes / dims: static sizes for the model's dynamic input dims (as `compile()`);
             kernel signatures include the shapes, so tune with the shapes you compile with.
    decoder: (program, max_context, prefill_chunk): tune a generation program of an
             onnxruntime-genai decoder ("decode" or "prefill"; `compile_decoder` with the
             same max_context and prefill_chunk and this database then uses the results).
    cost_model: what orders the search (adreno_mlir.tuning.cost_model): "auto" (default)
             the artifact shipped for the workers' target profile, a path, or None. Guided,
             each signature measures its candidates fastest-predicted first, and each round
             holds the signatures whose next candidate is predicted to gain (largest
             predicted gain in ms first, i.e. share of device time x predicted speed-up);
             only when no candidate is predicted to gain do the others run. A short budget
             is so spent where the model says the gain is. Without a model (or for a head
             op it never saw): every candidate when they fit in `trials`, else Optuna's TPE.
    """
    from pathlib import Path

    if trials < 1:
        raise CompileError("tune: --trials must be at least 1")
    if not Path(model).is_file():
        raise CompileError(f"tune: model {model} does not exist")
    say = log or (lambda s: None)
    start = time.perf_counter()
    opts = dict(compile_options or {})
    unknown = sorted(set(opts) - set(TUNE_OPTIONS))
    if unknown:
        raise CompileError(f"tune: unknown compile option(s) {', '.join(unknown)}; compile_options takes "
                           f"{', '.join(TUNE_OPTIONS)} (each worker makes its plan of them on its device)")
    if cost_model not in (None, "", "auto"):  # a bad artifact fails now, not after the setup
        from adreno_mlir.tuning.cost_model import load

        load(cost_model)
    storage_f16 = opts.get("precision", "fp32") != "fp32"
    if devices is None and (ray or ray_address) and workers == 1 and not ray_address:
        # A local Ray without a device list: one worker per local device like --device.
        from adreno_mlir.runtime.device import devices_like

        devices = devices_like(device)
    job_devices = devices or [device] * max(1, workers)
    if input_shapes or dims:  # a binding that does not fit fails here, not in every worker
        import onnx

        from adreno_mlir.frontend.shapes import bound_input_shapes

        bound_input_shapes(onnx.load(model, load_external_data=False).graph, input_shapes, dims)
    jobs = [Job(model, d, opts, repeat=repeat, rtol=2e-2 if storage_f16 else 1e-4, seed=seed,
                fault_hook=fault_hook, input_shapes=input_shapes, dims=dims, decoder=decoder) for d in job_devices]
    if ray or ray_address:
        from adreno_mlir.tuning.ray_pool import ray_workers

        pool = ray_workers(jobs, ray_address)
    else:
        pool = [DeviceWorker(j, f"worker{i}") for i, j in enumerate(jobs)]
    db = TuningDB(db_path)
    interrupted = False
    bar = Progress(progress, budget_s)

    def note(message: str) -> None:  # a log line above the bar
        bar.write(say, message)

    try:
        with ThreadPoolExecutor(len(pool)) as ex:
            starting = [ex.submit(w.start) for w in pool]
            while wait(starting, timeout=0.5).not_done:
                bar.tick()
            setups = [f.result() for f in starting]
        key = setups[0].device_key
        for s, w in zip(setups[1:], pool[1:]):
            if s.device_key != key:
                raise CompileError(f"tune: the workers have different devices ({key.short()} and "
                                   f"{s.device_key.short()}); tune one kind of device per run")
        node_spaces = list(setups[0].node_spaces)
        spaces = [*setups[0].spaces, *node_spaces]
        model_name = Path(model).stem
        nodes = f", {len(node_spaces)} per-node choices (Winograd tile, image or buffer)" if node_spaces else ""
        note(f"device {key.short()}; {len(spaces) - len(node_spaces)} tunable kernel signatures{nodes}; "
             f"{len(pool)} worker(s); setup {setups[0].seconds:.1f} s")
        # The default of every signature, from every worker's baseline run.
        base: dict[str, list[float]] = {}
        for s in setups:
            if s.baseline.status != "ok":
                raise CompileError(f"tune: the default configuration failed on {s.baseline.worker}: "
                                   f"{s.baseline.error}")
            for sig, t in s.baseline.times.items():
                base.setdefault(sig, []).extend(t)
        db.record(key, [Row(sp.signature, sp.default, True, "ok", float(np.median(base[sp.signature])),
                            tuple(base[sp.signature]), model=model_name, worker="baseline")
                        for sp in spaces if sp.signature in base])
        guide, guide_name = _guide(cost_model, setups[0].profile)
        searches = {sp.signature: Search(sp, trials, seed, _predicted(guide, sp)) for sp in spaces
                    if sp.signature in base}
        default_ms = {sig: float(np.median(t)) for sig, t in base.items()}
        guided = sum(s.guided for s in searches.values())
        if guide is not None:
            note(f"search ordered by the cost model {guide_name} for {guided} of {len(kernel_searches(searches))} "
                 "kernel signatures "
                 f"(predicted x{_predicted_speedup(searches, default_ms):.3f} over their kernels)")
        for r in db.rows(key, searches):
            s = searches[r.signature]
            k = canonical(r.config)
            if r.is_default:
                s.known[canonical(s.space.default)] = ("ok", r.median_ms)
            elif k != canonical(s.space.default):
                s.known[k] = (r.status, r.median_ms)
        total = sum(max(0, min(s.trials, s.space.size()) - len(s.known)) for s in searches.values())
        bar.search(total)
        rounds = 0
        queue: deque[dict[str, dict]] = deque()
        free = deque(pool)
        inflight: dict[Future, tuple[Any, dict[str, dict]]] = {}

        def next_round() -> dict[str, dict] | None:
            # Per-node choices first, in rounds of their own: a conv that changes its tile
            # changes its kernels, so no kernel candidate may share its compile; and within
            # a round the choices' footprints (the kernels each one's time sums) are disjoint.
            r, taken = {}, set()
            for sig, s in searches.items():
                if s.space.kind == NODE_KIND and not (s.space.footprint & taken) and (cfg := s.next()) is not None:
                    r[sig] = cfg
                    taken |= s.space.footprint
            if r:
                return r
            gains = {sig: s.next_gain(default_ms[sig]) for sig, s in searches.items() if s.guided}
            # Guided: the candidates predicted to gain more than the noise first, largest gain first.
            pick = [sig for sig, g in gains.items() if g > GAIN_FLOOR * default_ms[sig]]
            if not pick:
                pick = [sig for sig, g in gains.items() if g > -math.inf]
            pick.sort(key=lambda sig: -gains[sig])
            for sig in [*pick, *(sig for sig, s in searches.items() if not s.guided and s.space.kind != NODE_KIND)]:
                cfg = searches[sig].next()
                if cfg is not None:
                    r[sig] = cfg
            return r or None

        def speedup() -> float:
            d = b = 0.0
            for s in kernel_searches(searches):
                dm, bm = s.best()
                if dm is not None:
                    d += dm
                    b += min(dm, bm if bm is not None else dm)
            return d / b if b > 0 else 1.0

        def finish(r: dict[str, dict], res: Result) -> None:
            rows = []
            for sig, cfg in r.items():
                if res.status == "ok":
                    t, dt = res.times.get(sig), res.default_times.get(sig)
                    if not t or not dt:  # no launch of this signature ran: nothing to compare
                        st, ms, times = "crash", None, ()
                    else:
                        # Relative to the default run alternately with it, in the baseline's ms.
                        ratio = float(np.median(t)) / max(float(np.median(dt)), 1e-9)
                        st, ms, times = "ok", ratio * default_ms[sig], tuple(t)
                else:
                    st, ms, times = res.status, None, ()
                searches[sig].tell(cfg, st, ms)
                rows.append(Row(sig, cfg, False, st, ms, times, res.error if st != "ok" else "", model_name,
                                res.worker))
            db.record(key, rows)
            done = sum(1 for s in searches.values() if s.done() and not s.pending)
            bar.update(len(r), speedup(), done, len(searches),
                       _predicted_speedup(searches, default_ms) if guide is not None else None)

        with ThreadPoolExecutor(len(pool)) as ex:
            try:
                while True:
                    out_of_time = budget_s is not None and time.perf_counter() - start > budget_s
                    while free and (queue or not out_of_time):
                        r = queue.popleft() if queue else next_round()
                        if r is None:
                            break
                        w = free.popleft()
                        rounds += 1
                        inflight[ex.submit(w.measure, r, timeout_s)] = (w, r)
                    if not inflight:
                        break
                    while True:  # redrawing the bar (the time, the budget left) while waiting
                        finished, _ = wait(list(inflight), timeout=0.5 if bar.bar is not None else None,
                                           return_when=FIRST_COMPLETED)
                        if finished:
                            break
                        bar.tick()
                    for f in finished:
                        w, r = inflight.pop(f)
                        free.append(w)
                        res = f.result()
                        if res.status != "ok" and len(r) > 1:
                            items = list(r.items())
                            half = len(items) // 2
                            queue.appendleft(dict(items[half:]))
                            queue.appendleft(dict(items[:half]))
                            note(f"round of {len(r)} kernels failed ({res.status}): bisecting")
                        else:
                            finish(r, res)
            except KeyboardInterrupt:
                interrupted = True
                bar.close()
                for w in pool:
                    w.close()
                raise
        kernel_speedup = speedup()
        # The model-level check: the chosen configurations against the default.
        chosen, reasons = _choose(searches, base)
        untuned, tuned, chosen, dropped = _confirm(pool[0], chosen, timeout_s, db, key, note, bar)
        reasons.update(dropped)
        bar.close()
        db.decide(key, {sig: chosen.get(sig) for sig in searches}, model_name)
        reports = []
        failures: dict[str, int] = {}
        for sig, s in searches.items():
            for st, _ in s.known.values():
                if st != "ok":
                    failures[st] = failures.get(st, 0) + 1
            dm, bm = s.best()
            kept = s.known.get(canonical(chosen[sig]), (None, None))[1] if sig in chosen else dm
            reports.append(SignatureReport(sig, s.space.kind, s.space.name, dm, bm, chosen.get(sig),
                                           sum(1 for st, _ in s.known.values() if st == "ok"),
                                           sum(1 for st, _ in s.known.values() if st != "ok"),
                                           kept, reasons.get(sig, "")))
        return TuneReport(key, reports, untuned, tuned, time.perf_counter() - start, rounds, failures, chosen,
                          len(pool), interrupted, sum(len(s.space.pruned) for s in searches.values()),
                          _agreement(searches), guide_name, guided,
                          _predicted_speedup(searches, default_ms) if guide is not None else None, kernel_speedup)
    finally:
        bar.close()
        if not interrupted:
            for w in pool:
                w.close()
        db.close()


GUIDED_FIRST = 3
"""A guided search of a space larger than its trials measures the cost model's this many
best-predicted candidates before TPE takes over."""

GAIN_FLOOR = 0.02
"""A guided round takes the candidates predicted to gain more than this share of their
kernel's default time (the noise floor of `noise_margin`); the rest wait until none is."""


def _guide(cost_model: str | None, profile: str):
    """(the cost model that orders the search, its file name), or (None, "")."""
    from pathlib import Path

    from adreno_mlir.tuning import cost_model as cmod

    path = cmod.shipped_for(profile) if cost_model == "auto" else (str(cost_model) if cost_model else "")
    if not path:
        return None, ""
    return cmod.load(path), Path(path).name


def _predicted(guide, space: Space) -> dict[str, float] | None:
    """canonical config -> predicted time / the default's, for every candidate of `space`
    (None without a model, or where it has no say)."""
    if guide is None:
        return None
    cands = space.candidates()[1:]
    ratios = guide.ratios(space.signature, space.default, cands)
    if ratios is None:
        return None
    return {canonical(c): float(r) for c, r in zip(cands, ratios)}


def kernel_searches(searches: dict[str, Search]) -> list[Search]:
    """The searches of kernel signatures (not per-node choices: a node's time is also its
    kernels', so summing both would count it twice)."""
    return [s for s in searches.values() if s.space.kind != NODE_KIND]


def _predicted_speedup(searches: dict[str, Search], default_ms: dict[str, float]) -> float:
    """Summed default time over summed predicted-best time (unguided kernels at their default)."""
    kernels = kernel_searches(searches)
    d = sum(default_ms[s.space.signature] for s in kernels)
    b = sum(default_ms[s.space.signature] * s.predicted_best() for s in kernels)
    return d / b if b > 0 else 1.0


def _choose(searches: dict[str, Search], base: dict[str, list[float]]
            ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Per signature, the fastest configuration if it beats the default by more than the
    default's noise. Returns (chosen, {signature: why the default stays although a candidate
    measured faster}) for the report."""
    chosen, reasons = {}, {}
    for sig, s in searches.items():
        default = float(np.median(base[sig]))
        margin = noise_margin(base[sig])
        best_key, best_ms = None, None
        for k, (st, ms) in s.known.items():
            if st == "ok" and ms is not None and k != canonical(s.space.default) and (best_ms is None or ms < best_ms):
                best_key, best_ms = k, ms
        if best_ms is not None and best_ms < default * (1 - margin):
            import json

            chosen[sig] = {kk: tuple(vv) if isinstance(vv, list) else vv for kk, vv in json.loads(best_key).items()}
        elif best_ms is not None and best_ms < default:
            reasons[sig] = f"gain {100 * (1 - best_ms / default):.1f}% within noise {100 * margin:.1f}%"
    return chosen, reasons


DROPPED = "best dropped, the model was not faster with it"
DROPPED_FAILED = "best dropped, the model check failed with it"


def _ms(x: float) -> str:
    return f"{x:.2f}" if abs(x) >= 1 else f"{x:.4f}"


def _confirm(w, chosen: dict[str, dict], timeout_s: float, db: TuningDB, key: DeviceKey, say,
             bar: Progress | None = None) -> tuple[float, float, dict[str, dict], dict[str, str]]:
    """The model-level check: measure the whole model tuned against untuned (the worker
    alternates the two runs, twice); while tuned is not faster, drop the entries whose gain
    did not hold, else the half with the smallest gains (marking them `slower_in_model` in
    the database), and measure again. Each step is a line to `say` and, per measurement, a
    step of `bar`.

    Returns (untuned ms, tuned ms, kept entries, {signature: why its entry was dropped}).
    The two times are one measurement's, the final one: the accepted pair, or with nothing
    kept the default's time in the last measurement (tuned = untuned)."""
    dropped: dict[str, str] = {}
    untuned: float | None = None
    check = 0
    if bar is not None:
        bar.check(2 if chosen else 1)
    while chosen:
        check += 1
        tuned, base = [], []
        ratios: dict[str, list[float]] = {}
        failed = ""
        for run in range(2):
            res = bar.wait_for(w.measure, chosen, timeout_s) if bar is not None else w.measure(chosen, timeout_s)
            if res.status == "ok" and res.total:
                tuned.append(float(np.median(res.total)))
                base.append(float(np.median(res.default_total)))
                for sig in chosen:
                    t, dt = res.times.get(sig), res.default_times.get(sig)
                    if t and dt:
                        ratios.setdefault(sig, []).append(float(np.median(t)) / max(float(np.median(dt)), 1e-9))
            else:
                failed = failed or f"{res.status}{': ' + res.error.splitlines()[0] if res.error.strip() else ''}"
            if bar is not None:
                bar.step(f"check {check}, run {run + 1} of 2")
        if base:
            untuned = float(np.median(base))
        # Both: a median ratio below 1 alone can come with median(tuned) > median(base)
        # (tuned 1, 10.5 vs base 2, 9), and the report would say tuned is slower.
        if (tuned and float(np.median(np.asarray(tuned) / np.asarray(base))) < 1.0
                and float(np.median(tuned)) < float(np.median(base))):
            return float(np.median(base)), float(np.median(tuned)), chosen, dropped
        # The search kept the best of several noisy measurements (an optimistic pick):
        # drop what is not faster measured again, else the half with the smallest gains.
        again = {sig: float(np.median(r)) for sig, r in ratios.items()}
        drop = [sig for sig in chosen if again.get(sig, 2.0) >= 1.0]
        which = "whose gain did not hold in the model"
        if not drop:
            gains = sorted(chosen, key=lambda sig: again.get(sig, 2.0), reverse=True)
            drop = gains[: max(1, len(gains) // 2)]
            which = "with the smallest gains"
        if tuned:
            what = f"tuned {_ms(float(np.median(tuned)))} ms vs untuned {_ms(float(np.median(base)))} ms"
        else:
            what = f"the tuned model did not run ({failed})"
        db.record(key, [Row(sig, chosen[sig], False, "slower_in_model", None, error="the model was not faster with it")
                        for sig in drop])
        chosen = {k: v for k, v in chosen.items() if k not in drop}
        entries = f"{len(drop)} entr{'y' if len(drop) == 1 else 'ies'}"
        say(f"model check {check}: {what}: dropping {entries} {which}; "
            + ("measuring again" if chosen else "none left"))
        dropped.update({sig: DROPPED if tuned else DROPPED_FAILED for sig in drop})
        if bar is not None and chosen:
            bar.check(2)
    if untuned is None:
        if bar is not None:
            res = bar.wait_for(w.measure, {}, timeout_s)
            bar.step("the default")
        else:
            res = w.measure({}, timeout_s)
        untuned = float(np.median(res.total)) if res.status == "ok" and res.total else float("nan")
    return untuned, untuned, {}, dropped


def _agreement(searches: dict[str, Search]) -> float | None:
    """See TuneReport.model_agreement."""
    rhos = []
    for s in searches.values():
        pairs = [(s.space.estimates[k], ms) for k, (st, ms) in s.known.items()
                 if st == "ok" and ms is not None and k in s.space.estimates]
        if len(pairs) >= 4:
            est, meas = np.asarray(pairs).T
            if np.ptp(est) > 0 and np.ptp(meas) > 0:
                rhos.append(_spearman(est, meas))
    return float(np.mean(rhos)) if rhos else None


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def format_report(rep: TuneReport, top: int = 20) -> str:
    """The report: the run, then per signature (longest default first) its default, best
    and kept times and the kept config (or why the default stays), then, as the last line,
    the one model figure: the model-level check's final measurement."""
    nodes = [s for s in rep.signatures if s.kind == NODE_KIND]
    kept_nodes = sum(1 for s in nodes if s.signature in rep.chosen)
    of_nodes = f" and {kept_nodes} of {len(nodes)} per-node choices" if nodes else ""
    lines = [f"device: {rep.device.short()}",
             f"tuned {len(rep.chosen) - kept_nodes} of {len(rep.signatures) - len(nodes)} kernel signatures{of_nodes} "
             f"in {rep.seconds:.0f} s ({rep.rounds} rounds, {rep.workers} worker{'s' if rep.workers != 1 else ''})"]
    if rep.failures:
        lines.append("failed candidates: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.failures.items())))
    if rep.pruned:
        lines.append(f"pruned without measuring: {rep.pruned} candidates (refused by the lowering's checks, or "
                     "predicted 3x slower than the default by the roofline model)")
    if rep.cost_model:
        lines.append(f"search ordered by the cost model {rep.cost_model} ({rep.guided} of "
                     f"{len(rep.signatures) - len(nodes)} signatures): predicted x{rep.predicted_speedup or 1:.3f} over their kernels, measured "
                     f"x{rep.kernel_speedup or 1:.3f} (kernel times summed, before the model check)")
    if rep.model_agreement is not None:
        lines.append(f"roofline model vs measured, rank correlation within a kernel's candidates: "
                     f"{rep.model_agreement:+.2f} (mean Spearman)")
    rows = sorted(rep.signatures, key=lambda r: -(r.default_ms or 0))[:top]
    lines.append(f"{'node':40s} {'kind':16s} {'default ms':>10s} {'best ms':>9s} {'kept ms':>9s}  config")
    for r in rows:
        if r.config:
            cfg = ", ".join(f"{k}={v}" for k, v in sorted(r.config.items()))
        else:
            cfg = f"(default: {r.kept_reason})" if r.kept_reason else "(default)"
        kept = r.kept_ms if r.kept_ms is not None else r.default_ms
        lines.append(f"{cut_name(r.node, 40):40s} {cut_name(r.kind, 16):16s} {r.default_ms or 0:10.4f} "
                     f"{r.best_ms or 0:9.4f} {kept or 0:9.4f}  {cfg}")
    if len(rep.signatures) > top:
        lines.append(f"... {len(rep.signatures) - top} more kernel signatures")
    if rep.chosen:
        lines.append(f"model device time: untuned {_ms(rep.untuned_ms)} ms, tuned {_ms(rep.tuned_ms)} ms "
                     f"(x{rep.speedup:.3f}), measured alternately in the whole model")
    elif any(r.kept_reason.startswith("best dropped") for r in rep.signatures):
        lines.append(f"no tuned entry made the model faster: the model keeps its defaults (model device time "
                     f"{_ms(rep.untuned_ms)} ms)")
    else:
        lines.append(f"no candidate beat its default by more than the noise: the model keeps its defaults (model "
                     f"device time {_ms(rep.untuned_ms)} ms)")
    return "\n".join(lines)
