"""CumSum-3 against OpenVINO's CPU plugin and `oracles.reduction.cum_sum`.

Tolerance: integers exact (sums wrap in the element type, as the plugin's do); floats within
2 ulps of the output type plus 1e-6 absolute for f32 (one addition after another in f32, the
order the plugin may vectorize differently; running sums of mixed signs may cancel), and exact
against the oracle, which adds in the same order and type. f64 is judged by the oracle alone (the
plugin computes it in f32).
"""


import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.reduction import cum_sum

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")


def _case(tag, data, axis, exclusive, reverse, *, axis_type=np.int64, ulps=0, atol=0, openvino="cpu", why=""):
    inputs = [Input("data", data)]
    if axis is not None:
        inputs.append(Input("axis", np.array(axis, axis_type), const=True))
    name = f"{tag}-{'x'.join(map(str, data.shape))}-axis{axis}-ex{int(exclusive)}-rev{int(reverse)}"
    return Case(name, "CumSum", "opset3", inputs, {"exclusive": exclusive, "reverse": reverse},
                oracle=lambda *a: cum_sum(*a, exclusive=exclusive, reverse=reverse), ulps=ulps, atol=atol,
                openvino=openvino, why=why)


def _cases():
    rng = np.random.default_rng(3)
    cases = []
    for tag, dtype in TYPES.items():
        for shape in harness.shapes(rng, ranks=(1, 2, 3, 4, 5)):
            rank = len(shape)
            axis = int(rng.integers(-rank, rank))
            exclusive, reverse = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
            if tag.startswith("i") or tag.startswith("u"):
                data = harness.values(rng, shape, dtype, edges=True, low=-100 if tag != "u8" else 0, high=100)
            else:
                data = harness.values(rng, shape, dtype, edges=True)
            ulps, atol = (2, 1e-6 if tag == "f32" else 0) if tag in ("f32", "f16", "bf16") else (0, 0)
            extra = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"} if tag == "f64" else {}
            if tag == "i64":
                extra = {"openvino": "none", "why": "the CPU plugin saturates i64 sums; the spec's arithmetic wraps"}
            cases.append(_case(tag, data, axis, exclusive, reverse, ulps=ulps, atol=atol, **extra))
    # every attribute combination on the spec's example and with the axis left out; an i32 axis
    x = np.array([1, 2, 3, 4, 5], np.float32)
    for exclusive in (False, True):
        for reverse in (False, True):
            cases.append(_case("example", x, 0, exclusive, reverse))
            cases.append(_case("2d-no-axis", np.arange(12, dtype=np.float32).reshape(3, 4), None, exclusive, reverse,
                               openvino="none", why="OpenVINO fails to compile CumSum without its axis input"))
    cases.append(_case("axis-i32", np.arange(6, dtype=np.int32).reshape(2, 3), -1, False, False, axis_type=np.int32))
    cases.append(_case("wraps", np.array([100, 100, -128, -1], np.int8), 0, False, False))
    # refusals
    f32 = np.ones((2, 3), np.float32)
    cases += [
        Case("scalar", "CumSum", "opset3", [Input("data", np.float32(1).reshape(())), Input("axis", np.array(0), const=True)],
             error="data-rank"),
        Case("boolean", "CumSum", "opset3", [Input("data", np.ones(3, bool)), Input("axis", np.array(0), const=True)],
             error="numeric-type"),
        Case("axis-i8", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array(0, np.int8), const=True)],
             error="axis-type"),
        Case("axis-2", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array([0, 1]), const=True)],
             error="axis-shape"),
        Case("axis-1elem", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array([1]), const=True)],
             error="axis-shape"),
        Case("axis-range", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array(2), const=True)],
             error="axis-range"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cum_sum(case):
    harness.check(case, CASES)
