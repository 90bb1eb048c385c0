"""Index normalisation and bounds checks shared by the gathers and scatters: indices as int64,
negatives wrapped where the op allows them, and an error naming the first index out of range.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ops.common import threads


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
    with one size per index component (ScatterND's last axis). The result is `indices`
    itself when it is int64 and needs no wrapping (never written).
    """
    idx = indices.astype(np.int64, copy=False)
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    if idx.size == 0:
        return idx
    per_component = sizes_arr.ndim > 0 and idx.ndim > 0
    lowest, _ = _check_range(idx, sizes_arr, tuple(range(idx.ndim - 1)) if per_component else None,
                             allow_negative, port, what)
    if allow_negative and np.any(lowest < 0):
        idx = np.where(idx < 0, idx + sizes_arr, idx)
    return idx


def check_indices(indices: np.ndarray, size: int, *, allow_negative: bool,
                  port: str) -> tuple[np.ndarray, int, int]:
    """Indices into one dimension as int64, range-checked but not wrapped, with their smallest
    value (negative when some need wrapping: for kernels that wrap piece by piece) and their
    largest (together, the part of the dimension a kernel can reach)."""
    idx = indices.astype(np.int64, copy=False)
    if idx.size == 0:
        return idx, 0, 0
    lowest, highest = _check_range(idx, np.int64(size), None, allow_negative, port, "index")
    return idx, int(lowest), int(highest)


def _check_range(idx: np.ndarray, sizes: np.ndarray, axes: tuple[int, ...] | None, allow_negative: bool,
                 port: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Two reductions decide; the element-wise search for the culprit runs only on failure.
    Returns the smallest and the largest index (per component when `axes` is given)."""
    lowest, highest = (idx.min(axis=axes), idx.max(axis=axes)) if axes is not None else _bounds(idx)
    floor = -sizes if allow_negative else 0
    if np.any(lowest < floor) or np.any(highest >= sizes):
        _raise_out_of_range(idx, sizes, allow_negative, port, what)
    return lowest, highest


def _bounds(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest of all of `idx`: a large array in one part per core
    (`threads.parts`), each part's two reductions on its own thread, as they pass over memory."""
    count = threads.parts(idx.size) if idx.flags.c_contiguous else 1
    if count == 1:
        return idx.min(), idx.max()
    flat = idx.reshape(-1)
    found: list[tuple[int, int]] = []  # each part's (smallest, largest), in any order

    def part(lo: int, hi: int) -> None:
        found.append((int(flat[lo:hi].min()), int(flat[lo:hi].max())))

    threads.run([partial(part, lo, hi) for lo, hi in threads.spans(flat.size, count)])
    return np.asarray(min(low for low, _ in found), idx.dtype), np.asarray(max(high for _, high in found), idx.dtype)


def _raise_out_of_range(idx: np.ndarray, sizes: np.ndarray, allow_negative: bool, port: str, what: str) -> None:
    low = -sizes if allow_negative else np.zeros_like(sizes)
    bad = (idx < low) | (idx >= sizes)
    pos = tuple(int(i) for i in np.argwhere(bad)[0])
    size = int(np.broadcast_to(sizes, idx.shape)[pos])
    lo = -size if allow_negative else 0
    raise ExecutionError(
        f"{what} {int(idx[pos])} at position {list(pos)} is out of range [{lo}, {size - 1}]"
        + ("" if allow_negative else " (negative indices are not allowed by this op's spec)"),
        port=port, label="index-range",
    )
