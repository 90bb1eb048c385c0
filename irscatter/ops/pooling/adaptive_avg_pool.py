"""AdaptiveAvgPool-8: the mean of each adaptive bin.

The second input gives the output's spatial sizes. Along an axis of size `n` pooled to `m`
bins, bin i covers [floor(i * n / m), ceil((i + 1) * n / m)); bins may overlap and differ in
length by one. The data is of a floating-point type (the spec's T); the output size is i32 or
i64, one non-negative value per spatial axis. An output size above 0 over an input axis of
size 0 would make bins with no element: OpenVINO's reference asserts there, irscatter refuses
it (label `output-size-value`).

The sums are separable: each spatial axis is summed bin by bin in turn, with one strided view
per distinct bin length (at most two per axis), so no Python loop runs over output positions.
f16 and bf16 sum in f32 and round once; the mean is the box sum over the product of the bin
lengths.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.pooling.core import (
    bins,
    by_bin_length,
    check_output_size,
    check_pool_type,
    empty_bins,
    runtime_sizes,
)
from irscatter.ops.registry import register


def bin_sums(work: np.ndarray, sizes: list[int]) -> np.ndarray:
    """The sums of `work` [N, C, spatial...] over the adaptive bins of each spatial axis."""
    for axis in range(2, work.ndim):
        out = sizes[axis - 2]
        result = np.empty(work.shape[:axis] + (out,) + work.shape[axis + 1:], dtype=work.dtype)
        for length, chosen, starts in by_bin_length(work.shape[axis], out):
            view = np.take(sliding_window_view(work, length, axis=axis), starts, axis=axis)
            result[(slice(None),) * axis + (chosen,)] = np.add.reduce(view, axis=-1, dtype=work.dtype)
        work = result
    return work


def bin_counts(spatial: tuple[int, ...], sizes: list[int]) -> np.ndarray:
    """[out...]: the number of elements in each bin, the product of its lengths."""
    count = np.ones((), dtype=np.int64)
    for n, m in zip(spatial, sizes):
        start, end = bins(n, m)
        count = np.multiply.outer(count, end - start)
    return count


@register("AdaptiveAvgPool", 8)
class AdaptiveAvgPool(Op):
    inputs = ("data", "output_size")

    def infer(self, data: TensorInfo, output_size: TensorInfo) -> TensorInfo:
        check_pool_type(self, data.etype, integers=False)
        return TensorInfo(data.etype, check_output_size(self, data, output_size))

    def compute(self, data: np.ndarray, output_size: np.ndarray) -> np.ndarray:
        sizes = runtime_sizes(self, data, output_size)
        if (empty := empty_bins(data, sizes)) is not None:
            return np.empty(empty, data.dtype)
        etype = ElementType.from_dtype(data.dtype)
        work = data.astype(compute_dtype(etype), copy=False)
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN; a sum may overflow to inf
            means = bin_sums(work, sizes) / bin_counts(data.shape[2:], sizes).astype(work.dtype)
        return from_compute(means.astype(work.dtype, copy=False), etype)
