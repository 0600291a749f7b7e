#!/usr/bin/env python3
"""Which Winograd tile each shared model's 3x3 convolutions get, and the model's error.

    python bench/winograd_tiles.py [--shared ../shared] [--models resnet18,...]

For every shared graph (materialized with seeded weights): the texture plan compiled for
the Adreno 740 profile (the GPU rule) in fp32 and fp16-acc32, and for the live device (on
PoCL: the CPU rule), run on the default OpenCL device against onnxruntime. Prints a Markdown
table: convs left direct / F(2,3) / F(4,3), and max |ours - ort| / max |ort|.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as _bench  # noqa: E402  (materialized_path, shared_dir)

import adreno_mlir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=None)
    ap.add_argument("--models", default=",".join(_bench.ALL_MODELS))
    args = ap.parse_args()
    import onnxruntime as ort

    print("| model | rule (target) | plan | 3x3 s1 convs direct / F(2,3) / F(4,3) | max rel err vs onnxruntime |")
    print("|---|---|---|---|---:|")
    for name in args.models.split(","):
        path = str(_bench.materialized_path(_bench.shared_dir(args.shared), name, 0))
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for target, kw, plan in [("adreno-740", {}, "textures fp32"),
                                 ("adreno-740", {"precision": "fp16-acc32"}, "textures fp16-acc32"),
                                 ("auto", {}, "textures fp32")]:
            cm = adreno_mlir.compile(path, target=target, textures=True, keep_ir=True, **kw)
            ir = cm.stage_ir["winograd"]
            f2 = len(re.findall(r"texture.winograd_output .*\{tile = 2", ir))
            f4 = len(re.findall(r"texture.winograd_output .*\{tile = 4", ir))
            direct = sum(1 for line in ir.splitlines() if "graph.conv2d " in line and "x3x3x4xf32>" in line
                         and "strides" not in line and "groups" not in line)
            rng = np.random.default_rng(2)
            feeds = {k: rng.standard_normal(cm.input_shapes[k]).astype(np.float32) for k in cm.input_names}
            err = max(float(np.abs(o - r).max() / np.abs(r).max())
                      for o, r in zip(cm.run(feeds).values(), sess.run(None, feeds)))
            rule = "GPU" if target != "auto" else "live device"
            print(f"| {name} | {rule} ({target}) | {plan} | {direct} / {f2} / {f4} | {err:.1e} |", flush=True)


if __name__ == "__main__":
    main()
