"""The arithmetic every sparse attention op shares: attention of each query row over the key
positions it selects, given as a weight per (query row, key position) that is 0 where the row
does not attend.

SparseSDPA, SparsePA and BlockSparseAttention (domain `extension`), BlockSparseAttention-17
and QwenSparseAttention-17 differ only in how they name the selected positions (block lists
per query token or per query block, the incomplete block of the query, causal bounds, a block
mask). Each turns its selection into such weights, block by block (`mark`, `blocks_to_tokens`),
and hands them to `attend`:

* The weight of a position is how many times the row selects it: 1 for the ops whose selection
  is a set, the count for BlockSparseAttention-17, whose page lists a block once per index entry
  and so counts a block listed twice twice in the softmax.
* A row that selects nothing gives zeros (every page says so).
* A position a row does not select never reaches its output, even when its key or value is
  NaN or infinite: the pages describe gathering the selected blocks only. (Their pseudo-code
  sometimes multiplies unselected values by a zero weight, which would spread a NaN; irscatter
  reads them as the gathering kernels they describe.)
* Logits, softmax and sums run in f32 for the narrow float types, f64 for f64; the result is
  rounded once. The products run under the thread policy (`products.matmul`).

Query heads map to key/value heads by groups (`h // (H / Hkv)`), and a mask given per `d`
heads (one, the selection heads, or all query heads) maps head h to `h // (H / d)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import tensor_size_problem
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.products import matmul
from irscatter.ops.common.types import check_float, same_element_type

Expected = int | Dimension | None  # a dimension an input must have (None: any)
INDEX_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)  # the pages' T_IND (dynamic waits)


def expect(info: TensorInfo | None, dims: Sequence[Expected], name: str, *, label: str, port: str) -> None:
    """An input of rank len(dims) whose dimensions fit `dims`, refused under `label` otherwise;
    a dynamic rank or dimension waits for the run, and an input left out has nothing to check."""
    if info is None or not info.shape.rank_is_static:
        return
    shape = info.shape
    check(shape.rank == len(dims), label, f"{name} must have rank {len(dims)}, found shape {shape}", port=port)
    for axis, want in enumerate(dims):
        if want is None:
            continue
        want = want if isinstance(want, Dimension) else Dimension.static(want)
        check(shape[axis].compatible(want), label, f"{name} must have {want} as dimension {axis}, found shape {shape}",
              port=port)


def dim(info: TensorInfo | None, axis: int) -> Dimension:
    """Dimension `axis` of an input, dynamic when its rank is."""
    if info is None or not info.shape.rank_is_static or axis >= info.shape.rank:
        return Dimension.dynamic()
    return info.shape[axis]


def known(*dims: Dimension) -> Dimension:
    """The first static one of several dimensions that must agree (else the first); the caller
    then holds each of them to it."""
    return next((d for d in dims if d.is_static), dims[0])


def ceil_blocks(length: Dimension, size: int) -> Dimension:
    """How many blocks of `size` cover `length`."""
    return Dimension.static(-(-int(length) // size)) if length.is_static and size > 0 else Dimension.dynamic()


@dataclass(frozen=True)
class Dims:
    """The dimensions of query [N, H, L, E], key [N, Hkv, S, E] and value [N, Hkv, S, Ev]."""

    batch: Dimension
    heads: Dimension
    length: Dimension
    kv_heads: Dimension
    source: Dimension
    value_size: Dimension


def attention_dims(op: Op, infos: Mapping[str, TensorInfo | None], *, label: str,
                   lengths: tuple[Dimension, ...] = ()) -> Dims:
    """Query, key and value (in `infos`, beside the op's other inputs, which share the batch)
    checked against each other under `label`; `lengths` are other inputs' views of L."""
    query, key, value = infos["query"], infos["key"], infos["value"]
    batch = known(*(dim(i, 0) for i in infos.values() if i is not None))
    length = known(dim(query, 2), *lengths)
    kv, source = known(dim(key, 1), dim(value, 1)), known(dim(key, 2), dim(value, 2))
    for name, dims in (("query", [batch, None, length, None]), ("key", [batch, kv, source, dim(query, 3)]),
                       ("value", [batch, kv, source, None])):
        expect(infos[name], dims, name, label=label, port=op.port(name))
    return Dims(batch, dim(query, 1), length, kv, source, dim(value, 3))


def check_grouping(op: Op, dims: Dims, *, label: str) -> None:
    """Key/value heads that divide the query heads, and no more queries than keys (L <= S)."""
    if dims.heads.is_static and dims.kv_heads.is_static:
        check(int(dims.kv_heads) > 0 and int(dims.heads) % int(dims.kv_heads) == 0, label,
              f"key's {dims.kv_heads} heads must divide query's {dims.heads}", port=op.port("key"))
    if dims.length.is_static and dims.source.is_static:
        check(int(dims.length) <= int(dims.source), label,
              f"query's L ({dims.length}) must not exceed key's S ({dims.source})", port=op.port("key"))


def float_inputs(op: Op, query: TensorInfo, others: dict[str, TensorInfo | None],
                 where: Callable[[str], str] | None = None) -> ElementType:
    """The element type T of query, which the other named inputs share: a float type. A scale
    among them must also be a scalar or hold one element. `where` names an input's port (the
    op's declaration by default)."""
    where = where or op.port
    check_float(op, query.etype, "query")
    etype = query.etype
    for name, info in others.items():
        if info is None:
            continue
        etype = same_element_type(TensorInfo(etype, query.shape), info, f"{name} must have query's element type",
                                  "same-element-type", where(name))
        if name == "scale" and info.shape.rank_is_static:
            dims = info.shape.ranked_dims
            check(len(dims) == 0 or (len(dims) == 1 and dims[0].contains(1)), "scalar-input",
                  f"scale must be a scalar or hold one element, found shape {info.shape}", port=where(name))
    check_float(op, etype, "query")
    return etype


def shapes_of(arrays: tuple[np.ndarray, ...]) -> tuple[TensorInfo, ...]:
    """The arrays of a run as inference sees them (shapes and types; values left out), so that a
    kernel checks the shapes of the run as inference checked the declared ones."""
    return tuple(TensorInfo(ElementType.from_dtype(a.dtype), PartialShape.of(a.shape)) for a in arrays)


def scale_factor(scale: np.ndarray | None, head_size: int, work: np.dtype) -> np.generic:
    """The logits' factor: the `scale` input, else 1 / sqrt(E) (inf for E = 0, as for SDPA)."""
    if scale is not None:
        return scale.astype(work).reshape(-1)[0]
    with np.errstate(divide="ignore"):
        return work.type(1) / np.sqrt(work.type(head_size))


def grouped(query: np.ndarray, kv_heads: int) -> np.ndarray:
    """Query [N, H, L, E] as [N, Hkv, H / Hkv, L, E]: query head h is group h // (H / Hkv)."""
    n, heads, length, size = query.shape
    return query.reshape(n, kv_heads, heads // kv_heads, length, size)


def per_query_head(mask: np.ndarray, heads: int, kv_heads: int) -> np.ndarray:
    """A mask [N, d, L, S] given per d heads (d divides `heads`) seen per query head, in the
    grouped layout [N, Hkv, H / Hkv, L, S] (a broadcast view when d is 1)."""
    n, per, length, width = mask.shape
    if per == 1:
        return mask[:, :, None]
    if per == heads:
        return mask.reshape(n, kv_heads, heads // kv_heads, length, width)
    return mask[:, np.arange(heads) // (heads // per)].reshape(n, kv_heads, heads // kv_heads, length, width)


def mark(indices: np.ndarray, valid: np.ndarray, width: int, *, counts: bool = False) -> np.ndarray:
    """Rows [..., width] marking the entries of `indices` [..., K] where `valid` holds and the
    index lies in [0, width): True where listed, or (`counts`) how many times. Entries outside
    the range are left out."""
    rows = int(np.prod(indices.shape[:-1], dtype=np.int64))
    shape = (*indices.shape[:-1], width)
    if rows == 0 or width == 0 or indices.shape[-1] == 0:
        return np.zeros(shape, np.int64 if counts else bool)
    flat = indices.reshape(rows, -1)
    if flat.dtype.kind == "u":  # past int64's range is past any width too
        inside = flat < np.uint64(width)
        flat = np.where(inside, flat, 0).astype(np.int64)
    else:
        flat = flat.astype(np.int64, copy=False)
        inside = (flat >= 0) & (flat < width)
    keep = inside & valid.reshape(rows, -1)
    cells = (np.arange(rows, dtype=np.int64)[:, None] * width + flat)[keep]
    tally = np.bincount(cells, minlength=rows * width).reshape(shape)
    return tally if counts else tally > 0


def blocks_to_tokens(blocks: np.ndarray, row_size: int, col_size: int, rows: int, cols: int) -> np.ndarray:
    """Block-level weights [..., R, C] spread over tokens [..., rows, cols]: block (r, c) covers
    rows r * row_size .. and columns c * col_size .., cut at `rows` and `cols`."""
    if row_size != 1:
        blocks = np.repeat(blocks, row_size, axis=-2)
    blocks = blocks[..., :rows, :]
    if col_size != 1:
        blocks = np.repeat(blocks, col_size, axis=-1)
    return blocks[..., :cols]


def check_size(shape: tuple[int, ...], work: np.dtype, port: str | None) -> None:
    """The logits [N, H, L, S] are the op's largest array and no output shows them: their size
    is checked before they are made."""
    if (problem := tensor_size_problem(shape, work.itemsize)) is not None:
        raise ExecutionError(f"the attention logits would be too large: {problem}", label="tensor-limit", port=port)


def attend(query: np.ndarray, key: np.ndarray, value: np.ndarray, weight: np.ndarray, factor: np.generic,
           bias: np.ndarray | None = None) -> np.ndarray:
    """Attention in the grouped layout: query [N, Hkv, G, L, E], key [N, Hkv, S, E], value
    [N, Hkv, S, Ev] (all of one compute dtype), `weight` broadcasting to [N, Hkv, G, L, S]
    (bool, or the multiplicity of each position), `bias` (added to the logits) likewise.
    Returns [N, Hkv, G, L, Ev]; rows without a selected position are zeros."""
    work = query.dtype
    present = weight if weight.dtype == np.bool_ else weight != 0
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        logits = matmul(query, np.swapaxes(key, -1, -2)[:, :, None]) * factor
        if bias is not None:
            logits += bias
        logits = np.where(present, logits, work.type(-np.inf))
        empty = ~present.any(axis=-1, keepdims=True)
        if logits.shape[-1]:
            logits -= np.where(empty, work.type(0), logits.max(axis=-1, keepdims=True))
        np.exp(logits, out=logits)
        if weight.dtype != np.bool_:
            logits *= weight.astype(work)
        logits /= logits.sum(axis=-1, keepdims=True)
        out = _weighted(logits, present, value)
    return np.where(empty, work.type(0), out)


def _weighted(probs: np.ndarray, present: np.ndarray, value: np.ndarray) -> np.ndarray:
    """probs @ value as a sum over the selected positions only: a value that is NaN or infinite
    reaches the rows that select its position (inf times a weight of 0 is NaN there, as in
    any sum), and no other row (where a plain product would give 0 * NaN = NaN)."""
    finite = np.isfinite(value)
    if finite.all():
        return matmul(probs, value[:, :, None])
    out = matmul(probs, np.where(finite, value, 0)[:, :, None])
    present = np.broadcast_to(present, probs.shape)
    work = probs.dtype

    def reached(rows: np.ndarray, test: np.ndarray) -> np.ndarray:
        return matmul(rows.astype(work), test[:, :, None].astype(work)) > 0

    weighted, unweighted = present & (probs > 0), present & (probs == 0)
    high, low = reached(weighted, value == np.inf), reached(weighted, value == -np.inf)
    nan = reached(present, np.isnan(value)) | reached(unweighted, np.isinf(value)) | (high & low)
    out = np.where(high, work.type(np.inf), np.where(low, work.type(-np.inf), out))
    return np.where(nan, work.type(np.nan), out)
