"""ConvertLike-1: `data` converted to the element type of `like` (whose values and shape are
not read), by Convert-1's rules (`convert_array` in `irscatter.ops.common.numeric`).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.numeric import check_convertible, convert_array
from irscatter.ops.registry import register


@register("ConvertLike", 1)
class ConvertLike(Op):
    inputs = ("data", "like")

    def infer(self, data: TensorInfo, like: TensorInfo) -> TensorInfo:
        check_convertible(data.etype, like.etype, self.port("data"))
        self.src, self.dst = data.etype, like.etype
        return TensorInfo(like.etype, data.shape)

    def compute(self, data: np.ndarray, like: np.ndarray) -> np.ndarray:
        src = self.src if self.src is not ElementType.dynamic else ElementType.from_dtype(data.dtype)
        dst = self.dst if self.dst is not ElementType.dynamic else ElementType.from_dtype(like.dtype)
        out = convert_array(data, src, dst)
        return out.copy() if out is data else out
