"""The values an index, length or count input accepts, as ops declare them (`Op.input_range`)
from the inferred shapes of their inputs, so that drawn inputs are ones the op takes."""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import TensorInfo

Bounds = tuple[int, int]


def extent(info: TensorInfo, axis: int) -> int | None:
    """The size `info` has along `axis` in every run: the static size, or the lower bound of a
    dynamic one when that is above 0. None when the rank, the axis or the size is unknown."""
    shape = info.shape
    if not shape.rank_is_static or not -shape.rank <= axis < shape.rank:
        return None
    dim = shape[axis]
    return dim.min if dim.is_static or dim.min > 0 else None


def indices_within(size: int | None) -> Bounds | None:
    """Indices into an axis of `size`: [0, size-1], which every version of every op takes
    (negative indices are defined by some versions only, and read differently by some
    runtimes). None when the size is unknown or 0 (no index fits)."""
    if size is None or size < 1:
        return None
    return (0, size - 1)


def lengths_within(size: int | None) -> Bounds | None:
    """Lengths of a sequence of `size`: [1, size] (0 is refused or read differently by some
    runtimes, so it is left out unless the sequence is empty)."""
    if size is None:
        return None
    return (min(1, size), size)


def known_value(info: TensorInfo) -> int | None:
    """The first value of a constant integer input (an axis, a depth, a count), None when it is
    not constant (or not of an integer type, which inference refuses elsewhere)."""
    value = None if info.value is None else np.asarray(info.value)
    if value is None or value.size == 0 or value.dtype.kind not in "iu":
        return None
    return int(value.reshape(-1)[0])


def indices_along(data: TensorInfo, axis: TensorInfo) -> Bounds | None:
    """Indices into `data` along the axis a constant `axis` input names (None when it is not
    constant)."""
    a = known_value(axis)
    return None if a is None else indices_within(extent(data, a))


def tuple_components_within(data: TensorInfo, indices: TensorInfo, batch_dims: int) -> Bounds | None:
    """The components of index tuples (the last axis of `indices`, as GatherND and ScatterND
    read them) into `data` after `batch_dims` shared axes: one bound that fits every axis they
    address, the smallest. None when one of those sizes is unknown."""
    depth = extent(indices, -1)
    if depth is None:
        return None
    sizes = [extent(data, a) for a in range(batch_dims, batch_dims + depth)]
    if not sizes or None in sizes:
        return None
    return indices_within(min(s for s in sizes if s is not None))


# A count or size nothing bounds (a OneHot's depth, a Tile's repeats): positive and small, so
# that what it sizes stays small.
SMALL_COUNT: Bounds = (1, 4)
