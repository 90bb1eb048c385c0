"""The one place where scatter arithmetic lives: applying updates to rows of an output buffer with a reduction.

Every scatter op reduces its work to the same shape: an output viewed as a 2-D array of
rows, a 1-D array of row numbers (one per update, in the row-major order of the indices),
and a 2-D array of update rows. Then:

* `none`: the last update of each row wins (row-major order), a deterministic choice for
  what the specs leave undefined.
* `sum`, `sub`, `prod`, `min`, `max` (and the bitwise `and`, `or`, `xor` on integers and
  booleans): every update is folded in sequentially, in index order, with the unbuffered
  `ufunc.at`, so duplicates accumulate exactly as the sequential definition says. On
  booleans sum/max are OR, prod/min are AND and sub is XOR.
* `min` and `max` over floats choose between values that do not compare (a NaN on either side)
  by the op's own rule, `incomparable`: `"nan"` propagates the NaN (IEEE maximum/minimum, the
  default, for other frameworks' scatters); `"keep"` keeps the accumulated value, as
  `std::max(acc, update)` in OpenVINO's ScatterNDUpdate-15 reference does (a NaN already there
  stays, a NaN update is ignored); `"update"` takes the update, as the `acc > update ? acc :
  update` of its ScatterElementsUpdate-12 reference does (a NaN update lands, and the next
  update replaces it).
* `mean`: the sum of the updates (plus the original value when `use_init_val`) divided by
  their count (plus one); integer means are floored toward negative infinity.
* `use_init_val=False`: each row that receives an update starts from the reduction's
  identity instead of its original value; rows without updates keep the original.

f16 and bf16 are computed in f32 and converted back once at the end, as OpenVINO's
reference evaluation does.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.common import accel as fast
from irscatter.ops.common import strict
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.numeric import compute_dtype


def shape_text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


LAST_WINS = "irscatter keeps the last in row-major order of the indices (OpenVINO's reference order)"
LAST_WINS_HERE = "irscatter keeps the last in row-major order of the indices"  # no reference to follow


def place(name: str, coordinates: Sequence[object]) -> str:
    """An element or slice of a tensor as a message names it: "data[2, :]"."""
    return f"{name}[{', '.join(str(c) for c in coordinates)}]"


def report_duplicate_rows(rows: np.ndarray, positions_shape: Sequence[int], rows_shape: Sequence[int],
                          trailing: int, *, port: str, name: str = "data", rule: str = LAST_WINS) -> None:
    """Strict mode: the updates (in row-major order over `positions_shape`, one per entry of
    `rows`) that write one row more than once without a reduction. A row is a flat position in
    `rows_shape`, followed by `trailing` whole axes of the destination `name`."""
    def target(row: int) -> str:
        return place(name, [int(i) for i in np.unravel_index(row, tuple(rows_shape))] + [":"] * trailing)

    strict.report_duplicates(rows, port=port, rule=rule, target=target,
                             position=lambda p: "indices" + strict.coordinates(p, positions_shape))


def report_duplicate_slices(idx: np.ndarray, indices_shape: Sequence[int], rank: int, axis: int, *, port: str,
                            name: str = "data", rule: str = LAST_WINS) -> None:
    """Strict mode: indices (flattened, in row-major order over `indices_shape`) that name one
    slice along `axis` of a rank-`rank` destination more than once, without a reduction."""
    strict.report_duplicates(
        idx, port=port, rule=rule,
        position=lambda p: "indices" + strict.coordinates(p, indices_shape),
        target=lambda t: place(name, [":"] * axis + [t] + [":"] * (rank - axis - 1)))


class ReductionAttribute:
    """For the versions whose schema has a `reduction` attribute (the older ones always replace)."""

    @property
    def reduction(self) -> str:
        return self.attrs.reduction  # type: ignore[attr-defined]


REDUCTIONS = ("none", "sum", "sub", "prod", "min", "max", "mean", "and", "or", "xor")


BITWISE = ("and", "or", "xor")  # defined on integers and booleans only


_NUMERIC_UFUNCS = {"sum": np.add, "sub": np.subtract, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
                   "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


_BOOL_UFUNCS = {"sum": np.logical_or, "max": np.logical_or, "prod": np.logical_and, "min": np.logical_and,
                "sub": np.logical_xor, "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


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


def last_occurrence(rows: np.ndarray, n_rows: int) -> np.ndarray | None:
    """Positions of the last occurrence of each distinct row number (row-major order wins),
    in no particular order; None when no row number repeats (every position is kept).

    A scatter-max of positions into a table of `n_rows`: linear time, where sorting four
    million indices takes most of a second.
    """
    if len(rows) < 2 or np.bincount(rows, minlength=n_rows).max() < 2:
        return None
    winner = np.full(n_rows, -1, dtype=np.int64)
    np.maximum.at(winner, rows, np.arange(len(rows), dtype=np.int64))
    return winner[winner >= 0]


def scatter_rows(
    out: np.ndarray,
    rows: np.ndarray,
    updates: np.ndarray,
    reduction: str,
    *,
    use_init_val: bool = True,
    incomparable: str = "nan",
    nan_at_targets: bool | None = None,
) -> None:
    """Apply `updates[i]` to `out[rows[i]]` in place; `out` is (R, W) or (R,), `updates` (N, W) or (N,).
    `nan_at_targets`: whether a targeted element of `out` may hold a NaN, when the caller knows
    (None: looked at here, when the NaN rule needs it)."""
    if len(rows) == 0:
        return
    starts_from = None if use_init_val or reduction == "none" else _identity(reduction, out.dtype)
    if fast.scatter_rows(out, rows, updates, reduction, use_init_val=use_init_val, incomparable=incomparable,
                         identity=starts_from):
        return
    if reduction == "none":
        keep = last_occurrence(rows, out.shape[0])
        if keep is None:
            out[rows] = updates
        else:
            out[rows[keep]] = updates[keep]
        return
    if not use_init_val:
        out[rows] = starts_from
    if reduction == "mean":
        _mean(out, rows, updates, use_init_val)
        return
    if incomparable != "nan" and reduction in ("min", "max") and out.dtype.kind == "f":
        if _has_nan(updates):
            _fold_incomparable(out, rows, updates, reduction, incomparable)
            return
        # NaN-free updates: "keep" is then maximum's rule (a NaN already there stays), "update"
        # fmax's (it is replaced), which only differs where a NaN is there, and runs slower.
        if incomparable == "update" and (_has_nan(out if out.size <= updates.size else out[rows])
                                         if nan_at_targets is None else nan_at_targets):
            (np.fmax if reduction == "max" else np.fmin).at(out, rows, updates)
            return
    table = _BOOL_UFUNCS if out.dtype == np.bool_ else _NUMERIC_UFUNCS
    table[reduction].at(out, rows, updates)


def _has_nan(x: np.ndarray) -> bool:
    """Whether `x` holds a NaN: max propagates NaN, and reduces without a temporary array."""
    return x.size > 0 and bool(np.isnan(np.max(x)))


def _fold_incomparable(out: np.ndarray, rows: np.ndarray, updates: np.ndarray, reduction: str,
                       incomparable: str) -> None:
    """min/max with NaN present, by the rule `incomparable` names (see the module doc). Works on
    the targeted elements only, so its cost follows the updates, not the output."""
    pick = np.fmax if reduction == "max" else np.fmin  # on NaN-free values, plain max/min
    if incomparable == "keep":
        before = out[rows]
        pick.at(out, rows, updates)  # a NaN update never lands: fmax skips it
        out[rows] = np.where(np.isnan(before), before, out[rows])  # a NaN already there stays
        return
    # "update": each NaN an element receives resets it, so only the updates after its last NaN
    # count (or nothing, when the NaN came last); a NaN it started with is replaced by the first.
    if out.ndim == 2:
        width = out.shape[1]
        targets = (rows[:, None] * width + np.arange(width)).reshape(-1)
    else:
        width, targets = 1, rows
    values = updates.reshape(-1)
    touched, slot = np.unique(targets, return_inverse=True)
    where = np.divmod(touched, width) if out.ndim == 2 else touched
    position = np.arange(len(values), dtype=np.int64)
    last_nan = np.full(len(touched), -1, dtype=np.int64)
    np.maximum.at(last_nan, slot, np.where(np.isnan(values), position, -1))
    last_any = np.full(len(touched), -1, dtype=np.int64)
    np.maximum.at(last_any, slot, position)
    start = out[where]
    acc = np.where((last_nan >= 0) | np.isnan(start), -np.inf if reduction == "max" else np.inf, start)
    kept = position > last_nan[slot]
    pick.at(acc, slot[kept], values[kept])
    acc[last_nan == last_any] = np.nan  # the last update each element received was a NaN
    out[where] = acc


def _mean(out: np.ndarray, rows: np.ndarray, updates: np.ndarray, use_init_val: bool) -> None:
    counts = np.bincount(rows, minlength=out.shape[0])
    touched = np.flatnonzero(counts)
    counts = counts[touched]
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


TILE_ELEMENTS = 1 << 18  # output elements one tile may touch: 1 MB of f32, about a core's L2 cache


MIN_TILE_WIDTH = 16  # narrower tiles (a huge axis) read too little per row to pay for themselves


# Output elements the indices of a min/max scatter may reach in one fiber along the axis for it to
# skip the tiles (`_scatter_in_index_order`): 4 MB of f32, which a last-level cache still holds.
REACH_ELEMENTS = 1 << 20


BLOCK_ELEMENTS = 1 << 16  # updates per block of the index-order scatter: its index block stays in L2


def scatter_along_axis(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    axis: int,
    reduction: str,
    etype: ElementType,
    *,
    inplace: bool = False,
    use_init_val: bool = True,
    wrap_negative: bool = False,
    incomparable: str = "nan",
    reach: tuple[int, int] | None = None,
) -> np.ndarray:
    """Element-wise scatter along `axis`, returning the result in the compute dtype: for
    every coordinate c of `indices`, the element at c with c[axis] replaced by indices[c]
    receives updates[c]. Indices must be range-checked already; `wrap_negative` wraps the
    negative ones. `inplace` lets the result overwrite `data` (see `buffers.output_buffer`).
    `reach`, when the caller knows it: the smallest and largest index, before wrapping.

    Random targets spread over a large output miss the cache on every update. When the
    indices span the data everywhere but along the axis, the work is cut into tiles of
    whole fibers along the axis (a few rows and columns around it) that fit in L2: each
    tile's updates stay in row-major order, and a target only ever receives updates from
    its own tile, so every reduction sees its updates in exactly the sequential order. The
    same property lets the fast backend (`ops/common/accel.py`) run the tiles on all cores at once.

    Tiles cost copies: each reads its columns of `data`, `indices` and `updates` row by short
    row. When the indices of a min or max reach only a few rows of each fiber (many updates per
    target), the targets stay in cache without them, and the updates go in index order instead
    (`_scatter_in_index_order`): the same order for every target, so the same bits.
    """
    shape = data.shape
    outer, size, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    spans = indices.shape[:axis] == shape[:axis] and indices.shape[axis + 1:] == shape[axis + 1:]
    if size * inner <= TILE_ELEMENTS:
        p_step, q_step = max(1, TILE_ELEMENTS // max(1, size * inner)), inner
    else:
        p_step, q_step = 1, max(1, TILE_ELEMENTS // size)
    tileable = spans and not (inner > 1 and q_step < MIN_TILE_WIDTH)
    if tileable:
        out = _scatter_tiles_fast(data, indices, updates, axis, (p_step, q_step), reduction, etype,
                                  inplace=inplace, use_init_val=use_init_val, incomparable=incomparable)
        if out is not None:  # the fast backend ran the same tiles on all cores
            return out
    reached = _few_rows_reached(reduction, reach, size, inner)
    if spans and indices.size >= TILE_ELEMENTS and reached is not None:
        out = output_buffer(data, compute_dtype(etype), inplace=inplace)
        _scatter_in_index_order(out, indices, updates, axis, reduction, reached, wrap_negative=wrap_negative,
                                use_init_val=use_init_val, incomparable=incomparable)
        return out
    if not tileable or indices.size < TILE_ELEMENTS:
        out = output_buffer(data, compute_dtype(etype), inplace=inplace)
        idx = np.where(indices < 0, indices + size, indices) if wrap_negative else indices
        rows = flat_rows_along_axis(idx, shape, axis)
        scatter_rows(out.reshape(-1), rows, updates.reshape(-1).astype(out.dtype, copy=False), reduction,
                     use_init_val=use_init_val, incomparable=incomparable)
        return out
    # The tiles cover the whole output, and each one is read from `data`: no separate copy.
    out = output_buffer(data, compute_dtype(etype), inplace=inplace, copy_values=False)
    n = indices.shape[axis]
    src3, out3 = data.reshape(outer, size, inner), out.reshape(outer, size, inner)
    idx3, upd3 = indices.reshape(outer, n, inner), updates.reshape(outer, n, inner)
    # Each tile is copied out, numbered from zero, updated and copied back: a contiguous
    # tile spans few pages (writing through a strided view misses the TLB on every row).
    # One set of buffers serves every tile: fresh large arrays would fault on every page.
    tile_buf = np.empty(p_step * size * q_step, out.dtype)
    rows_buf = np.empty(p_step * n * q_step, np.int64)
    upd_buf = np.empty(p_step * n * q_step, out.dtype)
    # A tile element's position is index * tq + offset, offset = p' * size * tq + q'.
    fiber_start = np.arange(p_step, dtype=np.int64).reshape(-1, 1, 1) * size
    offsets = {}  # by tile width: the last tile of a row of tiles may be narrower
    for p in range(0, outer, p_step):
        for q in range(0, inner, q_step):
            window = (slice(p, p + p_step), slice(None), slice(q, q + q_step))
            source = src3[window]
            tp, tq = source.shape[0], source.shape[2]
            tile = tile_buf[: tp * size * tq].reshape(tp, size, tq)
            np.copyto(tile, source)
            idx = idx3[window]
            if tq not in offsets:
                offsets[tq] = fiber_start * tq + np.arange(tq, dtype=np.int64)
            rows = rows_buf[: tp * n * tq].reshape(tp, n, tq)
            np.multiply(idx, tq, out=rows)
            if wrap_negative:
                np.add(rows, size * tq, out=rows, where=idx < 0)
            rows += offsets[tq][:tp]
            upd = upd_buf[: tp * n * tq].reshape(tp, n, tq)
            np.copyto(upd, upd3[window])
            scatter_rows(tile.reshape(-1), rows.reshape(-1), upd.reshape(-1), reduction, use_init_val=use_init_val,
                         incomparable=incomparable)
            out3[window] = tile
    return out


def _few_rows_reached(reduction: str, reach: tuple[int, int] | None, size: int, inner: int) -> slice | None:
    """For a min or max along an axis of `size`, `inner` elements apart, whose indices go from
    reach[0] to reach[1] (before wrapping): the part of the axis they reach, when that is at most
    REACH_ELEMENTS of each fiber (the index-order path); None otherwise. Negative and
    non-negative indices together may reach both ends once wrapped: all of it."""
    if reach is None or reduction not in ("min", "max"):
        return None
    lowest, highest = reach
    if lowest >= 0:
        reached = slice(lowest, highest + 1)
    else:
        reached = slice(size + lowest, size + highest + 1) if highest < 0 else slice(0, size)
    return reached if (reached.stop - reached.start) * inner <= REACH_ELEMENTS else None


def _scatter_in_index_order(out: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int, reduction: str,
                            reached: slice, *, wrap_negative: bool, use_init_val: bool, incomparable: str) -> None:
    """`scatter_along_axis` into `out` (already holding data's values; its indices reach the
    `reached` part of the axis) without tiles: the updates in row-major order, a block of whole
    rows of `indices` at a time (read in place, not copied), each block's flat positions
    computed into one reused buffer. Blocks follow each other in
    index order, so every target receives its updates in the sequential order; a block with a
    NaN among its updates takes `scatter_rows`' NaN rules on its own, which start from whatever
    the earlier blocks left. `use_init_val=False` first sets every target to the identity."""
    if not use_init_val:
        identity = _identity(reduction, out.dtype)
        for rows, _ in _index_order_blocks(out, indices, updates, axis, wrap_negative):
            out.reshape(-1)[rows] = identity
    # Whether a NaN may sit where a block's updates land (see scatter_rows): one look at the part
    # of the output the indices reach first, then every NaN update landed under the "update" rule.
    watch = incomparable == "update" and out.dtype.kind == "f"
    outer, size = math.prod(out.shape[:axis]), out.shape[axis]
    nan_there = watch and _has_nan(out.reshape(outer, size, -1)[:, reached])
    for rows, values in _index_order_blocks(out, indices, updates, axis, wrap_negative):
        scatter_rows(out.reshape(-1), rows, values, reduction, incomparable=incomparable, nan_at_targets=nan_there)
        nan_there = nan_there or (watch and _has_nan(values))


def _index_order_blocks(out: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int,
                        wrap_negative: bool) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(flat positions in `out`, update values) for consecutive blocks of `indices` in row-major
    order, `indices` spanning `out` away from `axis`; the positions live in one buffer, valid
    until the next block. A block is whole rows of the last axes, or a part of one when a row
    alone is longer than BLOCK_ELEMENTS."""
    shape = out.shape
    outer, size, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    idx2, upd2 = indices.reshape(-1, inner), updates.reshape(-1, inner)
    rows_per_block, width = max(1, BLOCK_ELEMENTS // inner), min(inner, BLOCK_ELEMENTS)
    buffer = np.empty(rows_per_block * width, np.int64)
    columns = np.arange(width, dtype=np.int64)
    n = indices.shape[axis]
    for k in range(0, len(idx2), rows_per_block):
        for q in range(0, inner, width):
            block = idx2[k:k + rows_per_block, q:q + width]
            b, w = block.shape
            rows = buffer[:b * w].reshape(b, w)
            np.multiply(block, inner, out=rows)
            if wrap_negative:
                np.add(rows, size * inner, out=rows, where=block < 0)
            rows += columns[:w]
            if q:
                rows += q
            if outer > 1:  # row k of idx2 lies in fiber k // n, which starts at (k // n) * size * inner
                rows += (np.arange(k, k + b, dtype=np.int64) // n * (size * inner))[:, None]
            yield rows.reshape(-1), upd2[k:k + b, q:q + w].astype(out.dtype, copy=False).reshape(-1)


def _scatter_tiles_fast(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int,
                        steps: tuple[int, int], reduction: str, etype: ElementType, *, inplace: bool,
                        use_init_val: bool, incomparable: str) -> np.ndarray | None:
    """`scatter_along_axis`'s tiles run by the fast backend, on all cores; None when it does not
    take the call. `steps` are a tile's fibers and columns."""
    dtype = compute_dtype(etype)
    if not fast.takes_tiles(reduction, dtype, tiled=indices.size >= TILE_ELEMENTS):
        return None
    shape = data.shape
    outer, size, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    n = indices.shape[axis]
    out = output_buffer(data, dtype, inplace=inplace, copy_values=False)
    starts_from = None if use_init_val or reduction == "none" else _identity(reduction, dtype)
    fast.scatter_tiles(data.reshape(outer, size, inner), out.reshape(outer, size, inner),
                       indices.reshape(outer, n, inner), updates.reshape(outer, n, inner), *steps, reduction,
                       use_init_val=use_init_val, incomparable=incomparable, identity=starts_from)
    return out


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
