"""Unsqueeze-1: insert axes of size 1 at the given positions of the output.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.axes import check_1d_integral, int_values, normalize_axes
from irscatter.ops.registry import register


@register("Unsqueeze", 1)
class Unsqueeze(Op):
    inputs = ("data", "axes")

    def _unsqueezed(self, dims: list, axes: list[int], one):
        rank = len(dims) + len(axes)
        out_axes = sorted(normalize_axes(axes, rank, self.port("axes")))
        out = list(dims)
        for a in out_axes:
            out.insert(a, one)
        return out

    def infer(self, data: TensorInfo, axes: TensorInfo) -> TensorInfo:
        check_1d_integral(axes, "axes", self.port("axes"), type_label="axes-type", rank_label="axes-rank")
        if not data.shape.rank_is_static or axes.value is None:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        return TensorInfo(data.etype, PartialShape.of(self._unsqueezed(list(data.shape.ranked_dims), int_values(axes.value),
                                                                       Dimension.static(1))))

    def compute(self, data: np.ndarray, axes: np.ndarray) -> np.ndarray:
        return data.reshape(self._unsqueezed(list(data.shape), int_values(axes), 1))
