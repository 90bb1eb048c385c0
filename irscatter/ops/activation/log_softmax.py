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

from irscatter.ops.activation.softmax import AlongAxis, along_axis
from irscatter.ops.registry import register


@register("LogSoftmax", 5)
class LogSoftmax(AlongAxis):
    """Its axis, as Softmax-8's, may count from the last dimension: AlongAxis's own schema."""

    def compute(self, data: np.ndarray) -> np.ndarray:
        axis = self.axis(data.ndim, at_runtime=True)
        return along_axis(_log_softmax_along, data, axis)


def _log_softmax_along(x: np.ndarray, out: np.ndarray, axis: int) -> None:
    """out = log softmax of x along `axis`, in the compute dtype: t = x - max(x) written into
    `out`, then t - log(sum(e^t)) in place."""
    np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True), out=out)
    np.subtract(out, np.log(np.add.reduce(np.exp(out), axis=axis, keepdims=True)), out=out)
