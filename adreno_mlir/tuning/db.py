"""The tuning database: every measured kernel configuration, in SQLite.

One row per (device, driver, compiler version, kernel signature, configuration), with its
status and its measured times (shared/design/pipeline.md, contract 3):

    status   'ok'                 measured; `median_ms` is the kernel's device time
             'compile_error'      the compiler refused the configuration (a CompileError)
             'build_error'        the OpenCL compiler rejected the program
             'wrong_output'       the model's outputs differed from the default's
             'timeout'            the measurement did not finish in time (a hang)
             'crash'              the measuring process died (a driver crash)
             'slower_in_model'    faster alone, but the whole model was not faster with it

A failed configuration is kept so it is never tried, or chosen, again. `best_configs`
turns the rows for one device, driver and compiler version into the override file of
select-kernel-config; rows of other devices, drivers or compiler versions are counted
and reported, never used.

SQLite through the standard library: one file, safe to copy between machines,
transactions so an interrupted run loses at most the round in flight. Writes come from
one process (the tuner's driver; Ray workers send their results back to it).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adreno_mlir.errors import AdrenoError, read_json

SCHEMA_VERSION = 1

STATUSES = ("ok", "compile_error", "build_error", "wrong_output", "timeout", "crash", "slower_in_model")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    device      TEXT NOT NULL,   -- OpenCL platform / device name
    driver      TEXT NOT NULL,   -- CL_DRIVER_VERSION
    compiler    TEXT NOT NULL,   -- adreno_mlir.tuning.compiler_version()
    signature   TEXT NOT NULL,   -- lowering.families.kernel_signature
    config      TEXT NOT NULL,   -- canonical JSON of the full kernel_config
    is_default  INTEGER NOT NULL,-- 1: the configuration select-kernel-config chose
    status      TEXT NOT NULL,
    median_ms   REAL,            -- median device time of the kernel's launches (status ok)
    times_ms    TEXT,            -- JSON list: every repeat's time
    error       TEXT,            -- why it failed (first lines)
    model       TEXT,            -- the model it was measured in (informative)
    worker      TEXT,            -- which worker measured it
    created     REAL NOT NULL,
    PRIMARY KEY (device, driver, compiler, signature, config)
);
CREATE TABLE IF NOT EXISTS decisions (
    device      TEXT NOT NULL,
    driver      TEXT NOT NULL,
    compiler    TEXT NOT NULL,
    signature   TEXT NOT NULL,
    config      TEXT,            -- the configuration to use; NULL: the default
    model       TEXT,            -- the model whose tuning run decided it
    created     REAL NOT NULL,
    PRIMARY KEY (device, driver, compiler, signature)
);
"""


class TuningDBError(AdrenoError):
    """A tuning database that cannot be opened, read or written."""


def canonical(config: dict[str, Any]) -> str:
    """The JSON text a configuration is stored (and compared) as."""
    return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in sorted(config.items())},
                      separators=(",", ":"))


@dataclass(frozen=True)
class DeviceKey:
    """Which device (and driver, and compiler) a row was measured with."""

    device: str
    driver: str
    compiler: str

    def short(self) -> str:
        return f"{self.device} (driver {self.driver}, compiler {self.compiler})"


@dataclass(frozen=True)
class Row:
    signature: str
    config: dict[str, Any]
    is_default: bool
    status: str
    median_ms: float | None
    times_ms: tuple[float, ...] = ()
    error: str = ""
    model: str = ""
    worker: str = ""


class TuningDB:
    """A tuning database file (created when missing)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            if self.path.parent and not self.path.parent.exists():
                raise TuningDBError(f"tuning database {self.path}: folder {self.path.parent} does not exist")
            self.conn = sqlite3.connect(str(self.path), timeout=30)
            self.conn.executescript(_SCHEMA)
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                with self.conn:
                    self.conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise TuningDBError(f"tuning database {self.path} has schema version {row[0]}; this adreno-mlir "
                                    f"reads version {SCHEMA_VERSION}: tune again into a new file")
        except sqlite3.DatabaseError as e:
            raise TuningDBError(f"{self.path} is not a tuning database (SQLite: {e})") from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> TuningDB:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    def record(self, key: DeviceKey, rows: Iterable[Row]) -> None:
        """Store measurements (one transaction); a configuration measured again replaces
        its row unless the new one failed and the old one did not."""
        now = time.time()
        with self.conn:
            for r in rows:
                if r.status not in STATUSES:
                    raise ValueError(f"unknown status {r.status!r}")
                params = (key.device, key.driver, key.compiler, r.signature, canonical(r.config))
                if r.status != "ok":
                    old = self.conn.execute(
                        "SELECT status FROM measurements WHERE device=? AND driver=? AND compiler=? AND signature=? "
                        "AND config=?", params).fetchone()
                    if old is not None and old[0] == "ok" and r.status in ("timeout", "crash"):
                        continue  # a flaky machine must not poison a configuration that ran before
                self.conn.execute(
                    "INSERT OR REPLACE INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (*params, int(r.is_default), r.status, r.median_ms, json.dumps(list(r.times_ms)),
                     r.error[:2000], r.model, r.worker, now))

    # ------------------------------------------------------------------ reading

    def rows(self, key: DeviceKey, signatures: Iterable[str] | None = None) -> list[Row]:
        """Every row of `key` (optionally only these signatures)."""
        cur = self.conn.execute(
            "SELECT signature, config, is_default, status, median_ms, times_ms, error, model, worker "
            "FROM measurements WHERE device=? AND driver=? AND compiler=?", (key.device, key.driver, key.compiler))
        wanted = set(signatures) if signatures is not None else None
        out = []
        for sig, cfg, dflt, status, med, times, err, model, worker in cur:
            if wanted is not None and sig not in wanted:
                continue
            out.append(Row(sig, _config(cfg), bool(dflt), status, med, tuple(json.loads(times or "[]")),
                           err or "", model or "", worker or ""))
        return out

    def decide(self, key: DeviceKey, decisions: dict[str, dict[str, Any] | None], model: str = "") -> None:
        """Record the tuner's confirmed choice per signature (None: keep the default)."""
        now = time.time()
        with self.conn:
            for sig, cfg in decisions.items():
                self.conn.execute("INSERT OR REPLACE INTO decisions VALUES (?,?,?,?,?,?,?)",
                                  (key.device, key.driver, key.compiler, sig,
                                   None if cfg is None else canonical(cfg), model, now))

    def decisions(self, key: DeviceKey) -> dict[str, dict[str, Any] | None]:
        cur = self.conn.execute("SELECT signature, config FROM decisions WHERE device=? AND driver=? AND compiler=?",
                                (key.device, key.driver, key.compiler))
        return {sig: (None if cfg is None else _config(cfg)) for sig, cfg in cur}

    def best_configs(self, key: DeviceKey, margin: float = 0.02,
                     measured_defaults: bool = False) -> dict[str, dict[str, Any]]:
        """{signature: config} to compile with on this device, driver and compiler: the
        tuner's confirmed decisions (a tuning run that finished checked them in the whole
        model); for signatures no finished run decided (an interrupted run, imported
        rows), the best measured configuration if it beats the default by more than
        `margin`. The default itself is written only with `measured_defaults`: for every
        signature whose measured best is its default (the rules' config), so that a compile
        with learned defaults (adreno_mlir.tuning.cost_model) keeps what was measured."""
        decided = self.decisions(key)
        best: dict[str, Row] = {}
        default: dict[str, float] = {}
        rules: dict[str, dict[str, Any]] = {}
        for r in self.rows(key):
            if r.status != "ok" or r.median_ms is None:
                continue
            if r.is_default:
                default[r.signature] = r.median_ms
                rules[r.signature] = r.config
            elif r.signature not in best or r.median_ms < best[r.signature].median_ms:
                best[r.signature] = r
        out = {sig: r.config for sig, r in best.items()
               if sig in default and r.median_ms < default[sig] * (1 - margin) and sig not in decided}
        out.update({sig: cfg for sig, cfg in decided.items() if cfg is not None})
        if measured_defaults:
            out.update({sig: cfg for sig, cfg in rules.items() if sig not in out})
        return out

    def other_keys(self, key: DeviceKey) -> list[tuple[DeviceKey, int]]:
        """The other (device, driver, compiler) keys in the file, with their row counts."""
        cur = self.conn.execute(
            "SELECT device, driver, compiler, COUNT(*) FROM measurements GROUP BY device, driver, compiler")
        return [(DeviceKey(d, v, c), n) for d, v, c, n in cur if DeviceKey(d, v, c) != key]

    def summary(self) -> list[tuple[DeviceKey, dict[str, int]]]:
        """Per key: how many rows of each status."""
        cur = self.conn.execute(
            "SELECT device, driver, compiler, status, COUNT(*) FROM measurements GROUP BY device, driver, compiler, "
            "status ORDER BY device, driver, compiler")
        out: dict[DeviceKey, dict[str, int]] = {}
        for d, v, c, s, n in cur:
            out.setdefault(DeviceKey(d, v, c), {})[s] = n
        return list(out.items())

    # ------------------------------------------------------------------ moving between machines

    def export_json(self, path: str | Path, compact: bool = False) -> int:
        """Write every row as JSON (`adreno-mlir tune --export`); returns the row count.
        A name ending in `.gz` is gzipped. `compact`: without each row's per-repeat times
        and one row per line (the tuning corpus kept in the repository, tuning-corpus/)."""
        cur = self.conn.execute("SELECT * FROM measurements ORDER BY device, driver, compiler, signature")
        cols = [c[0] for c in cur.description]
        rows = [dict(zip(cols, r)) for r in cur]
        for r in rows:
            r["config"] = json.loads(r["config"])
            r["times_ms"] = [] if compact else json.loads(r["times_ms"] or "[]")
            r["is_default"] = bool(r["is_default"])
        cur = self.conn.execute("SELECT * FROM decisions ORDER BY device, driver, compiler, signature")
        cols = [c[0] for c in cur.description]
        decisions = [dict(zip(cols, r)) for r in cur]
        for d in decisions:
            d["config"] = None if d["config"] is None else json.loads(d["config"])
        doc = {"format": "adreno-mlir-tuning", "schema": SCHEMA_VERSION, "rows": rows, "decisions": decisions}
        if compact:  # one row per line: a corpus that grows by sessions diffs by rows
            text = ("{" + ", ".join(f'"{k}": {json.dumps(doc[k])}' for k in ("format", "schema"))
                    + ',\n"rows": [\n' + ",\n".join(json.dumps(r, sort_keys=True) for r in rows)
                    + '],\n"decisions": [\n' + ",\n".join(json.dumps(d, sort_keys=True) for d in decisions) + "]}\n")
        else:
            text = json.dumps(doc, indent=1)
        if str(path).endswith(".gz"):
            import gzip

            with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
                f.write(text.encode())  # no time in the header: the same rows give the same bytes
        else:
            Path(path).write_text(text)
        return len(rows)

    def import_json(self, path: str | Path) -> int:
        """Merge rows exported elsewhere (`adreno-mlir tune --import`); a row already here
        is kept when it is newer. Returns how many rows were taken."""
        data = read_json(path, TuningDBError)
        if not isinstance(data, dict) or data.get("format") != "adreno-mlir-tuning":
            raise TuningDBError(f"{path} is not an adreno-mlir tuning export (`adreno-mlir tune --export`)")
        if data.get("schema") != SCHEMA_VERSION:
            raise TuningDBError(f"{path} has schema version {data.get('schema')}; this adreno-mlir reads "
                                f"{SCHEMA_VERSION}")
        taken = 0
        with self.conn:
            for r in data["rows"]:
                try:
                    params = (r["device"], r["driver"], r["compiler"], r["signature"], canonical(r["config"]))
                    old = self.conn.execute(
                        "SELECT created FROM measurements WHERE device=? AND driver=? AND compiler=? AND signature=? "
                        "AND config=?", params).fetchone()
                    if old is not None and old[0] >= r["created"]:
                        continue
                    if r["status"] not in STATUSES:
                        raise KeyError("status")
                    self.conn.execute(
                        "INSERT OR REPLACE INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (*params, int(bool(r["is_default"])), r["status"], r["median_ms"],
                         json.dumps(r.get("times_ms", [])), r.get("error", ""), r.get("model", ""),
                         r.get("worker", ""), float(r["created"])))
                except (KeyError, TypeError) as e:
                    raise TuningDBError(f"{path}: a row lacks or misspells field {e}: {str(r)[:200]}") from None
                taken += 1
            for d in data.get("decisions", []):
                try:
                    params = (d["device"], d["driver"], d["compiler"], d["signature"])
                    old = self.conn.execute("SELECT created FROM decisions WHERE device=? AND driver=? AND compiler=? "
                                            "AND signature=?", params).fetchone()
                    if old is not None and old[0] >= d["created"]:
                        continue
                    self.conn.execute("INSERT OR REPLACE INTO decisions VALUES (?,?,?,?,?,?,?)",
                                      (*params, None if d["config"] is None else canonical(d["config"]),
                                       d.get("model", ""), float(d["created"])))
                except (KeyError, TypeError) as e:
                    raise TuningDBError(f"{path}: a decision lacks or misspells field {e}: {str(d)[:200]}") from None
        return taken


def _config(text: str) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(text).items()}


def device_key(device, compiler: str | None = None) -> DeviceKey:
    """The key of a pyopencl device: platform / device name, driver version, and this
    compiler's version."""
    return DeviceKey(f"{device.platform.name.strip()} / {device.name.strip()}", device.driver_version.strip(),
                     compiler or compiler_version())


_COMPILER_VERSION: str | None = None


def compiler_version() -> str:
    """The package version plus a hash of the compiler's sources (passes, lowering,
    dialects): kernel signatures and what a configuration means may change with any of
    them, so a database row applies only to the compiler that measured it."""
    global _COMPILER_VERSION
    if _COMPILER_VERSION is None:
        from importlib.metadata import PackageNotFoundError, version

        import adreno_mlir.dialects
        import adreno_mlir.lowering
        import adreno_mlir.passes

        try:
            v = version("adreno-mlir")
        except PackageNotFoundError:
            v = "0+checkout"
        h = hashlib.sha256()
        for pkg in (adreno_mlir.dialects, adreno_mlir.lowering, adreno_mlir.passes):
            for folder in pkg.__path__:
                for f in sorted(Path(folder).rglob("*.py")):
                    h.update(f.name.encode())
                    h.update(f.read_bytes())
        _COMPILER_VERSION = f"{v}+{h.hexdigest()[:12]}"
    return _COMPILER_VERSION
