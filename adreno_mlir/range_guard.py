"""The fp16 range guard: refuse fp16 storage for a model whose values leave fp16's range.

With `precision="fp16-acc32"` activations and weights are stored as IEEE half floats,
whose largest finite value is 65504. A model whose activations reach that range (a deep
residual net with unnormalized weights, a graph that scales its input by 1e5) would give
inf or NaN without a word: neither TVM nor TFLite's GPU delegate checks. Before compiling
such a plan, `compile` runs the ONNX model once in fp32 on calibration inputs (the
caller's, else seeded random normal data), with every intermediate float tensor as an
output, and refuses with a `CompileError` that names each tensor (and the node that makes
it) whose magnitude exceeds the limit, and the weights that do.

The fp32 run uses onnxruntime when it is installed (fast), else onnx's reference
evaluator. Pass `calibration=False` to `compile` to skip the guard.

The check is conservative: it looks at every intermediate ONNX tensor (the model's outputs
are written in fp32 and are exempt), including values that a fused kernel keeps in fp32
registers or that a pass folds away, so it can refuse a model that would have run; weights
are checked as given, before batch-norm folding. Cost: one fp32 inference plus building the
session (ResNet-50: about 1.3 s on the 2-core development machine).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from adreno_mlir.errors import CompileError

FP16_MAX = 65504.0


class RangeError(CompileError):
    """Values of the model leave the range of the storage precision."""


def _with_all_outputs(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, str]]:
    """A copy of `model` whose float intermediates are graph outputs too, and {tensor:
    producing node's name}."""
    # Types only: infer them on a copy without weight data (initializers become typed
    # inputs), which is fast whatever the model's size.
    g = model.graph
    names = {i.name for i in g.input}
    typed = [onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in g.initializer
             if i.name not in names]
    light = onnx.helper.make_model(onnx.helper.make_graph(list(g.node), g.name, list(g.input) + typed, list(g.output)),
                                   opset_imports=list(model.opset_import), ir_version=max(model.ir_version, 4))
    inferred = onnx.shape_inference.infer_shapes(light, strict_mode=False)
    floats = {vi.name for vi in list(inferred.graph.value_info) + list(inferred.graph.output)
              if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}
    producers = {out: (node.name or f"{node.op_type}_{out}") for node in model.graph.node for out in node.output}
    extended = onnx.ModelProto()
    extended.CopyFrom(model)
    present = {o.name for o in extended.graph.output}
    for name in producers:
        if name in floats and name not in present:
            extended.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    return extended, producers


def _run_fp32(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        try:
            options = ort.SessionOptions()  # one run: graph optimizations would cost more than they save
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            return dict(zip(names, sess.run(None, dict(feeds))))
        except Exception:  # noqa: BLE001 - onnxruntime refused: the reference evaluator decides
            pass
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model)
    return dict(zip(evaluator.output_names, evaluator.run(None, dict(feeds))))


def calibration_feeds(model: onnx.ModelProto, calibration) -> dict[str, np.ndarray]:
    """The inputs to calibrate with: the caller's mapping, else seeded random normal data."""
    inits = {i.name for i in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(0)
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        if isinstance(calibration, Mapping) and vi.name in calibration:
            feeds[vi.name] = np.asarray(calibration[vi.name], np.float32)
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    if isinstance(calibration, Mapping):
        unknown = sorted(set(calibration) - set(feeds))
        if unknown:
            raise CompileError(f"calibration= names inputs the model does not have: {unknown}; its inputs are "
                               f"{sorted(feeds)}")
    return feeds


def check_fp16_range(model: onnx.ModelProto, calibration=None, limit: float = FP16_MAX) -> dict[str, float]:
    """Raise RangeError naming every weight and every tensor (on the calibration inputs)
    whose largest magnitude exceeds `limit`; return {tensor: max |value|} otherwise."""
    problems: list[str] = []
    for init in model.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        arr = numpy_helper.to_array(init)
        peak = float(np.abs(arr).max()) if arr.size else 0.0
        if peak > limit:
            problems.append(f"weight '{init.name}' reaches {peak:.4g}")
    extended, producers = _with_all_outputs(model)
    feeds = calibration_feeds(model, calibration)
    values = _run_fp32(extended, feeds)
    returned = {o.name for o in model.graph.output}  # model outputs are written as fp32
    peaks: dict[str, float] = {}
    for name, value in values.items():
        arr = np.asarray(value)
        if arr.dtype != np.float32 or not arr.size:
            continue
        finite = arr[np.isfinite(arr)]
        peaks[name] = float(np.abs(finite).max()) if finite.size else 0.0
        if peaks[name] > limit and name not in returned:
            problems.append(f"tensor '{name}' (node '{producers.get(name, '?')}') reaches {peaks[name]:.4g}")
    if problems:
        shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise RangeError(
            f"fp16 storage would overflow (its largest value is {limit:g}) on the calibration inputs: {shown}. "
            "Compile with precision='fp32'; or, if these inputs are not representative, pass "
            "calibration={input name: array} with real data (calibration=False skips this check)")
    return peaks
