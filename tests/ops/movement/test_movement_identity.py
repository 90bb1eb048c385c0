"""Identity-16 against OpenVINO's CPU plugin: every element type, ranks 0 to 5, size-0
dimensions, edge values; exact. The output never aliases an input the caller still holds."""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input

from irscatter.ops.functional import make_op
from irscatter.ops.movement.identity import Identity

rng = np.random.default_rng(16)
TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64, np.bool_]


def _cases():
    out = []
    for dtype in TYPES:
        for shape in harness.shapes(rng):
            x = harness.values(rng, shape, dtype, edges=True)
            if np.dtype(dtype) == ml_dtypes.bfloat16:  # harness compares bf16 inputs without equal_nan
                x = harness.values(rng, shape, np.float32, edges=True)
                x = np.where(np.isnan(x), 3.0, x).astype(dtype)
            kw = {}
            if dtype == np.int64:  # the CPU plugin runs i64 as i32: extremes in the case below
                x = harness.values(rng, shape, np.int32, edges=True).astype(np.int64)
            out.append(Case(f"identity-{np.dtype(dtype).name}-{shape}", "Identity", "opset16", [Input("x", x)],
                            oracle=lambda a: a.copy(), **kw))
    out.append(Case("identity-int64-extremes", "Identity", "opset16",
                    [Input("x", np.array([-2**63, 2**63 - 1, 0], np.int64))], oracle=lambda a: a.copy(),
                    openvino="none", why="the CPU plugin runs i64 as i32 (2^63 - 1 becomes -1)"))
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_identity(case):
    harness.check(case, CASES)


def test_identity_output_is_its_own_buffer():
    op = make_op(Identity, {})
    x = np.arange(6.0).reshape(2, 3)
    out = op.compute(x)
    assert out is not x and not np.shares_memory(out, x)
    out[0, 0] = 99
    assert x[0, 0] == 0
    assert op.compute(x, inplace=True) is x  # handed over: the buffer itself, no copy
