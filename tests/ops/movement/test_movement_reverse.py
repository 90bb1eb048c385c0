"""Reverse-1 against OpenVINO's CPU plugin and `oracles.movement.reverse`; exact (the output
copies data's elements).

Covered: ranks 0 to 5, size-0 dims, both modes, index lists with negative and repeated axes
(a set: reversed once), empty lists and all-false masks (data passes through), every element
type, i32/i64/u8 axes, axes fed at run time, and the refusals: a mask of the wrong length or
type, an index list of the wrong type, rank or length (longer than data's rank, which OpenVINO
accepts and the spec does not), and an axis out of range.
"""

import functools

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.movement import reverse

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "boolean")
WHY = {"f64": "the CPU plugin moves f64 as f32", "i64": "the CPU plugin moves i64 as i32 (the extremes)"}


def _case(tag, data, axis, mode, *, const=True, **extra):
    axis = np.asarray(axis).reshape(-1) if np.asarray(axis).ndim == 0 else np.asarray(axis)
    name = f"{mode}-{tag}-{'x'.join(map(str, data.shape))}-{'_'.join(str(int(a)) for a in axis.reshape(-1))}"
    return Case(name, "Reverse", "opset1", [Input("data", data), Input("axis", axis, const=const)], {"mode": mode},
                oracle=functools.partial(reverse, mode=mode), **extra)


def _judge(tag, data):
    if tag not in WHY:
        return {}
    if data.size == 0:
        return {"openvino": "none", "why": WHY[tag] + "; the core reference crashes on empty data"}
    return {"openvino": "reference", "why": WHY[tag]}


def _cases():
    rng = np.random.default_rng(21)
    cases = []
    for tag, dtype in TYPES.items():
        for k, shape in enumerate(harness.shapes(rng, ranks=(1, 2, 3, 4, 5))):
            rank = len(shape)
            data = harness.values(rng, shape, dtype, edges=True, **({"low": -100, "high": 100} if tag[0] in "iu" else {}))
            if k % 2:
                axis = np.array(harness.random_axes(rng, rank), np.int64)
                cases.append(_case(tag, data, axis, "index", **_judge(tag, data)))
            else:
                cases.append(_case(tag, data, rng.integers(0, 2, rank).astype(bool), "mask", **_judge(tag, data)))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases += [
        _case("repeated", x, np.array([1, 1, -2]), "index"),
        _case("none", x, np.zeros(0, np.int64), "index"),
        _case("all-false", x, np.zeros(3, bool), "mask"),
        _case("all", x, np.array([2, 0, 1]), "index"),
        _case("i32", x, np.array([0, -1], np.int32), "index"),
        _case("u8", x, np.array([2], np.uint8), "index"),
        _case("at-runtime", x, np.array([0, 2]), "index", const=False),
        _case("mask-at-runtime", x, np.array([True, False, True]), "mask", const=False),
        _case("scalar", np.float32(3).reshape(()), np.zeros(0, np.int64), "index", openvino="none",
              why="OpenVINO cannot hold the empty axes of a scalar in the test IR"),
    ]
    cases += [
        _case("mask-short", x, np.array([True, False]), "mask", error="reverse-mask-length"),
        _case("mask-short-at-runtime", x, np.array([True, False]), "mask", const=False, error="reverse-mask-length"),
        _case("mask-i64", x, np.array([1, 0, 1]), "mask", error="reverse-mask-type"),
        _case("index-bool", x, np.array([True]), "index", error="axes-type"),
        _case("index-float", x, np.array([1.0], np.float32), "index", error="axes-type"),
        _case("too-many", x, np.array([0, 1, 2, 0]), "index", error="axes-count"),
        _case("too-many-at-runtime", x, np.array([0, 1, 2, 0]), "index", const=False, error="axes-count"),
        _case("out-of-range", x, np.array([3]), "index", error="axis-range"),
        _case("below-range", x, np.array([-4]), "index", error="axis-range"),
        Case("index-scalar", "Reverse", "opset1", [Input("data", x), Input("axis", np.array(1), const=True)],
             {"mode": "index"}, error="axes-vector"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reverse(case):
    harness.check(case, CASES)
