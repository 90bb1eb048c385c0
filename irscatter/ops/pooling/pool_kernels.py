"""The compiled loop of AvgPool's windows that move one element at a time over two axes
(`avg_pool.py`), imported only when numba is used, since importing this module imports numba.
A module-level function, so that numba's disk cache finds it in the next process; it holds no
GIL, so irscatter's threads run their ranges of planes side by side.

The arithmetic is numpy's path's (`avg_pool._shifted_sums`, then the division): each window's
sum is its first tap plus +0.0, then its other taps added in row-major order, each addition
rounded in the compute type (no fused or reordered operations: numba contracts nothing unless
`fastmath` asks, and this function does not), then divided by its window's divisor. A plane
of sums at a time, tap by tap, so that the loop over the plane vectorizes; each sum still takes
its taps in their order.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy")
def window_means(flat, plane, width, offsets, divisors, zero, first, last, out):  # pragma: no cover - compiled
    """out[p, oy, ox] = (flat[b] + zero + flat[b + offsets[1]] + ...) / divisors[oy, ox] with
    b = p * plane + oy * width + ox, for planes p in [first, last): `flat` the zero-padded
    input [planes, padded rows, width] flattened, `offsets` (int64) where each tap stands from
    its window's first element, out [planes, OH, OW]. A plane's sums run over its padded rows
    as one contiguous run, as numpy's shifts do (the columns past a row's last window are
    summed too, and dropped), so that short rows make long loops."""
    rows, columns = out.shape[1], out.shape[2]
    length = (rows - 1) * width + columns  # up to the last window's first element
    sums = np.empty(length, out.dtype)
    for p in range(first, last):
        base = np.uint64(p * plane)
        for j in range(np.uint64(length)):
            sums[j] = flat[base + j] + zero
        for k in range(1, offsets.size):
            at = base + np.uint64(offsets[k])
            for j in range(np.uint64(length)):
                sums[j] = sums[j] + flat[at + j]
        for oy in range(rows):
            line, target, divisor = np.uint64(oy * width), out[p, oy], divisors[oy]
            for ox in range(np.uint64(columns)):
                target[ox] = sums[line + ox] / divisor[ox]
