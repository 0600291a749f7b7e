#!/usr/bin/env python3
"""A decoder's attention (`graph.group_query_attention`, the gqa family) under each schedule,
in one run: device time of its kernels (OpenCL events, median) for a decoder compiled for
generation, every layer given the same schedule.

    python bench/decode_attention.py MODEL.onnx [--mode decode|prefill|storage] [--max-context 256]
                                     [--position 192] [--prefill-chunk 64] [--json out.json]

- `decode` (default): each (splits, items) schedule of the decode step at `--position` (the
  rows its attention reads: position + 1).
- `prefill`: a chunk of `--prefill-chunk` tokens written at `--position` (its last token
  reads position + chunk rows), the tiled kernel (`tile` tokens a work-group, K/V tiles of
  `kv_tile` rows) against one token a work-group (`tile = 0`, the split kernel).
- `storage`: the default schedules with f32 and f16 caches (`kv_cache`), decode and prefill.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR.parent)]

SCHEDULES = [(1, 64), (2, 64), (4, 64), (8, 64), (16, 64), (4, 32), (8, 32), (16, 32), (32, 32), (4, 128), (8, 16)]
PREFILL = [None, {"tile": 0}, {"tile": 4, "kv_tile": 32}, {"tile": 8, "kv_tile": 32}, {"tile": 16, "kv_tile": 16},
           {"tile": 16, "kv_tile": 32}, {"tile": 32, "kv_tile": 32}]


def _time(program, feeds, repeat):
    """(device ms of the gqa kernels, of the whole run, the attention kernel's name)."""
    ex = program.executable
    s, e = ex.profile_events(feeds, repeat=repeat)
    per = np.median((e - s) * 1e-6, axis=0)
    gqa = [i for i, la in enumerate(ex.plan.launches) if la.kernel.startswith("gqa_")]
    name = next(la.kernel for la in ex.plan.launches if la.kernel.startswith(("gqa_attention", "gqa_prefill")))
    return float(per[gqa].sum()), float(per.sum()), name


def other_modes(args, nodes, sig):
    import adreno_mlir

    rows = []
    chunk = args.prefill_chunk
    prefill_feeds = [np.arange(5, 5 + chunk, dtype=np.int32).reshape(1, chunk), np.array([args.position], np.int32)]
    decode_feeds = [np.array([[5]], np.int32), np.array([args.position], np.int32)]
    cases = ([(cfg, "f32") for cfg in PREFILL] if args.mode == "prefill"
             else [(None, "f32"), (None, "f16")])
    for cfg, storage in cases:
        over = None if cfg is None else {f"loc:{n}": cfg for n in nodes}
        try:
            dec = adreno_mlir.compile_decoder(args.model, max_context=args.max_context, prefill_chunk=chunk,
                                              device=args.device, overrides=over, kv_cache=storage,
                                              runtime="pyopencl")
        except Exception as e:  # noqa: BLE001 - a schedule the device refuses: reported
            rows.append({"config": cfg, "kv_cache": storage, "error": str(e)[:300]})
            continue
        for phase, program, feeds in (("prefill", dec.prefill, prefill_feeds), ("decode", dec.decode, decode_feeds)):
            if args.mode == "prefill" and phase == "decode":
                continue
            gqa, total, name = _time(program, feeds, args.repeat)
            rows.append({"config": cfg, "kv_cache": storage, "phase": phase, "kernel": name, "gqa_ms": gqa,
                         "run_device_ms": total, "layers": len(nodes)})
            print(f"{phase} {storage} {cfg or 'default'} ({name}): attention {gqa:.3f} ms "
                  f"({gqa / len(nodes) * 1e3:.1f} us a layer), run {total:.3f} ms", flush=True)
    return rows


def main(argv=None):
    import onnx

    import adreno_mlir
    from adreno_mlir.frontend.decoder import decoder_signature, genai_config

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--max-context", type=int, default=256)
    ap.add_argument("--position", type=int, default=192)
    ap.add_argument("--mode", choices=("decode", "prefill", "storage"), default="decode")
    ap.add_argument("--prefill-chunk", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    m = onnx.load(args.model, load_external_data=False)
    nodes = [n.name for n in m.graph.node if n.op_type == "GroupQueryAttention"]
    sig = decoder_signature(m, genai_config(args.model))
    rows = []
    if args.mode != "decode":
        rows = other_modes(args, nodes, sig)
        if args.json:
            Path(args.json).write_text(json.dumps({"model": args.model, "mode": args.mode, "kv_heads": sig.kv_heads,
                                                   "chunk": args.prefill_chunk, "position": args.position,
                                                   "rows": rows}, indent=1))
        return
    for splits, items in [(None, None), *SCHEDULES]:
        over = None if splits is None else {f"loc:{n}": {"splits": splits, "items": items} for n in nodes}
        try:
            dec = adreno_mlir.compile_decoder(args.model, max_context=args.max_context, device=args.device,
                                              overrides=over)
        except Exception as e:  # noqa: BLE001 - a schedule the device refuses: reported
            rows.append({"splits": splits, "items": items, "error": str(e)[:300]})
            continue
        ex = dec.decode.executable
        feeds = [np.array([[5]], np.int32), np.array([args.position], np.int32)]
        s, e = ex.profile_events(feeds, repeat=args.repeat)
        per = np.median((e - s) * 1e-6, axis=0)
        gqa = [i for i, la in enumerate(ex.plan.launches) if la.kernel.startswith("gqa_")]
        cfg = next(la.kernel for la in ex.plan.launches if la.kernel.startswith("gqa_attention"))
        row = {"splits": splits, "items": items, "kernel": cfg, "gqa_ms": float(per[gqa].sum()),
               "step_device_ms": float(per.sum()), "layers": len(nodes)}
        rows.append(row)
        print(f"splits {splits} items {items} ({cfg}): attention {row['gqa_ms']:.3f} ms / step "
              f"({row['gqa_ms'] / len(nodes) * 1e3:.1f} us a layer), step {row['step_device_ms']:.3f} ms", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"model": args.model, "kv_heads": sig.kv_heads, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
