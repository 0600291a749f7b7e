"""The compiled-model artifact: `CompiledModel.save(path)` and `adreno_mlir.load(path)`.

An artifact is a directory (conventionally `X.adreno/`) holding everything needed to
run a compiled model without the compiler:

    manifest.json   format name and version, producer, target profile, plan options,
                    inputs/outputs, allocations, weights table, launches, file checksums,
                    program binaries
    kernels.cl      the OpenCL C program
    weights.bin     every weight, raw little-endian, each at a 64-byte aligned offset
    binaries/*.bin  optional: the program binary for the device it was compiled on

A decoder artifact (`Decoder.save`, format version 5) holds a decoder's two programs: one
weights.bin (a weight both programs use is stored once), prefill.cl and decode.cl, and a
manifest whose `programs` holds each program's plan and whose `decoder` holds the facts the
generation loop needs (names, vocabulary, end-of-sequence ids, context, chunk, the state).
`load()` of one returns an `adreno_mlir.generation.LoadedDecoder`.

docs/artifact.md specifies every field, precisely enough for a C runtime. `load()`
imports no xDSL and no lowering code (only this module, the plan, the executor and
the program cache), reads the manifest, checks the format version and the sha256 of
every file it uses, and instantiates the plan; the OpenCL program comes from the
embedded binary when its device, driver and build options match, else from the
program binary cache, else from the source.

Saving over an existing path: the new artifact is written to a temporary directory
beside it and renamed into place, so a reader never sees a half-written artifact and a
failed save leaves the old one intact. A path that exists but is not an artifact (no
manifest.json, or a file) is refused rather than replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from adreno_mlir.errors import CompileError
from adreno_mlir.runtime.format import (  # re-exported: adreno_mlir.artifact.FORMAT_NAME etc. still work
    BINARIES_DIR,
    FORMAT_NAME,
    MANIFEST,
    SOURCE_FILE,
    WEIGHTS_FILE,
)
from adreno_mlir.runtime.model import RunnableModel
from adreno_mlir.runtime.plan import (
    CONSTANT_DTYPES,
    DTYPES,
    WEIGHT_ALIGNMENT,
    Constant,
    Plan,
    PlanError,
    unpack_weights,
    weight_chunks,
)

if TYPE_CHECKING:
    from adreno_mlir.api import CompiledModel
    from adreno_mlir.generation import Decoder, LoadedDecoder
    from adreno_mlir.runtime.program_cache import CacheArg

FORMAT_VERSION = 5
"""Bumped on any change a reader of the previous version would misread (docs/artifact.md,
"Versioning"). Version 2 added i32 inputs (token ids, with a `bound`); version 3 constant
outputs (an output entry with a `constant` instead of an `allocation`); version 4 i32
weights (the packed words of quantized weights, `graph.matmul_nbits`); version 5 state
(inputs that live on the device between runs, never fed: a decoder's KV cache, `state`)
and decoder artifacts (a prefill and a decode program sharing one weights blob and their
state: `decoder`, `programs`). An artifact is written with the lowest version that holds it
(`format_version_of`): one whose inputs are all f32 and whose outputs are all computed is
still version 1, which every earlier reader (the C runtime included) runs. `load()` accepts
versions 1 to 5."""

READ_VERSIONS = (1, 2, 3, 4, 5)

STATE_VERSION = 5
"""The version that added `state` and decoder artifacts (every decoder artifact has it)."""

DECODER_PROGRAMS = ("prefill", "decode")
"""The programs of a decoder artifact, by their key in `programs`."""

DECODER_SOURCES = {"prefill": "prefill.cl", "decode": "decode.cl"}
"""Where a decoder artifact keeps each program's OpenCL C (its `program.source` names it)."""


def format_version_of(plan: Plan) -> int:
    """The lowest format version that holds `plan` (a decoder artifact is always 5)."""
    if plan.states:
        return STATE_VERSION
    if any(w.dtype == "i32" for w in plan.weights):
        return 4
    if plan.constant_outputs:
        return 3
    return 2 if any(t.dtype != "f32" for t in plan.inputs) else 1


class ArtifactError(CompileError):
    """An artifact that cannot be read or written; the message names the file."""


class DecoderArtifactError(ArtifactError, AttributeError):
    """A decoder artifact used where one model is expected (its `run`, `input_names`, ...):
    also an AttributeError, so `hasattr(loaded, "run")` is False."""


@dataclass(frozen=True)
class ProgramBinary:
    """A program binary and the exact device, driver and options it was built for."""

    device: str
    platform: str
    device_version: str
    driver_version: str
    build_options: tuple[str, ...]
    data: bytes

    @staticmethod
    def of(program, device, build_options: Sequence[str]) -> ProgramBinary | None:
        """The binary of a built `program` for `device` (a cl.Device), or None when
        the driver hands out none (then the artifact simply carries no binary)."""
        import pyopencl as cl

        from adreno_mlir.runtime.program_cache import program_binary

        try:
            data = program_binary(program, device)
        except (cl.Error, ValueError):
            return None
        if not data:
            return None
        return ProgramBinary(device.name, device.platform.name, device.version.strip(), device.driver_version,
                             tuple(build_options), data)

    def matches(self, device, build_options: Sequence[str]) -> bool:
        """Whether the binary was built for `device` (a cl.Device) with these options."""
        return (self.device == device.name and self.driver_version == device.driver_version
                and self.platform == device.platform.name and tuple(self.build_options) == tuple(build_options))


# --------------------------------------------------------------------------- saving


def _producer_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("adreno-mlir")
    except PackageNotFoundError:  # running from a source checkout
        return "unknown"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:48] or "device"


def _dump_json(value: Any, indent: str = "") -> str:
    """JSON with one line per allocation, weight and launch (whatever fits in 120
    characters stays on one line): a manifest a person can read and diff."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(indent) + len(flat) <= 120 or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_dump_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return "[\n" + ",\n".join(inner + _dump_json(v, inner) for v in value) + "\n" + indent + "]"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_save_path(path: str | Path) -> Path:
    """`path` as a Path if an artifact may be saved there (nothing there, or an older
    artifact to replace); anything else there is refused, never replaced. The CLI asks
    before compiling, so a refusal costs no compile."""
    path = Path(path)
    if path.exists() and not (path.is_dir() and (path / MANIFEST).is_file()):
        raise ArtifactError(f"refusing to overwrite {path}: it exists and is not an adreno-mlir artifact "
                            f"(no {MANIFEST}); choose another path or remove it")
    return path


def _write_artifact(path: str | Path, fill: Callable[[Path, Callable[[str], None]], dict[str, Any]]) -> Path:
    """Write an artifact directory at `path` (replacing an older artifact there): `fill(tmp,
    record)` writes the files into the temporary directory `tmp`, calls `record(name)` for
    each and returns the manifest, to which the files' checksums are added."""
    path = check_save_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 would make the artifact private
        files: dict[str, dict[str, Any]] = {}

        def record(name: str) -> None:
            files[name] = {"sha256": _sha256(tmp / name), "bytes": (tmp / name).stat().st_size}

        manifest = fill(tmp, record)
        manifest["files"] = files
        (tmp / MANIFEST).write_text(_dump_json(manifest) + "\n")
        try:
            if path.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
                os.replace(path, old / path.name)
                try:
                    os.replace(tmp, path)
                except BaseException:
                    os.replace(old / path.name, path)  # the older artifact goes back in place
                    shutil.rmtree(old, ignore_errors=True)
                    raise
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, path)
        except OSError as e:
            raise ArtifactError(f"{path}: cannot put the artifact in place ({e.strerror or e}); another "
                                "process may be saving to the same path: save again") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _write_binaries(tmp: Path, record: Callable[[str], None], binaries: Sequence[ProgramBinary],
                    prefix: str = "") -> list[dict[str, Any]]:
    entries = []
    for i, b in enumerate(binaries):
        name = f"{BINARIES_DIR}/{prefix}{i}-{_slug(b.device)}.bin"
        (tmp / BINARIES_DIR).mkdir(exist_ok=True)
        (tmp / name).write_bytes(b.data)
        record(name)
        entries.append({"file": name, "device": b.device, "platform": b.platform,
                        "device_version": b.device_version, "driver_version": b.driver_version,
                        "build_options": list(b.build_options)})
    return entries


def _header(version: int, target: str, plan_description: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return {"format": FORMAT_NAME, "format_version": version,
            "producer": {"name": "adreno-mlir", "version": _producer_version()},
            "target": target, "plan": plan_description, "options": dict(options)}


def save_artifact(path: str | Path, *, plan: Plan, weights: Sequence[np.ndarray], source: str,
                  target: str, options: Mapping[str, Any], plan_description: str,
                  binaries: Sequence[ProgramBinary] = ()) -> Path:
    """Write an artifact directory at `path` (replacing an older artifact there) and
    return its path. `weights` are the arrays of `plan.weights`, in order."""

    def fill(tmp: Path, record: Callable[[str], None]) -> dict[str, Any]:
        (tmp / SOURCE_FILE).write_bytes(source.encode("utf-8"))
        record(SOURCE_FILE)
        with (tmp / WEIGHTS_FILE).open("wb") as f:
            for chunk in weight_chunks(plan, weights):
                f.write(chunk)
        record(WEIGHTS_FILE)
        binary_entries = _write_binaries(tmp, record, binaries)
        body = plan.to_json()
        return {
            **_header(format_version_of(plan), target, plan_description, options),
            "program": {"source": SOURCE_FILE, "build_options": body["build_options"],
                        "kernels": plan.kernel_names},
            "inputs": body["inputs"],
            "outputs": body["outputs"],
            **({"state": body["state"]} if plan.states else {}),
            "allocations": body["allocations"],
            "weights": {"file": WEIGHTS_FILE, "alignment": WEIGHT_ALIGNMENT, "bytes": plan.weights_nbytes,
                        "entries": body["weights"]},
            "launches": body["launches"],
            "binaries": binary_entries,
        }

    return _write_artifact(path, fill)


class _SharedBlob:
    """The weights blob of a decoder artifact: every weight of both programs, a weight of
    the same name, dtype and bytes once (both plans' entries point at it), then the values of
    constant outputs; each at a WEIGHT_ALIGNMENT-aligned offset."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, np.dtype, np.ndarray]] = []  # (offset, dtype, values) in offset order
        self._seen: dict[tuple[str, str, int], list[tuple[np.ndarray, int]]] = {}
        self.end = 0

    def _append(self, dtype: np.dtype, arr: np.ndarray) -> int:
        offset = -(-self.end // WEIGHT_ALIGNMENT) * WEIGHT_ALIGNMENT
        self.entries.append((offset, dtype, arr))
        self.end = offset + arr.nbytes
        return offset

    def weight(self, name: str, dtype: str, arr: np.ndarray) -> int:
        arr = np.ascontiguousarray(arr, dtype=DTYPES[dtype]).reshape(-1)
        same = self._seen.setdefault((name, dtype, arr.nbytes), [])
        for other, offset in same:  # bit for bit: the same name and dtype may carry other values
            if other is arr or np.array_equal(other.view(np.uint8), arr.view(np.uint8)):
                return offset
        offset = self._append(np.dtype(DTYPES[dtype]), arr)
        same.append((arr, offset))
        return offset

    def constant(self, dtype: str, arr: np.ndarray) -> int:
        return self._append(np.dtype(CONSTANT_DTYPES[dtype]), np.ascontiguousarray(arr).reshape(-1))

    def chunks(self) -> Iterator[bytes]:
        position = 0
        for offset, dtype, arr in self.entries:
            yield bytes(offset - position)
            yield np.ascontiguousarray(arr, dtype=dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype).tobytes()
            position = offset + arr.nbytes


def save_decoder(dec: Decoder, path: str | Path, *, binaries: bool = True) -> Path:
    """`Decoder.save`: both programs of a compiled decoder as one decoder artifact (format
    version 5, docs/artifact.md "Decoder artifacts")."""

    models = {"prefill": dec.prefill, "decode": dec.decode}
    if any(cm.executable is None for cm in models.values()):
        raise ArtifactError("this Decoder has no executables to save")
    blob = _SharedBlob()
    plans: dict[str, Plan] = {}
    for name, cm in models.items():  # every weight first, then (after all of them) the constant outputs
        ex = cm.executable
        plans[name] = replace(ex.plan, weights=tuple(
            replace(w, offset=blob.weight(w.name, w.dtype, arr))
            for w, arr in zip(ex.plan.weights, ex.weight_arrays[:len(ex.plan.weights)], strict=True)))
    for name, cm in models.items():
        values = iter(cm.executable.weight_arrays[len(cm.executable.plan.weights):])
        plans[name] = replace(plans[name], outputs=tuple(
            t if t.constant is None else replace(t, constant=Constant(blob.constant(t.dtype, next(values)),
                                                                      t.constant.nbytes))
            for t in plans[name].outputs))
    decode_plan = plans["decode"]
    state_bytes = {st.input: decode_plan.allocations[st.allocation].nbytes for st in decode_plan.states}
    facts = dec.signature
    embedded = {name: ProgramBinary.of(cm.executable.program, cm.executable.device, plans[name].build_options)
                if binaries else None for name, cm in models.items()}

    def fill(tmp: Path, record: Callable[[str], None]) -> dict[str, Any]:
        with (tmp / WEIGHTS_FILE).open("wb") as f:
            for chunk in blob.chunks():
                f.write(chunk)
        record(WEIGHTS_FILE)
        programs = {}
        for name, cm in models.items():
            plan, source_name = plans[name], DECODER_SOURCES[name]
            (tmp / source_name).write_bytes(cm.source.encode("utf-8"))
            record(source_name)
            body = plan.to_json()
            programs[name] = {
                "program": {"source": source_name, "build_options": body["build_options"],
                            "kernels": plan.kernel_names},
                "inputs": body["inputs"], "outputs": body["outputs"], "state": body.get("state", []),
                "allocations": body["allocations"],
                "weights": {"file": WEIGHTS_FILE, "alignment": WEIGHT_ALIGNMENT, "bytes": blob.end,
                            "entries": body["weights"]},
                "launches": body["launches"],
                "binaries": _write_binaries(tmp, record, [embedded[name]] if embedded[name] else [], f"{name}-"),
            }
        return {
            **_header(STATE_VERSION, dec.decode.options.get("target", ""), dec.decode.plan, dec.decode.options),
            "decoder": {**facts.to_json(), "max_context": dec.max_context, "prefill_chunk": dec.prefill_chunk,
                        "state": [{"input": past, "output": present, "bytes": state_bytes[past]}
                                  for past, present in facts.caches]},
            "weights": {"file": WEIGHTS_FILE, "alignment": WEIGHT_ALIGNMENT, "bytes": blob.end},
            "programs": programs,
        }

    return _write_artifact(path, fill)


def save_compiled(cm: CompiledModel, path: str | Path, *, binaries: bool = True) -> Path:
    """`CompiledModel.save`: the compiled model's plan, weights, source and options;
    with `binaries`, also the program binary of the device it was built on (skipped,
    without failing, when the driver does not hand one out)."""
    ex = cm.executable
    if ex is None:
        raise ArtifactError("this CompiledModel has no executable to save")
    embedded = ProgramBinary.of(ex.program, ex.device, ex.plan.build_options) if binaries else None
    plan, arrays = ex.plan, ex.weight_arrays
    return save_artifact(path, plan=plan, weights=arrays, source=cm.source,
                         target=cm.options.get("target", ""), options=cm.options,
                         plan_description=cm.plan, binaries=[embedded] if embedded else [])


# --------------------------------------------------------------------------- loading


class LoadedModel(RunnableModel):
    """A model loaded from an artifact: `run(feeds)` and `profile(feeds)` as on a
    `CompiledModel`, without the compiler.

    Attributes: `path`, `manifest` (the parsed manifest.json), `source` (OpenCL C),
    `plan` (the plan description string), `options`, `target`, `input_names`,
    `output_names`, `input_shapes`, `output_shapes`, `executable`, `load_seconds` (all
    of load(), program build included), `build_info`, `program_origin` (where the
    program came from: "artifact binary", "cache hit", "built from source, cache
    miss" or "built from source, cache off")."""

    def __init__(self, path: Path, manifest: dict[str, Any], source: str, executable, load_seconds: float,
                 program_origin: str):
        plan: Plan = executable.plan
        self.path = path
        self.manifest = manifest
        self.source = source
        self.plan = str(manifest.get("plan", ""))
        self.options = dict(manifest.get("options", {}))
        self.target = str(manifest.get("target", ""))
        self.input_names = [t.name for t in plan.fed_inputs]  # state (a KV cache) is not fed
        self.output_names = [t.name for t in plan.outputs]
        self.input_shapes = {t.name: t.shape for t in plan.inputs}
        self.output_shapes = {t.name: t.shape for t in plan.outputs}
        self.executable = executable
        self.load_seconds = load_seconds
        self.program_origin = program_origin

    def __repr__(self) -> str:
        return f"LoadedModel({str(self.path)!r}, {self.plan!r})"


def _read_checked(root: Path, name: str, files: Mapping[str, Any]) -> bytes:
    """The bytes of `root/name`, after checking them against the manifest's sha256."""
    file = root / name
    entry = files.get(name)
    if not isinstance(entry, Mapping) or "sha256" not in entry:
        raise ArtifactError(f"{root / MANIFEST} lists no sha256 for {name}; the artifact is incomplete "
                            "(save it again)")
    # As in the C runtime: only regular files inside the artifact (a FIFO would block the
    # read, a symbolic link could lead anywhere).
    if file.exists() and not file.is_file():
        raise ArtifactError(f"{file} is not a regular file; copy the whole artifact directory again")
    if file.exists() and not file.resolve().is_relative_to(root.resolve()):
        raise ArtifactError(f"{file} leads outside the artifact directory (a symbolic link?); an artifact reads "
                            "only its own files")
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(f"{file} is missing from the artifact; save or copy the whole {root.name} "
                            "directory again") from None
    except OSError as e:
        raise ArtifactError(f"cannot read {file}: {e}") from None
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ArtifactError(f"{file} is corrupted: its sha256 does not match {MANIFEST} "
                            f"({len(data)} bytes, expected {entry.get('bytes', '?')}); save the artifact again")
    return data


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a key given twice is an error, as in the C runtime (readers
    disagree on which one wins, so such a manifest would mean different things)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in an object")
        out[key] = value
    return out


def read_manifest(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The artifact directory and its parsed manifest, with the format and its
    version checked (an artifact of another format version is a clear error)."""
    root = Path(path)
    if not root.exists():
        raise ArtifactError(f"no artifact at {root}")
    if not root.is_dir():
        raise ArtifactError(f"{root} is not an adreno-mlir artifact: artifacts are directories "
                            f"(X.adreno/ with {MANIFEST}), written by `adreno-mlir compile -o X.adreno` "
                            "or CompiledModel.save")
    file = root / MANIFEST
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"), object_pairs_hook=_unique_keys)
    except FileNotFoundError:
        raise ArtifactError(f"{root} is not an adreno-mlir artifact: {file} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:  # JSONDecodeError and duplicate keys
        raise ArtifactError(f"cannot read {file}: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise ArtifactError(f"{file} is not an adreno-mlir artifact manifest (format {found!r}, "
                            f"expected {FORMAT_NAME!r})")
    version = manifest.get("format_version")
    if version not in READ_VERSIONS:
        producer = manifest.get("producer", {})
        by = f" by adreno-mlir {producer.get('version')}" if isinstance(producer, dict) else ""
        raise ArtifactError(
            f"{file} has artifact format version {version!r}{by}; this adreno-mlir "
            f"({_producer_version()}) reads format versions {', '.join(map(str, READ_VERSIONS))} only. Recompile the model "
            "with this version (adreno-mlir compile MODEL.onnx -o X.adreno, or compile(...).save(...))")
    return root, manifest


def _plan_of(manifest: Mapping[str, Any], file: Path, version: int | None = None, where: str = "") -> Plan:
    """The plan of a manifest (or of one program of a decoder artifact's `programs`)."""
    try:
        weights = manifest["weights"]
        plan = Plan.from_json({
            "allocations": manifest["allocations"], "weights": weights["entries"],
            "inputs": manifest["inputs"], "outputs": manifest["outputs"], "launches": manifest["launches"],
            "build_options": manifest["program"]["build_options"], "state": manifest.get("state", [])})
    except (KeyError, TypeError) as e:
        raise ArtifactError(f"{file} is malformed: {where}missing or wrong field {e}") from None
    except PlanError as e:
        raise ArtifactError(f"{file}: {where}{e}") from None
    if plan.states and isinstance(version, int) and version < STATE_VERSION:
        raise ArtifactError(f"{file} is malformed: {where}'state' needs format version {STATE_VERSION} (this manifest "
                            f"says {version}); save the artifact again")
    return plan


def _checked_files(root: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    files = manifest.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise ArtifactError(f"{root / MANIFEST}: 'files' must map file names to {{sha256, bytes}} objects")
    return files


def _executable(root: Path, entry: Mapping[str, Any], plan: Plan, weights: Sequence[np.ndarray], blob: bytes,
                files: Mapping[str, Any], context, cache: CacheArg, runtime: str, memory=None):
    """A program's source, and its Executable: the embedded binary for this device when
    there is one, else the cache, else the source. Returns (source, executable, origin)."""
    from adreno_mlir.runtime.executor import Executable

    source = _read_checked(root, entry["program"].get("source", SOURCE_FILE), files).decode("utf-8")
    cl_device = context.devices[0]
    binary = None
    for b in entry.get("binaries", []):
        candidate = ProgramBinary(b.get("device", ""), b.get("platform", ""), b.get("device_version", ""),
                                  b.get("driver_version", ""), tuple(b.get("build_options", [])), b"")
        if candidate.matches(cl_device, plan.build_options):
            binary = _read_checked(root, b["file"], files)
            break
    executable = Executable.from_plan(plan, weights, source, context, cache=cache, binary=binary, runtime=runtime,
                                      blob=blob, memory=memory)
    state = executable.build_info.cache
    if state == "binary":
        origin = "artifact binary"
    elif state == "hit":
        origin = "cache hit"
    else:
        origin = f"built from source, cache {state}"
    return source, executable, origin


def load(path: str | Path, device: str | None = None, cache: CacheArg = None,
         runtime: str | None = None) -> LoadedModel | LoadedDecoder:
    """Load an artifact written by `CompiledModel.save` / `adreno-mlir compile -o X.adreno`,
    or a decoder artifact written by `Decoder.save` (then a `LoadedDecoder`: `generate()`,
    `feed`, `step`, `reset`, its two programs sharing one DeviceMemory).

    device: the OpenCL device (as in `compile`; default PYOPENCL_CTX, else PoCL).
    cache:  the program binary cache (None: default folder, False: off, or a folder),
            used when the artifact has no binary for this device and driver.
    runtime: "auto" (default, or $ADRENO_MLIR_RUNTIME), "native" or "pyopencl", as in
            `compile` (the launch path of `run`; a program with state runs on pyopencl). For a
            decoder artifact, the loop `generate` runs: "native" (and "auto" where
            libadreno_rt is built) opens the C decoder (adreno_decoder_open) and loads the
            pyopencl programs only on first use of `.prefill` / `.decode`
            (adreno_mlir.generation.load_native_decoder).
    No xDSL, no lowering: the manifest's plan is instantiated as it is."""
    from adreno_mlir.runtime.device import default_context
    from adreno_mlir.runtime.native import resolve_runtime
    from adreno_mlir.runtime.program_cache import cache_dir

    start = time.perf_counter()
    cache_dir(cache)  # a bad `cache` argument fails before any work
    runtime = resolve_runtime(runtime)
    root, manifest = read_manifest(path)
    if "programs" in manifest or "decoder" in manifest:
        return _load_decoder(root, manifest, device, cache, runtime, start)
    plan = _plan_of(manifest, root / MANIFEST, manifest.get("format_version"))
    files = _checked_files(root, manifest)
    weights_name = manifest["weights"].get("file", WEIGHTS_FILE)
    blob = _read_checked(root, weights_name, files)
    try:
        weights = unpack_weights(plan, blob)
    except PlanError as e:
        raise ArtifactError(f"{root / weights_name}: {e}") from None
    source, executable, origin = _executable(root, manifest, plan, weights, blob, files, default_context(device),
                                             cache, runtime)
    return LoadedModel(root, manifest, source, executable, time.perf_counter() - start, origin)


def _decoder_facts(manifest: Mapping[str, Any], file: Path):
    """The `decoder` object of a decoder artifact: (DecoderSignature, max_context, prefill_chunk)."""
    from adreno_mlir.generation import POSITION, DecoderSignature

    facts = manifest.get("decoder")
    programs = manifest.get("programs")
    if not isinstance(facts, Mapping) or not isinstance(programs, Mapping) or set(programs) != set(DECODER_PROGRAMS):
        raise ArtifactError(f"{file} is malformed: a decoder artifact has a 'decoder' object and 'programs' with "
                            f"exactly {' and '.join(DECODER_PROGRAMS)}; save it again with Decoder.save")
    try:
        if facts.get("position", POSITION) != POSITION:
            raise ValueError(f"position input {facts['position']!r} (this adreno-mlir feeds {POSITION!r})")
        sig = DecoderSignature(
            input_ids=str(facts["input_ids"]), attention_mask=str(facts.get("attention_mask", "attention_mask")),
            logits=str(facts["logits"]),
            caches=tuple((str(st["input"]), str(st["output"])) for st in facts["state"]),
            kv_heads=int(facts.get("kv_heads", 0)), head_dim=int(facts.get("head_dim", 0)), vocab=int(facts["vocab"]),
            max_positions=int(facts["max_positions"]), layers=int(facts.get("layers", 0)),
            eos_token_ids=tuple(int(e) for e in facts.get("eos_token_ids", [])),
            bos_token_id=None if facts.get("bos_token_id") is None else int(facts["bos_token_id"]))
        max_context, chunk = facts["max_context"], facts["prefill_chunk"]
        if not all(isinstance(v, int) and v >= 1 for v in (max_context, chunk, sig.vocab)) or chunk > max_context:
            raise ValueError(f"vocab {sig.vocab}, max_context {max_context}, prefill_chunk {chunk}: positive, "
                             "the chunk at most the context")
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"{file} is malformed: decoder: {type(e).__name__}: {e}; save it again with "
                            "Decoder.save") from None
    return sig, max_context, chunk


def _check_decoder_program(file: Path, name: str, plan: Plan, sig, tokens: int) -> None:
    """A program of a decoder artifact takes [1, tokens] token ids and the position, keeps
    every cache of the decoder as state and returns the logits [1, tokens, vocab]."""
    from adreno_mlir.generation import POSITION

    fed = {t.name: t for t in plan.fed_inputs}
    outs = {t.name: t for t in plan.outputs}
    problems = []
    ids, pos, logits = fed.get(sig.input_ids), fed.get(POSITION), outs.get(sig.logits)
    if set(fed) != {sig.input_ids, POSITION}:
        problems.append(f"it is fed {sorted(fed)}, not {sig.input_ids!r} and {POSITION!r}")
    if ids is not None and (ids.dtype != "i32" or ids.shape != (1, tokens)):
        problems.append(f"input {sig.input_ids!r} is {ids.dtype} {list(ids.shape)}, not i32 [1, {tokens}]")
    if pos is not None and (pos.dtype != "i32" or pos.count != 1):
        problems.append(f"input {POSITION!r} is {pos.dtype} {list(pos.shape)}, not i32 [1]")
    if logits is None or logits.count != tokens * sig.vocab or logits.constant is not None:
        problems.append(f"it does not compute output {sig.logits!r} of {tokens} x {sig.vocab} values")
    if {st.input for st in plan.states} != {past for past, _ in sig.caches}:
        problems.append(f"its state {sorted(st.input for st in plan.states)} is not the decoder's "
                        f"{sorted(p for p, _ in sig.caches)}")
    if problems:
        raise ArtifactError(f"{file} is malformed: programs.{name}: {'; '.join(problems)}; save it again with "
                            "Decoder.save")


def _load_decoder(root: Path, manifest: dict[str, Any], device: str | None, cache: CacheArg, runtime: str,
                  start: float) -> LoadedDecoder:
    from adreno_mlir.generation import LoadedDecoder
    from adreno_mlir.runtime.device import default_context
    from adreno_mlir.runtime.executor import DeviceMemory

    file = root / MANIFEST
    version = manifest.get("format_version")
    if version < STATE_VERSION:
        raise ArtifactError(f"{file} is malformed: a decoder artifact ('programs') needs format version "
                            f"{STATE_VERSION} (this manifest says {version}); save it again with Decoder.save")
    sig, max_context, chunk = _decoder_facts(manifest, file)
    programs = manifest["programs"]
    plans = {}
    for name, tokens in zip(DECODER_PROGRAMS, (chunk, 1)):
        if not isinstance(programs[name], Mapping):
            raise ArtifactError(f"{file} is malformed: programs.{name} must be an object")
        plans[name] = _plan_of(programs[name], file, version, f"programs.{name}: ")
        _check_decoder_program(file, name, plans[name], sig, tokens)
    if runtime != "pyopencl":  # the C decoder (runtime/c's adreno_decoder_open) when it is there
        from adreno_mlir.generation import load_native_decoder

        loaded = load_native_decoder(root, manifest, sig, max_context, chunk, device, cache, runtime, start)
        if loaded is not None:
            return loaded
    files = _checked_files(root, manifest)
    weights = manifest.get("weights")
    weights_name = weights.get("file", WEIGHTS_FILE) if isinstance(weights, Mapping) else None
    named = {programs[name].get("weights", {}).get("file") for name in DECODER_PROGRAMS}
    if weights_name is None or named != {weights_name}:
        raise ArtifactError(f"{file} is malformed: both programs of a decoder artifact read the one weights file "
                            f"named by 'weights.file' (found {sorted(map(str, named))})")
    blob = _read_checked(root, weights_name, files)
    context = default_context(device)
    memory = DeviceMemory(context)
    views: dict[tuple[int, int, str], np.ndarray] = {}  # one array per blob range: DeviceMemory uploads it once
    header = {k: manifest[k] for k in ("format", "format_version", "producer", "target", "plan", "options")
              if k in manifest}
    models = {}
    for name in DECODER_PROGRAMS:
        plan = plans[name]
        try:
            arrays = unpack_weights(plan, blob)
        except PlanError as e:
            raise ArtifactError(f"{root / weights_name}: programs.{name}: {e}") from None
        arrays = [views.setdefault((offset, nbytes, dtype.str), arr)
                  for (_, dtype, offset, nbytes), arr in zip(plan.blob_entries(), arrays)]
        t0 = time.perf_counter()
        source, executable, origin = _executable(root, programs[name], plan, arrays, blob, files, context, cache,
                                                 runtime, memory)
        models[name] = LoadedModel(root, {**header, **programs[name]}, source, executable,
                                   time.perf_counter() - t0, origin)
    return LoadedDecoder(root, manifest, sig, models["prefill"], models["decode"], memory, max_context, chunk,
                         time.perf_counter() - start)
