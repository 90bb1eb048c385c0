"""Selu-1: lambda * x where x > 0, lambda * alpha * (e^x - 1) elsewhere.

`alpha` and `lambda` are inputs of one element each: the spec asks for 1-D tensors of one
element; a scalar is accepted too (the value is the same). OpenVINO's core reference does not
check their shapes and cycles through longer ones element by element; irscatter refuses them.
All three inputs have one floating-point type T. e^x - 1 is computed as expm1, its exact value;
-0.0 gives -0.0 (it is not > 0, and expm1(-0.0) is -0.0).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.activation.core import check_float, check_one_value, one_value
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register


@register("Selu", 1)
class Selu(Op):
    inputs = ("data", "alpha", "lambda")

    def infer(self, data: TensorInfo, alpha: TensorInfo, lambda_: TensorInfo) -> TensorInfo:
        etype = same_element_type(data, alpha, "data and alpha must have the same element type",
                                  "same-element-type", self.port("alpha"))
        etype = same_element_type(TensorInfo(etype, data.shape), lambda_,
                                  "data and lambda must have the same element type", "same-element-type",
                                  self.port("lambda"))
        check_float(self, etype, "data")
        check_one_value(self, alpha, "alpha", max_rank=1)
        check_one_value(self, lambda_, "lambda", max_rank=1)
        return TensorInfo(etype, data.shape)

    def compute(self, data: np.ndarray, alpha: np.ndarray, lambda_: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        x = np.asarray(data, dtype=compute_dtype(etype))
        a = one_value(self, alpha, "alpha", max_rank=1).astype(x.dtype)
        scale = one_value(self, lambda_, "lambda", max_rank=1).astype(x.dtype)
        with np.errstate(all="ignore"):
            out = scale * np.where(x > 0, x, a * np.expm1(x))
        return from_compute(np.asarray(out, dtype=x.dtype), etype)


