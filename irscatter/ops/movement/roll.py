"""Roll-7: `data` with its elements shifted cyclically along `axes` by `shift`.

`shift` and `axes` are each a scalar or a 1-D tensor of type i32 or i64. A scalar shift rolls
every listed axis by the same amount; a 1-D shift gives one amount per axis and then `axes` must
be 1-D and as long. Negative axes count from the end; an axis listed more than once is rolled by
the sum of its shifts; a positive shift moves elements toward larger indices. Shifts are taken
modulo the axis length (exactly, in Python integers: shifts near the i64 limits neither
overflow nor wrap). No axes (an empty `axes`) leaves `data` as it is: the spec rolls only the
axes it lists and defines no flattened roll.

OpenVINO's CPU plugin refuses a scalar shift with several axes (which the spec allows and its
core reference computes) and returns uninitialised memory for empty axes; OpenVINO accepts
axis 0 for a scalar `data`, which has no axes, and irscatter refuses it.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.axes import int_values, normalized_axis
from irscatter.ops.registry import register

_INDEX_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)


@register("Roll", 7)
class Roll(Op):
    labels = {
        "roll-index-type": "shift or axes is not of type i32 or i64",
        "shift-rank": "shift is not a scalar or a 1-D tensor",
        "roll-sizes": "shift is 1-D but axes is not 1-D of the same length",
    }

    inputs = ("data", "shift", "axes")

    def infer(self, data: TensorInfo, shift: TensorInfo, axes: TensorInfo) -> TensorInfo:
        for name, info in (("shift", shift), ("axes", axes)):
            check(info.etype in _INDEX_TYPES, "roll-index-type", f"{name} must be of type i32 or i64, found {info.etype}",
                  port=self.port(name))
        if shift.shape.rank_is_static:
            check(shift.shape.rank <= 1, "shift-rank", f"shift must be a scalar or 1-D, found {shift.shape}",
                  port=self.port("shift"))
        if axes.shape.rank_is_static:
            check(axes.shape.rank <= 1, "axes-rank", f"axes must be a scalar or 1-D, found {axes.shape}",
                  port=self.port("axes"))
        if shift.shape.rank_is_static and shift.shape.rank == 1 and axes.shape.rank_is_static:
            check(axes.shape.rank == 1 and axes.shape[0].compatible(shift.shape[0]), "roll-sizes",
                  f"a 1-D shift {shift.shape} needs 1-D axes of the same length, found {axes.shape}",
                  port=self.port("axes"))
        if axes.value is not None and data.shape.rank_is_static:
            for a in int_values(axes.value):
                normalized_axis(a, data.shape.rank, port=self.port("axes"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, shift: np.ndarray, axes: np.ndarray) -> np.ndarray:
        amounts, listed = int_values(shift), int_values(axes)
        if shift.ndim == 1 and (axes.ndim != 1 or len(listed) != len(amounts)):
            raise ExecutionError(f"a 1-D shift of {len(amounts)} values needs 1-D axes of the same length, "
                                 f"found shape {list(axes.shape)}", port=self.port("axes"), label="roll-sizes")
        if shift.ndim == 0:
            amounts = amounts * len(listed)
        total = [0] * data.ndim
        for a, k in zip(listed, amounts):
            total[normalized_axis(a, data.ndim, port=self.port("axes"), at_runtime=True)] += k
        moved = [(a, k % data.shape[a]) for a, k in enumerate(total) if data.shape[a] and k % data.shape[a]]
        if not moved:
            return data.copy()
        return np.roll(data, [k for _, k in moved], axis=[a for a, _ in moved])
