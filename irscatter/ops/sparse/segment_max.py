"""SegmentMax-16: the largest value of each segment of `data` along its first axis; row i of
`data` belongs to segment segment_ids[i].

segment_ids is a sorted 1-D tensor of non-negative ids, one per row of `data`: an unsorted one
is refused (`segment-ids-order`, at inference when its value is known, as OpenVINO's shape
inference does, else at run time) and a negative id too (`index-range`). The output has
num_segments rows, max(segment_ids) + 1 without num_segments (0 for no rows): rows of ids past
num_segments are left out, and segments with no row are filled by `fill_mode`, with 0 (ZERO) or
the lowest value of the type (LOWEST: -65504 for f16, the most negative integer, ...).

The maximum of a segment is its largest value. The spec does not say what NaN does: irscatter
follows OpenVINO's reference and CPU plugin (std::max over an accumulator that starts at the
lowest value), where a NaN is passed over, and a segment of NaNs alone gives the lowest value
of the type. The same accumulator makes a segment of -inf
alone give the lowest finite value in OpenVINO; irscatter gives -inf, the segment's maximum.
OpenVINO's CPU plugin computes f16 and bf16 in f32, so LOWEST fills them with -inf (the f32
lowest value rounded); irscatter and the reference with the type's own lowest value.
"""

from __future__ import annotations

from typing import Annotated, Literal

import ml_dtypes
import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import as_rows, compute_dtype, from_compute
from irscatter.ops.registry import register
from irscatter.ops.sparse.core import check_index, check_numeric, scalar_value


def lowest(etype: ElementType) -> float | int:
    """The lowest finite value of a numeric type."""
    if etype.is_float:
        return -float(ml_dtypes.finfo(etype.dtype).max)
    return int(np.iinfo(etype.dtype).min)


@register("SegmentMax", 16)
class SegmentMax(Op):
    class Attrs(OpAttrs):
        fill_mode: Annotated[Literal["zero", "lowest"], Lower]
    attrs: Attrs

    labels = {
        "segment-ids-order": "segment_ids is not sorted in increasing order",
        "segment-ids-shape": "segment_ids does not have one id per row of data",
    }

    inputs = ("data", "segment_ids", "num_segments")
    optional_inputs = 1

    def infer(self, data: TensorInfo, segment_ids: TensorInfo, num_segments: TensorInfo | None = None) -> TensorInfo:
        check_numeric(self, data, "data")
        if data.shape.rank_is_static:
            check(data.shape.rank >= 1, "data-rank", "data must have rank 1 or more, found a scalar",
                  port=self.port("data"))
        check_index(self, segment_ids, "segment_ids", 1)
        if data.shape.rank_is_static and segment_ids.shape.rank_is_static:
            check(data.shape[0].compatible(segment_ids.shape[0]), "segment-ids-shape",
                  f"segment_ids must have one id per row of data {data.shape}, found shape {segment_ids.shape}",
                  port=self.port("segment_ids"))
        count = None
        if segment_ids.value is not None:
            ids = np.asarray(segment_ids.value).reshape(-1).astype(np.int64)
            check(bool(np.all(ids[1:] >= ids[:-1])), "segment-ids-order",
                  f"segment_ids must be sorted, found {ids.tolist()[:16]}", port=self.port("segment_ids"))
            check(ids.size == 0 or ids[0] >= 0, "index-range", f"segment id {int(ids[0]) if ids.size else 0} is "
                  "negative", port=self.port("segment_ids"))
            count = int(ids.max()) + 1 if ids.size else 0
        if num_segments is not None:
            check_index(self, num_segments, "num_segments", None)
            count = scalar_value(num_segments)
            check(count is None or count >= 0, "segment-count", f"num_segments must not be negative, found {count}",
                  port=self.port("num_segments"))
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        return TensorInfo(data.etype, PartialShape.of([-1 if count is None else count, *data.shape.ranked_dims[1:]]))

    def compute(self, data: np.ndarray, segment_ids: np.ndarray, num_segments: np.ndarray | None = None) -> np.ndarray:
        port = self.port("segment_ids")
        if data.ndim == 0 or segment_ids.shape != data.shape[:1]:
            raise ExecutionError(f"segment_ids must have one id per row of data {list(data.shape)}, found shape "
                                 f"{list(segment_ids.shape)}", port=port, label="segment-ids-shape")
        ids = segment_ids.astype(np.int64, copy=False)
        if ids.size and ids[0] < 0:
            raise ExecutionError(f"segment id {int(ids[0])} is negative", port=port, label="index-range")
        if np.any(ids[1:] < ids[:-1]):
            raise ExecutionError(f"segment_ids must be sorted, found {ids.tolist()[:16]}", port=port,
                                 label="segment-ids-order")
        if num_segments is None:
            count = int(ids[-1]) + 1 if ids.size else 0
        else:
            count = int(np.asarray(num_segments).reshape(-1)[0])
            if count < 0:
                raise ExecutionError(f"num_segments must not be negative, found {count}",
                                     port=self.port("num_segments"), label="segment-count")
        out_shape = (count, *data.shape[1:])
        check_allocation(out_shape, data.dtype.itemsize)
        check_allocation([count], 8)
        etype = ElementType.from_dtype(data.dtype)
        work = compute_dtype(etype)
        keep = ids < count
        ids = ids[keep]
        rows = as_rows(data)[keep].astype(work, copy=False)
        out = np.empty((count, rows.shape[1]), work)
        if work.kind == "f":
            nan = np.isnan(rows)
            out.fill(-np.inf)
            np.maximum.at(out, ids, np.where(nan, -np.inf, rows))
            # a segment whose values at a position are all NaN keeps the accumulator's start
            seen = np.zeros(out.shape, bool)
            np.logical_or.at(seen, ids, ~nan)
            out[~seen] = lowest(etype)
        else:
            out.fill(np.iinfo(work).min)
            np.maximum.at(out, ids, rows)
        empty = np.bincount(ids, minlength=count) == 0
        out[empty] = 0 if self.attrs.fill_mode == "zero" else lowest(etype)
        return from_compute(out, etype).reshape(out_shape)
