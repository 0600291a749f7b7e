"""Shared fixtures: the ten torchvision graphs from ../shared, with seeded weights."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ADRENO_SHARED", REPO.parent / "shared"))
GRAPHS = SHARED / "models" / "graphs"
NEXT = SHARED / "models" / "next"
HF = SHARED / "models" / "hf"
LLM = SHARED / "models" / "llm"
"""onnxruntime-genai decoders (issue 29): int4 and fp32, materialize.py fills their float weights."""
"""Transformers and newer CNNs (issue 12); tests list the ones that run by name."""
MODEL_NAMES = sorted(p.stem for p in GRAPHS.glob("*.onnx"))


def slow_unless(names, fast) -> list:
    """`names` as pytest params, all but those in `fast` marked `slow`: a model matrix
    whose every row CI runs (`pytest -m slow`, .ci/run) while the README's test command
    keeps one representative row (the 2-core budget of issue 25)."""
    return [pytest.param(n, marks=() if n in fast else pytest.mark.slow) for n in names]
CACHE = Path(os.environ.get("ADRENO_TEST_CACHE", Path.home() / ".cache" / "adreno-mlir-tests"))

# The suite verifies every op after every stage, kernel bodies included (a plain
# compile skips re-verifying the kernel builder's output for speed).
os.environ.setdefault("ADRENO_MLIR_VERIFY", "all")
# Built OpenCL programs are cached in a folder of the test session's own, never in the
# user's cache (tests of the cache itself point it at their tmp_path).
# (xdist workers inherit the variable; the process that made the folder removes it at the end.)
_SESSION_CACHE: str | None = None
if "ADRENO_MLIR_CACHE_DIR" not in os.environ:
    # the pid in the name tells a concurrent session's folder from a leftover (.ci/run)
    _SESSION_CACHE = tempfile.mkdtemp(prefix=f"adreno-mlir-test-programs-{os.getpid()}-")
    os.environ["ADRENO_MLIR_CACHE_DIR"] = _SESSION_CACHE

# --------------------------------------------------------------------------- no stray files
# The suite must leave the work tree and the temporary folder as it found them (issue 27):
# no untracked or ignored file in the checkout beyond what Python, pytest, lit and the CI's
# venv keep, and no adreno-mlir-* / adreno-tune-* folder in the temporary folder. The
# controller compares the two at the start and the end and fails the session on a new one.
_EXPECTED_LEFTOVERS = ("__pycache__", ".pytest_cache", ".egg-info", "Output/", ".lit_test_times.txt", ".venv-ci/")
_TMP_PREFIXES = ("adreno-mlir-", "adreno-tune-")


def _leftovers() -> set[str]:
    found: set[str] = set()
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=REPO, capture_output=True,
                                text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        status = ""
    for line in status.splitlines():
        path = line[3:]
        if line[:2] in ("??", "!!") and not any(ok in path for ok in _EXPECTED_LEFTOVERS):
            found.add(path)
    tmp = Path(tempfile.gettempdir())
    # Another session's program cache (a second pytest running beside this one) is its own
    # to remove; this session removes its own before comparing.
    found |= {str(p) for p in tmp.iterdir() if p.name.startswith(_TMP_PREFIXES)
              and not p.name.startswith("adreno-mlir-test-programs-")}
    return found


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        config.stash[_BEFORE] = _leftovers()


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or _BEFORE not in config.stash:
        return
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
    new = sorted(_leftovers() - config.stash[_BEFORE])
    if new:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        message = "the test session left files behind (clean them up in the test or code that made them):\n  " \
            + "\n  ".join(new)
        if reporter is not None:
            reporter.write_line(message, red=True)
        else:
            print(message)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_BEFORE = pytest.StashKey[set]()

# Hypothesis keeps its files (the example database of failing examples it replays first, a
# cache of module constants) in the test cache, not in a .hypothesis/ folder of the checkout.
try:
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(str(CACHE / "hypothesis"))
except ImportError:  # hypothesis is a test extra; tests that need it import it themselves
    pass


def _build_native(sanitize: bool = False) -> Path:
    """runtime/c built (once per source version, shared by xdist workers through a lock)
    in a temporary folder; returns the build folder (libadreno_rt.so, adreno-run)."""
    import fcntl
    import hashlib

    from adreno_mlir.runtime.native import SOURCE_DIR, build_native

    digest = hashlib.sha256()
    for f in sorted(SOURCE_DIR.rglob("*")):
        if f.is_file() and "build" not in f.relative_to(SOURCE_DIR).parts:
            digest.update(str(f.relative_to(SOURCE_DIR)).encode() + f.read_bytes())
    root = CACHE / f"native-{digest.hexdigest()[:12]}{'-asan' if sanitize else ''}"  # kept: rebuilt on change
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "build" / ".done").is_file():
            build_native(root / "build", sanitize=sanitize)
            (root / "build" / ".done").write_text("ok\n")
    return root / "build"


# The suite runs models through the native runtime (runtime/c), the default launch path
# wherever it is built: it is built here when a C compiler and CMake are present (it
# needs no OpenCL headers or library to build: it opens OpenCL at run time). In CI it
# must build (a failure stops the run); elsewhere the suite falls back to pyopencl and
# the native tests report why they cannot run.
NATIVE_BUILD_ERROR: str | None = None
if not os.environ.get("ADRENO_MLIR_NATIVE_LIB"):
    try:
        os.environ["ADRENO_MLIR_NATIVE_LIB"] = str(_build_native() / "libadreno_rt.so")
    except Exception as e:  # noqa: BLE001 - reported below / by the native tests
        if os.environ.get("CI"):
            raise
        NATIVE_BUILD_ERROR = str(e)

# Intel's CPU OpenCL runtime (`intel-opencl-rt` from PyPI, a test dependency) is the
# device here with cl_khr_fp16, where precision="fp16" (half arithmetic) is tested. Its
# wheel's `.icd` names a placeholder path, so one naming the installed library is
# written to a folder of the session's own and given to the ICD loader before any
# platform is listed (pyopencl's bundled loader still lists PoCL and Oclgrind, and PoCL
# stays the default device). A folder the user set in OCL_ICD_VENDORS is left alone.
from adreno_mlir.runtime.device import use_intel_cpu_runtime  # noqa: E402

use_intel_cpu_runtime()

# The device the suite compiles for and runs on where a test names none (PYOPENCL_CTX, which
# subprocesses inherit): ADRENO_TEST_DEVICE, default "auto": Intel's CPU runtime where it is
# installed (a test dependency on x86-64 Linux), else adreno_mlir's default device (PoCL).
# Intel's compiler builds a program's kernels 3-5x faster than PoCL, which compiles each
# kernel at its first launch (MobileNetV2 on images: 3.7 s against 17.6 s from empty caches;
# the README's test command: about 5 minutes against 11 on two cores), and that compiling is
# most of the suite's time. `ADRENO_TEST_DEVICE=pocl` runs the suite on PoCL, the device
# users get by default, as .ci/run also does; "default" leaves the choice to adreno_mlir
# (PYOPENCL_CTX, else PoCL); any other value is a device= string. A PYOPENCL_CTX the user set
# is kept.
TEST_DEVICE = os.environ.get("ADRENO_TEST_DEVICE", "auto").strip().lower()
if "PYOPENCL_CTX" not in os.environ and TEST_DEVICE != "default":
    if TEST_DEVICE == "auto":
        from adreno_mlir.runtime.device import DeviceError, find_device

        try:
            find_device("intel")
            os.environ["PYOPENCL_CTX"] = "intel"
        except DeviceError:
            pass  # not installed here: the default device
    else:
        os.environ["PYOPENCL_CTX"] = TEST_DEVICE


@pytest.fixture(scope="session")
def half_device() -> str:
    """The `device=` of an OpenCL device with cl_khr_fp16 (Intel's CPU runtime). CI
    installs it, so there its absence fails the test; elsewhere the test is skipped
    with the reason."""
    from adreno_mlir.runtime.device import find_device

    try:
        dev = find_device("intel")
    except Exception as e:  # noqa: BLE001 - reported below
        why = (f"no Intel OpenCL CPU device ({e}); pip install intel-opencl-rt intel-cmplr-lib-rt "
               "(a test dependency)")
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    if "cl_khr_fp16" not in dev.extensions.split():
        pytest.fail(f"{dev.name} does not report cl_khr_fp16")
    return "intel"


def _materialize_module():
    spec = importlib.util.spec_from_file_location("materialize", SHARED / "models" / "materialize.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def materialized_model(name: str, folder: Path = GRAPHS) -> Path:
    """Path of `name` with weights filled by shared/models/materialize.py (seed 0), cached
    under a key of the graph's and the script's contents (a changed script or graph makes
    a new file; concurrent writers each use their own temporary file)."""
    import hashlib
    import os

    import onnx

    CACHE.mkdir(parents=True, exist_ok=True)
    src = folder / f"{name}.onnx"
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
