"""Selu-1: lambda * x where x > 0, lambda * alpha * (e^x - 1) elsewhere.

`alpha` and `lambda` are inputs of one element each: the spec asks for 1-D tensors of one
element; a scalar is accepted too (the value is the same). OpenVINO's core reference does not
check their shapes and cycles through longer ones element by element; irscatter refuses them.
All three inputs have one floating-point type T. e^x - 1 is computed as expm1, its exact value;
-0.0 gives -0.0 (it is not > 0, and expm1(-0.0) is -0.0).
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.activation.core import ParameterizedActivation
from irscatter.ops.registry import register


@register("Selu", 1)
class Selu(ParameterizedActivation):
    inputs = ("data", "alpha", "lambda")
    parameter_rank = 1

    def formula(self, x: np.ndarray, alpha: np.ndarray, scale: np.ndarray) -> np.ndarray:
        return scale * np.where(x > 0, x, alpha * np.expm1(x))
