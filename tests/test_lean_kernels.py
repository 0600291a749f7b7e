"""Issue 8's lean kernel IR: loops stay loops, no duplicate expressions, kernels reused.

The compile time budget (bench/startup.py) rests on three properties checked here:
window loops are `scf.for` nests marked `opencl.unroll` instead of unrolled copies; the
kernel builder never builds a pure expression twice (so no CSE pass is needed: CSE
after dead-code elimination finds nothing to merge); and a kernel spec is built once
per process, later compiles get a copy.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from adreno_mlir.dialects import opencl
from adreno_mlir.lowering import host_builder
from adreno_mlir.lowering.kernels.common import KernelSpec
from onnx import TensorProto, helper
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
)
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from tests.conftest import slow_unless

import adreno_mlir
from adreno_mlir.context import make_context

PLANS = {
    "nchw": {"layout": "nchw"},
    "buffer4c": {"layout": "nchw4c"},
    "texture": {"textures": True, "target": "adreno-740"},
    "fp16": {"layout": "nchw4c", "precision": "fp16-acc32"},
}


def _conv_model(k: int = 3, groups: int = 1, channels: int = 8) -> onnx.ModelProto:
    """conv(k x k, pad k//2) -> relu -> maxpool 3x3 -> add of two branches."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((channels, channels // groups, k, k)).astype(np.float32) * 0.2
    b = rng.standard_normal(channels).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[k // 2] * 4, group=groups),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Add", ["p", "x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "lean",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, 12, 12])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
         helper.make_tensor("b", TensorProto.FLOAT, b.shape, b)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _kernels(module: ModuleOp) -> list[opencl.KernelOp]:
    return [op for op in module.body.block.ops if isinstance(op, opencl.KernelOp)]


def _kernel_source(source: str, name: str) -> str:
    start = source.index(f"__kernel void {name}(")
    end = source.find("__kernel void", start + 1)
    return source[start:] if end < 0 else source[start:end]


def _redundant_ops(module: ModuleOp) -> int:
    """How many ops CSE merges away after dead code is gone (the printer skips dead code)."""
    m = module.clone()
    ctx = make_context()
    DeadCodeElimination().apply(ctx, m)
    before = sum(1 for _ in m.walk())
    CommonSubexpressionElimination().apply(ctx, m)
    return before - sum(1 for _ in m.walk())


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("groups", [1, 8], ids=["conv", "depthwise"])
def test_window_loops_are_marked_loops_and_outputs_match(plan, groups):
    """3x3 windows (conv and pool) are one scf.for nest each, marked for full unrolling:
    by the OpenCL compiler (`#pragma unroll`) in NCHW kernels, by the printer in NCHW4c
    kernels; the numbers still match onnxruntime."""
    import onnxruntime as ort

    model = _conv_model(3, groups)
    cm = adreno_mlir.compile(model, **PLANS[plan])
    windowed = [k for k in _kernels(cm.module) if "3x3" in k.sym_name.data]  # direct conv / pool
    assert any(k.sym_name.data.startswith("maxpool3x3") for k in windowed)
    for k in windowed:
        marked = [op for op in k.walk() if isinstance(op, scf.ForOp) and opencl.UNROLL_ATTR in op.attributes]
        text = _kernel_source(cm.source, k.sym_name.data)
        if k.sym_name.data.startswith("dwconv") and "_4c" in k.sym_name.data:
            # dw_rows (kernel_config): the window is written out in the IR, each input row read once
            assert not any(isinstance(op, scf.ForOp) for op in k.walk()) and "for (" not in text
            continue
        if "_pl" in k.sym_name.data or "_rw" in k.sym_name.data:
            # CPU vector kernels (plane, rows): the vector path's window rows are one loop
            # (its columns are written out, each with a lane mask made once), the
            # per-pixel path's window is the usual nest; the OpenCL compiler unrolls both
            assert [op.body.block.args[0].name_hint for op in marked] == ["kh", "kh", "kw"], k.sym_name.data
            assert all(op.attributes[opencl.UNROLL_ATTR].value.data == 0 for op in marked)
            assert text.count("#pragma unroll\n") == 3
            continue
        assert [op.body.block.args[0].name_hint for op in marked] == ["kh", "kw"], k.sym_name.data
        if "_4c" in k.sym_name.data:
            # NCHW4c kernels: written out by the printer, no loop left in the C
            assert all(op.attributes[opencl.UNROLL_ATTR] == StringAttr("print") for op in marked)
            assert "for (int kh" not in text and "#pragma unroll" not in text
        else:
            # NCHW kernels: the OpenCL compiler unrolls
            assert all(op.attributes[opencl.UNROLL_ATTR].value.data == 0 for op in marked)
            assert text.count("#pragma unroll\n") == 2 and "for (int kh" in text
    x = np.random.default_rng(1).standard_normal((1, 8, 12, 12)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = cm.run({"x": x})["y"]
    tol = 2e-2 if plan == "fp16" else 1e-4
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_large_windows_are_loops_not_marked_for_unrolling():
    """A 5x5 window (25 taps) stays a rolled loop: unrolling it bloats code for no gain."""
    cm = adreno_mlir.compile(_conv_model(5))
    conv = next(k for k in _kernels(cm.module) if k.sym_name.data.startswith("conv5x5"))
    loops = [op for op in conv.walk() if isinstance(op, scf.ForOp)]
    assert {op.body.block.args[0].name_hint for op in loops} >= {"kh", "kw"}
    assert not any(opencl.UNROLL_ATTR in op.attributes for op in loops)


@pytest.mark.parametrize("plan", slow_unless(sorted(PLANS), fast={"buffer4c"}))
def test_lowered_model_has_no_common_subexpressions(plan, model_path):
    """The kernel builder hash-conses pure ops, so the lowered MobileNetV2 is already what
    CSE would make of it (this is why the pipeline has no `cse` stage)."""
    cm = adreno_mlir.compile(model_path("mobilenet_v2"), **PLANS[plan])
    assert "cse" not in cm.pipeline.split(",")
    assert _redundant_ops(cm.module) == 0


def test_mobilenet_v2_kernel_ir_stays_lean(model_path):
    """Regression guard for op counts: with taps unrolled in the IR, MobileNetV2's kernels
    were 39,000 ops before CSE (15,700 after); loops and hash-consing make about 8,000."""
    cm = adreno_mlir.compile(model_path("mobilenet_v2"))
    ops = sum(1 for k in _kernels(cm.module) for _ in k.walk())
    assert ops < 10_000, ops


def test_kernels_are_built_once_per_process(monkeypatch):
    """A second compile of the same model builds no kernel (copies of the first ones),
    prints the same program, and its kernel ops are its own (not shared with the first
    module)."""
    model = _conv_model(3)
    first = adreno_mlir.compile(model)
    built: list[KernelSpec] = []

    originals = {}

    def counting_build(self, name):
        built.append(self)
        cls = next(c for c in type(self).__mro__ if c in originals)
        return originals[cls](self, name)

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    for cls in [KernelSpec, *subclasses(KernelSpec)]:
        if "build" in cls.__dict__:
            originals[cls] = cls.__dict__["build"]
            monkeypatch.setattr(cls, "build", counting_build)
    assert host_builder._BUILT  # the first compile's kernels are kept
    second = adreno_mlir.compile(model)
    assert built == []
    assert second.source == first.source
    ids = {id(k) for k in _kernels(first.module)}
    assert not ids & {id(k) for k in _kernels(second.module)}
    x = np.random.default_rng(2).standard_normal((1, 8, 12, 12)).astype(np.float32)
    np.testing.assert_array_equal(first.run({"x": x})["y"], second.run({"x": x})["y"])


def test_reused_kernel_is_unaffected_by_edits_to_an_earlier_module():
    """Editing a compiled module's kernel in place (a researcher's experiment) must not
    leak into later compiles: the process keeps pristine prototypes, never handed out."""
    model = _conv_model(3)
    first = adreno_mlir.compile(model)
    for k in _kernels(first.module):
        k.sym_name = StringAttr(k.sym_name.data + "_edited")
        next(iter(k.body.block.ops)).attributes["edited"] = UnitAttr()
    second = adreno_mlir.compile(model)
    assert "edited" not in second.source
    for k in _kernels(second.module):
        assert all("edited" not in op.attributes for op in k.walk())


@pytest.mark.parametrize("plan", ["nchw", "texture"])
def test_printer_unroll_modes_compute_the_same(plan):
    """The same lowered module printed with every unroll mode (as marked, all pragmas, all
    written out, plain loops) runs to bit-identical results: unrolling changes schedule,
    not arithmetic (FP contraction is off)."""
    import pyopencl as cl
    from adreno_mlir.lowering.opencl_printer import UNROLL_MODES, opencl_source

    from adreno_mlir.runtime.executor import Executable
    from adreno_mlir.weights import store_of

    cm = adreno_mlir.compile(_conv_model(3, 8 if plan == "nchw" else 1), **PLANS[plan])
    x = np.random.default_rng(3).standard_normal((1, 8, 12, 12)).astype(np.float32)
    ref = cm.run({"x": x})["y"].ravel()
    ctx = cm.executable.context
    for mode in UNROLL_MODES:
        source = opencl_source(cm.module, unroll=mode)
        assert ("#pragma unroll" in source) == (mode in ("pragma",) or (mode == "ir" and plan == "nchw"))
        exe = Executable(cm.module, source, store_of(cm.module), ctx, cache=False)
        np.testing.assert_array_equal(exe.run([x])[0], ref, err_msg=mode)
    assert isinstance(ctx, cl.Context)


def test_bad_unroll_attribute_is_a_print_error():
    """An edited `opencl.unroll` the printer cannot honour is an error naming the op."""
    from adreno_mlir.lowering.opencl_printer import OpenCLPrintError, opencl_source

    cm = adreno_mlir.compile(_conv_model(3))
    loop = next(op for k in _kernels(cm.module) for op in k.walk()
                if isinstance(op, scf.ForOp) and opencl.UNROLL_ATTR in op.attributes)
    loop.attributes[opencl.UNROLL_ATTR] = StringAttr("always")
    with pytest.raises(OpenCLPrintError, match="opencl.unroll"):
        opencl_source(cm.module)


def test_kernel_identity_tells_negative_zero_and_nan_apart():
    """Specs compare floats by value (-0.0 == 0.0, NaN != NaN); the kernel cache keys on
    the spec's repr, so a clip to -0.0 never reuses the kernel of a clip to 0.0."""
    from adreno_mlir.lowering.expr import Src, Un
    from adreno_mlir.lowering.host_builder import spec_key
    from adreno_mlir.lowering.kernels.common import Epilogue
    from adreno_mlir.lowering.kernels.pool import ReduceSpec

    def spec(low: float):
        return ReduceSpec(x_shape=(1, 4, 2, 2), axes=(2, 3), epilogue=Epilogue(expr=Un("clip", Src(), (low, 6.0))))

    assert spec(0.0) == spec(-0.0) and spec_key(spec(0.0)) != spec_key(spec(-0.0))
    a, b = spec(float("nan")), spec(float("nan"))
    assert a != b and spec_key(a) == spec_key(b)
    # and the kernels differ: the printed constant keeps its sign
    assert "-0.0f" in _kernel_text(spec(-0.0)) and "-0.0f" not in _kernel_text(spec(0.0))


def _kernel_text(spec) -> str:
    from adreno_mlir.lowering.opencl_printer import opencl_source

    return opencl_source(ModuleOp([spec.build("k")]))


def test_compile_pauses_the_garbage_collector_and_restores_it():
    """compile() runs with the cyclic GC paused, and leaves it as it found it: enabled,
    disabled by the caller, after an error, and with compiles in several threads."""
    import gc
    import threading

    model = _conv_model(3)
    seen = []
    original = host_builder.built_kernel

    def spy(spec, name):
        seen.append(gc.isenabled())
        return original(spec, name)

    assert gc.isenabled()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(host_builder, "built_kernel", spy)
        adreno_mlir.compile(model)
    assert seen and not any(seen)
    assert gc.isenabled()
    with pytest.raises(adreno_mlir.CompileError):
        adreno_mlir.compile(model, precision="fp64")
    assert gc.isenabled()
    gc.disable()
    try:
        adreno_mlir.compile(model)
        assert not gc.isenabled()
    finally:
        gc.enable()
    threads = [threading.Thread(target=adreno_mlir.compile, args=(model,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gc.isenabled()
