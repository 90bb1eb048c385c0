"""HardSigmoid-1: max(0, min(1, alpha * x + beta)), with alpha and beta scalar inputs.

All three inputs have one floating-point type T; alpha and beta are 0-D, as the spec says and
OpenVINO checks. The spec leaves NaN undefined; irscatter follows OpenVINO's core reference,
min(1, y) as `y < 1 ? y : 1` and then max(0, .) as `0 < y ? y : 0`, so a NaN becomes 1 and -0.0
becomes +0.0.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.activation.core import check_float, check_one_value, one_value
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register


@register("HardSigmoid", 1)
class HardSigmoid(Op):
    inputs = ("data", "alpha", "beta")

    def infer(self, data: TensorInfo, alpha: TensorInfo, beta: TensorInfo) -> TensorInfo:
        etype = same_element_type(data, alpha, "data and alpha must have the same element type",
                                  "same-element-type", self.port("alpha"))
        etype = same_element_type(TensorInfo(etype, data.shape), beta,
                                  "data and beta must have the same element type", "same-element-type",
                                  self.port("beta"))
        check_float(self, etype, "data")
        check_one_value(self, alpha, "alpha", max_rank=0)
        check_one_value(self, beta, "beta", max_rank=0)
        return TensorInfo(etype, data.shape)

    def compute(self, data: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        x = np.asarray(data, dtype=compute_dtype(etype))
        a = one_value(self, alpha, "alpha", max_rank=0).astype(x.dtype)
        b = one_value(self, beta, "beta", max_rank=0).astype(x.dtype)
        with np.errstate(all="ignore"):
            y = a * x + b
            # std::min(1, y) then std::max(0, .), as the reference: a NaN y becomes 1
            y = np.where(y < 1, y, np.ones((), x.dtype))
            y = np.where(y > 0, y, np.zeros((), x.dtype))
        return from_compute(np.asarray(y, dtype=x.dtype), etype)
