"""`adreno-mlir generate MODEL.onnx`: generate tokens with a decoder in onnxruntime-genai's
format (adreno_mlir/generation.py).

    adreno-mlir generate model.onnx --prompt-ids 1,2,3 --max-new-tokens 32
    adreno-mlir generate model.onnx --prompt "Once upon a time" --temperature 0.8 --top-k 40 --seed 0
    adreno-mlir generate model.onnx --prompt-ids 1,2,3 --json run.json --save-logits logits.npy

Prints the generated ids (and their text, with a tokenizer), the time to first token, and
prefill and decode tokens per second. `--json` writes {"tokens", "ttft_ms", "prefill_tok_s",
"decode_tok_s", ...}; `--save-logits` the logits each generated token was chosen from
([new tokens, vocab] float32, .npy), so a run can be checked against a reference.
`--prompt TEXT` encodes with the `tokenizers` library: `tokenizer.json` beside the model
(or `--tokenizer FILE`).
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


def _cmd_generate(args: argparse.Namespace) -> int:
    import numpy as np

    from adreno_mlir.cli_run import plan_from_args
    from adreno_mlir.generation import compile_decoder

    model = Path(args.model)
    if not model.is_file():
        raise InputError(f"{model}: no such model file")
    tokenizer = None
    if args.prompt is not None:
        tokenizer = load_tokenizer(model, args.tokenizer)
        prompt = tokenizer.encode(args.prompt).ids
        if not prompt:
            raise InputError(f"the tokenizer turns the prompt {args.prompt!r} into no tokens")
    else:
        prompt = args.prompt_ids
    if args.greedy and (args.temperature is not None or args.top_k):
        raise InputError("--greedy takes the largest logit; it does not combine with --temperature or --top-k")
    plan = plan_from_args(args)
    cache = False if args.no_cache else args.cache_dir
    dec = compile_decoder(model, max_context=args.max_context, prefill_chunk=args.prefill_chunk, plan=plan,
                          cache=cache)
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
          f"decode {res.decode_tok_s:.1f} tokens/s; compile {dec.compile_seconds:.1f} s on "
          f"{dec.decode.device_name}")
    if args.json:
        record = res.to_json()
        record.update(device=dec.decode.device_name, max_context=dec.max_context, prefill_chunk=dec.prefill_chunk,
                      compile_seconds=dec.compile_seconds, plan=dec.decode.plan)
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
    g.add_argument("model", help="the decoder's .onnx file (onnxruntime-genai's format)")
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
    g.add_argument("--seed", type=int, default=None, help="seed of the sampler")
    g.add_argument("--ignore-eos", action="store_true", help="do not stop at the model's end-of-sequence ids")
    g.add_argument("--stream", action="store_true", help="print each id as it is generated")
    g.add_argument("--json", metavar="FILE", help="write the run as JSON (tokens, ttft_ms, prefill_tok_s, decode_tok_s)")
    g.add_argument("--save-logits", metavar="FILE.npy", help="write the logits of every generated token")
    _plan_arguments(g)
    _cache_arguments(g)
    g.set_defaults(func=_cmd_generate)


if __name__ == "__main__":  # python -m adreno_mlir.cli_generate ... is `adreno-mlir generate ...`
    from adreno_mlir.cli import main

    sys.exit(main(["generate", *sys.argv[1:]]))

