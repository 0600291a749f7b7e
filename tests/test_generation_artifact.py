"""Decoder artifacts (issue 29, deliverable 5): `Decoder.save` writes a decoder's prefill and
decode programs as one artifact (format version 5: one weights blob where a weight both
programs use is stored once, both plans, the decoder's facts, both OpenCL sources);
`adreno_mlir.load` gives a `LoadedDecoder` that generates the compiled decoder's tokens and
logits (and onnxruntime's) without the compiler; `adreno-run --generate` runs the whole
generation loop in C (runtime/c, adreno_decoder_generate), with no Python in it."""

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
    loaded = adreno_mlir.load(path, cache=cache)
    assert isinstance(loaded, adreno_mlir.generation.LoadedDecoder)
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
    loaded = adreno_mlir.load(path, cache=cache)
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
