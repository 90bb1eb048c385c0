"""EmbeddingSegmentsSum-3: sums of segments of rows of an embedding table (TensorFlow's
sparse.segment_sum): segment s of the result sums emb_table[indices[j]] * per_sample_weights[j]
over every j with segment_ids[j] == s, for s in [0, num_segments).

A segment no index falls in is emb_table[default_index], or zeros without default_index.
Unlike the offsets versions the spec gives -1 no meaning here, and OpenVINO's reference and CPU
plugin refuse any negative default_index: irscatter refuses every default_index outside
[0, num_emb) (`index-range`).

Segment ids must lie in [0, num_segments) (`index-range`): the reference refuses larger ones;
the CPU plugin leaves them (and negative ones) out of the sum. The spec asks for sorted ids;
a sum does not depend on their order, and irscatter, like OpenVINO, takes them in any order
(summing in index order). num_segments sets the output's first dimension, so it is checked
against the tensor-size limit before anything is allocated.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.ranges import Bounds, indices_within, known_value
from irscatter.ops.registry import register
from irscatter.ops.sparse.core import (
    bag_reduce,
    bag_shape,
    check_index,
    check_table,
    check_weights,
    default_row,
    runtime_weights,
    same_index_type,
    scalar_value,
    table_rows,
)


@register("EmbeddingSegmentsSum", 3)
class EmbeddingSegmentsSum(Op):
    labels = {
        "segment-ids-shape": "segment_ids does not have the shape of indices",
    }

    inputs = ("emb_table", "indices", "segment_ids", "num_segments", "default_index", "per_sample_weights")
    optional_inputs = 2

    def input_range(self, position: int, infos) -> Bounds | None:
        if position == 2:
            return indices_within(known_value(infos[3]))  # segment ids below num_segments
        return table_rows(self, position, infos)

    def infer(self, emb_table: TensorInfo, indices: TensorInfo, segment_ids: TensorInfo, num_segments: TensorInfo,
              default_index: TensorInfo | None = None, per_sample_weights: TensorInfo | None = None) -> TensorInfo:
        check_table(self, emb_table)
        check_index(self, indices, "indices", 1)
        check_index(self, segment_ids, "segment_ids", 1)
        check_index(self, num_segments, "num_segments", None)
        same_index_type(self, indices, segment_ids, "indices", "segment_ids")
        same_index_type(self, segment_ids, num_segments, "segment_ids", "num_segments")
        check(segment_ids.shape.compatible(indices.shape), "segment-ids-shape",
              f"segment_ids must have the shape of indices {indices.shape}, found {segment_ids.shape}",
              port=self.port("segment_ids"))
        if default_index is not None:
            check_index(self, default_index, "default_index", None)
            same_index_type(self, indices, default_index, "indices", "default_index")
        check_weights(self, emb_table, indices, per_sample_weights)
        count = scalar_value(num_segments)
        check(count is None or count >= 0, "segment-count", f"num_segments must not be negative, found {count}",
              port=self.port("num_segments"))
        return TensorInfo(emb_table.etype, bag_shape(emb_table, -1 if count is None else count))

    def compute(self, emb_table: np.ndarray, indices: np.ndarray, segment_ids: np.ndarray, num_segments: np.ndarray,
                default_index: np.ndarray | None = None, per_sample_weights: np.ndarray | None = None) -> np.ndarray:
        if segment_ids.shape != indices.shape:
            raise ExecutionError(f"segment_ids must have the shape of indices {list(indices.shape)}, found "
                                 f"{list(segment_ids.shape)}", port=self.port("segment_ids"), label="segment-ids-shape")
        runtime_weights(self, indices, per_sample_weights)
        count = int(np.asarray(num_segments).reshape(-1)[0])
        if count < 0:
            raise ExecutionError(f"num_segments must not be negative, found {count}", port=self.port("num_segments"),
                                 label="segment-count")
        bags = normalize_indices(segment_ids, count, allow_negative=False, port=self.port("segment_ids"),
                                 what="segment id")
        default = default_row(self, default_index, emb_table.shape[0], minus_one_is_none=False)
        return bag_reduce(self, emb_table, indices, bags, count, per_sample_weights, default=default)
