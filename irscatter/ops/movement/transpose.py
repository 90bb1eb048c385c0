"""Transpose-1: axes permuted by the `order` input (empty means reversed); a view.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.axes import check_1d_integral, int_values
from irscatter.ops.registry import register


@register("Transpose", 1)
class Transpose(Op):
    labels = {
        "order-type": "order is not of an integer type",
        "order-rank": "order is not a scalar or 1-D",
        "order-permutation": "order is not a permutation of the input's axes",
    }

    inputs = ("data", "order")

    def _order(self, rank: int, order: list[int]) -> list[int]:
        if not order:
            return list(range(rank - 1, -1, -1))
        order = [o + rank if o < 0 else o for o in order]
        check(sorted(order) == list(range(rank)), "order-permutation",
              f"order {order} must be a permutation of 0..{rank - 1}", port=self.port("order"))
        return order

    def infer(self, data: TensorInfo, order: TensorInfo) -> TensorInfo:
        check_1d_integral(order, "order", self.port("order"), type_label="order-type", rank_label="order-rank")
        if not data.shape.rank_is_static or order.value is None:
            return TensorInfo(data.etype, PartialShape.of([-1] * data.shape.rank) if data.shape.rank_is_static
                              else PartialShape.dynamic_rank())
        perm = self._order(data.shape.rank, int_values(order.value))
        return TensorInfo(data.etype, PartialShape.of([data.shape[i] for i in perm]))

    def compute(self, data: np.ndarray, order: np.ndarray) -> np.ndarray:
        return np.transpose(data, self._order(data.ndim, int_values(order)))
