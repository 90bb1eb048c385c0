"""Every bundled model reproduces the outputs its generator took from an independent
runtime (OpenVINO's CPU plugin, or XLA for the StableHLO model) when it was written."""

from pathlib import Path

import numpy as np
import pytest

import irscatter
from irscatter.runtime.inputs import compare_outputs

# A MatMul's sums may be accumulated in another order than OpenVINO's: results of a few units near
# 1e-6 differ in their last bits, more than the default 8 eps absolute allows.
TOLERANCE = {"quantized_mlp": {"rtol": 1e-6, "atol": 4e-6}}

MODELS = sorted(p.parent for p in (Path(__file__).resolve().parent.parent / "models").glob("*/model.xml"))


@pytest.mark.parametrize("folder", MODELS, ids=lambda p: p.name)
def test_bundled_model_matches_expected(folder):
    model = irscatter.read_model(folder / "model.xml")
    with np.load(folder / "inputs.npz") as inputs, np.load(folder / "expected.npz") as expected:
        feeds = {k: inputs[k] for k in inputs.files}
        outputs = model.run(feeds)
        results = compare_outputs(outputs, {k: expected[k] for k in expected.files}, **TOLERANCE.get(folder.name, {}))
    assert results and all(r.ok for r in results), results


def test_there_are_bundled_models():
    assert len(MODELS) >= 3
