"""Shared fixtures: the ten torchvision graphs from ../shared, with seeded weights."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ADRENO_SHARED", REPO.parent / "shared"))
GRAPHS = SHARED / "models" / "graphs"
MODEL_NAMES = sorted(p.stem for p in GRAPHS.glob("*.onnx"))
CACHE = Path(os.environ.get("ADRENO_TEST_CACHE", Path.home() / ".cache" / "adreno-mlir-tests"))

# The suite verifies every op after every stage, kernel bodies included (a plain
# compile skips re-verifying the kernel builder's output for speed).
os.environ.setdefault("ADRENO_MLIR_VERIFY", "all")
# Built OpenCL programs are cached in a folder of the test session's own, never in the
# user's cache (tests of the cache itself point it at their tmp_path).
if "ADRENO_MLIR_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["ADRENO_MLIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="adreno-mlir-test-programs-")


def _materialize_module():
    spec = importlib.util.spec_from_file_location("materialize", SHARED / "models" / "materialize.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def materialized_model(name: str) -> Path:
    """Path of `name` with weights filled by shared/models/materialize.py (seed 0), cached
    under a key of the graph's and the script's contents (a changed script or graph makes
    a new file; concurrent writers each use their own temporary file)."""
    import hashlib
    import os

    import onnx

    CACHE.mkdir(parents=True, exist_ok=True)
    src = GRAPHS / f"{name}.onnx"
    digest = hashlib.sha256(src.read_bytes() + (SHARED / "models" / "materialize.py").read_bytes())
    out = CACHE / f"{name}-{digest.hexdigest()[:12]}.onnx"
    if not out.exists():
        model = _materialize_module().materialize(str(src), seed=0)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        onnx.save(model, str(tmp))
        tmp.replace(out)
    return out


@pytest.fixture(scope="session")
def model_path():
    if not MODEL_NAMES:
        pytest.fail(f"no graphs found under {GRAPHS}; set ADRENO_SHARED to the shared/ folder")
    return materialized_model


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    """The project's own tinynet example model (adreno_mlir.examples), written once."""
    import onnx

    from adreno_mlir.examples import tinynet

    path = tmp_path_factory.mktemp("tiny") / "tinynet.onnx"
    onnx.save(tinynet(), str(path))
    return path
