"""Oracles of the reductions: ReduceMean-1, ReduceL1-4, ReduceL2-4, ReduceLogicalAnd-1,
ReduceLogicalOr-1 and CumSum-3, one output element per Python step.

Floats are computed with Python floats (f64, `math.fsum` for sums, so the float oracles are the
exact value rounded once) and rounded to the data's type at the end. Integers are Python
integers, wrapped to the element type where the spec's arithmetic in that type wraps (sums), as
OpenVINO's reference does. Each function takes the op's inputs and its attributes by name.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _wrap(value: int, dtype: np.dtype) -> int:
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return (value - int(info.min)) % span + int(info.min)


def _axes(axes: np.ndarray, rank: int) -> set[int]:
    return {int(a) % rank for a in np.asarray(axes).reshape(-1)} if rank else set()


def _out_shape(data: np.ndarray, reduced: set[int], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in reduced else d for i, d in enumerate(data.shape))
    return tuple(d for i, d in enumerate(data.shape) if i not in reduced)


def _reduction(data, axes, keep_dims, one):
    """Apply `one` (a list of the slice's elements -> a value) to every output element's slice."""
    reduced = _axes(axes, data.ndim)
    kept = [i for i in range(data.ndim) if i not in reduced]
    result = np.zeros(_out_shape(data, reduced, keep_dims), dtype=data.dtype)
    for out_index in itertools.product(*(range(d) for d in result.shape)):
        where = dict(zip(kept, [out_index[i] for i in kept] if keep_dims else out_index))
        ranges = [range(d) if i in reduced else [where[i]] for i, d in enumerate(data.shape)]
        result[out_index] = one([data[j] for j in itertools.product(*ranges)])
    return result


def _is_float(data: np.ndarray) -> bool:
    return data.dtype.kind == "f" or data.dtype.name == "bfloat16"


def _fsum(values) -> float:
    values = list(values)
    if any(math.isnan(v) for v in values):
        return math.nan
    if any(math.isinf(v) for v in values):
        signs = {v > 0 for v in values if math.isinf(v)}
        return math.nan if len(signs) == 2 else (math.inf if True in signs else -math.inf)
    return math.fsum(values)


def reduce_mean(data, axes, *, keep_dims=False):
    """The arithmetic mean of each slice; integers: the wrapped sum divided toward zero; 0 when
    the slice is empty."""
    def one(elements):
        if not elements:
            return 0
        if _is_float(data):
            return _fsum(float(e) for e in elements) / len(elements)
        total = _wrap(sum(int(e) for e in elements), data.dtype)
        quotient = abs(total) // len(elements)
        return quotient if total >= 0 else -quotient
    return _reduction(data, axes, keep_dims, one)


def reduce_l1(data, axes, *, keep_dims=False):
    """The sum of |x| over each slice; integers: |x| and the sum wrap in the element type."""
    def one(elements):
        if _is_float(data):
            return _fsum(abs(float(e)) for e in elements)
        return _wrap(sum(_wrap(abs(int(e)), data.dtype) for e in elements), data.dtype)
    return _reduction(data, axes, keep_dims, one)


def reduce_l2(data, axes, *, keep_dims=False):
    """sqrt of the sum of x^2 over each slice, exactly (no intermediate overflow); integers:
    truncated toward zero and saturated to the element type."""
    def one(elements):
        if _is_float(data):
            values = [float(e) for e in elements]
            if any(math.isnan(v) for v in values):
                return math.nan
            if any(math.isinf(v) for v in values):
                return math.inf
            return math.hypot(*values) if values else 0.0
        root = math.isqrt(sum(int(e) ** 2 for e in elements))
        info = np.iinfo(data.dtype)
        return min(root, int(info.max))
    return _reduction(data, axes, keep_dims, one)


def reduce_logical_and(data, axes, *, keep_dims=False):
    return _reduction(data, axes, keep_dims, lambda elements: all(bool(e) for e in elements))


def reduce_logical_or(data, axes, *, keep_dims=False):
    return _reduction(data, axes, keep_dims, lambda elements: any(bool(e) for e in elements))


def cum_sum(data, axis=None, *, exclusive=False, reverse=False):
    """Each element's running sum along `axis`: of the elements before it (after it with
    `reverse`), itself included unless `exclusive`."""
    a = 0 if axis is None else int(np.asarray(axis).reshape(-1)[0]) % data.ndim
    n = data.shape[a]
    result = np.zeros(data.shape, dtype=data.dtype)
    for index in itertools.product(*(range(d) for d in data.shape)):
        k = index[a]
        if reverse:
            positions = range(k + (1 if exclusive else 0), n)
        else:
            positions = range(0, k + (0 if exclusive else 1))
        elements = [data[index[:a] + (j,) + index[a + 1:]] for j in positions]
        if _is_float(data):
            # one addition after another in f32 (the compute type), rounded to the data's type once
            total = np.float32(0) if data.dtype.itemsize < 8 else 0.0
            for e in (elements[::-1] if reverse else elements):
                total = total + (np.float32(e) if data.dtype.itemsize < 8 else float(e))
            result[index] = total
        else:
            result[index] = _wrap(sum(int(e) for e in elements), data.dtype)
    return result
