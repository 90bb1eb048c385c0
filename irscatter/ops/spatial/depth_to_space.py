"""DepthToSpace-1: blocks of the channel (depth) axis moved into the spatial axes.

The data [N, C, D1, ..., DK] becomes [N, C / block_size^K, D1 * block_size, ..., DK * block_size].
In `blocks_first` mode the channel axis is read as [block_size, ..., block_size, C'] (the block
coordinates outermost), in `depth_first` mode as [C', block_size, ..., block_size]. A pure
permutation of the elements: every element type, exact.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, required
from irscatter.ops.common.many_axes import regroup
from irscatter.ops.registry import register
from irscatter.ops.spatial.core import BlockAttrs, channel_rank, check_block_size, divided, empty_result, scaled


@register("DepthToSpace", 1)
class DepthToSpace(Op):
    labels = {
        "depth-blocks": "the channel dimension does not divide by block_size to the power of the spatial rank",
    }

    Attrs = BlockAttrs
    attrs: BlockAttrs
    inputs = ("data",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        size = check_block_size(self, self.attrs)
        rank = channel_rank(self, data)
        if rank is None:
            return TensorInfo(data.etype, data.shape)
        divisor = size ** (rank - 2)
        depth = required(divided(data.shape[1], divisor), "depth-blocks",
                         f"the channel dimension {data.shape[1]} does not divide by block_size^{rank - 2} = {divisor}",
                         port=self.port("data"))
        dims = [data.shape[0], depth, *(scaled(d, size) for d in data.shape.ranked_dims[2:])]
        return TensorInfo(data.etype, PartialShape.of(dims))

    def compute(self, data: np.ndarray) -> np.ndarray:
        size = self.attrs.block_size
        n, c, *spatial = data.shape
        k = len(spatial)
        depth = c // size**k
        if data.size == 0:
            return empty_result(data, (n, depth, *(d * size for d in spatial)))
        if self.attrs.mode == "blocks_first":  # channel = (b1, ..., bK, c')
            split = (n, *[size] * k, depth, *spatial)
            order = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
        else:  # channel = (c', b1, ..., bK)
            split = (n, depth, *[size] * k, *spatial)
            order = [0, 1] + [a for i in range(k) for a in (k + 2 + i, 2 + i)]
        return regroup(data, split, order, (n, depth, *(d * size for d in spatial)))
