"""The on-disk cache of built OpenCL program binaries (adreno_mlir.runtime.program_cache)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
import warnings
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

from adreno_mlir.runtime import default_context
from adreno_mlir.runtime import program_cache as pc
from adreno_mlir.runtime.program_cache import (
    BuildInfo,
    ProgramCacheWarning,
    build_program,
    cache_dir,
    cache_key,
    program_binary,
)

OPTIONS = ("-cl-std=CL1.2",)


@pytest.fixture(scope="module")
def ctx() -> cl.Context:
    return default_context(None)


@pytest.fixture
def source() -> str:
    # A unique comment per test keeps keys (and PoCL's / pyopencl's own caches) apart.
    return (f"// {uuid.uuid4().hex}\n"
            "__kernel void add1(__global float *a) {\n"
            "    int i = get_global_id(0);\n"
            "    a[i] = a[i] + 1.0f;\n"
            "}\n")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    # Never touch the user's real cache, whatever the environment says.
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(tmp_path / "env-default"))
    monkeypatch.delenv("ADRENO_MLIR_CACHE", raising=False)


def run_add1(ctx: cl.Context, program: cl.Program) -> np.ndarray:
    queue = cl.CommandQueue(ctx)
    host = np.arange(8, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    program.add1(queue, host.shape, None, buf)
    out = np.empty_like(host)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out


def assert_valid_entry(path: Path) -> None:
    assert path.is_file()
    assert pc._decode_entry(path.read_bytes()), f"{path} is not a valid entry"


def test_miss_then_hit(ctx, source, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProgramCacheWarning)
        _, first = build_program(ctx, source, OPTIONS, cache=tmp_path)
        program, second = build_program(ctx, source, OPTIONS, cache=tmp_path)
    assert isinstance(first, BuildInfo)
    assert first.cache == "miss" and second.cache == "hit"
    assert first.key == second.key == cache_key(source, ctx.devices[0], OPTIONS)
    assert first.path == second.path == tmp_path / first.key[:2] / f"{first.key}.bin"
    assert_valid_entry(first.path)
    assert second.seconds >= 0
    np.testing.assert_array_equal(run_add1(ctx, program), np.arange(8, dtype=np.float32) + 1)
    # No temporary files left behind.
    assert sorted(p.name for p in first.path.parent.iterdir()) == [first.path.name]


def test_key_depends_on_source_and_options(ctx, source):
    device = ctx.devices[0]
    key = cache_key(source, device, OPTIONS)
    assert key == cache_key(source, device, list(OPTIONS))
    assert len(key) == 64 and int(key, 16) >= 0
    assert key != cache_key(source + "\n", device, OPTIONS)
    assert key != cache_key(source, device, ("-cl-std=CL1.2", "-cl-fast-relaxed-math"))
    assert key != cache_key(source, device, ())
    # Option boundaries matter: ("-a -b",) is not ("-a", "-b").
    assert cache_key(source, device, ("-DA -DB",)) != cache_key(source, device, ("-DA", "-DB"))


@pytest.mark.parametrize("damage", ["truncate", "bitflip", "header"])
def test_corrupt_entry_is_rebuilt(ctx, source, tmp_path, damage):
    _, info = build_program(ctx, source, OPTIONS, cache=tmp_path)
    data = bytearray(info.path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "bitflip":
        data[len(data) - 100] ^= 0x10
    else:
        data = data[:10]
    info.path.write_bytes(bytes(data))

    with pytest.warns(ProgramCacheWarning, match="corrupt") as record:
        program, again = build_program(ctx, source, OPTIONS, cache=tmp_path)
    assert str(info.path) in str(record[0].message)
    assert "rebuild" in str(record[0].message)
    assert again.cache == "miss"
    assert_valid_entry(info.path)
    np.testing.assert_array_equal(run_add1(ctx, program), np.arange(8, dtype=np.float32) + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProgramCacheWarning)
        assert build_program(ctx, source, OPTIONS, cache=tmp_path)[1].cache == "hit"


def test_binary_refused_by_driver(ctx, source, tmp_path):
    key = cache_key(source, ctx.devices[0], OPTIONS)
    path = tmp_path / key[:2] / f"{key}.bin"
    path.parent.mkdir(parents=True)
    path.write_bytes(pc._encode_entry(b"this is no program binary" * 8))  # valid checksum

    with pytest.warns(ProgramCacheWarning, match="refused"):
        program, info = build_program(ctx, source, OPTIONS, cache=tmp_path)
    assert info.cache == "miss" and info.path == path
    np.testing.assert_array_equal(run_add1(ctx, program), np.arange(8, dtype=np.float32) + 1)
    # The entry was overwritten with the real binary.
    assert pc._decode_entry(path.read_bytes()) == program_binary(program, ctx.devices[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProgramCacheWarning)
        assert build_program(ctx, source, OPTIONS, cache=tmp_path)[1].cache == "hit"


def test_supplied_binary(ctx, source, tmp_path):
    built, _ = build_program(ctx, source, OPTIONS, cache=False)
    binary = program_binary(built, ctx.devices[0])
    assert binary

    with warnings.catch_warnings():
        warnings.simplefilter("error", ProgramCacheWarning)
        program, info = build_program(ctx, source, OPTIONS, cache=False, binary=binary)
    assert info.cache == "binary" and info.path is None
    np.testing.assert_array_equal(run_add1(ctx, program), np.arange(8, dtype=np.float32) + 1)

    with pytest.warns(ProgramCacheWarning, match="supplied binary"):
        program, info = build_program(ctx, source, OPTIONS, cache=tmp_path, binary=b"\0garbage")
    assert info.cache == "miss"
    assert_valid_entry(info.path)
    np.testing.assert_array_equal(run_add1(ctx, program), np.arange(8, dtype=np.float32) + 1)


def test_source_error_still_raises(ctx, tmp_path):
    bad = f"// {uuid.uuid4().hex}\n__kernel void broken(__global float *a) {{ a[0] = nope; }}\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProgramCacheWarning)
        with pytest.raises(cl.RuntimeError):
            build_program(ctx, bad, OPTIONS, cache=tmp_path)
    assert not any(tmp_path.rglob("*.bin"))


def test_unwritable_cache_dir(ctx, source, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = blocker / "cache"  # cannot be created, even as root

    with pytest.warns(ProgramCacheWarning, match="cannot write") as record:
        program, info = build_program(ctx, source, OPTIONS, cache=folder)
    # one of ours (the OpenCL compiler may add its own notes: Intel's CPU runtime does)
    assert len([w for w in record if issubclass(w.category, ProgramCacheWarning)]) == 1
    assert info.cache == "off" and info.path is None and info.key == ""
    np.testing.assert_array_equal(run_add1(ctx, program), np.arange(8, dtype=np.float32) + 1)

    # Warned once per folder, not once per program.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProgramCacheWarning)
        _, info = build_program(ctx, source + "// other\n", OPTIONS, cache=folder)
    assert info.cache == "off"


def test_cache_off(ctx, source, tmp_path, monkeypatch):
    env_dir = tmp_path / "env"
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(env_dir))
    assert cache_dir(False) is None
    program, info = build_program(ctx, source, OPTIONS, cache=False)
    assert info.cache == "off" and info.key == "" and info.path is None
    np.testing.assert_array_equal(run_add1(ctx, program), np.arange(8, dtype=np.float32) + 1)
    assert not env_dir.exists()

    for value in ("0", "off", "False"):
        monkeypatch.setenv("ADRENO_MLIR_CACHE", value)
        assert cache_dir(None) is None and cache_dir(True) is None
        assert build_program(ctx, source, OPTIONS)[1].cache == "off"
    assert not env_dir.exists()
    # An explicit folder still works when the switch is off.
    assert cache_dir(tmp_path / "explicit") == tmp_path / "explicit"


def test_env_dir_and_defaults(ctx, source, tmp_path, monkeypatch):
    env_dir = tmp_path / "env"
    monkeypatch.setenv("ADRENO_MLIR_CACHE_DIR", str(env_dir))
    assert cache_dir() == env_dir and cache_dir(True) == env_dir
    assert cache_dir(str(tmp_path / "x")) == tmp_path / "x"
    _, info = build_program(ctx, source, OPTIONS)
    assert info.cache == "miss" and info.path.is_relative_to(env_dir)
    assert_valid_entry(info.path)
    assert build_program(ctx, source, OPTIONS, cache=True)[1].cache == "hit"

    monkeypatch.delenv("ADRENO_MLIR_CACHE_DIR")
    import platformdirs

    assert cache_dir() == Path(platformdirs.user_cache_dir("adreno-mlir")) / "programs"


CHILD = textwrap.dedent("""
    import sys, warnings
    from adreno_mlir.runtime import default_context
    from adreno_mlir.runtime.program_cache import ProgramCacheWarning, build_program, program_binary

    warnings.simplefilter("error", ProgramCacheWarning)  # a torn entry would warn
    folder, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = default_context(None)
    sources = [f"// {tag} {k}\\n__kernel void add1(__global float *a) {{ a[get_global_id(0)] += {k}.0f; }}\\n"
               for k in range(n)]
    fill = [build_program(ctx, src, ("-cl-std=CL1.2",), cache=folder)[1].cache for src in sources]
    again = [build_program(ctx, src, ("-cl-std=CL1.2",), cache=folder)[1].cache for src in sources]
    print(" ".join(fill), "|", " ".join(again))
""")


def test_two_processes_fill_the_same_cache(tmp_path):
    # Both processes build the same n programs in the same order, so most
    # entries are written by both at about the same time.
    n, tag = 6, uuid.uuid4().hex
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), tag, str(n)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        fill, again = (part.split() for part in out.split("|"))
        assert len(fill) == n and set(fill) <= {"hit", "miss"}
        assert again == ["hit"] * n
    entries = sorted(tmp_path.rglob("*.bin"))
    assert len(entries) == n
    for entry in entries:
        assert_valid_entry(entry)
    # Only entries remain: every temporary file was renamed into place.
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == entries
