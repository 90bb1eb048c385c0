"""A weight given as small integer codes, a zero point and a scale per fiber, decompressed by
arithmetic: `(code - zero point) * scale`, rounded to f16 when the chain it stands for computes
in f16, given as f32.

`runtime/compressed.py` takes this path for the chain NNCF writes (Convert codes -> f16,
Subtract an f16 zero point, Multiply by an f16 scale, Convert f32) when every zero point is an
integer in the codes' range and every scale is finite. The chain's f16 arithmetic then has
exactly the value computed here: the code and the zero point are integers in f16, so their
difference d is exact (|d| <= 255); d * s, s an f16 scale, has at most 8 + 11 significant bits
and is exact in f32; the f16 Multiply is that exact product rounded once to f16 (nearest-even,
f16 subnormals, overflow to infinity); widening to f32 is exact. So the value is the f32 product
rounded to f16, which `rounded_to_f16` does with float and integer arithmetic that vectorizes,
where a lookup in a table per fiber is a gather. tests/test_decompress.py compares it, bit for
bit, with numpy's own f16 rounding for every f16 scale and every d in -255..255.

The rounding takes two steps. A product below f16's smallest normal (2^-14) is rounded to a
multiple of 2^-24 by adding 0.5 and taking it away again: at 0.5 an f32's last bit is worth
2^-24, so the addition rounds there, to even, and the subtraction is exact. Then every value's
f32 significand is rounded to f16's 10 bits with integer arithmetic on its bits (add half an
f16 unit less one, plus the kept last bit, and clear the dropped bits: ties go to even), which
leaves the first step's results as they are (they have at most 10 significant bits) and carries
into the exponent where a significand rounds up; a result from 2^16 up is infinity. NaNs stay
NaN (quiet), infinities stay infinite.

Codes arrive as the bytes that hold them; a signed code's byte is its two's complement within
its width, so its value is `(byte ^ sign) - sign` (`sign` the width's top bit, 0 for unsigned
codes), and the kernels subtract `sign + zero point` per fiber in one step.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.common import accel

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


def decompress(codes: np.ndarray, sign: int, shift: np.ndarray, scale: np.ndarray, first: int, to_f16: bool,
               out: np.ndarray) -> np.ndarray:
    """`out[i, j] = ((codes[i, j] ^ sign) - shift[first + i]) * scale[first + i]` in f32, rounded
    to f16 when `to_f16`, for codes [P, L] (uint8: each code's byte), shift and scale [fibers]
    (f32; `shift` is `sign` plus the fiber's zero point; codes minus zero points within
    -255..255) and `out` [P, L] (f32, C-contiguous)."""
    if accel.enabled():
        from irscatter.ops.common import decompress_kernels as kernels  # (imports numba: only when used)

        if to_f16:
            kernels.to_f16(codes, sign, shift, scale, first, out.view(np.uint32))
        else:
            kernels.to_f32(codes, sign, shift, scale, first, out)
        return out
    stop = first + len(codes)
    np.bitwise_xor(codes, np.uint8(sign), out=out, casting="unsafe")
    out -= shift[first:stop, None]
    out *= scale[first:stop, None]
    if to_f16:
        out[...] = out.astype(np.float16)  # numpy's own rounding, which its f16 Multiply does too
    return out
