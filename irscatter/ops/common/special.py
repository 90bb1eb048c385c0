"""The error function, its complement and its inverse, vectorized in f64 (numpy has none of them).
Erf-1, ErfInv-17 and the erf form of Gelu share them. Inputs and results are f64 arrays; callers
round once to their output type.
"""

from __future__ import annotations

import math

import numpy as np

_SERIES_BELOW = 1.0  # erf by its series below this |x|, erfc by its continued fraction above
_SERIES_TERMS = 40
_FRACTION_TERMS = 200
_SQRT_PI = math.sqrt(math.pi)


def gauss(a: np.ndarray) -> np.ndarray:
    """e^(-a^2) for a >= 0, free of the rounding error of a*a: a = head + rest with a head of
    at most 13 bits, so head^2 is exact and a^2 = head^2 + rest * (a + head)."""
    head = np.round(a * 256.0) / 256.0
    return np.exp(-head * head) * np.exp(-(a - head) * (a + head))


def erf_erfc(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erf(x) and erfc(x) of f64 `x`, to about 4 ulps (erfc below 1 to about 16).

    Below 1 in magnitude: erf a = 2/sqrt(pi) e^(-a^2) a (1 + c1 (1 + c2 (1 + ...))) with
    c_n = 2 a^2 / (2n + 1), a series of positive terms summed from its tail; from 1 on:
    Laplace's continued fraction erfc a = e^(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + ...))).
    """
    a = np.abs(x)
    near = a < _SERIES_BELOW
    an = np.where(near, a, 0.0)
    ratio = 2.0 * an * an
    total = np.ones_like(an)
    for n in range(_SERIES_TERMS, 0, -1):
        total = 1.0 + total * ratio / (2 * n + 1)
    erf_near = 2.0 / _SQRT_PI * gauss(an) * an * total
    af = np.where(near, _SERIES_BELOW, np.minimum(a, 30.0))  # erfc(27) already underflows to 0
    fraction = af.copy()
    for k in range(_FRACTION_TERMS, 0, -1):
        fraction = af + (k / 2.0) / fraction
    erfc_far = np.where(a > 27.0, 0.0, gauss(af) / (_SQRT_PI * fraction))
    erf_abs = np.where(near, erf_near, 1.0 - erfc_far)
    erfc_abs = np.where(near, 1.0 - erf_near, erfc_far)
    negative = x < 0
    erf = np.where(negative, -erf_abs, erf_abs)
    erfc = np.where(negative, 2.0 - erfc_abs, erfc_abs)
    nan = np.isnan(x)
    return np.where(nan, np.nan, erf), np.where(nan, np.nan, erfc)


def erf(x: np.ndarray) -> np.ndarray:
    return erf_erfc(x)[0]


def erfc(x: np.ndarray) -> np.ndarray:
    return erf_erfc(x)[1]


def erfinv(x: np.ndarray) -> np.ndarray:
    """The y with erf(y) = x: a first guess good to ~2e-3 (Winitzki's closed form), then
    Halley steps on erf(y) - x, written as (1 - x) - erfc(y) once |x| >= 1/2 so that no
    digit cancels near +-1 (1 - x is exact there)."""
    t = np.abs(x)
    inside = t < 1.0
    ti = np.where(inside, t, 0.0)
    log_term = np.log1p(-ti * ti)
    k = 0.147
    first = 2.0 / (math.pi * k) + log_term / 2.0
    y = np.sqrt(np.sqrt(first * first - log_term / k) - first)
    tail = ti >= 0.5
    for _ in range(4):
        erf_y, erfc_y = erf_erfc(y)
        residual = np.where(tail, (1.0 - ti) - erfc_y, erf_y - ti)
        slope = 2.0 / _SQRT_PI * gauss(y)
        with np.errstate(all="ignore"):
            step = residual / (slope + y * residual)  # Halley: f / (f' - f f'' / 2f'), f'' = -2y f'
        y = np.where((ti > 0) & (slope > 0), y - step, y)
    y = np.where(t == 1.0, np.inf, np.where(t > 1.0, np.nan, y))
    return np.where(np.isnan(x), np.nan, np.copysign(y, x))
