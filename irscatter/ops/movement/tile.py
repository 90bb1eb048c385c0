"""Tile-1: `data` repeated `repeats[i]` times along each axis i.

`repeats` is a 1-D tensor of any integer type. When it is longer than data's rank, data gains
leading axes of size 1; when it is shorter, it gains leading 1s; the output's rank is the
larger of the two.

Negative repeats: the spec says nothing of them. irscatter reads them as 0 (an empty axis), as
OpenVINO's shape inference and kernels do. A scalar `repeats` is refused, as OpenVINO refuses it
(the spec calls it "a tensor" and only ever counts its elements).

The output's size depends on the values of `repeats`, so it is checked against the tensor
limits before anything is allocated.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.axes import int_values
from irscatter.ops.common.ranges import SMALL_COUNT, Bounds
from irscatter.ops.common.types import check_integral
from irscatter.ops.registry import register


def tiled_dims(dims: list, repeats: list[int]) -> list:
    """Each dim (an int or a Dimension) times its repeat, after the spec's promotion of either side."""
    reps = [max(r, 0) for r in repeats]
    rank = max(len(dims), len(reps))
    dims = [1] * (rank - len(dims)) + list(dims)
    reps = [1] * (rank - len(reps)) + reps
    out: list[int | Dimension] = []
    for d, r in zip(dims, reps):
        if isinstance(d, Dimension):
            d = d.min if d.is_static else None
        if r == 0:
            out.append(0)
        elif d is None:
            out.append(Dimension.dynamic())
        else:
            out.append(d * r)
    return out


@register("Tile", 1)
class Tile(Op):
    labels = {
        "repeats-type": "repeats is not of an integer type",
        "repeats-rank": "repeats is not a 1-D tensor",
    }

    inputs = ("data", "repeats")

    def input_range(self, position: int, infos) -> Bounds | None:
        return SMALL_COUNT if position == 1 else None

    def infer(self, data: TensorInfo, repeats: TensorInfo) -> TensorInfo:
        port = self.port("repeats")
        check_integral(repeats, "repeats", port, "repeats-type")
        if repeats.shape.rank_is_static:
            check(repeats.shape.rank == 1, "repeats-rank", f"repeats must be a 1-D tensor, found {repeats.shape}",
                  port=port)
        reps = int_values(repeats.value)
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        if reps is None:
            n = repeats.shape[0] if repeats.shape.rank_is_static else None
            if n is None or not n.is_static:
                return TensorInfo(data.etype, PartialShape.dynamic_rank())
            return TensorInfo(data.etype, PartialShape.of([-1] * max(data.shape.rank, n.min)))
        return TensorInfo(data.etype, PartialShape.of(tiled_dims(list(data.shape.ranked_dims), reps)))

    def compute(self, data: np.ndarray, repeats: np.ndarray) -> np.ndarray:
        reps = [max(r, 0) for r in int_values(repeats)]
        dims = tiled_dims(list(data.shape), reps)
        check_allocation(dims, data.dtype.itemsize)
        if 0 in dims:  # np.tile would build the repeats of the other axes first
            return np.empty(dims, data.dtype)
        if not reps:
            return data.copy()
        return np.tile(data, reps)
