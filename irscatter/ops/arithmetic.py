"""Binary element-wise arithmetic: Add-1, Subtract-1, Multiply-1, Divide-1, Maximum-1,
Minimum-1, SquaredDifference-1, Power-1, FloorMod-1, Mod-1.

Both inputs have one element type T (any numeric type; boolean is refused as OpenVINO does)
and are broadcast by `auto_broadcast`. Integer arithmetic wraps modulo 2^bits. Divide on
integers floors the quotient (`m_pythondiv`, the default) or truncates it toward zero, and
an integer division by zero is an error naming the position of the zero divisor; the same
holds for FloorMod (remainder with the divisor's sign) and Mod (with the dividend's sign).

Maximum and Minimum select by one comparison, as OpenVINO's core reference does
(`std::max(a, b)` is `a < b ? b : a`), so a NaN is chosen only when it is the first input:
max(NaN, 1) is NaN and max(1, NaN) is 1. The CPU plugin's vector instructions pick the other
operand (max(NaN, 1) is 1); the spec says only max(a, b).

Power on integers with a negative exponent is the real power truncated toward zero, as the
core reference and the CPU plugin compute it: 2 ** -1 is 0, (-1) ** -3 is -1. 0 to a negative
power is an error naming the position (OpenVINO converts the infinite result to an integer,
which C++ leaves undefined; on x86 it gives the type's minimum).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check, same_element_type
from irscatter.ops.registry import register
from irscatter.ir.broadcast import BroadcastError, broadcast

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
        etype = same_element_type(a, b, "inputs must have the same element type", "same-element-type", self.port("b"))
        if self.accepts == "boolean":
            check(etype in (ElementType.boolean, ElementType.dynamic), "boolean-type",
                  f"inputs must be boolean, found {etype}", port=self.port("a"))
        else:
            refused = (ElementType.string,) if self.accepts == "any" else (ElementType.boolean, ElementType.string)
            if etype in refused:
                check(False, "numeric-type", f"{self.type_name} is not defined for {etype} tensors", port=self.port("a"))
        try:
            shape = broadcast(self.attrs.auto_broadcast, a.shape, b.shape)
        except BroadcastError as e:
            check(False, "broadcast", f"{a.shape} and {b.shape} do not broadcast: {e}", port=self.port("b"))
        return TensorInfo(ElementType.boolean if self.boolean_output else etype, shape)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.kernel(a, b)


def _check_nonzero_divisor(b: np.ndarray, port: str) -> None:
    zero = b == 0
    if zero.any():
        where = tuple(int(i) for i in np.argwhere(zero)[0])
        raise ExecutionError(f"integer division by zero: the divisor is 0 at {list(where)}", port=port)


@register("Add", 1)
class Add(BinaryElementwise):
    kernel = np.add


@register("Subtract", 1)
class Subtract(BinaryElementwise):
    kernel = np.subtract


@register("Multiply", 1)
class Multiply(BinaryElementwise):
    kernel = np.multiply


@register("Divide", 1)
class Divide(BinaryElementwise):
    class Attrs(BroadcastAttrs):
        m_pythondiv: IRBool = True

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind not in "iu":
            return np.divide(a, b)
        _check_nonzero_divisor(b, self.port("b"))
        if self.attrs.m_pythondiv or a.dtype.kind == "u":
            return np.floor_divide(a, b)
        quotient = np.floor_divide(a, b)
        inexact = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return np.where(inexact, quotient + 1, quotient).astype(quotient.dtype)


def select_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a < b ? b : a` element-wise (C++'s std::max): keeps `a` when the two do not compare."""
    if np.asarray(a).dtype.kind in "iub":
        return np.maximum(a, b)  # no NaN to choose between: the ufunc is the same and faster
    return np.where(np.less(a, b), b, a)


def select_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`b < a ? b : a` element-wise (C++'s std::min): keeps `a` when the two do not compare."""
    if np.asarray(a).dtype.kind in "iub":
        return np.minimum(a, b)
    return np.where(np.less(b, a), b, a)


@register("Maximum", 1)
class Maximum(BinaryElementwise):
    kernel = staticmethod(select_max)


@register("Minimum", 1)
class Minimum(BinaryElementwise):
    kernel = staticmethod(select_min)


@register("SquaredDifference", 1)
class SquaredDifference(BinaryElementwise):
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.subtract(a, b)
        return np.multiply(d, d)


@register("Power", 1)
class Power(BinaryElementwise):
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind != "i" or not (negative := np.asarray(b) < 0).any():
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                return np.power(a, b)
        base, exponent = np.broadcast_arrays(a, b)
        negative = np.broadcast_to(negative, base.shape)
        zero = negative & (base == 0)
        if zero.any():
            where = [int(i) for i in np.argwhere(zero)[0]]
            raise ExecutionError(f"0 to the negative power {exponent[tuple(where)]} at {where} has no integer value",
                                 port=self.port("b"))
        with np.errstate(over="ignore"):
            out = np.power(base, np.where(negative, 0, exponent))
        # |base| >= 2 truncates to 0; 1 stays 1; -1 alternates with the exponent's parity.
        fraction = np.where(base == 1, 1, np.where(base == -1, np.where(exponent % 2 == 0, 1, -1), 0))
        return np.where(negative, fraction, out).astype(out.dtype)


class Remainder(BinaryElementwise):
    """An integer remainder by zero is an error, as for Divide."""

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "iu":
            _check_nonzero_divisor(b, self.port("b"))
        return self.kernel(a, b)


@register("FloorMod", 1)
class FloorMod(Remainder):
    """The remainder with the sign of the divisor (Python's %)."""

    kernel = np.mod


@register("Mod", 1)
class Mod(Remainder):
    """The remainder with the sign of the dividend (C's fmod)."""

    kernel = np.fmod
