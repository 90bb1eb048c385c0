"""Roll-7 against OpenVINO's CPU plugin and `oracles.movement.roll`; exact (the output copies
data's elements).

Covered: ranks 1 to 5, size-0 dims, shifts of either sign and longer than the axis, shifts near
the i64 limits (taken modulo the axis length exactly), scalar and 1-D shift and axes, repeated
axes (their shifts add up), negative axes, no axes (data unchanged), every element type, i32
and i64 indices, indices fed at run time, and the refusals of the index rules.

Where the CPU plugin is not the judge (OpenVINO's core reference does not evaluate Roll, so
these are held to the oracle alone): a scalar shift with several axes (the spec allows it; the
plugin refuses it), empty axes (the plugin returns uninitialised memory), a sum of shifts past
the i64 range (the plugin's overflows), and f64 and i64 data with extreme values (the plugin
moves them as f32/i32; small values of both are checked against it).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.movement import roll

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "boolean")
WHY = {"f64": "the CPU plugin moves f64 as f32", "i64": "the CPU plugin moves i64 as i32 (the extremes)"}
NO_REFERENCE = "; OpenVINO's core reference does not evaluate Roll"


def _case(tag, data, shift, axes, *, index_type=np.int64, const=True, **extra):
    shift, axes = np.array(shift, index_type), np.array(axes, index_type)
    name = (f"{tag}-{'x'.join(map(str, data.shape))}-s{'_'.join(map(str, shift.reshape(-1)))}"
            f"{'' if shift.ndim else 'sc'}-a{'_'.join(map(str, axes.reshape(-1)))}{'' if axes.ndim else 'sc'}")
    if shift.ndim == 0 and axes.size > 1 and "openvino" not in extra:
        extra = {"openvino": "none", "why": "the CPU plugin refuses a scalar shift with several axes" + NO_REFERENCE}
    return Case(name, "Roll", "opset7", [Input("data", data), Input("shift", shift, const=const),
                                         Input("axes", axes, const=const)], oracle=roll, **extra)


def _judge(tag, data):
    return {"openvino": "none", "why": WHY[tag] + NO_REFERENCE} if tag in WHY else {}


def _cases():
    rng = np.random.default_rng(23)
    cases = []
    for tag, dtype in TYPES.items():
        for k, shape in enumerate(harness.shapes(rng, ranks=(1, 2, 3, 4, 5))):
            rank = len(shape)
            axes = harness.random_axes(rng, rank)
            if rng.random() < 0.3:
                axes.append(axes[0])  # repeated: the shifts add up
            shift = [int(v) for v in rng.integers(-9, 10, len(axes))]
            data = harness.values(rng, shape, dtype, edges=True, **({"low": -100, "high": 100} if tag[0] in "iu" else {}))
            cases.append(_case(tag, data, shift, axes, index_type=(np.int32, np.int64)[k % 2], **_judge(tag, data)))
    x = np.arange(1, 13, dtype=np.float32).reshape(4, 3)
    i64_max, i64_min = 2**63 - 1, -(2**63)
    cases += [
        _case("example-1", x, 1, 0),
        _case("example-2", x, [-1, 2], [0, 1]),
        _case("example-3", x, [1, 2, 1], [0, 1, 0]),
        _case("scalar-shift", x, 2, [0, 1]),
        _case("scalar-shift-one-axis", x, -5, [1]),
        _case("no-axes", x, np.zeros(0, np.int64), np.zeros(0, np.int64), openvino="none",
              why="OpenVINO cannot hold empty indices in the test IR"),
        _case("i64-limits", x, [i64_max, i64_min], [0, 1]),
        _case("i64-limits-summed", x, [i64_max, i64_max, i64_min], [1, 1, 1], openvino="none",
              why="the CPU plugin's sum of shifts near the i64 limits overflows" + NO_REFERENCE),
        _case("i64-small", x.astype(np.int64), [1, -2], [0, 1]),  # within the plugin's exact range
        _case("f64-small", x.astype(np.float64), [1, -2], [0, 1]),
        _case("i32", x, [5, -7], [-1, 0], index_type=np.int32),
        _case("at-runtime", x, [3, 1], [1, -2], const=False),
        _case("empty", np.zeros((0, 3), np.float32), [1, 2], [0, 1]),
    ]
    cases += [
        _case("shift-u8", x, [1], [0], index_type=np.uint8, error="roll-index-type"),
        Case("axes-i8", "Roll", "opset7", [Input("data", x), Input("shift", np.array([1]), const=True),
                                           Input("axes", np.array([0], np.int8), const=True)], error="roll-index-type"),
        _case("mismatch", x, [1, 2], [0, 1, 0], error="roll-sizes"),
        _case("mismatch-at-runtime", x, [1, 2], [0, 1, 0], const=False, error="roll-sizes"),
        _case("1d-shift-scalar-axes", x, [1], 0, error="roll-sizes"),
        _case("shift-2d", x, [[1]], [0], error="shift-rank"),
        _case("axes-2d", x, 1, [[0]], error="axes-rank"),
        _case("axis-range", x, [1], [2], error="axis-range"),
        _case("scalar-data", np.float32(4).reshape(()), [1], [0], error="axis-range"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_roll(case):
    harness.check(case, CASES)


def test_the_spec_pages_value_examples():
    from irscatter.ops.functional import make_op
    from irscatter.ops.movement.roll import Roll

    op, data = make_op(Roll, {}), np.arange(1, 13).reshape(4, 3)
    assert op.compute(data, np.array(1), np.array(0)).tolist() == [[10, 11, 12], [1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert op.compute(data, np.array([-1, 2]), np.array([0, 1])).tolist() == [[5, 6, 4], [8, 9, 7], [11, 12, 10],
                                                                            [2, 3, 1]]
    assert op.compute(data, np.array([1, 2, 1]), np.array([0, 1, 0])).tolist() == [[8, 9, 7], [11, 12, 10], [2, 3, 1],
                                                                                  [5, 6, 4]]
