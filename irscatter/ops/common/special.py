"""The error function, its inverse, the normal distribution function and the log-gamma function,
from scipy.special (numpy has none of them). Erf-1, ErfInv-17 and the erf form of Gelu on f64
share the first three; RandomPoisson-17's rejection test takes the last. (Gelu on the types f32
holds takes the C library's erfc: `ops/activation/gelu_polynomial.py`.)

scipy's f32 loops of erf and ndtr evaluate the f64 function and round once, so an f32 input
goes to them as it is: the same bits as f64 rounded, without the two conversions. Its f32 loop
of erfinv computes in f32 and is up to 3 ulps off, so erfinv takes f64 only.

scipy.special is imported on first use: it takes longer to import than the rest of the op
library, and most models (and every command that runs none) never call it.
"""

from __future__ import annotations

import sys
from functools import cache
from types import ModuleType

import numpy as np


@cache
def _special() -> ModuleType:
    from scipy import special

    return special


def imported() -> bool:
    """Whether scipy.special is imported already (by irscatter or anything else)."""
    return "scipy.special" in sys.modules


_OWN_LOOPS = (np.dtype(np.float32), np.dtype(np.float64))


def _native(x: np.ndarray) -> np.ndarray:
    """`x` as a dtype scipy evaluates as f64 rounded once: f32 and f64 as they are, the rest in f64."""
    return x if x.dtype in _OWN_LOOPS else np.asarray(x, dtype=np.float64)


def erf(x: np.ndarray) -> np.ndarray:
    return _special().erf(_native(x))


def ndtr(x: np.ndarray) -> np.ndarray:
    """Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal distribution function."""
    return _special().ndtr(_native(x))


def erfinv(x: np.ndarray) -> np.ndarray:
    """The y with erf(y) = x, in f64: +-inf at +-1, NaN beyond."""
    return _special().erfinv(np.asarray(x, dtype=np.float64))


def lgamma(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)| in f64, as C's lgamma gives it for every x but -inf (where scipy gives -inf)."""
    return _special().gammaln(np.asarray(x, dtype=np.float64))
