"""The compiled loops of `decompress.py` (imported only when numba is used, since importing this
module imports numba). They are module-level functions, so that numba's disk cache finds them
again in the next process. Globals are frozen into the compiled code with their numpy types, so
f32 stays f32 and the integer arithmetic stays in 32 bits; the inner loops have no branches
(selects), so that they vectorize.

Two things are settled when a loop is compiled rather than inside it. A code's sign is `None`
for unsigned codes (numba drops the branches that test it, and with them the flip of each
code's sign bit). And where the CPU converts between f32 and f16 in one instruction each
(x86's F16C), a product is rounded to f16 by those conversions, which round as `f16_rounding`
does (nearest-even, subnormals, overflow to infinity; no product is NaN); elsewhere by that
module's arithmetic on the bits. On a CPU with AVX-512, the product of 8-bit codes is
vectorized with 512-bit registers (`compiled_hints.wide_vectors`); its sums are reassociated anyway.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from irscatter.ops.common.compiled_hints import WIDE_VECTORS, host_has, wide_vectors
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


HALF_IN_HARDWARE = host_has("f16c")  # converts f32 to f16 and back in one instruction each


def prefetch(builder, address) -> None:  # pragma: no cover - compiled
    """Asks for the cache line at the byte pointer `address` (a read, kept close). A prefetch
    never faults, so the address may lie past an array's end."""
    i32 = ir.IntType(32)
    function = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32]), "llvm.prefetch.p0i8")
    builder.call(function, [address, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])


# How far ahead of the row or fiber it works on a product asks for a weight's codes (here a
# cache line at a time; the lookups of `decompress_levels.py` ask the same): a weight streams
# from memory, and asking ahead kept the cores fed better than the hardware's own prefetching
PREFETCH_BYTES, LINE_BYTES = 2048, 64


def _prefetch_at(context, builder, signature, args):  # pragma: no cover - compiled
    array = context.make_array(signature.args[0])(context, builder, args[0])
    prefetch(builder, builder.gep(builder.bitcast(array.data, ir.IntType(8).as_pointer()), [args[1]]))
    return context.get_dummy_value()


@intrinsic
def _prefetch(typing_context, array, offset):  # pragma: no cover - compiled
    """`prefetch` of the byte `offset` bytes past the start of `array`'s data."""
    return numba.types.none(array, numba.types.int64), _prefetch_at


def _through_half(context, builder, signature, args):  # pragma: no cover - compiled
    return builder.fpext(builder.fptrunc(args[0], ir.HalfType()), ir.FloatType())


@intrinsic
def _half(typing_context, value):  # pragma: no cover - compiled
    """An f32 rounded to f16 and widened again by the CPU's conversions (`HALF_IN_HARDWARE` only)."""
    return numba.types.float32(numba.types.float32), _through_half


@numba.njit(nogil=True, cache=True)
def _rounded(value, plain):  # pragma: no cover - compiled
    """`value` rounded to f16, as f32 (`plain`: a product known to be 0 or normal in f16)."""
    if HALF_IN_HARDWARE:
        return _half(value)
    return _float(_rounded_plain(value) if plain else _rounded_any(value))


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
    for i in range(codes.shape[0]):
        _fiber_to_f32(codes[i], sign, shift[first + i], scale[first + i], out[i])


@numba.njit(nogil=True, cache=True)
def to_f16(codes, sign, shift, scale, first, bits):  # pragma: no cover - compiled
    """As `to_f32`, each value then rounded to f16, written as its f32 bits."""
    for i in range(codes.shape[0]):
        _fiber_to_f16(codes[i], sign, shift[first + i], scale[first + i], bits[i])


@numba.njit(nogil=True, cache=True)
def nibbles_decoded(packed, sign, shift, scale, first, to_f16, out):  # pragma: no cover - compiled
    """As `to_f32` (`to_f16`: as `to_f16`, into the same f32 `out`), for codes two to a byte
    (see `product_nibbles`)."""
    codes = np.empty(2 * packed.shape[1], np.uint8)
    for i in range(packed.shape[0]):
        _unpack(packed[i], sign, codes)
        if to_f16:
            _fiber_to_f16(codes, None, shift[first + i], scale[first + i], out[i].view(np.uint32))
        else:
            _fiber_to_f32(codes, None, shift[first + i], scale[first + i], out[i])


@numba.njit(nogil=True, cache=True)
def _fiber_to_f32(fiber, sign, offset, factor, row):  # pragma: no cover - compiled
    for j in range(fiber.shape[0]):
        row[j] = _scaled(fiber[j], sign, offset, factor)


@numba.njit(nogil=True, cache=True)
def _fiber_to_f16(fiber, sign, offset, factor, row):  # pragma: no cover - compiled
    if _plain_scale(factor):
        for j in range(fiber.shape[0]):
            row[j] = _word(_rounded(_scaled(fiber[j], sign, offset, factor), True))
    else:
        for j in range(fiber.shape[0]):
            row[j] = _word(_rounded(_scaled(fiber[j], sign, offset, factor), False))


@numba.njit(nogil=True, cache=True)
def _unpack(fiber, sign, codes):  # pragma: no cover - compiled
    """A fiber's codes two to a byte (code 2j in the low nibble of byte j) into `codes`, a byte
    each, their sign bits flipped (so that they are read as unsigned after)."""
    flip = np.uint8(0) if sign is None else np.uint8(sign)
    for j in range(fiber.shape[0]):
        byte = fiber[j]
        codes[2 * j] = (byte & np.uint8(15)) ^ flip
        codes[2 * j + 1] = (byte >> np.uint8(4)) ^ flip


# The products below may reassociate their sums and fuse each multiply and add (and only those:
# `fastmath` marks the instructions a function generates itself, and the decompression is
# called, not written here), so that the compiler sums each output in vector lanes.
#
# A chain in f16 is decompressed as one multiply-add, `code * scale - shift * scale` (`_from`):
# both products are exact in f32 (a code or shift below 2^9 times an f16 scale's 11 bits), and
# so is their difference, a multiple of the scale's last unit below 2^19 of it. So the value is
# `_scaled`'s to the bit (but for the sign of a zero, which a sum that starts at +0 never keeps),
# with one instruction fewer an element: on a core, the loop's time is its instructions'.

@numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def product(codes, sign, shift, scale, fibers, x, to_f16, out, lo, hi):  # pragma: no cover - compiled
    """`out[r]` for weight rows r in [lo, hi): the weight's row, decompressed as `to_f32` or
    `to_f16` does (codes [rows * fibers, length], a fiber's zero point and scale), times `x`
    [fibers * length]."""
    if WIDE_VECTORS:  # the conversions of each code are most of the work: wide registers halve them
        wide_vectors()
    length = codes.shape[1]
    for r in range(lo, hi):
        total = np.float32(0)
        for f in range(fibers):
            i, base = r * fibers + f, f * length
            offset, factor, fiber = shift[i], scale[i], codes[i]
            start = -(offset * factor)
            for line in range(0, length, LINE_BYTES):  # (past the last row, a prefetch is harmless)
                _prefetch(fiber, line + PREFETCH_BYTES)
            if not to_f16:
                for j in range(length):
                    total += _scaled(fiber[j], sign, offset, factor) * x[base + j]
            elif _plain_scale(factor):
                for j in range(length):
                    total += _rounded(_from(fiber[j], sign, start, factor), True) * x[base + j]
            else:
                for j in range(length):
                    total += _rounded(_from(fiber[j], sign, start, factor), False) * x[base + j]
        out[r] = total


@numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def product_nibbles(packed, sign, shift, scale, fibers, even_x, odd_x, to_f16, out, lo, hi):  # pragma: no cover - compiled
    """As `product`, for codes two to a byte (packed [rows * fibers, length / 2]: a fiber's code
    2j in the low nibble of its byte j, code 2j + 1 in the high one), `even_x` and `odd_x` the
    activation's elements of even and of odd index. Each fiber's low and high nibbles are split
    into two buffers that stay in the cache, then multiplied by the elements they meet (a loop
    that unpacked as it multiplied, or unpacked in order, ran slower than one over bytes)."""
    half, flip = packed.shape[1], np.uint8(0) if sign is None else np.uint8(sign)
    low, high = np.empty(half, np.uint8), np.empty(half, np.uint8)
    for r in range(lo, hi):
        total = np.float32(0)
        for f in range(fibers):
            i, base = r * fibers + f, f * half
            offset, factor, fiber = shift[i], scale[i], packed[i]
            start = -(offset * factor)
            for j in range(half):
                low[j] = (fiber[j] & np.uint8(15)) ^ flip
                high[j] = (fiber[j] >> np.uint8(4)) ^ flip
            if not to_f16:
                for j in range(half):
                    total += _scaled(low[j], None, offset, factor) * even_x[base + j] \
                        + _scaled(high[j], None, offset, factor) * odd_x[base + j]
            elif _plain_scale(factor):
                for j in range(half):
                    total += _rounded(_from(low[j], None, start, factor), True) * even_x[base + j] \
                        + _rounded(_from(high[j], None, start, factor), True) * odd_x[base + j]
            else:
                for j in range(half):
                    total += _rounded(_from(low[j], None, start, factor), False) * even_x[base + j] \
                        + _rounded(_from(high[j], None, start, factor), False) * odd_x[base + j]
        out[r] = total


@numba.njit(nogil=True, cache=True)
def _scaled(code, sign, offset, factor):  # pragma: no cover - compiled
    """A code's value before rounding: exact in f32 (see `decompress.py`; `sign` None: unsigned)."""
    if sign is None:
        return (np.float32(code) - offset) * factor
    return (np.float32(np.int32(code) ^ sign) - offset) * factor


@numba.njit(nogil=True, cache=True, fastmath={"contract"})
def _from(code, sign, start, factor):  # pragma: no cover - compiled
    """`_scaled` for an f16 `factor`, as `code * factor + start` (`start` = -(shift * factor)):
    the same value, every step exact (see above the products)."""
    if sign is None:
        return np.float32(code) * factor + start
    return np.float32(np.int32(code) ^ sign) * factor + start
