"""Softmax-1, Softmax-8 and LogSoftmax-5 against OpenVINO's CPU plugin and the oracles.

Tolerances: Softmax 16 ulps of the output type: e^(x - max) carries the rounding of the
subtraction amplified by |x - max| (up to 12 here), then a sum and a division. LogSoftmax 4 ulps
plus an absolute 2 ulps of 1 (2.4e-7 in f32, 4.5e-16 in f64): log(sum) is near 0 where the
slice's largest value dominates, and t - log(sum) cancels. f64 is judged by the oracle alone
(the CPU plugin computes it in f32).

Stability: slices holding +-1e4 (and values 1e4 apart) in f16 and f32 give finite results with
no NaN: the maximum is subtracted before exponentiating.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles import activation as oracle

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")
F64 = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}
# type, opset, oracle, ulps, atol for f32/f16/bf16, atol for f64
OPS = [("Softmax", "opset1", oracle.softmax, 16, 0, 0), ("Softmax", "opset8", oracle.softmax, 16, 0, 0),
       ("LogSoftmax", "opset5", oracle.log_softmax, 4, 2.4e-7, 4.5e-16)]


def _finite(rng, shape, dtype, span=6):
    """Values without NaN or inf: along an axis, one of those makes the whole slice NaN (the
    edge cases below test that on their own)."""
    x = harness.values(rng, shape, dtype, low=-span, high=span)
    return np.where(np.abs(x.astype(np.float32)) < 1e-30, np.float32(0), x.astype(np.float32)).astype(dtype)


def _id(*parts):
    return "-".join(str(p) if not isinstance(p, tuple) else "x".join(map(str, p)) or "scalar" for p in parts)


def _cases():
    rng = np.random.default_rng(4242)
    cases = []
    for type_, opset, orc, ulps, atol, atol64 in OPS:
        shapes = [s for s in harness.shapes(rng, ranks=(1, 2, 3, 4, 5))]
        for k, (tname, dtype) in enumerate(FLOATS.items()):
            chosen = shapes if tname == "f32" else shapes[k::2]
            for shape in chosen:
                rank = len(shape)
                axes = range(rank) if opset == "opset1" else range(-rank, rank)
                for axis in (list(axes) if tname == "f32" else [int(rng.choice(list(axes)))]):
                    x = _finite(rng, shape, dtype)
                    cases.append(Case(_id(type_, opset, tname, shape, f"axis={axis}"), type_, opset,
                                      [Input("data", x)], {"axis": axis}, oracle=orc(axis), ulps=ulps,
                                      atol=atol if tname != "f64" else atol64, **(F64 if tname == "f64" else {})))
        # the default axis: the spec's 1; OpenVINO's Softmax defaults to 0 when the IR leaves it out
        x = _finite(rng, (2, 5, 3), np.float32)
        cases.append(Case(_id(type_, opset, "default-axis"), type_, opset, [Input("data", x)], oracle=orc(1),
                          ulps=ulps, atol=atol, **({"openvino": "none", "why": "OpenVINO's Softmax reads a "
                                                   "missing axis as 0, the spec's default is 1"}
                                                  if type_ == "Softmax" else {})))
        # large values: no overflow, no NaN
        big = np.array([[1e4, -1e4, 0.0, 1e4], [-1e4, -1e4, -1e4, -1e4], [1e4, 9990.0, -1e4, 5.0]])
        for tname in ("f32", "f16"):
            for axis in (0, 1):
                cases.append(Case(_id(type_, opset, "large", tname, f"axis={axis}"), type_, opset,
                                  [Input("data", big.astype(FLOATS[tname]))], {"axis": axis}, oracle=orc(axis),
                                  ulps=ulps, atol=atol))
        # NaN and infinities: the slice with one of them
        edges = np.array([[np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0], [-np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf]],
                         np.float32)
        cases.append(Case(_id(type_, opset, "edges"), type_, opset, [Input("data", edges)], {"axis": 1},
                          oracle=orc(1), ulps=ulps, atol=atol, openvino="reference" if type_ == "Softmax" else "none",
                          why="the CPU plugin's treatment of NaN and inf is its own; the core reference subtracts "
                              "the maximum as irscatter does (and has no LogSoftmax evaluate)"))
        # refused
        cases += [
            Case(_id(type_, opset, "scalar"), type_, opset, [Input("data", np.array(1.0, np.float32))], {"axis": 0},
                 error="axis-range"),
            Case(_id(type_, opset, "axis-past-rank"), type_, opset, [Input("data", np.ones((2, 3), np.float32))],
                 {"axis": 2}, error="axis-range"),
            Case(_id(type_, opset, "int"), type_, opset, [Input("data", np.ones((2, 3), np.int32))],
                 error="float-type"),
        ]
    cases += [
        Case("Softmax-opset1-negative-axis", "Softmax", "opset1", [Input("data", np.ones((2, 3), np.float32))],
             {"axis": -1}, error="attributes"),
        Case("Softmax-opset8-axis-below-rank", "Softmax", "opset8", [Input("data", np.ones((2, 3), np.float32))],
             {"axis": -3}, error="axis-range"),
        Case("LogSoftmax-opset5-axis-below-rank", "LogSoftmax", "opset5",
             [Input("data", np.ones((2, 3), np.float32))], {"axis": -3}, error="axis-range"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_softmax(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("type_, opset", [("Softmax", "opset8"), ("LogSoftmax", "opset5")])
@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=["f16", "f32"])
def test_large_inputs_stay_finite(type_, opset, dtype):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4, -1e4]], dtype)
    (got,) = harness.run_irscatter(Case("large", type_, opset, [Input("data", x)], {"axis": -1}))
    assert got.dtype == dtype and np.isfinite(got).all()
    if type_ == "Softmax":
        assert np.allclose(got.astype(np.float64), [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0]], rtol=1e-3)
    else:
        want = np.array([[0, -2e4, -1e4], [-np.log(3)] * 3, [-np.log(2), -np.log(2), -2e4 - np.log(2)]])
        assert np.allclose(got.astype(np.float64), want, rtol=1e-3)


def test_softmax_default_axis_departure():
    """The spec's default axis is 1 in both versions; OpenVINO reads a Softmax-1 without one as
    axis 0 (Softmax-8 as 1, the spec's)."""
    x = np.array([[0.0, 1.0, 2.0], [3.0, 5.0, 4.0]], np.float32)
    for opset, openvino_axis in (("opset1", 0), ("opset8", 1)):
        case = Case(f"default-axis-{opset}", "Softmax", opset, [Input("data", x)])
        (got,) = harness.run_irscatter(case)
        harness.assert_close(got, oracle.softmax(1)(x), ulps=4)
        (want,) = harness.run_openvino(case, [case])
        harness.assert_close(want, oracle.softmax(openvino_axis)(x), ulps=4)
