"""BatchToSpace-2: blocks of the batch axis moved into the spatial axes, then cropped.

The data [batch, D1, ..., D(N-1)] is read as [B1, ..., B(N-1), batch / (B1 * ... * B(N-1)), D1, ...]
(the block coordinates outermost in the batch index), each block coordinate Bi is interleaved
after its spatial axis Di, and the result [batch', D1 * B1, ..., D(N-1) * B(N-1)] is cropped by
crops_begin[i] and crops_end[i] on each spatial axis. A pure permutation and slice of the
elements: every element type, exact.

The spec says block_shape[0], crops_begin[0] and crops_end[0] are "expected" to be 1, 0 and 0.
OpenVINO's shape inference divides the batch by block_shape[0] too, while its reference
ignores block_shape[0] and crops the batch axis by crops_begin[0] and crops_end[0], so other
values give an output that disagrees with the inferred shape; irscatter refuses them.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.shapes import Dimension
from irscatter.ops.common.many_axes import regroup
from irscatter.ops.registry import register
from irscatter.ops.spatial.core import BatchBlocks, block_values, require


@register("BatchToSpace", 2)
class BatchToSpace(BatchBlocks):
    labels = {
        "batch-blocks": "the batch dimension does not divide by the product of block_shape",
        "crops-value": "a crop is negative, crops_begin[0] or crops_end[0] is not 0, or the crops of an axis "
                       "exceed its size times its block",
    }

    inputs = ("data", "block_shape", "crops_begin", "crops_end")
    noun, value_label = "crops", "crops-value"

    def _out_dims(self, dims: list, blocks: list[int], first: list[int], last: list[int], at_runtime: bool) -> list:
        """The output dims from the input dims (ints or Dimensions) and the three inputs' values."""
        total = math.prod(blocks)
        batch = dims[0]
        out: list[int | Dimension] = []
        if isinstance(batch, int) or batch.is_static:
            b = int(batch)
            require(b % total == 0, f"the batch dimension {b} does not divide by the product of block_shape "
                    f"{blocks} ({total})", label="batch-blocks", port=self.port("data"), at_runtime=at_runtime)
            out.append(b // total)
        else:
            out.append(Dimension.dynamic())
        for axis in range(1, len(dims)):
            d = dims[axis]
            if not (isinstance(d, int) or d.is_static):
                out.append(Dimension.dynamic())
                continue
            size = int(d) * blocks[axis]
            crop = first[axis] + last[axis]
            require(crop <= size, f"the crops of axis {axis} ({first[axis]} + {last[axis]}) exceed its size "
                    f"{int(d)} times its block {blocks[axis]}", label="crops-value", port=self.port("crops_end"),
                    at_runtime=at_runtime)
            out.append(size - crop)
        return out

    def compute(self, data: np.ndarray, block: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
        rank = data.ndim
        blocks = block_values(self, block, rank, at_runtime=True)
        first, last = self._amounts(begin, end, rank, True)
        self._out_dims(list(data.shape), blocks, first, last, True)
        inner = blocks[1:]
        batch, spatial = data.shape[0] // math.prod(blocks), data.shape[1:]
        # [B1, ..., B(N-1), batch', D1, ..., D(N-1)]: axis i-1 is Bi, axis N-1 the batch, N-1+i is Di
        split = (*inner, batch, *spatial)
        order = [rank - 1] + [a for i in range(rank - 1) for a in (rank + i, i)]
        joined = regroup(data, split, order, (batch, *(d * b for d, b in zip(spatial, inner))))
        crop = (slice(None),) + tuple(slice(first[i], joined.shape[i] - last[i]) for i in range(1, rank))
        return joined[crop]
