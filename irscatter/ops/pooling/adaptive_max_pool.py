"""AdaptiveMaxPool-8: the largest value of each adaptive bin, and its index.

The bins are AdaptiveAvgPool-8's (see `adaptive_avg_pool.py`). The second output holds the
index of each chosen element within its channel's spatial grid flattened to 1-D (so in
[0, D * H * W)), of `index_element_type` (i32 or i64). The data is of a floating-point type.

Which element a bin gives, the spec does not say; irscatter answers as OpenVINO's CPU plugin
does (std::max_element over the bin in row-major order): the bin's first element, replaced by a
later one only when strictly greater. So of equal maxima the first wins (of -0.0 and 0.0
whichever comes first), NaN is passed over, and a bin whose first element is NaN gives NaN.
OpenVINO's core has no evaluate for this op; its reference header runs std::max_element row by
row and compares row results, so a NaN at the start of a later row hides that whole row there
(the bin [[1, NaN], [NaN, 9]] gives 1 in the header, 9 in the plugin and irscatter).

The maxima are separable, so each spatial axis is reduced in turn with one strided view per
distinct bin length, carrying the index of the chosen element along.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo
from irscatter.ops.common.numeric import compute_dtype
from irscatter.ops.pooling.core import (
    bins,
    by_bin_length,
    check_output_size,
    check_pool_type,
    empty_bins,
    runtime_sizes,
)
from irscatter.ops.registry import register


def bin_maxima(data: np.ndarray, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The maxima of the adaptive bins of `data` [N, C, spatial...] and their indices.

    The first of the largest non-NaN values is separable: each spatial axis picks it in turn
    (NaN counted as -inf, so a NaN is only kept where nothing beats -inf and it comes first,
    and then a non-NaN -inf or the bin's first element comes before it). A NaN first element
    of the bin is put back at the end."""
    grid = np.arange(int(np.prod(data.shape[2:])), dtype=np.int64).reshape(data.shape[2:])
    work_dtype = compute_dtype(ElementType.from_dtype(data.dtype))
    values, where = data, np.broadcast_to(grid, data.shape)
    for axis in range(data.ndim - 1, 1, -1):
        out = sizes[axis - 2]
        shape = values.shape[:axis] + (out,) + values.shape[axis + 1:]
        new_values, new_where = np.empty(shape, dtype=data.dtype), np.empty(shape, dtype=np.int64)
        for length, chosen, starts in by_bin_length(values.shape[axis], out):
            at = (slice(None),) * axis + (chosen,)
            taps = np.take(sliding_window_view(values, length, axis=axis), starts, axis=axis)
            key = taps.astype(work_dtype)
            pick = np.where(np.isnan(key), -np.inf, key).argmax(axis=-1)[..., None]  # the first of equal maxima
            new_values[at] = np.take_along_axis(taps, pick, axis=-1)[..., 0]
            taps = np.take(sliding_window_view(where, length, axis=axis), starts, axis=axis)
            new_where[at] = np.take_along_axis(taps, pick, axis=-1)[..., 0]
        values, where = new_values, new_where
    firsts = np.ix_(*(bins(n, m)[0] for n, m in zip(data.shape[2:], sizes)))
    first = data[(slice(None), slice(None)) + firsts]
    nan = np.isnan(first.astype(work_dtype))
    return np.where(nan, first, values), np.where(nan, grid[firsts], where)


@register("AdaptiveMaxPool", 8)
class AdaptiveMaxPool(Op):
    class Attrs(OpAttrs):
        index_element_type: Annotated[Literal["i32", "i64"], Lower] = "i64"
    attrs: Attrs

    inputs = ("data", "output_size")
    outputs = 2

    def infer(self, data: TensorInfo, output_size: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        check_pool_type(self, data.etype, integers=False)
        shape = check_output_size(self, data, output_size)
        return TensorInfo(data.etype, shape), TensorInfo(ElementType[self.attrs.index_element_type], shape)

    def compute(self, data: np.ndarray, output_size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sizes = runtime_sizes(self, data, output_size)
        index_dtype = ElementType[self.attrs.index_element_type].dtype
        if (empty := empty_bins(data, sizes)) is not None:
            return np.empty(empty, data.dtype), np.empty(empty, index_dtype)
        values, where = bin_maxima(data, sizes)
        return values, where.astype(index_dtype)
