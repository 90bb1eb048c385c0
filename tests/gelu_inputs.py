"""Inputs and a comparison for the tests of Gelu's erf form on f32 (test_gelu_polynomial.py,
test_gelu_compiled.py): f32 inputs of every kind, and bits that treat every NaN alike."""

from __future__ import annotations

import numpy as np


def f32_inputs(seed: int, scale: int = 1) -> np.ndarray:
    """Special values, the edges of the polynomial's range and its tail band, any bits, normal
    activations, a dense sweep of [-16, 16] and inputs with subnormal results; `scale` times
    2^16 elements of each random kind."""
    rng = np.random.default_rng(seed)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1.17549435e-38,
                         np.finfo(np.float32).max, -np.finfo(np.float32).max, 14.0, -14.0, 13.999999,
                         -13.999999, 14.000001, -14.000001, 15.0, -15.0, 8.3, -8.3, 1.0, -1.0], np.float32)
    edges = [np.nextafter(np.float32(v), np.float32(d)) for v in (14, -14, -15, 0) for d in (-np.inf, np.inf)]
    size = scale << 16
    return np.concatenate([
        specials, np.array(edges, np.float32),
        rng.integers(0, 1 << 32, size, dtype=np.uint64).astype(np.uint32).view(np.float32),  # any bits
        (rng.standard_normal(4 * size) * 3).astype(np.float32),  # where activations lie
        np.linspace(-16, 16, size, dtype=np.float32),
        np.linspace(-1e-37, 1e-37, 4096, dtype=np.float32),  # subnormal results
    ])


def bits(a: np.ndarray) -> np.ndarray:
    """The bits of each element, every NaN as one value: a NaN's sign and payload depend on the
    order of a product's operands, which IEEE 754 leaves open."""
    out = np.asarray(a).view(f"u{a.dtype.itemsize}").copy()
    out[np.isnan(np.asarray(a, np.float32))] = 0
    return out
