"""NonZero-3 against OpenVINO's CPU plugin and the oracle: both output types, ranks 1 to 5 with
size-0 dimensions, every numeric type and booleans, sparse data with NaN (non-zero), -0.0
(zero) and denormals. Exact.

A scalar gives the spec's [0, count]; OpenVINO gives [1, count] (see NonZero's doc), so the
scalar cases are held to the oracle alone.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import sorting as oracle

TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64, np.bool_]


def _case(cid, data, output="i64", **kw):
    return Case(cid, "NonZero", "opset3", [Input("data", data)], {"output_type": output},
                oracle=lambda d: oracle.non_zero(d, output_type=np.int32 if output == "i32" else np.int64), **kw)


def _cases():
    rng = np.random.default_rng(3)
    out = []
    n = 0
    for shape in harness.shapes(rng, ranks=(1, 2, 3, 4, 5), max_dim=4):
        for dtype in TYPES:
            n += 1
            data = harness.values(rng, shape, dtype, edges=True)
            if data.size and np.dtype(dtype) != np.bool_:
                data[rng.random(shape) < 0.5] = 0  # sparse
            kw = {}
            if np.dtype(dtype).itemsize == 8 and np.dtype(dtype).kind in "iu":
                kw = dict(openvino="reference", why="the CPU plugin narrows 64-bit integers to 32 bits, so "
                          "-2^63 reads as 0")
            out.append(_case(f"nonzero-{np.dtype(dtype).name}-{'x'.join(map(str, shape))}", data,
                             ("i64", "i32")[n % 2], **kw))
    out.append(_case("nonzero-zeros", np.array([[0.0, -0.0], [0.0, 0.0]], np.float32)))
    out.append(_case("nonzero-spec", np.array([[1, 0], [1, 1]], np.int32)))
    for value in (0.0, 3.0, np.nan):
        out.append(_case(f"nonzero-scalar-{value}", np.array(value, np.float32), openvino="none",
                         why="OpenVINO gives a scalar's coordinates the shape [1, count], the spec [0, count]"))
    return out


CASES = _cases()
ERRORS = [Case("nonzero-err-string", "NonZero", "opset3", [Input("data", np.array(["a", ""], object))],
               error="non-zero-type"),
          Case("nonzero-err-output-type", "NonZero", "opset3", [Input("data", np.zeros(2, np.float32))],
               {"output_type": "i16"}, error="attributes")]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_non_zero(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_non_zero_refused(case):
    harness.check(case, ERRORS)
