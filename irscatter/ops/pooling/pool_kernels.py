"""The compiled loop of AvgPool's windows that move one element at a time over two axes
(`avg_pool.py`), imported only when numba is used, since importing this module imports numba.
A module-level function, so that numba's disk cache finds it in the next process; it holds no
GIL, so irscatter's threads run their ranges of planes side by side.

The arithmetic is numpy's path's (`avg_pool._shifted_sums`, then the division): each window's
sum is its first tap plus +0.0, then its other taps added in row-major order, each addition
rounded in the compute type (no fused or reordered operations: numba contracts nothing unless
`fastmath` asks, and this function does not), then divided by its window's divisor. A plane
of sums at a time, tap by tap, so that the loop over the plane vectorizes; each sum still takes
its taps in their order. Each part pads its own planes, one at a time, where numpy's path makes a
padded copy of the whole input first: that copy ran on one core before the parts started, and
its passes over memory cost about as much as the sums.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy")
def window_means(flat, in_rows, in_columns, top, left, padded_rows, width, offsets, divisors, zero, first, last,
                 out):  # pragma: no cover - compiled
    """out[p, oy, ox] = (padded[b] + zero + padded[b + offsets[1]] + ...) / divisors[oy, ox] with
    b = oy * width + ox, for planes p in [first, last): `flat` the input [planes, in_rows,
    in_columns] flattened, `padded` its plane p with `top` rows and `left` columns of zeros
    before, zeros after, [padded_rows, width] flattened (made here, a plane at a time, in a
    buffer that stays in the cache; its zeros are written once); `offsets` (int64) where each tap
    stands from its window's first element there, out [planes, OH, OW]. A plane's sums run over
    its padded rows as one contiguous run, as numpy's shifts do (the columns past a row's last
    window are summed too, and dropped), so that short rows make long loops."""
    rows, columns = out.shape[1], out.shape[2]
    length = (rows - 1) * width + columns  # up to the last window's first element
    padded = np.zeros(padded_rows * width, out.dtype)
    sums = np.empty(length, out.dtype)
    plane = in_rows * in_columns
    for p in range(first, last):
        base = np.uint64(p * plane)
        for r in range(in_rows):
            source, target = base + np.uint64(r * in_columns), np.uint64((top + r) * width + left)
            for c in range(np.uint64(in_columns)):
                padded[target + c] = flat[source + c]
        for j in range(np.uint64(length)):
            sums[j] = padded[j] + zero
        for k in range(1, offsets.size):
            at = np.uint64(offsets[k])
            for j in range(np.uint64(length)):
                sums[j] = sums[j] + padded[at + j]
        for oy in range(rows):
            line, target, divisor = np.uint64(oy * width), out[p, oy], divisors[oy]
            for ox in range(np.uint64(columns)):
                target[ox] = sums[line + ox] / divisor[ox]
