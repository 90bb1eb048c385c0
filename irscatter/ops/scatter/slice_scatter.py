"""SliceScatter-15: writes `updates` into the slice of a copy of `data` that Slice-8 with the
same start, stop, step and axes would read (see `irscatter.ops.movement.slice`).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.types import same_element_type
from irscatter.ops.movement.slice import (
    check_slice_params,
    plan_slices,
    planned,
    planned_shape,
)
from irscatter.ops.registry import register


@register("SliceScatter", 15)
class SliceScatter(Op):
    inputs = ("data", "updates", "start", "stop", "step", "axes")
    optional_inputs = 1
    inplace_input = 0

    def infer(self, data: TensorInfo, updates: TensorInfo, start: TensorInfo, stop: TensorInfo, step: TensorInfo,
              axes: TensorInfo | None = None) -> TensorInfo:
        same_element_type(updates, data, "updates must have the element type of data", "updates-type", self.port("updates"))
        if data.shape.rank_is_static:
            check(data.shape.rank >= 1, "data-rank", "data cannot be a scalar", port=self.port("data"))
            if updates.shape.rank_is_static:
                check(updates.shape.rank == data.shape.rank, "updates-rank",
                      f"updates must have the rank of data ({data.shape.rank}), found {updates.shape}", port=self.port("updates"))
        params = [start, stop, step, axes]
        check_slice_params(params, 2)
        expected = planned_shape(data, params, self.port("start"))
        check(expected.compatible(updates.shape), "updates-shape",
              f"updates shape {updates.shape} must equal the slice's shape {expected}", port=self.port("updates"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data, updates, start, stop, step, axes=None, *, inplace: bool = False) -> np.ndarray:
        plan = planned(plan_slices, data.shape, start, stop, step, axes, port=self.port("start"), at_runtime=True)
        if updates.shape != plan.shape:
            raise ExecutionError(f"updates shape {list(updates.shape)} must equal the slice's shape {list(plan.shape)}",
                                 port=self.port("updates"), label="updates-shape")
        out = output_buffer(data, inplace=inplace, any_layout=True)
        out[plan.index] = updates
        return out
