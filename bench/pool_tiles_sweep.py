#!/usr/bin/env python3
"""Sweep fuse-pool-partials' tiling (its `target-items` and `pixels-per-item` options) and
report the pooled depthwise kernels', the first squeeze-excite FCs' and the model's device
time: the measurement behind the pass's defaults (docs/bench/issue13/s3-pool-sweep.log).

    python bench/pool_tiles_sweep.py --device nvidia --models mobilenet_v3_small,efficientnet_b0

Times are OpenCL event times (`CompiledModel.profile`, median of --repeat runs) summed over
each family's launches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

VARIANTS = (("t32k-p2", 32768, 2), ("t64k-p1", 65536, 1), ("t128k-p1", 131072, 1), ("t16k-p2", 16384, 2),
            ("t32k-p4", 32768, 4), ("t64k-p2", 65536, 2))
"""(name, target-items, pixels-per-item)."""


def main(argv=None) -> int:
    from bench import PLANS, materialized_path, shared_dir

    import adreno_mlir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v3_small,mobilenet_v3_large,efficientnet_b0")
    ap.add_argument("--plans", default="buffer4c,texture")
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--shared", default=None)
    args = ap.parse_args(argv)
    shared = shared_dir(args.shared)
    for name in args.models.split(","):
        path = materialized_path(shared, name, 0)
        for plan in args.plans.split(","):
            for vname, items, ppi in VARIANTS:
                def pipeline(p: str, items=items, ppi=ppi) -> str:
                    return p.replace("fuse-pool-partials{target=",
                                     f"fuse-pool-partials{{target-items={items} pixels-per-item={ppi} target=")

                cm = adreno_mlir.compile(str(path), device=args.device, **{**PLANS[plan], "pipeline": pipeline})
                feeds = {n: np.random.default_rng(1).standard_normal(cm.input_shapes[n]).astype(np.float32)
                         for n in cm.input_names}
                cm.run(feeds)
                prof = cm.profile(feeds, repeat=args.repeat)
                pooled = sum(ms for k, ms in prof.items() if k.startswith("dwconv") and "_pool" in k)
                fc1 = sum(ms for k, ms in prof.items() if "_tiles" in k)
                print(f"{name:20s} {plan:9s} {vname:9s} dw+pool {pooled * 1000:6.1f} us  fc1 {fc1 * 1000:5.1f} us  "
                      f"device {sum(prof.values()):.3f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
