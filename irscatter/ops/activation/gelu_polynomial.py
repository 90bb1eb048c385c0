"""Gelu's erf form, x * Phi(x), for inputs that f32 holds (f32, f16, bf16, the f8 types): what
its result is, and the paths that compute it.

The result. For an element x, the f64 value x * (erfc(-x / sqrt 2) / 2), with erfc the C
library's (Python's `math.erfc`), rounded once to f32 (`exact`). f16, bf16 and the 8-bit types
then round that f32 to their own type.

`exact` takes one Python call an element, ten times a path's cost, so the paths leave it few. Each
computes x * Phi(x) in f64 another way, close enough to prove, element by element, that its
rounding is the result's:

* The f32 rounding of a value changes only where the value crosses a midpoint between two f32
  numbers, and rounding is monotonic. So where y * (1 - SLACK) and y * (1 + SLACK) round to the
  same f32 as y, every value within SLACK of y does too, the result's f64 value among them: that
  rounding is sure (`sure_rounding`). Where they do not (one element in 40000 to 50000 of
  activations), the element is computed by `exact`.
* The polynomial (`estimate`; no scipy): Phi(x) is Q(-x) for x < 0 and 1 - Q(x) otherwise, with
  Q(t) = exp(-t^2 / 2) * erfcx(t / sqrt 2) / 2. For an f32 x, t^2 / 2 is exact in f64, so the
  exponential is within an ulp or two; erfcx, smooth and between 0.05 and 1 on [0, REACH], is a
  polynomial of degree 17 in u = STRETCH * SCALE / (SCALE + t) - SHIFT (`tools/gelu_fit.py fit`
  made its coefficients; their relative error is about 2e-14). The product is within a few
  times 1e-14 of the result's f64 value. x between -TAIL and -REACH goes to `exact`.
* scipy's normal distribution function (`scipy_estimate`), within about 1e-15.
* The compiled loop of `gelu_kernels` (numba): the polynomial with fused multiply-adds, and
  the exponential computed in the loop (a Taylor series after range reduction, within a few
  ulps like numpy's). Its machine code, kept by an earlier process (`KEPT_LOOP`), runs it
  before numba is loaded; it checks its roundings as the loop does.
* `tools/gelu_fit.py check` runs the three over all 2^32 f32 inputs and holds them to `exact`
  (the numbers are in docs/performance.md).

Which path a call takes changes its speed, never its bits. Importing scipy.special takes longer
than most models' whole run, so a layer's first call takes the polynomial (unless scipy is
imported already); its later calls take scipy's function, some forty numpy passes fewer, or
once loaded the compiled loop, several times as fast again.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from irscatter.ops.common.machine_code import KeptLoop
from irscatter.ops.common.special import ndtr

REACH = 14.0  # the polynomial's range of |x|: Phi(-14) is 8e-45
# From -TAIL down, x * Phi(x) (below 6e-50) rounds to -0.0, and so does the polynomial's value:
# taken at REACH it makes the value larger, by a factor below |x| / REACH, which the Gaussian
# outruns. Between -TAIL and -REACH an element is left to `exact`.
TAIL = 15.0
SCALE = 5.0
_LOW = SCALE / (SCALE + REACH)  # SCALE / (SCALE + t) at t = REACH
STRETCH, SHIFT = 2 / (1 - _LOW), (1 + _LOW) / (1 - _LOW)
SLACK = 2.0**-40  # relative; some twenty times the largest difference `tools/gelu_fit.py check` found

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

# Halved, which is exact: Q(t) = exp(-t^2 / 2) * (erfcx(t / sqrt 2) / 2) without a pass for the half.
_HALF_POWERS = tuple(power / 2 for power in ERFCX_POWERS)

_SQRT2 = math.sqrt(2)
# Below this |x|, Phi(x) is 1/2 + x / sqrt(2 pi), which rounds to 1/2 in f64. The result of such an
# x is then 0.5 * x, an exact tie between two f32 numbers wherever x is subnormal and odd; the
# polynomial leaves ties to `exact`, which does these in one numpy pass rather than a call each.
TINY = 2.0**-60
# Elements `rounded` estimates at a time, as many as a block of `blocks.elementwise`. On one
# thread, pieces of 16 K were faster (their f64 temporaries stay in a core's L2 cache); but each
# of a piece's forty numpy calls hands the GIL over, and with a layer's two parts on two threads
# the handovers cost more than the cache saves.
PIECE = 1 << 16


# The compiled loop (`gelu_kernels.products`) as C: (x, out, unsure, n) -> unsure count, kept as
# machine code by a process that uses it through numba, for the first calls of later processes
# (`machine_code`). Its key: the sources the loop is made of.
KEPT_LOOP = KeptLoop("gelu-f32", ("irscatter.ops.activation.gelu_kernels", "irscatter.ops.activation.gelu_polynomial",
                                  "irscatter.ops.common.compiled_hints"),
                     (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64), ctypes.c_int64)


def _one(x: float) -> float:
    return x * (0.5 * math.erfc(-x / _SQRT2))


def exact(x: np.ndarray) -> np.ndarray:
    """The result for an f32 array (any shape), element by element: `exact_f64` rounded to f32."""
    return exact_f64(x).astype(np.float32)


def exact_f64(x: np.ndarray) -> np.ndarray:
    """x * Phi(x) in f64 for an f32 array, with Phi(x) = erfc(-x / sqrt 2) / 2 by the C library's
    erfc, or 1/2 exactly where |x| is below TINY (as erfc gives it there). A NaN stays the
    input's NaN; -inf gives NaN (-inf * 0)."""
    with np.errstate(invalid="ignore"):  # (a signalling NaN's widening flags it as invalid)
        wide = np.asarray(x, np.float64).reshape(-1)  # (a 0-d array's arithmetic would give a scalar)
        out = wide * 0.5
        rest = np.abs(wide) >= TINY  # (false for NaN)
        out[rest] = [_one(v) for v in wide[rest].tolist()]
    return out.reshape(np.shape(x))


def rounded(x: np.ndarray, *, by_scipy: bool = False) -> np.ndarray:
    """The result for an f32 array (any shape), PIECE elements at a time: the polynomial's product
    (`estimate`), or with `by_scipy` scipy's (`scipy_estimate`), where it proves its rounding, and
    `exact` for the elements where it cannot."""
    estimator = scipy_estimate if by_scipy else estimate
    flat = np.asarray(x, np.float32).reshape(-1)
    pieces = []
    for start in range(0, flat.size, PIECE):
        part = flat[start:start + PIECE]
        estimated, unsure, _ = estimator(part)
        where = np.flatnonzero(unsure)
        if where.size:
            estimated[where] = exact(part[where])
        pieces.append(estimated)
    out = pieces[0] if len(pieces) == 1 else np.concatenate(pieces or [flat])
    return out.reshape(np.shape(x))


def estimate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For an f32 array: the polynomial's product rounded to f32, where that rounding is not
    sure (the result is then `exact`'s), and the f64 product. Each numpy call is a pass over the
    data, so the steps are arranged to make few."""
    with np.errstate(under="ignore", invalid="ignore"):  # (a signalling NaN's widening flags it as invalid)
        shape = np.shape(x)
        v = np.asarray(x, np.float64).reshape(-1)  # (a 0-d array's arithmetic would give scalars)
        u = np.minimum(np.abs(v), REACH)
        u += SCALE
        np.divide(STRETCH * SCALE, u, out=u)
        u -= SHIFT
        h = np.full(v.shape, _HALF_POWERS[-1])
        for power in _HALF_POWERS[-2::-1]:  # Horner's rule
            h *= u
            h += power
        q = np.multiply(v, v)
        q *= -0.5
        np.exp(q, out=q)
        q *= h  # Q(|x|)
        # Phi(x) = Q(|x|) + [x >= 0] (1 - 2 Q(|x|)): arithmetic, since a masked copy of a random
        # mask takes several times as long.
        y = np.subtract(1.0, q, out=h)
        y -= q
        y *= v >= 0
        y += q
        y *= v  # x * Phi(x); NaN only where x is NaN or -inf, which it is the result for
        out, unsure = sure_rounding(y, spare=(u, q))
        if v.size and np.fmin.reduce(v) <= -REACH:
            unsure |= (v <= -REACH) & (v > -TAIL)
    return out.reshape(shape), unsure.reshape(shape), y.reshape(shape)


def scipy_estimate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`estimate` with scipy's normal distribution function for Phi: about as accurate as the C
    library's erfc, valid over the whole range, and faster than the polynomial on numpy's path
    (one call an element's Phi instead of some forty passes), once scipy is imported."""
    with np.errstate(all="ignore"):  # (a signalling NaN's widening flags it as invalid)
        shape = np.shape(x)
        v = np.asarray(x, np.float64).reshape(-1)
        y = np.asarray(ndtr(v))
        y *= v
        out, unsure = sure_rounding(y, spare=(v, np.empty_like(v)))
    return out.reshape(shape), unsure.reshape(shape), y.reshape(shape)


def sure_rounding(y: np.ndarray, spare: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A 1-D array of f64 products rounded to f32, and where that rounding may not be the
    result's; `spare`: two f64 arrays of y's size to work in."""
    a, b = spare if spare is not None else (np.empty_like(y), np.empty_like(y))
    out = y.astype(np.float32)
    # Rounding is monotonic and symmetric: |y| * (1 -+ SLACK) round alike where the result is
    # sure; where they do not, the first is below (a NaN compares false, and is sure).
    np.abs(y, out=a)
    low = np.multiply(a, 1 - SLACK, out=b).astype(np.float32)
    return out, low < np.multiply(a, 1 + SLACK, out=b).astype(np.float32)
