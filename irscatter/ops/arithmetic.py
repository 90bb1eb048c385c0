"""Binary element-wise arithmetic: Add-1, Subtract-1, Multiply-1, Divide-1.

Both inputs have one element type T (any numeric type; boolean is refused as OpenVINO does)
and are broadcast by `auto_broadcast`. Integer arithmetic wraps modulo 2^bits. Divide on
integers floors the quotient (`m_pythondiv`, the default) or truncates it toward zero, and
an integer division by zero is an error naming the position of the zero divisor.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register
from irscatter.shape.broadcast import BroadcastError, broadcast

AutoBroadcast = Annotated[Literal["none", "numpy", "pdpd"], Lower]


class BroadcastAttrs(OpAttrs):
    auto_broadcast: AutoBroadcast = "numpy"


class BinaryArithmetic(Op):
    """Shared inference for the arithmetic ops; subclasses give `kernel`."""

    Attrs: ClassVar[type[OpAttrs]] = BroadcastAttrs
    inputs = ("a", "b")
    kernel: ClassVar[np.ufunc]

    def infer(self, a: TensorInfo, b: TensorInfo) -> TensorInfo:
        check(
            a.etype == b.etype or ElementType.dynamic in (a.etype, b.etype),
            "same-element-type",
            f"inputs must have the same element type, found {a.etype} and {b.etype}",
            port="input 1",
        )
        etype = a.etype if a.etype is not ElementType.dynamic else b.etype
        check(
            etype not in (ElementType.boolean, ElementType.string),
            "numeric-type",
            f"arithmetic is not defined for {etype} tensors",
            port="input 0",
        )
        try:
            shape = broadcast(self.attrs.auto_broadcast, a.shape, b.shape)
        except BroadcastError as e:
            check(False, "broadcast", f"{a.shape} and {b.shape} do not broadcast: {e}", port="input 1")
        return TensorInfo(etype, shape)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.kernel(a, b)


@register("Add", 1)
class Add(BinaryArithmetic):
    kernel = np.add


@register("Subtract", 1)
class Subtract(BinaryArithmetic):
    kernel = np.subtract


@register("Multiply", 1)
class Multiply(BinaryArithmetic):
    kernel = np.multiply


@register("Divide", 1)
class Divide(BinaryArithmetic):
    class Attrs(BroadcastAttrs):
        m_pythondiv: IRBool = True

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind not in "iu":
            return np.divide(a, b)
        zero = b == 0
        if zero.any():
            where = tuple(int(i) for i in np.argwhere(zero)[0])
            raise ExecutionError(f"integer division by zero: the divisor is 0 at {list(where)}", port="input 1")
        if self.attrs.m_pythondiv or a.dtype.kind == "u":
            return np.floor_divide(a, b)
        quotient = np.floor_divide(a, b)
        inexact = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return np.where(inexact, quotient + 1, quotient).astype(quotient.dtype)
