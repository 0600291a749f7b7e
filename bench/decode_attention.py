#!/usr/bin/env python3
"""The decode program's attention (`graph.group_query_attention`, the gqa family) under each
(splits, items) schedule, in one run: device time per step of its kernels (OpenCL events,
median) for a decoder compiled for generation, every layer given the same schedule.

    python bench/decode_attention.py MODEL.onnx [--max-context 256] [--position 192] [--json out.json]

`--position` is where the decode step writes (the rows its attention reads: position + 1).
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


def main(argv=None):
    import onnx

    import adreno_mlir
    from adreno_mlir.frontend.decoder import decoder_signature, genai_config

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--max-context", type=int, default=256)
    ap.add_argument("--position", type=int, default=192)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    m = onnx.load(args.model, load_external_data=False)
    nodes = [n.name for n in m.graph.node if n.op_type == "GroupQueryAttention"]
    sig = decoder_signature(m, genai_config(args.model))
    rows = []
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
