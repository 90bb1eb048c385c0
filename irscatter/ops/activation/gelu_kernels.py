"""Gelu's erf form for inputs that f32 holds (f32, f16, bf16, the f8 types) in a compiled loop:
`gelu_polynomial`'s polynomial and proof of rounding in one pass an element, several times as
fast as its numpy path, with the same results. Imported only when numba is used, since importing
it imports numba.

The arithmetic is f64 (f32 values widen exactly), with multiply-adds fused (`fastmath`'s
contraction only: nothing is reassociated), so a product may differ in its last f64 bits from
numpy's path and from one CPU to another; SLACK leaves room for that. The Gaussian factor
exp(-x^2 / 2) is computed in the loop too (`_gauss`): the loop then makes no call, so it
vectorizes, and no f64 array passes between numpy's exponential and two loops around it. On an
AVX-512 CPU the loop asks for 512-bit vectors: its work is arithmetic, eight f64 lanes a
register.
"""

from __future__ import annotations

import math
from functools import cache

import numba
import numpy as np

from irscatter.ops.activation.gelu_polynomial import (
    ERFCX_POWERS,
    KEPT_LOOP,
    REACH,
    SCALE,
    SHIFT,
    SLACK,
    STRETCH,
    TAIL,
)
from irscatter.ops.common import machine_code
from irscatter.ops.common.compiled_hints import WIDE_VECTORS, double_from_bits, wide_vectors

# exp(z) as 2^k e^r, k the integer nearest z / ln 2 and r = z - k ln 2 in [-ln 2 / 2, ln 2 / 2],
# ln 2 in two parts so that k ln 2 is taken off exactly; e^r by its Taylor series to r^12, whose
# remainder is below 2e-16 of e^r there. Below LOWEST (x^2 / 2 > 700, |x| > 37.4) the factor is
# 0: x * Phi(x) is then x or -0.0 in f32 whatever it is, and a NaN (or -inf * 0) stays NaN.
_LOG2E = 1 / math.log(2)
_LN2_HIGH = math.log(2)
_LN2_LOW = 2.3190468138462996e-17  # ln 2 - _LN2_HIGH
_ROUNDER = 1.5 * 2.0**52  # added and taken away, it rounds to an integer
LOWEST = -700.0
_TAYLOR = tuple(1 / math.factorial(n) for n in range(13))


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def _gauss(v):  # pragma: no cover - compiled
    """exp(-v^2 / 2) in f64, within a few ulps; 0 where -v^2 / 2 is below LOWEST or NaN."""
    z = -0.5 * v * v
    if not z >= LOWEST:
        return 0.0
    k = (z * _LOG2E + _ROUNDER) - _ROUNDER
    r = z - k * _LN2_HIGH
    r = r - k * _LN2_LOW
    e = _TAYLOR
    p = e[12]
    p = p * r + e[11]
    p = p * r + e[10]
    p = p * r + e[9]
    p = p * r + e[8]
    p = p * r + e[7]
    p = p * r + e[6]
    p = p * r + e[5]
    p = p * r + e[4]
    p = p * r + e[3]
    p = p * r + e[2]
    p = p * r + e[1]
    p = p * r + e[0]
    return p * double_from_bits((np.int64(k) + 1023) << 52)


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def _product(v):  # pragma: no cover - compiled
    """x * Phi(x) in f64, for x = `v`."""
    p = ERFCX_POWERS
    u = STRETCH * (SCALE / (SCALE + min(abs(v), REACH))) - SHIFT
    h = p[17]  # Horner's rule, written out so that the loop around it vectorizes
    h = h * u + p[16]
    h = h * u + p[15]
    h = h * u + p[14]
    h = h * u + p[13]
    h = h * u + p[12]
    h = h * u + p[11]
    h = h * u + p[10]
    h = h * u + p[9]
    h = h * u + p[8]
    h = h * u + p[7]
    h = h * u + p[6]
    h = h * u + p[5]
    h = h * u + p[4]
    h = h * u + p[3]
    h = h * u + p[2]
    h = h * u + p[1]
    h = h * u + p[0]
    q = 0.5 * _gauss(v) * h
    return v * (q if v < 0 else 1.0 - q)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})
def products(x, out, unsure):  # pragma: no cover - compiled
    """out = x * Phi(x) rounded to f32, and `unsure` set where the result's rounding may differ
    (or x is NaN or -inf); returns how many are unsure."""
    if WIDE_VECTORS:
        wide_vectors()
    count = 0
    for i in range(x.size):
        v = np.float64(x[i])
        y = _product(v)
        rounded = np.float32(y)
        sure = (((v > -REACH) | (v <= -TAIL)) & (np.float32(y * (1.0 - SLACK)) == rounded)
                & (np.float32(y * (1.0 + SLACK)) == rounded))
        out[i] = rounded
        unsure[i] = not sure
        count += np.int64(not sure)
    return count


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})
def f64_products(x, out):  # pragma: no cover - compiled
    """out = x * Phi(x) in f64, unrounded (for `tools/gelu_fit.py check`)."""
    for i in range(x.size):
        out[i] = _product(np.float64(x[i]))


def gelu_f32(x: np.ndarray, out: np.ndarray, unsure: np.ndarray, product: np.ndarray | None = None) -> int:
    """For a 1-D f32 array: `out` = x * Phi(x) rounded to f32, and `unsure` set for the elements
    left to `gelu_polynomial.exact` (whose `out` is this loop's, not the result); with
    `product`, the f64 products as well. Returns how many are unsure."""
    count = int(products(x, out, unsure))
    if product is not None:
        f64_products(x, product)
    return count


def _as_c() -> object:
    """`products` as a C function of pointers and a length (`gelu_polynomial.KEPT_LOOP`)."""
    pointer, types = numba.types.CPointer, numba.types

    @numba.cfunc(types.int64(pointer(types.float32), pointer(types.float32), pointer(types.boolean), types.int64),
                 error_model="numpy", fastmath={"contract"})
    def c_products(x, out, unsure, n):  # pragma: no cover - compiled
        return products(numba.carray(x, (n,)), numba.carray(out, (n,)), numba.carray(unsure, (n,)))

    return c_products


@cache
def keep_loops() -> None:
    """Keeps the loop as machine code for later processes (`machine_code.keep`), once a process."""
    machine_code.keep(KEPT_LOOP, _as_c)
