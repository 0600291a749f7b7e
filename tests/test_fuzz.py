"""Differential fuzzing: random ONNX graphs (tests/fuzz_graphs.py) compiled on every plan
and compared with onnxruntime.

Each plan of `PLANS` (NCHW buffers; NCHW4c buffers, textures, fp16-acc32 storage and fp16
arithmetic (on Intel's CPU runtime) on the Adreno 740 profile; textures on the `tiny-test`
profile, whose 64x64 image limit sends large tensors to buffers) runs the same bounded, reproducible Hypothesis sequence
(`derandomize=True`, no example database). A graph passes when every output is within
1e-4 max|diff|/max|ref| of onnxruntime (5e-2 for fp16-acc32 and fp16), when compile refuses it
with a clear CompileError (counted apart), or when onnxruntime and onnx.reference
disagree and we match the reference (a documented divergence). Anything else fails,
and Hypothesis shrinks the graph first: the failure message has the minimal graph, one
line per value, and a command that replays it (`bench/fuzz.py --replay`).

The long run with counts and a JSON summary is `python bench/fuzz.py --graphs 1000`.
"""

from __future__ import annotations

import collections
import warnings

import pytest
from hypothesis import HealthCheck, Phase, given, note, reject, settings

from tests.fuzz_graphs import (
    PLANS,
    LazyReference,
    build_model,
    check_plan,
    describe,
    graph_specs,
    make_feeds,
    ort_outputs,
)

MAX_EXAMPLES = 80
"""Graphs per plan in the long sequence (CI's slow tier): the six plans take about 4.5
minutes of one core with empty PoCL/program caches (less with warm ones)."""
SHORT_EXAMPLES = 20
"""Graphs per plan in the README's test command: the first graphs of the same sequence."""

MAX_STEPS = 6


@pytest.mark.parametrize("examples", [SHORT_EXAMPLES, pytest.param(MAX_EXAMPLES, marks=pytest.mark.slow)])
@pytest.mark.parametrize("plan", list(PLANS))
def test_random_graphs_match_onnxruntime(plan, examples, request):
    if PLANS[plan].get("device") == "intel":
        request.getfixturevalue("half_device")  # fails in CI when the Intel runtime is missing
    stats: collections.Counter = collections.Counter()

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate, Phase.shrink], print_blob=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(spec=graph_specs(max_steps=MAX_STEPS))
    def check(spec):
        note(describe(spec))
        model = build_model(spec)
        feeds = make_feeds(spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                refs = ort_outputs(model, feeds)
            except Exception:  # noqa: BLE001 - a graph onnxruntime cannot run compares nothing
                reject()
            res = check_plan(model, feeds, refs, plan, LazyReference(model, feeds))
        stats[res.status] += 1
        assert not res.failed, (
            f"plan {plan} ({PLANS[plan]}): {res.status}: {res.detail}\n{describe(spec)}\n"
            f"replay: python bench/fuzz.py --plans {plan} --replay '{spec.to_json()}'")

    check()
    print(f"{plan}: {dict(stats)}")
    # Not vacuous: most graphs must really be compiled and compared.
    compared = stats["ok"] + stats["divergence"]
    assert compared >= 0.6 * sum(stats.values()), f"{plan}: too few graphs compared: {dict(stats)}"
