"""Atan2-17 against the oracle of `oracles.elementwise` (Python's math.atan2 per element, C's
atan2, rounded once to the output type).

The pinned OpenVINO does not ship Atan2 (a draft of opset17), so no case is judged by it; its
newer core reference is std::atan2 per element as well (in f32 for f16 and bf16).

Covered: f32, f16, bf16, f64 and an f8 type; every auto_broadcast value (numpy, pdpd, none)
and the default; ranks 0 to 5 with a size-0 dimension; the quadrants, signed zeros, infinities
and NaN on either side. Errors: integer inputs (float-type), inputs of two types
(same-element-type), shapes that do not broadcast (broadcast), an unknown auto_broadcast
(attributes).
"""

from __future__ import annotations

import itertools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import elementwise as oracle

WHY = "OpenVINO 2026.4.1 does not ship Atan2 (a draft of opset17): the oracle is the page's C atan2"
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5]


def _case(cid, y, x, attrs=None, *, error=None, const=False):
    return Case(cid, "Atan2", "opset17", [Input("y", y, const=const), Input("x", x)], attrs or {},
                oracle=oracle.binary("Atan2"), openvino="none", why=WHY, error=error)


def _cases() -> list[Case]:
    rng = np.random.default_rng(17)
    out = []
    pairs = np.array(list(itertools.product(SPECIAL, SPECIAL))).T  # every special value against every other
    for t in FLOATS:
        name = np.dtype(t).name
        out.append(_case(f"{name}-specials", pairs[0].astype(t), pairs[1].astype(t), {"auto_broadcast": "none"}))
        for shape in harness.shapes(rng, ranks=(0, 1, 2, 3, 4, 5), max_dim=3):
            y = harness.values(rng, shape, t, edges=True)
            x = harness.values(rng, shape[1:], t, edges=True)  # numpy broadcasting over the leading axis
            out.append(_case(f"{name}-{shape}", y, x))
    out += [
        _case("numpy-both-ways", harness.values(rng, (2, 1, 3, 1), np.float32), harness.values(rng, (4, 1, 5), np.float32),
              {"auto_broadcast": "numpy"}),
        _case("pdpd", harness.values(rng, (2, 3, 4), np.float32), harness.values(rng, (3, 1), np.float32),
              {"auto_broadcast": "pdpd"}, const=True),
        _case("f8e5m2", pairs[0].astype(ml_dtypes.float8_e5m2), pairs[1].astype(ml_dtypes.float8_e5m2)),
        _case("integers", np.array([1, -1], np.int32), np.array([1, 1], np.int32), error="float-type"),
        _case("two-types", np.ones(2, np.float32), np.ones(2, np.float16), error="same-element-type"),
        _case("none-differing-shapes", np.ones((2, 3), np.float32), np.ones(3, np.float32), {"auto_broadcast": "none"},
              error="broadcast"),
        _case("no-broadcast", np.ones((2, 3), np.float32), np.ones(2, np.float32), error="broadcast"),
        _case("bad-broadcast-name", np.ones(2, np.float32), np.ones(2, np.float32), {"auto_broadcast": "explicit"},
              error="attributes"),
    ]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_atan2(case):
    harness.check(case, CASES)


def test_quadrants_and_signed_zeros_as_the_page_and_c_define_them():
    from irscatter.ops.elementwise.binary import atan2

    y = np.array([1, 1, -1, -1, 0.0, -0.0, 0.0, -0.0, np.inf, -np.inf], np.float64)
    x = np.array([1, -1, -1, 1, 0.0, 0.0, -0.0, -0.0, np.inf, -np.inf], np.float64)
    got = atan2(y, x)
    pi = np.pi
    assert got.tolist() == [pi / 4, 3 * pi / 4, -3 * pi / 4, -pi / 4, 0.0, -0.0, pi, -pi, pi / 4, -3 * pi / 4]
    assert np.signbit(got[[4, 5]]).tolist() == [False, True]
    assert np.abs(atan2(harness.values(np.random.default_rng(0), (50,), np.float32, high=1e30, low=-1e30),
                        np.float32(-1e-30))).max() <= np.float32(np.pi)  # within [-pi, pi] as rounded
