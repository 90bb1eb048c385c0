"""Kernels on tensors of many axes, within numpy's own limits.

numpy holds an array of at most 64 dimensions, indexes with at most 63 index arrays at once and
ravels at most 32 coordinates; inference holds every tensor of a model to 64 dimensions. Some
kernels work on arrays of more axes than their inputs have (a block op splits each axis in two),
or index along every axis. What makes that safe: an axis of extent 1 holds nothing to move or
pick, and a tensor within the size limits has few axes longer than 1 (each doubles its size at
least). These helpers leave the axes of extent 1 out before numpy sees them, and put them back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def regroup(data: np.ndarray, split: Sequence[int], order: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """`data` read as the shape `split`, its axes put in `order`, and read as `shape`: the
    block ops' split, transpose and join, without the axes of extent 1 of `split`."""
    kept = [a for a in range(len(split)) if split[a] != 1]
    position = {a: i for i, a in enumerate(kept)}
    grouped = data.reshape([split[a] for a in kept])
    return grouped.transpose([position[a] for a in order if split[a] != 1]).reshape(shape)


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """`np.broadcast_shapes` for shapes of any rank (numpy's takes at most 32 dimensions); a
    ValueError when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        for axis, n in enumerate(shape, start=rank - len(shape)):
            if n != out[axis]:
                if out[axis] != 1 and n != 1:
                    raise ValueError(f"shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast")
                out[axis] = n if out[axis] == 1 else out[axis]
    return tuple(out)


def take_along(data: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """`np.take_along_axis(data, indices, axis)` for inputs of the same rank, of any rank."""
    # the broadcast shape of the two (np.broadcast_shapes takes at most 32 dimensions)
    shape = [m if a == axis or n == 1 else n for a, (n, m) in enumerate(zip(data.shape, indices.shape))]
    kept = [a for a in range(data.ndim) if a == axis or data.shape[a] != 1 or indices.shape[a] != 1]
    picked = np.take_along_axis(data.reshape([data.shape[a] for a in kept]),
                                indices.reshape([indices.shape[a] for a in kept]), axis=kept.index(axis))
    return picked.reshape(shape)


def flat_positions(coordinates: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The row-major flat position of each coordinate tuple (the last axis of `coordinates`,
    each within `shape`): `np.ravel_multi_index` for any number of axes."""
    strides = np.array([math.prod(shape[a + 1:]) for a in range(len(shape))], np.int64)
    return coordinates.astype(np.int64, copy=False) @ strides


def pick_along_each_axis(data: np.ndarray, positions: Sequence[np.ndarray]) -> np.ndarray:
    """`data[np.ix_(*positions)]` (a new array) for any rank."""
    if data.ndim <= _FEW_AXES:
        return data[np.ix_(*positions)]
    # Past numpy's count of index arrays: each axis is picked from in turn, and on all but a
    # few of them the positions are all of it in order, which moves nothing.
    out = data
    for axis, (n, p) in enumerate(zip(data.shape, positions)):
        if not (len(p) == n and np.array_equal(p, np.arange(n))):
            out = np.take(out, p, axis=axis)
    return out if out is not data else data.copy()


_FEW_AXES = 32
