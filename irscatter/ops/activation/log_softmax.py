"""LogSoftmax-5: the natural logarithm of Softmax along one axis.

Computed as the spec recommends: t = x - max(x), then t - log(sum(e^t)), so large inputs
neither overflow nor lose digits (log(softmax) would give -inf where e^t underflows). The axis
lies in [-rank, rank - 1] (the spec says "any integer" but asks for an input with enough
dimensions for it; OpenVINO checks the range). T is a floating-point type; f16 and bf16 are
computed in f32 and rounded once. A slice holding NaN or +inf, or only -inf, is all NaN, as
in OpenVINO's core reference; an empty input gives an empty output.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.activation.softmax import AlongAxis
from irscatter.ops.common import blocks
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.registry import register


@register("LogSoftmax", 5)
class LogSoftmax(AlongAxis):
    """Its axis, as Softmax-8's, may count from the last dimension: AlongAxis's own schema."""

    def compute(self, data: np.ndarray) -> np.ndarray:
        axis = self.axis(data.ndim, at_runtime=True)
        if data.size == 0:
            return np.empty(data.shape, data.dtype)
        etype = ElementType.from_dtype(data.dtype)
        x = data.astype(compute_dtype(etype), copy=False)
        out = np.empty_like(x)  # laid out as x, as numpy's x - max would be (see softmax)
        with np.errstate(all="ignore"):
            if axis == x.ndim - 1:  # whole rows on the thread policy's parts
                blocks.by_rows(_log_softmax_rows, x, out)
            else:
                _log_softmax_along(x, out, axis)
        return from_compute(out, etype)


def _log_softmax_along(x: np.ndarray, out: np.ndarray, axis: int) -> None:
    """out = log softmax of x along `axis`, in the compute dtype: t = x - max(x) written into
    `out`, then t - log(sum(e^t)) in place."""
    np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True), out=out)
    np.subtract(out, np.log(np.add.reduce(np.exp(out), axis=axis, keepdims=True)), out=out)


def _log_softmax_rows(x: np.ndarray, out: np.ndarray) -> None:
    _log_softmax_along(x, out, x.ndim - 1)
