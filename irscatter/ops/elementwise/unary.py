"""The unary element-wise ops, as rows of one table: LogicalNot-1.

Each output element is the kernel applied to the input element at the same position; the
output has the input's shape and (unless the row says otherwise) its element type.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import TensorInfo
from irscatter.ops.elementwise.table import Row, TableOp, declare


class UnaryElementwise(TableOp):
    """Inference shared by every unary element-wise op: the type check of its row."""

    inputs = ("data",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        return TensorInfo(self.accept(data.etype, self.port("data")), data.shape)


OPS = declare(UnaryElementwise, (
    Row("LogicalNot", 1, np.logical_not, accepts="boolean"),
))
