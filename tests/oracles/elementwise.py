"""Oracles of the element-wise math, predicate and bitwise ops: one Python step per element.

Floats go through Python's `math` in double precision and are returned as f64, so that the
harness rounds them once to the output type. Integers follow the rules of
`irscatter/ops/elementwise/unary.py` and `binary.py`, written out per element: the real result
of the integer is rounded (halves away from zero) or truncated, then converted as C++ does on
x86-64 (through a 32- or 64-bit signed conversion that gives the width's minimum for what it
cannot hold, then the type's low bits).

    unary("Cos")(x)                 # Cos-1 of every element of x
    unary("IsInf", detect_negative=False)(x)
    binary("BitwiseLeftShift")(a, b)
    binary("Atan2")(y, x)
"""

from __future__ import annotations

import math
import struct

import numpy as np


def _is_integer(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def _wrap(value: int, dtype: np.dtype) -> int:
    """The low bits of `value` read as an integer of `dtype` (two's complement)."""
    bits = np.dtype(dtype).itemsize * 8
    value &= (1 << bits) - 1
    if np.dtype(dtype).kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def cpp_cast(r: float, dtype: np.dtype) -> int:
    """static_cast<T>(r) of an integral double `r`, as x86-64 code computes it."""
    dtype = np.dtype(dtype)
    width = 64 if dtype.itemsize == 8 or dtype == np.uint32 else 32
    top = 0
    if dtype == np.uint64 and r >= 2.0**63:
        r, top = r - 2.0**63, 1 << 63
    if math.isfinite(r) and -(2.0 ** (width - 1)) <= r < 2.0 ** (width - 1):
        converted = int(r)
    else:
        converted = -(1 << (width - 1))  # the processor's "integer indefinite"
    return _wrap(converted ^ top if top else converted, dtype)


def half_away(r: float) -> float:
    """The integer nearest to r, halves away from zero (C's round)."""
    if not math.isfinite(r):
        return r
    whole = float(math.trunc(r))
    if abs(r - whole) >= 0.5:
        whole += math.copysign(1.0, r)
    return whole


def _erfinv(v: float) -> float:
    """The double y with erf(y) nearest v, by bisection over the bit patterns of doubles."""
    if math.isnan(v) or v == 0:
        return v
    if abs(v) > 1:
        return math.nan
    if abs(v) == 1:
        return math.copysign(math.inf, v)
    t = abs(v)

    def residual(y: float) -> float:  # erf(y) - t, without cancellation near 1
        return math.erf(y) - t if t < 0.5 else (1 - t) - math.erfc(y)

    def as_float(bits: int) -> float:
        return struct.unpack("<d", struct.pack("<q", bits))[0]

    lo, hi = 0, struct.unpack("<q", struct.pack("<d", 7.0))[0]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if residual(as_float(mid)) < 0:
            lo = mid
        else:
            hi = mid
    a, b = as_float(lo), as_float(hi)
    return math.copysign(a if abs(residual(a)) <= abs(residual(b)) else b, v)


def _log(v: float) -> float:
    if v == 0:
        return -math.inf
    return math.log(v) if v > 0 or math.isnan(v) else math.nan


def _atanh(v: float) -> float:
    if abs(v) == 1:
        return math.copysign(math.inf, v)
    return math.atanh(v) if abs(v) < 1 or math.isnan(v) else math.nan


def _sinh(v: float) -> float:
    try:
        return math.sinh(v)
    except OverflowError:
        return math.copysign(math.inf, v)


def _grows(f):
    def g(v: float) -> float:
        try:
            return f(v)
        except OverflowError:
            return math.inf
    return g


# name: (the real function, how integers round: "round", "trunc" or None where not defined)
REAL = {
    "Acos": (math.acos, "round"), "Acosh": (math.acosh, "round"), "Asin": (math.asin, "trunc"),
    "Asinh": (math.asinh, "round"), "Atan": (math.atan, "round"), "Atanh": (_atanh, None),
    "Cos": (math.cos, "round"), "Cosh": (_grows(math.cosh), "round"), "Erf": (math.erf, "round"),
    "ErfInv": (_erfinv, None), "Exp": (_grows(math.exp), None), "Log": (_log, "trunc"),
    "Sin": (math.sin, "trunc"), "Sinh": (_sinh, "round"), "Sqrt": (math.sqrt, "round"),
    "Tan": (math.tan, "round"), "Tanh": (math.tanh, "round"),
}


def _real(name: str, v, dtype: np.dtype):
    f, rounding = REAL[name]
    x = float(v)
    try:
        r = f(x)
    except ValueError:  # outside the function's domain (acos 2, sqrt -1, sin inf)
        r = math.nan
    if not _is_integer(dtype):
        return r
    if name == "Atanh":  # the spec's rule for integers: saturate by sign
        info = np.iinfo(dtype)
        return info.max if v > 0 else info.min if v < 0 else 0
    return cpp_cast(half_away(r) if rounding == "round" else float(math.trunc(r)) if math.isfinite(r) else r, dtype)


def _sign(v, dtype):
    if _is_integer(dtype):
        return (v > 0) - (v < 0)
    v = float(v)
    if math.isnan(v):
        return math.nan
    return 1.0 if v > 0 else -1.0 if v < 0 else 0.0


def _round(v, dtype, mode):
    if _is_integer(dtype):
        return int(v)
    v = float(v)
    if not math.isfinite(v):
        return v
    if mode == "half_to_even":
        return math.copysign(float(round(v)), v)  # Python's round() of a float ties to even
    return math.copysign(half_away(v), v)


def _elementary(name: str, v, dtype: np.dtype, attrs: dict):
    integer = _is_integer(dtype)
    if name in REAL:
        return _real(name, v, dtype)
    if name == "Abs":
        return _wrap(abs(int(v)), dtype) if integer else abs(float(v))
    if name == "Negative":
        return _wrap(-int(v), dtype) if integer else -float(v)
    if name == "Ceiling":
        return int(v) if integer else (float(math.ceil(v)) if math.isfinite(v) else float(v))
    if name == "Floor":
        return int(v) if integer else (float(math.floor(v)) if math.isfinite(v) else float(v))
    if name == "Round":
        return _round(v, dtype, attrs.get("mode", "half_to_even"))
    if name == "Sign":
        return _sign(v, dtype)
    if name == "IsFinite":
        return math.isfinite(float(v))
    if name == "IsNaN":
        return math.isnan(float(v))
    if name == "IsInf":
        v = float(v)
        return (v == math.inf and attrs.get("detect_positive", True)) or \
               (v == -math.inf and attrs.get("detect_negative", True))
    if name == "BitwiseNot":
        return (not v) if np.dtype(dtype) == np.bool_ else _wrap(~int(v), dtype)
    raise KeyError(name)


BOOLEAN_OUTPUT = ("IsFinite", "IsInf", "IsNaN")


def unary(name: str, **attrs):
    """The oracle of the unary op `name` with attributes `attrs`."""

    def oracle(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        out_dtype = np.bool_ if name in BOOLEAN_OUTPUT else (x.dtype if _is_integer(x.dtype) or x.dtype == np.bool_
                                                              else np.float64)
        out = np.empty(x.shape, out_dtype)
        for index in np.ndindex(x.shape):
            value = x[index]
            value = bool(value) if x.dtype == np.bool_ else int(value) if _is_integer(x.dtype) else float(value)
            out[index] = _elementary(name, value, x.dtype, attrs)
        return out

    return oracle


def _shift(a: int, b: int, dtype: np.dtype, left: bool) -> int:
    """C++'s `a << b` / `a >> b` for T on x86-64: T promoted to int (32 bits) unless it is u32
    (32 bits, unsigned) or 64 bits wide, the count taken modulo that width, the result
    narrowed to T."""
    dtype = np.dtype(dtype)
    width = 64 if dtype.itemsize == 8 else 32
    count = b & (width - 1)
    if left:
        return _wrap(a << count, dtype)
    return _wrap(a >> count, dtype)  # Python's >> sign-fills a negative a, as x86's sar does


def _binary_element(name: str, a, b, dtype: np.dtype):
    if name == "Atan2":
        return math.atan2(float(a), float(b))  # C's atan2, signed zeros and infinities included
    if np.dtype(dtype) == np.bool_:
        a, b = bool(a), bool(b)
        return {"BitwiseAnd": a and b, "BitwiseOr": a or b, "BitwiseXor": a != b, "Xor": a != b}[name]
    a, b = int(a), int(b)
    if name == "BitwiseAnd":
        return _wrap(a & b, dtype)
    if name == "BitwiseOr":
        return _wrap(a | b, dtype)
    if name == "BitwiseXor":
        return _wrap(a ^ b, dtype)
    if name == "BitwiseLeftShift":
        return _shift(a, b, dtype, left=True)
    if name == "BitwiseRightShift":
        return _shift(a, b, dtype, left=False)
    raise KeyError(name)


def binary(name: str):
    """The oracle of the binary op `name` (numpy broadcasting, which the test cases' pdpd
    shapes agree with)."""

    def oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        out = np.empty(a.shape, a.dtype if _is_integer(a.dtype) or a.dtype == np.bool_ else np.float64)
        for index in np.ndindex(a.shape):
            out[index] = _binary_element(name, a[index], b[index], a.dtype)
        return out

    return oracle


__all__ = ["REAL", "binary", "cpp_cast", "half_away", "unary"]
