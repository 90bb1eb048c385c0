"""Squeeze-1 and Squeeze-15: remove axes of size 1 (all of them when no axes are given);
-15 adds `allow_axis_skip` for axes whose size is not known to be 1.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import check_1d_integral, int_values, normalize_axes
from irscatter.ops.registry import register


@register("Squeeze", 1)
class Squeeze(Op):
    labels = {
        "squeeze-one": "an axis to squeeze does not have size 1",
    }

    inputs = ("data", "axes")
    optional_inputs = 1

    def _squeezed(self, shape: tuple, axes: list[int] | None):
        if axes is None:
            return tuple(d for d in shape if d != 1)
        if not shape:  # a scalar has nothing to squeeze; OpenVINO accepts axis 0 (or -1) and keeps it
            check(all(a in (0, -1) for a in axes), "axis-range", f"axes {axes} do not exist in a scalar",
                  port=self.port("axes"))
            return ()
        axes = normalize_axes(axes, len(shape), self.port("axes"))
        for a in axes:
            check(shape[a] == 1, "squeeze-one", f"axis {a} has size {shape[a]}; only axes of size 1 can be squeezed",
                  port=self.port("axes"))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def infer(self, data: TensorInfo, axes: TensorInfo | None = None) -> TensorInfo:
        if axes is not None:
            check_1d_integral(axes, "axes", self.port("axes"), type_label="axes-type", rank_label="axes-rank")
        if not data.shape.is_static or (axes is not None and axes.value is None):
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        out = self._squeezed(data.shape.to_tuple(), None if axes is None else int_values(axes.value))
        return TensorInfo(data.etype, PartialShape.of(out))

    def compute(self, data: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        return data.reshape(self._squeezed(data.shape, None if axes is None else int_values(axes)))


@register("Squeeze", 15)
class Squeeze15(Squeeze):
    """Squeeze-15: an axis whose dimension is not 1 is left in place rather than refused.

    `allow_axis_skip` only changes shape inference over dynamic dimensions (an axis that might
    be 1 then makes the rank dynamic); irscatter already answers a dynamic rank whenever the
    data shape is not static, which both settings allow.
    """

    class Attrs(OpAttrs):
        allow_axis_skip: IRBool = False
    attrs: Attrs

    def _squeezed(self, shape: tuple, axes: list[int] | None):
        if axes is None or not shape:
            return super()._squeezed(shape, axes)
        axes = normalize_axes(axes, len(shape), self.port("axes"))
        return tuple(d for i, d in enumerate(shape) if not (i in axes and d == 1))
