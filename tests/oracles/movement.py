"""Oracles of the movement ops: Split-1, VariadicSplit-1, Tile-1, Pad-1/-12, Reverse-1,
ReverseSequence-1 and Roll-7, each one output element per Python step, read off the spec.

Every oracle takes numpy arrays (and the layer's attributes as keywords) and returns the
output array, or a tuple of them for the splits. Inputs are read, never written.
"""

from __future__ import annotations

import itertools

import numpy as np


def _positions(shape):
    return itertools.product(*(range(d) for d in shape))


def _axis(axis, rank):
    a = int(np.asarray(axis).reshape(-1)[0])
    return a + rank if a < 0 else a


def variadic_split(data, axis, split_lengths):
    """Part i holds the split_lengths[i] positions along `axis` that follow the earlier parts'."""
    a = _axis(axis, data.ndim)
    lengths = [int(n) for n in np.asarray(split_lengths).reshape(-1)]
    if -1 in lengths:
        lengths[lengths.index(-1)] = data.shape[a] - sum(n for n in lengths if n != -1)
    parts, start = [], 0
    for n in lengths:
        shape = list(data.shape)
        shape[a] = n
        out = np.empty(shape, data.dtype)
        for pos in _positions(shape):
            source = list(pos)
            source[a] += start
            out[pos] = data[tuple(source)]
        parts.append(out)
        start += n
    return tuple(parts)


def split(data, axis, *, num_splits):
    """num_splits parts of data.shape[axis] / num_splits positions each."""
    a = _axis(axis, data.ndim)
    return variadic_split(data, axis, [data.shape[a] // num_splits] * num_splits)


def tile(data, repeats):
    """Output position p copies data[p mod shape], after data and repeats are promoted to one rank."""
    reps = [max(int(r), 0) for r in np.asarray(repeats).reshape(-1)]
    rank = max(data.ndim, len(reps))
    shape = [1] * (rank - data.ndim) + list(data.shape)
    reps = [1] * (rank - len(reps)) + reps
    promoted = data.reshape(shape)
    out_shape = [d * r for d, r in zip(shape, reps)]
    out = np.empty(out_shape, data.dtype)
    for pos in _positions(out_shape):
        out[pos] = promoted[tuple(p % d for p, d in zip(pos, shape))]
    return out


def _pad_source(s, n, mode):
    """The data position output source position s reads in `mode`, or None for the pad value."""
    if 0 <= s < n:
        return s
    if mode == "constant":
        return None
    if mode == "edge":
        return 0 if s < 0 else n - 1
    if mode == "reflect":  # mirrored about 0 and n-1, the edge element not repeated
        return -s if s < 0 else 2 * (n - 1) - s
    return -s - 1 if s < 0 else 2 * n - 1 - s  # symmetric: the edge element repeated


def pad(data, pads_begin, pads_end, pad_value=None, *, pad_mode):
    """Output position j of axis D reads source position j - pads_begin[D] by the mode's rule."""
    begin = [int(p) for p in np.asarray(pads_begin).reshape(-1)]
    end = [int(p) for p in np.asarray(pads_end).reshape(-1)]
    value = data.dtype.type(0) if pad_value is None else np.asarray(pad_value).reshape(-1)[0]
    out_shape = [max(b + n + e, 0) for n, b, e in zip(data.shape, begin, end)]
    out = np.empty(out_shape, data.dtype)
    for pos in _positions(out_shape):
        source = [_pad_source(j - b, n, pad_mode) for j, b, n in zip(pos, begin, data.shape)]
        out[pos] = value if None in source else data[tuple(source)]
    return out


def reverse(data, axis, *, mode):
    """Position p reads the mirrored position along every reversed axis."""
    flags = np.asarray(axis).reshape(-1)
    if mode == "mask":
        axes = {i for i, f in enumerate(flags) if f}
    else:
        axes = {int(a) + data.ndim if int(a) < 0 else int(a) for a in flags}
    out = np.empty_like(data)
    for pos in _positions(data.shape):
        out[pos] = data[tuple(data.shape[i] - 1 - p if i in axes else p for i, p in enumerate(pos))]
    return out


def reverse_sequence(data, seq_lengths, *, batch_axis=0, seq_axis=1):
    """For batch index i, the first seq_lengths[i] positions along seq_axis in reverse order."""
    b, s = batch_axis % data.ndim, seq_axis % data.ndim
    lengths = [int(v) for v in np.asarray(seq_lengths).reshape(-1)]  # int() truncates a float
    out = np.empty_like(data)
    for pos in _positions(data.shape):
        n = lengths[pos[b]]
        source = list(pos)
        if pos[s] < n:
            source[s] = n - 1 - pos[s]
        out[pos] = data[tuple(source)]
    return out


def roll(data, shift, axes):
    """Position p of each rolled axis reads position (p - total shift) mod its length."""
    listed = [int(a) for a in np.asarray(axes).reshape(-1)]
    amounts = [int(k) for k in np.asarray(shift).reshape(-1)]
    if np.asarray(shift).ndim == 0:
        amounts = amounts * len(listed)
    total = [0] * data.ndim
    for a, k in zip(listed, amounts):
        total[a + data.ndim if a < 0 else a] += k
    out = np.empty_like(data)
    for pos in _positions(data.shape):
        out[pos] = data[tuple((p - k) % n for p, k, n in zip(pos, total, data.shape))]
    return out
