"""What the sorting ops share: the i32/i64 index types, sort keys for floats, the bounds of a
value-dependent dimension, and counting how many entries of sorted sequences lie below values
(Bucketize, SearchSorted).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension
from irscatter.ops.base import Lower
from irscatter.ops.common.numeric import compute_dtype

IndexType = Annotated[Literal["i32", "i64"], Lower]


def numeric(etype: ElementType) -> bool:
    """Floats and integers, with a dynamic type waiting (booleans, strings and packed codes are not)."""
    return etype is ElementType.dynamic or etype.is_integral or (
        etype.is_float and not etype.is_packed and etype is not ElementType.f8e8m0)


def sort_keys(array: np.ndarray) -> np.ndarray:
    """Values that order as `array` does: the narrow floats widened to f32 (exact), others as they are."""
    etype = ElementType.from_dtype(array.dtype)
    return array.astype(compute_dtype(etype), copy=False) if etype.is_float else array


def up_to(dim: Dimension) -> Dimension:
    """A count of selected elements out of `dim`: anything from 0 to dim's upper bound."""
    return Dimension(min=0, max=dim.max)


def count_below(sorted_rows: np.ndarray, values: np.ndarray, *, right: bool) -> np.ndarray:
    """For each row b of `sorted_rows` [B, N] (ascending) and each value v of `values` [B, M],
    how many entries of b are < v (`right=False`) or <= v (`right=True`), as int64 [B, M].

    Both hold one element type. The rows are searched all at once: every entry and value is
    replaced by its dense rank among all of them (-0.0 ranks with 0.0), and row r's ranks are
    offset by r times the number of ranks, so one flat sorted array serves every row. A NaN
    value ranks above everything, so it counts every entry (callers decide what NaN gives).
    """
    rows, n = sorted_rows.shape
    m = values.shape[1]
    if rows == 0 or n == 0 or m == 0:
        return np.zeros((rows, m), dtype=np.int64)
    both = np.concatenate([sort_keys(sorted_rows).reshape(-1), sort_keys(values).reshape(-1)])
    _, rank = np.unique(both, return_inverse=True)
    rank = rank.reshape(-1).astype(np.int64)
    span = int(rank.max()) + 1
    offset = np.arange(rows, dtype=np.int64)[:, None] * span
    keys = (rank[:rows * n].reshape(rows, n) + offset).reshape(-1)
    wanted = (rank[rows * n:].reshape(rows, m) + offset).reshape(-1)
    found = np.searchsorted(keys, wanted, side="right" if right else "left").reshape(rows, m)
    return found - np.arange(rows, dtype=np.int64)[:, None] * n


def count_below_mixed(boundaries: np.ndarray, values: np.ndarray, *, right: bool) -> np.ndarray:
    """`count_below` for one sorted 1-D `boundaries` and `values` of any shape, the two of any
    numeric types, compared by their mathematical values: with a float on either side in f64
    (exact for every float and for integers up to 2^53), integers exactly, u64 against signed
    integers too. NaN values count every boundary, as NaN sorts last."""
    b, v = sort_keys(boundaries), sort_keys(values)
    side: Literal["left", "right"] = "right" if right else "left"
    if b.dtype.kind == "f" or v.dtype.kind == "f":
        return np.searchsorted(b.astype(np.float64), v.astype(np.float64), side=side)
    unsigned64 = np.dtype(np.uint64)
    if b.dtype != unsigned64 and v.dtype != unsigned64:
        return np.searchsorted(b.astype(np.int64), v.astype(np.int64), side=side)
    if b.dtype.kind == "u" and v.dtype.kind == "u":
        return np.searchsorted(b.astype(np.uint64), v.astype(np.uint64), side=side)
    if b.dtype.kind == "i":  # u64 values against signed boundaries: the negative ones lie below all
        negative = int(np.searchsorted(b, 0, side="left"))
        return negative + np.searchsorted(b[negative:].astype(np.uint64), v, side=side)
    found = np.searchsorted(b, np.maximum(v, 0).astype(np.uint64), side=side)  # signed values, u64 boundaries
    return np.where(v < 0, 0, found)
