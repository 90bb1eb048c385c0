"""Comparisons (Equal-1, NotEqual-1, Less-1, LessEqual-1, Greater-1, GreaterEqual-1), the
logical ops (LogicalAnd-1, LogicalOr-1, LogicalXor-1, LogicalNot-1) and Select-1.

Comparisons take any non-string T and give booleans; the logical ops take booleans. All of
them broadcast by `auto_broadcast`; Select broadcasts its three inputs together.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.arithmetic import BinaryElementwise, BroadcastAttrs
from irscatter.ops.base import Op, TensorInfo, check, same_element_type
from irscatter.ops.registry import register
from irscatter.ir.broadcast import BroadcastError, broadcast


class Comparison(BinaryElementwise):
    accepts = "any"
    boolean_output = True


@register("Equal", 1)
class Equal(Comparison):
    kernel = np.equal


@register("NotEqual", 1)
class NotEqual(Comparison):
    kernel = np.not_equal


@register("Less", 1)
class Less(Comparison):
    kernel = np.less


@register("LessEqual", 1)
class LessEqual(Comparison):
    kernel = np.less_equal


@register("Greater", 1)
class Greater(Comparison):
    kernel = np.greater


@register("GreaterEqual", 1)
class GreaterEqual(Comparison):
    kernel = np.greater_equal


class Logical(BinaryElementwise):
    accepts = "boolean"


@register("LogicalAnd", 1)
class LogicalAnd(Logical):
    kernel = np.logical_and


@register("LogicalOr", 1)
class LogicalOr(Logical):
    kernel = np.logical_or


@register("LogicalXor", 1)
class LogicalXor(Logical):
    kernel = np.logical_xor


@register("LogicalNot", 1)
class LogicalNot(Op):
    inputs = ("data",)
    elementwise = True

    def infer(self, data: TensorInfo) -> TensorInfo:
        check(data.etype in (ElementType.boolean, ElementType.dynamic), "boolean-type",
              f"the input must be boolean, found {data.etype}", port=self.port("data"))
        return TensorInfo(ElementType.boolean, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        return np.logical_not(data)


@register("Select", 1)
class Select(Op):
    """out = cond ? then : else, element-wise with broadcasting."""

    Attrs = BroadcastAttrs
    inputs = ("cond", "then", "else")
    elementwise = True

    def infer(self, cond: TensorInfo, then: TensorInfo, other: TensorInfo) -> TensorInfo:
        check(cond.etype in (ElementType.boolean, ElementType.dynamic), "cond-type",
              f"cond must be boolean, found {cond.etype}", port=self.port("cond"))
        etype = same_element_type(then, other, "then and else must have the same element type",
                                  "same-element-type", self.port("else"))
        try:
            shape = broadcast(self.attrs.auto_broadcast, then.shape, other.shape)
            if self.attrs.auto_broadcast == "pdpd":  # else and cond both broadcast to then's shape
                shape = broadcast("pdpd", shape, cond.shape)
            else:
                shape = broadcast(self.attrs.auto_broadcast, cond.shape, shape)
        except BroadcastError as e:
            check(False, "broadcast", f"cond {cond.shape}, then {then.shape} and else {other.shape} do not broadcast: {e}")
        return TensorInfo(etype, shape)

    def compute(self, cond: np.ndarray, then: np.ndarray, other: np.ndarray) -> np.ndarray:
        return np.where(cond, then, other)
