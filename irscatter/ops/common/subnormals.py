"""Matrix products whose operand holds subnormal numbers, made on that operand scaled by a
power of two.

x86 processors multiply a subnormal number (below the smallest normal one, 2^-126 in f32)
through a microcode assist unless the flush-to-zero and denormals-are-zero modes are on, and
those modes would change results. A product whose operand is full of them runs tens of times
slower on the same BLAS. Attention probabilities are such an operand: a Softmax over masked
scores (Swin's shifted windows add -100 to the scores of positions outside a window, and
e^-100 is subnormal in f32) writes one.

A power of two changes a float's exponent and nothing else, so 2^k * a is exact while it stays
normal, every product and partial sum of (2^k a) @ b is 2^k times the one of a @ b, and the
result scaled back by 2^-k has the same bits wherever the unscaled product's products, partial
sums and results are normal numbers or zero. Where one of them is subnormal, the unscaled
product rounds it to the subnormal grid, with fewer bits than a normal number has, while the
scaled one keeps them all: its result can differ in its last bits there, nearer to the exact
sum.

k is at most SHIFT and as large as keeps 2^k max|a| and every partial sum (at most
inner * max|a| * max|b|) finite. If that leaves less than the significand's width, which is
what it takes to make every subnormal of `a` normal, the product is made as it is. A NaN or an
infinity in either operand also leaves the product as it is.

Only the operands a caller names are looked at (MatMul's inputs a Softmax writes,
`runtime/plan.py`): finding out costs passes over the operand, which for an attention's short
inner products is a large part of the product's own time.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

SHIFT = {np.dtype(np.float32): 64, np.dtype(np.float64): 128}
# The unsigned integer of each float's width, and the bits of its magnitude.
_BITS = {np.dtype(np.float32): (np.uint32, 0x7FFFFFFF), np.dtype(np.float64): (np.uint64, 0x7FFFFFFFFFFFFFFF)}


def magnitudes(x: np.ndarray) -> tuple[bool, float]:
    """Whether `x` (f32 or f64) holds a subnormal number, and its largest magnitude (inf when
    it holds an infinity or a NaN). On the bits, in integer passes: subnormals and the
    infinities take no assist there."""
    bits = _magnitude_bits(x)
    largest = _largest(bits, x.dtype)
    if math.isinf(largest):
        return False, largest
    # zero wraps to the largest integer; a subnormal's magnitude bits lie below the smallest normal's
    bits -= bits.dtype.type(1)
    return bool(bits.min() < _bits_of(np.finfo(x.dtype).smallest_normal, x.dtype) - 1), largest


def largest_magnitude(x: np.ndarray) -> float:
    """`magnitudes(x)`'s largest magnitude alone, without the pass that looks for subnormals."""
    return _largest(_magnitude_bits(x), x.dtype)


def _magnitude_bits(x: np.ndarray) -> np.ndarray:
    """The bits of each element's magnitude, as unsigned integers of its width (a new array)."""
    unsigned, magnitude = _BITS[x.dtype]
    return np.bitwise_and(x.view(unsigned), unsigned(magnitude))


def _bits_of(value: float, dtype: np.dtype) -> int:
    return int(np.array(value, dtype).view(_BITS[dtype][0]))


def _largest(bits: np.ndarray, dtype: np.dtype) -> float:
    """The largest magnitude among `bits`, inf where one is an infinity's or a NaN's (above it)."""
    largest = bits.max()
    return math.inf if largest >= _bits_of(np.inf, dtype) else float(largest.view(dtype))


def shift(a: np.ndarray, b: np.ndarray, inner: int) -> int | None:
    """The k by which to scale `a` for a @ b (see the module's docstring), or None where `a`
    holds no subnormal or no k would do."""
    if a.dtype not in SHIFT or b.dtype != a.dtype or a.size == 0 or b.size == 0:
        return None
    subnormal, largest_a = magnitudes(a)
    if not subnormal:
        return None
    largest_b = largest_magnitude(b)
    if math.isinf(largest_b):
        return None
    info = np.finfo(a.dtype)
    # the largest a partial sum may reach, before the scale; half of the largest float as room
    bound = max(largest_a, inner * largest_a * largest_b)
    room = math.frexp(float(info.max) / 2 / bound)[1] - 1  # floor(log2(max / 2 / bound))
    k = min(SHIFT[a.dtype], room)
    return k if k > info.nmant else None


def scaled_product(a: np.ndarray, b: np.ndarray, which: int,
                   product: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """product(a, b) (a matrix product, which returns a new array), with operand `which` (0:
    a, 1: b) scaled by 2^k and the result by 2^-k where that operand holds subnormal numbers.
    For b, the operand scaled is b and the bound the same: the product's terms are symmetric."""
    scaled, other = (a, b) if which == 0 else (b, a)
    inner = a.shape[-1]
    k = shift(scaled, other, inner)
    if k is None:
        return product(a, b)
    up = np.multiply(scaled, scaled.dtype.type(2.0 ** k))
    out = product(up, b) if which == 0 else product(a, up)
    return np.multiply(out, out.dtype.type(2.0 ** -k), out=out)
