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
from irscatter.ops.activation.softmax import AlongAxis, shifted
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.registry import register


@register("LogSoftmax", 5)
class LogSoftmax(AlongAxis):
    """Its axis, as Softmax-8's, may count from the last dimension: AlongAxis's own schema."""

    def compute(self, data: np.ndarray) -> np.ndarray:
        axis = self.axis(data.ndim, at_runtime=True)
        if data.size == 0:
            return np.empty(data.shape, data.dtype)
        etype = ElementType.from_dtype(data.dtype)
        with np.errstate(all="ignore"):
            t = shifted(data, axis, etype)
            out = t - np.log(np.add.reduce(np.exp(t), axis=axis, keepdims=True))
        return from_compute(out, etype)
