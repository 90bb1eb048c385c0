"""Gelu's erf form for inputs that f32 holds (f32, f16, bf16, the f8 types) in a compiled loop,
with the bits of scipy's path (`elementwise.gelu_erf`: x * ndtr(x) in f64, rounded to f32).
Imported only when numba is used, since importing it imports numba.

scipy's normal distribution function takes about 20 ns an element; the loop here takes a tenth
of that, and then proves, element by element, that its rounded result is scipy's:

* Phi(x) is Q(-x) for x < 0 and 1 - Q(x) otherwise, with Q(t) = exp(-t^2 / 2) * erfcx(t / sqrt 2) / 2.
  For an f32 x, t^2 / 2 is exact in f64, so the exponential (numpy's vector loop) is within an
  ulp or two; erfcx, smooth and between 0.05 and 1 on [0, REACH], is a polynomial of degree 17 in
  u = STRETCH * SCALE / (SCALE + t) - SHIFT (`tools/gelu_fit.py fit` made its coefficients; their
  relative error is about 2e-14). x * Phi(x) is then within a few times 1e-14 of scipy's f64
  value.
* The f32 rounding of a value changes only where the value crosses a midpoint between two f32
  numbers, and rounding is monotonic. So where y * (1 - SLACK) and y * (1 + SLACK) round to the
  same f32 as y, every value within SLACK of y does too, scipy's among them; that result is
  sure. Where they do not (one element in 40000 to 50000 of activations), or x is NaN or
  between -TAIL and -REACH, the element is flagged, and the caller computes it on scipy's path.
* `tools/gelu_fit.py check` runs this loop and scipy's path over all 2^32 f32 inputs: no sure
  result differs from scipy's, and the largest relative difference of the f64 products is far
  inside SLACK (the numbers are in docs/performance.md).

The arithmetic is f64 (f32 values widen exactly), with multiply-adds fused (`fastmath`'s
contraction only: nothing is reassociated), so a product may differ in its last f64 bits from
one CPU to another; SLACK leaves room for that. On an AVX-512 CPU the loop asks for 512-bit
vectors: its work is arithmetic, eight f64 lanes a register.
"""

from __future__ import annotations

import numba
import numpy as np

from irscatter.ops.common.compiled_hints import WIDE_VECTORS, wide_vectors

REACH = 14.0  # the polynomial's range of |x|: Phi(-14) is 8e-45
# From -TAIL down, x * Phi(x) (below 6e-50) rounds to -0.0, and so does the loop's value: the
# polynomial taken at REACH makes it larger, by a factor below |x| / REACH, which the Gaussian
# outruns. Between -TAIL and -REACH the loop leaves the element to scipy.
TAIL = 15.0
SCALE = 5.0
_LOW = SCALE / (SCALE + REACH)  # SCALE / (SCALE + t) at t = REACH
STRETCH, SHIFT = 2 / (1 - _LOW), (1 + _LOW) / (1 - _LOW)
SLACK = 2.0**-40  # relative; some twenty times the largest difference `tools/gelu_fit.py check` found
# Elements a block: its exponentials (512 KiB of f64) stay in a core's L2 cache, and a split
# layer's two parts, which take the GIL at each of a block's three calls, seldom wait for it.
BLOCK = 1 << 16

# erfcx(t / sqrt 2) by powers of u, the constant first (tools/gelu_fit.py fit).
ERFCX_POWERS = (
    0.24889120260488384,
    0.3322778093623751,
    0.22237305056284715,
    0.12094579389292409,
    0.052806097479750645,
    0.017895350103099464,
    0.0043322633320272965,
    0.0005612851859247553,
    -4.7379302114654835e-05,
    -3.431615669767763e-05,
    -2.842322050942654e-06,
    1.4847603249943616e-06,
    2.868447281419371e-07,
    -7.175944380334865e-08,
    -1.9677881516852468e-08,
    4.324968611597177e-09,
    1.0051538510004518e-09,
    -2.40818438002698e-10,
)


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
    """out = x * Phi(x) rounded to f32, and `unsure` set where scipy's rounding may differ;
    returns how many are unsure."""
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
    left to scipy (whose `out` is this loop's, not scipy's), block by block; with `product`,
    the f64 products as well."""
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
