"""ExperimentalDetectronTopKROIs-6 against OpenVINO's CPU plugin and the oracle. The ROIs are
copied, so every case is exact."""

from functools import partial

import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, check
from oracles import detectron

OP, OPSET = "ExperimentalDetectronTopKROIs", "opset6"
F64 = {"openvino": "none", "why": "OpenVINO's CPU plugin runs f64 layers in f32, rounding the ROIs"}


def _rois(rng, n, dtype):
    corner = rng.uniform(0, 100, (n, 2))
    return np.concatenate([corner, corner + rng.uniform(1, 50, (n, 2))], 1).astype(dtype)


def _case(name, rois, probs, max_rois, **kw):
    return Case(name, OP, OPSET, [Input("rois", rois), Input("probs", probs)], {"max_rois": max_rois},
                oracle=partial(detectron.top_k_rois, max_rois=max_rois), **kw)


def _cases():
    rng = np.random.default_rng(6)
    out = []
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for n in (1, 5, 12, 40):
            probs = rng.permutation(n).astype(np.float32) / n  # distinct
            for k in sorted({0, 1, n // 2, n}):
                out.append(_case(f"{np.dtype(dtype).name}-n{n}-k{k}", _rois(rng, n, dtype), probs.astype(dtype), k,
                                 **F64 if dtype is np.float64 else {}))
    # equal probabilities keep the input order (std::sort sorts 16 or fewer by insertion, stably)
    ties = np.array([0.5, 0.9, 0.5, 0.1, 0.9, 0.5, 0.5, 0.9, 0.2, 0.5], np.float32)
    out.append(_case("ties", _rois(rng, 10, np.float32), ties, 7))
    out.append(_case("all-equal", _rois(rng, 9, np.float32), np.full(9, 0.25, np.float32), 9))
    out.append(_case("negative-and-zero", _rois(rng, 6, np.float32),
                     np.array([-0.0, -1.0, 0.0, -np.inf, np.inf, 3.0], np.float32)[[0, 1, 3, 4, 5, 2]] * 1, 4))
    # undefined by the spec: rows past the ROIs (zeros here), NaN probabilities (last here)
    undefined = "the spec leaves these rows or orders undefined; irscatter's choice is checked against the oracle"
    out.append(_case("fewer-than-max", _rois(rng, 3, np.float32), np.array([0.1, 0.7, 0.4], np.float32), 6,
                     openvino="none", why=undefined))
    out.append(_case("nan", _rois(rng, 5, np.float32), np.array([0.3, np.nan, 0.9, np.nan, 0.1], np.float32), 5,
                     openvino="none", why=undefined))
    out.append(_case("empty", _rois(rng, 0, np.float32), np.zeros(0, np.float32), 0))
    # refused
    r = _rois(rng, 4, np.float32)
    p = np.ones(4, np.float32)
    out.append(_case("rois-rank", r.reshape(1, 4, 4), p, 2, error="top-k-rois-shape"))
    out.append(_case("rois-width", r[:, :3], p, 2, error="top-k-rois-shape"))
    out.append(_case("probs-rank", r, p.reshape(2, 2), 2, error="top-k-rois-shape"))
    out.append(_case("count", r, p[:3], 2, error="top-k-rois-shape"))
    out.append(_case("int-type", r.astype(np.int32), p.astype(np.int32), 2, error="float-type"))
    out.append(_case("mixed-types", r, p.astype(np.float16), 2, error="same-element-type"))
    out.append(_case("negative-max", r, p, -1, error="attributes"))
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_experimental_detectron_top_k_rois(case):
    check(case, CASES)
