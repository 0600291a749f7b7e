"""An on-disk cache of built OpenCL program binaries.

Building the generated OpenCL C from source is the slowest part of loading a
model (seconds on a phone driver, and PoCL runs the whole LLVM pipeline on the
CPU). A program binary fetched with ``clGetProgramInfo(CL_PROGRAM_BINARIES)``
can be handed back to ``clCreateProgramWithBinary`` later, which skips the
front end. This module keeps such binaries on disk, one file per program.

Key
    ``sha256`` over the source, the device's name, vendor, driver version and
    OpenCL version, the platform's name and version, the build options and
    :data:`CACHE_FORMAT_VERSION`. Anything that could make a binary invalid or
    different is part of the key, so a driver update or a changed option lands
    on a new entry instead of loading a stale one. Stale entries are never
    removed automatically; the folder can be deleted at any time.

Location
    ``<dir>/<key[:2]>/<key>.bin``. ``<dir>`` is, in order of precedence, the
    ``cache`` argument, ``$ADRENO_MLIR_CACHE_DIR``, or the platform's user cache
    folder (``platformdirs.user_cache_dir("adreno-mlir") / "programs"``).
    ``cache=False`` or ``$ADRENO_MLIR_CACHE=0`` turns the cache off.

Entry format
    A fixed header -- magic bytes, format version, payload length, sha256 of
    the payload -- followed by the driver's binary. Drivers do not reliably
    validate the binaries they are given (some crash on garbage), so an entry
    is only handed to the driver after its length and checksum match; a
    truncated or bit-flipped file is reported, deleted and rebuilt.

Atomicity
    An entry is written to a private temporary file in the entry's folder and
    moved into place with :func:`os.replace`, which is atomic on POSIX and on
    Windows. Readers therefore see either no entry, an old complete entry or a
    new complete entry; two processes filling the same cache at once each
    write their own temporary file and the last rename wins (both contents are
    valid).

Failure handling
    The cache is an optimisation and must never make a load fail: unreadable,
    unwritable or uncreatable folders, corrupt entries and binaries the driver
    refuses all produce a :class:`ProgramCacheWarning` and fall back to a
    build from source. Only a source build that fails raises (the original
    pyopencl error, which the caller turns into its own diagnostic).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyopencl as cl

__all__ = [
    "CACHE_FORMAT_VERSION",
    "BuildInfo",
    "CacheArg",
    "ProgramCacheWarning",
    "build_program",
    "cache_dir",
    "cache_key",
    "program_binary",
]

CacheArg = None | bool | str | os.PathLike
"""``None``/``True``: the default folder; ``False``: off; a path: that folder."""

#: Bumped whenever the key derivation or the entry layout changes, so old
#: entries are simply never looked up again.
CACHE_FORMAT_VERSION = 1

_MAGIC = b"ADRMLPC\x00"
# magic, format version, payload length, sha256(payload)
_HEADER = struct.Struct("<8sIQ32s")

_ENV_DIR = "ADRENO_MLIR_CACHE_DIR"
_ENV_SWITCH = "ADRENO_MLIR_CACHE"
_OFF_VALUES = frozenset({"0", "off", "false", "no"})

_DEFAULT_OPTIONS = ("-cl-std=CL1.2",)

# CL_BUILD_SUCCESS (pyopencl exposes no enum for cl_build_status).
_CL_BUILD_SUCCESS = 0


class ProgramCacheWarning(UserWarning):
    """A cache problem that was worked around (the program was built anyway)."""


@dataclass
class BuildInfo:
    """How :func:`build_program` obtained its program (for logs and benchmarks)."""

    seconds: float
    """Wall time to get a built program (load from binary or build from source)."""
    cache: str
    """``"binary"``: loaded from the caller's ``binary=`` (e.g. an artifact's);
    ``"hit"``: loaded from the cache entry; ``"miss"``: built from source and
    stored (or tried to); ``"off"``: built from source, no cache in use."""
    key: str
    """Hex key of the entry, ``""`` when off."""
    path: Path | None
    """The entry's file, ``None`` when off."""


# Cache folders we already warned about, so that a read-only cache location produces
# one warning per process rather than one per kernel program.
_warned_dirs: set[str] = set()
_warned_lock = threading.Lock()


def _warn(message: str) -> None:
    # stacklevel 4: _warn <- helper <- build_program <- its caller
    warnings.warn(message, ProgramCacheWarning, stacklevel=4)


def _warn_dir_once(directory: Path, message: str) -> None:
    key = str(directory)
    with _warned_lock:
        if key in _warned_dirs:
            return
        _warned_dirs.add(key)
    _warn(message)


def cache_root(kind: str) -> Path:
    """The folder of the other files adreno-mlir keeps between runs (`kind`: "weights" of
    IR printed to stdout, "icd" folders registering Intel's CPU runtime): beside the
    programs, `$ADRENO_MLIR_CACHE_DIR/<kind>` when that is set, else the user cache
    folder's `<kind>` (platformdirs). Never a temporary folder: these are reused."""
    env_dir = os.environ.get(_ENV_DIR, "")
    if env_dir:
        return Path(env_dir).expanduser() / kind
    import platformdirs

    return Path(platformdirs.user_cache_dir("adreno-mlir")) / kind


def cache_dir(cache: CacheArg = None) -> Path | None:
    """The cache folder that ``cache`` selects, or ``None`` when caching is off.

    ``None`` -> ``$ADRENO_MLIR_CACHE_DIR`` if set, else
    ``platformdirs.user_cache_dir("adreno-mlir") / "programs"``; with
    ``$ADRENO_MLIR_CACHE`` set to ``0``/``off``/``false``/``no`` the result is
    ``None``. ``True`` behaves exactly like ``None``. ``False`` -> ``None``.
    A ``str``/``os.PathLike`` -> that folder (``~`` expanded).

    The folder is not created here; that happens on the first store, so merely
    asking for the location has no side effects.
    """
    if cache is False:
        return None
    if cache is None or cache is True:
        if os.environ.get(_ENV_SWITCH, "").strip().lower() in _OFF_VALUES:
            return None
        env_dir = os.environ.get(_ENV_DIR, "")
        if env_dir:
            return Path(env_dir).expanduser()
        import platformdirs

        return Path(platformdirs.user_cache_dir("adreno-mlir")) / "programs"
    if isinstance(cache, (str, os.PathLike)) and os.fspath(cache).strip():
        return Path(os.fspath(cache)).expanduser()
    from adreno_mlir.errors import CompileError

    raise CompileError(f"cache must be None, True, False or a folder path, got {cache!r}")


def cache_key(source: str, device: cl.Device, options: Sequence[str]) -> str:
    """The hex sha256 naming the cache entry of ``source`` built for ``device``.

    Everything that can change the binary a driver produces, or whether an old
    binary is still loadable, goes in: the source, the device (name, vendor,
    OpenCL version), the driver version, the platform (name, version), the
    options and the cache format. Fields are serialised as JSON so that no
    concatenation of two fields can collide with another.
    """
    platform = device.platform
    fields = {
        "format": CACHE_FORMAT_VERSION,
        "source": source,
        "device_name": device.name,
        "device_vendor": device.vendor,
        "driver_version": device.driver_version,
        "device_version": device.version,
        "platform_name": platform.name,
        "platform_version": platform.version,
        "options": [str(o) for o in options],
    }
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=True).encode("ascii")
    return hashlib.sha256(blob).hexdigest()


def program_binary(program: cl.Program, device: cl.Device) -> bytes:
    """The device binary of a built program (``clGetProgramInfo CL_PROGRAM_BINARIES``).

    ``CL_PROGRAM_BINARIES`` lists one binary per device of the program, in the
    order of ``CL_PROGRAM_DEVICES``; this picks the one of ``device``. Raises
    ``ValueError`` when the program was not built for ``device``.
    """
    devices = program.get_info(cl.program_info.DEVICES)
    binaries = program.get_info(cl.program_info.BINARIES)
    for dev, binary in zip(devices, binaries):
        if dev == device:
            return bytes(binary)
    raise ValueError(f"the program was not built for {device.name}")


def _entry_path(directory: Path, key: str) -> Path:
    return directory / key[:2] / f"{key}.bin"


def _encode_entry(payload: bytes) -> bytes:
    digest = hashlib.sha256(payload).digest()
    return _HEADER.pack(_MAGIC, CACHE_FORMAT_VERSION, len(payload), digest) + payload


def _decode_entry(data: bytes) -> bytes | None:
    """The payload of a complete, intact entry; ``None`` for anything else."""
    if len(data) < _HEADER.size:
        return None
    magic, version, length, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC or version != CACHE_FORMAT_VERSION:
        return None
    payload = data[_HEADER.size:]
    if len(payload) != length or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


def _read_entry(path: Path, root: Path) -> bytes | None:
    """The entry's payload, or ``None`` (missing, unreadable, or corrupt and removed)."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        # No entry yet. (NotADirectoryError: a path component is a file; the
        # store that follows reports the unusable folder.)
        return None
    except OSError as e:
        _warn_dir_once(root, f"cannot read the program cache entry {path} ({e}); "
                                    "building from source without the cache")
        return None
    payload = _decode_entry(data)
    if payload is None:
        _warn(f"the program cache entry {path} is corrupt (truncated or checksum mismatch); "
              "deleting it and rebuilding the program from source")
        _remove(path)
    return payload


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        # Already gone (another process got there first) or not ours to delete:
        # the entry will be overwritten by the store that follows anyway.
        pass


def _write_entry(path: Path, payload: bytes, root: Path) -> bool:
    """Store ``payload`` at ``path`` atomically; ``False`` (after a warning) on failure."""
    folder = path.parent
    tmp_name: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{path.stem[:16]}-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_encode_entry(payload))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
        tmp_name = None
        return True
    except OSError as e:
        _warn_dir_once(root, f"cannot write to the program cache folder {root} ({e}); "
                               "continuing without the cache")
        return False
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass


def _load_binary(context: cl.Context, device: cl.Device, binary: bytes,
                 options: Sequence[str]) -> cl.Program:
    """Create and build a program from ``binary``; raises if the driver refuses it."""
    program = cl.Program(context, [device], [binary])
    program = program.build(options=list(options))
    status = program.get_build_info(device, cl.program_build_info.STATUS)
    if status != _CL_BUILD_SUCCESS:
        raise cl.RuntimeError(f"build status {status} after loading the binary")
    return program


def _try_binary(context: cl.Context, device: cl.Device, binary: bytes,
                options: Sequence[str], origin: str) -> cl.Program | None:
    try:
        return _load_binary(context, device, binary, options)
    except Exception as e:  # noqa: BLE001  (any refusal means: rebuild from source)
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        _warn(f"the OpenCL driver refused the program binary from {origin} ({first_line}); "
              "rebuilding the program from source")
        return None


def build_program(context: cl.Context, source: str, options: Sequence[str] = _DEFAULT_OPTIONS,
                  cache: CacheArg = None, binary: bytes | None = None,
                  ) -> tuple[cl.Program, BuildInfo]:
    """A built program for ``context.devices[0]``, from the cache when possible.

    ``binary`` (optional) is a program binary shipped e.g. inside a saved
    artifact: it is tried first; if the driver refuses it, a warning is issued
    and the cache / source path below is used instead. Then the cache entry
    for (source, device, options) is tried; a corrupt entry or one the driver
    refuses is warned about and replaced. Otherwise the source is built and
    its binary stored.

    Raises only what a source build raises (``cl.RuntimeError`` etc. from
    pyopencl when the compiler rejects ``source``); cache problems are
    :class:`ProgramCacheWarning` warnings.
    """
    start = time.perf_counter()
    device = context.devices[0]
    options = tuple(str(o) for o in options)
    directory = cache_dir(cache)
    key = cache_key(source, device, options) if directory is not None else ""
    path = _entry_path(directory, key) if directory is not None else None

    def info(state: str) -> BuildInfo:
        if state == "off":
            return BuildInfo(time.perf_counter() - start, "off", "", None)
        return BuildInfo(time.perf_counter() - start, state, key, path)

    if binary is not None:
        program = _try_binary(context, device, bytes(binary), options, "the supplied binary")
        if program is not None:
            return program, BuildInfo(time.perf_counter() - start, "binary", key, None)

    if path is None:
        return _build_from_source(context, source, options), info("off")

    payload = _read_entry(path, directory)
    if payload is not None:
        program = _try_binary(context, device, payload, options, f"the cache entry {path}")
        if program is not None:
            return program, info("hit")

    program = _build_from_source(context, source, options)
    try:
        built = program_binary(program, device)
    except (cl.Error, ValueError) as e:
        _warn_dir_once(directory, f"cannot fetch the program binary from the driver ({e}); "
                                    "continuing without the cache")
        return program, info("off")
    if not built:
        # Some drivers report an empty binary; nothing worth storing.
        return program, info("off")
    stored = _write_entry(path, built, directory)
    return program, info("miss" if stored else "off")


def _build_from_source(context: cl.Context, source: str, options: Sequence[str]) -> cl.Program:
    return cl.Program(context, source).build(options=list(options))
