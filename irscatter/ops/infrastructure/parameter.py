"""Parameter-1: a model input. The interpreter fills its output before a run.
"""

from __future__ import annotations

from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo
from irscatter.ops.registry import register


@register("Parameter", 1)
class Parameter(Op):
    class Attrs(OpAttrs):
        shape: PartialShape
        element_type: ElementTypeAttr
    attrs: Attrs

    inputs = ()
    elementwise = True

    def infer(self) -> TensorInfo:
        return TensorInfo(self.attrs.element_type, self.attrs.shape)
