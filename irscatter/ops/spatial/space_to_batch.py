"""SpaceToBatch-2: the spatial axes, zero-padded, cut into blocks that move into the batch axis.

Each spatial axis Di is padded by pads_begin[i] and pads_end[i] zeros to Pi, read as
[Pi / Bi, Bi], and the block coordinates B1, ..., B(N-1) move in front of the batch:
the output is [batch * B1 * ... * B(N-1), P1 / B1, ..., P(N-1) / B(N-1)] with the block
coordinates outermost in the batch index (the inverse of BatchToSpace-2). A pure permutation
of the padded elements: every element type (strings pad with the empty string), exact.

The spec says block_shape[0], pads_begin[0] and pads_end[0] are "expected" to be 1, 0 and 0;
irscatter refuses other values (OpenVINO's reference pads and blocks the batch axis with them,
against its own inferred shape). OpenVINO's reference fills the padding with the first bytes of
the pads_end tensor rather than with zeros (zeros in practice, pads_end[0] being 0, when pads_end
is i64 and the data at most 8 bytes wide); irscatter pads with zeros as the spec says. OpenVINO's
CPU plugin fills some padding positions with data values on data of rank 4 and 5 (data
[1, 1, 4, 1] = [1, 2, 3, 4] with block_shape [1, 1, 1, 3] and pads_end [0, 0, 0, 2] gives the
batches [1 2 3 4], [2 3 4 0], [3 4 0 0] instead of [1 2 3 4], [0 0 0 0], [0 0 0 0]); irscatter
agrees with the spec and the core reference.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.shapes import Dimension
from irscatter.limits import check_allocation
from irscatter.ops.common.many_axes import regroup
from irscatter.ops.registry import register
from irscatter.ops.spatial.core import BatchBlocks, block_values, require


@register("SpaceToBatch", 2)
class SpaceToBatch(BatchBlocks):
    labels = {
        "pads-value": "a pad is negative, or pads_begin[0] or pads_end[0] is not 0",
        "pads-blocks": "a padded spatial dimension does not divide by its block",
    }

    inputs = ("data", "block_shape", "pads_begin", "pads_end")
    noun, value_label = "pads", "pads-value"

    def _out_dims(self, dims: list, blocks: list[int], first: list[int], last: list[int], at_runtime: bool) -> list:
        """The output dims from the input dims (ints or Dimensions) and the three inputs' values."""
        batch = dims[0]
        out = [int(batch) * math.prod(blocks) if isinstance(batch, int) or batch.is_static else Dimension.dynamic()]
        for axis in range(1, len(dims)):
            d = dims[axis]
            if not (isinstance(d, int) or d.is_static):
                out.append(Dimension.dynamic())
                continue
            padded = int(d) + first[axis] + last[axis]
            require(padded % blocks[axis] == 0,
                    f"axis {axis} padded to {padded} ({int(d)} + {first[axis]} + {last[axis]}) does not divide by "
                    f"its block {blocks[axis]}", label="pads-blocks", port=self.port("block_shape"),
                    at_runtime=at_runtime)
            out.append(padded // blocks[axis])
        return out

    def compute(self, data: np.ndarray, block: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
        rank = data.ndim
        blocks = block_values(self, block, rank, at_runtime=True)
        first, last = self._amounts(begin, end, rank, True)
        out_dims = self._out_dims(list(data.shape), blocks, first, last, True)
        padded_shape = [d + b + e for d, b, e in zip(data.shape, first, last)]
        check_allocation(out_dims, data.dtype.itemsize)
        if padded_shape != list(data.shape):
            padded = np.zeros(padded_shape, dtype=data.dtype)
            padded[tuple(slice(b, b + d) for b, d in zip(first, data.shape))] = data
        else:
            padded = data
        batch, inner = data.shape[0], blocks[1:]
        # [batch, P1/B1, B1, ..., P(N-1)/B(N-1), B(N-1)]: axis 1 + 2i is Pi / Bi, axis 2 + 2i its block offset
        split = (batch, *(x for d, b in zip(out_dims[1:], inner) for x in (d, b)))
        order = [2 + 2 * i for i in range(rank - 1)] + [0] + [1 + 2 * i for i in range(rank - 1)]
        return regroup(padded, split, order, out_dims)
