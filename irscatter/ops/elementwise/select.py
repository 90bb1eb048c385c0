"""Select-1: `cond ? then : else` element-wise, the three inputs broadcast together by
`auto_broadcast` (with `pdpd`, `else` and `cond` both broadcast to the shape of `then`).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.broadcast import BroadcastError, broadcast
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.types import same_element_type
from irscatter.ops.elementwise.binary import BroadcastAttrs
from irscatter.ops.registry import register


@register("Select", 1)
class Select(Op):
    """out = cond ? then : else, element-wise with broadcasting."""

    labels = {
        "cond-type": "cond is not boolean",
    }

    Attrs = BroadcastAttrs
    attrs: BroadcastAttrs
    inputs = ("cond", "then", "else")
    elementwise = True

    def infer(self, cond: TensorInfo, then: TensorInfo, other: TensorInfo) -> TensorInfo:
        check(cond.etype in (ElementType.boolean, ElementType.dynamic), "cond-type",
              f"cond must be boolean, found {cond.etype}", port=self.port("cond"))
        etype = same_element_type(then, other, "then and else must have the same element type",
                                  "same-element-type", self.port("else"))
        try:
            shape = broadcast(self.attrs.auto_broadcast, then.shape, other.shape)
            if self.attrs.auto_broadcast == "pdpd":  # else and cond both broadcast to then's shape
                shape = broadcast("pdpd", shape, cond.shape)
            else:
                shape = broadcast(self.attrs.auto_broadcast, cond.shape, shape)
        except BroadcastError as e:
            check(False, "broadcast", f"cond {cond.shape}, then {then.shape} and else {other.shape} do not broadcast: {e}")
        return TensorInfo(etype, shape)

    def compute(self, cond: np.ndarray, then: np.ndarray, other: np.ndarray) -> np.ndarray:
        return np.where(cond, then, other)
