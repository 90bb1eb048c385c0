"""The binary element-wise ops: arithmetic (Add-1, Subtract-1, Multiply-1, Divide-1, Maximum-1,
Minimum-1, SquaredDifference-1, Power-1, FloorMod-1, Mod-1, Atan2-17), comparisons (Equal-1, NotEqual-1,
Less-1, LessEqual-1, Greater-1, GreaterEqual-1), logic (LogicalAnd-1, LogicalOr-1, LogicalXor-1 and
opset1's Xor-1, the same xor of booleans under its older name) and bitwise ops (BitwiseAnd-13,
BitwiseOr-13, BitwiseXor-13, BitwiseLeftShift-15, BitwiseRightShift-15).

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

Atan2(y, x), a draft of opset17 (its spec page defines it; the pinned OpenVINO does not ship
it), takes floats only and gives the angle of the point (x, y) in [-pi, pi], as C's atan2:
atan2(+-0, +0) is +-0 and atan2(+-0, -0) is +-pi, atan2(+-0, x < 0) is +-pi, atan2(+-inf, +inf) is
+-pi/4 and atan2(+-inf, -inf) +-3pi/4, a NaN on either side gives NaN. It is computed in f64
and rounded once to T (nearest-even, as every float narrowing in irscatter). OpenVINO's newer
core reference computes f32 with C's atan2f (within an ulp, not always correctly rounded), and
f16 and bf16 in f32 converted back by its Convert: f16 to nearest-even (a tie rounded twice
can differ), bf16 by its constant-folding rule (see ops/common/numeric.py), up to one bf16 ulp
from nearest-even.

Comparisons take any non-string T and give booleans; the logical ops take booleans.

BitwiseAnd, BitwiseOr and BitwiseXor take integers (bit by bit, two's complement) and booleans
(where they are LogicalAnd, LogicalOr and LogicalXor). The shifts take integers only: `a << b`
and `a >> b`, the right shift arithmetic (sign-filling) for signed types and logical for
unsigned ones. The spec leaves shift counts that are negative or not less than the type's width
to the implementation; irscatter does what OpenVINO's reference (C++ `a << b`) does on x86-64:
types narrower than 32 bits are widened to a 32-bit int first (so i8 1 << 8 is 256, kept to its
low 8 bits: 0), the shift runs in 32 bits (64 for i64, u64) with the count taken modulo that
width (its low 5 or 6 bits, so -1 is 31 and 33 is 1), and the result keeps the type's low bits.
OpenVINO's CPU plugin agrees up to 32 bits; it shifts i64 and u64 in 32 bits.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.broadcast import BroadcastError, broadcast
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Lower, OpAttrs, TensorInfo, check
from irscatter.ops.common import blocks, strict
from irscatter.ops.common.types import same_element_type
from irscatter.ops.elementwise.table import Row, TableOp, declare

AutoBroadcast = Annotated[Literal["none", "numpy", "pdpd"], Lower]


class BroadcastAttrs(OpAttrs):
    auto_broadcast: AutoBroadcast = "numpy"


class BinaryElementwise(TableOp):
    """Inference shared by every binary element-wise op: one element type T for both inputs,
    accepted by the op's row, and the two shapes broadcast by `auto_broadcast`."""

    Attrs = BroadcastAttrs
    attrs: BroadcastAttrs
    inputs = ("a", "b")
    labels = {
        "integer-overflow": "strict mode: integer arithmetic leaves the type's range, and irscatter wraps it",
        "shift-count": "strict mode: a shift count is negative or not less than the type's width",
    }

    def infer(self, a: TensorInfo, b: TensorInfo) -> TensorInfo:
        etype = same_element_type(a, b, "inputs must have the same element type", "same-element-type", self.port("b"))
        out = self.accept(etype, self.port("a"))
        try:
            shape = broadcast(self.attrs.auto_broadcast, a.shape, b.shape)
        except BroadcastError as e:
            check(False, "broadcast", f"{a.shape} and {b.shape} do not broadcast: {e}", port=self.port("b"))
        return TensorInfo(out, shape)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:  # type: ignore[override]
        if a.size < blocks.BINARY_SMALLEST and b.size < blocks.BINARY_SMALLEST:  # (most layers: one test)
            return self.row.kernel(a, b, **self.kernel_args)
        # A large float product or sum (a residual Add, a scale's Multiply) on both cores: the
        # kernel is then the ufunc alone, whose element's bits do not depend on the cut.
        ufunc = self.row.float_ufunc
        if ufunc is not None and a.dtype == b.dtype and a.dtype.kind == "f":
            return blocks.binary(ufunc, a, b)
        return self.row.kernel(a, b, **self.kernel_args)


DIVISOR = BinaryElementwise.port("b")


def _check_nonzero_divisor(b: np.ndarray) -> None:
    zero = b == 0
    if zero.any():
        where = tuple(int(i) for i in np.argwhere(zero)[0])
        raise ExecutionError(f"integer division by zero: the divisor is 0 at {list(where)}", port=DIVISOR)


def _report_overflow(bad: np.ndarray, a: np.ndarray, b: np.ndarray, symbol: str) -> None:
    """Strict mode: where `a symbol b` leaves the integer type's range (the mask `bad`)."""
    count = int(np.count_nonzero(bad))
    if count == 0:
        return
    left, right = np.broadcast_arrays(a, b)
    shown = ", ".join(f"{[int(i) for i in w]} ({left[tuple(w)]} {symbol} {right[tuple(w)]})"
                      for w in np.argwhere(bad)[:strict.SHOWN])
    more = f" ({count} positions in all)" if count > strict.SHOWN else ""
    bits = left.dtype.itemsize * 8
    strict.report(label="integer-overflow", message=f"{left.dtype} result out of range at {shown}{more}; the spec "
                  f"leaves overflow undefined, irscatter wraps modulo 2^{bits} as OpenVINO's reference does (its CPU "
                  f"plugin saturates 8-bit types)")


def _wrapped_sum_overflows(a: np.ndarray, b: np.ndarray, out: np.ndarray, subtract: bool) -> np.ndarray:
    """Where the wrapped `out` = a + b (or a - b) differs from the exact result, by the signs
    (signed) or the order (unsigned) of the operands: no wider type needed, 64 bits included."""
    if out.dtype.kind == "u":
        return np.broadcast_to(a < b if subtract else out < a, out.shape)
    if subtract:
        return ((a ^ b) & (a ^ out)) < 0
    return ((a ^ out) & (b ^ out)) < 0


def _wrapped_product_overflows(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Where the wrapped product differs from the exact one: dividing it back does not give `b`
    (exact for any width), and -1 times the type's minimum, whose quotient wraps back too."""
    a, b = np.broadcast_arrays(a, b)
    nonzero = a != 0
    with np.errstate(divide="ignore", over="ignore"):
        quotient = np.floor_divide(out, np.where(nonzero, a, 1))
    bad = nonzero & (quotient != b)
    if out.dtype.kind == "i":
        lowest = np.iinfo(out.dtype).min
        bad |= ((a == -1) & (b == lowest)) | ((b == -1) & (a == lowest))
    return bad


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.add(a, b)
    if out.dtype.kind in "iu" and strict.active():
        _report_overflow(_wrapped_sum_overflows(a, b, out, subtract=False), a, b, "+")
    return out


def subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.subtract(a, b)
    if out.dtype.kind in "iu" and strict.active():
        _report_overflow(_wrapped_sum_overflows(a, b, out, subtract=True), a, b, "-")
    return out


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.multiply(a, b)
    if out.dtype.kind in "iu" and strict.active():
        _report_overflow(_wrapped_product_overflows(a, b, out), a, b, "*")
    return out


def _report_lowest_by_minus_one(a: np.ndarray, b: np.ndarray, symbol: str) -> None:
    """Strict mode: the signed minimum divided by -1, whose quotient the type cannot hold (C++
    leaves it, and the remainder of the same division, undefined)."""
    if a.dtype.kind == "i" and strict.active():
        _report_overflow((a == np.iinfo(a.dtype).min) & (b == -1), a, b, symbol)


class DivideAttrs(BroadcastAttrs):
    m_pythondiv: IRBool = True


def divide(a: np.ndarray, b: np.ndarray, *, m_pythondiv: bool) -> np.ndarray:
    """Floats divide; integers floor the quotient (`m_pythondiv`) or truncate it toward zero."""
    if a.dtype.kind not in "iu":
        return np.divide(a, b)
    _check_nonzero_divisor(b)
    _report_lowest_by_minus_one(a, b, "/")
    if m_pythondiv or a.dtype.kind == "u":
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


def squared_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.subtract(a, b)
    return np.multiply(d, d)


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.power, except for integers to negative powers: truncated, and 0 to one is an error."""
    if a.dtype.kind != "i" or not (negative := np.asarray(b) < 0).any():
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return np.power(a, b)
    base, exponent = np.broadcast_arrays(a, b)
    negative = np.broadcast_to(negative, base.shape)
    zero = negative & (base == 0)
    if zero.any():
        where = [int(i) for i in np.argwhere(zero)[0]]
        raise ExecutionError(f"0 to the negative power {exponent[tuple(where)]} at {where} has no integer value",
                             port=DIVISOR)
    with np.errstate(over="ignore"):
        out = np.power(base, np.where(negative, 0, exponent))
    # |base| >= 2 truncates to 0; 1 stays 1; -1 alternates with the exponent's parity.
    fraction = np.where(base == 1, 1, np.where(base == -1, np.where(exponent % 2 == 0, 1, -1), 0))
    return np.where(negative, fraction, out).astype(out.dtype)


def floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The remainder with the sign of the divisor (Python's %); an integer divisor 0 is an error."""
    if a.dtype.kind in "iu":
        _check_nonzero_divisor(b)
        _report_lowest_by_minus_one(a, b, "floor-mod")
    return np.mod(a, b)


def mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The remainder with the sign of the dividend (C's fmod); an integer divisor 0 is an error."""
    if a.dtype.kind in "iu":
        _check_nonzero_divisor(b)
        _report_lowest_by_minus_one(a, b, "mod")
    return np.fmod(a, b)


def atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The four-quadrant arctangent of y / x, in f64 rounded once to the inputs' float type."""
    dtype = np.result_type(y, x)
    with np.errstate(all="ignore"):
        angle = np.arctan2(np.asarray(y, dtype=np.float64), np.asarray(x, dtype=np.float64))
        return angle.astype(dtype, copy=False)


def _shift(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    """`a << b` or `a >> b` as C++ computes it on x86-64 (see the module doc)."""
    dtype = np.result_type(a, b)
    if dtype.itemsize == 8:
        wide = dtype
    elif dtype == np.uint32:
        wide = np.dtype(np.uint32)
    else:
        wide = np.dtype(np.int32)  # C++ promotes narrower types (and i32) to int
    bits = wide.itemsize * 8
    if strict.active():
        width = np.dtype(dtype).itemsize * 8
        strict.report_values((np.asarray(b) < 0) | (np.asarray(b) >= width), b, label="shift-count",
                             port=DIVISOR, what="shift count", consequence=f"the spec leaves counts outside "
                             f"[0, {width - 1}] to the implementation; irscatter shifts as OpenVINO's reference "
                             f"does on x86-64 (count modulo {bits}, in {bits} bits)")
    count = (np.asarray(b).astype(np.int64) & (bits - 1)).astype(wide)
    value = np.asarray(a).astype(wide)
    out = np.left_shift(value, count) if left else np.right_shift(value, count)
    return out.astype(dtype)


def bitwise_and(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_and(a, b).astype(np.result_type(a, b), copy=False)  # sub-byte types stay theirs


def bitwise_or(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_or(a, b).astype(np.result_type(a, b), copy=False)


def bitwise_xor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_xor(a, b).astype(np.result_type(a, b), copy=False)


def shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _shift(a, b, left=True)


def shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _shift(a, b, left=False)


BOOL = ElementType.boolean

OPS = declare(BinaryElementwise, (
    Row("Add", 1, add, float_ufunc=np.add),
    Row("Subtract", 1, subtract, float_ufunc=np.subtract),
    Row("Multiply", 1, multiply, float_ufunc=np.multiply),
    Row("Divide", 1, divide, attrs=DivideAttrs, float_ufunc=np.divide),
    Row("Maximum", 1, select_max),
    Row("Minimum", 1, select_min),
    Row("SquaredDifference", 1, squared_difference),
    Row("Power", 1, power),
    Row("FloorMod", 1, floor_mod),
    Row("Mod", 1, mod),
    Row("Atan2", 17, atan2, accepts="float", doc="Atan2-17: the angle of the point (x, y), in [-pi, pi]."),
    Row("Equal", 1, np.equal, accepts="any", output=BOOL),
    Row("NotEqual", 1, np.not_equal, accepts="any", output=BOOL),
    Row("Less", 1, np.less, accepts="any", output=BOOL),
    Row("LessEqual", 1, np.less_equal, accepts="any", output=BOOL),
    Row("Greater", 1, np.greater, accepts="any", output=BOOL),
    Row("GreaterEqual", 1, np.greater_equal, accepts="any", output=BOOL),
    Row("LogicalAnd", 1, np.logical_and, accepts="boolean"),
    Row("LogicalOr", 1, np.logical_or, accepts="boolean"),
    Row("LogicalXor", 1, np.logical_xor, accepts="boolean"),
    Row("Xor", 1, np.logical_xor, accepts="boolean", doc="Xor-1: opset1's name of LogicalXor."),
    Row("BitwiseAnd", 13, bitwise_and, accepts="bitwise", doc="BitwiseAnd-13: a & b; LogicalAnd for booleans."),
    Row("BitwiseOr", 13, bitwise_or, accepts="bitwise", doc="BitwiseOr-13: a | b; LogicalOr for booleans."),
    Row("BitwiseXor", 13, bitwise_xor, accepts="bitwise", doc="BitwiseXor-13: a ^ b; LogicalXor for booleans."),
    Row("BitwiseLeftShift", 15, shift_left, accepts="integral", doc="BitwiseLeftShift-15: a << b."),
    Row("BitwiseRightShift", 15, shift_right, accepts="integral", doc="BitwiseRightShift-15: a >> b."),
))
