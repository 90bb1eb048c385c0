"""GatherND-5 and GatherND-8: the last axis of `indices` addresses a slice of `data`, after
`batch_dims` leading axes shared by both; -8 keeps the batch axes in the output.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.many_axes import flat_positions
from irscatter.ops.common.ranges import Bounds, tuple_components_within
from irscatter.ops.common.types import check_integral
from irscatter.ops.indexing.gather import GatherAttrs
from irscatter.ops.registry import register


@register("GatherND", 5)
class GatherND5(Op):
    """Each index tuple (the last axis of `indices`) picks an element or slice of `data`,
    per batch when batch_dims > 0."""

    Attrs = GatherAttrs
    attrs: GatherAttrs
    inputs = ("data", "indices")
    merge_batch: ClassVar[bool] = True  # v5 folds the batch dimensions of the output into one

    def _output_dims(self, batch, index_lead, tail):
        if self.merge_batch and len(batch) > 0:
            if all(d.is_static for d in batch):
                batch = (Dimension.static(math.prod(d.min for d in batch)),)
            else:
                batch = (Dimension.dynamic(),)
        return tuple(batch) + tuple(index_lead) + tuple(tail)

    def infer(self, data: TensorInfo, indices: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"), "indices-type")
        b = self.attrs.batch_dims
        if not (data.shape.rank_is_static and indices.shape.rank_is_static):
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        r, q = data.shape.rank, indices.shape.rank
        check(r >= 1, "data-rank", "data rank must be at least 1", port=self.port("data"))
        check(q >= 1, "indices-rank", "indices rank must be at least 1", port=self.port("indices"))
        check(0 <= b < min(r, q), "batch-dims-range", f"batch_dims ({b}) must be below the ranks of data ({r}) and indices ({q})")
        for d in range(b):
            check(data.shape[d].compatible(indices.shape[d]), "batch-shape",
                  f"dimension {d} of data ({data.shape[d]}) and indices ({indices.shape[d]}) must be equal", port=self.port("indices"))
        last = indices.shape[q - 1]
        if not last.is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        k = last.min
        check(b + k <= r, "index-depth",
              f"indices.shape[-1] ({k}) + batch_dims ({b}) must not exceed the rank of data ({r})", port=self.port("indices"))
        dims = self._output_dims(indices.shape.ranked_dims[:b], indices.shape.ranked_dims[b:-1], data.shape.ranked_dims[b + k:])
        return TensorInfo(data.etype, PartialShape.of(dims))

    def input_range(self, position: int, infos) -> Bounds | None:
        return tuple_components_within(infos[0], infos[1], self.attrs.batch_dims) if position == 1 else None

    def compute(self, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
        b, k = self.attrs.batch_dims, indices.shape[-1]
        if data.shape[:b] != indices.shape[:b] or b + k > data.ndim:
            raise ExecutionError(f"indices shape {list(indices.shape)} does not fit data shape {list(data.shape)} "
                                 f"(batch_dims = {b})", port=self.port("indices"))
        nb = math.prod(data.shape[:b])
        picked = data.shape[b:b + k]
        tuples = indices.reshape(nb, math.prod(indices.shape[b:-1]), k)
        norm = normalize_indices(tuples, np.array(picked, np.int64), allow_negative=True, port=self.port("indices"),
                                 what="index component")
        if strict.active():
            strict.report_values(indices < 0, indices, label="negative-index", port=self.port("indices"),
                                 what="negative index component", consequence="the spec requires [0, s-1]; "
                                 "irscatter counts it from the end, as OpenVINO's reference does")
        rows = flat_positions(norm, picked) if k else np.zeros(tuples.shape[:2], np.int64)
        table = data.reshape(nb, math.prod(picked), math.prod(data.shape[b + k:]))
        out = table[np.arange(nb)[:, None], rows]
        dims = self._output_dims(tuple(Dimension.static(n) for n in indices.shape[:b]),
                                 tuple(Dimension.static(n) for n in indices.shape[b:-1]),
                                 tuple(Dimension.static(n) for n in data.shape[b + k:]))
        return out.reshape(tuple(d.min for d in dims))


@register("GatherND", 8)
class GatherND8(GatherND5):
    merge_batch = False
