"""Softmax-1 and Softmax-8: e^x / sum(e^x) along one axis.

Computed as e^(x - m) / sum(e^(x - m)) with m the maximum along the axis (the value is the
same), so large inputs neither overflow nor lose the result: [1e4, -1e4] gives [1, 0] in f16
as in f32. T is a floating-point type (OpenVINO evaluates bf16, f16, f32 and f64; the spec
names none); f16 and bf16 are computed in f32 and rounded once.

Softmax-1's axis is non-negative and below the rank; Softmax-8's lies in [-rank, rank - 1].
A scalar has no axis, so both refuse rank 0. An empty input gives an empty output.

Values the spec leaves undefined follow OpenVINO's core reference, which subtracts the
maximum the same way: a slice along the axis holding NaN or +inf, or only -inf, is all NaN
(inf - inf is NaN); -inf elements beside finite ones give 0.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, ClassVar

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo
from irscatter.ops.common import accel, blocks
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.registry import register

# The compiled passes of a softmax along the last axis (imports numba: imported when first used).
KERNELS = "irscatter.ops.common.softmax_kernels"


def softmax(data: np.ndarray, axis: int, *, compiled: bool = False) -> np.ndarray:
    """Softmax along `axis`; `compiled`, along the last axis: the maximum, the subtraction and
    the quotient in `softmax_kernels`' loops (numba), with the same bits."""
    return along_axis(_softmax_compiled if compiled and axis == data.ndim - 1 else _softmax_along, data, axis)


def along_axis(kernel: Callable[..., None], data: np.ndarray, axis: int) -> np.ndarray:
    """`kernel(x, out, axis=axis)` (Softmax's or LogSoftmax's arithmetic along `axis`) on the
    data in its compute dtype, rounded back once; over the last axis (an attention's), on the
    thread policy's parts, each a block of whole rows (`blocks.by_rows`). `out` is laid out as x,
    as numpy's x - max would be: a sum's order follows the layout it runs over."""
    if data.size == 0:
        return np.empty(data.shape, data.dtype)
    etype = ElementType.from_dtype(data.dtype)
    x = data.astype(compute_dtype(etype), copy=False)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        if axis == x.ndim - 1:
            blocks.by_rows(partial(kernel, axis=-1), x, out)
        else:
            kernel(x, out, axis=axis)
    return from_compute(out, etype)


def _softmax_along(x: np.ndarray, out: np.ndarray, axis: int) -> None:
    """out = softmax of x along `axis`, in the compute dtype: the shifted values written into
    `out`, and the rest in place."""
    np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True), out=out)
    np.exp(out, out=out)
    np.divide(out, np.add.reduce(out, axis=axis, keepdims=True), out=out)


def _softmax_compiled(x: np.ndarray, out: np.ndarray, axis: int) -> None:
    """`_softmax_along` over the last axis, its passes but the exponential and the sums compiled;
    numpy's where `out` (laid out as x) is not C-contiguous, as the rows of a view's may not be."""
    if not out.flags.c_contiguous:
        _softmax_along(x, out, axis)
        return
    from irscatter.ops.common import softmax_kernels  # (imports numba: only when used)

    targets = out.reshape(-1, out.shape[-1])
    softmax_kernels.shift_rows(x.reshape(-1, x.shape[-1]), targets)
    softmax_kernels.exp_and_divide(targets)


class AxisAttrs(OpAttrs):
    """The attribute AlongAxis reads: an axis that may count from the end (Softmax-8, LogSoftmax)."""

    axis: int = 1


class NonNegativeAxisAttrs(AxisAttrs):
    """Softmax-1's axis, which counts from the start only."""

    axis: Annotated[int, Field(ge=0)] = 1


class AlongAxis(Op):
    """What Softmax and LogSoftmax share: a float `data` normalized along the attribute `axis`."""

    Attrs: ClassVar[type[AxisAttrs]] = AxisAttrs
    attrs: AxisAttrs
    inputs = ("data",)

    def axis(self, rank: int, *, at_runtime: bool = False) -> int:
        return normalized_axis(self.attrs.axis, rank, port=self.port("axis"), at_runtime=at_runtime)

    def infer(self, data: TensorInfo) -> TensorInfo:
        check_float(self, data.etype, "data")
        if data.shape.rank_is_static:
            self.axis(data.shape.rank)
        return TensorInfo(data.etype, data.shape)


@register("Softmax", 1)
class Softmax(AlongAxis, accel.LoadsOnSecondCall):
    Attrs: ClassVar[type[AxisAttrs]] = NonNegativeAxisAttrs

    def compute(self, data: np.ndarray) -> np.ndarray:
        axis = self.axis(data.ndim, at_runtime=True)
        compiled = axis == data.ndim - 1 and self.takes_compiled(KERNELS, data.size)
        return softmax(data, axis, compiled=compiled)


@register("Softmax", 8)
class Softmax8(Softmax):
    """Softmax-8: the axis may be negative, counting from the last dimension."""

    Attrs = AxisAttrs


