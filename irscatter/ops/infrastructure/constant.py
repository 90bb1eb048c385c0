"""Constant-1 (`Const` in IR files): weights read from the .bin file. Inference carries the
value of a small constant (shapes, axes, indices) so that later ops can fold; large ones stay
unread until a run.
"""

from __future__ import annotations

import math

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import CARRY_BYTES, FOLD_LIMIT
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register


@register("Const", 1)
class Const(Op):
    class Attrs(OpAttrs):
        element_type: ElementTypeAttr
        shape: str
        offset: int
        size: int

    inputs = ()
    elementwise = True  # as a region's constant operand, broadcast like any other input

    def infer(self) -> TensorInfo:
        data = self.layer._const
        check(data is not None, "const-data", "Const has no data (is the weights file missing?)")
        count = math.prod(data.shape)
        small = count <= FOLD_LIMIT if data.etype is ElementType.string else data.etype.nbytes(count) <= CARRY_BYTES
        if small:
            return TensorInfo(data.etype, PartialShape.of(data.shape), data.value())
        return TensorInfo(data.etype, PartialShape.of(data.shape))
