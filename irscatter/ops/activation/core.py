"""What the activation ops with extra inputs share: the floating-point type check and the
inputs that hold one value (Selu's alpha and lambda, HardSigmoid's alpha and beta, Swish's beta)."""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.types import arithmetic_float


def check_float(op: Op, etype: ElementType, port_name: str) -> None:
    check(etype is ElementType.dynamic or arithmetic_float(etype), "float-type",
          f"{op.type_name} is not defined for {etype} tensors (it takes a floating-point type)",
          port=op.port(port_name))


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
