"""The compiled passes of GroupNormalization (`group_normalization.py`) and MVN (`mvn.py`), imported
only when numba is used, since importing this module imports numba. Module-level functions, so that numba's disk
cache finds them in the next process; they hold no GIL, so irscatter's threads run their ranges
of channels side by side.

They do the element-wise arithmetic of the numpy path, operation for operation in the compute
type (each result rounded, no fused multiply-add: numba contracts nothing unless `fastmath`
asks, and these functions do not): the difference from the mean, its square, and
((x - mean) / std) * scale + bias, or MVN's (x - mean) / std. The sums stay numpy's (its pairwise order), taken over the
arrays these passes write. Where numpy makes the difference once and keeps it, the second pass
makes it again from the input: the same operation on the same values, so the same bits. The one
exception, `standardized_across`, sums as numpy sums the layout it takes (one channel after
another), since there numpy's sums are not pairwise.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy")
def centred_squares(rows, means, squares):  # pragma: no cover - compiled
    """squares[r] = (rows[r] - means[r])^2, for rows [channels, elements of a channel], each with
    its group's mean."""
    for r in range(rows.shape[0]):
        mean, row, target = means[r], rows[r], squares[r]
        for j in range(row.size):
            centred = row[j] - mean
            target[j] = centred * centred


@numba.njit(nogil=True, cache=True, error_model="numpy")
def normalized(rows, means, deviations, scale, bias, first, out):  # pragma: no cover - compiled
    """out[r] = ((rows[r] - means[r]) / deviations[r]) * scale[c] + bias[c], for rows [channels,
    elements of a channel] from row `first` on, each with its group's mean and deviation; c is
    the row's channel, (first + r) modulo the channels."""
    channels = scale.size
    for r in range(rows.shape[0]):
        c = (first + r) % channels
        mean, deviation, s, b, row, target = means[r], deviations[r], scale[c], bias[c], rows[r], out[r]
        for j in range(row.size):
            target[j] = ((row[j] - mean) / deviation) * s + b


@numba.njit(nogil=True, cache=True, error_model="numpy")
def standardized(rows, means, deviations, out):  # pragma: no cover - compiled
    """out[r] = (rows[r] - means[r]) / deviations[r] (MVN's, the deviation with its epsilon)."""
    for r in range(rows.shape[0]):
        mean, deviation, row, target = means[r], deviations[r], rows[r], out[r]
        for j in range(row.size):
            target[j] = (row[j] - mean) / deviation


@numba.njit(nogil=True, cache=True, error_model="numpy")
def standardized_across(x, out, first, last, epsilon, inside_sqrt):  # pragma: no cover - compiled
    """MVN over axis 1 of x [samples, channels, positions] (a channels-last view's memory), for
    positions [first, last): out = (x - mean) / deviation, each position's sums taken channel by
    channel in order, as numpy's reduction of that view takes them (see `mvn._across`)."""
    count = x.dtype.type(x.shape[1])
    e = x.dtype.type(epsilon)
    width = last - first
    sums = np.empty(width, x.dtype)
    squares = np.empty(width, x.dtype)
    for i in range(x.shape[0]):
        sample, target = x[i], out[i]
        for q in range(width):
            sums[q] = sample[0, first + q]
        for k in range(1, x.shape[1]):
            for q in range(width):
                sums[q] = sums[q] + sample[k, first + q]
        for q in range(width):
            sums[q] = sums[q] / count  # (the means from here on)
            centred = sample[0, first + q] - sums[q]
            squares[q] = centred * centred
        for k in range(1, x.shape[1]):
            for q in range(width):
                centred = sample[k, first + q] - sums[q]
                squares[q] = squares[q] + centred * centred
        for q in range(width):
            variance = squares[q] / count
            squares[q] = np.sqrt(variance + e) if inside_sqrt else np.sqrt(variance) + e  # (the deviations)
        for k in range(x.shape[1]):
            for q in range(width):
                target[k, first + q] = (sample[k, first + q] - sums[q]) / squares[q]
