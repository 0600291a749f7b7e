"""Tuning workers as Ray actors: one per OpenCL device, on this machine or a cluster.

Each actor holds a `DeviceWorker` (so a hang or a driver crash still costs only that
worker's child process) and answers `start` / `measure` like a local worker; the tuner
drives every worker from one thread each and writes every result into its one database.

- Without an address, a local Ray starts with one actor per device spec given (two PoCL
  workers in the tests; one per GPU on a multi-GPU machine).
- With `--ray-address`, the tuner joins that cluster and places one actor on every alive
  node (each node measures its own default OpenCL device, e.g. the phone attached to
  it); the model's bytes travel with the job.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from adreno_mlir.errors import CompileError
from adreno_mlir.tuning.worker import DeviceWorker, Job, Result, Setup


class _Actor:
    def __init__(self, job: Job, name: str):
        self.worker = DeviceWorker(job, name)

    def start(self) -> Setup:
        return self.worker.start()

    def measure(self, overrides, timeout: float) -> Result:
        return self.worker.measure(overrides, timeout)

    def stop(self) -> None:
        self.worker.close()


class RayWorker:
    """A local stand-in for one actor, with DeviceWorker's interface (`close` ends it)."""

    def __init__(self, actor, name: str):
        self.actor = actor
        self.name = name

    def start(self) -> Setup:
        import ray

        try:
            return ray.get(self.actor.start.remote())
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if getattr(e, "cause", None) is not None else e
            raise CompileError(f"Ray worker {self.name}: {cause}") from None

    def measure(self, overrides, timeout: float) -> Result:
        import ray

        try:
            return ray.get(self.actor.measure.remote(overrides, timeout), timeout=timeout + 600)
        except (ray.exceptions.RayError, TimeoutError) as e:
            return Result("crash", error=f"Ray worker {self.name}: {type(e).__name__}: {e}"[:2000], worker=self.name)

    def close(self) -> None:
        import ray

        try:
            ray.get(self.actor.stop.remote(), timeout=30)
            ray.kill(self.actor)
        except Exception:  # noqa: BLE001 - the actor may be gone already
            pass


def ray_workers(jobs: list[Job], address: str | None) -> list[RayWorker]:
    """Start the actors (and Ray itself, when it is not running yet)."""
    try:
        import ray
    except ImportError:
        raise CompileError("tune --ray needs Ray: pip install 'ray>=2.9' (or adreno-mlir[tune-ray])") from None
    if not ray.is_initialized():
        kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=max(2, len(jobs)), **kwargs)
    actor_cls = ray.remote(num_cpus=1)(_Actor)
    if not address:
        return [RayWorker(actor_cls.options(name=None).remote(j, f"ray{i}"), f"ray{i}") for i, j in enumerate(jobs)]
    # A cluster: one actor per alive node, each measuring its own default device (or the
    # first job's device spec), with the model's bytes in the job.
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    job = jobs[0]
    if isinstance(job.model, str):
        job = dataclasses.replace(job, model=Path(job.model).read_bytes())
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if not nodes:
        raise CompileError(f"the Ray cluster at {address} has no alive nodes")
    return [RayWorker(actor_cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                      .remote(job, f"ray-{n.get('NodeManagerHostname', i)}"), f"ray-{n.get('NodeManagerHostname', i)}")
            for i, n in enumerate(nodes)]
