"""Decoder artifacts (issue 29, deliverable 5): `Decoder.save` writes a decoder's prefill and
decode programs as one artifact (format version 5: one weights blob where a weight both
programs use is stored once, both plans, the decoder's facts, both OpenCL sources);
`adreno_mlir.load` gives a `LoadedDecoder` that generates the compiled decoder's tokens and
logits (and onnxruntime's) without the compiler; `adreno-run --generate` runs the whole
generation loop in C (runtime/c, adreno_decoder_generate), with no Python in it, and so does
`generate()` from Python on the native runtime (`runtime="native"`, the default where
libadreno_rt is built: one ctypes call, adreno_decoder_feed/step/reset for the rest);
`adreno-mlir generate` takes a decoder artifact and writes one (--save)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import onnx
import pytest

import adreno_mlir
from adreno_mlir.artifact import (
    READ_VERSIONS,
    ArtifactError,
    DecoderArtifactError,
    format_version_of,
)
from adreno_mlir.errors import InputError
from tests import test_native_runtime as _native
from tests.test_generation import (
    NCHW,
    _decoder_path,
    _tiny_decoder,
    check_against_reference,
    reference_generation,
)
from tests.test_native_runtime import asan_env, run_c

# the native runtime's fixtures: its build folder, the runner's environment, the ASan build, a program cache
native_dir, run_env, asan_dir, cache = _native.native_dir, _native.run_env, _native.asan_dir, _native.cache

SMALL_PROMPT = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46]  # a chunk of 8 and a padded one


def _shared_prompt(vocab: int) -> list[int]:
    return np.random.default_rng(1).integers(3, vocab, 21).tolist()  # a chunk of 16, and a padded one


@pytest.fixture(scope="module")
def int4_decoder(cache, tmp_path_factory):
    """The shared int4 decoder compiled (context 128, chunks of 16) and saved: (decoder, artifact)."""
    dec = adreno_mlir.compile_decoder(_decoder_path("llama_tiny_int4"), max_context=128, prefill_chunk=16,
                                      cache=cache, **NCHW)
    return dec, dec.save(tmp_path_factory.mktemp("decoder") / "llama_int4.adreno")


@pytest.fixture(scope="module")
def int4_reference(int4_decoder):
    dec, _ = int4_decoder
    prompt = _shared_prompt(dec.vocab)
    logits, tokens = reference_generation(onnx.load(str(_decoder_path("llama_tiny_int4"))), dec.signature, prompt, 64)
    return prompt, logits, tokens


@pytest.fixture(scope="module")
def small_decoder(cache, tmp_path_factory):
    """The small grouped-heads decoder (context 40, chunks of 8) and its artifact."""
    model = _tiny_decoder("grouped")
    dec = adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, cache=cache, **NCHW)
    return model, dec, dec.save(tmp_path_factory.mktemp("decoder") / "small.adreno")


def assert_same_generation(a, b, what: str) -> None:
    """The same kernels on the same device: the same tokens and logits (to float rounding)."""
    assert a.tokens == b.tokens, f"{what}: {a.tokens} != {b.tokens}"
    scale = float(np.abs(a.logits).max())
    assert float(np.abs(a.logits - b.logits).max()) <= 1e-6 * scale, what


def _manifest(path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def _edit(path, edit) -> None:
    manifest = _manifest(path)
    edit(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


# --------------------------------------------------------------------------- Python


def test_saved_int4_decoder_generates_the_compiled_ones_and_onnxruntimes_64_tokens(int4_decoder, int4_reference, cache):
    dec, path = int4_decoder
    prompt, ref_logits, ref_tokens = int4_reference
    loaded = adreno_mlir.load(path, cache=cache, runtime="pyopencl")
    assert isinstance(loaded, adreno_mlir.generation.LoadedDecoder) and loaded.runtime == "pyopencl"
    assert (loaded.max_context, loaded.prefill_chunk, loaded.vocab) == (128, 16, dec.vocab)
    assert loaded.signature.eos_token_ids == tuple(dec.signature.eos_token_ids)
    assert loaded.prefill.program_origin == loaded.decode.program_origin == "artifact binary"
    got = loaded.generate(prompt, 64, stop_at_eos=False)
    assert len(got.tokens) == 64 and got.stop_reason == "max_new_tokens" and got.prompt_tokens == 21
    assert_same_generation(got, dec.generate(prompt, 64, stop_at_eos=False), "loaded vs compiled")
    check_against_reference(got, ref_logits, ref_tokens)
    assert got.ttft_ms > 0 and got.prefill_tok_s > 0 and got.decode_tok_s > 0
    # per decode step: the token and the position in, the logits out; the cache never moves
    loaded.reset()
    loaded.feed(prompt)
    before = dict(loaded.memory.transfers)
    loaded.step(5)
    assert {k: loaded.memory.transfers[k] - before[k] for k in before} == {"to_device": 8, "to_host": 4 * dec.vocab}


def test_saved_fp32_decoder_generates_onnxruntimes_tokens(cache, tmp_path):
    path = _decoder_path("llama_tiny_fp32")
    dec = adreno_mlir.compile_decoder(path, max_context=64, prefill_chunk=16, cache=cache, **NCHW)
    loaded = adreno_mlir.load(dec.save(tmp_path / "fp32.adreno"), cache=cache)
    prompt = _shared_prompt(dec.vocab)
    got = loaded.generate(prompt, 24, stop_at_eos=False)
    assert_same_generation(got, dec.generate(prompt, 24, stop_at_eos=False), "loaded vs compiled")
    check_against_reference(got, *reference_generation(onnx.load(str(path)), dec.signature, prompt, 24))


@pytest.mark.parametrize("variant", ["grouped", "packed"])
def test_saved_small_decoders_generate_onnxruntimes_tokens(variant, cache, tmp_path):
    model = _tiny_decoder(variant)
    dec = adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, cache=cache, **NCHW)
    loaded = adreno_mlir.load(dec.save(tmp_path / f"{variant}.adreno"), cache=cache)
    got = loaded.generate(SMALL_PROMPT, 24, stop_at_eos=False)
    assert_same_generation(got, dec.generate(SMALL_PROMPT, 24, stop_at_eos=False), "loaded vs compiled")
    check_against_reference(got, *reference_generation(model, dec.signature, SMALL_PROMPT, 24))
    # feed / step / reset on the loaded decoder are the compiled one's
    for d in (dec, loaded):
        d.reset()
    a, b = dec.feed(SMALL_PROMPT[:5]), loaded.feed(SMALL_PROMPT[:5])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dec.step(7), loaded.step(7))
    assert loaded.position == 6
    with pytest.raises(InputError, match=r"ids \[97\] outside the vocabulary \[0, 97\)"):
        loaded.step(97)
    with pytest.raises(InputError, match="do not fit the context of 40"):
        loaded.generate(list(range(41)), 2)


def test_decoder_artifact_stores_a_shared_weight_once(int4_decoder, cache):
    dec, path = int4_decoder
    manifest = _manifest(path)
    assert manifest["format_version"] == 5 == format_version_of(dec.decode.launch_plan)
    facts = manifest["decoder"]
    assert (facts["input_ids"], facts["position"], facts["logits"]) == ("input_ids", "position", "logits")
    assert (facts["vocab"], facts["max_context"], facts["prefill_chunk"]) == (dec.vocab, 128, 16)
    assert facts["max_positions"] == dec.signature.max_positions and facts["eos_token_ids"] == list(
        dec.signature.eos_token_ids)
    assert [(s["input"], s["output"]) for s in facts["state"]] == list(dec.signature.caches)
    assert {"prefill.cl", "decode.cl", "weights.bin"} <= set(manifest["files"])
    programs = manifest["programs"]
    assert set(programs) == {"prefill", "decode"}
    blob = (path / "weights.bin").stat().st_size
    assert blob == manifest["weights"]["bytes"]
    summed = dec.prefill.launch_plan.weights_nbytes + dec.decode.launch_plan.weights_nbytes
    assert blob < 0.6 * summed, (blob, summed)  # every weight but the per-program constants is there once
    entries = {k: {w["name"]: w for w in programs[k]["weights"]["entries"]} for k in programs}
    shared = [n for n in entries["prefill"] if n in entries["decode"]
              and entries["prefill"][n]["offset"] == entries["decode"][n]["offset"]]
    assert len(shared) >= len(entries["decode"]) - 2 and "adreno_generation_tokens" not in shared  # 16 vs 1
    for k in programs:
        assert programs[k]["weights"]["file"] == "weights.bin" and programs[k]["state"]
        assert programs[k]["program"]["source"] == f"{k}.cl"
    # loaded: both Executables on one DeviceMemory, one buffer per shared weight and per cache
    loaded = adreno_mlir.load(path, cache=cache, runtime="pyopencl")
    pre, de = loaded.prefill.executable, loaded.decode.executable
    assert pre.memory is de.memory is loaded.memory
    index = {w.name: i for i, w in enumerate(de.plan.weights)}
    for i, w in enumerate(pre.plan.weights):
        if w.name in shared:
            assert pre.weights[i] is de.weights[index[w.name]], w.name
    assert set(loaded.memory.states) == {past for past, _ in dec.signature.caches}
    for st in pre.plan.states:
        other = next(s for s in de.plan.states if s.input == st.input)
        assert pre.allocations[st.allocation] is de.allocations[other.allocation]
    assert loaded.decode.input_names == ["input_ids", "position"] and loaded.decode.output_names == ["logits"]


def test_loaded_decoder_imports_no_compiler(small_decoder):
    _, dec, path = small_decoder
    script = (
        "import sys, adreno_mlir\n"
        f"d = adreno_mlir.load({str(path)!r})\n"
        f"r = d.generate({SMALL_PROMPT!r}, 5, stop_at_eos=False)\n"
        "print('TOKENS', r.tokens)\n"
        "print('COMPILER', sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in "
        "('xdsl', 'onnx', 'lowering', 'passes', 'dialects')} | "
        "{m for m in sys.modules if m.startswith(('adreno_mlir.frontend', 'adreno_mlir.api', 'adreno_mlir.dialects', "
        "'adreno_mlir.lowering', 'adreno_mlir.passes'))}))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"TOKENS {dec.generate(SMALL_PROMPT, 5, stop_at_eos=False).tokens}" in proc.stdout
    assert "COMPILER []" in proc.stdout, proc.stdout


def test_a_decoder_artifact_is_not_one_model(small_decoder, cache):
    _, _, path = small_decoder
    loaded = adreno_mlir.load(path, cache=cache)
    assert not hasattr(loaded, "run")
    with pytest.raises(DecoderArtifactError, match="is a decoder artifact .* --generate"):
        loaded.input_names  # noqa: B018 - what `adreno-mlir run X.adreno` reads first
    proc = subprocess.run([sys.executable, "-m", "adreno_mlir.cli", "run", str(path)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 1 and "is a decoder artifact" in proc.stderr, proc.stderr


def test_one_program_with_state_is_format_version_5(small_decoder, cache, tmp_path):
    """A single program with state (the decode program saved alone) is version 5 too; plans
    without state keep their lowest version (tests/test_artifact.py, test_constant_outputs.py)."""
    _, dec, _ = small_decoder
    path = dec.decode.save(tmp_path / "decode.adreno")
    manifest = _manifest(path)
    assert manifest["format_version"] == 5 and [s["input"] for s in manifest["state"]] == [
        past for past, _ in dec.signature.caches]
    m = adreno_mlir.load(path, cache=cache)
    assert m.input_names == ["input_ids", "position"] and m.launch_plan.states == dec.decode.launch_plan.states
    out = m.run({"input_ids": np.array([[5]], np.int64), "position": np.array([0], np.int64)})["logits"]
    dec.reset()
    np.testing.assert_array_equal(out[0, 0], dec.step(5))
    _edit(path, lambda mf: mf.update(format_version=4))
    with pytest.raises(ArtifactError, match="'state' needs format version 5"):
        adreno_mlir.load(path, cache=cache)


def test_format_version_errors_stay_clear(small_decoder, tmp_path, monkeypatch):
    _, _, saved = small_decoder
    path = tmp_path / "future.adreno"
    shutil.copytree(saved, path)
    _edit(path, lambda m: m.update(format_version=max(READ_VERSIONS) + 1))
    with pytest.raises(ArtifactError, match=r"format version 6 .* reads format versions 1, 2, 3, 4, 5 only. Recompile"):
        adreno_mlir.load(path)
    # a reader of version 4 (before decoders) on a decoder artifact: the same clear refusal
    monkeypatch.setattr(adreno_mlir.artifact, "READ_VERSIONS", (1, 2, 3, 4))
    with pytest.raises(ArtifactError, match=r"format version 5 .* reads format versions 1, 2, 3, 4 only. Recompile"):
        adreno_mlir.load(saved)


@pytest.mark.parametrize("case,edit,phrase", [
    ("no-decode", lambda p: _edit(p, lambda m: m["programs"].pop("decode")), "exactly prefill and decode"),
    ("version-4", lambda p: _edit(p, lambda m: m.update(format_version=4)), "needs format version 5"),
    ("bad-vocab", lambda p: _edit(p, lambda m: m["decoder"].update(vocab=96)), "of 8 x 96 values"),
    ("corrupt-source", lambda p: (p / "decode.cl").write_text("garbage"), "decode.cl is corrupted"),
])
def test_python_loader_names_what_is_wrong_with_a_decoder_artifact(case, edit, phrase, small_decoder, tmp_path):
    path = tmp_path / f"{case}.adreno"
    shutil.copytree(small_decoder[2], path)
    edit(path)
    with pytest.raises(ArtifactError, match=phrase):
        adreno_mlir.load(path)


# --------------------------------------------------------------------------- adreno-run --generate


def run_generate(runner, path, env, tmp_path, prompt, n, *extra, logits="logits.npy", check=True):
    args = ["--generate", "--prompt-ids", ",".join(map(str, prompt)), "--max-new-tokens", n,
            "--json", tmp_path / "run.json", "--save-logits", tmp_path / logits, *extra]
    proc = subprocess.run([str(runner), str(path), *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode >= 0, f"adreno-run died of signal {-proc.returncode}:\n{proc.stderr}"
    if check:
        assert proc.returncode == 0, f"adreno-run failed:\n{proc.stdout}\n{proc.stderr}"
    if proc.returncode:
        return proc, None
    record = json.loads((tmp_path / "run.json").read_text())
    file = tmp_path / logits
    values = np.load(file) if logits.endswith(".npy") else np.fromfile(file, "<f4").reshape(len(record["tokens"]), -1)
    return proc, SimpleNamespace(tokens=record["tokens"], logits=values, record=record)


def test_adreno_run_generate_gives_onnxruntimes_64_greedy_tokens(int4_decoder, int4_reference, native_dir, run_env,
                                                                  tmp_path):
    dec, path = int4_decoder
    prompt, ref_logits, ref_tokens = int4_reference
    proc, got = run_generate(native_dir / "adreno-run", path, run_env, tmp_path, prompt, 64, "--ignore-eos")
    assert len(got.tokens) == 64 and got.logits.shape == (64, dec.vocab) and got.logits.dtype == np.float32
    check_against_reference(got, ref_logits, ref_tokens)
    assert got.tokens == dec.generate(prompt, 64, stop_at_eos=False).tokens  # the loop of generation.py, in C
    record = got.record
    assert {"tokens", "ttft_ms", "prefill_tok_s", "decode_tok_s"} <= set(record)
    assert record["ttft_ms"] > 0 and record["prefill_tok_s"] > 0 and record["decode_tok_s"] > 0
    assert (record["prompt_tokens"], record["stop_reason"], record["max_context"]) == (21, "max_new_tokens", 128)
    assert "tokens: " + ",".join(map(str, got.tokens)) in proc.stdout
    assert "time to first token" in proc.stdout and "decode" in proc.stdout
    assert "program: prefill artifact binary, decode artifact binary" in proc.stdout, proc.stdout


def test_adreno_run_generate_small_decoder_and_the_chunk_tail(small_decoder, native_dir, run_env, cache, tmp_path):
    model, dec, path = small_decoder
    runner = native_dir / "adreno-run"
    _, got = run_generate(runner, path, run_env, tmp_path, SMALL_PROMPT, 24, "--ignore-eos", logits="logits.bin")
    check_against_reference(got, *reference_generation(model, dec.signature, SMALL_PROMPT, 24))
    expected = dec.generate(SMALL_PROMPT, 24, stop_at_eos=False)
    assert got.tokens == expected.tokens
    assert float(np.abs(got.logits - expected.logits).max()) <= 1e-6 * float(np.abs(expected.logits).max())
    # A context of 20, chunks of 8: a 19-token prompt prefills 8 + 8, then 3 decode steps; one more
    # token and the context is full: a warning, stop_reason "max_context".
    short = adreno_mlir.compile_decoder(model, max_context=20, prefill_chunk=8, cache=cache, **NCHW)
    prompt = list(range(5, 24))
    proc, got = run_generate(runner, short.save(tmp_path / "short.adreno"), run_env, tmp_path, prompt, 10)
    assert got.record["stop_reason"] == "max_context" and len(got.tokens) == 2
    assert "warning: generation stopped after 2 tokens: the context of 20 tokens is full" in proc.stderr
    check_against_reference(got, *reference_generation(model, dec.signature, prompt, 2))


def test_adreno_run_generate_with_an_f16_kv_cache(native_dir, run_env, cache, tmp_path):
    """A decoder whose caches are kept in halves (kv_cache="f16"): its artifact's state inputs
    are f16, which adreno-run allocates (half the bytes) and the C loop runs as Python does."""
    model = _tiny_decoder("grouped")
    dec = adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, cache=cache, kv_cache="f16",
                                      runtime="pyopencl", **NCHW)
    path = dec.save(tmp_path / "f16.adreno")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["options"]["kv_cache"] == "f16"
    for program in manifest["programs"].values():
        states = {st["input"] for st in program["state"]}
        assert len(states) == 2 and {t["dtype"] for t in program["inputs"] if t["name"] in states} == {"f16"}
    _, got = run_generate(native_dir / "adreno-run", path, run_env, tmp_path, SMALL_PROMPT, 16, "--ignore-eos",
                          logits="logits.bin")
    expected = dec.generate(SMALL_PROMPT, 16, stop_at_eos=False)
    assert got.tokens == expected.tokens
    assert float(np.abs(got.logits - expected.logits).max()) <= 1e-6 * float(np.abs(expected.logits).max())
    check_against_reference(got, *reference_generation(model, dec.signature, SMALL_PROMPT, 16))
    # an f16 input that is not state: no run could feed it
    broken = tmp_path / "broken.adreno"
    shutil.copytree(path, broken)
    _edit(broken, lambda m: m["programs"]["decode"]["state"].pop())
    proc = run_c(native_dir / "adreno-run", broken, run_env, "--generate", "--prompt-ids", "1", check=False)
    assert proc.returncode == 1 and "input 'past_key_values.0.value' is f16, which only state" in proc.stderr, \
        proc.stderr
    with pytest.raises(ArtifactError, match="'past_key_values.0.value' is f16, which only state"):
        adreno_mlir.load(broken)


def test_adreno_run_generate_stops_at_eos_and_samples(native_dir, run_env, cache, tmp_path):
    model = _tiny_decoder("packed")
    first = adreno_mlir.compile_decoder(model, max_context=32, prefill_chunk=4, cache=cache, **NCHW).generate(
        [1, 2, 3], 1).tokens[0]
    dec = adreno_mlir.compile_decoder(model, max_context=32, prefill_chunk=4, cache=cache,
                                      config={"model": {"eos_token_id": [first]}}, **NCHW)
    path = dec.save(tmp_path / "eos.adreno")
    runner = native_dir / "adreno-run"
    _, got = run_generate(runner, path, run_env, tmp_path, [1, 2, 3], 8)
    assert got.tokens == [first] and got.record["stop_reason"] == "eos" == dec.generate([1, 2, 3], 8).stop_reason
    _, got = run_generate(runner, path, run_env, tmp_path, [1, 2, 3], 8, "--ignore-eos")
    assert got.tokens == dec.generate([1, 2, 3], 8, stop_at_eos=False).tokens
    sample = ("--temperature", "0.7", "--top-k", "5", "--seed", "11", "--ignore-eos")
    _, a = run_generate(runner, path, run_env, tmp_path, [1, 2, 3], 12, *sample)
    _, b = run_generate(runner, path, run_env, tmp_path, [1, 2, 3], 12, *sample)
    assert a.tokens == b.tokens and len(a.tokens) == 12
    for token, logits in zip(a.tokens, a.logits):
        assert token in np.argsort(logits)[-5:]


def test_adreno_run_generate_errors(small_decoder, tiny_path, native_dir, run_env, cache, tmp_path):
    _, _, path = small_decoder
    runner = native_dir / "adreno-run"

    def fails(artifact, *args, code=1):
        proc = run_c(runner, artifact, run_env, *args, check=False)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return proc.stderr

    err = fails(path, "--generate", "--prompt-ids", ",".join(["1"] * 41))
    assert "error: the prompt has 41 tokens, more than the context of 40 tokens" in err, err
    err = fails(path, "--generate", "--prompt-ids", "1,97,-1")
    assert "error: the prompt has ids [97, -1] outside the vocabulary [0, 97)" in err, err
    plain = adreno_mlir.compile(str(tiny_path), cache=cache).save(tmp_path / "tiny.adreno")
    err = fails(plain, "--generate", "--prompt-ids", "1,2")
    assert "is not a decoder artifact: it holds one model" in err and "without --generate" in err, err
    future = tmp_path / "future.adreno"
    shutil.copytree(path, future)
    _edit(future, lambda m: m.update(format_version=6))
    err = fails(future, "--generate", "--prompt-ids", "1,2")
    assert "has artifact format version 6" in err and "reads format versions 1 to 5" in err, err
    err = fails(path)  # a decoder artifact run as one model
    assert "describes a decoder artifact" in err and "--generate" in err, err
    broken = tmp_path / "broken.adreno"
    shutil.copytree(path, broken)
    _edit(broken, lambda m: m["programs"]["decode"]["state"].pop())
    err = fails(broken, "--generate", "--prompt-ids", "1")
    assert "is malformed: programs.decode.inputs: a decoder program is fed exactly 'input_ids' and 'position'" in err
    # usage errors (exit 2)
    assert "needs the prompt" in fails(path, "--generate", code=2)
    assert "comma-separated token ids" in fails(path, "--generate", "--prompt-ids", "1,x", code=2)
    assert ".npy or .bin" in fails(path, "--generate", "--prompt-ids", "1", "--save-logits", "l.txt", code=2)
    assert "go with --generate" in fails(path, "--prompt-ids", "1", code=2)
    # --info: the decoder's facts, nothing run
    proc = run_c(runner, path, run_env, "--generate", "--info")
    assert "decoder: vocab 97, context 40 tokens, prefill chunk 8, 2 state buffers" in proc.stdout, proc.stdout
    assert "tokens:" not in proc.stdout


def test_adreno_run_runs_one_program_with_state(small_decoder, native_dir, run_env, tmp_path):
    _, dec, _ = small_decoder
    path = dec.decode.save(tmp_path / "decode.adreno")
    proc = run_c(native_dir / "adreno-run", path, run_env, "--info")
    # one KV head, 40 rows of 16 floats
    assert "state 0: past_key_values.0.key, 2560 bytes kept on the device" in proc.stdout, proc.stdout
    assert "input 0: input_ids [1, 1] int32" in proc.stdout and "input 2" not in proc.stdout
    np.save(tmp_path / "ids.npy", np.array([[5]], np.int64))
    np.save(tmp_path / "pos.npy", np.array([0], np.int64))
    run_c(native_dir / "adreno-run", path, run_env, "--input", f"input_ids={tmp_path / 'ids.npy'}", "--input",
          f"position={tmp_path / 'pos.npy'}", "--output", f"logits={tmp_path / 'out.npy'}", "--repeat", "1",
          "--warmup", "0")
    dec.reset()
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy").reshape(-1), dec.step(5))


@pytest.mark.slow  # the AddressSanitizer build
def test_adreno_run_generate_under_address_sanitizer(small_decoder, tiny_path, asan_dir, run_env, cache, tmp_path):
    """AddressSanitizer + LeakSanitizer + UBSan on the whole C generation loop (open both
    programs, share weights and state, prefill chunks, decode steps, sampling, close) and on
    its error paths: no error, no leak."""
    _, dec, path = small_decoder
    env = asan_env(run_env, tmp_path)
    runner = asan_dir / "adreno-run"
    proc, got = run_generate(runner, path, env, tmp_path, SMALL_PROMPT, 24, "--ignore-eos")
    assert "Sanitizer" not in proc.stderr, proc.stderr
    assert got.tokens == dec.generate(SMALL_PROMPT, 24, stop_at_eos=False).tokens
    proc, _ = run_generate(runner, path, env, tmp_path, SMALL_PROMPT, 6, "--temperature", "0.5", "--top-k", "3")
    assert "Sanitizer" not in proc.stderr, proc.stderr
    plain = adreno_mlir.compile(str(tiny_path), cache=cache).save(tmp_path / "tiny.adreno")
    for artifact, args in ((path, ["--generate", "--prompt-ids", ",".join(["1"] * 41)]),
                           (path, ["--generate", "--prompt-ids", "1,97"]),
                           (plain, ["--generate", "--prompt-ids", "1"]),
                           (path, [])):
        proc = run_c(runner, artifact, env, *args, check=False)
        assert proc.returncode == 1 and "Sanitizer" not in proc.stderr, (args, proc.stderr)


# --------------------------------------------------------------------------- the C loop from Python


def assert_close_generation(a, b, what: str) -> None:
    """The same greedy tokens, and logits within 1e-3 of the largest (the bar of the brief; the
    runtimes run the same kernels, so in practice they are equal)."""
    assert a.tokens == b.tokens, f"{what}: {a.tokens} != {b.tokens}"
    assert a.logits.shape == b.logits.shape and a.logits.dtype == b.logits.dtype == np.float32, what
    scale = float(np.abs(b.logits).max())
    assert float(np.abs(a.logits - b.logits).max()) <= 1e-3 * scale, what


def test_native_generate_gives_pyopencls_and_onnxruntimes_64_int4_tokens(int4_decoder, int4_reference, native_dir,
                                                                         cache):
    dec, path = int4_decoder
    prompt, ref_logits, ref_tokens = int4_reference
    assert dec.runtime == "native"  # auto, with libadreno_rt built: the C loop
    got = dec.generate(prompt, 64, stop_at_eos=False)  # one adreno_decoder_generate call
    assert len(got.tokens) == 64 and got.logits.shape == (64, dec.vocab) and got.stop_reason == "max_new_tokens"
    assert got.prompt_tokens == 21 and got.transfers == {}  # the C API counts no copies
    assert got.ttft_ms > 0 and got.prefill_tok_s > 0 and got.decode_tok_s > 0
    check_against_reference(got, ref_logits, ref_tokens)
    pyopencl = adreno_mlir.load(path, cache=cache, runtime="pyopencl")
    assert pyopencl.runtime == "pyopencl"
    assert_close_generation(got, pyopencl.generate(prompt, 64, stop_at_eos=False), "native vs pyopencl")
    loaded = adreno_mlir.load(path, cache=cache, runtime="native")
    assert loaded.runtime == "native" and loaded.native.program_origin == {"prefill": "artifact binary",
                                                                           "decode": "artifact binary"}
    assert_close_generation(loaded.generate(prompt, 64, stop_at_eos=False), got, "loaded native vs compiled native")
    assert dec.position == loaded.position == 21 + 63


def test_native_decoder_feed_step_reset_and_streaming(small_decoder, native_dir, run_env, cache, tmp_path):
    model, dec, _ = small_decoder
    assert dec.runtime == "native" and dec.native is not None
    # the C decoder holds the weights and the cache; the pyopencl programs gave theirs back
    assert dec.memory.states == {} and dec.prefill.executable._launches is None
    py = adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, cache=cache, runtime="pyopencl", **NCHW)
    assert py.runtime == "pyopencl" and py.native is None
    got = dec.generate(SMALL_PROMPT, 24, stop_at_eos=False)
    assert_close_generation(got, py.generate(SMALL_PROMPT, 24, stop_at_eos=False), "native vs pyopencl")
    check_against_reference(got, *reference_generation(model, dec.signature, SMALL_PROMPT, 24))
    # feed / step / reset: adreno_decoder_feed / step / reset, the pyopencl loop's logits
    for d in (dec, py):
        d.reset()
        assert d.position == 0
    for ids in (SMALL_PROMPT[:5], SMALL_PROMPT[5:], [7]):  # a padded chunk, a chunk plus a step, one step
        a, b = dec.feed(ids), py.feed(ids)
        assert a.shape == (dec.vocab,) and a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-3 * float(np.abs(b).max()))
    np.testing.assert_allclose(dec.step(9), py.step(9), rtol=0, atol=1e-3 * float(np.abs(b).max()))
    assert dec.position == py.position == dec.native.position == 13
    with pytest.raises(InputError, match=r"ids \[97\] outside the vocabulary \[0, 97\)"):
        dec.step(97)
    with pytest.raises(InputError, match=r"ids \[97\] outside the vocabulary"):
        dec.native.step(97)  # the C library's own check (ADRENO_ERR_INPUT)
    with pytest.raises(InputError, match="28 tokens after 13 do not fit the context of 40"):
        dec.feed(list(range(28)))
    assert dec.position == 13
    # streaming: on_token makes the loop step from Python (one C call per token), same tokens
    streamed = []
    res = dec.generate(SMALL_PROMPT, 24, stop_at_eos=False, on_token=streamed.append)
    assert streamed == res.tokens == got.tokens and res.transfers == {}
    np.testing.assert_array_equal(res.logits, got.logits)
    # sampling in C: seeded, within the top k (a high temperature: this decoder's logits are steep)
    a = dec.generate([1, 2, 3], 12, temperature=50.0, top_k=10, seed=11, stop_at_eos=False)
    b = dec.generate([1, 2, 3], 12, temperature=50.0, top_k=10, seed=11, stop_at_eos=False)
    assert a.tokens == b.tokens and len(a.tokens) == 12 and len(set(a.tokens)) > 1
    for token, logits in zip(a.tokens, a.logits):
        assert token in np.argsort(logits)[-10:]
    assert dec.generate([1, 2, 3], 12, temperature=50.0, top_k=10, seed=12, stop_at_eos=False).tokens != a.tokens
    # adreno-run --generate samples with the same C generator: the same seed draws the same tokens
    _, c = run_generate(native_dir / "adreno-run", small_decoder[2], run_env, tmp_path, [1, 2, 3], 12,
                        "--temperature", "50", "--top-k", "10", "--seed", "11", "--ignore-eos")
    assert c.tokens == a.tokens
    with pytest.raises(InputError, match="seed must be a non-negative integer"):
        dec.generate([1, 2, 3], 2, temperature=0.7, seed=-1)
    # a full context: stop_reason "max_context" and the warning, as in the pyopencl loop
    prompt = list(range(5, 40))
    with pytest.warns(UserWarning, match="generation stopped after 6 tokens: the context of 40 tokens is full"):
        full = dec.generate(prompt, 10, stop_at_eos=False)
    assert full.stop_reason == "max_context" and len(full.tokens) == 6 and dec.position == 40
    with pytest.warns(UserWarning, match="context of 40 tokens is full"):
        assert_close_generation(full, py.generate(prompt, 10, stop_at_eos=False), "native vs pyopencl, full context")
    # the pyopencl programs still run (their memory re-created on first use)
    out = dec.decode.run({"input_ids": np.array([[5]], np.int64), "position": np.array([0], np.int64)})["logits"]
    py.reset()
    np.testing.assert_allclose(out[0, 0], py.step(5), rtol=0, atol=1e-5 * float(np.abs(out).max()))


def test_loaded_native_decoder_runs_the_c_loop(small_decoder, native_dir, cache):
    model, dec, path = small_decoder
    loaded = adreno_mlir.load(path, cache=cache, runtime="native")
    assert loaded.runtime == "native" and "runtime='native'" in repr(loaded)
    assert loaded.device_name == dec.device_name and loaded.plan == dec.plan
    assert (loaded.vocab, loaded.max_context, loaded.prefill_chunk) == (97, 40, 8)
    got = loaded.generate(SMALL_PROMPT, 24, stop_at_eos=False)
    assert_close_generation(got, dec.generate(SMALL_PROMPT, 24, stop_at_eos=False), "loaded vs compiled")
    check_against_reference(got, *reference_generation(model, dec.signature, SMALL_PROMPT, 24))
    loaded.reset()
    dec.reset()
    np.testing.assert_array_equal(loaded.feed(SMALL_PROMPT[:5]), dec.feed(SMALL_PROMPT[:5]))
    np.testing.assert_array_equal(loaded.step(7), dec.step(7))
    assert loaded.position == 6
    assert not hasattr(loaded, "run")  # still a decoder artifact, not one model
    # its pyopencl programs load on first use only
    assert loaded._programs is None
    assert loaded.decode.input_names == ["input_ids", "position"] and loaded._programs is not None
    # auto takes the C loop too (the library is built); pyopencl when asked
    assert adreno_mlir.load(path, cache=cache).runtime == "native"
    assert adreno_mlir.load(path, cache=cache, runtime="pyopencl").runtime == "pyopencl"


def test_native_runtime_not_built_is_a_clear_error(small_decoder, native_dir, cache, monkeypatch, tmp_path):
    import warnings

    from adreno_mlir.runtime import native

    model, _, path = small_decoder
    monkeypatch.setenv("ADRENO_MLIR_NATIVE_LIB", str(tmp_path / "missing" / "libadreno_rt.so"))
    for make in (lambda: adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, cache=cache,
                                                     runtime="native", **NCHW),
                 lambda: adreno_mlir.load(path, cache=cache, runtime="native")):
        with pytest.raises(native.NativeRuntimeError, match="does not exist: build the native runtime with "
                                                            "`adreno-mlir build-native`"):
            make()
    monkeypatch.delenv("ADRENO_MLIR_NATIVE_LIB")
    monkeypatch.setattr(native, "DEFAULT_BUILD_DIR", tmp_path)  # nothing built there
    assert native.library_path() is None
    with pytest.raises(native.NativeRuntimeError, match=r"not built: run `adreno-mlir build-native`"):
        adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, cache=cache, runtime="native", **NCHW)
    with pytest.raises(native.NativeRuntimeError, match="build-native"):
        adreno_mlir.load(path, cache=cache, runtime="native")
    with warnings.catch_warnings():  # auto: pyopencl, quietly
        warnings.simplefilter("error", native.NativeRuntimeWarning)
        dec = adreno_mlir.compile_decoder(model, max_context=40, prefill_chunk=8, cache=cache, **NCHW)
        assert dec.runtime == "pyopencl" and dec.native is None
        assert adreno_mlir.load(path, cache=cache).runtime == "pyopencl"
    with pytest.raises(adreno_mlir.CompileError, match="runtime= must be one of"):
        adreno_mlir.compile_decoder(model, runtime="c")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "adreno_mlir.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=600, check=False)


def test_generate_cli_runs_and_writes_decoder_artifacts(small_decoder, tiny_path, native_dir, cache, tmp_path):
    model, dec, path = small_decoder
    expected = dec.generate(SMALL_PROMPT, 6, stop_at_eos=False).tokens
    ids = ",".join(map(str, SMALL_PROMPT))
    out = _cli("generate", path, "--prompt-ids", ids, "--max-new-tokens", 6, "--ignore-eos", "--json",
               tmp_path / "run.json", "--save-logits", tmp_path / "l.npy", "--textures", "on", "--max-context", 16,
               "--cache-dir", cache)
    assert out.returncode == 0, out.stderr
    assert "note: --textures, --max-context ignored: the plan, the context and the prefill chunk are fixed" in out.stdout
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["tokens"] == expected and record["runtime"] == "native" and record["kind"] == "artifact"
    assert (record["max_context"], record["prefill_chunk"], record["prompt_tokens"]) == (40, 8, 11)
    assert record["transfers"] == {} and record["load_seconds"] > 0
    assert np.load(tmp_path / "l.npy").shape == (6, 97)
    assert "tokens: " + ",".join(map(str, expected)) in out.stdout and "runtime native" in out.stdout
    out = _cli("generate", path, "--prompt-ids", ids, "--max-new-tokens", 6, "--ignore-eos", "--runtime", "pyopencl",
               "--json", tmp_path / "py.json", "--cache-dir", cache)
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "py.json").read_text())
    assert record["tokens"] == expected and record["runtime"] == "pyopencl" and record["transfers"]["to_host"] > 0
    # --save: the compiled decoder as an artifact, which generate (and adreno_mlir.load) run
    onnx.save(model, tmp_path / "decoder.onnx")
    saved = tmp_path / "saved.adreno"
    out = _cli("generate", tmp_path / "decoder.onnx", "--prompt-ids", ids, "--max-new-tokens", 6, "--ignore-eos",
               "--max-context", 40, "--prefill-chunk", 8, "--textures", "off", "--save", saved, "--json",
               tmp_path / "c.json", "--cache-dir", cache)
    assert out.returncode == 0, out.stderr
    assert f"saved the decoder artifact {saved}" in out.stdout
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["tokens"] == expected and record["kind"] == "onnx" and record["compile_seconds"] > 0
    assert _manifest(saved)["format_version"] == 5
    assert adreno_mlir.load(saved, cache=cache).generate(SMALL_PROMPT, 6, stop_at_eos=False).tokens == expected
    # errors name the problem
    plain = adreno_mlir.compile(str(tiny_path), cache=cache).save(tmp_path / "tiny.adreno")
    out = _cli("generate", plain, "--prompt-ids", "1,2")
    assert out.returncode == 1 and "is an artifact of one model, not a decoder artifact" in out.stderr, out.stderr
    assert f"adreno-mlir run {plain}" in out.stderr
    out = _cli("generate", path, "--prompt-ids", "1,2", "--save", tmp_path / "again.adreno")
    assert out.returncode == 1 and "is already a decoder artifact" in out.stderr, out.stderr
    out = _cli("generate", tmp_path / "missing.adreno", "--prompt-ids", "1,2")
    assert out.returncode == 1 and "no artifact at" in out.stderr, out.stderr
    out = _cli("generate", tmp_path / "decoder.onnx", "--prompt-ids", "1,2", "--save", tmp_path / "decoder.onnx")
    assert out.returncode == 1 and "refusing to overwrite" in out.stderr, out.stderr
    out = _cli("generate", path, "--prompt-ids", "1,2,97")
    assert out.returncode == 1 and "ids [97] outside the vocabulary [0, 97)" in out.stderr, out.stderr


def test_adreno_run_generate_fp32_decoder_gives_onnxruntimes_64_greedy_tokens(native_dir, run_env, cache, tmp_path):
    """The shared fp32 decoder through the C loop: onnxruntime's 64 greedy tokens, each step's
    logits within 1e-3 of the largest reference logit."""
    path = _decoder_path("llama_tiny_fp32")
    dec = adreno_mlir.compile_decoder(path, max_context=128, prefill_chunk=16, cache=cache, runtime="pyopencl", **NCHW)
    artifact = dec.save(tmp_path / "fp32.adreno")
    prompt = _shared_prompt(dec.vocab)
    _, got = run_generate(native_dir / "adreno-run", artifact, run_env, tmp_path, prompt, 64, "--ignore-eos")
    assert len(got.tokens) == 64
    check_against_reference(got, *reference_generation(onnx.load(str(path)), dec.signature, prompt, 64))
