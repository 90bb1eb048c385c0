"""GRN-1: global response normalization, each element divided by the L2 norm over the channel axis.

output = x / sqrt(sum over channels of x^2 + bias), for data of rank 2 to 4 and any floating
type (f16 and bf16 compute in f32 and round once; bias is taken in the compute type). It is
NormalizeL2 over axis 1 with eps_mode=add, as OpenVINO's reference computes it.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.types import check_float
from irscatter.ops.normalization.normalize_l2 import l2_normalize
from irscatter.ops.registry import register


@register("GRN", 1)
class GRN(Op):
    class Attrs(OpAttrs):
        bias: float
    attrs: Attrs

    inputs = ("data",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        check_float(self, data.etype, "data")
        if data.shape.rank_is_static:
            check(2 <= data.shape.rank <= 4, "data-rank", f"the data must have rank 2, 3 or 4, found {data.shape}",
                  port=self.port("data"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        return l2_normalize(data, (1,), self.attrs.bias, add=True)
