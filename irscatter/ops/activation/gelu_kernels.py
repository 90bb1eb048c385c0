"""Gelu's erf form for inputs that f32 holds (f32, f16, bf16, the f8 types) in a compiled loop:
`gelu_polynomial`'s polynomial and proof of rounding, about four times as fast as its numpy path,
with the same results. Imported only when numba is used, since importing it imports numba.

The arithmetic is f64 (f32 values widen exactly), with multiply-adds fused (`fastmath`'s
contraction only: nothing is reassociated), so a product may differ in its last f64 bits from
numpy's path and from one CPU to another; SLACK leaves room for that. On an AVX-512 CPU the loop
asks for 512-bit vectors: its work is arithmetic, eight f64 lanes a register.
"""

from __future__ import annotations

import numba
import numpy as np

from irscatter.ops.activation.gelu_polynomial import ERFCX_POWERS, REACH, SCALE, SHIFT, SLACK, STRETCH, TAIL
from irscatter.ops.common.compiled_hints import WIDE_VECTORS, wide_vectors

# Elements a block: its exponentials (512 KiB of f64) stay in a core's L2 cache, and a split
# layer's two parts, which take the GIL at each of a block's three calls, seldom wait for it.
BLOCK = 1 << 16


@numba.njit(nogil=True, cache=True, error_model="numpy")
def half_squares(x, out):  # pragma: no cover - compiled
    """out = -x^2 / 2 in f64, exact for f32 x: the exponent of exp(-x^2 / 2)."""
    for i in range(x.size):
        v = np.float64(x[i])
        out[i] = -0.5 * v * v


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def _product(v, gauss):  # pragma: no cover - compiled
    """x * Phi(x) in f64, for x = `v` and `gauss` = exp(-x^2 / 2)."""
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
    q = 0.5 * gauss * h
    return v * (q if v < 0 else 1.0 - q)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})
def products(x, gauss, out, unsure):  # pragma: no cover - compiled
    """out = x * Phi(x) rounded to f32, and `unsure` set where the result's rounding may differ
    (or x is NaN or -inf); returns how many are unsure."""
    if WIDE_VECTORS:
        wide_vectors()
    count = 0
    for i in range(x.size):
        v = np.float64(x[i])
        y = _product(v, gauss[i])
        rounded = np.float32(y)
        sure = (((v > -REACH) | (v <= -TAIL)) & (np.float32(y * (1.0 - SLACK)) == rounded)
                & (np.float32(y * (1.0 + SLACK)) == rounded))
        out[i] = rounded
        unsure[i] = not sure
        count += np.int64(not sure)
    return count


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})
def f64_products(x, gauss, out):  # pragma: no cover - compiled
    """out = x * Phi(x) in f64, unrounded (for `tools/gelu_fit.py check`)."""
    for i in range(x.size):
        out[i] = _product(np.float64(x[i]), gauss[i])


def gelu_f32(x: np.ndarray, out: np.ndarray, unsure: np.ndarray, product: np.ndarray | None = None) -> None:
    """For a 1-D f32 array: `out` = x * Phi(x) rounded to f32, and `unsure` set for the elements
    left to `gelu_polynomial.exact` (whose `out` is this loop's, not the result), block by block;
    with `product`, the f64 products as well."""
    gauss = np.empty(min(x.size, BLOCK), np.float64)
    with np.errstate(under="ignore"):
        for start in range(0, x.size, BLOCK):
            end = min(start + BLOCK, x.size)
            part, g = x[start:end], gauss[:end - start]
            half_squares(part, g)
            np.exp(g, out=g)
            products(part, g, out[start:end], unsure[start:end])
            if product is not None:
                f64_products(part, g, product[start:end])
