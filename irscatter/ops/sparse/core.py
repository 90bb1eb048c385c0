"""The arithmetic the embedding bags share: rows of a table gathered by index, optionally
weighted, summed (or averaged) into bags, and a fill for the bags no index falls in; and the
input checks the embedding ops have in common.

Every bag op reduces to one call of `bag_reduce` with the bag of each gathered index: the
offsets versions cut `indices` at `offsets`, the packed versions give each row of the 2-D
`indices` its own bag, EmbeddingSegmentsSum reads the bag from `segment_ids`. Sums run in
index order (`np.add.at`), as OpenVINO's reference adds them; f16 and bf16 are summed in f32
and rounded once; integer sums wrap modulo 2^bits and an integer mean truncates toward zero,
as C++ integer arithmetic does.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.numeric import as_rows, compute_dtype, from_compute
from irscatter.ops.common.ranges import Bounds, extent, indices_within
from irscatter.ops.common.types import arithmetic_float, same_element_type

INDEX_TYPES = (ElementType.i32, ElementType.i64)


def numeric(etype: ElementType) -> bool:
    """A type values are computed in: floats with arithmetic, integers of a byte or more."""
    return etype is ElementType.dynamic or arithmetic_float(etype) or (etype.is_integral and not etype.is_packed)


def table_rows(op: Op, position: int, infos) -> Bounds | None:
    """What `indices` and `default_index` may hold: rows of the table (input 0)."""
    if op.inputs[position] in ("indices", "default_index"):
        return indices_within(extent(infos[0], 0))
    return None


def check_numeric(op: Op, info: TensorInfo, name: str) -> None:
    check(numeric(info.etype), "numeric-type",
          f"{op.type_name} is not defined for {info.etype} {name} (it takes a numeric type)", port=op.port(name))


def check_index(op: Op, info: TensorInfo, name: str, rank: int | None) -> None:
    """An index input (T_IND: i32 or i64) of the given rank (None: a scalar or one element)."""
    check(info.etype is ElementType.dynamic or info.etype in INDEX_TYPES, "index-type",
          f"{name} must be i32 or i64, found {info.etype}", port=op.port(name))
    if not info.shape.rank_is_static:
        return
    if rank is None:
        check(info.shape.rank == 0 or (info.shape.rank == 1 and info.shape[0].contains(1)), "scalar-input",
              f"{name} must be a scalar, found shape {info.shape}", port=op.port(name))
    else:
        check(info.shape.rank == rank, "index-rank", f"{name} must have rank {rank}, found shape {info.shape}",
              port=op.port(name))


def same_index_type(op: Op, first: TensorInfo, other: TensorInfo, first_name: str, name: str) -> None:
    same_element_type(first, other, f"{name} must have the element type of {first_name}", "same-element-type",
                      op.port(name))


def check_table(op: Op, table: TensorInfo) -> None:
    check_numeric(op, table, "emb_table")
    if table.shape.rank_is_static:
        check(table.shape.rank >= 1, "data-rank", "emb_table must have rank 1 or more, found a scalar",
              port=op.port("emb_table"))


def check_weights(op: Op, table: TensorInfo, indices: TensorInfo, weights: TensorInfo | None) -> None:
    """per_sample_weights: of the table's type and of the indices' shape."""
    if weights is None:
        return
    same_element_type(table, weights, "per_sample_weights must have the element type of emb_table",
                      "same-element-type", op.port("per_sample_weights"))
    check(weights.shape.compatible(indices.shape), "weights-shape",
          f"per_sample_weights must have the shape of indices {indices.shape}, found {weights.shape}",
          port=op.port("per_sample_weights"))


def runtime_weights(op: Op, indices: np.ndarray, weights: np.ndarray | None) -> None:
    """At run time, when the shapes were not all known at inference."""
    if weights is not None and weights.shape != indices.shape:
        raise ExecutionError(f"per_sample_weights must have the shape of indices {list(indices.shape)}, "
                             f"found {list(weights.shape)}", port=op.port("per_sample_weights"), label="weights-shape")


def bag_shape(table: TensorInfo, bags) -> PartialShape:
    """[bags, emb_dim1, ...]: the table's shape with its first dimension replaced."""
    if not table.shape.rank_is_static:
        return PartialShape.dynamic_rank()
    return PartialShape.of([bags, *table.shape.ranked_dims[1:]])


def scalar_value(info: TensorInfo | None) -> int | None:
    if info is None or info.value is None:
        return None
    return int(np.asarray(info.value).reshape(-1)[0])


def default_row(op: Op, default_index: np.ndarray | None, num_emb: int, *, minus_one_is_none: bool) -> int | None:
    """The table row empty bags take, or None for zeros. The offsets versions read -1 as "zeros";
    any other index must name a row (negative indices are not supported)."""
    if default_index is None:
        return None
    value = int(np.asarray(default_index).reshape(-1)[0])
    if minus_one_is_none and value == -1:
        return None
    if not 0 <= value < num_emb:
        raise ExecutionError(f"default_index {value} is out of range [0, {num_emb - 1}]"
                             + (" (or -1 for zeros)" if minus_one_is_none else ""),
                             port=op.port("default_index"), label="index-range")
    return value


def offset_bags(op: Op, offsets: np.ndarray, count: int) -> tuple[int, np.ndarray]:
    """Where the first bag starts in `indices`, and the bag of each index from there on.

    Offsets must not decrease and lie in [0, count]: the spec lets the last offsets equal the
    number of indices (trailing empty bags), where OpenVINO's reference refuses an offset equal
    to it. Indices before the first offset belong to no bag (the spec's definition starts at
    offsets[0])."""
    off = offsets.astype(np.int64, copy=False).reshape(-1)
    if off.size == 0:
        return count, np.zeros(0, np.int64)
    bad = (off[0] < 0) or (off[-1] > count) or bool(np.any(off[1:] < off[:-1]))
    if bad:
        raise ExecutionError(f"offsets must not decrease and must lie in [0, {count}] (the number of indices), "
                             f"found {off.tolist()[:16]}", port=op.port("offsets"), label="bag-offsets")
    start = int(off[0])
    bags = np.searchsorted(off, np.arange(start, count, dtype=np.int64), side="right") - 1
    return start, bags


def bag_reduce(op: Op, table: np.ndarray, indices: np.ndarray, bags: np.ndarray, count: int,
               weights: np.ndarray | None = None, *, mean: bool = False, default: int | None = None,
               empty_value: float = 0) -> np.ndarray:
    """Bag b of the result: the sum (or mean) over k with bags[k] == b of
    table[indices[k]] * weights[k]; a bag with no index is table[default], or `empty_value`
    everywhere when `default` is None. The result has shape [count, *table.shape[1:]]."""
    etype = ElementType.from_dtype(table.dtype)
    out_shape = (count, *table.shape[1:])
    check_allocation(out_shape, table.dtype.itemsize)
    check_allocation([count], 8)  # the bag sizes, even when a row of the table is empty
    rows = as_rows(table)
    idx = normalize_indices(indices.reshape(-1), rows.shape[0], allow_negative=False, port=op.port("indices"))
    work = compute_dtype(etype)
    with np.errstate(over="ignore", invalid="ignore"):
        gathered = rows[idx].astype(work, copy=False)
        if weights is not None:
            gathered = gathered * weights.reshape(-1).astype(work, copy=False)[:, None]
        out = np.zeros((count, rows.shape[1]), work)
        np.add.at(out, bags, gathered)
        sizes = np.bincount(bags, minlength=count)
        filled = sizes > 0
        if mean and filled.any():
            n = sizes[filled].astype(work)[:, None]
            if work.kind == "f":
                out[filled] = out[filled] / n
            else:  # C++ integer division truncates toward zero; floor division rounds down
                q = out[filled] // n
                q += ((out[filled] - q * n) != 0) & (out[filled] < 0)
                out[filled] = q
        if default is not None:
            out[~filled] = rows[default].astype(work)
        elif empty_value != 0:
            out[~filled] = empty_value
    return from_compute(out, etype).reshape(out_shape)
