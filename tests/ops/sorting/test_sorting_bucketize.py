"""Bucketize-3 against OpenVINO's CPU plugin and the oracle: both bounds, both output types,
ranks 0 to 5 with size-0 dimensions, data and boundaries of the same and of different numeric
types, values on the boundaries, empty boundaries, infinities and -0.0. Exact.

NaN goes to bucket 0 with the right bound and past the last boundary without it, as OpenVINO
gives (checked against the CPU plugin).
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import sorting as oracle

TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64]
BOUNDS = [np.array([-2, 0, 1, 3], np.float32), np.array([0, 1, 2], np.int32), np.array([], np.float32),
          np.array([-1.5, -0.0, 2.5], np.float64), np.array([1, 2, 3], np.uint8), np.array([-3, 0, 2], np.int64)]


def _case(cid, data, buckets, *, right=True, output="i64", const=True, **kw):
    return Case(cid, "Bucketize", "opset3", [Input("data", data), Input("buckets", buckets, const=const)],
                {"output_type": output, "with_right_bound": right},
                oracle=lambda d, b: oracle.bucketize(d, b, with_right_bound=right,
                                                     output_type=np.int32 if output == "i32" else np.int64), **kw)


def _cases():
    rng = np.random.default_rng(3)
    out = []
    n = 0
    for shape in harness.shapes(rng, ranks=(0, 1, 2, 3, 4, 5), max_dim=4):
        for dtype in TYPES:
            n += 1
            buckets = BOUNDS[n % len(BOUNDS)]
            if np.dtype(dtype).kind == "u":
                data = harness.values(rng, shape, dtype, low=0, high=5)
            else:
                data = harness.values(rng, shape, dtype, low=-4, high=4)
                if np.dtype(dtype).kind == "f":
                    data = (np.round(data.astype(np.float32) * 2) / 2).astype(dtype)  # land on the boundaries
            right = bool(n % 2)
            out.append(_case(f"bucketize-{np.dtype(dtype).name}-{'x'.join(map(str, shape)) or 'scalar'}-"
                             f"{buckets.dtype.name}{len(buckets)}-{'right' if right else 'left'}", data, buckets,
                             right=right, output=("i64", "i32")[(n // 2) % 2], const=n % 3 != 0))
    edges = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -2.0, 3.0, 2.9], np.float32)
    for right in (True, False):
        out.append(_case(f"bucketize-edges-{right}", edges, BOUNDS[0], right=right))
        out.append(_case(f"bucketize-edges-int-bounds-{right}", edges, BOUNDS[5], right=right))
        out.append(_case(f"bucketize-spec-{right}", np.array([[3, 50], [10, -1]], np.int32),
                         np.array([0, 5, 10], np.int32), right=right))
    return out


def _errors():
    f = np.zeros((2, 3), np.float32)
    return [
        Case("bucketize-err-rank", "Bucketize", "opset3", [Input("data", f), Input("buckets", np.zeros((2, 2), np.float32))],
             error="bucketize-buckets-rank"),
        Case("bucketize-err-bool", "Bucketize", "opset3", [Input("data", f > 0), Input("buckets", np.zeros(2, np.float32))],
             error="numeric-type"),
        Case("bucketize-err-bool-buckets", "Bucketize", "opset3",
             [Input("data", f), Input("buckets", np.zeros(2, bool))], error="numeric-type"),
        Case("bucketize-err-output-type", "Bucketize", "opset3",
             [Input("data", f), Input("buckets", np.zeros(2, np.float32))], {"output_type": "f32"}, error="attributes"),
    ]


CASES = _cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bucketize(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_bucketize_refused(case):
    harness.check(case, ERRORS)
