"""Oracles of the sorting and searching ops (TopK, Unique, Bucketize, SearchSorted, NonZero,
Bincount) and of OneHot: one Python step per element or per comparison, written from the specs.

Values are compared as Python floats or ints (exact for every type the ops take: narrow floats
widen exactly to float). Where the spec leaves a choice open, the oracle makes irscatter's
documented one: NaN above every number (TopK, Unique's sorted order), a NaN equal to nothing
(Unique), equal values in input order.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np


def _num(v):
    """A Python number with the value of one element."""
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if np.asarray(v).dtype.kind in "iu":
        return int(v)
    return float(v)


def _before(a: float, b: float) -> bool:
    """Whether a sorts strictly before b ascending, NaN after every number."""
    if isinstance(a, float) and math.isnan(a):
        return False
    if isinstance(b, float) and math.isnan(b):
        return True
    return a < b


def top_k(data, k, *, axis, mode, sort, index_type=np.int32):
    """Each slice along axis: pairs (value, index), ordered by value (largest first for max),
    ties lower index first; the first k; then by index when sort is "index"."""
    data = np.asarray(data)
    k = int(np.asarray(k).reshape(-1)[0])
    axis = axis % data.ndim
    out_shape = data.shape[:axis] + (k,) + data.shape[axis + 1:]
    values = np.zeros(out_shape, data.dtype)
    indices = np.zeros(out_shape, index_type)
    rest = [range(d) for i, d in enumerate(data.shape) if i != axis]
    for outer in itertools.product(*rest):
        pos = list(outer)
        pairs = []
        for j in range(data.shape[axis]):
            where = tuple(pos[:axis] + [j] + pos[axis:])
            pairs.append((_num(data[where]), j, data[where]))

        def order(p, q):
            if mode == "max":
                first = _before(q[0], p[0])
                second = _before(p[0], q[0])
            else:
                first = _before(p[0], q[0])
                second = _before(q[0], p[0])
            if first:
                return -1
            if second:
                return 1
            return -1 if p[1] < q[1] else 1

        chosen = sorted(pairs, key=functools.cmp_to_key(order))[:k]
        if sort == "index":
            chosen = sorted(chosen, key=lambda p: p[1])
        for j, (_, index, value) in enumerate(chosen):
            where = tuple(pos[:axis] + [j] + pos[axis:])
            values[where] = value
            indices[where] = index
    return values, indices


def unique(data, axis=None, *, sorted_=True, index_type=np.int64, count_type=np.int64):
    """The reference's algorithm, literally: walk the elements (or slices along axis) in order,
    ascending first when sorted (NaN last, stable); each joins the first unique one it equals
    (==, so NaN joins nothing) or becomes a new unique one."""
    data = np.asarray(data)
    if axis is None:
        items = [(i, [data.reshape(-1)[i]]) for i in range(data.size)]
    else:
        ax = int(np.asarray(axis).reshape(-1)[0]) % data.ndim
        items = [(i, list(np.take(data, i, axis=ax).reshape(-1))) for i in range(data.shape[ax])]

    def key_cmp(p, q):
        for a, b in zip(p[1], q[1]):
            a, b = _num(a), _num(b)
            if _before(a, b):
                return -1
            if _before(b, a):
                return 1
        return 0

    walk = sorted(items, key=functools.cmp_to_key(key_cmp)) if sorted_ else list(items)
    uniques: list[list] = []  # [first index, elements, count]
    inverse = [0] * len(items)
    for index, elems in walk:
        for u, entry in enumerate(uniques):
            if all(_num(a) == _num(b) for a, b in zip(entry[1], elems)):
                entry[2] += 1
                inverse[index] = u
                break
        else:
            inverse[index] = len(uniques)
            uniques.append([index, elems, 1])
    first = [u[0] for u in uniques]
    if axis is None:
        values = np.array([data.reshape(-1)[i] for i in first], dtype=data.dtype).reshape(len(first))
    else:
        values = np.take(data, np.array(first, dtype=np.int64), axis=ax)
    return (values, np.array(first, index_type), np.array(inverse, index_type),
            np.array([u[2] for u in uniques], count_type))


def bucketize(data, buckets, *, with_right_bound=True, output_type=np.int64):
    """For each element: how many boundaries lie below it (right bound) or at or below it;
    NaN counts none with the right bound and all without."""
    data = np.asarray(data)
    out = np.zeros(data.shape, output_type)
    bounds = [_num(b) for b in np.asarray(buckets).reshape(-1)]
    for where in np.ndindex(*data.shape):
        v = _num(data[where])
        if isinstance(v, float) and math.isnan(v):
            out[where] = 0 if with_right_bound else len(bounds)
            continue
        out[where] = sum(1 for b in bounds if (b < v if with_right_bound else b <= v))
    return out


def search_sorted(sorted_sequence, values, *, right_mode=False):
    """For each value, the count of entries of its row below it (or at or below it with
    right_mode); a NaN value gives 0."""
    seq = np.asarray(sorted_sequence)
    values = np.asarray(values)
    out = np.zeros(values.shape, np.int64)
    for where in np.ndindex(*values.shape):
        row = seq if seq.ndim == 1 else seq[where[:-1]]
        v = _num(values[where])
        if isinstance(v, float) and math.isnan(v):
            continue
        out[where] = sum(1 for e in row if (_num(e) <= v if right_mode else _num(e) < v))
    return out


def non_zero(data, *, output_type=np.int64):
    """The coordinates of each non-zero element in row-major order, one column each."""
    data = np.asarray(data)
    columns = [list(where) for where in np.ndindex(*data.shape) if _num(data[where]) != 0]
    out = np.zeros((data.ndim, len(columns)), output_type)
    for j, coords in enumerate(columns):
        for i, c in enumerate(coords):
            out[i, j] = c
    return out


def bincount(data, weights=None, *, minlength=0):
    """Bincount-17: a list of max(max(data) + 1, minlength) zeros, then for each value in data
    order one more (or its weight, added in the weights' own type) at its place."""
    values = [int(v) for v in np.asarray(data).reshape(-1)]
    assert all(v >= 0 for v in values), "Bincount counts non-negative values only"
    length = max(max(values) + 1 if values else 0, minlength)
    if weights is None:
        out = [0] * length
        for v in values:
            out[v] += 1
        return np.array(out, dtype=np.int64)
    weights = np.asarray(weights).reshape(-1)
    out = [weights.dtype.type(0)] * length
    with np.errstate(over="ignore", invalid="ignore"):  # integer sums wrap; inf - inf is NaN
        for v, w in zip(values, weights):
            out[v] = weights.dtype.type(out[v] + w)
    return np.array(out, dtype=weights.dtype)


def one_hot(indices, depth, on_value, off_value, *, axis, normalize=False):
    """output[..., i (at axis), ...] = on_value where indices[...] == i, else off_value; with
    normalize, an index in [-depth, -1] counts as index + depth."""
    indices = np.asarray(indices)
    depth = int(np.asarray(depth).reshape(-1)[0])
    axis = axis % (indices.ndim + 1)
    shape = indices.shape[:axis] + (depth,) + indices.shape[axis:]
    out = np.empty(shape, np.asarray(on_value).dtype)
    for where in np.ndindex(*shape):
        i = where[axis]
        index = int(indices[where[:axis] + where[axis + 1:]])
        if normalize and -depth <= index < 0:
            index += depth
        out[where] = on_value if index == i else off_value
    return out
