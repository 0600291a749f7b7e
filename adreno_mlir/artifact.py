"""The compiled-model artifact: `CompiledModel.save(path)` and `adreno_mlir.load(path)`.

An artifact is a directory (conventionally `X.adreno/`) holding everything needed to
run a compiled model without the compiler:

    manifest.json   format name and version, producer, target profile, plan options,
                    inputs/outputs, allocations, weights table, launches, file checksums,
                    program binaries
    kernels.cl      the OpenCL C program
    weights.bin     every weight, raw little-endian, each at a 64-byte aligned offset
    binaries/*.bin  optional: the program binary for the device it was compiled on

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    WEIGHT_ALIGNMENT,
    Plan,
    PlanError,
    unpack_weights,
    weight_chunks,
)

if TYPE_CHECKING:
    import numpy as np

    from adreno_mlir.api import CompiledModel
    from adreno_mlir.runtime.program_cache import CacheArg

FORMAT_VERSION = 4
"""Bumped on any change a reader of the previous version would misread (docs/artifact.md,
"Versioning"). Version 2 added i32 inputs (token ids, with a `bound`); version 3 constant
outputs (an output entry with a `constant` instead of an `allocation`); version 4 i32
weights (the packed words of quantized weights, `graph.matmul_nbits`). An artifact is
written with the lowest version that holds it (`format_version_of`): one whose inputs
are all f32 and whose outputs are all computed is still version 1, which every earlier
reader (the C runtime included) runs. `load()` accepts versions 1 to 4."""

READ_VERSIONS = (1, 2, 3, 4)


def format_version_of(plan: Plan) -> int:
    """The lowest format version that holds `plan`."""
    if any(w.dtype == "i32" for w in plan.weights):
        return 4
    if plan.constant_outputs:
        return 3
    return 2 if any(t.dtype != "f32" for t in plan.inputs) else 1


class ArtifactError(CompileError):
    """An artifact that cannot be read or written; the message names the file."""


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


def save_artifact(path: str | Path, *, plan: Plan, weights: Sequence[np.ndarray], source: str,
                  target: str, options: Mapping[str, Any], plan_description: str,
                  binaries: Sequence[ProgramBinary] = ()) -> Path:
    """Write an artifact directory at `path` (replacing an older artifact there) and
    return its path. `weights` are the arrays of `plan.weights`, in order."""
    path = check_save_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 would make the artifact private
        files: dict[str, dict[str, Any]] = {}

        def record(name: str) -> None:
            files[name] = {"sha256": _sha256(tmp / name), "bytes": (tmp / name).stat().st_size}

        (tmp / SOURCE_FILE).write_bytes(source.encode("utf-8"))
        record(SOURCE_FILE)
        with (tmp / WEIGHTS_FILE).open("wb") as f:
            for chunk in weight_chunks(plan, weights):
                f.write(chunk)
        record(WEIGHTS_FILE)
        binary_entries = []
        for i, b in enumerate(binaries):
            name = f"{BINARIES_DIR}/{i}-{_slug(b.device)}.bin"
            (tmp / BINARIES_DIR).mkdir(exist_ok=True)
            (tmp / name).write_bytes(b.data)
            record(name)
            binary_entries.append({"file": name, "device": b.device, "platform": b.platform,
                                   "device_version": b.device_version, "driver_version": b.driver_version,
                                   "build_options": list(b.build_options)})
        body = plan.to_json()
        manifest = {
            "format": FORMAT_NAME,
            "format_version": format_version_of(plan),
            "producer": {"name": "adreno-mlir", "version": _producer_version()},
            "target": target,
            "plan": plan_description,
            "options": dict(options),
            "program": {"source": SOURCE_FILE, "build_options": body["build_options"],
                        "kernels": plan.kernel_names},
            "inputs": body["inputs"],
            "outputs": body["outputs"],
            "allocations": body["allocations"],
            "weights": {"file": WEIGHTS_FILE, "alignment": WEIGHT_ALIGNMENT, "bytes": plan.weights_nbytes,
                        "entries": body["weights"]},
            "launches": body["launches"],
            "binaries": binary_entries,
            "files": files,
        }
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
        self.input_names = [t.name for t in plan.inputs]
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


def _plan_of(manifest: Mapping[str, Any], file: Path) -> Plan:
    try:
        weights = manifest["weights"]
        return Plan.from_json({
            "allocations": manifest["allocations"], "weights": weights["entries"],
            "inputs": manifest["inputs"], "outputs": manifest["outputs"], "launches": manifest["launches"],
            "build_options": manifest["program"]["build_options"]})
    except (KeyError, TypeError) as e:
        raise ArtifactError(f"{file} is malformed: missing or wrong field {e}") from None
    except PlanError as e:
        raise ArtifactError(f"{file}: {e}") from None


def load(path: str | Path, device: str | None = None, cache: CacheArg = None,
         runtime: str | None = None) -> LoadedModel:
    """Load an artifact written by `CompiledModel.save` / `adreno-mlir compile -o X.adreno`.

    device: the OpenCL device (as in `compile`; default PYOPENCL_CTX, else PoCL).
    cache:  the program binary cache (None: default folder, False: off, or a folder),
            used when the artifact has no binary for this device and driver.
    runtime: "auto" (default, or $ADRENO_MLIR_RUNTIME), "native" or "pyopencl", as in
            `compile` (the launch path of `run`).
    No xDSL, no lowering: the manifest's plan is instantiated as it is."""
    from adreno_mlir.runtime.device import default_context
    from adreno_mlir.runtime.executor import Executable
    from adreno_mlir.runtime.native import resolve_runtime
    from adreno_mlir.runtime.program_cache import cache_dir

    start = time.perf_counter()
    cache_dir(cache)  # a bad `cache` argument fails before any work
    runtime = resolve_runtime(runtime)
    root, manifest = read_manifest(path)
    plan = _plan_of(manifest, root / MANIFEST)
    files = manifest.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise ArtifactError(f"{root / MANIFEST}: 'files' must map file names to {{sha256, bytes}} objects")
    source_name = manifest["program"].get("source", SOURCE_FILE)
    weights_name = manifest["weights"].get("file", WEIGHTS_FILE)
    source = _read_checked(root, source_name, files).decode("utf-8")
    blob = _read_checked(root, weights_name, files)
    try:
        weights = unpack_weights(plan, blob)
    except PlanError as e:
        raise ArtifactError(f"{root / weights_name}: {e}") from None
    context = default_context(device)
    cl_device = context.devices[0]
    binary = None
    for entry in manifest.get("binaries", []):
        candidate = ProgramBinary(entry.get("device", ""), entry.get("platform", ""), entry.get("device_version", ""),
                                  entry.get("driver_version", ""), tuple(entry.get("build_options", [])), b"")
        if candidate.matches(cl_device, plan.build_options):
            binary = _read_checked(root, entry["file"], files)
            break
    executable = Executable.from_plan(plan, weights, source, context, cache=cache, binary=binary, runtime=runtime,
                                      blob=blob)
    state = executable.build_info.cache
    if state == "binary":
        origin = "artifact binary"
    elif state == "hit":
        origin = "cache hit"
    else:
        origin = f"built from source, cache {state}"
    return LoadedModel(root, manifest, source, executable, time.perf_counter() - start, origin)
