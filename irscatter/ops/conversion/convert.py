"""Convert-1: element-wise conversion to `destination_type`, by the rules of `convert_array`
(`irscatter.ops.common.numeric`), which document every conversion the spec leaves open.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import check_convertible, convert_array
from irscatter.ops.registry import register


@register("Convert", 1)
class Convert(Op):
    labels = {
        "destination-type": "destination_type is not a concrete element type",
    }

    class Attrs(OpAttrs):
        destination_type: ElementTypeAttr

    inputs = ("data",)
    elementwise = True

    def infer(self, data: TensorInfo) -> TensorInfo:
        dst = self.attrs.destination_type
        check(dst is not ElementType.dynamic, "destination-type", "destination_type must be a concrete element type")
        check_convertible(data.etype, dst, self.port("data"))
        self.src = data.etype
        return TensorInfo(dst, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        src = self.src if self.src is not ElementType.dynamic else ElementType.from_dtype(data.dtype)
        return convert_array(data, src, self.attrs.destination_type)
