"""ScatterNDUpdate-4 and -15: the last axis of `indices` addresses a slice of `data`; -15 adds
`reduction` and allows negative index components. See `irscatter.ops.scatter`.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.many_axes import flat_positions
from irscatter.ops.common.numeric import as_rows, compute_dtype, from_compute
from irscatter.ops.common.ranges import Bounds, tuple_components_within
from irscatter.ops.common.types import require_shape, same_element_type
from irscatter.ops.registry import register
from irscatter.ops.scatter.core import (
    ReductionAttribute,
    report_duplicate_rows,
    scatter_rows,
    shape_text,
)


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
            expected = indices.shape.ranked_dims[:-1] + data.shape.ranked_dims[k:]
            if updates.shape.rank_is_static:
                if len(expected) == 0:
                    check(not updates.shape.is_static or math.prod(updates.shape.to_tuple()) == 1, "updates-shape",
                          f"updates must hold a single element, found shape {updates.shape}", port=self.port("updates"))
                else:
                    check(PartialShape.of(expected).compatible(updates.shape), "updates-shape",
                          f"updates shape {updates.shape} must be indices.shape[:-1] + data.shape[k:] = "
                          f"{shape_text(expected)} (k = {k})", port=self.port("updates"))
        return TensorInfo(data.etype, data.shape)

    def input_range(self, position: int, infos) -> Bounds | None:
        return tuple_components_within(infos[0], infos[1], 0) if position == 1 else None

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
        out = output_buffer(data, compute_dtype(etype), inplace=inplace)
        out2d = as_rows(out, k)
        tuples = indices.reshape(math.prod(indices.shape[:-1]), k)
        norm = normalize_indices(tuples, np.array(data.shape[:k], np.int64), allow_negative=self.allow_negative,
                                 port=self.port("indices"), what="index component")
        rows = flat_positions(norm, data.shape[:k]) if k else np.zeros(len(tuples), np.int64)
        if self.reduction == "none" and strict.active():
            report_duplicate_rows(rows, indices.shape[:-1], data.shape[:k], data.ndim - k, port=self.port("indices"))
        upd2d = as_rows(updates, indices.ndim - 1).astype(out.dtype, copy=False)
        scatter_rows(out2d, np.asarray(rows, np.int64), upd2d, self.reduction, incomparable="keep")
        return from_compute(out, etype)


@register("ScatterNDUpdate", 15)
class ScatterNDUpdate15(ReductionAttribute, ScatterNDUpdate4):
    Attrs = NDAttrs15
    attrs: NDAttrs15
    allow_negative = True
