"""`adreno-mlir generate MODEL`: generate tokens with a decoder in onnxruntime-genai's format
(adreno_mlir/generation.py), compiled from its .onnx file or loaded from a decoder artifact.

    adreno-mlir generate model.onnx --prompt-ids 1,2,3 --max-new-tokens 32
    adreno-mlir generate model.onnx --prompt "Once upon a time" --temperature 0.8 --top-k 40 --seed 0
    adreno-mlir generate model.onnx --prompt-ids 1,2,3 --json run.json --save-logits logits.npy
    adreno-mlir generate model.onnx --prompt-ids 1,2,3 --save model.adreno   # also write the artifact
    adreno-mlir generate model.adreno --prompt-ids 1,2,3 --runtime native    # no compiler

Prints the generated ids (and their text, with a tokenizer), the time to first token, and
prefill and decode tokens per second. `--json` writes {"tokens", "ttft_ms", "prefill_tok_s",
"decode_tok_s", "runtime", ...}; `--save-logits` the logits each generated token was chosen from
([new tokens, vocab] float32, .npy), so a run can be checked against a reference.
`--prompt TEXT` encodes with the `tokenizers` library: `tokenizer.json` beside the model
(or `--tokenizer FILE`).

MODEL may be a decoder artifact (X.adreno, written by `--save` or `Decoder.save`): it is
loaded (`adreno_mlir.load`), and the flags that fix the programs (the plan flags but
--device, --max-context, --prefill-chunk) are noted as ignored. `--runtime` picks the loop:
auto (default, or $ADRENO_MLIR_RUNTIME: the C loop of libadreno_rt when it is built),
native or pyopencl.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from adreno_mlir.errors import InputError


def _ids(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.lstrip("-").isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected comma-separated token ids such as 1,2,3, not {text!r}")
    return [int(p) for p in parts]


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
    return v


def load_tokenizer(model: Path, given: str | None):
    """The `tokenizers` Tokenizer of `given`, or of tokenizer.json beside the model."""
    path = Path(given) if given else model.with_name("tokenizer.json")
    if not path.is_file():
        raise InputError(f"--prompt needs a tokenizer: {path} does not exist (put the model's tokenizer.json beside "
                         "it, pass --tokenizer FILE, or give --prompt-ids)")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise InputError("--prompt needs the tokenizers library: pip install 'adreno-mlir[text]' "
                         "(or give --prompt-ids)") from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # noqa: BLE001 - the library's own error, named with the file
        raise InputError(f"{path}: not a tokenizers tokenizer.json ({e})") from None


_ARTIFACT_FIXED = {"max_context": ("--max-context", None), "prefill_chunk": ("--prefill-chunk", 64)}
"""generate's flags (besides the plan's) that a decoder artifact fixes: (flag, default)."""


def _load_decoder_artifact(path: Path, args: argparse.Namespace):
    """The LoadedDecoder of a decoder artifact MODEL (after saying which flags it ignores);
    a one-model artifact, or a folder that is no artifact, is an error naming it."""
    import adreno_mlir
    from adreno_mlir.artifact import ArtifactError, read_manifest
    from adreno_mlir.cli_run import _PLAN_DEFAULTS

    if args.save:
        raise InputError(f"--save writes the decoder compiled from an .onnx model; {path} is already a decoder "
                         "artifact (copy the folder to keep another one)")
    _, manifest = read_manifest(path)
    if "programs" not in manifest and "decoder" not in manifest:
        raise ArtifactError(
            f"{path} is an artifact of one model, not a decoder artifact: generate needs a decoder's prefill and "
            f"decode programs sharing a KV cache. Write one with `adreno-mlir generate DECODER.onnx --save "
            f"{path.name}` (or compile_decoder(...).save); run a one-model artifact with `adreno-mlir run {path}`")
    ignored = [f"--{k.replace('_', '-')}" for k, default in _PLAN_DEFAULTS.items() if getattr(args, k) != default]
    ignored += [flag for key, (flag, default) in _ARTIFACT_FIXED.items() if getattr(args, key) != default]
    if ignored:
        print(f"note: {', '.join(ignored)} ignored: the plan, the context and the prefill chunk are fixed when the "
              "decoder artifact is compiled")
    return adreno_mlir.load(path, device=args.device, cache=_cache_arg(args), runtime=args.runtime)


def _cache_arg(args: argparse.Namespace):
    return False if args.no_cache else args.cache_dir


def _cmd_generate(args: argparse.Namespace) -> int:
    import numpy as np

    from adreno_mlir.artifact import check_save_path
    from adreno_mlir.cli_run import _is_artifact, plan_from_args
    from adreno_mlir.generation import compile_decoder

    model = Path(args.model)
    artifact = _is_artifact(model)
    if not artifact and not model.is_file():
        raise InputError(f"{model}: no such model file")
    if args.greedy and (args.temperature is not None or args.top_k):
        raise InputError("--greedy takes the largest logit; it does not combine with --temperature or --top-k")
    if args.save and not artifact:
        check_save_path(args.save)  # refused before the compile, not after it
    tokenizer = None
    if args.prompt is not None:
        tokenizer = load_tokenizer(model, args.tokenizer)
        prompt = tokenizer.encode(args.prompt).ids
        if not prompt:
            raise InputError(f"the tokenizer turns the prompt {args.prompt!r} into no tokens")
    else:
        prompt = args.prompt_ids
    if artifact:
        dec = _load_decoder_artifact(model, args)
        startup = f"load {dec.load_seconds:.1f} s"
    else:
        dec = compile_decoder(model, max_context=args.max_context, prefill_chunk=args.prefill_chunk,
                              plan=plan_from_args(args), cache=_cache_arg(args), runtime=args.runtime)
        startup = f"compile {dec.compile_seconds:.1f} s"
        if args.save:
            print(f"saved the decoder artifact {dec.save(args.save)}")
    if len(prompt) > dec.max_context:
        raise InputError(f"the prompt has {len(prompt)} tokens; the context holds {dec.max_context} "
                         "(--max-context, at most the model's rotary tables: "
                         f"{dec.signature.max_positions})")
    stream = (lambda t: print(t, end=" ", flush=True)) if args.stream else None
    res = dec.generate(prompt, args.max_new_tokens, greedy=args.greedy or None,
                       temperature=args.temperature if args.temperature is not None else 1.0,
                       top_k=args.top_k or 0, seed=args.seed, stop_at_eos=not args.ignore_eos, on_token=stream)
    if args.stream:
        print()
    print("tokens: " + ",".join(map(str, res.tokens)))
    if tokenizer is not None:
        print("text: " + tokenizer.decode(res.tokens))
    print(f"prompt {res.prompt_tokens} tokens, generated {len(res.tokens)} ({res.stop_reason}); "
          f"time to first token {res.ttft_ms:.1f} ms, prefill {res.prefill_tok_s:.1f} tokens/s, "
          f"decode {res.decode_tok_s:.1f} tokens/s; {startup} on {dec.device_name}; runtime {dec.runtime}")
    if args.json:
        record = res.to_json()
        record.update(device=dec.device_name, max_context=dec.max_context, prefill_chunk=dec.prefill_chunk,
                      plan=dec.plan, runtime=dec.runtime, model=str(model),
                      kind="artifact" if artifact else "onnx")
        if artifact:
            record.update(load_seconds=dec.load_seconds)
        else:
            record.update(compile_seconds=dec.compile_seconds)
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    if args.save_logits:
        np.save(args.save_logits, res.logits)
    return 0


def decoder_program_arguments(p: argparse.ArgumentParser) -> None:
    """--decoder decode|prefill (with --max-context and --prefill-chunk): `analyze` and `tune`
    on one of a decoder's generation programs, as `generate` compiles them."""
    from adreno_mlir.options import positive_int

    p.add_argument("--decoder", choices=["decode", "prefill"], default=None,
                   help="the model is an onnxruntime-genai decoder: take its decode (one token a run) or prefill "
                        "program, over a KV cache on the device, as `adreno-mlir generate` compiles it")
    p.add_argument("--max-context", type=positive_int, default=None, metavar="L",
                   help="with --decoder: the cache's rows (default as generate: the model's context, at most 512)")
    p.add_argument("--prefill-chunk", type=positive_int, default=64, metavar="C",
                   help="with --decoder prefill: tokens per run (default 64)")


def decoder_program_of(args: argparse.Namespace) -> tuple[str, int, int] | None:
    """(program, max_context, prefill_chunk) of --decoder, or None without it; the default
    context is `generate`'s (adreno_mlir.frontend.decoder.default_max_context)."""
    if not getattr(args, "decoder", None):
        for flag, key in (("--max-context", "max_context"),):
            if getattr(args, key, None) is not None:
                raise InputError(f"{flag} applies to a decoder's program: give --decoder decode or prefill")
        return None
    if args.max_context is None:
        from adreno_mlir.frontend import load_model
        from adreno_mlir.frontend.decoder import decoder_signature, default_max_context, genai_config

        config = genai_config(args.model)
        args.max_context = default_max_context(decoder_signature(load_model(args.model), config), config)
    return args.decoder, args.max_context, args.prefill_chunk


def add_command(sub: argparse._SubParsersAction) -> None:
    from adreno_mlir.cli_run import _cache_arguments, _plan_arguments
    from adreno_mlir.options import positive_int

    g = sub.add_parser("generate", help="generate tokens with an onnxruntime-genai decoder (KV cache on the device)",
                       description=__doc__.splitlines()[0])
    g.add_argument("model", help="the decoder's .onnx file (onnxruntime-genai's format), or a decoder artifact "
                                 "(X.adreno, written by --save)")
    p = g.add_mutually_exclusive_group(required=True)
    p.add_argument("--prompt-ids", type=_ids, metavar="ID,ID,...", help="the prompt as token ids")
    p.add_argument("--prompt", metavar="TEXT", help="the prompt as text (tokenizer.json beside the model)")
    g.add_argument("--tokenizer", metavar="FILE", help="tokenizer.json for --prompt (default: beside the model)")
    g.add_argument("--max-new-tokens", type=positive_int, default=32, metavar="N",
                   help="tokens to generate (default 32; fewer at an end-of-sequence id or a full context)")
    g.add_argument("--max-context", type=positive_int, default=None, metavar="L",
                   help="the KV cache's rows: prompt + generated tokens (default: genai_config's context_length, "
                        "at most 512)")
    g.add_argument("--prefill-chunk", type=positive_int, default=64, metavar="C",
                   help="tokens per prefill run (default 64)")
    g.add_argument("--greedy", action="store_true", help="take the largest logit (the default without sampling flags)")
    g.add_argument("--temperature", type=_positive_float, default=None, metavar="T", help="sample at temperature T")
    g.add_argument("--top-k", type=positive_int, default=None, metavar="K", help="sample among the K largest logits")
    g.add_argument("--seed", type=int, default=None,
                   help="seed of the sampler (the C loop's own generator on the native runtime, numpy's on "
                        "pyopencl: the same seed samples other tokens on each)")
    g.add_argument("--ignore-eos", action="store_true", help="do not stop at the model's end-of-sequence ids")
    g.add_argument("--stream", action="store_true", help="print each id as it is generated")
    g.add_argument("--json", metavar="FILE", help="write the run as JSON (tokens, ttft_ms, prefill_tok_s, decode_tok_s)")
    g.add_argument("--save-logits", metavar="FILE.npy", help="write the logits of every generated token")
    g.add_argument("--save", metavar="X.adreno",
                   help="also write the compiled decoder as a decoder artifact (generate X.adreno, adreno-run "
                        "--generate X.adreno and adreno_mlir.load run it without the compiler)")
    g.add_argument("--runtime", choices=["auto", "native", "pyopencl"], default=None,
                   help="the generation loop: the native C loop (runtime/c, `adreno-mlir build-native`) or "
                        "pyopencl's (default: auto, native when built, or $ADRENO_MLIR_RUNTIME)")
    _plan_arguments(g)
    _cache_arguments(g)
    g.set_defaults(func=_cmd_generate)


if __name__ == "__main__":  # python -m adreno_mlir.cli_generate ... is `adreno-mlir generate ...`
    from adreno_mlir.cli import main

    sys.exit(main(["generate", *sys.argv[1:]]))

