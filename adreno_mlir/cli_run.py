"""`adreno-mlir compile` and `adreno-mlir run`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from adreno_mlir.errors import CompileError


def _write_stage(module, path: Path, weights_dir: Path) -> None:
    """Print `module` to `path` with its weights attribute pointing at `weights_dir`."""
    import os

    from xdsl.dialects.builtin import StringAttr

    from adreno_mlir.printing import module_to_text
    from adreno_mlir.weights import WEIGHTS_ATTR

    old = module.attributes[WEIGHTS_ATTR]
    module.attributes[WEIGHTS_ATTR] = StringAttr(os.path.relpath(weights_dir, path.parent))
    try:
        path.write_text(module_to_text(module))
    finally:
        module.attributes[WEIGHTS_ATTR] = old


def _cmd_compile(args: argparse.Namespace) -> int:
    from adreno_mlir.api import work_group_sizes, lower, plan_options
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.weights import store_of

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    weights_dir = out / "weights"
    start = time.perf_counter()
    module = import_onnx(args.model)
    t_import = time.perf_counter() - start
    written = [out / "0-graph.mlir"]
    _write_stage(module, written[0], weights_dir)
    layout, textures, storage, target = plan_options(args.target, args.device, _textures(args),
                                                     args.precision, args.layout)

    def after(name: str, m) -> None:
        path = out / f"{len(written)}-{name}.mlir"
        _write_stage(m, path, weights_dir)
        written.append(path)

    results, source = lower(module, layout, textures, storage, target, work_group_sizes(args.work_group, target), after)
    cl_path = out / (Path(args.model).stem + ".cl")
    cl_path.write_text(source)
    store_of(module).save(weights_dir)
    pipeline = ",".join(r.pipeline for r in results)
    (out / "pipeline.txt").write_text(pipeline + "\n")
    print(f"import: {t_import:.2f} s")
    for r in results:
        print(f"{r.name}: {r.seconds:.2f} s  (adreno-opt -p '{r.pipeline}')")
    print(f"pipeline (replay: adreno-opt {written[0]} -p \"$(cat {out / 'pipeline.txt'})\"):\n  {pipeline}")
    if not args.no_build:
        import pyopencl as cl

        from adreno_mlir.runtime import default_context, describe_device

        ctx = default_context(args.device)
        t = time.perf_counter()
        try:
            cl.Program(ctx, source).build(options=["-cl-std=CL1.2"])
        except cl.RuntimeError as e:
            raise CompileError(f"the OpenCL compiler rejected {cl_path}:\n{e}") from None
        print(f"build on {describe_device(ctx.devices[0])}: {time.perf_counter() - t:.2f} s")
    kernels = source.count("__kernel")
    print(f"{kernels} kernels -> {cl_path}")
    for p in written:
        print(f"  {p}")
    print(f"  {weights_dir}/")
    return 0


def _load_inputs(cm, specs: list[str] | None, seed: int) -> dict[str, np.ndarray]:
    feeds: dict[str, np.ndarray] = {}
    specs = specs or ["random"]
    rng = np.random.default_rng(seed)
    for spec in specs:
        name, _, value = spec.rpartition("=")
        if not name:
            if len(cm.input_names) != 1:
                raise CompileError(
                    f"the model has inputs {cm.input_names}; pass --input NAME=FILE.npy (or NAME=random) for each"
                )
            name = cm.input_names[0]
        if name not in cm.input_names:
            raise CompileError(f"unknown input '{name}'; the model's inputs are {cm.input_names}")
        if value == "random":
            feeds[name] = rng.standard_normal(cm.input_shapes[name]).astype(np.float32)
        else:
            try:
                feeds[name] = np.load(value)
            except (OSError, ValueError) as e:
                raise CompileError(f"cannot read input '{name}' from {value}: {e}") from None
    for name in cm.input_names:
        feeds.setdefault(name, rng.standard_normal(cm.input_shapes[name]).astype(np.float32))
    return feeds


def _cmd_run(args: argparse.Namespace) -> int:
    import adreno_mlir

    cm = adreno_mlir.compile(args.model, target=args.target, device=args.device, textures=_textures(args),
                             precision=args.precision, layout=args.layout, work_group=args.work_group)
    print(f"compiled in {cm.compile_seconds:.2f} s for {cm.device_name} ({cm.plan})")
    feeds = _load_inputs(cm, args.input, args.seed)
    try:
        outputs = cm.run(feeds)
    except ValueError as e:
        raise CompileError(str(e)) from None
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        outputs = cm.run(feeds)
        times.append(time.perf_counter() - t)
    for name, out in outputs.items():
        flat = out.reshape(-1)
        print(f"{name}: shape {list(out.shape)} min {flat.min():.6g} max {flat.max():.6g} "
              f"mean {flat.mean():.6g} argmax {int(flat.argmax())}")
    if times:
        print(f"latency: median {1000 * float(np.median(times)):.2f} ms over {len(times)} runs")
    if args.save:
        np.savez(args.save, **outputs)
        print(f"outputs saved to {args.save}")
    if args.compare:
        import onnxruntime as ort

        sess = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
        refs = sess.run(None, feeds)
        worst = 0.0
        for (name, out), ref in zip(outputs.items(), refs):
            abs_err = float(np.abs(out - ref).max())
            rel = abs_err / max(float(np.abs(ref).max()), 1e-30)
            worst = max(worst, rel)
            print(f"compare {name} with onnxruntime: max abs error {abs_err:.3e}, "
                  f"max error / max |ref| {rel:.3e}")
        if worst > args.tolerance:
            print(f"error: outputs differ from onnxruntime by {worst:.3e} > tolerance {args.tolerance:g}",
                  file=sys.stderr)
            return 1
        print(f"OK: within tolerance {args.tolerance:g}")
    return 0


def _textures(args: argparse.Namespace) -> bool | None:
    from adreno_mlir.options import textures_from_flag

    return textures_from_flag(args.textures)


def _work_group_flag(flag: str):
    """argparse `type=` of --work-group: a bad value is a usage error (exit 1, see cli.main)."""
    from adreno_mlir.options import work_group_from_flag

    try:
        return work_group_from_flag(flag)
    except CompileError as e:
        raise argparse.ArgumentTypeError("invalid value " + str(e).removeprefix("invalid --work-group ")) from None


def _plan_arguments(p: argparse.ArgumentParser) -> None:
    from adreno_mlir.options import TEXTURE_FLAGS, Layout, Precision

    # choices come from adreno_mlir.options; a bad value exits 1 with `error: argument ...`
    p.add_argument("--device", help="OpenCL device (default: PYOPENCL_CTX or PoCL); e.g. pocl, nvidia, gpu")
    p.add_argument("--target", default="auto",
                   help="target profile: auto (read the device), adreno-660, adreno-740, pocl-cpu, "
                        "nvidia-opencl, tiny-test, or device-<OpenCL device name> of this machine")
    p.add_argument("--textures", choices=list(TEXTURE_FLAGS), default="auto",
                   help="images for NCHW4c activations (auto: on for GPU targets with images)")
    p.add_argument("--precision", choices=[m.value for m in Precision], default="fp32",
                   help="fp16-acc32: fp16 storage, fp32 arithmetic")
    p.add_argument("--layout", choices=[m.value for m in Layout], default=None,
                   help="activation layout (default: nchw4c with textures or fp16 storage, else nchw)")
    p.add_argument("--work-group", type=_work_group_flag, default="driver", metavar="{driver,auto,X,Y,Z}",
                   help="local sizes: the driver's choice, the target's preferred size, or a preferred "
                        "size such as 16,4,4 (the last two are experimental)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("compile", help="compile a model: IR after each stage, the .cl program, weights")
    c.add_argument("model")
    c.add_argument("-o", "--output", required=True, help="output directory")
    _plan_arguments(c)
    c.add_argument("--no-build", action="store_true", help="do not build the program on a device")
    c.set_defaults(func=_cmd_compile)

    r = sub.add_parser("run", help="compile and run a model on an OpenCL device")
    r.add_argument("model")
    r.add_argument("--input", action="append",
                   help="FILE.npy, NAME=FILE.npy or NAME=random (default: random normal data)")
    r.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    r.add_argument("--compare", choices=["onnxruntime"], help="compare the outputs with a reference")
    r.add_argument("--tolerance", type=float, default=1e-4,
                   help="max allowed |ours - ref| / max|ref| with --compare (default 1e-4)")
    _plan_arguments(r)
    r.add_argument("--repeat", type=int, default=0, help="time this many extra runs")
    r.add_argument("--save", help="save the outputs to this .npz file")
    r.set_defaults(func=_cmd_run)
