"""Auto-tuning: search kernel configurations on the live device, keep every measurement
in a tuning database, and compile with the best ones.

    adreno-mlir tune model.onnx --db tuning.db --trials 16     # measure
    adreno_mlir.compile("model.onnx", tuning_db="tuning.db")    # use

- `db`: the SQLite database (device, driver, compiler version, kernel signature, config).
- `space`: which configurations each kernel kind tries.
- `worker`: measurement in a separate process per OpenCL device (a hang or a driver
  crash kills the worker, never the tuner).
- `tuner`: the search (ordered by the learned cost model where one ships for the device,
  else Optuna's TPE sampler per kernel signature, exhaustive for small spaces), failure
  bisection, the progress bar, resume.
- `cost_model`: the learned defaults (and the search's order) from the tuning corpus.
- `ray_pool`: the same workers as Ray actors, one per device, on one machine or a cluster.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

from adreno_mlir.errors import CompileError


def overrides_file_for(device, tuning_db=None, overrides=None) -> str:
    """The JSON file select-kernel-config reads for a compile: the tuning database's best
    entries for `device` (this driver, this compiler) merged with `overrides` (a file
    or a dict; its entries win). Written once per content into `cache_root("overrides")`
    ($ADRENO_MLIR_CACHE_DIR/overrides when that is set, else the user cache folder's),
    so the pipeline string that names it replays on this machine (`compile -o DIR` copies
    it into DIR as overrides.json for elsewhere)."""
    merged: dict[str, Any] = {}
    if tuning_db is not None:
        from adreno_mlir.tuning.db import TuningDB, device_key

        if not Path(tuning_db).is_file():
            raise CompileError(f"tuning database {tuning_db} does not exist (create one with `adreno-mlir tune`)")
        key = device_key(device)
        with TuningDB(tuning_db) as db:
            merged.update(db.best_configs(key, measured_defaults=True))
            others = db.other_keys(key)
        if others:
            shown = "; ".join(f"{k.short()}: {n} rows" for k, n in others[:3])
            warnings.warn(f"tuning database {tuning_db}: ignored {sum(n for _, n in others)} entries measured on other "
                          f"devices, drivers or compiler versions ({shown}{' ...' if len(others) > 3 else ''}); "
                          f"this device is {key.short()}", stacklevel=3)
    if overrides is not None:
        if isinstance(overrides, dict):
            merged.update(overrides)
        else:
            from adreno_mlir.lowering.families import load_overrides

            merged.update(load_overrides(str(overrides)))
    text = json.dumps({k: {kk: list(vv) if isinstance(vv, tuple) else vv for kk, vv in v.items()}
                       for k, v in sorted(merged.items())}, indent=1)
    from adreno_mlir.runtime.program_cache import cache_root

    folder = cache_root("overrides").absolute()  # the pipeline string names it from any folder
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.is_file():
        tmp = path.with_suffix(f".{id(text)}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    if '"' in str(path):
        raise CompileError(f"the cache folder {folder} has a double quote in its path; set ADRENO_MLIR_CACHE_DIR "
                           "(or XDG_CACHE_HOME) elsewhere")
    return str(path)
