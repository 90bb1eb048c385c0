"""Range-4: the arithmetic sequence start, start+step, ... before stop, in `output_type`.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register


class RangeAttrs(OpAttrs):
    output_type: ElementTypeAttr


def range_values(start: float, stop: float, step: float, etype: ElementType) -> np.ndarray:
    """Range-4: for integer outputs the bounds are first truncated to integers."""
    count = range_length(start, stop, step, etype)
    if etype.is_integral:
        start, step = int(start), int(step)
    check_allocation([count], etype.dtype.itemsize)
    return (start + step * np.arange(count, dtype=np.float64 if etype.is_float else np.int64)).astype(etype.dtype)


def range_length(start: float, stop: float, step: float, etype: ElementType) -> int:
    """How many values Range-4 yields: for integer outputs the bounds are first truncated."""
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise ValueError(f"start, stop and step must be finite, found {start}, {stop}, {step}")
    if step == 0:
        raise ValueError("step must be non-zero")
    if etype.is_integral:
        start, stop, step = int(start), int(stop), int(step)
        if step == 0:
            raise ValueError("step truncates to zero for an integer output type")
    return max(math.ceil((stop - start) / step), 0)


@register("Range", 4)
class Range(Op):
    labels = {
        "start-shape": "start is not a scalar",
        "stop-shape": "stop is not a scalar",
        "step-shape": "step is not a scalar",
        "range-step": "step is 0, or the sequence is not finite or too long",
    }

    Attrs = RangeAttrs
    inputs = ("start", "stop", "step")

    def infer(self, start: TensorInfo, stop: TensorInfo, step: TensorInfo) -> TensorInfo:
        for name, label, info in (("start", "start-shape", start), ("stop", "stop-shape", stop),
                                  ("step", "step-shape", step)):
            if info.shape.rank_is_static:
                check(info.shape.rank == 0 or (info.shape.rank == 1 and info.shape[0].contains(1)), label,
                      f"{name} must be a scalar, found shape {info.shape}", port=self.port(name))
        etype = self.attrs.output_type
        check(etype.is_float or etype.is_integral, "output-type", f"output_type must be numeric, found {etype}")
        if all(i.value is not None for i in (start, stop, step)):
            bounds = [float(np.asarray(i.value).reshape(-1)[0]) for i in (start, stop, step)]
            try:
                count = range_length(*bounds, etype)
            except ValueError as e:
                check(False, "range-step", str(e), port=self.port("step"))
            return TensorInfo(etype, PartialShape.of([count]))
        return TensorInfo(etype, PartialShape.of([-1]))

    def compute(self, start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> np.ndarray:
        try:
            return range_values(*(float(np.asarray(v).reshape(-1)[0]) for v in (start, stop, step)), self.attrs.output_type)
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("step"), label="range-step") from None
