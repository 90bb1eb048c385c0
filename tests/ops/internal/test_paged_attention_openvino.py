"""PagedAttentionExtension as OpenVINO writes it, end to end: a tiny stateful decoder built with
OpenVINO's Python API, turned into a paged model by OpenVINO's `paged_attention_transformation`
and saved, runs the same schedule of steps in OpenVINO's CPU plugin (out of process, with f32
inference and f32 caches) and in irscatter on the saved XML. Two and then three sequences of
different lengths share one cache through block tables that are not the identity, over a
prefill, a decode step, and a step mixing a decode with a new prefill; the logits, the scores
and the cache blocks after the last step must agree. OpenVINO cannot read back the model it
saved (it holds PagedAttentionExtension), so it runs the transformed model in memory."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irscatter

pytestmark = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                reason="openvino is not installed, so the differential tests against it did not run")

SCRIPT = Path(__file__).resolve().parents[2] / "data" / "paged_attention_openvino.py"
PROMPT = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 3 + [1, 2, 3, 4, 5, 6, 7]  # 37 tokens: two blocks of 32
STEPS = [
    {"sequences": [{"tokens": PROMPT, "past": 0, "blocks": [4, 1]}, {"tokens": [3, 1, 4, 1, 5], "past": 0, "blocks": [2]}]},
    {"sequences": [{"tokens": [9], "past": 37, "blocks": [4, 1]}, {"tokens": [2], "past": 5, "blocks": [2]}]},
    {"sequences": [{"tokens": [6], "past": 38, "blocks": [4, 1]}, {"tokens": [7, 8, 9, 10], "past": 0, "blocks": [0]}]},
]
ROTATED = [STEPS[0], dict(STEPS[1], rotation={"blocks": [4, 2], "deltas": [[3], [5]]}),
           dict(STEPS[2], rotation={"blocks": [1], "deltas": [[i % 8 for i in range(32)]]})]
CONFIGS = {
    "plain": {"blocks": 6, "steps": STEPS},
    "sliding-window": {"blocks": 6, "steps": STEPS, "sliding_window": 5},
    "alibi-and-scale": {"blocks": 6, "steps": STEPS, "alibi_slopes": [0.5, 0.25, 0.125, 0.0625], "scale": 0.5},
    "sinks-and-score-window": {"blocks": 6, "steps": STEPS, "sinks": [[[[0.5]], [[-1.0]], [[2.0]], [[0.0]]]],
                               "score_aggregation_window": [3, 0]},
    "rotation": {"blocks": 6, "steps": ROTATED, "rotation": 8},
}
# Where the plugin departs from the page: a negative score window (every new token) on a prefill
# longer than its 32-token query blocks.
# And a scalar score window, which the page allows for every sequence and the plugin refuses.
DEPARTING = {"negative-score-window": {"blocks": 6, "steps": STEPS, "score_aggregation_window": [-1, -1]},
             "scalar-score-window": {"blocks": 6, "steps": STEPS, "score_aggregation_window": 3, "refused": True}}


@pytest.fixture(scope="module")
def openvino_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("paged")
    (folder / "configs.json").write_text(json.dumps({**CONFIGS, **DEPARTING}))
    done = subprocess.run([sys.executable, str(SCRIPT), str(folder), str(folder / "configs.json")],
                          check=False, capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def _replay(folder: Path, steps: int):
    """irscatter's run of the recorded schedule on the saved model: per step its outputs and the
    caches it started from, carried over from step to step by donation, as the plugin writes
    into the caches it is given."""
    recorded = np.load(folder / "results.npz")
    model = irscatter.read_model(folder / "model.xml")
    names = [spec.name for spec in model.inputs]
    caches = {n: recorded[f"step0/{n}"].copy() for n in names if n.startswith(("key_cache.", "value_cache."))}
    outputs, starts = [], []
    for step in range(steps):
        starts.append({n: a.copy() for n, a in caches.items()})
        feeds = {n: caches[n] if n in caches else recorded[f"step{step}/{n}"] for n in names}
        outputs.append(model.run(feeds, donate=list(caches)))
    return model, recorded, outputs, starts + [caches]


def test_the_plugins_scores_depart_for_a_negative_window_on_a_long_prefill(openvino_runs):
    _, recorded, outputs, _ = _replay(openvino_runs / "negative-score-window", len(STEPS))
    for step, out in enumerate(outputs):
        np.testing.assert_allclose(out["logits"], recorded[f"step{step}/out/logits"], rtol=1e-5, atol=1e-6)
    scores = outputs[0]["scores.0"]
    assert scores[:37].sum() == pytest.approx(4 * 37, rel=1e-5)  # every token's weights, over 4 heads
    assert not np.allclose(scores, recorded["step0/out/scores.0"], atol=1e-2)  # the plugin's are not
    for step in (1, 2):  # decodes and a 4-token prefill agree
        np.testing.assert_allclose(outputs[step]["scores.0"], recorded[f"step{step}/out/scores.0"], rtol=1e-5,
                                   atol=1e-6)


def test_the_plugin_refuses_a_scalar_score_window_which_irscatter_applies_to_every_sequence(openvino_runs):
    folder = openvino_runs / "scalar-score-window"
    assert "expect_dims=[2,]" in (folder / "refused.txt").read_text()
    model = irscatter.read_model(folder / "model.xml")
    _, recorded, per_sequence, _ = _replay(openvino_runs / "sinks-and-score-window", 1)  # [3, 0]
    feeds = {spec.name: recorded[f"step0/{spec.name}"] for spec in model.inputs}
    scores = model.run(feeds)["scores.0"]
    np.testing.assert_allclose(scores[37:].sum(), 3 * 4, rtol=1e-5)  # the last 3 of the second sequence's 5
    assert scores[:37].sum() == pytest.approx(3 * 4, rel=1e-5)
    assert per_sequence[0]["scores.0"][37:].sum() == 0  # there, the second sequence's window was 0


@pytest.mark.parametrize("name", CONFIGS)
def test_steps_agree_with_openvinos_cpu_plugin(openvino_runs, name):
    steps = len(CONFIGS[name]["steps"])
    model, recorded, outputs, caches = _replay(openvino_runs / name, steps)
    layer = next(layer for layer in model.get_ordered_ops() if layer.type == "PagedAttentionExtension")
    assert layer.version == "extension" and len(layer.inputs) == 28
    assert set(caches[0]) == {"key_cache.0", "value_cache.0"} and caches[0]["key_cache.0"].shape == (6, 2, 32, 8)
    for step in range(steps + 1):  # the caches each step starts from, and those after the last
        for cache, array in caches[step].items():
            want = recorded[f"step{step}/{cache}" if step < steps else f"cache/{cache}"]
            np.testing.assert_allclose(array, want, rtol=1e-5, atol=1e-6, err_msg=f"{cache} before step {step}")
    for step, out in enumerate(outputs):
        for key in ("logits", "scores.0"):
            np.testing.assert_allclose(out[key], recorded[f"step{step}/out/{key}"], rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {step} {key}")


@pytest.mark.parametrize("name", ["plain", "rotation"])
def test_compare_judges_the_saved_paged_model_against_the_plugin(openvino_runs, name):
    """OpenVINO reads the saved paged model once its CPU plugin's internal ops are registered
    (the target does that), and compiles it once each PagedAttentionExtension is told its
    caches' heads and head size, which the target reads off the caches it is fed: so `compare`
    judges the model as saved, whole and layer by layer, on a decode step with a past."""
    from irscatter.debug import compare
    from irscatter.debug.tolerances import Tolerances
    from irscatter.debug.verdicts import table
    from irscatter.targets.openvino import OpenVINOTarget

    folder = openvino_runs / name
    recorded = np.load(folder / "results.npz")
    model = irscatter.read_model(folder / "model.xml")
    feeds = {spec.name: recorded[f"step1/{spec.name}"] for spec in model.inputs}
    compiled = model.compile()
    target = OpenVINOTarget("CPU", "f32")
    try:
        tolerances = Tolerances()
        whole = compare.compare_whole(compiled, feeds, target, tolerances)
        layers = compare.compare_layers(compiled, feeds, target, tolerances)
    finally:
        target.close()
    assert whole.ok and whole.counts()["passed"] == 2, table(whole, every=True)
    attention = [r for r in layers.layers if r.op.startswith("PagedAttentionExtension")]
    assert layers.ok and [r.status for r in attention] == ["passed"], table(layers, every=True)
