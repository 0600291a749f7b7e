"""Every shared torchvision graph compiles and matches onnxruntime on the default
OpenCL device (PoCL's CPU device unless PYOPENCL_CTX says otherwise), with the device's
default plan and with the NCHW buffer plan.

Tolerance: max |ours - ort| / max |ort| <= 1e-4 per output (fp32).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import adreno_mlir
from tests.conftest import MODEL_NAMES

RTOL = 1e-4


def scaled_error(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-30))


PLANS = {"default": {}, "nchw": {"layout": "nchw"}}
"""The device's default plan (on CPUs NCHW4c buffers) and the NCHW buffer plan."""


FAST = {"default": {"squeezenet1_1", "mobilenet_v2", "resnet18"}, "nchw": {"squeezenet1_1"}}
"""The rows the README's test command runs (the rest: the slow tier)."""


@pytest.mark.parametrize(("name", "plan"), [
    pytest.param(n, p, marks=() if n in FAST[p] else pytest.mark.slow, id=f"{n}-{p}")
    for n in MODEL_NAMES for p in sorted(PLANS)])
def test_model_matches_onnxruntime(name, plan, model_path):
    path = str(model_path(name))
    cm = adreno_mlir.compile(path, **PLANS[plan])
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    ours = cm.run(feeds)
    refs = sess.run(None, feeds)
    assert list(ours) == [o.name for o in sess.get_outputs()]
    for (out_name, got), ref in zip(ours.items(), refs):
        assert got.shape == ref.shape
        assert np.isfinite(got).all()
        err = scaled_error(got, ref)
        assert err <= RTOL, f"{name}:{out_name} scaled error {err:.2e} > {RTOL}"
