"""Identity-16: the input, unchanged, as a tensor of its own.

The output never shares a buffer the caller can still see: it is a copy, except when the
interpreter hands the input over (`inplace`, nothing else reads that buffer any more), and
then the input's buffer itself is the output (`buffers.output_buffer`).
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.registry import register


@register("Identity", 16)
class Identity(Op):
    inputs = ("input",)
    elementwise = True
    inplace_input = 0

    def infer(self, data: TensorInfo) -> TensorInfo:
        return TensorInfo(data.etype, data.shape, data.value)

    def compute(self, data: np.ndarray, inplace: bool = False) -> np.ndarray:
        return output_buffer(data, inplace=inplace, any_layout=True)
