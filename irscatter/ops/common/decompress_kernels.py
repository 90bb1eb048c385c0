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


def _bitcast(context, builder, signature, args):  # pragma: no cover - compiled
    return builder.bitcast(args[0], context.get_value_type(signature.return_type))


@intrinsic
def _word(typing_context, value):  # pragma: no cover - compiled
    """An f32's bits as a uint32 (numba has no view of a scalar)."""
    return numba.types.uint32(numba.types.float32), _bitcast


@intrinsic
def _float(typing_context, word):  # pragma: no cover - compiled
    """A uint32's bits as an f32."""
    return numba.types.float32(numba.types.uint32), _bitcast


@numba.njit(nogil=True, cache=True)
def _rounded_plain(value):  # pragma: no cover - compiled
    """The bits of `value` rounded to f16, for a product that is 0 or normal in f16."""
    word = _word(value)
    return (word + HALF_UNIT + ((word >> F16_SHIFT) & ONE)) & KEPT


@numba.njit(nogil=True, cache=True)
def _rounded_any(value):  # pragma: no cover - compiled
    """The bits of `value` rounded to f16: subnormal, overflowing or NaN as well."""
    size = abs(value)
    small = (size + HALF) - HALF
    small = small if value > ZERO else -small
    word = _word(small if (size < SMALLEST_NORMAL) & (size != ZERO) else value)
    magnitude = word & MAGNITUDE
    rounded = (magnitude + HALF_UNIT + ((magnitude >> F16_SHIFT) & ONE)) & KEPT
    past = INFINITY if magnitude <= INFINITY else magnitude | QUIET
    return (rounded if rounded < OVERFLOW else past) | (word & SIGN)


@numba.njit(nogil=True, cache=True)
def _plain_scale(factor):  # pragma: no cover - compiled
    """Whether every product of a code difference (|d| <= 255) and `factor` is 0 or normal in f16."""
    return SMALLEST_NORMAL <= abs(factor) <= PLAIN_SCALE


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
        if _plain_scale(factor):
            for j in range(fiber.shape[0]):
                row[j] = _rounded_plain((np.float32(np.int32(fiber[j]) ^ sign) - offset) * factor)
        else:
            for j in range(fiber.shape[0]):
                row[j] = _rounded_any((np.float32(np.int32(fiber[j]) ^ sign) - offset) * factor)


# The products below may reassociate their sums (and only those: `fastmath` marks the
# instructions a function generates itself, and the decompression is called, not written
# here), so that the compiler sums each output in vector lanes.

@numba.njit(nogil=True, cache=True, fastmath={"reassoc"})
def product(codes, sign, shift, scale, fibers, x, to_f16, out, lo, hi):  # pragma: no cover - compiled
    """`out[r]` for weight rows r in [lo, hi): the weight's row, decompressed as `to_f32` or
    `to_f16` does (codes [rows * fibers, length], a fiber's zero point and scale), times `x`
    [fibers * length]."""
    sign, length = np.int32(sign), codes.shape[1]
    for r in range(lo, hi):
        total = np.float32(0)
        for f in range(fibers):
            i, base = r * fibers + f, f * length
            offset, factor, fiber = shift[i], scale[i], codes[i]
            if not to_f16:
                for j in range(length):
                    total += _scaled(fiber[j], sign, offset, factor) * x[base + j]
            elif _plain_scale(factor):
                for j in range(length):
                    total += _float(_rounded_plain(_scaled(fiber[j], sign, offset, factor))) * x[base + j]
            else:
                for j in range(length):
                    total += _float(_rounded_any(_scaled(fiber[j], sign, offset, factor))) * x[base + j]
        out[r] = total


@numba.njit(nogil=True, cache=True)
def _scaled(code, sign, offset, factor):  # pragma: no cover - compiled
    """A code's value before rounding: exact in f32 (see `decompress.py`)."""
    return (np.float32(np.int32(code) ^ sign) - offset) * factor
