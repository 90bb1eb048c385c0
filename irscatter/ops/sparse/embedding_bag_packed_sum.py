"""EmbeddingBagPackedSum-3: sums of "bags" of rows of an embedding table, one bag per row of a
2-D `indices` [batch, indices_per_bag] (torch.nn.EmbeddingBag with 2-D input, in sum mode):
ReduceSum(Gather(emb_table, indices, axis=0) * Unsqueeze(per_sample_weights, -1), axis=1).

Indices must lie in [0, num_emb); negative ones are refused (`index-range`), as the spec does
not define them and OpenVINO's CPU plugin refuses them.
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
    runtime_weights,
    table_rows,
)


class PackedBase(Op):
    """What the packed versions share: their inputs, their checks and their kernel."""

    inputs = ("emb_table", "indices", "per_sample_weights")
    optional_inputs = 1
    mean = False

    def input_range(self, position: int, infos) -> Bounds | None:
        return table_rows(self, position, infos)

    def infer(self, emb_table: TensorInfo, indices: TensorInfo,
              per_sample_weights: TensorInfo | None = None) -> TensorInfo:
        check_table(self, emb_table)
        check_index(self, indices, "indices", 2)
        check_weights(self, emb_table, indices, per_sample_weights)
        bags = indices.shape[0] if indices.shape.rank_is_static else -1
        return TensorInfo(emb_table.etype, bag_shape(emb_table, bags))

    def compute(self, emb_table: np.ndarray, indices: np.ndarray,
                per_sample_weights: np.ndarray | None = None) -> np.ndarray:
        runtime_weights(self, indices, per_sample_weights)
        batch, per_bag = indices.shape
        bags = np.repeat(np.arange(batch, dtype=np.int64), per_bag)
        # A mean over bags of no index is the spec's ReduceMean over an empty axis, 0 / 0: NaN
        # for floats (as OpenVINO's reference divides); integers have no NaN and give 0.
        empty = np.nan if self.mean and emb_table.dtype.kind not in "iu" else 0
        return bag_reduce(self, emb_table, indices, bags, batch, per_sample_weights, mean=self.mean,
                          empty_value=empty)


@register("EmbeddingBagPackedSum", 3)
class EmbeddingBagPackedSum(PackedBase):
    pass
