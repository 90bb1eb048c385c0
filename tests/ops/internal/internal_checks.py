"""What the internal ops' tests share: running an op as a function while holding that its
inputs are not written, and the tolerance each element type is compared with against an f64
transcription of a page."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irscatter.ops.functional import make_op, run_op

BF16 = ml_dtypes.bfloat16
TOLERANCE = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-12, np.dtype(np.float16): 2e-3,
             np.dtype(BF16): 2e-2}


def run_unwritten(cls, arrays, attrs):
    """`cls` run on `arrays` (inference and kernel), its inputs checked to be as they were."""
    kept = [a.copy() for a in arrays]
    out = run_op(make_op(cls, attrs), arrays)
    for before, after in zip(kept, arrays):
        np.testing.assert_array_equal(before, after)
    return out


def assert_close(ours, expected, dtype=None):
    """`ours` within the tolerance of its type (or of `dtype`, the coarser one) of `expected`, NaN where it is NaN."""
    tolerance = max(TOLERANCE[np.dtype(ours.dtype)], TOLERANCE[np.dtype(dtype or ours.dtype)])
    np.testing.assert_allclose(np.asarray(ours, np.float64), expected, rtol=tolerance, atol=tolerance, equal_nan=True)
