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
rounded to f16, which `f16_rounding.py` does with float and integer arithmetic that vectorizes,
where a lookup in a table per fiber is a gather. tests/test_decompress.py compares it, bit for
bit, with numpy's own f16 rounding for every f16 scale and every d in -255..255.

Codes arrive as the bytes that hold them; a signed code's byte is its two's complement within
its width, so its value is `(byte ^ sign) - sign` (`sign` the width's top bit, 0 for unsigned
codes), and the kernels subtract `sign + zero point` per fiber in one step. Codes of 4 bits may
also stay two to a byte, as the weights file holds them (`unpack_nibbles`, `product_nibbles`):
a matrix-vector product then reads half the bytes.
"""

from __future__ import annotations

import sys

import numpy as np

from irscatter.ops.common import accel


def decompress(codes: np.ndarray, sign: int, shift: np.ndarray, scale: np.ndarray, first: int, to_f16: bool,
               out: np.ndarray, packed: bool = False) -> np.ndarray:
    """`out[i, j] = ((codes[i, j] ^ sign) - shift[first + i]) * scale[first + i]` in f32, rounded
    to f16 when `to_f16`, for codes [P, L] (uint8: each code's byte; `packed`: [P, L / 2], 4-bit
    codes two to a byte, code 2j in the low nibble of byte j), shift and scale [fibers] (f32;
    `shift` is `sign` plus the fiber's zero point; codes minus zero points within -255..255) and
    `out` [P, L] (f32, C-contiguous)."""
    if accel.enabled():
        from irscatter.ops.common import decompress_kernels as kernels  # (imports numba: only when used)

        if packed and levels_usable(out.shape[-1]) and _contiguous(codes, shift, scale, out):
            from irscatter.ops.common import decompress_levels  # (imports numba)

            decompress_levels.decoded_levels(codes, sign, shift, scale, first, to_f16, out)
        elif packed:
            kernels.nibbles_decoded(codes, _compiled_sign(sign), shift, scale, first, to_f16, out)
        elif to_f16:
            kernels.to_f16(codes, _compiled_sign(sign), shift, scale, first, out.view(np.uint32))
        else:
            kernels.to_f32(codes, _compiled_sign(sign), shift, scale, first, out)
        return out
    if packed:
        codes = unpack_nibbles(codes, np.empty(out.shape, np.uint8))
    stop = first + len(codes)
    np.bitwise_xor(codes, np.uint8(sign), out=out, casting="unsafe")
    out -= shift[first:stop, None]
    out *= scale[first:stop, None]
    if to_f16:
        out[...] = out.astype(np.float16)  # numpy's own rounding, which its f16 Multiply does too
    return out


def product(codes: np.ndarray, sign: int, shift: np.ndarray, scale: np.ndarray, fibers: int, x: np.ndarray,
            to_f16: bool, out: np.ndarray, lo: int, hi: int) -> None:
    """`out[r]` for weight rows r in [lo, hi): the row decompressed as `decompress` does it
    (codes [rows * fibers, L], `fibers` fibers a row), times `x` [fibers * L] (f32), summed in
    the compiled loop's own order. Needs numba (`accel.enabled()`); the decompression is not
    written out, so a matrix-vector product costs one pass over the codes."""
    from irscatter.ops.common import decompress_kernels as kernels  # (imports numba)

    kernels.product(codes, _compiled_sign(sign), shift, scale, fibers, x, to_f16, out, lo, hi)


def product_nibbles(packed: np.ndarray, sign: int, shift: np.ndarray, scale: np.ndarray, fibers: int,
                    pairs: tuple[np.ndarray, np.ndarray], to_f16: bool, out: np.ndarray, lo: int, hi: int) -> None:
    """`product` for 4-bit codes two to a byte (packed [rows * fibers, L / 2], a fiber's code 2j
    in the low nibble of its byte j, 2j + 1 in the high one), read as they are; `pairs` is
    `split_pairs(x)`. Needs numba."""
    from irscatter.ops.common import decompress_kernels as kernels  # (imports numba)

    kernels.product_nibbles(packed, _compiled_sign(sign), shift, scale, fibers, pairs[0], pairs[1], to_f16, out, lo, hi)


def levels_usable(length: int) -> bool:
    """Whether 4-bit codes in fibers of `length` can be looked up (`product_levels`): numba is
    used, the CPU has AVX-512, and a fiber's bytes come in whole blocks of 16."""
    if not accel.enabled() or length % 32:
        return False
    from irscatter.ops.common import compiled_hints  # (imports numba)

    return compiled_hints.WIDE_VECTORS


def product_levels(packed: np.ndarray, sign: int, shift: np.ndarray, scale: np.ndarray, fibers: int,
                   pairs: tuple[np.ndarray, np.ndarray], to_f16: bool, out: np.ndarray, lo: int, hi: int) -> None:
    """`product_nibbles`, each code's value looked up among its fiber's 16 (only where
    `levels_usable`; the loop reads its arrays' memory in order, so any that is not contiguous
    goes to `product_nibbles`)."""
    if not _contiguous(packed, shift, scale, *pairs, out):
        product_nibbles(packed, sign, shift, scale, fibers, pairs, to_f16, out, lo, hi)
        return
    from irscatter.ops.common import decompress_levels  # (imports numba)

    decompress_levels.product_levels(packed, sign, shift, scale, fibers, pairs[0], pairs[1], to_f16, out, lo, hi)


def _contiguous(*arrays: np.ndarray) -> bool:
    return all(a.flags.c_contiguous for a in arrays)


def _compiled_sign(sign: int) -> np.int32 | None:
    """The sign as the compiled loops take it: None for unsigned codes, so that their loops are
    compiled without the flip of a sign bit."""
    return None if sign == 0 else np.int32(sign)


def split_pairs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The elements of `x` (1-D, of even length) of even index and of odd index, each contiguous."""
    return np.ascontiguousarray(x[0::2]), np.ascontiguousarray(x[1::2])


def unpack_nibbles(packed: np.ndarray, out: np.ndarray) -> np.ndarray:
    """4-bit codes two to a byte [P, L / 2] (code 2j in the low nibble of byte j) as a byte each,
    into `out` [P, L] (uint8, C-contiguous): each byte becomes a 16-bit word of its two codes,
    the low one first in memory, so that every store is contiguous."""
    words = out.view(np.uint16)
    np.right_shift(packed, np.uint8(4), out=words, casting="unsafe")
    np.left_shift(words, np.uint16(8), out=words)
    np.bitwise_or(words, packed & np.uint8(15), out=words, casting="unsafe")
    if sys.byteorder == "big":
        words.byteswap(inplace=True)
    return out
