"""Parameter-1, Constant-1 (`Const` in IR files) and Result-1: the graph's boundary.

The interpreter fills Parameter and Const outputs before a run and reads Result inputs after
it, so these ops only take part in inference; they have no kernel call per run.
"""

from __future__ import annotations

import math

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register

# Inference folds a layer whose inputs are all known values when its output has at most
# FOLD_LIMIT elements, so that ops whose output shape depends on an input's value (an axis,
# a target shape) can be resolved. A Const is such a known value when it fits in one page
# (CARRY_BYTES): shapes, axes and indices do, and weights stay unread until a run.
FOLD_LIMIT = 4096
CARRY_BYTES = 4096


@register("Parameter", 1)
class Parameter(Op):
    class Attrs(OpAttrs):
        shape: PartialShape
        element_type: ElementTypeAttr

    inputs = ()
    elementwise = True

    def infer(self) -> TensorInfo:
        return TensorInfo(self.attrs.element_type, self.attrs.shape)


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


@register("Result", 1)
class Result(Op):
    inputs = ("value",)
    outputs = 0
    elementwise = True

    def infer(self, value: TensorInfo) -> tuple[()]:
        return ()
