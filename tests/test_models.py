"""Every bundled model reproduces the outputs its generator took from an independent
runtime (OpenVINO's CPU plugin, or XLA for the StableHLO model) when it was written.

A stateful model's feeds are keyed per step (`step0/x`, `step1/x`, ...): its steps run in order
on one compiled model, whose variables carry over from step to step as in one OpenVINO infer
request, and each step's outputs are compared with the expected `step<k>/<name>` values."""

from pathlib import Path

import numpy as np
import pytest

import irscatter
from irscatter.runtime.inputs import compare_outputs
from irscatter.runtime.steps import has_steps, split_steps

# A MatMul's sums may be accumulated in another order than OpenVINO's: results of a few units near
# 1e-6 differ in their last bits, more than the default 8 eps absolute allows. The convolutions,
# LSTM gates and attention of small_cnn, lstm_sequence and stateful_decoder sum in another order
# than the CPU plugin too, but their results stay within the default 8 eps (their largest
# differences are 1.5e-8, 6e-8 and 7.2e-7 on values of magnitude below 1, 1 and 3), so they need
# no entry.
# Tighter than run --expected's presets: a bundled model's expected values are OpenVINO's, and
# irscatter matches them to a few ulps.
TOLERANCE = {"quantized_mlp": {"rtol": 1e-6, "atol": 4e-6}}
STRICT = {"rtol": 1e-6, "atol": 1e-6}

MODELS = sorted(p.parent for p in (Path(__file__).resolve().parent.parent / "models").glob("*/model.xml"))


def _run(folder: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if not has_steps(feeds):
        return irscatter.read_model(folder / "model.xml").run(feeds)
    compiled = irscatter.compile_model(folder / "model.xml")
    outputs: dict[str, np.ndarray] = {}
    current: dict[str, np.ndarray] = {}
    for k, step in enumerate(split_steps(feeds, 1)):
        current.update(step)  # an input a step does not give keeps its last value
        outputs.update({f"step{k}/{name}": value for name, value in compiled.run(current).items()})
    return outputs


@pytest.mark.parametrize("folder", MODELS, ids=lambda p: p.name)
def test_bundled_model_matches_expected(folder):
    with np.load(folder / "inputs.npz") as inputs, np.load(folder / "expected.npz") as expected:
        outputs = _run(folder, {k: inputs[k] for k in inputs.files})
        results = compare_outputs(outputs, {k: expected[k] for k in expected.files}, **TOLERANCE.get(folder.name, STRICT))
    assert results and all(r.ok for r in results), results


def test_stateful_model_steps_depend_on_the_state():
    """The decoder's single-token steps read the cache the earlier steps wrote: run alone, on a
    fresh state, the same token gives another output."""
    folder = Path(__file__).resolve().parent.parent / "models" / "stateful_decoder"
    with np.load(folder / "inputs.npz") as inputs, np.load(folder / "expected.npz") as expected:
        fresh = irscatter.compile_model(folder / "model.xml").run({"x": inputs["step3/x"]})["y"]
        assert not np.allclose(fresh, expected["step3/y"], atol=1e-3)


def test_there_are_bundled_models():
    assert len(MODELS) >= 3
