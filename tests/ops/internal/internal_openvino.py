"""The cases of RMS, AUGRUCell and AUGRUSequence held to OpenVINO's CPU plugin. Each is one IR
file (harness.Case: the weights as Consts, the rest fed), which irscatter reads and runs, and
which OpenVINO reads once its CPU plugin is loaded (the plugin registers these ops:
helpers.run_internal_ops_openvino, out of process); conftest's fixture `openvino_results` runs
them all in one process, since importing OpenVINO costs more than the cases.

What the plugin takes: RMS of any rank, with a scale of [N] or [1, ..., N] or none, f32 or f16
output; AUGRUCell and AUGRUSequence with constant weights; AUGRUSequence only with constant
sequence lengths all equal to seq_length ("Unsupported sequence length" otherwise, and no
reference to fall back to), and only with `activations` written out: the op OpenVINO's reader
builds has none until the attribute sets them, and is then refused, though the page (and
irscatter) default them to sigmoid, tanh.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from harness import Case, Input

needs_openvino = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                    reason="openvino is not installed, so the differential tests against it did not run")

DOMAIN = "ie_internal_opset"


def _values(shape, dtype=np.float32, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _rms(name, data, scale=None, **attrs):
    inputs = [Input("data", data)] + ([] if scale is None else [Input("scale", scale, const=True)])
    return Case(name, "RMS", DOMAIN, inputs, {"epsilon": 1e-6, **attrs})


EDGE_ROWS = np.array([[1.0, np.inf, 2.0, -1.0], [np.nan, 1.0, 0.0, 3.0], [1e30, -2e30, 1.0, 0.0],
                      [0.0, 0.0, 0.0, 0.0], [-np.inf, -np.inf, 1.0, 1.0]], np.float32)
RMS_CASES = [
    _rms("rank1", _values(8), _values(8, seed=1)),
    _rms("rank2", _values((3, 16)), _values(16, seed=1)),
    _rms("rank3-scale-1-1-n", _values((2, 3, 8)), _values((1, 1, 8), seed=2), epsilon=1e-5),
    _rms("rank4-large-eps", _values((2, 2, 3, 8)), _values(8, seed=3), epsilon=0.5),
    _rms("no-scale", _values((3, 8)), elementwise_affine=False),
    _rms("edge-rows", EDGE_ROWS, np.array([1.0, -2.0, 0.5, 3.0], np.float32)),
    _rms("f32-to-f16", _values((3, 8)), _values(8, seed=1), output_type="f16"),
    _rms("f16", _values((4, 32), np.float16), _values(32, np.float16, seed=4)),
]


def augru_weights(inputs: int, hidden: int, seed: int = 0) -> dict[str, np.ndarray]:
    """W [3H, I], R [3H, H], B [3H] in the cell's layout (gates z, r, h)."""
    return {"W": _values((3 * hidden, inputs), seed=seed, scale=0.5),
            "R": _values((3 * hidden, hidden), seed=seed + 1, scale=0.5), "B": _values(3 * hidden, seed=seed + 2)}


def _cell(name, x, h, a, seed):
    weights = augru_weights(x.shape[1], h.shape[1], seed)
    inputs = [Input("X", x), Input("H", h), *(Input(n, weights[n], const=True) for n in "WRB"), Input("A", a)]
    return Case(name, "AUGRUCell", DOMAIN, inputs, {"hidden_size": h.shape[1]})


AUGRU_CELL_CASES = [
    _cell("attention-in-0-1", _values((4, 3)), _values((4, 5), seed=1),
          np.array([[0.0], [0.3], [0.9], [1.0]], np.float32), 2),
    _cell("attention-outside-0-1", _values((3, 2), scale=3), _values((3, 4), seed=1),
          np.array([[-0.5], [1.5], [2.0]], np.float32), 5),
    _cell("large-pre-activations", _values((2, 3), scale=100), _values((2, 2), seed=1),
          np.array([[0.25], [0.75]], np.float32), 8),
]


def _sequence(name, batch, seq, inputs, hidden, length_type, seed):
    weights = augru_weights(inputs, hidden, seed)
    fed = [Input("X", _values((batch, seq, inputs), seed=seed)), Input("H", _values((batch, 1, hidden), seed=seed + 1)),
           Input("lengths", np.full(batch, seq, length_type), const=True),
           *(Input(n, weights[n][None], const=True) for n in "WRB"),
           Input("A", np.random.default_rng(seed).random((batch, seq, 1)).astype(np.float32))]
    return Case(name, "AUGRUSequence", DOMAIN, fed, {"hidden_size": hidden, "activations": "sigmoid,tanh"})


AUGRU_SEQUENCE_CASES = [
    _sequence("i32-lengths", 2, 5, 3, 4, np.int32, 3),
    _sequence("i64-lengths-one-step", 3, 1, 2, 3, np.int64, 7),
]


def all_cases() -> list[Case]:
    return [*RMS_CASES, *AUGRU_CELL_CASES, *AUGRU_SEQUENCE_CASES]


def assert_matches_openvino(case: Case, results: dict[str, list[np.ndarray]]) -> None:
    """irscatter's run of the case's IR file equals the plugin's, output by output: the same
    type and shape, values within 1e-5 (f16: 2e-3) and NaN where NaN."""
    from harness import run_irscatter

    theirs = results[case.id]
    ours = run_irscatter(case)
    assert len(ours) == len(theirs)
    for got, want in zip(ours, theirs):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        tolerance = 2e-3 if got.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance / 10,
                                   equal_nan=True, err_msg=case.id)
