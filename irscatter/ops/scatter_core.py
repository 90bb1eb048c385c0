"""The one place where scatter arithmetic lives: index normalisation, bounds checks, and
applying updates to rows of an output buffer with a reduction.

Every scatter op reduces its work to the same shape: an output viewed as a 2-D array of
rows, a 1-D array of row numbers (one per update, in the row-major order of the indices),
and a 2-D array of update rows. Then:

* `none`: the last update of each row wins (row-major order), a deterministic choice for
  what the specs leave undefined.
* `sum`, `sub`, `prod`, `min`, `max` (and the bitwise `and`, `or`, `xor` on integers and
  booleans): every update is folded in sequentially, in index order, with the unbuffered
  `ufunc.at`, so duplicates accumulate exactly as the sequential definition says. On
  booleans sum/max are OR, prod/min are AND and sub is XOR.
* `mean`: the sum of the updates (plus the original value when `use_init_val`) divided by
  their count (plus one); integer means are floored toward negative infinity.
* `use_init_val=False`: each row that receives an update starts from the reduction's
  identity instead of its original value; rows without updates keep the original.

f16 and bf16 are computed in f32 and converted back once at the end, as OpenVINO's
reference evaluation does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.conversion import compute_dtype

REDUCTIONS = ("none", "sum", "sub", "prod", "min", "max", "mean", "and", "or", "xor")
BITWISE = ("and", "or", "xor")  # defined on integers and booleans only

_NUMERIC_UFUNCS = {"sum": np.add, "sub": np.subtract, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
                   "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
_BOOL_UFUNCS = {"sum": np.logical_or, "max": np.logical_or, "prod": np.logical_and, "min": np.logical_and,
                "sub": np.logical_xor, "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def normalize_indices(
    indices: np.ndarray,
    sizes: np.ndarray | int,
    *,
    allow_negative: bool,
    port: str,
    what: str = "index",
) -> np.ndarray:
    """Indices as int64 with negatives wrapped once (when allowed), or an ExecutionError that
    names the first offending value, its position in `indices` and the allowed range.

    `sizes` is the size of the indexed dimension, or an array broadcastable to `indices`
    with one size per index component (ScatterND's last axis).
    """
    idx = indices.astype(np.int64, copy=False)
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    low = -sizes_arr if allow_negative else np.zeros_like(sizes_arr)
    bad = (idx < low) | (idx >= sizes_arr)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        size = int(np.broadcast_to(sizes_arr, idx.shape)[pos])
        lo = -size if allow_negative else 0
        raise ExecutionError(
            f"{what} {int(idx[pos])} at position {list(pos)} is out of range [{lo}, {size - 1}]"
            + ("" if allow_negative else " (negative indices are not allowed by this op's spec)"),
            port=port,
        )
    if allow_negative and (idx < 0).any():
        idx = np.where(idx < 0, idx + sizes_arr, idx)
    return idx


def _identity(reduction: str, dtype: np.dtype) -> object:
    if reduction in ("sum", "sub", "mean", "or", "xor"):
        return 0
    if reduction == "prod":
        return 1
    if dtype == np.bool_:
        return reduction in ("min", "and")  # AND starts from True, OR from False
    if reduction == "and":
        return ~dtype.type(0)  # every bit set
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.max if reduction == "min" else info.min  # OpenVINO uses lowest(), not -inf


def last_occurrence(rows: np.ndarray) -> np.ndarray:
    """Positions of the last occurrence of each distinct row number (row-major order wins)."""
    if len(rows) < 2:
        return np.arange(len(rows))
    reversed_first = np.unique(rows[::-1], return_index=True)[1]
    return len(rows) - 1 - reversed_first


def scatter_rows(
    out: np.ndarray,
    rows: np.ndarray,
    updates: np.ndarray,
    reduction: str,
    *,
    use_init_val: bool = True,
) -> None:
    """Apply `updates[i]` to `out[rows[i]]` in place; `out` is (R, W) or (R,), `updates` (N, W) or (N,)."""
    if len(rows) == 0:
        return
    if reduction == "none":
        keep = last_occurrence(rows)
        out[rows[keep]] = updates[keep]
        return
    if not use_init_val:
        out[rows] = _identity(reduction, out.dtype)
    if reduction == "mean":
        _mean(out, rows, updates, use_init_val)
        return
    table = _BOOL_UFUNCS if out.dtype == np.bool_ else _NUMERIC_UFUNCS
    table[reduction].at(out, rows, updates)


def _mean(out: np.ndarray, rows: np.ndarray, updates: np.ndarray, use_init_val: bool) -> None:
    touched = np.unique(rows)
    counts = np.bincount(rows, minlength=out.shape[0])[touched]
    if use_init_val:
        counts = counts + 1
    np.add.at(out, rows, updates)
    shape = (-1,) + (1,) * (out.ndim - 1)
    if out.dtype.kind in "iu":
        out[touched] = np.floor_divide(out[touched], counts.reshape(shape).astype(out.dtype))
    else:
        out[touched] = out[touched] / counts.reshape(shape).astype(out.dtype)


def occurrence_rank(rows: np.ndarray) -> np.ndarray:
    """For each position, how many earlier positions hold the same row number.

    Updates with rank 0, then rank 1, ... form rounds in which every row appears at most
    once, so a combiner that has no `ufunc.at` (a user function, a sub-graph) can still be
    applied sequentially in index order with one vectorized call per round.
    """
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(rows) else np.zeros(0, np.int64)
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
    rank = np.empty(len(rows), np.int64)
    rank[order] = np.arange(len(rows)) - group_start
    return rank


def as_rows(array: np.ndarray, lead: int = 1) -> np.ndarray:
    """`array` seen as a 2-D table: its first `lead` axes are the rows, the rest one row's
    values. Spelled out because `reshape(n, -1)` cannot tell the width of an empty array."""
    return array.reshape(math.prod(array.shape[:lead]), math.prod(array.shape[lead:]))


def to_compute(data: np.ndarray, etype: ElementType) -> np.ndarray:
    """A fresh, writable, contiguous copy of `data` in the compute dtype (never a view)."""
    return np.array(data, dtype=compute_dtype(etype), order="C", copy=True)


def flat_rows_along_axis(indices: np.ndarray, shape: Sequence[int], axis: int) -> np.ndarray:
    """Flat positions in a C-ordered array of `shape` for element-wise scatter along `axis`:
    every coordinate of `indices` keeps its own position except along `axis`, where the
    (already normalised) index value replaces it."""
    strides = np.ones(len(shape), dtype=np.int64)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    flat = indices.astype(np.int64) * strides[axis]
    for d, n in enumerate(indices.shape):
        if d != axis:
            view = [1] * indices.ndim
            view[d] = n
            flat = flat + (np.arange(n, dtype=np.int64) * strides[d]).reshape(view)
    return flat.reshape(-1)
