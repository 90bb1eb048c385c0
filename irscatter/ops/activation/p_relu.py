"""PRelu-1: x where x >= 0, slope * x where x < 0, with the slope broadcast to the data.

The spec asks for a slope of rank 1 or more. A slope of rank 1 whose length equals the data's
channel dimension (the second; the first for data of rank 1) is applied per channel; any other
slope broadcasts by numpy's rules, and must broadcast to the data's own shape (the output is the
data's shape, so a slope that would widen it is refused).

Departure from the spec: a scalar (rank-0) slope is accepted and applied to every element.
OpenVINO writes one for a converted `leaky_relu`, and reads and runs it; strict mode reports it
(`slope-rank`), since a runtime that follows the spec may refuse the model.

T is any floating-point type, for both inputs. OpenVINO's core reference also evaluates i8,
which the spec does not allow; irscatter refuses it. NaN data stays NaN and -0.0 stays -0.0
(`x < 0` does not hold); a NaN slope reaches only the negative elements.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.broadcast import BroadcastError, broadcast_numpy
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register


def slope_layout(data: tuple[int, ...], slope: tuple[int, ...]) -> tuple[int, ...]:
    """The shape the slope takes against `data`: per channel, or itself for numpy broadcasting."""
    channel = 1 if len(data) > 1 else 0
    if len(slope) == 1 and len(data) > 0 and data[channel] == slope[0]:
        return tuple(slope[0] if i == channel else 1 for i in range(len(data)))
    return slope


@register("PRelu", 1)
class PRelu(Op):
    labels = {
        "slope-rank": "strict mode: PRelu's slope is a scalar, which OpenVINO writes and runs and the spec does "
                      "not allow (rank 1 or more)",
    }

    inputs = ("data", "slope")

    def infer(self, data: TensorInfo, slope: TensorInfo) -> TensorInfo:
        etype = same_element_type(data, slope, "data and slope must have the same element type",
                                  "same-element-type", self.port("slope"))
        check_float(self, etype, "data")
        if data.shape.is_static and slope.shape.is_static:
            self._check_broadcast(data.shape.to_tuple(), slope.shape.to_tuple(), at_runtime=False)
        return TensorInfo(etype, data.shape)

    def _check_broadcast(self, data: tuple[int, ...], slope: tuple[int, ...], *, at_runtime: bool) -> tuple:
        layout = slope_layout(data, slope)
        try:
            fits = broadcast_numpy(PartialShape.of(data), PartialShape.of(layout)).to_tuple() == data
        except BroadcastError:
            fits = False
        if not fits:
            message = (f"the slope of shape {list(slope)} neither matches the channel dimension of the data "
                       f"of shape {list(data)} nor broadcasts to it")
            if at_runtime:
                raise ExecutionError(message, port=self.port("slope"), label="broadcast")
            check(False, "broadcast", message, port=self.port("slope"))
        return layout

    def compute(self, data: np.ndarray, slope: np.ndarray) -> np.ndarray:
        if slope.ndim == 0 and strict.active():  # decided by the shape alone: no value is evidence
            strict.report(label="slope-rank", port=self.port("slope"), evidence=(),
                          message="the slope is a scalar, which the spec does not allow (rank 1 or more); "
                                  "irscatter applies it to every element, as OpenVINO does")
        layout = self._check_broadcast(data.shape, slope.shape, at_runtime=True)
        etype = ElementType.from_dtype(data.dtype)
        x = np.asarray(data, dtype=compute_dtype(etype))
        a = np.asarray(slope, dtype=x.dtype).reshape(layout)
        with np.errstate(all="ignore"):
            out = np.where(x < 0, x * a, x)
        return from_compute(np.asarray(out, dtype=x.dtype), etype)
