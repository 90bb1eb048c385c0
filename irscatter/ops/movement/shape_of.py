"""ShapeOf-1 and ShapeOf-3: the input's shape as a 1-D tensor (i64 in -1; `output_type` i32
or i64 in -3). Its value is known whenever the shape is static, so ShapeOf chains fold.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo
from irscatter.ops.registry import register


class ShapeOf3Attrs(OpAttrs):
    output_type: Annotated[Literal["i32", "i64"], Lower] = "i64"


@register("ShapeOf", 1)
class ShapeOf1(Op):
    inputs = ("data",)
    shape_only = True

    @property
    def out_type(self) -> ElementType:  # ShapeOf-1 has no attributes: always i64
        return ElementType.i64

    def infer(self, data: TensorInfo) -> TensorInfo:
        if not data.shape.rank_is_static:
            return TensorInfo(self.out_type, PartialShape.of([-1]))
        value = np.array(data.shape.to_tuple(), self.out_type.dtype) if data.shape.is_static else None
        return TensorInfo(self.out_type, PartialShape.of([data.shape.rank]), value)

    def compute(self, data: np.ndarray) -> np.ndarray:
        return np.array(data.shape, self.out_type.dtype)


@register("ShapeOf", 3)
class ShapeOf3(ShapeOf1):
    Attrs = ShapeOf3Attrs
    attrs: ShapeOf3Attrs

    @property
    def out_type(self) -> ElementType:
        return ElementType(self.attrs.output_type)
