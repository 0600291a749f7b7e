"""A research pass defined outside the package, plugged into `adreno_mlir.compile`.

`force-x-block` makes every (float4) convolution kernel compute `x_block` adjacent
output pixels per work-item, whatever select-kernel-config chose, by editing the
`kernel_config` the lowering reads. It runs right after select-kernel-config, so it
edits complete configs (a config written before select-kernel-config is kept as is,
and keys it leaves out take the lowering's static defaults).

    python examples/custom_pass.py [model.onnx] [--x-block N] [--source out.cl]

Without a model it builds the project's `tinynet`. It compiles the model twice for the
default OpenCL device (with and without the pass) with a GPU target profile's NCHW plan
(`--target`, default adreno-740), whose convolutions are the float4 kernels the pass
edits (a CPU target picks the float8 pixel-vector kernels instead), prints the kernels
the pass changed and the max error of both against onnxruntime.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

import adreno_mlir
from adreno_mlir.dialects import graph
from adreno_mlir.passes.select_kernel_config import config_of, set_config


# --------------------------------------------------------------------------- the pass
@dataclass(frozen=True)
class ForceXBlock(ModulePass):
    """Every convolution kernel that blocks pixels computes `x_block` of them per work-item."""

    name = "force-x-block"
    x_block: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for conv in [o for o in op.walk() if isinstance(o, graph.Conv2dOp)]:
            cfg = config_of(conv)  # the config of its kernel (its graph.fused region, if any)
            if cfg.get("kernel", "vec4") == "vec4":  # the scalar NCHW kernel has no pixel blocks
                set_config(conv, {**cfg, "x_block": self.x_block})


def kernel_names(source: str) -> list[str]:
    return [line.split("void ", 1)[1].split("(", 1)[0] for line in source.splitlines()
            if line.startswith("__kernel void ")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", help="an ONNX model (default: the tinynet example)")
    ap.add_argument("--x-block", type=int, default=2, choices=(1, 2, 4))
    ap.add_argument("--source", metavar="FILE", help="also write the OpenCL C compiled with the pass to FILE")
    ap.add_argument("--target", default="adreno-740", help="target profile (default adreno-740)")
    args = ap.parse_args()

    import onnx
    import onnxruntime as ort
    from adreno_mlir.examples import tinynet

    model = onnx.load(args.model) if args.model else tinynet()

    def insert(default: str) -> str:  # the default pipeline, our pass after select-kernel-config
        return default.replace(",split-k", f",force-x-block{{x-block={args.x_block}}},split-k")

    plan = dict(target=args.target, layout="nchw", textures=False)
    base = adreno_mlir.compile(model, **plan)
    cm = adreno_mlir.compile(model, pipeline=insert, passes=[ForceXBlock], **plan)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    print(f"plan: {cm.plan}\npipeline: {cm.pipeline}")
    if args.source:
        with open(args.source, "w") as f:
            f.write(cm.source)
    before, after = kernel_names(base.source), kernel_names(cm.source)
    for old, new in zip([k for k in before if k not in after], [k for k in after if k not in before]):
        print(f"kernel changed: {old} -> {new}")
    print(f"kernels: {len(before)} without the pass, {len(after)} with it")
    for label, m in (("default", base), ("force-x-block", cm)):
        outs = m.run(feeds)
        err = max(float(np.abs(outs[n] - r).max()) for n, r in zip(m.output_names, ref))
        print(f"max error vs onnxruntime ({label}): {err:.3g}")


if __name__ == "__main__":
    main()
