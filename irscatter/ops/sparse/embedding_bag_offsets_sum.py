"""EmbeddingBagOffsetsSum-3: sums of "bags" of rows of an embedding table, the bags cut from a
1-D `indices` at `offsets` (torch.nn.EmbeddingBag with offsets, in sum mode).

Bag i sums emb_table[indices[j]] * per_sample_weights[j] for j in [offsets[i], offsets[i+1])
(the last bag runs to the end of `indices`). An empty bag is emb_table[default_index], or zeros
when default_index is -1 or not given; other negative default indices are refused, as the spec
does not support reverse indexing. Indices must lie in [0, num_emb).

Where irscatter refuses what OpenVINO computes or the other way round:
  * offsets must not decrease and lie in [0, len(indices)] (labelled `bag-offsets`). The spec
    allows an offset equal to len(indices) (trailing empty bags, and every bag of an empty
    `indices`); OpenVINO's reference and CPU plugin refuse any offset >= len(indices).
  * the reference of this version reads a default_index of -1 as a row index (out of bounds);
    the spec, the CPU plugin and irscatter fill the bag with zeros.
Indices before offsets[0] belong to no bag (the spec's definition starts at offsets[0]).
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.ranges import Bounds
from irscatter.ops.registry import register
from irscatter.ops.sparse.core import (
    bag_reduce,
    bag_shape,
    check_index,
    check_table,
    check_weights,
    default_row,
    offset_bags,
    runtime_weights,
    same_index_type,
    table_rows,
)


class OffsetsBase(Op):
    """What the offsets versions share: their inputs, their checks and their kernel."""

    inputs = ("emb_table", "indices", "offsets", "default_index", "per_sample_weights")
    optional_inputs = 2
    mean = False

    def input_range(self, position: int, infos) -> Bounds | None:
        return table_rows(self, position, infos)

    def infer(self, emb_table: TensorInfo, indices: TensorInfo, offsets: TensorInfo,
              default_index: TensorInfo | None = None, per_sample_weights: TensorInfo | None = None) -> TensorInfo:
        check_table(self, emb_table)
        check_index(self, indices, "indices", 1)
        check_index(self, offsets, "offsets", 1)
        same_index_type(self, indices, offsets, "indices", "offsets")
        if default_index is not None:
            check_index(self, default_index, "default_index", None)
            same_index_type(self, indices, default_index, "indices", "default_index")
        check_weights(self, emb_table, indices, per_sample_weights)
        bags = offsets.shape[0] if offsets.shape.rank_is_static else -1
        return TensorInfo(emb_table.etype, bag_shape(emb_table, bags))

    def compute(self, emb_table: np.ndarray, indices: np.ndarray, offsets: np.ndarray,
                default_index: np.ndarray | None = None, per_sample_weights: np.ndarray | None = None) -> np.ndarray:
        runtime_weights(self, indices, per_sample_weights)
        start, bags = offset_bags(self, offsets, indices.shape[0])
        default = default_row(self, default_index, emb_table.shape[0], minus_one_is_none=True)
        weights = None if per_sample_weights is None else per_sample_weights[start:]
        return bag_reduce(self, emb_table, indices[start:], bags, offsets.shape[0], weights,
                          mean=self.mean, default=default)


@register("EmbeddingBagOffsetsSum", 3)
class EmbeddingBagOffsetsSum(OffsetsBase):
    pass
