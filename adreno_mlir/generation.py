"""Text generation with a decoder in onnxruntime-genai's format (issue 29).

    dec = adreno_mlir.compile_decoder("model.onnx", max_context=512, prefill_chunk=64)
    result = dec.generate([1, 2, 3], max_new_tokens=32)            # greedy
    result = dec.generate(ids, 32, temperature=0.8, top_k=40, seed=0, on_token=print)
    result.tokens, result.ttft_ms, result.prefill_tok_s, result.decode_tok_s, result.logits
    dec.save("model.adreno")                                       # both programs, one artifact
    adreno_mlir.load("model.adreno").generate([1, 2, 3], 32)       # a LoadedDecoder: no compiler
    # adreno-run --generate model.adreno --prompt-ids 1,2,3        # the same loop in C

Two programs, one state (adreno_mlir/frontend/decoder.py binds the graph):

- the **prefill** program takes `prefill_chunk` tokens a run (a shorter last chunk is
  padded; the padded rows sit after the real ones, so no real row sees them, and the
  next run overwrites their cache rows);
- the **decode** program takes one token a run.

Both are compiled once, share every weight (`DeviceMemory`: one buffer per weight) and one
KV cache per layer of `max_context` rows that lives on the device (`graph.kv_cache_write`
writes the new rows in place at the run-time `position`). Per decode step the host copies
the token id and the position in (8 bytes) and the logits out; nothing is recompiled per
token or per prompt length. Sampling (greedy, temperature, top-k) runs on the host on
those logits.

A prompt is prefilled in chunks while a whole chunk fits the cache; the tokens of a last
chunk that would reach past it go through the decode program one at a time. Generation
that reaches `max_context` stops (`stop_reason` "max_context", with a warning): the cache
never wraps and no kernel reads past it.

The loop (`GenerationLoop`) is shared by the compiled `Decoder` and the `LoadedDecoder` that
`adreno_mlir.load` makes of a decoder artifact (`Decoder.save`, docs/artifact.md "Decoder
artifacts"); this module imports no xDSL at module level, so loading needs no compiler.

Which loop runs (`runtime=` of `compile_decoder` and `adreno_mlir.load`, else
$ADRENO_MLIR_RUNTIME, else "auto"; `dec.runtime` says which was taken):

- "native": the C library of runtime/c (libadreno_rt, `adreno-mlir build-native`) runs the
  loop. `generate()` is one ctypes call (`adreno_decoder_generate`: the prompt's prefill,
  every decode step and the choice of each token in C; the tokens and their logits come
  back), `feed`/`step`/`reset` are `adreno_decoder_feed`/`step`/`reset`. No kernel is
  launched from Python. A compiled `Decoder` gets its C decoder by saving itself (with its
  program binaries) into a temporary folder and opening that; its pyopencl programs then give
  their device memory back (`prefill.run` / `decode.run` re-create it, with a cache of their
  own, only if called). Greedy tokens are the pyopencl loop's; *sampled* tokens are not:
  the C loop samples with its own generator (splitmix64 seeded by `seed`), not numpy's.
  With `on_token` (streaming) the loop steps from Python through `adreno_decoder_feed` /
  `adreno_decoder_step`, one C call per token, and chooses each token with the pyopencl
  loop's chooser (numpy's generator: the pyopencl path's sampled tokens for a seed).
  `GenerationResult.transfers` is {} (the C API does not count its copies).
- "pyopencl": the loop below, one pyopencl run per chunk or step.
- "auto" (default): native when libadreno_rt is built
  (`adreno_mlir.runtime.native.library_path()`), else pyopencl; a library that is there but
  refuses the decoder is a `NativeRuntimeWarning` and pyopencl.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from adreno_mlir.errors import CompileError, InputError

DEFAULT_PREFILL_CHUNK = 64


@dataclass
class GenerationResult:
    """What `Decoder.generate` produced and how fast."""

    tokens: list[int]
    """The generated ids (not the prompt)."""
    prompt_tokens: int
    ttft_ms: float
    """From the call to the first generated token (prefill included)."""
    prefill_tok_s: float
    decode_tok_s: float
    """Generated tokens after the first, per second of decode steps (0 with one token)."""
    stop_reason: str
    """"max_new_tokens", "eos" or "max_context"."""
    logits: np.ndarray = field(repr=False, default=None)
    """[generated tokens, vocab] float32: the logits each generated token was chosen from."""
    transfers: dict[str, int] = field(default_factory=dict)
    """Bytes copied host -> device ("to_device") and back ("to_host") by the whole call."""

    def to_json(self) -> dict:
        return {"tokens": [int(t) for t in self.tokens], "ttft_ms": self.ttft_ms, "prefill_tok_s": self.prefill_tok_s,
                "decode_tok_s": self.decode_tok_s, "prompt_tokens": self.prompt_tokens,
                "stop_reason": self.stop_reason, "transfers": dict(self.transfers)}


@dataclass(frozen=True)
class DecoderSignature:
    """What generation needs to know of a decoder graph (names as the model spells them): its
    token-id input, attention mask and logits output, the caches, the vocabulary, the
    rotary tables' rows, the end-of-sequence ids. Made from the ONNX graph by
    `adreno_mlir.frontend.decoder.decoder_signature`, read back from a decoder artifact's
    manifest here (this module imports no compiler)."""

    input_ids: str
    attention_mask: str
    logits: str
    caches: tuple[tuple[str, str], ...]
    """(past input, present output) of every cache: each layer's key, then its value."""
    kv_heads: int
    head_dim: int
    vocab: int
    max_positions: int
    """Rows of the rotary cos/sin caches: the longest context the model can address."""
    layers: int
    eos_token_ids: tuple[int, ...] = ()
    bos_token_id: int | None = None

    @property
    def state(self) -> dict[str, str]:
        """{present output: past input}: the tensors that are one device buffer."""
        return {present: past for past, present in self.caches}

    def cache_bytes(self, max_context: int) -> int:
        return len(self.caches) * self.kv_heads * max_context * self.head_dim * 4

    def to_json(self) -> dict:
        return {"input_ids": self.input_ids, "position": POSITION, "logits": self.logits,
                "attention_mask": self.attention_mask, "vocab": self.vocab,
                "eos_token_ids": [int(e) for e in self.eos_token_ids], "bos_token_id": self.bos_token_id,
                "max_positions": self.max_positions, "layers": self.layers, "kv_heads": self.kv_heads,
                "head_dim": self.head_dim}



POSITION = "position"
"""The decode and prefill programs' run-time position input (int, [1]): the tokens already in the
cache, where the first of this run's S tokens goes (adreno_mlir/frontend/decoder.py computes the mask from it)."""


class GenerationLoop:
    """The generation loop over a prefill and a decode program that share a KV cache on the
    device: `reset`, `feed`, `step` and `generate`, for a compiled `Decoder` and for a
    `LoadedDecoder` (a decoder artifact) alike.

    Needs on the instance: `signature` (a DecoderSignature: the names, vocab and eos ids),
    `prefill` and `decode` (models with `run(feeds)`), `memory` (their
    shared `DeviceMemory`), `max_context`, `prefill_chunk`; `position` is how many tokens
    the cache holds. runtime/c/src/adreno_rt.c (adreno_decoder_feed/step/generate) is the
    same loop in C."""

    signature: object
    prefill: object
    decode: object
    memory: object
    max_context: int
    prefill_chunk: int
    position: int = 0
    native = None
    """The `adreno_mlir.runtime.native.NativeDecoder` (runtime/c's adreno_decoder) that
    generate/feed/step/reset call, or None: the pyopencl loop."""

    @property
    def vocab(self) -> int:
        return self.signature.vocab

    @property
    def runtime(self) -> str:
        """Which loop `generate` runs: "native" (the C library) or "pyopencl"."""
        return "native" if self.native is not None else "pyopencl"

    def reset(self) -> None:
        """Forget the conversation: position 0 and a zeroed cache."""
        if self.native is not None:
            self.native.reset()
        else:
            self.memory.reset_states()
        self.position = 0

    def _check_ids(self, ids: Sequence[int], what: str) -> list[int]:
        ids = [int(i) for i in np.asarray(ids, dtype=np.int64).reshape(-1)]
        bad = [i for i in ids if not 0 <= i < self.vocab]
        if bad:
            raise InputError(f"{what} has ids {bad[:5]} outside the vocabulary [0, {self.vocab})")
        return ids

    def _run(self, model, ids: list[int]) -> np.ndarray:
        feeds = {self.signature.input_ids: np.asarray([ids], np.int64),
                 POSITION: np.array([self.position], np.int64)}
        return model.run(feeds)[self.signature.logits][0]

    def _check_prompt(self, ids: Sequence[int], position: int) -> list[int]:
        ids = self._check_ids(ids, "the prompt")
        if not ids:
            raise InputError("the prompt is empty: give at least one token id")
        if position + len(ids) > self.max_context:
            raise InputError(f"{len(ids)} tokens after {position} do not fit the context of {self.max_context} "
                             "tokens; compile with a larger max_context (the model's rotary tables allow "
                             f"{self.signature.max_positions})")
        return ids

    def _sync_position(self) -> None:
        self.position = self.native.position

    def feed(self, ids: Sequence[int]) -> np.ndarray:
        """Append `ids` to the cache (prefill chunks, then single steps where a chunk would
        not fit); returns the logits after the last one ([vocab] float32)."""
        ids = self._check_prompt(ids, self.position)
        if self.native is not None:
            try:
                return self.native.feed(ids)
            finally:
                self._sync_position()
        c = self.prefill_chunk
        last = None
        i = 0
        while i < len(ids):
            rest = len(ids) - i
            if rest > 1 and self.position + c <= self.max_context:
                chunk = ids[i:i + c]
                n = len(chunk)
                logits = self._run(self.prefill, chunk + [chunk[-1]] * (c - n))
                last = logits[n - 1]
            else:
                n = 1
                last = self._run(self.decode, [ids[i]])[0]
            self.position += n
            i += n
        return np.array(last, np.float32)

    def step(self, token: int) -> np.ndarray:
        """One decode step: `token` at the current position; the next token's logits."""
        if self.position >= self.max_context:
            raise InputError(f"the cache is full ({self.max_context} tokens): reset() or compile with a larger "
                             "max_context")
        token = self._check_ids([token], "the token")[0]
        if self.native is not None:
            try:
                return self.native.step(token)
            finally:
                self._sync_position()
        out = np.array(self._run(self.decode, [token])[0], np.float32)
        self.position += 1
        return out

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int = 32, *, greedy: bool | None = None,
                 temperature: float = 1.0, top_k: int = 0, seed: int | None = None, stop_at_eos: bool = True,
                 on_token: Callable[[int], None] | None = None) -> GenerationResult:
        """Generate up to `max_new_tokens` after `prompt_ids` from an empty cache.

        Greedy (argmax) unless a temperature other than 1 or a top_k is given (or
        greedy=False): then sampling from softmax(logits / temperature) over the top_k
        largest logits (0: all), with numpy's generator seeded by `seed` (on the native
        runtime without `on_token`: the C loop's own generator seeded by `seed`, so the
        sampled tokens differ from numpy's; greedy tokens are the same). Stops at an
        end-of-sequence id of the model's genai_config (`stop_at_eos`), or when the cache
        is full. `on_token(id)` is called as each token is chosen (streaming; on the native
        runtime it makes the loop step from Python, one C call per token)."""
        if max_new_tokens < 1:
            raise InputError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if greedy is None:
            greedy = temperature == 1.0 and top_k == 0
        if not greedy and not temperature > 0:
            raise InputError(f"temperature must be positive, got {temperature}")
        if top_k < 0:
            raise InputError(f"top_k must be >= 0, got {top_k}")
        if self.native is not None and on_token is None:
            return self._generate_native(prompt_ids, max_new_tokens, greedy, temperature, top_k, seed, stop_at_eos)
        rng = np.random.default_rng(seed)
        eos = set(self.signature.eos_token_ids) if stop_at_eos else set()
        self.reset()
        before = dict(self.memory.transfers) if self.native is None else None
        start = time.perf_counter()
        logits = self.feed(prompt_ids)
        prompt_len = self.position
        t_prefill = time.perf_counter() - start
        tokens: list[int] = []
        chosen: list[np.ndarray] = []
        ttft = 0.0
        t_decode = 0.0
        reason = "max_new_tokens"
        while True:
            token = int(np.argmax(logits)) if greedy else _sample(logits, temperature, top_k, rng)
            tokens.append(token)
            chosen.append(logits)
            if len(tokens) == 1:
                ttft = time.perf_counter() - start
            if on_token is not None:
                on_token(token)
            if token in eos:
                reason = "eos"
                break
            if len(tokens) >= max_new_tokens:
                break
            if self.position >= self.max_context:
                reason = "max_context"
                self._warn_full(len(tokens), 2)
                break
            t0 = time.perf_counter()
            logits = self.step(token)
            t_decode += time.perf_counter() - t0
        steps = len(tokens) - 1
        return GenerationResult(
            tokens=tokens, prompt_tokens=prompt_len, ttft_ms=ttft * 1e3,
            prefill_tok_s=prompt_len / t_prefill if t_prefill > 0 else 0.0,
            decode_tok_s=steps / t_decode if steps and t_decode > 0 else 0.0,
            stop_reason=reason, logits=np.stack(chosen).astype(np.float32),
            transfers={} if before is None else {k: self.memory.transfers[k] - before[k] for k in before})

    def _warn_full(self, tokens: int, stacklevel: int) -> None:
        warnings.warn(f"generation stopped after {tokens} tokens: the context of {self.max_context} "
                      "tokens is full (compile with a larger max_context)", stacklevel=stacklevel + 1)

    def _generate_native(self, prompt_ids: Sequence[int], max_new_tokens: int, greedy: bool, temperature: float,
                         top_k: int, seed: int | None, stop_at_eos: bool) -> GenerationResult:
        """`generate` as one adreno_decoder_generate call: the loop and the sampling in C."""
        ids = self._check_prompt(prompt_ids, 0)
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InputError(f"seed must be a non-negative integer (the C sampler's), got {seed!r}")
        try:
            g = self.native.generate(ids, max_new_tokens, greedy=greedy, temperature=temperature,
                                     top_k=min(int(top_k), self.vocab), seed=int(seed), stop_at_eos=stop_at_eos)
        finally:
            self._sync_position()
        if g.stop_reason == "max_context":
            self._warn_full(len(g.tokens), 3)
        return GenerationResult(tokens=g.tokens, prompt_tokens=g.prompt_tokens, ttft_ms=g.ttft_ms,
                                prefill_tok_s=g.prefill_tok_s, decode_tok_s=g.decode_tok_s, stop_reason=g.stop_reason,
                                logits=g.logits, transfers={})


class Decoder(GenerationLoop):
    """A decoder compiled for generation: `prefill` and `decode` (CompiledModels sharing
    `memory`: weights and the KV cache), the bound `signature`, `max_context` and
    `prefill_chunk`. `position` is how many tokens the cache holds. `save(path)` writes
    both programs as one artifact that `adreno_mlir.load` reads back as a `LoadedDecoder`.

    `runtime` says which loop `generate` runs. With "native" (`native`: the C decoder),
    `prefill`, `decode` and `memory` hold no device memory: the C decoder has its own copy
    of the weights and the cache; a pyopencl run of `prefill` or `decode` re-creates theirs
    (a second copy, and a cache apart from the C decoder's)."""

    def __init__(self, signature, prefill, decode, memory, max_context: int, prefill_chunk: int, native=None):
        self.signature = signature
        self.prefill = prefill
        self.decode = decode
        self.memory = memory
        self.max_context = max_context
        self.prefill_chunk = prefill_chunk
        self.position = 0
        self.native = native

    @property
    def compile_seconds(self) -> float:
        return self.prefill.compile_seconds + self.decode.compile_seconds

    @property
    def device_name(self) -> str:
        return self.decode.device_name

    @property
    def plan(self) -> str:
        return self.decode.plan

    def save(self, path: str | Path, *, binaries: bool = True) -> Path:
        """Write both programs as one decoder artifact directory (docs/artifact.md,
        "Decoder artifacts"): one weights blob (a weight both programs use is stored once),
        both plans, the decoder's facts and the OpenCL sources; with `binaries`, the program
        binaries built for this device too. `adreno_mlir.load(path)` gives a `LoadedDecoder`
        (no compiler); `adreno-run --generate path --prompt-ids ...` runs the loop in C."""
        from adreno_mlir.artifact import save_decoder

        return save_decoder(self, path, binaries=binaries)


class LoadedDecoder(GenerationLoop):
    """A decoder artifact loaded by `adreno_mlir.load` (imports no xDSL): `prefill` and
    `decode` (LoadedModels whose Executables share `memory`: every weight uploaded once,
    one KV cache), `signature` (DecoderSignature), `max_context`, `prefill_chunk`, and the same
    `generate`/`feed`/`step`/`reset` as a compiled `Decoder`. Also `path`, `manifest`,
    `load_seconds`, `runtime`.

    On the native runtime (`native`: the C decoder opened on the artifact) the pyopencl
    programs are not loaded: `prefill`, `decode` and `memory` load them on first use
    (`programs`, a callable returning the three), with a device copy of the weights and a
    cache of their own, apart from the C decoder's."""

    def __init__(self, path: Path, manifest: dict, signature: DecoderSignature, prefill, decode, memory,
                 max_context: int, prefill_chunk: int, load_seconds: float, *, native=None,
                 programs: Callable[[], tuple] | None = None):
        self.path = path
        self.manifest = manifest
        self.signature = signature
        self._programs = (prefill, decode, memory) if prefill is not None else None
        self._load_programs = programs
        self.max_context = max_context
        self.prefill_chunk = prefill_chunk
        self.load_seconds = load_seconds
        self.position = 0
        self.native = native

    def _pyopencl_programs(self) -> tuple:
        if self._programs is None:
            if self._load_programs is None:
                raise CompileError(f"{self.path}: this LoadedDecoder has no pyopencl programs; load it again with "
                                   "runtime='pyopencl'")
            self._programs = tuple(self._load_programs())
        return self._programs

    @property
    def prefill(self):
        """The prefill program (a LoadedModel; loaded on first use on the native runtime)."""
        return self._pyopencl_programs()[0]

    @property
    def decode(self):
        """The decode program (a LoadedModel; loaded on first use on the native runtime)."""
        return self._pyopencl_programs()[1]

    @property
    def memory(self):
        """The pyopencl programs' shared DeviceMemory (loaded on first use on the native runtime)."""
        return self._pyopencl_programs()[2]

    @property
    def device_name(self) -> str:
        return self.native.device_name if self.native is not None else self.decode.device_name

    @property
    def plan(self) -> str:
        return str(self.manifest.get("plan", ""))

    _MODEL_API = frozenset({"run", "profile", "input_names", "output_names", "input_shapes", "output_shapes",
                            "launch_plan", "executable", "get_inputs", "get_outputs", "program_origin",
                            "build_info"})

    def __getattr__(self, name: str):
        if name in LoadedDecoder._MODEL_API:  # code written for one model (adreno-mlir run X.adreno)
            from adreno_mlir.artifact import DecoderArtifactError

            raise DecoderArtifactError(
                f"{self.path} is a decoder artifact (a prefill and a decode program sharing a KV cache), not one "
                f"model: generate with adreno_mlir.load(path).generate(prompt_ids, n) or `adreno-run --generate "
                f"{self.path} --prompt-ids 1,2,3`; its programs are .prefill and .decode")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return (f"LoadedDecoder({str(self.path)!r}, max_context={self.max_context}, prefill_chunk={self.prefill_chunk}, "
                f"runtime={self.runtime!r})")


def load_native_decoder(root: Path, manifest: dict, signature: DecoderSignature, max_context: int, prefill_chunk: int,
                        device: str | None, cache, runtime: str, start: float) -> LoadedDecoder | None:
    """The LoadedDecoder of a checked decoder artifact on the native runtime, for
    `adreno_mlir.load(path, runtime=...)` (adreno_mlir.artifact): "native" opens the C decoder
    on `root` (adreno_decoder_open, on adreno_mlir's device for `device`) or raises a
    NativeRuntimeError saying why not (not built: `adreno-mlir build-native`); "auto" returns
    None where the library is not built, and warns (NativeRuntimeWarning) and returns None
    where it refuses the artifact: then the caller loads the pyopencl programs. The C library
    takes each program's embedded binary when it matches the device, else builds it from the
    artifact's source (it has no program cache; `cache` is for the pyopencl programs, which
    load on first use of `.prefill` / `.decode` / `.memory`)."""
    from adreno_mlir.runtime.device import default_context
    from adreno_mlir.runtime.native import NativeDecoder, NativeRuntimeError, NativeRuntimeWarning, library_path

    if runtime not in ("auto", "native") or (runtime == "auto" and library_path() is None):
        return None
    try:
        native = NativeDecoder(root, default_context(device))
    except NativeRuntimeError as e:
        if runtime == "native":
            raise
        warnings.warn(f"{e}; generating with pyopencl instead", NativeRuntimeWarning, stacklevel=3)
        return None

    def programs() -> tuple:
        from adreno_mlir.artifact import _load_decoder

        loaded = _load_decoder(root, manifest, device, cache, "pyopencl", time.perf_counter())
        return loaded.prefill, loaded.decode, loaded.memory

    return LoadedDecoder(root, manifest, signature, None, None, None, max_context, prefill_chunk,
                         time.perf_counter() - start, native=native, programs=programs)


def _release_pyopencl_memory(dec: Decoder) -> None:
    """Give back the device memory of a compiled decoder's pyopencl programs (weights, caches,
    activations) before its C decoder takes its own, so the two are never both on the device.
    Nothing else is lost: each Executable re-creates its memory and kernels on its next
    pyopencl run, and its plan, host weights and program (what `Decoder.save` writes) stay."""
    for model in (dec.prefill, dec.decode):
        model.executable.release_device_memory()
    dec.memory.release()


def _open_native(dec: Decoder, runtime: str):
    """The C decoder of a compiled `dec` for `runtime` ("auto" | "native"): `dec` saved with its
    program binaries into a temporary folder, its pyopencl device memory given back, the folder
    opened by adreno_decoder_open on the same context (and deleted). None when "auto" cannot
    have one (not built: quietly; refused: NativeRuntimeWarning)."""
    from adreno_mlir.artifact import ArtifactError
    from adreno_mlir.runtime.native import NativeDecoder, NativeRuntimeError, NativeRuntimeWarning, library_path

    if runtime == "auto" and library_path() is None:
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="adreno-mlir-decoder-") as tmp:
            path = dec.save(Path(tmp) / "decoder.adreno")
            _release_pyopencl_memory(dec)
            return NativeDecoder(path, dec.memory.context)
    except (NativeRuntimeError, ArtifactError, OSError) as e:
        if runtime == "native":
            raise
        warnings.warn(f"{e}; generating with pyopencl instead", NativeRuntimeWarning, stacklevel=3)
        return None


def _sample(logits: np.ndarray, temperature: float, top_k: int, rng: np.random.Generator) -> int:
    x = np.asarray(logits, np.float64) / temperature
    if 0 < top_k < x.size:
        keep = np.argpartition(x, -top_k)[-top_k:]
    else:
        keep = np.arange(x.size)
    z = x[keep] - x[keep].max()
    p = np.exp(z)
    p /= p.sum()
    return int(keep[rng.choice(keep.size, p=p)])


def compile_decoder(model, *, max_context: int | None = None, prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
                    config: dict | None = None, target: str = "auto", device: str | None = None,
                    textures: bool | None = None, precision: str = "fp32", layout: str | None = None,
                    tuning_db=None, overrides=None, plan=None, cache=None, runtime: str | None = None,
                    kv_cache: str | None = None) -> Decoder:
    """Compile an onnxruntime-genai decoder (path or ModelProto) for generation: the
    prefill program (`prefill_chunk` tokens a run) and the decode program (one token),
    sharing weights and a KV cache of `max_context` rows on the device.

    max_context: the cache's rows (default: the genai_config's context_length, at most
    512 and at most the model's rotary tables). config: onnxruntime-genai's
    genai_config (default: `<model>.genai_config.json` or `genai_config.json` beside a
    model path), for input/output names and the end-of-sequence ids. The plan options are
    compile()'s; the textures plan is only used where its kernels apply (the caches and
    their writes stay plain buffers).

    kv_cache: the caches' storage, "f32" (the model's) or "f16" (halves: half the memory and
    the attention's bytes, each cached value rounded; the `kv-cache-storage` pass, in the
    printed pipeline and IR); default f16 with precision "fp16-acc32", else f32.

    runtime: which loop `generate` runs (the module's docstring): "auto" (default, or
    $ADRENO_MLIR_RUNTIME: the C loop of libadreno_rt when it is built, else pyopencl),
    "native" (an error naming `adreno-mlir build-native` when it is not built) or
    "pyopencl". `dec.runtime` says which."""
    from adreno_mlir.api import compile as compile_model
    from adreno_mlir.frontend import import_onnx, load_model
    from adreno_mlir.frontend.decoder import decoder_signature, default_max_context, genai_config
    from adreno_mlir.plan import make_plan
    from adreno_mlir.runtime import DeviceMemory
    from adreno_mlir.runtime.native import decoder_library, resolve_runtime

    runtime = resolve_runtime(runtime)
    if runtime == "native":
        decoder_library()  # not built (or too old): say so before the compile

    path = Path(model) if isinstance(model, (str, Path)) else None
    m = load_model(model)
    if config is None:
        config = genai_config(path)
    sig = decoder_signature(m, config)
    if max_context is None:
        max_context = default_max_context(sig, config)
    for what, v in (("max_context", max_context), ("prefill_chunk", prefill_chunk)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CompileError(f"{what} must be a positive integer, got {v!r}")
    if prefill_chunk > max_context:
        raise CompileError(f"prefill_chunk = {prefill_chunk} is longer than max_context = {max_context}")
    if plan is None:
        if kv_cache is None:  # fp16 storage keeps the caches in halves too
            from adreno_mlir.options import Precision, check_precision

            kv_cache = "f16" if Precision(check_precision(precision)).storage == "f16" else "f32"
        plan = make_plan(target, device, textures=textures, precision=precision, layout=layout,
                         tuning_db=tuning_db, overrides=overrides, kv_cache=kv_cache)
    elif kv_cache is not None and kv_cache != plan.kv_cache:
        raise CompileError(f"kv_cache={kv_cache!r} and a plan whose kv_cache is {plan.kv_cache!r}: give one of them")
    memory = DeviceMemory(plan.context())
    programs = {}
    for name, tokens in (("decode", 1), ("prefill", prefill_chunk)):
        graph = import_onnx(m, decoder=(sig, max_context, tokens))
        programs[name] = compile_model(graph, plan=plan, memory=memory, cache=cache, runtime="pyopencl")
    dec = Decoder(sig, programs["prefill"], programs["decode"], memory, max_context, prefill_chunk)
    if runtime != "pyopencl":
        dec.native = _open_native(dec, runtime)
    return dec
