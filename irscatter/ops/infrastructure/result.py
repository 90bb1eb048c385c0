"""Result-1: a model output. The interpreter reads its input after a run.
"""

from __future__ import annotations

from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.registry import register


@register("Result", 1)
class Result(Op):
    inputs = ("value",)
    outputs = 0
    elementwise = True

    def infer(self, value: TensorInfo) -> tuple[()]:
        return ()
