"""Binary element-wise arithmetic: Add-1, Subtract-1, Multiply-1, Divide-1, Maximum-1,
Minimum-1, SquaredDifference-1, Power-1, FloorMod-1, Mod-1.

Both inputs have one element type T (any numeric type; boolean is refused as OpenVINO does)
and are broadcast by `auto_broadcast`. Integer arithmetic wraps modulo 2^bits. Divide on
integers floors the quotient (`m_pythondiv`, the default) or truncates it toward zero, and
an integer division by zero is an error naming the position of the zero divisor; the same
holds for FloorMod (remainder with the divisor's sign) and Mod (with the dividend's sign).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check, same_element_type
from irscatter.ops.registry import register
from irscatter.shape.broadcast import BroadcastError, broadcast

AutoBroadcast = Annotated[Literal["none", "numpy", "pdpd"], Lower]


class BroadcastAttrs(OpAttrs):
    auto_broadcast: AutoBroadcast = "numpy"


class BinaryElementwise(Op):
    """Shared inference for binary element-wise ops: one element type T for both inputs,
    broadcast by `auto_broadcast`. Subclasses say which T they accept and give `kernel`."""

    Attrs: ClassVar[type[OpAttrs]] = BroadcastAttrs
    inputs = ("a", "b")
    kernel: ClassVar[np.ufunc]
    accepts: ClassVar[str] = "numeric"  # "numeric", "any" (but string) or "boolean"
    boolean_output: ClassVar[bool] = False
    elementwise = True

    def infer(self, a: TensorInfo, b: TensorInfo) -> TensorInfo:
        etype = same_element_type(a, b, "inputs must have the same element type", "same-element-type", "input 1")
        if self.accepts == "boolean":
            check(etype in (ElementType.boolean, ElementType.dynamic), "boolean-type",
                  f"inputs must be boolean, found {etype}", port="input 0")
        else:
            refused = (ElementType.string,) if self.accepts == "any" else (ElementType.boolean, ElementType.string)
            if etype in refused:
                check(False, "numeric-type", f"{self.type_name} is not defined for {etype} tensors", port="input 0")
        try:
            shape = broadcast(self.attrs.auto_broadcast, a.shape, b.shape)
        except BroadcastError as e:
            check(False, "broadcast", f"{a.shape} and {b.shape} do not broadcast: {e}", port="input 1")
        return TensorInfo(ElementType.boolean if self.boolean_output else etype, shape)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.kernel(a, b)


BinaryArithmetic = BinaryElementwise


def _check_nonzero_divisor(b: np.ndarray) -> None:
    zero = b == 0
    if zero.any():
        where = tuple(int(i) for i in np.argwhere(zero)[0])
        raise ExecutionError(f"integer division by zero: the divisor is 0 at {list(where)}", port="input 1")


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
        _check_nonzero_divisor(b)
        if self.attrs.m_pythondiv or a.dtype.kind == "u":
            return np.floor_divide(a, b)
        quotient = np.floor_divide(a, b)
        inexact = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return np.where(inexact, quotient + 1, quotient).astype(quotient.dtype)


@register("Maximum", 1)
class Maximum(BinaryArithmetic):
    kernel = np.maximum


@register("Minimum", 1)
class Minimum(BinaryArithmetic):
    kernel = np.minimum


@register("SquaredDifference", 1)
class SquaredDifference(BinaryArithmetic):
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.subtract(a, b)
        return np.multiply(d, d)


@register("Power", 1)
class Power(BinaryArithmetic):
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "iu" and (np.asarray(b) < 0).any():
            raise ExecutionError("an integer power with a negative exponent has no integer result", port="input 1")
        return np.power(a, b)


class Remainder(BinaryArithmetic):
    """An integer remainder by zero is an error, as for Divide."""

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "iu":
            _check_nonzero_divisor(b)
        return self.kernel(a, b)


@register("FloorMod", 1)
class FloorMod(Remainder):
    """The remainder with the sign of the divisor (Python's %)."""

    kernel = np.mod


@register("Mod", 1)
class Mod(Remainder):
    """The remainder with the sign of the dividend (C's fmod)."""

    kernel = np.fmod
