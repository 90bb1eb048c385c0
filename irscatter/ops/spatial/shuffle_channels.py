"""ShuffleChannels-1: the channel axis read as [group, C / group] and transposed to
[C / group, group], every other axis left in place.

The spec restricts the data to numeric types, so booleans and strings are refused (OpenVINO's
reference moves the bytes of any type). A pure permutation: exact.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.registry import register


class ShuffleChannelsAttrs(OpAttrs):
    axis: int = 1
    group: int = 1


@register("ShuffleChannels", 1)
class ShuffleChannels(Op):
    labels = {
        "shuffle-group": "group is below 1 or does not divide the channel dimension",
    }

    Attrs = ShuffleChannelsAttrs
    attrs: ShuffleChannelsAttrs
    inputs = ("data",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        group = self.attrs.group
        check(group >= 1, "shuffle-group", f"group must be a positive integer, found {group}",
              port=self.port("group"))
        check(data.etype is ElementType.dynamic or data.etype.is_float or data.etype.is_integral, "numeric-type",
              f"ShuffleChannels takes numeric tensors, found {data.etype}", port=self.port("data"))
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, data.shape)
        check(data.shape.rank >= 1, "data-rank", "data must have rank 1 or more, found a scalar",
              port=self.port("data"))
        axis = normalized_axis(self.attrs.axis, data.shape.rank, port=self.port("axis"))
        channels = data.shape[axis]
        check(channels.is_dynamic or channels.min % group == 0, "shuffle-group",
              f"group {group} does not divide the channel dimension {channels} (axis {axis})",
              port=self.port("group"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        axis = normalized_axis(self.attrs.axis, data.ndim, port=self.port("axis"), at_runtime=True)
        group = self.attrs.group
        shape = data.shape
        if data.size == 0:  # nothing to move, and a group of any size divides no channels
            return data.copy()
        outer, channels, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
        split = data.reshape(outer, group, channels // group, inner)
        return split.transpose(0, 2, 1, 3).reshape(shape)
