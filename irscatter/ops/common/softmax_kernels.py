"""The compiled passes of a softmax along rows (Softmax's last axis, ScaledDotProductAttention's
logits), imported only when numba is used, since importing this module imports numba.
Module-level functions, so that numba's disk cache finds them in the next process; they hold no
GIL, so irscatter's threads run their blocks of rows side by side.

They replace the numpy passes that are not sums in numpy's pairwise order: the scaling, the
bias or the causal mask, the maximum of each row and its subtraction, and the quotient by each
row's sum; the exponential and the sums stay numpy's. Each element goes through the same
operations in the same order and type as numpy's passes (one multiply, one add, one subtract,
one divide, each rounded: numba contracts nothing unless `fastmath` asks, and these functions
do not), and a maximum is one value whatever order it is taken in, so the bits are numpy's.

The maximum is taken over the values' bits read as integers, each turned into a key that orders
as the value does (a negative value's magnitude bits flipped): a loop over integers vectorizes
where one over floats, which must keep its NaNs, does not. A row holding a NaN has a NaN
maximum, as numpy's has, and every value of it is NaN after the subtraction. Zeros of either
sign are one key apart, where numpy's maximum takes whichever it meets first; the difference
with either is the same number, but for -0.0 less -0.0 (+0.0) against less +0.0 (-0.0), whose
exponentials are both 1.
"""

from __future__ import annotations

from functools import cache

import numba
import numpy as np

# The integer type of the same width as each float type, and the masks of its bits.
INTEGERS = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


@cache
def bit_constants(dtype: np.dtype) -> tuple[np.integer, np.integer, np.integer]:
    """(sign shift, magnitude mask, infinity's bits) of a float type, as its integer type."""
    integer = INTEGERS[np.dtype(dtype)]
    width = np.dtype(dtype).itemsize * 8
    magnitude = (1 << (width - 1)) - 1
    infinity = np.array(np.inf, dtype).view(integer).item()
    return integer(width - 1), integer(magnitude), integer(infinity)


@numba.njit(inline="always", error_model="numpy")
def _maximum_bits(bits, shift, magnitude, infinity):  # pragma: no cover - compiled
    """The bits of the largest value of a row (given as its bits) and whether it holds a NaN."""
    top = ~magnitude  # the smallest key
    nan = False
    for j in range(bits.size):
        value = bits[j]
        key = value ^ ((value >> shift) & magnitude)
        top = max(top, key)
        nan |= (value & magnitude) > infinity
    return top ^ ((top >> shift) & magnitude), nan


@numba.njit(inline="always", error_model="numpy")
def _maximum(row, bits, shift, magnitude, infinity, cell, cell_bits):  # pragma: no cover - compiled
    """The largest value of a row (NaN where it holds one); `cell` is a scratch of one value and
    `cell_bits` its integer view."""
    top_bits, nan = _maximum_bits(bits, shift, magnitude, infinity)
    cell_bits[0] = top_bits
    return row.dtype.type(np.nan) if nan else cell[0]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def shifted(rows, bits, out, shift, magnitude, infinity):  # pragma: no cover - compiled
    """out[r] = rows[r] - max(rows[r]), for rows [count, length] (Softmax's first pass) and
    `bits`, their integer view."""
    cell = np.empty(1, rows.dtype)
    cell_bits = cell.view(bits.dtype)
    for r in range(rows.shape[0]):
        row, target = rows[r], out[r]
        top = _maximum(row, bits[r], shift, magnitude, infinity, cell, cell_bits)
        for j in range(row.size):
            target[j] = row[j] - top


@numba.njit(nogil=True, cache=True, error_model="numpy")
def scaled_shifted(logits, bits, factor, bias, biased, causal, first_row, shift, magnitude,
                   infinity):  # pragma: no cover - compiled
    """For logits [matrices, rows, S] in place (`bits`, their integer view): each element times
    `factor`, plus the bias (`biased`: `bias` [matrices, 1 or rows, S], its one row for every row
    or each row its own), or, `causal`, plus -inf above the diagonal and 0 elsewhere (the rows
    being the query rows from `first_row` on); then each row less its maximum."""
    zero, minus_infinity = logits.dtype.type(0), logits.dtype.type(-np.inf)
    cell = np.empty(1, logits.dtype)
    cell_bits = cell.view(bits.dtype)
    for m in range(logits.shape[0]):
        for r in range(logits.shape[1]):
            row = logits[m, r]
            if biased:
                add = bias[m, r if bias.shape[1] > 1 else 0]
                for j in range(row.size):
                    row[j] = row[j] * factor + add[j]
            elif causal:
                for j in range(row.size):
                    row[j] = row[j] * factor + (minus_infinity if j > first_row + r else zero)
            else:
                for j in range(row.size):
                    row[j] = row[j] * factor
            top = _maximum(row, bits[m, r], shift, magnitude, infinity, cell, cell_bits)
            for j in range(row.size):
                row[j] = row[j] - top


@numba.njit(nogil=True, cache=True, error_model="numpy")
def divided(rows, sums):  # pragma: no cover - compiled
    """rows[r] /= sums[r] in place, for rows [count, length] and their sums [count]."""
    for r in range(rows.shape[0]):
        row, total = rows[r], sums[r]
        for j in range(row.size):
            row[j] = row[j] / total


def shift_rows(rows: np.ndarray, out: np.ndarray) -> None:
    """out = rows less each row's maximum, for rows [count, length] of f32 or f64 (`shifted`)."""
    shifted(rows, rows.view(INTEGERS[rows.dtype]), out, *bit_constants(rows.dtype))


def scale_and_shift(logits: np.ndarray, factor: np.ndarray | np.generic, bias: np.ndarray | None, causal: bool,
                    first_row: int) -> None:
    """`scaled_shifted` on logits [matrices, rows, S] of f32 or f64, in place: `bias` (None: none)
    is ignored where `causal`."""
    dtype = logits.dtype
    biased = bias is not None and not causal
    scaled_shifted(logits, logits.view(INTEGERS[dtype]), dtype.type(factor),
                   bias if biased else np.empty((0, 0, 0), dtype), biased, causal, first_row, *bit_constants(dtype))


def exp_and_divide(shifted_rows: np.ndarray) -> None:
    """The softmax's last passes over shifted rows [count, length], in place: numpy's exponential
    and sums, and the quotient by each row's sum (`divided`)."""
    np.exp(shifted_rows, out=shifted_rows)
    divided(shifted_rows, np.add.reduce(shifted_rows, axis=-1))
