"""Fault hooks for tests/test_tuning.py (`tune(fault_hook="tune_faults:...")`).

Each hook runs in the tuning worker's child process with one request's overrides
({kernel signature: config}) and returns None or the fault the worker acts out
("hang", "crash", "wrong", "build"). The child is spawned after the test set its
environment, so the hooks read their parameters from it:

    TUNE_FAULT         the fault to act out
    TUNE_FAULT_PREFIX  the kernel signatures it hits (prefix; default "graph.gemm")
    TUNE_FAULT_MARKER  `first_config`: the file remembering which configuration fails
    TUNE_FAULT_LOG     a file each request's signatures and answer are appended to
"""

from __future__ import annotations

import json
import os


def _hit(overrides: dict) -> bool:
    prefix = os.environ.get("TUNE_FAULT_PREFIX", "graph.gemm")
    return any(sig.startswith(prefix) for sig in overrides)


def _log(overrides: dict, answer) -> None:
    path = os.environ.get("TUNE_FAULT_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"signatures": sorted(overrides), "fault": answer}) + "\n")


def always(overrides: dict):
    """TUNE_FAULT for every round with a signature of TUNE_FAULT_PREFIX."""
    answer = os.environ["TUNE_FAULT"] if _hit(overrides) else None
    _log(overrides, answer)
    return answer


def first_config(overrides: dict):
    """TUNE_FAULT for every round holding the first configuration of a TUNE_FAULT_PREFIX
    signature the hook was asked about (remembered in the marker file, across worker
    restarts): one configuration fails, in whatever round it is measured."""
    marker = os.environ["TUNE_FAULT_MARKER"]
    hits = {sig: cfg for sig, cfg in overrides.items() if _hit({sig: cfg})}
    if hits and not os.path.exists(marker):
        sig, cfg = min(hits.items())
        with open(marker, "w") as f:
            f.write(json.dumps({"signature": sig, "config": _plain(cfg)}))
    answer = None
    if hits and os.path.exists(marker):
        with open(marker) as f:
            chosen = json.load(f)
        if _plain(overrides.get(chosen["signature"], {})) == chosen["config"]:
            answer = os.environ["TUNE_FAULT"]
    _log(overrides, answer)
    return answer


def _plain(cfg: dict) -> dict:
    """A configuration as JSON reads it back (tuples as lists)."""
    return json.loads(json.dumps(cfg))
