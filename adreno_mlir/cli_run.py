"""`adreno-mlir compile` and `adreno-mlir run`.

`compile -o X.adreno` writes a compiled-model artifact (docs/artifact.md) that
`run X.adreno` executes without the compiler; `run` prints the startup figures
(compile or load, program build with the cache state, first run) apart from the
steady-state latency.
"""

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


def _cache(args: argparse.Namespace):
    """The `cache=` argument that --no-cache / --cache-dir select (None: the default folder)."""
    if getattr(args, "no_cache", False):
        return False
    return getattr(args, "cache_dir", None)


def _is_artifact(path: Path) -> bool:
    """An artifact path: `X.adreno`, or any directory (artifacts are directories; a
    directory that is not one gets load()'s error naming the missing manifest)."""
    return path.suffix == ".adreno" or path.is_dir()


def _cmd_compile(args: argparse.Namespace) -> int:
    """Compile to an artifact (`-o X.adreno`), or to a folder of stage IR, the .cl
    program, weights, pipeline.txt and the artifact `<model>.adreno` (any other -o)."""
    from adreno_mlir.api import io_shapes, lower
    from adreno_mlir.artifact import check_save_path, save_artifact
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.runtime.plan import plan_from_module
    from adreno_mlir.weights import store_of

    out = Path(args.output)
    artifact_only = out.suffix == ".adreno"
    artifact = check_save_path(out if artifact_only else out / (Path(args.model).stem + ".adreno"))
    compile_plan = plan_from_args(args)
    if not artifact_only:
        out.mkdir(parents=True, exist_ok=True)
    weights_dir = out / "weights"
    start = time.perf_counter()
    module = import_onnx(args.model)
    t_import = time.perf_counter() - start
    in_shapes, out_shapes = io_shapes(module)
    written = [] if artifact_only else [out / "0-graph.mlir"]
    if written:
        _write_stage(module, written[0], weights_dir)

    def after(name: str, m) -> None:
        path = out / f"{len(written)}-{name}.mlir"
        _write_stage(m, path, weights_dir)
        written.append(path)

    results, source = lower(module, compile_plan, after_stage=None if artifact_only else after)
    plan, weights = plan_from_module(module, store_of(module), input_shapes=in_shapes, output_shapes=out_shapes)
    pipeline = ",".join(r.pipeline for r in results)
    cl_path = out / (Path(args.model).stem + ".cl")
    if not artifact_only:
        cl_path.write_text(source)
        store_of(module).save(weights_dir)
        (out / "pipeline.txt").write_text(pipeline + "\n")
    print(f"import: {t_import:.2f} s")
    for r in results:
        print(f"{r.name}: {r.seconds:.2f} s  (adreno-opt -p '{r.pipeline}')")
    if artifact_only:
        print(f"pipeline:\n  {pipeline}")
    else:
        print(f"pipeline (replay: adreno-opt {written[0]} -p \"$(cat {out / 'pipeline.txt'})\"):\n  {pipeline}")
    binaries = []
    if not args.no_build:
        import pyopencl as cl

        from adreno_mlir.artifact import ProgramBinary
        from adreno_mlir.runtime import describe_device
        from adreno_mlir.runtime.program_cache import build_program

        ctx = compile_plan.context()
        try:
            program, info = build_program(ctx, source, plan.build_options, cache=_cache(args))
        except cl.RuntimeError as e:
            raise CompileError(f"the OpenCL compiler rejected {'the program' if artifact_only else cl_path}:\n{e}") from None
        print(f"build on {describe_device(ctx.devices[0])}: {info.seconds:.2f} s (cache {info.cache})")
        binary = ProgramBinary.of(program, ctx.devices[0], plan.build_options)
        binaries = [binary] if binary else []
    save_artifact(artifact, plan=plan, weights=weights, source=source, target=compile_plan.target,
                  options=compile_plan.record(), plan_description=compile_plan.describe(), binaries=binaries)
    kernels = source.count("__kernel")
    if artifact_only:
        print(f"{kernels} kernels, {len(plan.launches)} launches -> {artifact} "
              f"({'with' if binaries else 'without'} a program binary; run: adreno-mlir run {artifact})")
        return 0
    print(f"{kernels} kernels -> {cl_path}")
    for p in written:
        print(f"  {p}")
    print(f"  {weights_dir}/")
    print(f"  {artifact}/  (artifact: adreno-mlir run {artifact})")
    return 0


def compare_outputs(ours: np.ndarray, ref: np.ndarray, name: str, tolerance: float) -> tuple[bool, str]:
    """Whether `ours` matches the reference `ref` within `tolerance` (max|ours - ref| /
    max|ref| over the finite values), and the line that says so. NaN and infinities must
    sit at the same positions (infinities with the same sign): a NaN or an inf is never
    averaged away, and a comparison never reports NaN as an error size."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    if ours.shape != ref.shape:
        return False, f"compare {name}: shape {list(ours.shape)} differs from the reference's {list(ref.shape)}"
    for what, mask_ours, mask_ref in (("NaN", np.isnan(ours), np.isnan(ref)),
                                      ("+inf", np.isposinf(ours), np.isposinf(ref)),
                                      ("-inf", np.isneginf(ours), np.isneginf(ref))):
        if not np.array_equal(mask_ours, mask_ref):
            first = tuple(int(i) for i in np.argwhere(mask_ours != mask_ref)[0])
            return False, (f"compare {name}: {what} at {int(mask_ours.sum())} positions in ours, "
                           f"{int(mask_ref.sum())} in the reference (first difference at index {list(first)})")
    finite = np.isfinite(ref)
    if not finite.any():
        return True, f"compare {name}: no finite values; NaN/inf positions match"
    abs_err = float(np.abs(ours[finite] - ref[finite]).max())
    rel = abs_err / max(float(np.abs(ref[finite]).max()), 1e-30)
    extra = f" ({int((~finite).sum())} NaN/inf positions match)" if (~finite).any() else ""
    return rel <= tolerance, (f"compare {name}: max abs error {abs_err:.3e}, max error / max |ref| {rel:.3e}"
                              + extra)


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not np.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


def _load_inputs(cm, specs: list[str] | None, seed: int) -> dict[str, np.ndarray]:
    feeds: dict[str, np.ndarray] = {}
    specs = specs or []  # every input not given is random (any number of inputs, or none)
    rng = np.random.default_rng(seed)
    bounds = {t.name: t.bound for t in cm.launch_plan.inputs if t.dtype == "i32"}

    def random_input(name: str) -> np.ndarray:
        """Normal floats, or for token ids (int64, as ONNX models take them) uniform ids
        in [0, bound)."""
        if name in bounds:
            return rng.integers(0, bounds[name], cm.input_shapes[name]).astype(np.int64)
        return rng.standard_normal(cm.input_shapes[name]).astype(np.float32)

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
            feeds[name] = random_input(name)
        else:
            try:
                feeds[name] = np.load(value)
            except (OSError, ValueError) as e:
                raise CompileError(f"cannot read input '{name}' from {value}: {e}") from None
    for name in cm.input_names:
        if name not in feeds:
            feeds[name] = random_input(name)
    return feeds


def _cmd_run(args: argparse.Namespace) -> int:
    """Compile (.onnx) or load (artifact) a model, run it, and print the startup figures
    (compile or load time, program build with its cache state, first run) apart from
    the steady-state latency."""
    import adreno_mlir

    path = Path(args.model)
    if _is_artifact(path):
        if args.compare:
            raise CompileError(f"--compare onnxruntime needs the ONNX model, and an artifact ({path}) does not "
                               "contain it; run the .onnx file with --compare, or drop --compare")
        ignored = [f"--{k.replace('_', '-')}" for k, default in _PLAN_DEFAULTS.items()
                   if getattr(args, k) != default]
        if ignored:
            print(f"note: {', '.join(ignored)} ignored: the plan is fixed when the artifact is compiled")
        model = adreno_mlir.load(path, device=args.device, cache=_cache(args), runtime=args.runtime)
        print(f"loaded {path} in {model.load_seconds:.2f} s for {model.device_name} ({model.plan})")
        print(f"program build: {model.build_info.seconds:.2f} s ({model.program_origin})")
    else:
        if not path.is_file():
            raise CompileError(f"no such model file: {path}")
        model = adreno_mlir.compile(path, plan=plan_from_args(args), cache=_cache(args), runtime=args.runtime)
        print(f"compiled in {model.compile_seconds:.2f} s for {model.device_name} ({model.plan})")
        print(f"program build: {model.build_info.seconds:.2f} s (cache {model.build_info.cache}; "
              "part of the compile time)")
    print(f"runtime: {model.runtime}" + ("" if model.runtime == "native" or args.runtime == "pyopencl" else
                                         " (build the native runtime for lower launch overhead: "
                                         "adreno-mlir build-native)"))
    feeds = _load_inputs(model, args.input, args.seed)
    t = time.perf_counter()
    try:
        outputs = model.run(feeds)
    except ValueError as e:
        raise CompileError(str(e)) from None
    print(f"first run: {1000 * (time.perf_counter() - t):.2f} ms")
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        outputs = model.run(feeds)
        times.append(time.perf_counter() - t)
    for name, out in outputs.items():
        flat = out.reshape(-1)
        print(f"{name}: shape {list(out.shape)} min {flat.min():.6g} max {flat.max():.6g} "
              f"mean {flat.mean():.6g} argmax {int(flat.argmax())}")
    if times:
        print(f"latency: median {1000 * float(np.median(times)):.2f} ms over {len(times)} runs (steady state)")
    if args.save:
        np.savez(args.save, **outputs)
        print(f"outputs saved to {args.save}")
    if args.compare:
        import onnxruntime as ort

        try:
            sess = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
            refs = sess.run(None, feeds)
        except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types vary
            message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise CompileError(f"--compare onnxruntime: onnxruntime refused {args.model}, so there is no reference "
                               f"to compare with: {message}") from None
        ok = True
        if args.tolerance is None:
            args.tolerance = 1e-4 if model.compile_plan.precision == "fp32" else 5e-2
        for (name, out), ref in zip(outputs.items(), refs):
            good, line = compare_outputs(out, ref, name, args.tolerance)
            ok &= good
            print(line.replace(f"compare {name}", f"compare {name} with onnxruntime", 1))
        if not ok:
            print(f"error: outputs differ from onnxruntime (tolerance {args.tolerance:g})", file=sys.stderr)
            return 1
        print(f"OK: within tolerance {args.tolerance:g}")
    return 0


def plan_from_args(args: argparse.Namespace):
    """The `CompilePlan` (adreno_mlir.plan) of the plan flags of `compile` and `run`
    (`_plan_arguments`): every flag checked once, here."""
    from adreno_mlir.options import textures_from_flag
    from adreno_mlir.plan import make_plan

    return make_plan(args.target, args.device, textures=textures_from_flag(args.textures), precision=args.precision,
                     layout=args.layout, work_group=args.work_group, tuning_db=args.tuning_db)


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
    p.add_argument("--tuning-db", metavar="DB",
                   help="use the best kernel configs measured for this device in a tuning database "
                        "(`adreno-mlir tune`)")


_PLAN_DEFAULTS = {"target": "auto", "textures": "auto", "precision": "fp32", "layout": None, "work_group": "driver",
                  "tuning_db": None}
"""The plan flags and their defaults (`run` on an artifact notes the ones it ignores)."""


def _cache_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--no-cache", action="store_true",
                   help="do not use the program binary cache (build the OpenCL program from source)")
    g.add_argument("--cache-dir", metavar="DIR",
                   help="program binary cache folder (default: $ADRENO_MLIR_CACHE_DIR or the user cache folder)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("compile", help="compile a model: IR after each stage, the .cl program, weights")
    c.add_argument("model")
    c.add_argument("-o", "--output", required=True,
                   help="X.adreno: write the compiled-model artifact (docs/artifact.md); any other path: a "
                        "directory of stage IR, the .cl program, weights, pipeline.txt and <model>.adreno")
    _plan_arguments(c)
    c.add_argument("--no-build", action="store_true",
                   help="do not build the program on a device (the artifact then has no program binary)")
    _cache_arguments(c)
    c.set_defaults(func=_cmd_compile)

    r = sub.add_parser("run", help="compile (.onnx) or load (.adreno artifact) and run a model on an OpenCL device")
    r.add_argument("model", help="an .onnx file, or an artifact written by `adreno-mlir compile -o X.adreno`")
    r.add_argument("--input", action="append",
                   help="FILE.npy, NAME=FILE.npy or NAME=random (default: random normal data; token ids "
                        "uniform over their table)")
    r.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    r.add_argument("--compare", choices=["onnxruntime"], help="compare the outputs with a reference")
    r.add_argument("--tolerance", type=_tolerance, default=None,
                   help="max allowed |ours - ref| / max|ref| with --compare (default 1e-4 for fp32, 5e-2 for the "
                        "fp16 precisions, whose stored values keep 11 significant bits)")
    _plan_arguments(r)
    r.add_argument("--repeat", type=int, default=5,
                   help="time this many runs after the first for the steady-state latency (default 5)")
    _cache_arguments(r)
    r.add_argument("--runtime", choices=["auto", "native", "pyopencl"], default=None,
                   help="launch path: the native C runtime (runtime/c) when built, else pyopencl "
                        "(default: auto, or $ADRENO_MLIR_RUNTIME)")
    r.add_argument("--save", help="save the outputs to this .npz file")
    r.set_defaults(func=_cmd_run)

    from adreno_mlir.tuning.cli import add_tune_command

    add_tune_command(sub)

    b = sub.add_parser("build-native", help="build the native runtime (libadreno_rt, adreno-run) with CMake")
    b.add_argument("-o", "--output", default=None,
                   help="build folder (default runtime/c/build, where adreno_mlir looks for the library)")
    b.add_argument("--sanitize", action="store_true", help="build with AddressSanitizer + UBSan")
    b.set_defaults(func=_cmd_build_native)

    from adreno_mlir.cli_analyze import add_command as add_analyze

    add_analyze(sub)  # `adreno-mlir analyze`: the roofline estimate per kernel


def _cmd_build_native(args: argparse.Namespace) -> int:
    import os

    from adreno_mlir.runtime.native import (DEFAULT_BUILD_DIR, LIBRARY_NAME, build_native, runner_opencl_env,
                                            write_default_icd)

    out = build_native(args.output, sanitize=args.sanitize)
    print(f"built {out / LIBRARY_NAME} and {out / 'adreno-run'}")
    exports: dict[str, str] = {}
    loader = runner_opencl_env()
    if loader and not os.environ.get("ADRENO_RT_OPENCL_LIBRARY"):
        print("this system has no OpenCL ICD loader (libOpenCL.so.1) of its own: adreno-run uses pyopencl's "
              "(ADRENO_RT_OPENCL_LIBRARY; its loader needs PYOPENCL_HOME too)")
        exports.update(loader)
    icd = write_default_icd(out / "icd")
    if icd is not None:
        print("adreno-run sees adreno_mlir's default CPU device (pyopencl's PoCL, or Intel's CPU runtime where PoCL "
              "cannot build here) through OCL_ICD_VENDORS (do not set it on a machine with a real OpenCL driver)")
        exports["OCL_ICD_VENDORS"] = str(icd.absolute())
    if exports:
        import shlex

        env_file = out / "adreno-run-env.sh"
        env_file.write_text("# written by adreno-mlir build-native: the environment adreno-run needs here\n"
                            + "".join(f"export {k}={shlex.quote(v)}\n" for k, v in exports.items()))
        print(f"to run adreno-run from a shell: . {env_file.absolute()}")
    if args.output is not None and Path(args.output).resolve() != DEFAULT_BUILD_DIR:
        print(f"adreno_mlir uses it with ADRENO_MLIR_NATIVE_LIB={(out / LIBRARY_NAME).absolute()}")
    return 0
