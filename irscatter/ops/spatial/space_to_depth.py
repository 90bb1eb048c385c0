"""SpaceToDepth-1: blocks of the spatial axes moved into the channel (depth) axis.

The data [N, C, D1, ..., DK] becomes [N, C * block_size^K, D1 / block_size, ..., DK / block_size],
the inverse of DepthToSpace-1 in the same mode: in `blocks_first` mode the new channel axis is
[block_size, ..., block_size, C] (the block coordinates outermost), in `depth_first` mode
[C, block_size, ..., block_size]. A pure permutation of the elements: every element type, exact.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, required
from irscatter.ops.common.many_axes import regroup
from irscatter.ops.registry import register
from irscatter.ops.spatial.core import BlockAttrs, channel_rank, check_block_size, divided, empty_result, scaled


@register("SpaceToDepth", 1)
class SpaceToDepth(Op):
    labels = {
        "space-blocks": "a spatial dimension does not divide by block_size",
    }

    Attrs = BlockAttrs
    attrs: BlockAttrs
    inputs = ("data",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        size = check_block_size(self, self.attrs)
        rank = channel_rank(self, data)
        if rank is None:
            return TensorInfo(data.etype, data.shape)
        spatial = []
        for axis, d in enumerate(data.shape.ranked_dims[2:], start=2):
            spatial.append(required(divided(d, size), "space-blocks",
                                    f"spatial dimension {axis} ({d}) does not divide by block_size {size}",
                                    port=self.port("data")))
        dims = [data.shape[0], scaled(data.shape[1], size ** (rank - 2)), *spatial]
        return TensorInfo(data.etype, PartialShape.of(dims))

    def compute(self, data: np.ndarray) -> np.ndarray:
        size = self.attrs.block_size
        n, c, *spatial = data.shape
        k = len(spatial)
        blocks = [d // size for d in spatial]
        if data.size == 0:
            return empty_result(data, (n, c * size**k, *blocks))
        # [N, C, D1', b1, ..., DK', bK]: axis 2 + 2i is Di / block_size, axis 3 + 2i its block offset
        split = (n, c, *(x for d in blocks for x in (d, size)))
        offsets, outer = [3 + 2 * i for i in range(k)], [2 + 2 * i for i in range(k)]
        order = [0, *offsets, 1, *outer] if self.attrs.mode == "blocks_first" else [0, 1, *offsets, *outer]
        return regroup(data, split, order, (n, c * size**k, *blocks))
