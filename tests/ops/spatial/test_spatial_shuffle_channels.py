"""ShuffleChannels-1 against OpenVINO's CPU plugin and `oracles.spatial.shuffle_channels`.

Exact (a permutation). Ranks 1 to 5, every axis written positively and negatively, groups
dividing the channel axis (1, the whole axis and between), size-0 axes, the numeric element
types with edge values, and the refusals: a scalar, an axis out of range, a group below 1 or
not dividing the channel axis, boolean data (the spec's T is numeric).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.spatial import shuffle_channels

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u16")
# The CPU plugin narrows i64 to i32 and f64 to f32 (and past f32's range to its largest value);
# OpenVINO's core reference moves the bytes.
JUDGE = {"i64": {"openvino": "reference", "why": "the CPU plugin computes i64 in i32"},
         "f64": {"openvino": "reference", "why": "the CPU plugin computes f64 in f32"}}


def _case(name, x, axis, group, **extra):
    return Case(name, "ShuffleChannels", "opset1", [Input("data", x)], {"axis": axis, "group": group},
                oracle=lambda a: shuffle_channels(a, axis, group), **extra)


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def _cases():
    rng = np.random.default_rng(23)
    cases = []
    for k, (tag, dtype) in enumerate(TYPES.items()):
        for rank in range(1, 6):
            shape = [int(d) for d in rng.integers(1, 4, rank)]
            axis = int(rng.integers(-rank, rank))
            shape[axis] = int(rng.choice([4, 6, 12]))
            group = int(rng.choice(_divisors(shape[axis])))
            x = harness.values(rng, shape, dtype, edges=True)
            cases.append(_case(f"shuffle-{tag}-r{rank}-axis{axis}-g{group}", x, axis, group, **JUDGE.get(tag, {})))
    cases.append(_case("shuffle-spec", harness.values(rng, (5, 12, 20, 40), np.float32), 1, 3))
    cases.append(_case("shuffle-defaults", harness.values(rng, (2, 6, 3), np.float32), 1, 1))
    cases.append(_case("shuffle-whole-axis", harness.values(rng, (2, 6), np.int32), 1, 6))
    cases.append(_case("shuffle-empty", np.zeros((0, 6, 2), np.float32), 1, 2))
    cases.append(_case("shuffle-empty-channels", np.zeros((2, 0, 2), np.float32), 1, 2))
    f = np.ones((2, 6, 3), np.float32)
    for name, x, attrs, label in [
        ("scalar", np.array(1.0, np.float32), {"axis": 0, "group": 1}, "data-rank"),
        ("axis", f, {"axis": 3, "group": 1}, "axis-range"),
        ("axis-negative", f, {"axis": -4, "group": 1}, "axis-range"),
        ("group-zero", f, {"axis": 1, "group": 0}, "shuffle-group"),
        ("group-indivisible", f, {"axis": 1, "group": 4}, "shuffle-group"),
        ("boolean", f > 0, {"axis": 1, "group": 2}, "numeric-type"),
    ]:
        cases.append(Case(f"shuffle-refuses-{name}", "ShuffleChannels", "opset1", [Input("data", x)], attrs,
                          error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_shuffle_channels(case):
    harness.check(case, CASES)


def test_an_empty_input_with_a_group_of_any_size():
    """Zero channels split into any number of groups: nothing to move, and no reshape to a
    group count numpy cannot hold."""
    from irscatter.ops.functional import call
    from irscatter.ops.spatial.shuffle_channels import ShuffleChannels

    data = np.zeros((4, 0, 0, 3, 2), np.float32)
    out = call(ShuffleChannels, [data], {"axis": 1, "group": 2**63 - 1})
    assert out.shape == data.shape and out.dtype == data.dtype and not np.shares_memory(out, data)
