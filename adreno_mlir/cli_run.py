"""`adreno-mlir compile` and `adreno-mlir run`.

`compile -o X.adreno` writes a compiled-model artifact (docs/artifact.md) that
`run X.adreno` executes without the compiler; `run` prints the startup figures
(compile or load, program build with the cache state, first run) apart from the
steady-state latency.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from adreno_mlir.errors import CompileError, InputError


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
    from adreno_mlir.artifact import check_save_path

    final = Path(args.output)
    artifact_only = final.suffix == ".adreno"
    if artifact_only:
        check_save_path(final)
    else:
        _check_output_dir(final, args.force)
    compile_plan = plan_from_args(args)
    # A folder is written into a new sibling and swapped in at the end: a failed compile
    # leaves no folder (and an older one as it was), and two compiles never mix their files.
    out = final if artifact_only else _staging_dir(final)
    try:
        return _compile_into(args, compile_plan, final, out, artifact_only)
    finally:
        if out is not final:
            shutil.rmtree(out, ignore_errors=True)


OUTPUT_MARKER = "pipeline.txt"
"""The file every compile output folder has: a folder with it is an earlier compile's, replaced whole."""


def _check_output_dir(out: Path, force: bool) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"-o {out}: it exists and is not a directory; choose another path or remove it")
    if any(out.iterdir()) and not (out / OUTPUT_MARKER).is_file() and not force:
        raise InputError(f"-o {out}: the directory is not empty and is not an earlier compile's output (no "
                         f"{OUTPUT_MARKER}); pass --force to replace it, or choose another path")


def _staging_dir(final: Path) -> Path:
    import tempfile

    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))


def _swap_in(staging: Path, final: Path) -> None:
    """Replace `final` (if any) by `staging` with two renames."""
    import tempfile

    os.chmod(staging, 0o777 & ~_umask())  # mkdtemp's 0700 would make the folder private
    old = None
    if final.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old", dir=final.parent))
        old.rmdir()
        final.rename(old)
    staging.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _compile_into(args, compile_plan, final: Path, out: Path, artifact_only: bool) -> int:
    from adreno_mlir.api import io_shapes, lower
    from adreno_mlir.artifact import save_artifact
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.runtime.plan import plan_from_module
    from adreno_mlir.weights import store_of

    artifact = out if artifact_only else out / (Path(args.model).stem + ".adreno")
    weights_dir = out / "weights"

    def shown(path: Path) -> Path:  # where a file of the staging folder will be
        return path if artifact_only else final / path.relative_to(out)
    start = time.perf_counter()
    module = import_onnx(args.model, **shape_options(args))
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
    replay, copied = None, None  # with overrides: pipeline.txt's string, naming DIR's copy of them
    if not artifact_only:
        cl_path.write_text(source)
        store_of(module).save(weights_dir)
        replay, copied = _portable_overrides(compile_plan, pipeline, out)
        (out / OUTPUT_MARKER).write_text((replay or pipeline) + "\n")
    print(f"import: {t_import:.2f} s")
    for r in results:
        print(f"{r.name}: {r.seconds:.2f} s  (adreno-opt -p '{r.pipeline}')")
    if artifact_only:
        print(f"pipeline:\n  {pipeline}")
    elif replay is not None:
        print(f"pipeline (replay: cd {final} && adreno-opt {written[0].name} -p \"$(cat {OUTPUT_MARKER})\" -t opencl; "
              f"{copied.name} is a copy of {compile_plan.config_source_names()[1]}):\n  {replay}")
    else:
        print(f"pipeline (replay: adreno-opt {shown(written[0])} -p \"$(cat {final / OUTPUT_MARKER})\"):\n  {pipeline}")
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
            raise CompileError(f"the OpenCL compiler rejected the program:\n{e}") from None
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
    _swap_in(out, final)
    print(f"{kernels} kernels -> {shown(cl_path)}")
    for p in written:
        print(f"  {shown(p)}")
    print(f"  {shown(weights_dir)}/")
    if replay is not None:
        print(f"  {shown(copied)}  (the kernel configs {OUTPUT_MARKER} names)")
    print(f"  {shown(artifact)}/  (artifact: adreno-mlir run {shown(artifact)})")
    return 0


def _portable_overrides(compile_plan, pipeline: str, out: Path) -> tuple[str | None, Path | None]:
    """With an overrides file in the plan (--tuning-db): copy it into `out` as overrides.json
    and return (`pipeline` naming that relative path instead of the cache's absolute one,
    the copy). select-kernel-config reads the path relative to the working directory, so
    pipeline.txt replays from the folder on any machine. (None, None) without one."""
    path = compile_plan.overrides_file
    named = f'overrides="{path}"'
    if not path or named not in pipeline:
        return None, None
    copied = out / "overrides.json"
    shutil.copyfile(path, copied)
    return pipeline.replace(named, f'overrides="{copied.name}"'), copied


def compare_outputs(ours: np.ndarray, ref: np.ndarray, name: str, tolerance: float) -> tuple[bool, str]:
    """Whether `ours` matches the reference `ref` within `tolerance` (max|ours - ref| /
    max|ref| over the finite values), and the line that says so. NaN and infinities must
    sit at the same positions (infinities with the same sign): a NaN or an inf is never
    averaged away, and a comparison never reports NaN as an error size."""
    detail = compare_detail(ours, ref, name, tolerance)
    return detail["pass"], detail["message"]


def compare_detail(ours: np.ndarray, ref: np.ndarray, name: str, tolerance: float) -> dict:
    """`compare_outputs` as plain JSON values: `pass`, `message` (its line),
    `max_abs_error` and `max_error` (max|ours - ref| / max|ref|; both None where the
    shapes or the NaN/inf positions differ, or nothing is finite)."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)

    def result(ok: bool, message: str, abs_err: float | None = None, rel: float | None = None) -> dict:
        return {"pass": bool(ok), "message": message, "max_abs_error": abs_err, "max_error": rel}

    if ours.shape != ref.shape:
        return result(False, f"compare {name}: shape {list(ours.shape)} differs from the reference's "
                             f"{list(ref.shape)}")
    for what, mask_ours, mask_ref in (("NaN", np.isnan(ours), np.isnan(ref)),
                                      ("+inf", np.isposinf(ours), np.isposinf(ref)),
                                      ("-inf", np.isneginf(ours), np.isneginf(ref))):
        if not np.array_equal(mask_ours, mask_ref):
            first = tuple(int(i) for i in np.argwhere(mask_ours != mask_ref)[0])
            return result(False, f"compare {name}: {what} at {int(mask_ours.sum())} positions in ours, "
                                 f"{int(mask_ref.sum())} in the reference (first difference at index {list(first)})")
    finite = np.isfinite(ref)
    if not finite.any():
        return result(True, f"compare {name}: no finite values; NaN/inf positions match")
    abs_err = float(np.abs(ours[finite] - ref[finite]).max())
    rel = abs_err / max(float(np.abs(ref[finite]).max()), 1e-30)
    extra = f" ({int((~finite).sum())} NaN/inf positions match)" if (~finite).any() else ""
    return result(rel <= tolerance, f"compare {name}: max abs error {abs_err:.3e}, max error / max |ref| {rel:.3e}"
                                    + extra, abs_err, rel)


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not np.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


def _json_path(text: str) -> str:
    if text == "-":
        raise argparse.ArgumentTypeError("takes a file path ('-' is not supported: the text report goes to stdout)")
    return text


def _parse_inputs(specs: list[str] | None, input_names: list[str]) -> dict[str, tuple[str, np.ndarray | None]]:
    """{input name: (what was given, its array; None for `random`)} of the --input
    flags, in the order given: every name known, none given twice, every file read."""
    given: dict[str, tuple[str, np.ndarray | None]] = {}
    for spec in specs or []:
        name, _, value = spec.rpartition("=")
        if not name:
            if len(input_names) != 1:
                raise CompileError(
                    f"the model has inputs {input_names}; pass --input NAME=FILE.npy (or NAME=random) for each"
                )
            name = input_names[0]
        if name not in input_names:
            raise CompileError(f"unknown input '{name}'; the model's inputs are {input_names}")
        if name in given:
            raise CompileError(f"--input given twice for input '{name}' ({given[name][0]} and {value}); "
                               "pass one --input per input")
        if value == "random":
            given[name] = (value, None)
            continue
        try:
            given[name] = (value, np.load(value))
        except (OSError, ValueError) as e:
            raise CompileError(f"cannot read input '{name}' from {value}: {e}") from None
    return given


def _onnx_inputs(path: Path, input_shapes=None, dims=None) -> dict[str, tuple[tuple[int, ...], str]] | None:
    """{name: (shape, "float32" or "int")} of the ONNX model's graph inputs (initializers
    excluded), read without its weights' external data, with the dims --input-shape /
    --dim bind (`input_shapes`, `dims`; a binding that does not fit the model is its
    FrontendError now); None where the file cannot be read this way, or an input is not
    a float32 / integer tensor of static shape (the compiler then reports it)."""
    import onnx

    from adreno_mlir.frontend.shapes import bound_input_shapes

    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception:  # noqa: BLE001 - the frontend reports an unreadable model properly
        return None
    bound = bound_input_shapes(graph, input_shapes, dims) or {}
    init_names = {i.name for i in graph.initializer}
    ints = {onnx.TensorProto.INT32, onnx.TensorProto.INT64}
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    for vi in graph.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        shape = list(bound[vi.name]) if vi.name in bound else [
            d.dim_value if d.HasField("dim_value") else 0 for d in tt.shape.dim]
        if not vi.type.HasField("tensor_type") or any(d <= 0 for d in shape):
            return None
        if tt.elem_type == onnx.TensorProto.FLOAT:
            out[vi.name] = (tuple(shape), "float32")
        elif tt.elem_type in ints:
            out[vi.name] = (tuple(shape), "int")
        else:
            return None
    return out


def _check_given(given: dict[str, tuple[str, np.ndarray | None]],
                 expected: dict[str, tuple[tuple[int, ...], str]]) -> None:
    """Refuse an --input file whose shape or dtype is not the model input's, before
    anything is compiled (the same checks run() makes)."""
    for name, (source, x) in given.items():
        if x is None:
            continue
        shape, kind = expected[name]
        if kind == "float32" and x.dtype != np.float32:
            raise CompileError(f"input '{name}' from {source} has dtype {x.dtype}; the model expects float32")
        if kind == "int" and x.dtype.kind not in "iu":
            raise CompileError(f"input '{name}' from {source} has dtype {x.dtype}; the model expects integer "
                               "token ids (int32 or int64)")
        if tuple(x.shape) != shape:
            raise CompileError(f"input '{name}' from {source} has shape {list(x.shape)}; the model expects "
                               f"{list(shape)}")


def _load_inputs(cm, given: dict[str, tuple[str, np.ndarray | None]], seed: int) -> dict[str, np.ndarray]:
    """The feeds: the arrays given, random data for `random` and every input not given
    (any number of inputs, or none)."""
    from adreno_mlir.runtime.random_inputs import random_input as draw

    feeds: dict[str, np.ndarray] = {}
    bounds = {t.name: t.bound for t in cm.launch_plan.inputs if t.dtype == "i32"}
    # Input number i of the generator is the input's position in the artifact's manifest
    # (the launch plan's inputs), as adreno-run numbers them.
    order = [t.name for t in cm.launch_plan.inputs]
    order += [n for n in cm.input_names if n not in order]

    def random_input(name: str) -> np.ndarray:
        """Uniform floats in [-1, 1), or for token ids (int64, as ONNX models take them)
        uniform ids in [0, bound): adreno_mlir.runtime.random_inputs, the generator
        adreno-run also draws from (the same seed gives the same data)."""
        index = order.index(name)
        if name in bounds:
            return draw(seed, index, cm.input_shapes[name], np.int64, bound=bounds[name])
        return draw(seed, index, cm.input_shapes[name], np.float32)

    for name, (_, x) in given.items():
        feeds[name] = random_input(name) if x is None else x
    for name in cm.input_names:
        if name not in feeds:
            feeds[name] = random_input(name)
    return feeds


def _require_onnxruntime():
    """The onnxruntime module, or the error that says how to install it."""
    try:
        import onnxruntime
    except ImportError:
        raise CompileError("--compare onnxruntime needs the onnxruntime package, which is not installed: "
                           "pip install onnxruntime (or pip install 'adreno-mlir[test]')") from None
    return onnxruntime


def _latency_ms(times: list[float]) -> dict:
    """min/median/mean/p90/p99 (ms) of the timed runs, and the runs."""
    ms = np.asarray(times, np.float64) * 1000
    return {"repeat": len(times), "min": float(ms.min()), "median": float(np.median(ms)), "mean": float(ms.mean()),
            "p90": float(np.percentile(ms, 90)), "p99": float(np.percentile(ms, 99)),
            "runs": [float(t) for t in ms]}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("adreno-mlir")
    except PackageNotFoundError:
        return "unknown"


def _cmd_run(args: argparse.Namespace) -> int:
    """Compile (.onnx) or load (artifact) a model, run it, and print the startup figures
    (compile or load time, program build with its cache state, first run) apart from
    the steady-state latency; `--json FILE` also writes them as one JSON record."""
    import adreno_mlir

    log = logging.getLogger("adreno_mlir.cli")
    path = Path(args.model)
    ort = _require_onnxruntime() if args.compare and not _is_artifact(path) else None
    record: dict = {"schema": "adreno-mlir-run/1", "adreno_mlir_version": _version(), "model": str(path)}
    if _is_artifact(path):
        if args.compare:
            raise CompileError(f"--compare onnxruntime needs the ONNX model, and an artifact ({path}) does not "
                               "contain it; run the .onnx file with --compare, or drop --compare")
        ignored = [f"--{k.replace('_', '-')}" for k, default in _PLAN_DEFAULTS.items()
                   if getattr(args, k) != default]
        if ignored:
            print(f"note: {', '.join(ignored)} ignored: the plan is fixed when the artifact is compiled")
        note_shapes_ignored(args)
        model = adreno_mlir.load(path, device=args.device, cache=_cache(args), runtime=args.runtime)
        given = _parse_inputs(args.input, model.input_names)
        int_inputs = {t.name for t in model.launch_plan.inputs if t.dtype == "i32"}
        _check_given(given, {n: (tuple(model.input_shapes[n]), "int" if n in int_inputs else "float32")
                             for n in model.input_names})
        print(f"loaded {path} in {model.load_seconds:.2f} s for {model.device_name} ({model.plan})")
        print(f"program build: {model.build_info.seconds:.2f} s ({model.program_origin})")
        record.update(kind="artifact", compile_s=None, compile_timings=None, load_s=model.load_seconds)
        program_origin = model.program_origin
    else:
        if not path.is_file():
            raise CompileError(f"no such model file: {path}")
        expected = _onnx_inputs(path, **shape_options(args))
        given = {}
        if expected is not None:  # check the --input files before the (long) compile
            given = _parse_inputs(args.input, list(expected))
            _check_given(given, expected)
            log.info("--input checked against the model's inputs %s", list(expected))
        model = adreno_mlir.compile(path, plan=plan_from_args(args), cache=_cache(args), runtime=args.runtime,
                                    **shape_options(args))
        if expected is None:
            given = _parse_inputs(args.input, model.input_names)
        print(f"compiled in {model.compile_seconds:.2f} s for {model.device_name} ({model.plan})")
        print(f"program build: {model.build_info.seconds:.2f} s (cache {model.build_info.cache}; "
              "part of the compile time)")
        record.update(kind="onnx", compile_s=model.compile_seconds, compile_timings=dict(model.timings), load_s=None)
        program_origin = f"cache {model.build_info.cache}"
    record.update(device=model.device_name, runtime=model.runtime,
                  plan={"description": model.plan, "options": dict(model.options)},
                  program={"build_s": model.build_info.seconds, "cache": model.build_info.cache,
                           "origin": program_origin})
    print(f"runtime: {model.runtime}" + ("" if model.runtime == "native" or args.runtime == "pyopencl" else
                                         " (build the native runtime for lower launch overhead: "
                                         "adreno-mlir build-native)"))
    feeds = _load_inputs(model, given, args.seed)
    record["inputs"] = {name: {"shape": list(x.shape), "dtype": str(x.dtype),
                               "source": given[name][0] if name in given else "random"} for name, x in feeds.items()}
    t = time.perf_counter()
    try:
        outputs = model.run(feeds)
    except ValueError as e:
        raise CompileError(str(e)) from None
    first = time.perf_counter() - t
    record["first_run_s"] = first
    print(f"first run: {1000 * first:.2f} ms")
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        outputs = model.run(feeds)
        times.append(time.perf_counter() - t)
    record["outputs"] = {}
    for name, out in outputs.items():
        flat = out.reshape(-1)
        print(f"{name}: shape {list(out.shape)} min {flat.min():.6g} max {flat.max():.6g} "
              f"mean {flat.mean():.6g} argmax {int(flat.argmax())}")
        record["outputs"][name] = {"shape": list(out.shape), "dtype": str(out.dtype), "min": float(flat.min()),
                                   "max": float(flat.max()), "mean": float(flat.mean()),
                                   "argmax": int(flat.argmax())}
    record["latency_ms"] = _latency_ms(times)
    print(f"latency: median {1000 * float(np.median(times)):.2f} ms over {len(times)} runs (steady state)")
    if args.save:
        np.savez(args.save, **outputs)
        print(f"outputs saved to {args.save}")
    record["compare"] = None
    status = 0
    if args.compare:
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
        per_output = {}
        for (name, out), ref in zip(outputs.items(), refs):
            detail = compare_detail(out, ref, name, args.tolerance)
            ok &= detail["pass"]
            per_output[name] = detail
            print(detail["message"].replace(f"compare {name}", f"compare {name} with onnxruntime", 1))
        errors = [d["max_error"] for d in per_output.values()]
        compare = {"reference": "onnxruntime", "tolerance": args.tolerance, "pass": bool(ok),
                   "max_error": max((e for e in errors if e is not None), default=None),
                   "outputs": per_output}
        if args.json:  # onnxruntime's own latency over the same number of runs (after its first)
            ref_times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                sess.run(None, feeds)
                ref_times.append(time.perf_counter() - t)
            compare["latency_ms"] = _latency_ms(ref_times)
            compare["median_ms"] = compare["latency_ms"]["median"]
        record["compare"] = compare
        if not ok:
            print(f"error: outputs differ from onnxruntime (tolerance {args.tolerance:g})", file=sys.stderr)
            status = 1
        else:
            print(f"OK: within tolerance {args.tolerance:g}")
    record["exit_status"] = status
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
        log.info("wrote the run record to %s", args.json)
    return status


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
                   help="activation layout (default: nchw4c with textures, fp16 storage or on CPUs, else nchw)")
    p.add_argument("--work-group", type=_work_group_flag, default="driver", metavar="{driver,auto,X,Y,Z}",
                   help="local sizes: the driver's choice, the target's preferred size, or a preferred "
                        "size such as 16,4,4 (the last two are experimental)")
    p.add_argument("--tuning-db", metavar="DB",
                   help="use the best kernel configs measured for this device in a tuning database "
                        "(`adreno-mlir tune`)")


class _InputShapeAction(argparse.Action):
    """--input-shape NAME:D1,D2,... (repeatable) into {name: shape}; a malformed or
    contradicting one is a usage error naming the flag (exit 1)."""

    def __call__(self, parser, namespace, value, option_string=None):
        shapes = dict(getattr(namespace, self.dest, None) or {})
        name, sep, text = value.rpartition(":")  # NAME may hold ':' (TensorFlow's "input:0")
        parts = [p.strip() for p in text.replace("x", ",").split(",")] if text.strip() else []
        if not sep or not name:
            parser.error(f"argument {option_string}: expected NAME:D1,D2,... (e.g. input_ids:1,128), not {value!r}")
        if not all(p.isascii() and p.isdigit() and int(p) > 0 for p in parts):
            parser.error(f"argument {option_string}: {value!r}: the dims of '{name}' must be positive integers "
                         "separated by commas, e.g. input_ids:1,128")
        shape = tuple(int(p) for p in parts)
        if name in shapes and shapes[name] != shape:
            parser.error(f"argument {option_string}: input '{name}' given twice, as {','.join(map(str, shapes[name]))} "
                         f"and {','.join(map(str, shape))}")
        shapes[name] = shape
        setattr(namespace, self.dest, shapes)


class _DimAction(argparse.Action):
    """--dim NAME=VALUE (repeatable) into {dim_param: size}; errors as --input-shape's."""

    def __call__(self, parser, namespace, value, option_string=None):
        dims = dict(getattr(namespace, self.dest, None) or {})
        name, sep, text = value.rpartition("=")
        if not sep or not name:
            parser.error(f"argument {option_string}: expected NAME=VALUE (e.g. sequence_length=128), not {value!r}")
        if not (text.strip().isascii() and text.strip().isdigit() and int(text) > 0):
            parser.error(f"argument {option_string}: {value!r}: the size of dim '{name}' must be a positive integer")
        if name in dims and dims[name] != int(text):
            parser.error(f"argument {option_string}: dim '{name}' given twice, as {dims[name]} and {int(text)}")
        dims[name] = int(text)
        setattr(namespace, self.dest, dims)


def shape_arguments(p: argparse.ArgumentParser) -> None:
    """--input-shape and --dim: static sizes for a model exported with dynamic axes
    (adreno_mlir.frontend.shapes); `shape_options(args)` gives them as compile()'s keywords."""
    p.add_argument("--input-shape", dest="input_shapes", action=_InputShapeAction, default=None,
                   metavar="NAME:D1,D2,...",
                   help="compile for this static shape of a dynamic input, e.g. input_ids:1,128 (repeatable)")
    p.add_argument("--dim", dest="dims", action=_DimAction, default=None, metavar="NAME=VALUE",
                   help="bind a named dynamic dim (dim_param) in every input, e.g. sequence_length=128 (repeatable)")


def shape_options(args: argparse.Namespace) -> dict:
    """{"input_shapes": ..., "dims": ...} of --input-shape / --dim (None where not given)."""
    return {"input_shapes": getattr(args, "input_shapes", None), "dims": getattr(args, "dims", None)}


def note_shapes_ignored(args: argparse.Namespace) -> None:
    """An artifact's shapes are fixed: say that --input-shape / --dim are ignored."""
    flags = [f for f, k in (("--input-shape", "input_shapes"), ("--dim", "dims")) if getattr(args, k, None)]
    if flags:
        print(f"note: {', '.join(flags)} ignored: the input shapes are fixed when the artifact is compiled")


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
    from adreno_mlir.options import positive_int

    c = sub.add_parser("compile", help="compile a model: IR after each stage, the .cl program, weights")
    c.add_argument("model")
    c.add_argument("-o", "--output", required=True,
                   help="X.adreno: write the compiled-model artifact (docs/artifact.md); any other path: a "
                        "directory of stage IR, the .cl program, weights, pipeline.txt and <model>.adreno")
    shape_arguments(c)
    _plan_arguments(c)
    c.add_argument("--force", action="store_true",
                   help="replace a non-empty -o directory that is not an earlier compile's output")
    c.add_argument("--no-build", action="store_true",
                   help="do not build the program on a device (the artifact then has no program binary)")
    _cache_arguments(c)
    c.set_defaults(func=_cmd_compile)

    r = sub.add_parser("run", help="compile (.onnx) or load (.adreno artifact) and run a model on an OpenCL device")
    r.add_argument("model", help="an .onnx file, or an artifact written by `adreno-mlir compile -o X.adreno`")
    r.add_argument("--input", action="append",
                   help="FILE.npy, NAME=FILE.npy or NAME=random (default: seeded random data, uniform in "
                        "[-1, 1); token ids uniform over their table; the same data as adreno-run's)")
    r.add_argument("--seed", type=int, default=0,
                   help="seed for random inputs (default 0; adreno-run --seed N draws the same data)")
    shape_arguments(r)
    r.add_argument("--compare", choices=["onnxruntime"], help="compare the outputs with a reference")
    r.add_argument("--tolerance", type=_tolerance, default=None,
                   help="max allowed |ours - ref| / max|ref| with --compare (default 1e-4 for fp32, 5e-2 for the "
                        "fp16 precisions, whose stored values keep 11 significant bits)")
    _plan_arguments(r)
    r.add_argument("--repeat", type=positive_int, default=5,
                   help="time this many runs after the first for the steady-state latency (default 5, at least 1)")
    _cache_arguments(r)
    r.add_argument("--runtime", choices=["auto", "native", "pyopencl"], default=None,
                   help="launch path: the native C runtime (runtime/c) when built, else pyopencl "
                        "(default: auto, or $ADRENO_MLIR_RUNTIME)")
    r.add_argument("--save", help="save the outputs to this .npz file")
    r.add_argument("--json", type=_json_path, metavar="FILE",
                   help="also write the run as one JSON record: latency min/median/mean/p90/p99, compile or load "
                        "and first-run seconds, program cache state, device, plan, --compare results "
                        "(docs/startup.md)")
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

    from adreno_mlir.cli_profile import add_command as add_profile

    add_profile(sub)  # `adreno-mlir profile`: device time per node, trace, plot

    from adreno_mlir.cli_generate import add_command as add_generate

    add_generate(sub)  # `adreno-mlir generate`: an onnxruntime-genai decoder's tokens


def _cmd_build_native(args: argparse.Namespace) -> int:
    import os

    from adreno_mlir.runtime.native import (
        DEFAULT_BUILD_DIR,
        LIBRARY_NAME,
        build_native,
        runner_opencl_env,
        write_default_icd,
    )

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
