"""The texture path (NCHW4c, images where legal) on every shared graph, in fp32 and in
fp16-acc32 (half storage, fp32 arithmetic), against onnxruntime fp32.

Tolerances (max |ours - ort| / max |ort| per output): fp32 1e-4; fp16-acc32 5e-2,
since every stored activation is rounded to 11 significant bits (about 5e-4
relative) and deep networks compound it.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import adreno_mlir
from tests.conftest import MODEL_NAMES
from tests.test_models import scaled_error

TOLERANCE = {"fp32": 1e-4, "fp16-acc32": 5e-2}


@pytest.mark.parametrize("precision", ["fp32", "fp16-acc32"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_texture_plan_matches_onnxruntime(name, precision, model_path):
    path = str(model_path(name))
    cm = adreno_mlir.compile(path, textures=True, precision=precision)
    assert "image2d_t" in cm.source
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    feeds = {n: rng.standard_normal(cm.input_shapes[n]).astype(np.float32) for n in cm.input_names}
    ours = cm.run(feeds)
    for (out_name, got), ref in zip(ours.items(), sess.run(None, feeds)):
        assert np.isfinite(got).all()
        err = scaled_error(got, ref)
        assert err <= TOLERANCE[precision], f"{name}:{out_name} {precision} error {err:.2e}"
