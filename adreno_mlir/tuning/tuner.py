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
(they are marked `slower_in_model`): tuned is never slower than untuned.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adreno_mlir.errors import CompileError
from adreno_mlir.tuning.db import DeviceKey, Row, TuningDB, canonical
from adreno_mlir.tuning.space import Space
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
    """One signature's search: the candidates still to measure and what is known."""

    def __init__(self, space: Space, trials: int, seed: int):
        self.space = space
        self.trials = trials
        self.known: dict[str, tuple[str, float | None]] = {}
        """canonical config -> (status, median ms)"""
        self.pending: dict[str, Any] = {}
        """canonical config -> Optuna trial (or None) of configs in flight."""
        self._exhaustive = None
        self.study = None
        candidates = space.candidates()
        if len(candidates) <= trials:
            self._exhaustive = deque(candidates[1:])  # the default is measured by the baseline
        else:
            import optuna

            optuna.logging.set_verbosity(optuna.logging.WARNING)
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(8, max(2, trials // 2)))
            self.study = optuna.create_study(direction="minimize", sampler=sampler)

    @property
    def used(self) -> int:
        return len(self.known) + len(self.pending)

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
        if trial is not None and self.study is not None:
            import optuna

            if status == "ok":
                self.study.tell(trial, ms)
            else:
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)

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


@dataclass
class TuneReport:
    device: DeviceKey
    signatures: list[SignatureReport]
    untuned_ms: float
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

    @property
    def speedup(self) -> float:
        return self.untuned_ms / self.tuned_ms if self.tuned_ms > 0 else 1.0


class Progress:
    """A tqdm bar: candidates measured, the best estimated speed-up, the time left."""

    def __init__(self, total: int, enabled: bool, budget_s: float | None):
        self.bar = None
        self.budget_s = budget_s
        self.start = time.perf_counter()
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="cand", desc="tuning", dynamic_ncols=True)

    def update(self, n: int, speedup: float, signatures_done: int, signatures: int) -> None:
        if self.bar is None:
            return
        post = {"kernels done": f"{signatures_done}/{signatures}", "best": f"x{speedup:.3f}"}
        if self.budget_s:
            post["budget left"] = f"{max(0.0, self.budget_s - (time.perf_counter() - self.start)):.0f}s"
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


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
) -> TuneReport:
    """Tune every kernel signature of `model` on the device(s) and store the measurements
    in the database `db_path`; returns the report (see the module docstring).

    devices: one worker per entry (OpenCL device specs, as `compile(device=...)`);
             default `[device] * workers`, or with a local Ray and one worker, every
             local device with the same platform and name as `device`.
    ray / ray_address: run the workers as Ray actors (a local Ray, or join a cluster).
    compile_options: the plan options (`TUNE_OPTIONS`, as `compile()` takes them); each
             worker makes its `CompilePlan` of them once, on its own device.
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
    storage_f16 = opts.get("precision", "fp32") != "fp32"
    if devices is None and (ray or ray_address) and workers == 1 and not ray_address:
        # A local Ray without a device list: one worker per local device like --device.
        from adreno_mlir.runtime.device import devices_like

        devices = devices_like(device)
    job_devices = devices or [device] * max(1, workers)
    jobs = [Job(model, d, opts, repeat=repeat, rtol=2e-2 if storage_f16 else 1e-4, seed=seed,
                fault_hook=fault_hook) for d in job_devices]
    if ray or ray_address:
        from adreno_mlir.tuning.ray_pool import ray_workers

        pool = ray_workers(jobs, ray_address)
    else:
        pool = [DeviceWorker(j, f"worker{i}") for i, j in enumerate(jobs)]
    db = TuningDB(db_path)
    interrupted = False
    try:
        with ThreadPoolExecutor(len(pool)) as ex:
            setups = list(ex.map(lambda w: w.start(), pool))
        key = setups[0].device_key
        for s, w in zip(setups[1:], pool[1:]):
            if s.device_key != key:
                raise CompileError(f"tune: the workers have different devices ({key.short()} and "
                                   f"{s.device_key.short()}); tune one kind of device per run")
        spaces = setups[0].spaces
        model_name = Path(model).stem
        say(f"device {key.short()}; {len(spaces)} tunable kernel signatures; {len(pool)} worker(s); "
            f"setup {setups[0].seconds:.1f} s")
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
        searches = {sp.signature: Search(sp, trials, seed) for sp in spaces if sp.signature in base}
        default_ms = {sig: float(np.median(t)) for sig, t in base.items()}
        for r in db.rows(key, searches):
            s = searches[r.signature]
            k = canonical(r.config)
            if r.is_default:
                s.known[canonical(s.space.default)] = ("ok", r.median_ms)
            elif k != canonical(s.space.default):
                s.known[k] = (r.status, r.median_ms)
        total = sum(max(0, min(s.trials, s.space.size()) - len(s.known)) for s in searches.values())
        bar = Progress(total, progress, budget_s)
        rounds = 0
        queue: deque[dict[str, dict]] = deque()
        free = deque(pool)
        inflight: dict[Future, tuple[Any, dict[str, dict]]] = {}

        def next_round() -> dict[str, dict] | None:
            r = {}
            for sig, s in searches.items():
                cfg = s.next()
                if cfg is not None:
                    r[sig] = cfg
            return r or None

        def speedup() -> float:
            d = b = 0.0
            for s in searches.values():
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
            bar.update(len(r), speedup(), done, len(searches))

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
                    finished, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                    for f in finished:
                        w, r = inflight.pop(f)
                        free.append(w)
                        res = f.result()
                        if res.status != "ok" and len(r) > 1:
                            items = list(r.items())
                            half = len(items) // 2
                            queue.appendleft(dict(items[half:]))
                            queue.appendleft(dict(items[:half]))
                            say(f"round of {len(r)} kernels failed ({res.status}): bisecting")
                        else:
                            finish(r, res)
            except KeyboardInterrupt:
                interrupted = True
                for w in pool:
                    w.close()
                raise
            finally:
                bar.close()
        # The model-level check: the chosen configurations against the default.
        chosen = _choose(searches, base)
        untuned, tuned, chosen = _confirm(pool[0], chosen, searches, timeout_s, db, key, say)
        db.decide(key, {sig: chosen.get(sig) for sig in searches}, model_name)
        reports = []
        failures: dict[str, int] = {}
        for sig, s in searches.items():
            for st, _ in s.known.values():
                if st != "ok":
                    failures[st] = failures.get(st, 0) + 1
            dm, bm = s.best()
            reports.append(SignatureReport(sig, s.space.kind, s.space.name, dm, bm, chosen.get(sig),
                                           sum(1 for st, _ in s.known.values() if st == "ok"),
                                           sum(1 for st, _ in s.known.values() if st != "ok")))
        return TuneReport(key, reports, untuned, tuned, time.perf_counter() - start, rounds, failures, chosen,
                          len(pool), interrupted, sum(len(s.space.pruned) for s in searches.values()),
                          _agreement(searches))
    finally:
        if not interrupted:
            for w in pool:
                w.close()
        db.close()


def _choose(searches: dict[str, Search], base: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per signature, the fastest configuration if it beats the default by more than the
    default's noise."""
    chosen = {}
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
    return chosen


def _confirm(w, chosen: dict[str, dict], searches: dict[str, Search], timeout_s: float, db: TuningDB,
             key: DeviceKey, say) -> tuple[float, float, dict[str, dict]]:
    """Measure the whole model tuned against untuned (the worker alternates the two runs,
    twice); while tuned is not faster, drop the half of the chosen entries with the
    smallest gains (marking them `slower_in_model` in the database). Returns (untuned ms,
    tuned ms, kept entries)."""
    untuned: list[float] = []
    while chosen:
        tuned, base = [], []
        ratios: dict[str, list[float]] = {}
        for _ in range(2):
            res = w.measure(chosen, timeout_s)
            if res.status == "ok" and res.total:
                tuned.append(float(np.median(res.total)))
                base.append(float(np.median(res.default_total)))
                for sig in chosen:
                    t, dt = res.times.get(sig), res.default_times.get(sig)
                    if t and dt:
                        ratios.setdefault(sig, []).append(float(np.median(t)) / max(float(np.median(dt)), 1e-9))
        untuned += base
        # Both: a median ratio below 1 alone can come with median(tuned) > median(base)
        # (tuned 1, 10.5 vs base 2, 9), and the report would say tuned is slower.
        if (tuned and float(np.median(np.asarray(tuned) / np.asarray(base))) < 1.0
                and float(np.median(tuned)) < float(np.median(base))):
            return float(np.median(base)), float(np.median(tuned)), chosen
        # The search kept the best of several noisy measurements (an optimistic pick):
        # drop what is not faster measured again, else the half with the smallest gains.
        again = {sig: float(np.median(r)) for sig, r in ratios.items()}
        drop = [sig for sig in chosen if again.get(sig, 2.0) >= 1.0]
        if not drop:
            gains = sorted(chosen, key=lambda sig: again.get(sig, 2.0), reverse=True)
            drop = gains[: max(1, len(gains) // 2)]
        say(f"tuned model not faster ({np.median(tuned) if tuned else float('nan'):.4f} vs "
            f"{np.median(base) if base else float('nan'):.4f} ms): dropping {len(drop)} "
            f"entr{'y' if len(drop) == 1 else 'ies'}")
        db.record(key, [Row(sig, chosen[sig], False, "slower_in_model", None, error="the model was not faster with it")
                        for sig in drop])
        chosen = {k: v for k, v in chosen.items() if k not in drop}
    if not untuned:
        res = w.measure({}, timeout_s)
        untuned = [float(np.median(res.total))] if res.status == "ok" and res.total else [float("nan")]
    u = float(np.median(untuned))
    return u, u, {}


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
    lines = [f"device: {rep.device.short()}",
             f"tuned {len(rep.chosen)} of {len(rep.signatures)} kernel signatures in {rep.seconds:.0f} s "
             f"({rep.rounds} rounds, {rep.workers} worker{'s' if rep.workers != 1 else ''})"]
    if rep.failures:
        lines.append("failed candidates: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.failures.items())))
    if rep.pruned:
        lines.append(f"pruned without measuring: {rep.pruned} candidates (refused by the lowering's checks, or "
                     "predicted 3x slower than the default by the roofline model)")
    if rep.model_agreement is not None:
        lines.append(f"roofline model vs measured, rank correlation within a kernel's candidates: "
                     f"{rep.model_agreement:+.2f} (mean Spearman)")
    lines.append(f"model device time: untuned {rep.untuned_ms:.4f} ms, tuned {rep.tuned_ms:.4f} ms "
                 f"(x{rep.speedup:.3f})")
    rows = sorted(rep.signatures, key=lambda r: -(r.default_ms or 0))[:top]
    lines.append(f"{'node':40s} {'kind':16s} {'default ms':>10s} {'best ms':>9s}  config")
    for r in rows:
        cfg = ", ".join(f"{k}={v}" for k, v in sorted(r.config.items())) if r.config else "(default)"
        lines.append(f"{r.node[:40]:40s} {r.kind:16s} {r.default_ms or 0:10.4f} {r.best_ms or 0:9.4f}  {cfg}")
    return "\n".join(lines)
