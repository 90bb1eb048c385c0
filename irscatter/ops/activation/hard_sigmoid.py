"""HardSigmoid-1: max(0, min(1, alpha * x + beta)), with alpha and beta scalar inputs.

All three inputs have one floating-point type T; alpha and beta are 0-D, as the spec says and
OpenVINO checks. The spec leaves NaN undefined; irscatter follows OpenVINO's core reference,
min(1, y) as `y < 1 ? y : 1` and then max(0, .) as `0 < y ? y : 0`, so a NaN becomes 1 and -0.0
becomes +0.0.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.activation.core import ParameterizedActivation
from irscatter.ops.registry import register


@register("HardSigmoid", 1)
class HardSigmoid(ParameterizedActivation):
    inputs = ("data", "alpha", "beta")
    parameter_rank = 0

    def formula(self, x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
        y = alpha * x + beta
        # std::min(1, y) then std::max(0, .), as the reference: a NaN y becomes 1
        y = np.where(y < 1, y, np.ones((), x.dtype))
        return np.where(y > 0, y, np.zeros((), x.dtype))
