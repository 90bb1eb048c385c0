"""Swish-4: x / (1 + e^(-beta * x)), with an optional scalar input beta (1 when left out).

`beta` has the data's floating-point type T and is a scalar (0-D, as OpenVINO checks). The spec
calls it non-negative: a negative beta is refused (at inference when it is a constant, else
when the layer runs).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.activation.core import check_one_value, one_value
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register


@register("Swish", 4)
class Swish(Op):
    labels = {
        "beta-range": "Swish's beta is negative; the spec asks for a non-negative value",
    }

    inputs = ("data", "beta")
    optional_inputs = 1

    def infer(self, data: TensorInfo, beta: TensorInfo | None = None) -> TensorInfo:
        etype = data.etype
        if beta is not None:
            etype = same_element_type(data, beta, "data and beta must have the same element type",
                                      "same-element-type", self.port("beta"))
        check_float(self, etype, "data")
        if beta is not None:
            check_one_value(self, beta, "beta", max_rank=0)
            if beta.value is not None:
                value = np.asarray(beta.value).reshape(-1)
                check(value.size != 1 or not value[0] < 0, "beta-range", f"beta must not be negative, found {value[0]}",
                      port=self.port("beta"))
        return TensorInfo(etype, data.shape)

    def compute(self, data: np.ndarray, beta: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        x = np.asarray(data, dtype=compute_dtype(etype))
        b = np.ones((), x.dtype)
        if beta is not None:
            b = one_value(self, beta, "beta", max_rank=0).astype(x.dtype)
            if b < 0:
                raise ExecutionError(f"beta must not be negative, found {b}", port=self.port("beta"),
                                     label="beta-range")
        with np.errstate(all="ignore"):  # x / (1 + e^(-b x)), its temporaries in one buffer
            out = np.multiply(x, -b, out=np.empty(x.shape, x.dtype))
            np.exp(out, out=out)
            np.add(out, 1, out=out)
            np.divide(x, out, out=out)
        return from_compute(out, etype)
