"""Oracles of the pooling family: MaxPool-1/-8/-14, AvgPool-1/-14/-16, AdaptiveAvgPool-8 and
AdaptiveMaxPool-8, one output element per Python step.

The window geometry is written out again here from the spec's formulas (and OpenVINO's for
auto_pad same_*, see `irscatter/ops/pooling/core.py`), not imported: an output position o
along an axis starts at o * stride - pad_begin, and its taps lie `dilation` apart.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np


def pool_geometry(spatial, kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding):
    """Per spatial axis: (pad_begin, output size)."""
    result = []
    for i, size in enumerate(spatial):
        k, s, d = kernel[i], strides[i], dilations[i]
        span = (k - 1) * d + 1
        if auto_pad in ("same_upper", "same_lower"):
            out = math.ceil(size / s)
            total = max(0, (out - 1) * s + span - size)
            begin = total // 2 if auto_pad == "same_upper" else total - total // 2
            end = total - begin
        elif auto_pad == "valid":
            begin = end = 0
        else:
            begin, end = (pads_begin[i] if pads_begin else 0), (pads_end[i] if pads_end else 0)
        room = Fraction(size + begin + end - span, s)
        if rounding == "floor":
            out = math.floor(room) + 1
        else:
            out = math.ceil(room) + 1
            if rounding == "ceil_torch" and (out - 1) * s >= size + begin and size + begin > 0:
                out -= 1  # the last window would start in the end padding
        result.append((begin, end, out))
    return result


def _taps(position, geometry, kernel, strides, dilations, spatial):
    """The taps of the window at output `position`, row-major: (coordinate or None if padding)."""
    for offsets in itertools.product(*(range(k) for k in kernel)):
        coord = tuple(o * s - g[0] + j * d for o, s, g, j, d in zip(position, strides, geometry, offsets, dilations))
        yield coord if all(0 <= c < n for c, n in zip(coord, spatial)) else None


def max_pool(x, kernel, strides, pads_begin=(), pads_end=(), dilations=None, rounding="floor", auto_pad="explicit",
             axis=0, openvino=False):
    """Values and indices of MaxPool: per window the first largest non-NaN data element; -inf
    (the integer minimum) and the channel's first index for a window without one.

    With `openvino`, OpenVINO's reference instead: start from the type's lowest finite value
    and index 0, take an element only when strictly greater (used to tell where they differ)."""
    spatial = x.shape[2:]
    dilations = dilations or [1] * len(kernel)
    geometry = pool_geometry(spatial, kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding)
    out_shape = x.shape[:2] + tuple(g[2] for g in geometry)
    values = np.zeros(out_shape, x.dtype)
    indices = np.zeros(out_shape, np.int64)
    is_float = x.dtype.kind not in "iu"
    lowest = float(ml_dtypes.finfo(x.dtype).min) if openvino and is_float else -math.inf
    grid = math.prod(spatial)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for position in itertools.product(*(range(g[2]) for g in geometry)):
                best, best_at, raw = None, None, None
                if openvino:
                    best = lowest if is_float else int(np.iinfo(x.dtype).min)
                    best_at, raw = 0, best
                for coord in _taps(position, geometry, kernel, strides, dilations, spatial):
                    if coord is None:
                        continue
                    v = float(x[(n, c) + coord]) if is_float else int(x[(n, c) + coord])
                    if is_float and math.isnan(v):
                        continue
                    if best is None or v > best:  # strictly greater: the first of equal values stays
                        best, best_at, raw = v, int(np.ravel_multi_index(coord, spatial)), x[(n, c) + coord]
                if best is None:
                    best_at, raw = 0, (-math.inf if is_float else np.iinfo(x.dtype).min)
                with np.errstate(over="ignore"):  # OpenVINO's f32 lowest is -inf in f16
                    values[(n, c) + position] = raw
                index = (n * x.shape[1] + c) * grid + best_at
                if axis and math.prod(x.shape[axis:]):
                    index %= math.prod(x.shape[axis:])
                indices[(n, c) + position] = index
    return values, indices


def avg_pool(x, kernel, strides, exclude_pad, pads_begin=(), pads_end=(), dilations=None, rounding="floor",
             auto_pad="explicit"):
    """AvgPool: the sum of the window's data elements over the count the module doc of
    `irscatter/ops/pooling/avg_pool.py` states; 0 for a window with nothing to count. Floats
    sum exactly (math.fsum) and round once; integers round the exact mean half to even."""
    spatial = x.shape[2:]
    dilations = dilations or [1] * len(kernel)
    geometry = pool_geometry(spatial, kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding)
    any_pad = any(g[0] or g[1] for g in geometry)
    out = np.zeros(x.shape[:2] + tuple(g[2] for g in geometry), x.dtype)
    is_float = x.dtype.kind not in "iu"
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for position in itertools.product(*(range(g[2]) for g in geometry)):
                taken, count = [], 0
                for coord in _taps(position, geometry, kernel, strides, dilations, spatial):
                    if coord is not None:
                        taken.append(float(x[(n, c) + coord]) if is_float else int(x[(n, c) + coord]))
                    if coord is not None or (any_pad and not exclude_pad):
                        count += 1
                if count == 0:
                    continue
                if is_float:
                    finite = all(math.isfinite(v) for v in taken)
                    with np.errstate(invalid="ignore"):
                        total = math.fsum(taken) if finite else float(np.sum(np.array(taken, np.float64)))
                    out[(n, c) + position] = np.float64(total / count)
                else:
                    out[(n, c) + position] = round(Fraction(sum(taken), count))
    return out


def _bin(i, size, out):
    return (i * size) // out, math.ceil(Fraction((i + 1) * size, out))


def adaptive_avg_pool(x, output_size):
    """The mean of each bin [floor(i*n/m), ceil((i+1)*n/m)) per axis, summed exactly, rounded once."""
    sizes = [int(v) for v in np.asarray(output_size).reshape(-1)]
    spatial = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(sizes), x.dtype)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for position in itertools.product(*(range(m) for m in sizes)):
                ranges = [range(*_bin(i, size, m)) for i, size, m in zip(position, spatial, sizes)]
                taken = [float(x[(n, c) + coord]) for coord in itertools.product(*ranges)]
                with np.errstate(invalid="ignore"):  # inf - inf
                    total = math.fsum(taken) if all(math.isfinite(v) for v in taken) else \
                        float(np.sum(np.array(taken, np.float64)))
                out[(n, c) + position] = np.float64(total / len(taken))
    return out


def adaptive_max_pool(x, output_size):
    """Per bin, std::max_element in row-major order (OpenVINO's CPU plugin): the first element to
    start, a later one taken when strictly greater (so NaN only as the first element)."""
    sizes = [int(v) for v in np.asarray(output_size).reshape(-1)]
    spatial = x.shape[2:]
    values = np.zeros(x.shape[:2] + tuple(sizes), x.dtype)
    indices = np.zeros(values.shape, np.int64)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            plane = x[n, c].astype(np.float64)
            for position in itertools.product(*(range(m) for m in sizes)):
                ranges = [range(*_bin(i, size, m)) for i, size, m in zip(position, spatial, sizes)]
                best = None
                for coord in itertools.product(*ranges):
                    if best is None or plane[coord] > plane[best]:
                        best = coord
                values[(n, c) + position] = x[(n, c) + best]
                indices[(n, c) + position] = np.ravel_multi_index(best, spatial)
    return values, indices
