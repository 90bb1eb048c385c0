"""The unary element-wise ops, as rows of one table: LogicalNot-1; the arithmetic Abs-1, Acos-1,
Acosh-4, Asin-1, Asinh-4, Atan-1, Atanh-4, Ceiling-1, Cos-1, Cosh-1, Erf-1, ErfInv-17, Exp-1,
Floor-1, Log-1, Negative-1, Round-5, Sign-1, Sin-1, Sinh-1, Sqrt-1, Tan-1, Tanh-1; the
predicates IsFinite-10, IsInf-10, IsNaN-10; and BitwiseNot-13.

Each output element is the kernel applied to the input element at the same position; the
output has the input's shape and (unless the row says otherwise) its element type.

Floats. The real functions are computed in f64 (whatever the input's float type, which f64
holds exactly) and rounded once to the output type, so an f32/f16/bf16 result is the exact
value correctly rounded but for the rare double rounding of a tie. Special values follow IEEE
and C's <math.h>: acos/asin of |x| > 1, acosh of x < 1, atanh of |x| > 1, log and sqrt of
x < 0 are NaN; atanh(+-1) and log(0) are +-inf; erfinv(+-1) is +-inf and erfinv of |x| > 1 NaN.

Integers. The spec says how integers round for Sqrt and Tanh only ("half up", though neither
ever meets a half) and in Tan's example. OpenVINO's core reference computes the function of
the integer in f64, then either rounds to the nearest integer, halves away from zero (Acos,
Acosh, Asinh, Atan, Cos, Cosh, Erf, Sinh, Sqrt, Tan, Tanh) or truncates toward zero (Asin,
Log, Sin), and irscatter does the same per op. Atanh gives the type's maximum for x > 0, its
minimum for x < 0 and 0 for 0 (the spec's formula, as every non-zero integer has |x| >= 1).
A result that is NaN, infinite or out of the type's range (sqrt(-1), log(0), cosh(100)) is
undefined in C++; irscatter converts it as OpenVINO's reference does on x86-64, through the
processor's conversion to a 32-bit integer (64-bit for u32, i64, u64), which gives that
width's minimum when the value does not fit, then keeps the type's low bits: sqrt(-1) is
-2^31 for i32 and 0 for i8 and u32. u64 values of 2^63 and more are converted as value - 2^63
with the top bit set again (NaN gives 2^63, +inf 0). A negative result wraps for unsigned types
(cos(3) of u8 is 255).

Abs of the minimum of a signed type and Negative of it wrap to that minimum. Abs and Sign of
an unsigned type are the value and 0/1. Ceiling, Floor and Round leave integers unchanged.
Negative takes floats and signed integers (the spec's "signed numeric type"); Exp, ErfInv and
the predicates take floats only. OpenVINO's own type checks also accept integers for Exp
(truncating, as Log does) and unsigned integers for Negative; the spec does not.

Sign gives -1, 0 or 1, and NaN for NaN as the spec says; -0.0 gives +0.0.

Round: `half_to_even` rounds ties to the even neighbour, `half_away_from_zero` away from zero;
values already integral (all of them beyond 2^23 in f32) are unchanged, -0.4 gives -0.0.

ErfInv is the exact inverse of erf, as the spec defines it (to a few ulps in f64). OpenVINO's
reference evaluates a single-precision rational approximation (Giles 2011) instead, within 2
f32 ulps up to |x| = 0.99 but wrong past the 7th digit for f64; its CPU plugin is good to
about 1e-4 relative (0.5% at x = 0.99999994, where both are ill-conditioned).

OpenVINO's CPU plugin departs on integers (it computes in f32 and rounds every result to the
nearest integer: exp(1) of i32 is 3), on f32 denormals for IsFinite (calls them not finite)
and on Round half_away_from_zero (it rounds x + 0.5, so 0.49999997 gives 1).

BitwiseNot flips every bit of an integer (two's complement) and negates a boolean.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Lower, OpAttrs, TensorInfo
from irscatter.ops.common import blocks
from irscatter.ops.common.special import erf, erfinv
from irscatter.ops.elementwise.table import Row, TableOp, declare


class UnaryElementwise(TableOp):
    """Inference shared by every unary element-wise op: the type check of its row."""

    inputs = ("data",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        return TensorInfo(self.accept(data.etype, self.port("data")), data.shape)


BOOL = ElementType.boolean


# --- floats in f64, rounded once ---------------------------------------------------------------


def _is_int(x: np.ndarray) -> bool:
    return x.dtype.kind in "iu"  # (what np.issubdtype(..., np.integer) says, ml_dtypes' int4 included, at a tenth of the cost)


def _float64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _rounded(result: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(result).astype(dtype)


# --- integers: how the reference rounds and converts a real result ------------------------------


def _half_away(r: np.ndarray) -> np.ndarray:
    """The nearest integer, halves away from zero (C's round); x - trunc(x) is exact."""
    whole = np.trunc(r)
    with np.errstate(invalid="ignore"):
        step = np.where(np.abs(r - whole) >= 0.5, np.sign(r), 0.0)
    return whole + step


def _x86_int(r: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """C++'s conversion of the integral (or NaN, infinite, huge) f64 values `r` to integer
    `dtype` as x86-64 compilers emit it: through a signed conversion of 32 bits (64 for u32,
    i64, u64) that yields -2^(width-1) for values it cannot hold, then the type's low bits."""
    dtype = np.dtype(dtype)
    width = 64 if dtype.itemsize == 8 or dtype == np.uint32 else 32
    high = None
    if dtype == np.uint64:
        with np.errstate(invalid="ignore"):
            high = r >= 2.0**63
        r = np.where(high, r - 2.0**63, r)
    limit = 2.0 ** (width - 1)
    with np.errstate(invalid="ignore"):
        fits = (r >= -limit) & (r < limit)
    wide = np.where(fits, r, -limit).astype(np.int64)
    if high is not None:
        return wide.astype(np.uint64) ^ np.where(high, np.uint64(1 << 63), np.uint64(0))
    return wide.astype(dtype)


def real(fn: Callable[[np.ndarray], np.ndarray], integers: str = "round") -> Callable[[np.ndarray], np.ndarray]:
    """The kernel of a real function `fn` (of f64 arrays): floats in f64 rounded once to their
    type; integers in f64, rounded to the nearest (`round`) or toward zero (`trunc`), converted
    as `_x86_int` says."""

    @blocks.by_blocks
    def kernel(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            r = fn(_float64(x))
            if not _is_int(x):
                return np.asarray(r).astype(x.dtype)
            return _x86_int(_half_away(r) if integers == "round" else np.trunc(r), x.dtype)

    return kernel


_erf_of_f64 = real(erf)


@blocks.by_blocks(work=blocks.SPECIAL_FUNCTION_WORK)
def erf_kernel(x: np.ndarray) -> np.ndarray:
    """f32 and f64 straight through scipy's erf, which rounds its f64 value once as `real` does
    but skips the two conversions; other types as `real` computes them."""
    if x.dtype in (np.float32, np.float64):
        with np.errstate(all="ignore"):
            return erf(x)
    return _erf_of_f64(x)


@blocks.by_blocks
def atanh(x: np.ndarray) -> np.ndarray:
    """Floats: atanh; integers: the type's max for x > 0, min for x < 0, 0 for 0."""
    if not _is_int(x):
        with np.errstate(all="ignore"):
            return _rounded(np.arctanh(_float64(x)), x.dtype)
    info = np.iinfo(x.dtype)
    return np.where(x > 0, info.max, np.where(x < 0, info.min, 0)).astype(x.dtype)


# --- exact ops -----------------------------------------------------------------------------------


def _exact(fn: Callable[[np.ndarray], np.ndarray], on_integers: Callable[[np.ndarray], np.ndarray] | None = None):
    """An op whose float result is representable in the input's type: computed in f32 or f64
    (exactly) for floats, by `on_integers` (default: the value unchanged) for integers."""

    def kernel(x: np.ndarray) -> np.ndarray:
        if _is_int(x):
            return on_integers(x) if on_integers is not None else np.array(x, copy=True)
        work = x if x.dtype in (np.float32, np.float64) else np.asarray(x, dtype=np.float32)
        return np.asarray(fn(work)).astype(x.dtype)

    return kernel


def sign(x: np.ndarray) -> np.ndarray:
    """-1, 0 or 1; NaN stays NaN and -0.0 gives +0.0."""
    if _is_int(x):
        return np.sign(x).astype(x.dtype)
    work = x if x.dtype in (np.float32, np.float64) else np.asarray(x, dtype=np.float32)
    return (np.sign(work) + 0.0).astype(x.dtype)  # + 0.0 turns -0.0 into +0.0


class RoundAttrs(OpAttrs):
    mode: Annotated[Literal["half_to_even", "half_away_from_zero"], Lower] = "half_to_even"


def round_(x: np.ndarray, *, mode: str) -> np.ndarray:
    """Ties to even (np.rint) or away from zero; integers unchanged."""
    return _exact(np.rint if mode == "half_to_even" else _half_away)(x)


# --- predicates and bitwise --------------------------------------------------------------------


def _as_float(x: np.ndarray) -> np.ndarray:
    return x if x.dtype in (np.float32, np.float64) else np.asarray(x, dtype=np.float32)


def is_finite(x: np.ndarray) -> np.ndarray:
    return np.isfinite(_as_float(x))


def is_nan(x: np.ndarray) -> np.ndarray:
    return np.isnan(_as_float(x))


class IsInfAttrs(OpAttrs):
    detect_negative: IRBool = True
    detect_positive: IRBool = True


def is_inf(x: np.ndarray, *, detect_negative: bool, detect_positive: bool) -> np.ndarray:
    """True at +inf when `detect_positive`, at -inf when `detect_negative`."""
    work = _as_float(x)
    return ((work == np.inf) & detect_positive) | ((work == -np.inf) & detect_negative)


def bitwise_not(x: np.ndarray) -> np.ndarray:
    """~x; the cast keeps sub-byte types (numpy computes them in int8) in their own type."""
    return np.invert(x).astype(x.dtype, copy=False)


OPS = declare(UnaryElementwise, (
    Row("LogicalNot", 1, np.logical_not, accepts="boolean"),
    Row("Abs", 1, _exact(np.abs, np.abs), doc="Abs-1: |x|; the minimum of a signed type stays itself."),
    Row("Acos", 1, real(np.arccos), doc="Acos-1: arccos x; integers round to nearest."),
    Row("Acosh", 4, real(np.arccosh), doc="Acosh-4 (the spec's Acosh-3): arcosh x; integers round."),
    Row("Asin", 1, real(np.arcsin, "trunc"), doc="Asin-1: arcsin x; integers truncate."),
    Row("Asinh", 4, real(np.arcsinh), doc="Asinh-4 (the spec's Asinh-3): arsinh x; integers round."),
    Row("Atan", 1, real(np.arctan), doc="Atan-1: arctan x; integers round."),
    Row("Atanh", 4, atanh, doc="Atanh-4 (the spec's Atanh-3): artanh x; integers saturate by sign."),
    Row("Ceiling", 1, _exact(np.ceil), doc="Ceiling-1: the least integer >= x."),
    Row("Cos", 1, real(np.cos), doc="Cos-1: cos x; integers round."),
    Row("Cosh", 1, real(np.cosh), doc="Cosh-1: cosh x; integers round."),
    Row("Erf", 1, erf_kernel, doc="Erf-1: the Gauss error function; integers round."),
    Row("ErfInv", 17, real(erfinv), accepts="float", doc="ErfInv-17: the inverse of erf on [-1, 1]."),
    Row("Exp", 1, real(np.exp), accepts="float", doc="Exp-1: e^x."),
    Row("Floor", 1, _exact(np.floor), doc="Floor-1: the greatest integer <= x."),
    Row("Log", 1, real(np.log, "trunc"), doc="Log-1: the natural logarithm; integers truncate."),
    Row("Negative", 1, _exact(np.negative, np.negative), accepts="signed",
        doc="Negative-1: -x; the minimum of a signed type stays itself."),
    Row("Round", 5, round_, attrs=RoundAttrs, doc="Round-5: to the nearest integer, ties by `mode`."),
    Row("Sign", 1, sign, doc="Sign-1: -1, 0 or 1; NaN for NaN."),
    Row("Sin", 1, real(np.sin, "trunc"), doc="Sin-1: sin x; integers truncate."),
    Row("Sinh", 1, real(np.sinh), doc="Sinh-1: sinh x; integers round."),
    Row("Sqrt", 1, real(np.sqrt), doc="Sqrt-1: the square root; integers round."),
    Row("Tan", 1, real(np.tan), doc="Tan-1: tan x; integers round."),
    Row("Tanh", 1, real(np.tanh), doc="Tanh-1: tanh x; integers round."),
    Row("IsFinite", 10, is_finite, accepts="float", output=BOOL, doc="IsFinite-10: neither NaN nor infinite."),
    Row("IsInf", 10, is_inf, accepts="float", output=BOOL, attrs=IsInfAttrs,
        doc="IsInf-10: +inf and/or -inf, as detect_positive and detect_negative say."),
    Row("IsNaN", 10, is_nan, accepts="float", output=BOOL, doc="IsNaN-10: NaN."),
    Row("BitwiseNot", 13, bitwise_not, accepts="bitwise",
        doc="BitwiseNot-13: every bit flipped; LogicalNot for booleans."),
))
