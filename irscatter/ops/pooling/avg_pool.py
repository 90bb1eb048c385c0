"""AvgPool-1, AvgPool-14 and AvgPool-16: the mean of each window.

The window geometry (pads, auto_pad, rounding, output size) is in `pooling/core.py`. -14 adds
the `ceil_torch` rounding, -16 `dilations` (its page is -14's with a dilations attribute).

Which elements a mean divides by: with `exclude-pad` true, the window's data elements only;
with `exclude-pad` false, every tap of the kernel when the layer has any padding (padding
counts as zeros, and so do the taps a ceil-rounded last window has past the end padding), and
the data elements only when it has none (valid, or pads of 0), as OpenVINO's reference does. A
window without any data element to divide by gives 0, as in OpenVINO. With exclude-pad true, a
pad as large as the (dilated) kernel would leave whole windows in padding, and OpenVINO refuses
it (label `pool-pad-window`).

Element types: floats, and integers for every version (the -14 and -16 pages list floating
point or integer types; -1's lists none, and OpenVINO takes integers there too). Floats sum in
f32 (f64 for f64) and round once to the element type. Integers sum exactly and round the mean
to the nearest integer, ties to even, as OpenVINO's CPU plugin does (its core reference
truncates toward zero for types wider than 8 bits and rounds to nearest for i8 and u8, summing
in the element type, where 8-bit sums wrap; the spec defines no rounding).
"""

from __future__ import annotations

import itertools
import math
from functools import partial
from typing import ClassVar

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IntList, IRBool, TensorInfo, check
from irscatter.ops.common import accel, threads
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.pooling.core import (
    Axis,
    FloorCeil,
    Pool,
    PoolAttrs,
    Windows,
    as_windows,
    check_pool_type,
    in_data,
    output_shape,
    padded,
    tap_picks,
)
from irscatter.ops.registry import register


def window_counts(axes: list[Axis], exclude_pad: bool) -> np.ndarray:
    """[out...]: what each window's sum is divided by."""
    taps = math.prod(ax.kernel for ax in axes)
    if not any(ax.begin or ax.reach for ax in axes):  # every tap of every window is on the data
        return np.full(tuple(ax.out for ax in axes), taps, dtype=np.int64)
    inside = in_data(axes).sum(axis=-1)
    if exclude_pad or not any(ax.begin or ax.end for ax in axes):
        return inside
    return np.full_like(inside, taps)


def window_sums(values: np.ndarray, axes: list[Axis]) -> np.ndarray:
    """[..., out...]: the sum of each window, added tap by tap over the padded values (a few
    passes over the output, rather than a reduction over a window view): over shifts of them
    flattened where the windows move one element at a time (`_shifted_sums`), else over
    strided views."""
    axes = as_windows(axes)
    source = padded(values, axes, 0)
    offsets = _flat_offsets(axes, source.shape)
    if offsets is not None:
        return _shifted_sums(source, axes, offsets)
    sums = np.zeros(values.shape[:values.ndim - len(axes)] + tuple(ax.out for ax in axes), dtype=values.dtype)
    for pick in tap_picks(axes):
        np.add(sums, source[pick], out=sums)
    return sums


def _flat_offsets(axes: Windows, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Where each tap (in row-major order) stands from its window's first element in the padded
    array's flat order, for windows that move one element at a time and whose padded array is
    not much larger than the output; else None."""
    key = ("flat tap offsets", shape)
    if key not in axes.derived:
        spatial = shape[len(shape) - len(axes):]
        outputs = math.prod(ax.out for ax in axes)
        offsets = None
        if all(ax.stride == 1 for ax in axes) and outputs and math.prod(spatial) <= _MOST_DROPPED * outputs:
            steps = [math.prod(spatial[i + 1:]) for i in range(len(axes))]
            offsets = tuple(sum(t * ax.dilation * step for t, ax, step in zip(tap, axes, steps))
                            for tap in itertools.product(*(range(ax.kernel) for ax in axes)))
        axes.derived[key] = offsets
    return axes.derived[key]


# A padded array at most this many times the output's size is summed whole (`_shifted_sums`).
_MOST_DROPPED = 2


def _shifted_sums(source: np.ndarray, axes: Windows, offsets: tuple[int, ...]) -> np.ndarray:
    """`window_sums` for windows that move one element at a time: a tap of every window is then
    the padded array, flattened, shifted by one offset, so each tap is one add over contiguous
    memory (a window of a few elements per row made the strided views' adds mostly overhead).
    Each window's sum takes the same additions in the same order; the positions between the
    windows (past a row's last window) are summed too, and dropped."""
    flat = np.ascontiguousarray(source).reshape(-1)
    total = np.add(flat, flat.dtype.type(0))  # the first tap (offset 0) added to zeros, as the views do
    for offset in offsets[1:]:
        np.add(total[:flat.size - offset], flat[offset:], out=total[:flat.size - offset])
    kept = (Ellipsis, *(slice(0, ax.out) for ax in axes))
    return np.ascontiguousarray(total.reshape(source.shape)[kept])


# The compute types the compiled loop takes (f16 and bf16 compute in f32); a tap's weight in
# multiply-adds for `threads.parts`: an add from the cache, and a share of the plane's copy into
# its padded buffer. At 4, Inception-v3's 3x3 pools of 200 K to 300 K outputs split in two, which
# took a fifth less time in the model than one part.
COMPILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
KERNELS = "irscatter.ops.pooling.pool_kernels"
POOL_TAP_WORK = 4


def avg_pool(data: np.ndarray, axes: list[Axis], exclude_pad: bool, compiled: bool = False) -> np.ndarray:
    """The means; `compiled` (numba to be used): windows that move one element at a time over
    the last two axes take the compiled loop (`pool_kernels`), with the same bits."""
    axes = as_windows(axes)
    etype = ElementType.from_dtype(data.dtype)
    count, divisor = _divisors(axes, exclude_pad)
    if etype.is_integral:
        return integer_means(data, axes, count)
    work = data.astype(compute_dtype(etype), copy=False)
    if compiled and len(axes) == 2 and work.dtype in COMPILED_TYPES and count.size and work.size:
        padded_shape = _padded_shape(work.shape, axes)
        offsets = _flat_offsets(axes, padded_shape)
        if offsets is not None:
            return from_compute(_compiled_means(work, padded_shape[-2:], axes, offsets, exclude_pad, count, divisor),
                                etype)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN; a sum may overflow to inf
        sums = window_sums(work, axes)
        if divisor:  # one divisor for all: windows that tile the input
            means = np.divide(sums, work.dtype.type(divisor), out=sums)
        else:
            means = np.divide(sums, _float_counts(axes, exclude_pad, count, work.dtype), out=sums)
            if not count.all():
                means[..., count == 0] = 0  # a window without data elements
    return from_compute(means, etype)


def _padded_shape(shape: tuple[int, ...], axes: Windows) -> tuple[int, ...]:
    """The shape `padded` would give an array of `shape`."""
    widths = axes.widths or ((0, 0),) * len(axes)
    lead = len(shape) - len(axes)
    return shape[:lead] + tuple(size + b + e for size, (b, e) in zip(shape[lead:], widths))


def _compiled_means(work: np.ndarray, padded: tuple[int, ...], axes: Windows, offsets: tuple[int, ...],
                    exclude_pad: bool, count: np.ndarray, divisor: int) -> np.ndarray:
    """`avg_pool`'s means of `work` in one compiled pass (`pool_kernels`) on the thread policy's
    parts (ranges of planes), each padding its planes (to `padded`: rows, columns) as it goes."""
    from irscatter.ops.pooling import pool_kernels  # (imports numba: only when used)

    dtype = work.dtype
    rows, columns = axes[0].out, axes[1].out
    lead, spatial = work.shape[:-2], work.shape[-2:]
    padded_rows, width = padded
    planes = math.prod(lead)
    flat = np.ascontiguousarray(work).reshape(-1)
    if divisor:
        divisors = np.full((rows, columns), divisor, dtype)
    else:
        divisors = _float_counts(axes, exclude_pad, count, dtype)
    out = np.empty((planes, rows, columns), dtype)
    spans = threads.spans(planes, threads.parts(out.size * len(offsets) * POOL_TAP_WORK))
    kernel = partial(pool_kernels.window_means, flat, *spatial, axes[0].begin, axes[1].begin, padded_rows, width,
                     np.array(offsets, np.int64), divisors, dtype.type(0))
    with np.errstate(invalid="ignore", over="ignore"):
        threads.run([partial(kernel, lo, hi, out) for lo, hi in spans])
    if not count.all():
        out[..., count == 0] = 0  # a window without data elements
    return out.reshape(*lead, rows, columns)


def _float_counts(axes: Windows, exclude_pad: bool, count: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`count` (at least 1) in the float type the means are divided in, kept with the axes."""
    key = ("avg-pool float divisors", exclude_pad, dtype)
    if key not in axes.derived:
        counts = np.maximum(count, 1).astype(dtype)
        counts.flags.writeable = False  # shared by every call of this shape
        axes.derived[key] = counts
    return axes.derived[key]


def _divisors(axes: Windows, exclude_pad: bool) -> tuple[np.ndarray, int]:
    """`window_counts`, and the one count every window shares (0 when they differ or a window
    counts nothing), kept with the axes."""
    key = ("avg-pool divisors", exclude_pad)
    if key not in axes.derived:
        count = window_counts(axes, exclude_pad)
        lowest, highest = (int(count.min()), int(count.max())) if count.size else (1, 1)
        axes.derived[key] = count, (lowest if lowest == highest and lowest > 0 else 0)
    return axes.derived[key]


def integer_means(data: np.ndarray, axes: list[Axis], count: np.ndarray) -> np.ndarray:
    """Exact integer window means, rounded to nearest with ties to even.

    Each value is split into high and low 32-bit halves whose sums cannot overflow int64; the
    mean is (high_sum * 2^32 + low_sum) / count, divided in two steps, and assembled modulo
    2^64 (the true mean lies in the element type's range, so the wrap-around cancels)."""
    if data.dtype == np.uint64:
        high = (data >> np.uint64(32)).astype(np.int64)
        low = (data & np.uint64(0xFFFFFFFF)).astype(np.int64)
    else:
        wide = data.astype(np.int64)
        high, low = wide >> 32, wide & 0xFFFFFFFF
    divisor = np.maximum(count, 1).astype(np.int64)
    q_high, r_high = np.divmod(window_sums(high, axes), divisor)
    q_low, r_low = np.divmod(r_high * (1 << 32) + window_sums(low, axes), divisor)
    floor = (q_high.astype(np.uint64) << np.uint64(32)) + q_low.astype(np.uint64)
    up = (2 * r_low > divisor) | ((2 * r_low == divisor) & (q_low % 2 == 1))
    mean = np.where(count > 0, floor + up.astype(np.uint64), np.uint64(0))
    return mean.astype(data.dtype)


class AvgPoolAttrs(PoolAttrs):
    """AvgPool-14's attributes, and AvgPool-1's but for the rounding type ceil_torch."""

    exclude_pad: IRBool = Field(alias="exclude-pad")


class AvgPool1Attrs(FloorCeil, AvgPoolAttrs):
    pass


@register("AvgPool", 1)
class AvgPool(Pool, accel.LoadsOnSecondCall):
    """AvgPool-1: the window means (no dilations)."""

    labels = {
        "pool-pad-window": "with exclude-pad, a pad is as large as the kernel, so some window lies entirely in padding",
    }

    Attrs: ClassVar[type[AvgPoolAttrs]] = AvgPool1Attrs
    attrs: AvgPoolAttrs

    def check_pads(self, span: int, begin: int, end: int, axis: int) -> None:
        check(not self.attrs.exclude_pad or (span > begin and span > end), "pool-pad-window",
              f"the kernel spans {span} along spatial axis {axis}, not more than its pads ({begin}, {end}): "
              f"with exclude-pad some window would hold padding only", port=self.port("pads_begin"))

    def infer(self, data: TensorInfo) -> TensorInfo:
        check_pool_type(self, data.etype, integers=True)
        return TensorInfo(data.etype, output_shape(self, data, self.dilations()))

    def compute(self, data: np.ndarray) -> np.ndarray:
        compiled = self.takes_compiled(KERNELS, data.size)  # (a first call takes numpy's path: `accel.loads`)
        return avg_pool(data, self.axes(data), self.attrs.exclude_pad, compiled)


@register("AvgPool", 14)
class AvgPool14(AvgPool):
    """AvgPool-14: AvgPool-1 with the ceil_torch rounding."""

    Attrs = AvgPoolAttrs


class AvgPool16Attrs(AvgPoolAttrs):
    dilations: IntList = ()  # empty: 1 along every axis


@register("AvgPool", 16)
class AvgPool16(AvgPool14):
    """AvgPool-16: AvgPool-14 with dilations."""

    Attrs = AvgPool16Attrs
    attrs: AvgPool16Attrs

    def dilations(self) -> tuple[int, ...]:
        return self.attrs.dilations or super().dilations()
