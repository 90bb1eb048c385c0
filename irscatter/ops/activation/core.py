"""What the activation ops with extra inputs share: the floating-point type check and the
inputs that hold one value (Selu's alpha and lambda, HardSigmoid's alpha and beta, Swish's beta)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type


def check_one_value(op: Op, info: TensorInfo, name: str, *, max_rank: int) -> None:
    """An input holding one value: rank at most `max_rank` and one element (when known)."""
    shape = info.shape
    if not shape.rank_is_static:
        return
    what = "a scalar" if max_rank == 0 else "a scalar or a 1-D tensor of one element"
    check(shape.rank <= max_rank and all(d.contains(1) for d in shape), "scalar-input",
          f"{name} must be {what}, found shape {shape}", port=op.port(name))


def one_value(op: Op, array: np.ndarray, name: str, *, max_rank: int) -> np.ndarray:
    """The one value of such an input, as a 0-d array (an ExecutionError if it has another shape)."""
    if array.ndim > max_rank or array.size != 1:
        raise ExecutionError(f"{name} must hold one value, found shape {list(array.shape)}", port=op.port(name),
                             label="scalar-input")
    return array.reshape(())


class ParameterizedActivation(Op):
    """An activation of `data` with two one-value parameter inputs of data's float type (Selu's
    alpha and lambda, HardSigmoid's alpha and beta): the checks they share, and the kernel
    `formula(x, p, q)` run in the compute dtype and rounded once."""

    parameter_rank: ClassVar[int]  # the highest rank a parameter may have (one element in any case)
    formula: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # each subclass's method

    def infer(self, data: TensorInfo, first: TensorInfo, second: TensorInfo) -> TensorInfo:
        etype = data.etype
        for name, info in zip(self.inputs[1:], (first, second)):
            etype = same_element_type(TensorInfo(etype, data.shape), info,
                                      f"data and {name} must have the same element type", "same-element-type",
                                      self.port(name))
        check_float(self, etype, "data")
        for name, info in zip(self.inputs[1:], (first, second)):
            check_one_value(self, info, name, max_rank=self.parameter_rank)
        return TensorInfo(etype, data.shape)

    def compute(self, data: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        x = np.asarray(data, dtype=compute_dtype(etype))
        p, q = (one_value(self, v, name, max_rank=self.parameter_rank).astype(x.dtype)
                for name, v in zip(self.inputs[1:], (first, second)))
        with np.errstate(all="ignore"):
            out = self.formula(x, p, q)
        return from_compute(np.asarray(out, dtype=x.dtype), etype)
