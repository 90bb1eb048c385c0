"""An f32 value rounded to the nearest f16, as f32, in arithmetic a compiled loop vectorizes
(numba has no f16 type to round through): the rounding `decompress.py` applies to a compressed
weight's products, spelled out here in numpy, with the constants its compiled loops
(`decompress_kernels.py`) share.

The rounding takes two steps. A product below f16's smallest normal (2^-14) is rounded to a
multiple of 2^-24 by adding 0.5 and taking it away again: at 0.5 an f32's last bit is worth
2^-24, so the addition rounds there, to even, and the subtraction is exact. Then every value's
f32 significand is rounded to f16's 10 bits with integer arithmetic on its bits (add half an
f16 unit less one, plus the kept last bit, and clear the dropped bits: ties go to even), which
leaves the first step's results as they are (they have at most 10 significant bits) and carries
into the exponent where a significand rounds up; a result from 2^16 up is infinity. NaNs stay
NaN (quiet), infinities stay infinite.
"""

from __future__ import annotations

import numpy as np

# f32 values and f32 bits (uint32), typed so that numpy and the compiled loops keep them 32-bit
SMALLEST_NORMAL = np.float32(2.0 ** -14)  # f16's
PLAIN_SCALE = np.float32(256)  # a scale up to this, times |d| <= 255, stays below f16's largest
HALF, ZERO = np.float32(0.5), np.float32(0)
SIGN, MAGNITUDE = np.uint32(0x80000000), np.uint32(0x7FFFFFFF)
F16_SHIFT = np.uint32(13)  # the significand bits f32 has and f16 has not
HALF_UNIT = np.uint32(0x0FFF)  # half an f16 unit at that shift, less one
KEPT = np.uint32(0xFFFFE000)  # the bits an f16 keeps
ONE = np.uint32(1)
OVERFLOW = np.uint32(0x47800000)  # 2^16: a value rounded to this or beyond is infinite in f16
INFINITY = np.uint32(0x7F800000)
QUIET = np.uint32(0x00400000)


def rounded_to_f16(values: np.ndarray) -> np.ndarray:
    """f32 values rounded to the nearest f16 (ties to even), as f32: what
    `values.astype(np.float16).astype(np.float32)` gives, by the arithmetic the compiled kernel
    does (see the module doc); NaNs stay NaN, not always with the same payload."""
    values = np.array(values, dtype=np.float32)
    size = np.abs(values)
    tiny = (size < SMALLEST_NORMAL) & (size != ZERO)
    values[tiny] = np.copysign((size[tiny] + HALF) - HALF, values[tiny])
    bits = values.view(np.uint32)
    magnitude = bits & MAGNITUDE
    rounded = (magnitude + HALF_UNIT + ((magnitude >> F16_SHIFT) & ONE)) & KEPT
    rounded[rounded >= OVERFLOW] = INFINITY
    nan = magnitude > INFINITY
    rounded[nan] = magnitude[nan] | QUIET
    return (rounded | (bits & SIGN)).view(np.float32)
