"""The weight stores behind compiled and imported modules (adreno_mlir/weights.py): freed
once no module uses them (no growth over many compiles), kept while a module lives (a
caller's imported module stays usable across compiles, and its clones share its store),
a clear error for a module whose in-memory store is gone, and disk stores shared while
used."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

import adreno_mlir
from adreno_mlir import weights
from adreno_mlir.examples import tinynet
from adreno_mlir.frontend import import_onnx


def _feeds(cm):
    return {n: np.random.default_rng(0).standard_normal(cm.input_shapes[n]).astype(np.float32)
            for n in cm.input_names}


def test_weight_stores_are_freed_after_compile(tiny_path):
    stores, arrays = [], []
    for _ in range(5):
        cm = adreno_mlir.compile(str(tiny_path), target="pocl-cpu")
        store = weights.store_of(cm.module)
        assert store.arrays
        stores.append(weakref.ref(store))
        arrays += [weakref.ref(a) for a in store.arrays.values()]
        del cm, store
    gc.collect()
    assert [r() for r in stores] == [None] * 5
    assert all(r() is None for r in arrays)
    alive = {r().key for r in stores if r() is not None}
    assert not alive & set(weights._memory_stores)


def test_live_module_keeps_its_weights(tiny_path):
    cm = adreno_mlir.compile(str(tiny_path), target="pocl-cpu")
    key = cm.module.attributes[weights.WEIGHTS_ATTR].data
    gc.collect()
    store = weights.store_of(cm.module)
    assert store.key == key and store.arrays
    feeds = _feeds(cm)
    first = cm.run(feeds)
    gc.collect()
    again = cm.run(feeds)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])


def test_graph_module_compiled_twice_keeps_weights():
    """A caller's imported module stays usable (and owns its weights) across compiles,
    and a clone resolves the same store while the original is alive."""
    module = import_onnx(tinynet())
    ref = weakref.ref(weights.store_of(module))
    a = adreno_mlir.compile(module, target="pocl-cpu")
    del a
    gc.collect()
    assert ref() is not None and ref().arrays
    clone = module.clone()
    assert weights.store_of(clone) is ref()
    b = adreno_mlir.compile(module, target="pocl-cpu")
    assert b.run(_feeds(b))
    del module, clone, b
    gc.collect()
    assert ref() is None


def test_orphaned_memory_key_is_a_clear_error():
    module = import_onnx(tinynet())
    clone = module.clone()
    del module
    gc.collect()
    with pytest.raises(FileNotFoundError, match="in-memory weights 'mem:[0-9]+' no longer exist"):
        weights.store_of(clone)


def test_disk_store_is_shared_while_used_then_freed(tmp_path):
    module = import_onnx(tinynet())
    directory = weights.save_beside(module, tmp_path / "m.mlir")
    key = str((tmp_path / "m.weights").resolve())
    assert directory.is_dir()
    del module
    a = import_onnx(tinynet())
    a.attributes[weights.WEIGHTS_ATTR] = StringAttr(key)
    b = a.clone()
    sa = weights.store_of(a)
    assert weights.store_of(b) is sa and sa.directory is not None
    ref = weakref.ref(sa)
    del a, b, sa
    gc.collect()
    assert ref() is None and key not in weights._disk_stores
