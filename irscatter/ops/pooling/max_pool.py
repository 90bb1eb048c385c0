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

import math
from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IntList, Lower, TensorInfo
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.numeric import compute_dtype
from irscatter.ops.pooling.core import (
    Axis,
    Pool,
    PoolAttrs,
    TorchRounding,
    check_pool_type,
    flat_windows,
    in_data,
    output_shape,
    padded,
)
from irscatter.ops.registry import register

IndexType = Annotated[Literal["i32", "i64"], Lower]


def max_pool(data: np.ndarray, axes: list[Axis]) -> tuple[np.ndarray, np.ndarray]:
    """The window maxima of `data` [N, C, spatial...] and, for each, the flat index of the
    chosen element within its channel's spatial grid."""
    etype = ElementType.from_dtype(data.dtype)
    is_float = etype.is_float
    if is_float:
        work = data.astype(compute_dtype(etype), copy=False)  # exact: comparisons only
        nan = np.isnan(work)
        key = np.where(nan, -np.inf, work)
        lowest = -np.inf
    else:
        key, lowest = data, np.iinfo(data.dtype).min
    taps = flat_windows(padded(key, axes, lowest), axes)  # [N, C, out..., taps]
    eligible = in_data(axes)  # padding is never chosen
    if is_float:
        eligible = eligible & ~flat_windows(padded(nan, axes, False), axes)
    best = taps.max(axis=-1, keepdims=True)
    chosen = eligible & (taps == best)
    found = chosen.any(axis=-1)
    tap = chosen.argmax(axis=-1)[..., None]  # the first of equal maxima
    values = np.take_along_axis(flat_windows(padded(data, axes, 0), axes), tap, axis=-1)[..., 0]
    values = np.where(found, values, np.array(lowest).astype(data.dtype))
    grid = np.arange(math.prod(ax.size for ax in axes), dtype=np.int64).reshape([ax.size for ax in axes])
    where = flat_windows(padded(grid, axes, 0), axes)
    where = np.take_along_axis(np.broadcast_to(where, chosen.shape), tap, axis=-1)[..., 0]
    return values.astype(data.dtype, copy=False), np.where(found, where, 0)


@register("MaxPool", 1)
class MaxPool(Pool):
    """MaxPool-1: the window maxima (no dilations, no indices output)."""

    Attrs = PoolAttrs

    def infer(self, data: TensorInfo) -> TensorInfo:
        check_pool_type(self, data.etype, integers=True)
        return TensorInfo(data.etype, output_shape(self, data, self.dilations()))

    def compute(self, data: np.ndarray) -> np.ndarray:
        return max_pool(data, self.axes(data))[0]


class MaxPool8Attrs(PoolAttrs):
    dilations: IntList = ()  # empty: 1 along every axis
    index_element_type: IndexType = "i64"
    axis: int = 0


@register("MaxPool", 8)
class MaxPool8(MaxPool):
    """MaxPool-8: dilations, and the indices of the maxima as a second output."""

    Attrs = MaxPool8Attrs
    outputs = 2

    def dilations(self) -> tuple[int, ...]:
        return self.attrs.dilations or super().dilations()

    def infer(self, data: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        check_pool_type(self, data.etype, integers=True)
        shape = output_shape(self, data, self.dilations())
        if data.shape.rank_is_static:
            normalized_axis(self.attrs.axis, data.shape.rank, port=self.port("axis"))
        return TensorInfo(data.etype, shape), TensorInfo(ElementType[self.attrs.index_element_type], shape)

    def compute(self, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


class MaxPool14Attrs(MaxPool8Attrs):
    rounding_type: TorchRounding = "floor"


@register("MaxPool", 14)
class MaxPool14(MaxPool8):
    """MaxPool-14: MaxPool-8 with the ceil_torch rounding."""

    Attrs = MaxPool14Attrs
