"""ScatterUpdate-3, ScatterElementsUpdate-3/-12 and ScatterNDUpdate-4/-15.

ScatterNDUpdate-4 is the op whose spec page calls it ScatterNDUpdate-3: its class lives in
OpenVINO's `v3` namespace but first appears in opset4, and irscatter numbers every op version by
the opset that introduced it, as OpenVINO's own `version_id` does (a serialized model says
`version="opset4"`).

All three reduce to `scatter_core.scatter_rows`; they differ only in how an index selects
a row of the output. Index ranges follow each version's spec, which is stricter than
OpenVINO's reference kernels in the older versions:

| op | indices allowed | OpenVINO's reference |
|---|---|---|
| ScatterUpdate-3 | [0, d-1] | negatives unchecked (undefined behaviour) |
| ScatterElementsUpdate-3 | [0, d-1] | negatives wrapped |
| ScatterElementsUpdate-12 | [-d, d-1], negatives wrapped | the same |
| ScatterNDUpdate-4 | [0, d-1] per component | negatives wrapped |
| ScatterNDUpdate-15 | [-d, d-1] per component | the same |

Anything outside the allowed range is an ExecutionError naming the value and its position.
Duplicate indices without a reduction: the last in row-major order wins.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import (IRBool, Lower, Op, OpAttrs, TensorInfo, check, check_axis_input,
    check_integral, constant_axis, normalized_axis, require_shape, runtime_axis, same_element_type)
from irscatter.ops.conversion import from_compute
from irscatter.ops.registry import register
from irscatter.ops.scatter_core import (
    as_rows,
    check_indices,
    last_occurrence,
    normalize_indices,
    output_buffer,
    scatter_along_axis,
    scatter_rows,
)

# --- shared checks ------------------------------------------------------------------------------


def shape_text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


# --- ScatterUpdate-3 ----------------------------------------------------------------------------


@register("ScatterUpdate", 3)
class ScatterUpdate(Op):
    """Writes slices of `updates` into `data` at `indices` along `axis`."""

    inputs = ("data", "indices", "updates", "axis")
    inplace_input = 0

    def infer(self, data: TensorInfo, indices: TensorInfo, updates: TensorInfo, axis: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"))
        same_element_type(updates, data, "updates must have the element type of data", "updates-type", self.port("updates"))
        check_axis_input(axis, self.port("axis"))
        ranks = [s.rank if s.rank_is_static else None for s in (data.shape, indices.shape, updates.shape)]
        if None not in ranks:
            r, q, u = ranks
            check(u == r + q - 1, "updates-rank",
                  f"updates rank must be rank(indices) + rank(data) - 1 = {q} + {r} - 1 = {q + r - 1}, found {u}",
                  port=self.port("updates"))
            a = constant_axis(axis)
            if a is not None:
                a = normalized_axis(a, r, port=self.port("axis"))
                expected = data.shape.dims[:a] + indices.shape.dims + data.shape.dims[a + 1:]
                check(PartialShape.of(expected).compatible(updates.shape), "updates-shape",
                      f"updates shape {updates.shape} must be data.shape[:axis] + indices.shape + data.shape[axis+1:]"
                      f" = {shape_text(expected)}", port=self.port("updates"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: np.ndarray, *,
                inplace: bool = False) -> np.ndarray:
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        expected = data.shape[:a] + indices.shape + data.shape[a + 1:]
        require_shape(updates.shape, expected, "updates", self.port("updates"))
        idx = normalize_indices(indices, data.shape[a], allow_negative=False, port=self.port("indices")).reshape(-1)
        etype = ElementType.from_dtype(data.dtype)
        out = output_buffer(data, etype, inplace)
        # Slices along the axis: out[:, idx[j], :] = updates[:, j, :], seen as (outer, size, inner).
        outer, inner = math.prod(data.shape[:a]), math.prod(data.shape[a + 1:])
        out3 = out.reshape(outer, data.shape[a], inner)
        upd3 = updates.reshape(outer, idx.size, inner)
        keep = last_occurrence(idx, data.shape[a])  # duplicates: the last in index order wins
        if keep is None:
            out3[:, idx, :] = upd3
        else:
            out3[:, idx[keep], :] = upd3[:, keep, :]
        return from_compute(out, etype)


class ReductionAttribute:
    """For the versions whose schema has a `reduction` attribute (the older ones always replace)."""

    @property
    def reduction(self) -> str:
        return self.attrs.reduction  # type: ignore[attr-defined]


# --- ScatterElementsUpdate-3 / -12 ---------------------------------------------------------------


class ElementsAttrs12(OpAttrs):
    reduction: Annotated[Literal["none", "sum", "prod", "min", "max", "mean"], Lower] = "none"
    use_init_val: IRBool = True


@register("ScatterElementsUpdate", 3)
class ScatterElementsUpdate3(Op):
    """Element-wise scatter along `axis`: out[c with c[axis] = indices[c]] = updates[c]."""

    inputs = ("data", "indices", "updates", "axis")
    inplace_input = 0
    allow_negative: ClassVar[bool] = False

    @property
    def reduction(self) -> str:  # version 3 has no attributes: it always replaces
        return "none"

    @property
    def use_init_val(self) -> bool:
        return True

    def infer(self, data: TensorInfo, indices: TensorInfo, updates: TensorInfo, axis: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"))
        same_element_type(updates, data, "updates must have the element type of data", "updates-type", self.port("updates"))
        check_axis_input(axis, self.port("axis"))
        check(not (self.reduction == "mean" and data.etype is ElementType.boolean), "mean-boolean",
              "the 'mean' reduction is not defined for boolean tensors")
        if data.shape.rank_is_static and indices.shape.rank_is_static:
            check(data.shape.rank == indices.shape.rank, "indices-rank",
                  f"indices rank must equal data rank, found {indices.shape.rank} and {data.shape.rank}", port=self.port("indices"))
        check(indices.shape.compatible(updates.shape), "updates-shape",
              f"updates shape {updates.shape} must equal indices shape {indices.shape}", port=self.port("updates"))
        a = constant_axis(axis)
        if a is not None and data.shape.rank_is_static:
            a = normalized_axis(a, data.shape.rank, port=self.port("axis"))
            if indices.shape.rank_is_static:
                for d, (i_dim, d_dim) in enumerate(zip(indices.shape, data.shape)):
                    if d != a and i_dim.is_static and d_dim.is_static:
                        check(i_dim.min <= d_dim.min, "indices-extent",
                              f"indices dimension {d} ({i_dim}) must not exceed data dimension {d} ({d_dim}) "
                              f"away from the axis", port=self.port("indices"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: np.ndarray, *,
                inplace: bool = False) -> np.ndarray:
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        require_shape(updates.shape, indices.shape, "updates", self.port("updates"))
        if indices.ndim != data.ndim or any(n > m for d, (n, m) in enumerate(zip(indices.shape, data.shape)) if d != a):
            raise ExecutionError(f"indices shape {list(indices.shape)} does not fit data shape {list(data.shape)}", port=self.port("indices"))
        idx, lowest = check_indices(indices, data.shape[a], allow_negative=self.allow_negative, port=self.port("indices"))
        etype = ElementType.from_dtype(data.dtype)
        wrap = lowest < 0
        out = scatter_along_axis(data, idx, updates, a, self.reduction, etype, inplace=inplace,
                                 use_init_val=self.use_init_val, wrap_negative=wrap, incomparable="update")
        return from_compute(out, etype)


@register("ScatterElementsUpdate", 12)
class ScatterElementsUpdate12(ReductionAttribute, ScatterElementsUpdate3):
    Attrs = ElementsAttrs12
    allow_negative = True

    @property
    def use_init_val(self) -> bool:
        return self.attrs.use_init_val


# --- ScatterNDUpdate-4 / -15 ---------------------------------------------------------------------


class NDAttrs15(OpAttrs):
    reduction: Annotated[Literal["none", "sum", "sub", "prod", "min", "max"], Lower] = "none"


@register("ScatterNDUpdate", 4)
class ScatterNDUpdate4(Op):
    """Each index tuple (the last axis of `indices`) selects an element or slice of `data`."""

    inputs = ("data", "indices", "updates")
    inplace_input = 0
    allow_negative: ClassVar[bool] = False

    @property
    def reduction(self) -> str:  # version 4 has no attributes: it always replaces
        return "none"

    def infer(self, data: TensorInfo, indices: TensorInfo, updates: TensorInfo) -> TensorInfo:
        check(indices.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "indices-type",
              f"indices must be i32 or i64, found {indices.etype}", port=self.port("indices"))
        same_element_type(updates, data, "updates must have the element type of data", "updates-type", self.port("updates"))
        if not (data.shape.rank_is_static and indices.shape.rank_is_static):
            return TensorInfo(data.etype, data.shape)
        r, q = data.shape.rank, indices.shape.rank
        check(r >= 1, "data-rank", "data must have rank at least 1", port=self.port("data"))
        check(q >= 1, "indices-rank", "indices must have rank at least 1", port=self.port("indices"))
        last = indices.shape[q - 1]
        if last.is_static:
            k = last.min
            check(k <= r, "index-depth",
                  f"indices.shape[-1] = {k} must be at most the rank of data ({r})", port=self.port("indices"))
            expected = indices.shape.dims[:-1] + data.shape.dims[k:]
            if updates.shape.rank_is_static:
                if len(expected) == 0:
                    check(not updates.shape.is_static or math.prod(updates.shape.to_tuple()) == 1, "updates-shape",
                          f"updates must hold a single element, found shape {updates.shape}", port=self.port("updates"))
                else:
                    check(PartialShape.of(expected).compatible(updates.shape), "updates-shape",
                          f"updates shape {updates.shape} must be indices.shape[:-1] + data.shape[k:] = "
                          f"{shape_text(expected)} (k = {k})", port=self.port("updates"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *,
                inplace: bool = False) -> np.ndarray:
        k = indices.shape[-1]
        if k > data.ndim:
            raise ExecutionError(f"indices.shape[-1] = {k} exceeds the rank of data ({data.ndim})", port=self.port("indices"))
        expected = indices.shape[:-1] + data.shape[k:]
        if expected == () and updates.size == 1:
            updates = updates.reshape(())
        require_shape(updates.shape, expected, "updates", self.port("updates"))
        etype = ElementType.from_dtype(data.dtype)
        out = output_buffer(data, etype, inplace)
        out2d = as_rows(out, k)
        tuples = indices.reshape(math.prod(indices.shape[:-1]), k)
        norm = normalize_indices(tuples, np.array(data.shape[:k], np.int64), allow_negative=self.allow_negative,
                                 port=self.port("indices"), what="index component")
        rows = np.ravel_multi_index(tuple(norm.T), data.shape[:k]) if k else np.zeros(len(tuples), np.int64)
        upd2d = as_rows(updates, indices.ndim - 1).astype(out.dtype, copy=False)
        scatter_rows(out2d, np.asarray(rows, np.int64), upd2d, self.reduction, incomparable="keep")
        return from_compute(out, etype)


@register("ScatterNDUpdate", 15)
class ScatterNDUpdate15(ReductionAttribute, ScatterNDUpdate4):
    Attrs = NDAttrs15
    allow_negative = True

