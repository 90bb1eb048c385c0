"""The compiled loops of `decompress.py` (imported only when numba is used, since importing this
module imports numba). They are module-level functions, so that numba's disk cache finds them
again in the next process. Globals are frozen into the compiled code with their numpy types, so
f32 stays f32 and the integer arithmetic stays in 32 bits; the inner loops have no branches
(selects), so that they vectorize.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.extending import intrinsic

from irscatter.ops.common.f16_rounding import (
    F16_SHIFT,
    HALF,
    HALF_UNIT,
    INFINITY,
    KEPT,
    MAGNITUDE,
    ONE,
    OVERFLOW,
    PLAIN_SCALE,
    QUIET,
    SIGN,
    SMALLEST_NORMAL,
    ZERO,
)


@intrinsic
def _word(typing_context, value):  # pragma: no cover - compiled
    """An f32's bits as a uint32 (numba has no view of a scalar)."""
    def bitcast(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(signature.return_type))

    return numba.types.uint32(numba.types.float32), bitcast


@numba.njit(nogil=True, cache=True)
def to_f32(codes, sign, shift, scale, first, out):  # pragma: no cover - compiled
    sign = np.int32(sign)
    for i in range(codes.shape[0]):
        offset, factor, row, fiber = shift[first + i], scale[first + i], out[i], codes[i]
        for j in range(fiber.shape[0]):
            row[j] = (np.float32(np.int32(fiber[j]) ^ sign) - offset) * factor


@numba.njit(nogil=True, cache=True)
def to_f16(codes, sign, shift, scale, first, bits):  # pragma: no cover - compiled
    """As `to_f32`, each value then rounded to f16, written as its f32 bits."""
    sign = np.int32(sign)
    for i in range(codes.shape[0]):
        offset, factor, row, fiber = shift[first + i], scale[first + i], bits[i], codes[i]
        if SMALLEST_NORMAL <= abs(factor) <= PLAIN_SCALE:  # every product is 0 or normal in f16
            for j in range(fiber.shape[0]):
                word = _word((np.float32(np.int32(fiber[j]) ^ sign) - offset) * factor)
                row[j] = (word + HALF_UNIT + ((word >> F16_SHIFT) & ONE)) & KEPT
            continue
        for j in range(fiber.shape[0]):
            value = (np.float32(np.int32(fiber[j]) ^ sign) - offset) * factor
            size = abs(value)
            small = (size + HALF) - HALF
            small = small if value > ZERO else -small
            word = _word(small if (size < SMALLEST_NORMAL) & (size != ZERO) else value)
            magnitude = word & MAGNITUDE
            rounded = (magnitude + HALF_UNIT + ((magnitude >> F16_SHIFT) & ONE)) & KEPT
            past = INFINITY if magnitude <= INFINITY else magnitude | QUIET
            row[j] = (rounded if rounded < OVERFLOW else past) | (word & SIGN)
