"""NormalizeL2-1, GRN-1 and LRN-1 against OpenVINO's CPU plugin and `oracles.normalization`.

Tolerance: within 4 ulps of the output type in f32 and f16 (a sum of squares in another order,
a square root, a power), 8 in bf16 (the plugin's bf16 answers stray further); f64 is judged by
the oracle alone (the plugin computes it in f32).

Where the plugin is not the judge:
  * NormalizeL2 with no axes: the spec (and OpenVINO's reference) give 1 for non-zero elements
    and 0 for zeros; the plugin computes x / sqrt(x^2 + eps) (-1 for negatives). An empty axes
    Const cannot be read by OpenVINO either.
  * NormalizeL2 with eps_mode=max and a NaN in the slice: the plugin's max(NaN, eps) is eps,
    OpenVINO's reference's (std::max) is NaN, which irscatter follows.
  * LRN with an even size: the spec's window reaches size // 2 on each side, the plugin's
    (size - 1) // 2 (see lrn.py).
  * LRN over axes other than [1] or all the spatial axes: the plugin refuses them, and OpenVINO
    has no reference LRN.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.normalization import grn, lrn, normalize_l2

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")
F64 = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}


def _values(rng, shape, dtype, edges=False, low=-4, high=4):
    data = harness.values(rng, shape, dtype, edges=edges, low=low, high=high)
    return data


def _tol(tag):
    return {"ulps": 8} if tag == "bf16" else {"ulps": 4, **(F64 if tag == "f64" else {})}


def _nl2(tag, data, axes, eps, eps_mode, **judge):
    if not len(axes):
        judge = {**judge, "openvino": "none", "why": "the plugin departs from the spec with no axes (module doc)"}
    return Case(f"nl2-{tag}-{'x'.join(map(str, data.shape))}-ax{list(axes)}-{eps_mode}-{eps}", "NormalizeL2", "opset1",
                [Input("data", data), Input("axes", np.array(axes, np.int64), const=bool(len(axes)))],
                {"eps": eps, "eps_mode": eps_mode},
                oracle=lambda x, a: normalize_l2(x, a, eps=eps, eps_mode=eps_mode), **judge)


def _lrn(tag, data, axes, alpha, beta, bias, size, **judge):
    if size % 2 == 0:
        judge = {**judge, "openvino": "none", "why": "the plugin's window for an even size is not the spec's"}
    elif sorted(axes) not in ([1], list(range(2, data.ndim))):
        judge = {**judge, "openvino": "none", "why": "the plugin takes axes [1] or all spatial axes only"}
    return Case(f"lrn-{tag}-{'x'.join(map(str, data.shape))}-ax{axes}-a{alpha}-b{beta}-k{bias}-n{size}", "LRN",
                "opset1", [Input("data", data), Input("axes", np.array(axes, np.int64), const=True)],
                {"alpha": alpha, "beta": beta, "bias": bias, "size": size},
                oracle=lambda x, a: lrn(x, a, alpha=alpha, beta=beta, bias=bias, size=size), **judge)


def _grn(tag, data, bias, **judge):
    return Case(f"grn-{tag}-{'x'.join(map(str, data.shape))}-{bias}", "GRN", "opset1", [Input("data", data)],
                {"bias": bias}, oracle=lambda x: grn(x, bias=bias), **judge)


def _cases():
    rng = np.random.default_rng(12)
    cases = []
    for tag, dtype in FLOATS.items():
        for k, shape in enumerate(harness.shapes(rng, ranks=(1, 2, 3, 4, 5))):
            rank = len(shape)
            axes = harness.random_axes(rng, rank)
            for eps_mode in ("add", "max"):
                data = _values(rng, shape, dtype, edges=k % 2 == 0)
                judge = _tol(tag)
                if eps_mode == "max" and np.isnan(data.astype(np.float64)).any() and tag != "f64":
                    judge = {**judge, "openvino": "none",
                             "why": "for a NaN sum the plugin's max(sum, eps) is eps; the reference's is NaN"}
                cases.append(_nl2(tag, data, axes, [1e-6, 0.5][k % 2], eps_mode, **judge))
        for shape in harness.shapes(rng, ranks=(2, 3, 4)):
            cases.append(_grn(tag, _values(rng, shape, dtype, edges=True), 1e-4, **_tol(tag)))
        for k, (shape, axes) in enumerate([((2, 5, 3, 3), [1]), ((1, 3, 4, 5), [2, 3]), ((2, 6, 3), [1]),
                                           ((1, 4, 3, 3), [3, 2]), ((2, 7), [1]), ((3, 2, 5, 1, 2), [2])]):
            size = [3, 5, 1, 3, 7, 3][k]
            data = _values(rng, shape, dtype)
            cases.append(_lrn(tag, data, axes, [1e-4, 0.5, 2.0][k % 3], [0.75, 0.5, 1.0][k % 3], [1.0, 2.0][k % 2],
                              size, **_tol(tag)))
    x = np.array([[-3, 0, 2, np.inf, np.nan], [1, -1, 0.5, 4, -0.0]], np.float32)
    cases.append(_nl2("f32", x, [], 1e-6, "add", ulps=0))  # no axes: 1 for non-zero, 0 for zero
    cases.append(_nl2("f32", np.array([[1e-4, 1e-4], [3, 4]], np.float32), [1], 0.25, "max", ulps=4))
    cases.append(_nl2("f32", np.array(2.5, np.float32), [], 1e-6, "add", ulps=0))
    # LRN: a size-0 dim, no axes, an even size (the spec's window), the spec's example attributes
    cases.append(_lrn("f32", np.zeros((2, 0, 3), np.float32), [1], 1e-4, 0.75, 1.0, 3, ulps=4))
    cases.append(_lrn("f32", np.arange(1, 9, dtype=np.float32).reshape(2, 4), [1], 0.5, 0.75, 1.0, 4, ulps=4))
    cases.append(_lrn("f32", np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4), [2, 3], 0.5, 0.75, 2.0, 2,
                      ulps=4))
    cases.append(_lrn("f32", _values(rng, (6, 12, 10, 24), np.float32), [1], 1e-4, 0.75, 1.0, 5, ulps=4))
    cases.append(_lrn("f32", _values(rng, (2, 3, 4), np.float32), [1, 1], 0.5, 0.75, 1.0, 3, ulps=4))
    for bias in (0.5, 0.1):
        cases.append(_lrn("f32", _values(rng, (2, 5, 3, 3), np.float32), [1], 1e-4, 0.75, bias, 3, ulps=4,
                          openvino="none", why="with a bias below 1 the plugin's every element is far off (lrn.py)"))
    # refusals
    f32 = np.ones((2, 3), np.float32)
    nl2 = {"eps": 1e-6, "eps_mode": "add"}
    for name, data, axes, attrs, label in (
            ("i32", f32.astype(np.int32), np.array([1]), nl2, "float-type"),
            ("axes-f32", f32, np.array([1.0], np.float32), nl2, "axes-type"),
            ("axes-2d", f32, np.array([[1]]), nl2, "axes-rank"),
            ("axis-range", f32, np.array([2]), nl2, "axis-range"),
            ("axes-unique", f32, np.array([1, -1]), nl2, "axes-unique"),
            ("eps-mode", f32, np.array([1]), {"eps": 1e-6, "eps_mode": "min"}, "attributes")):
        cases.append(Case(f"nl2-{name}", "NormalizeL2", "opset1", [Input("data", data), Input("axes", axes, const=True)],
                          attrs, error=label))
    lrn_attrs = {"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": 3}
    for name, data, axes, attrs, label in (
            ("i32", f32.astype(np.int32), np.array([1]), lrn_attrs, "float-type"),
            ("axes-f32", f32, np.array([1.0], np.float32), lrn_attrs, "axes-type"),
            ("axes-scalar", f32, np.array(1), lrn_attrs, "axes-vector"),
            ("axes-count", f32, np.array([0, 1, 1]), lrn_attrs, "axes-count"),
            ("axis-range", f32, np.array([2]), lrn_attrs, "axis-range"),
            ("size-0", f32, np.array([1]), {**lrn_attrs, "size": 0}, "lrn-size")):
        cases.append(Case(f"lrn-{name}", "LRN", "opset1", [Input("data", data), Input("axes", axes, const=True)],
                          attrs, error=label))
    cases.append(Case("grn-rank1", "GRN", "opset1", [Input("data", np.ones(3, np.float32))], {"bias": 1e-4},
                      error="data-rank"))
    cases.append(Case("grn-rank5", "GRN", "opset1", [Input("data", np.ones((1, 2, 1, 1, 1), np.float32))],
                      {"bias": 1e-4}, error="data-rank"))
    cases.append(Case("grn-i32", "GRN", "opset1", [Input("data", np.ones((2, 3), np.int32))], {"bias": 1e-4},
                      error="float-type"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_normalization_l2_lrn_grn(case):
    harness.check(case, CASES)
