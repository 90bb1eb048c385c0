"""MaxPool-1, MaxPool-8 and MaxPool-14: the largest value in each window, and from -8 on the
index of that value.

The window geometry (pads, auto_pad, rounding, output size) is in `pooling/core.py`. -8 adds
`dilations` and a second output, the indices, of `index_element_type` (i32 or i64), counted in
the input flattened to 1-D; with `axis` = a, each index is taken modulo the product of the
input's dimensions from a on (axis 2 counts within one channel's spatial grid). -14 adds the
`ceil_torch` rounding. The data may be of any floating-point or integer type.

Which value a window gives, element by element in row-major tap order:

* the largest value among the window's data elements (padding is -inf and is never chosen);
  of equal values the first wins (so of -0.0 and 0.0, whichever comes first), as in OpenVINO;
* NaN is passed over, as OpenVINO does (the spec does not say).
* A window whose data elements are all NaN, or that lies entirely in padding (possible with
  large pads or ceil rounding), gives -inf, the padding's value (the type's minimum for
  integers), and the index of its channel's first element, OpenVINO's index there.

Departure: OpenVINO (its core reference and its CPU plugin) starts each window from the lowest
finite value of the type and takes an element only when it is strictly greater. So a window
whose largest value is -inf gives -3.4028235e38 (in f32; -65504 in f16) instead of -inf, and a
window whose largest value is the lowest finite value (the integer minimum, -3.4028235e38)
gives the channel's first index rather than that element's. irscatter follows the spec: the
spec's padding value is -inf, so a window holding -inf data has -inf as its maximum.
"""

from __future__ import annotations

import functools
import math
from functools import partial
from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IntList, Lower, TensorInfo
from irscatter.ops.common import threads
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.numeric import compute_dtype
from irscatter.ops.pooling.core import (
    Axis,
    FloorCeil,
    Pool,
    PoolAttrs,
    Windows,
    as_windows,
    check_pool_type,
    output_shape,
    padded,
    tap_picks,
)
from irscatter.ops.registry import register

IndexType = Annotated[Literal["i32", "i64"], Lower]


def max_pool(data: np.ndarray, axes: list[Axis]) -> tuple[np.ndarray, np.ndarray]:
    """The window maxima of `data` [N, C, spatial...] and, for each, the flat index of the
    chosen element within its channel's spatial grid.

    One pass per tap of the window (a handful), each over strided views of the padded input: a
    tap replaces the running choice when it is eligible (on the data, not NaN) and either nothing
    was chosen yet or it is strictly greater, so the first of equal maxima stays."""
    etype = ElementType.from_dtype(data.dtype)
    is_float = etype.is_float
    key = data.astype(compute_dtype(etype), copy=False) if is_float else data  # exact: comparisons only
    lowest = np.array(-np.inf if is_float else np.iinfo(data.dtype).min).astype(data.dtype)
    spatial = tuple(ax.size for ax in axes)
    keys, values = padded(key, axes, 0), padded(data, axes, 0)
    inside = padded(np.ones(spatial, dtype=bool), axes, False)
    grid = padded(np.arange(math.prod(spatial), dtype=np.int64).reshape(spatial), axes, 0)
    shape = data.shape[:2] + tuple(ax.out for ax in axes)
    best = np.zeros(shape, dtype=key.dtype)
    value = np.full(shape, lowest, dtype=data.dtype)
    where = np.zeros(shape, dtype=np.int64)
    found = np.zeros(shape, dtype=bool)
    for pick in tap_picks(axes):
        k = keys[pick]
        take = inside[pick] & (~found | (k > best))
        if is_float:
            take &= ~np.isnan(k)
        np.copyto(best, k, where=take)
        np.copyto(value, values[pick], where=take)
        np.copyto(where, np.broadcast_to(grid[pick], shape), where=take)
        found |= take
    return value, where


# What one output element's tap weighs for `threads.parts`: a few strided passes of numpy, which
# a second core speeds up from a network's first pooling (64 channels at 112x112) down to
# poolings of about a tenth of its size.
TAP_WORK = 8


def max_pool_values(data: np.ndarray, axes: list[Axis]) -> np.ndarray:
    """`_window_maxima`, on the thread policy's parts when the output is large: each part a
    block of the first axis before the spatial ones that is longer than one (the channels, or
    the samples). A window lies within one channel of one sample, so a part computes each of
    its windows as one call would."""
    axes = as_windows(axes)
    lead = data.ndim - len(axes)
    shape = data.shape[:lead] + tuple(ax.out for ax in axes)
    taps = math.prod(ax.kernel for ax in axes)
    axis = next((i for i in range(lead) if data.shape[i] > 1), None)
    count = threads.parts(math.prod(shape) * taps * TAP_WORK)
    if axis is None or count == 1:
        return _window_maxima(data, axes)
    out = np.empty(shape, data.dtype)
    before = (slice(None),) * axis

    def part(lo: int, hi: int) -> None:
        block = before + (slice(lo, hi),)
        out[block] = _window_maxima(data[block], axes)
    threads.run([partial(part, lo, hi) for lo, hi in threads.spans(data.shape[axis], count)])
    return out


def _window_maxima(data: np.ndarray, axes: Windows) -> np.ndarray:
    """The window maxima alone, with `max_pool`'s answers, at a fraction of its cost: `fmax`
    (which passes over NaN) over the taps along one spatial axis at a time, the maximum of a box
    being the maximum along each of its sides in turn (kx + ky - 2 passes for a ky x kx window,
    not kx * ky - 1). Then two repairs. A window of NaN only (or of padding only) is -inf. And
    `fmax` may keep either of -0.0 and 0.0, where the first in tap order must win; that can
    only matter when the data holds a -0.0, so only then are the zero maxima re-signed by a
    pass over the taps from last to first."""
    is_float, key_dtype, lowest = _comparison(data.dtype)
    key = data.astype(key_dtype, copy=False)  # exact: comparisons only
    values = padded(key, axes, lowest)
    best = values
    computed = False  # until then, `best` is a view of the caller's data
    lead = data.ndim - len(axes)
    for i, picks in enumerate(axes.axis_picks):
        before = (slice(None),) * (lead + i)
        taps = [best[before + (pick,)] for pick in picks]
        if len(taps) == 1:
            best = taps[0]
            continue
        best = np.fmax(taps[0], taps[1])
        computed = True
        for tap in taps[2:]:
            np.fmax(best, tap, out=best)
    if not computed:  # a window of one tap along every axis
        best = np.array(best, dtype=key_dtype)
    if is_float:
        np.fmax(best, lowest, out=best)  # all NaN gives NaN: -inf in its place, all else stays
        if _holds_negative_zero(key):
            zero = best == 0
            for pick in reversed(axes.picks):
                tap = values[pick]
                np.copyto(best, tap, where=zero & (tap == 0))
    return best.astype(data.dtype, copy=False)


@functools.lru_cache(maxsize=64)
def _comparison(dtype: np.dtype) -> tuple[bool, np.dtype, np.generic]:
    """Whether `dtype` holds floats, the dtype its values are compared in, and the value of an
    empty window (-inf, or the integer minimum) in that dtype."""
    etype = ElementType.from_dtype(dtype)
    key = np.dtype(compute_dtype(etype)) if etype.is_float else np.dtype(dtype)
    lowest = key.type(-np.inf) if etype.is_float else key.type(np.iinfo(key).min)
    return etype.is_float, key, lowest


def _holds_negative_zero(array: np.ndarray) -> bool:
    """Whether a float32 or float64 array holds a -0.0. Seen as signed integers of its width,
    -0.0 (the sign bit alone) is the integer minimum and every other value is above it, so one
    reduction answers, with no array of comparisons."""
    signed = np.dtype(np.int32 if array.dtype == np.float32 else np.int64)
    return array.size > 0 and int(np.minimum.reduce(array.view(signed), axis=None)) == np.iinfo(signed).min


class MaxPool1Attrs(FloorCeil):
    pass


@register("MaxPool", 1)
class MaxPool(Pool):
    """MaxPool-1: the window maxima (no dilations, no indices output)."""

    Attrs = MaxPool1Attrs

    def infer(self, data: TensorInfo) -> TensorInfo:
        check_pool_type(self, data.etype, integers=True)
        return TensorInfo(data.etype, output_shape(self, data, self.dilations()))

    def compute(self, data: np.ndarray) -> np.ndarray:
        return max_pool_values(data, self.axes(data))


class IndexedPoolAttrs(PoolAttrs):
    """MaxPool-14's attributes, and MaxPool-8's but for the rounding type ceil_torch."""

    dilations: IntList = ()  # empty: 1 along every axis
    index_element_type: IndexType = "i64"
    axis: int = 0


class MaxPool8Attrs(FloorCeil, IndexedPoolAttrs):
    pass


@register("MaxPool", 8)
class MaxPool8(Pool):
    """MaxPool-8: dilations, and the indices of the maxima as a second output."""

    Attrs: ClassVar[type[IndexedPoolAttrs]] = MaxPool8Attrs
    attrs: IndexedPoolAttrs
    outputs = 2
    skips_unused_outputs = True

    def dilations(self) -> tuple[int, ...]:
        return self.attrs.dilations or super().dilations()

    def infer(self, data: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        check_pool_type(self, data.etype, integers=True)
        shape = output_shape(self, data, self.dilations())
        if data.shape.rank_is_static:
            normalized_axis(self.attrs.axis, data.shape.rank, port=self.port("axis"))
        return TensorInfo(data.etype, shape), TensorInfo(ElementType[self.attrs.index_element_type], shape)

    def compute(self, data: np.ndarray, unused: frozenset[int] = frozenset()) -> tuple[np.ndarray, np.ndarray | None]:
        if 1 in unused:
            return max_pool_values(data, self.axes(data)), None
        values, where = max_pool(data, self.axes(data))
        n, c = data.shape[:2]
        grid = math.prod(data.shape[2:])
        channel = np.arange(n * c, dtype=np.int64).reshape((n, c) + (1,) * (data.ndim - 2))
        index = channel * grid + where
        axis = normalized_axis(self.attrs.axis, data.ndim, port=self.port("axis"))
        bound = math.prod(data.shape[axis:])
        if axis and bound:  # no bound over an empty input: every index there is 0
            index = index % bound
        return values, index.astype(ElementType[self.attrs.index_element_type].dtype)


@register("MaxPool", 14)
class MaxPool14(MaxPool8):
    """MaxPool-14: MaxPool-8 with the ceil_torch rounding."""

    Attrs = IndexedPoolAttrs
