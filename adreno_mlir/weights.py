"""Weights live beside the IR, not inside it.

`graph.constant @name` and `opencl.weight @name` refer to arrays in a `WeightStore`.
The module names its store with the attribute `graph.weights = "<key>"`: a directory
of `.npy` files (one per weight, written by `adreno-mlir import -o`) or an in-memory
key (`mem:N`) for pipelines that never touch the disk. This keeps ResNet-50's IR to a
few hundred kB of text while it still round-trips through `adreno-opt`.

Lifetime: the registries below only *find* stores by key (weak references); the modules own
them. `attach` and `store_of` record the store of each module they see in `_owners` (keyed
weakly by the module), so a store lives exactly as long as some module that resolved it (or
any other holder, e.g. an importer) is alive; a `CompiledModel` keeps its module, hence its
weights. A clone or a re-parse of a module names the same key and resolves it while the
original store is alive; once every owner is gone an in-memory key no longer resolves.
"""

from __future__ import annotations

import itertools
import os
import re
import weakref
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

WEIGHTS_ATTR = "graph.weights"
_memory_stores: "weakref.WeakValueDictionary[str, WeightStore]" = weakref.WeakValueDictionary()
"""Every live store by its `mem:N` key (weak: the registry never keeps a store alive)."""
_disk_stores: "weakref.WeakValueDictionary[str, WeightStore]" = weakref.WeakValueDictionary()
"""Disk stores by resolved directory, shared while some module uses them (weak as well)."""
_owners: "weakref.WeakKeyDictionary[ModuleOp, WeightStore]" = weakref.WeakKeyDictionary()
"""The strong references: module -> the store its `graph.weights` attribute resolved to."""
_counter = itertools.count()
base_directory: Path | None = None
"""Relative weight directories resolve against this (adreno-opt sets the input's folder)."""


def symbol_name(name: str) -> str:
    """A readable, symbol-safe version of an ONNX tensor name."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_") or "w"
    return s if not s[0].isdigit() else "w" + s


class WeightStore:
    """Named float arrays, loaded lazily from `directory` when there is one."""

    def __init__(self, directory: Path | None = None):
        self.directory = directory
        self.arrays: dict[str, np.ndarray] = {}
        self.added: set[str] = set()
        """Names created in this process (not yet in `directory`)."""
        self.key = f"mem:{next(_counter)}"
        _memory_stores[self.key] = self

    def __contains__(self, name: str) -> bool:
        return name in self.arrays or (
            self.directory is not None and (self.directory / f"{name}.npy").exists()
        )

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.arrays:
            path = None if self.directory is None else self.directory / f"{name}.npy"
            if path is None or not path.exists():
                where = f"in {self.directory}" if self.directory else "in memory"
                raise KeyError(f"weight @{name} not found {where}")
            try:
                self.arrays[name] = np.load(path, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError, EOFError) as e:
                from adreno_mlir.errors import CompileError

                raise CompileError(f"weight @{name}: {path} is not a readable .npy file ({e}); write it again "
                                   "(adreno-mlir import -o) or restore it") from None
        return self.arrays[name]

    def path_of(self, name: str) -> str:
        """Where weight `name` lives, for messages: its .npy file, or "memory"."""
        if self.directory is not None and (self.directory / f"{name}.npy").exists():
            return str(self.directory / f"{name}.npy")
        return "memory"

    def add(self, hint: str, array: np.ndarray) -> str:
        """Store `array` under a fresh name derived from `hint`; returns the name."""
        base = symbol_name(hint)
        array = np.ascontiguousarray(array)
        name, n = base, 0
        while name in self:
            existing = self[name]
            if existing.shape == array.shape and existing.dtype == array.dtype and np.array_equal(existing, array):
                return name  # same data under the same hint: reuse (keeps passes idempotent)
            n += 1
            name = f"{base}_{n}"
        self.arrays[name] = array
        self.added.add(name)
        return name

    def overlay(self) -> WeightStore:
        """A new store that reads this one's arrays (shared, not copied) and directory, and
        keeps what is added to it to itself: a compile of the caller's module works on a
        clone attached to an overlay, so the repacked and transformed weights it makes go
        away with the compiled model instead of staying in the caller's store."""
        other = WeightStore(self.directory)
        other.arrays = dict(self.arrays)
        return other

    def save(self, directory: Path) -> None:
        """Write every array as `<directory>/<name>.npy`."""
        directory.mkdir(parents=True, exist_ok=True)
        names = set(self.arrays)
        if self.directory is not None and self.directory.exists():
            names |= {p.stem for p in self.directory.glob("*.npy")}
        for name in names:
            target = directory / f"{name}.npy"
            if self.directory is not None and self.directory.resolve() == directory.resolve() and target.exists():
                continue
            np.save(target, np.asarray(self[name]))


def attach(module: ModuleOp, store: WeightStore) -> None:
    """Point `module` at `store`; the module keeps the store alive."""
    module.attributes[WEIGHTS_ATTR] = StringAttr(store.key)
    _owners[module] = store


def store_of(module: ModuleOp) -> WeightStore:
    """The weight store a module refers to (an empty in-memory one if it names none).

    The module becomes an owner of the store: it stays alive as long as the module does."""
    attr = module.attributes.get(WEIGHTS_ATTR)
    if attr is None:
        store = WeightStore()
        attach(module, store)
        return store
    assert isinstance(attr, StringAttr)
    key = attr.data
    owned = _owners.get(module)
    if owned is not None and owned.key == key:
        return owned
    store = _memory_stores.get(key)
    if store is None:
        if re.fullmatch(r"mem:\d+", key):
            raise FileNotFoundError(
                f"the module's in-memory weights '{key}' no longer exist: the module is a copy "
                "(clone or re-parsed text) of a module that has been freed; keep the original "
                "alive, or write the weights to disk first (adreno_mlir.weights.save_beside)"
            )
        path = Path(key)
        if not path.is_absolute():
            path = (base_directory or Path.cwd()) / path
        resolved = str(path.resolve())
        store = _disk_stores.get(resolved)
        if store is None:
            if not path.is_dir():
                raise FileNotFoundError(
                    f"the module's weights directory '{key}' (resolved to {path}) does not exist"
                )
            store = WeightStore(path)
            _disk_stores[resolved] = store
    _owners[module] = store
    return store


def save_beside(module: ModuleOp, ir_path: Path) -> Path:
    """Save the module's weights as `<ir stem>.weights/` next to `ir_path` and point the module at it."""
    store = store_of(module)
    directory = ir_path.with_suffix(".weights")
    store.save(directory)
    module.attributes[WEIGHTS_ATTR] = StringAttr(os.path.relpath(directory, ir_path.parent))
    return directory


def content_folder(store: WeightStore, stem: str) -> Path:
    """`<cache_root("weights")>/<stem>-<sha256 of names, dtypes, shapes, data>.weights`, written
    once (into a temporary sibling, then renamed: a reader never sees half a folder)."""
    import hashlib
    import shutil
    import tempfile

    names = set(store.arrays)
    if store.directory is not None and store.directory.exists():
        names |= {p.stem for p in store.directory.glob("*.npy")}
    digest = hashlib.sha256()
    for name in sorted(names):
        a = np.ascontiguousarray(store[name])
        digest.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        digest.update(memoryview(a).cast("B"))
    from adreno_mlir.runtime.program_cache import cache_root

    root = cache_root("weights")
    directory = root / f"{symbol_name(stem)}-{digest.hexdigest()[:16]}.weights"
    if directory.is_dir():
        return directory
    root.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=root))
    try:
        store.save(partial)
        try:
            partial.rename(directory)
        except OSError:  # another process wrote the same folder first: same content
            if not directory.is_dir():
                raise
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
    return directory


def flush(module: ModuleOp, output: Path | None, stem: str = "stdin") -> None:
    """Point the module at weights that exist on disk, so its printed text reads back.

    Weights that live only in memory (created by passes, or an in-memory store) are
    written out, together with any the module already had on disk: beside `output`
    as `<output>.weights/`, or for printing to stdout into `<stem>-<content hash>.weights/`
    under the user cache (`cache_root("weights")`): nothing is left in the working
    directory, and printing the same module again reuses one folder. The attribute is
    relative to the output file's folder, or absolute for stdout (an unchanged disk
    store keeps its key, so printing IR without passes is textually stable)."""

    attr = module.attributes.get(WEIGHTS_ATTR)
    if attr is None:
        return
    store = store_of(module)
    if store.directory is None and not store.arrays:
        del module.attributes[WEIGHTS_ATTR]  # nothing to point at
        return
    if store.directory is not None and not store.added:
        if output is None:
            return  # unchanged text: the key still resolves as it did for the input
        directory = store.directory
    elif output is not None:
        directory = output.with_suffix(".weights")
        store.save(directory)
    else:
        directory = content_folder(store, stem)
    if output is not None:
        key = os.path.relpath(directory.resolve(), output.resolve().parent)
    else:
        key = str(directory.resolve())
    module.attributes[WEIGHTS_ATTR] = StringAttr(key)
