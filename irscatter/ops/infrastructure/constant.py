"""Constant-1 (`Const` in IR files): weights read from the .bin file. Inference carries the
value of a small constant (shapes, axes, indices) so that later ops can fold; large ones stay
unread until a run.
"""

from __future__ import annotations

import math
from typing import Any

from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import trusted
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
    attrs: Attrs

    inputs = ()
    elementwise = True  # as a region's constant operand, broadcast like any other input

    def __init__(self, layer) -> None:
        data = layer.const_data
        if data is None:
            super().__init__(layer)  # the schema says what is wrong, or checks a snippet's attributes
            return
        # The loader has read and checked all four attributes to find the weights: they are not
        # parsed again, and the schema's instance is made only if asked for (`__getattr__`):
        # every Const has its own offset, so no instance is ever shared, and a model is mostly
        # weights.
        self.layer = layer

    def __getattr__(self, name: str) -> Any:
        """`attrs` of a Const with weights, from its data, on first use."""
        if name != "attrs" or "layer" not in self.__dict__:
            raise AttributeError(name)
        data = self.layer.const_data
        self.attrs = trusted(self.Attrs, element_type=data.etype, shape=self.layer.attrs["shape"],
                             offset=data.offset, size=data.size)
        return self.attrs

    def infer(self) -> TensorInfo:
        data = self.layer.const_data
        check(data is not None, "const-data", "Const has no data (is the weights file missing?)")
        if _carried(data):
            return TensorInfo(data.etype, PartialShape.of(data.shape), data.value())
        return TensorInfo(data.etype, PartialShape.of(data.shape))

    def inference_key(self) -> tuple | None:
        """Weights alike (type and shape) infer alike; a small constant carries its own value."""
        data = self.layer.const_data
        return None if data is None or _carried(data) else (type(self), data.etype, data.shape)


def _carried(data) -> bool:
    """Whether inference carries the constant's value (small enough to fold with)."""
    count = math.prod(data.shape)
    return count <= FOLD_LIMIT if data.etype is ElementType.string else data.etype.nbytes(count) <= CARRY_BYTES
