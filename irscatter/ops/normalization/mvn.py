"""MVN-2 and MVN-6: mean-variance normalization over a set of axes.

Both subtract the mean of each slice over the axes; with `normalize_variance` they divide by
sqrt(variance + eps) (MVN-2, and MVN-6 with eps_mode=inside_sqrt) or sqrt(variance) + eps
(MVN-6 with outside_sqrt), the variance being the mean of the squared differences. f16 and bf16
compute in f32 and round once; eps is taken in the compute type, as OpenVINO's reference does.

MVN-2 (the spec's MVN-1 page; opset2 introduced it) takes its axes from attributes:
`reduction_axes` when given and not empty, else `across_channels` (axes 1..rank-1 when true,
2..rank-1 when false). The spec asks for one of the two; OpenVINO writes both into the IR files
it saves, and its reading is the one above, so a layer with both is accepted, and one with
neither is refused. Negative `reduction_axes` count from the back, as the spec says.
OpenVINO's CPU plugin departs from the spec here: it reads only whether `reduction_axes` holds
axis 1, and normalizes over axes 1..rank-1 if so, 2..rank-1 if not (so reduction_axes=0,2 on a
rank-3 tensor normalizes over axis 2 alone); irscatter normalizes over the axes given.

MVN-6 takes its axes from a 1-D input of type i32 or i64 holding at most rank axes, each in
[-rank, rank-1]; an axis named twice counts once, as in OpenVINO (the spec does not ask for
unique axes here). With no axes at all, each element is its own slice: the output is 0 (NaN
where the data is not finite).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IntList, IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import accel, blocks, threads
from irscatter.ops.common.axes import int_values, normalize_axes
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.normalization.core import (
    COMPILED_TYPES,
    KERNELS,
    check_known_axes,
    deviation,
    distinct_axes,
)
from irscatter.ops.registry import register

AXES_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)
# An element's weight for `threads.parts` in the compiled normalization (`_trailing`): four
# passes of about a nanosecond each together, so a part's hand-over (some tens of microseconds)
# pays from some 2^17 elements on; a transformer's LayerNorm of 200 tokens ran slower in two parts.
ROW_WORK = 32


def _mean(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    # sum / count rather than np.mean, which warns on the empty slices of size-0 data
    count = math.prod(values.shape[a] for a in axes)
    return np.add.reduce(values, axis=axes, keepdims=True, dtype=values.dtype) / values.dtype.type(count)


def mean_variance_normalize(data: np.ndarray, axes: tuple[int, ...], normalize_variance: bool, eps: float,
                            inside_sqrt: bool, compiled: bool = False) -> np.ndarray:
    """The normalization in the compute type, rounded once; `compiled` (numba to be used): by the
    compiled passes where the axes are the trailing ones of data in order (a transposed view
    would be copied first: numpy's passes read it as it lies) and the variance is normalized."""
    etype = ElementType.from_dtype(data.dtype)
    work = data.astype(compute_dtype(etype), copy=False)
    if compiled and normalize_variance and axes and axes == tuple(range(data.ndim - len(axes), data.ndim)) \
            and work.size and work.dtype in COMPILED_TYPES:
        if work.flags.c_contiguous:
            return from_compute(_trailing(work, math.prod(data.shape[a] for a in axes), eps, inside_sqrt), etype)
        if _channels_first(work, axes):
            return from_compute(_across(work, eps, inside_sqrt), etype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        centred = np.asarray(work - _mean(work, axes) if axes else work - work)  # (an array, for a 0-d one too)
        if normalize_variance:
            variance = _mean(centred * centred, axes) if axes else centred * centred
            e = work.dtype.type(eps)
            # into `centred` (a new array): a first run's new arrays take fresh pages, whose faults
            # cost more than the division
            np.divide(centred, deviation(variance, e, inside_sqrt), out=centred)
    return from_compute(np.asarray(centred, dtype=work.dtype), etype)


def _trailing(work: np.ndarray, inner: int, eps: float, inside_sqrt: bool) -> np.ndarray:
    """`mean_variance_normalize`'s bits over the trailing `inner` elements of each slice, on the
    thread policy's parts (`blocks.by_rows`: ranges of whole slices), each part making its
    slices' two numpy sums and two compiled passes (`_standardized_rows`), where numpy makes
    three arrays in six passes. A slice's sums are numpy's over its own contiguous row, whatever
    rows its part holds, so the bits do not depend on the cut."""
    rows = work.reshape(-1, inner)
    out = np.empty_like(rows)
    blocks.by_rows(partial(_standardized_rows, eps=eps, inside_sqrt=inside_sqrt), rows, out, ROW_WORK)
    return out.reshape(work.shape)


def _standardized_rows(rows: np.ndarray, out: np.ndarray, *, eps: float, inside_sqrt: bool) -> None:
    """out = (rows - mean) / deviation, each row a slice: `compiled_moments`'s arithmetic on a
    part's own rows, written out here without its parts and repeats (which cost a tenth of a
    LayerNorm's time), the squares in `out` until the quotients' pass overwrites them."""
    from irscatter.ops.normalization import norm_kernels  # (imports numba: only when used)

    dtype = rows.dtype
    count = dtype.type(rows.shape[1])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        means = np.add.reduce(rows, axis=1, dtype=dtype) / count
        norm_kernels.centred_squares(rows, means, out)
        variances = np.add.reduce(out, axis=1, dtype=dtype) / count
        norm_kernels.standardized(rows, means, deviation(variances, dtype.type(eps), inside_sqrt), out)


def _channels_first(work: np.ndarray, axes: tuple[int, ...]) -> bool:
    """Whether `work` is normalized over its last axis alone and lies in memory with that axis
    second, C-contiguous otherwise (a channels-last view of a channels-first map: ConvNeXt's
    LayerNorm between two Transposes), of more than one channel and one position."""
    return axes == (work.ndim - 1,) and work.ndim >= 3 and work.shape[-1] > 1 \
        and math.prod(work.shape[1:-1]) > 1 and np.moveaxis(work, -1, 1).flags.c_contiguous


def _across(work: np.ndarray, eps: float, inside_sqrt: bool) -> np.ndarray:
    """`mean_variance_normalize`'s bits for `_channels_first` data, read and written as it lies.
    numpy's reductions of such a view take each position's values channel after channel (the
    channels are its outermost axis after the samples'), in order, where a contiguous row is
    summed pairwise: `norm_kernels.standardized_across` sums in that order, one compiled loop on
    the thread policy's parts (ranges of positions), and its output lies as numpy's does, as
    the input lies."""
    from irscatter.ops.normalization import norm_kernels  # (imports numba: only when used)

    memory = np.moveaxis(work, -1, 1)
    x = memory.reshape(work.shape[0], work.shape[-1], -1)
    out = np.empty(memory.shape, work.dtype)
    target = out.reshape(x.shape)
    spans = threads.spans(x.shape[2], threads.parts(x.size * ROW_WORK))
    threads.run([partial(norm_kernels.standardized_across, x, target, lo, hi, eps, inside_sqrt) for lo, hi in spans])
    return np.moveaxis(out, 1, -1)


class _Normalizing(Op, accel.LoadsOnSecondCall):
    """What both versions share: a layer's calls take the compiled passes from its second on, or
    from its first once they are loaded (`accel.loads`)."""

    def _compiled(self, data: np.ndarray) -> bool:
        return self.takes_compiled(KERNELS, data.size)


@register("MVN", 2)
class MVN(_Normalizing):
    """MVN-2: the axes come from `reduction_axes` or `across_channels` (see the module doc)."""

    labels = {
        "mvn-axes": "MVN-2 has neither across_channels nor reduction_axes",
    }

    class Attrs(OpAttrs):
        across_channels: IRBool | None = None
        reduction_axes: IntList | None = None
        normalize_variance: IRBool
        eps: float
    attrs: Attrs

    inputs = ("data",)

    def __init__(self, layer) -> None:
        super().__init__(layer)
        check(self.attrs.across_channels is not None or self.attrs.reduction_axes is not None, "mvn-axes",
              "MVN-2 needs across_channels or reduction_axes", port=self.port("reduction_axes"))

    def _axes(self, rank: int) -> tuple[int, ...]:
        if self.attrs.reduction_axes:
            return tuple(sorted(normalize_axes(list(self.attrs.reduction_axes), rank, self.port("reduction_axes"))))
        return tuple(range(1 if self.attrs.across_channels else 2, rank))

    def infer(self, data: TensorInfo) -> TensorInfo:
        check_float(self, data.etype)
        if data.shape.rank_is_static:
            self._axes(data.shape.rank)
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        return mean_variance_normalize(data, self._axes(data.ndim), self.attrs.normalize_variance, self.attrs.eps,
                                       inside_sqrt=True, compiled=self._compiled(data))


@register("MVN", 6)
class MVN6(_Normalizing):
    """MVN-6: the axes come from an input; eps inside or outside the square root."""

    class Attrs(OpAttrs):
        normalize_variance: IRBool
        eps: float
        eps_mode: Annotated[Literal["inside_sqrt", "outside_sqrt"], Lower]
    attrs: Attrs

    inputs = ("data", "axes")

    def infer(self, data: TensorInfo, axes: TensorInfo) -> TensorInfo:
        check_float(self, data.etype)
        port = self.port("axes")
        check(axes.etype in AXES_TYPES, "axes-type", f"axes must be i32 or i64, found {axes.etype}", port=port)
        check_known_axes(self, data, axes)
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, axes: np.ndarray) -> np.ndarray:
        reduced = self.per_constant(data.ndim, (axes,),
                                    lambda: distinct_axes(self, int_values(axes), data.ndim, at_runtime=True))
        return mean_variance_normalize(data, reduced, self.attrs.normalize_variance, self.attrs.eps,
                                       inside_sqrt=self.attrs.eps_mode == "inside_sqrt", compiled=self._compiled(data))
