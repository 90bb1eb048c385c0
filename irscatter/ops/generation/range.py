"""Range-1 and Range-4: the arithmetic sequence start, start+step, ... before stop.

Range-4 gives it in `output_type`. Range-1 has no attributes: its three inputs share one
numeric type T, which is the output's, and each must be a scalar (rank 0; Range-4 also takes
shape [1]); step must not be 0, and all three must be finite. Its float values are
`start + i * step` computed in T (f16 and bf16 in f32, rounded once), as OpenVINO's reference
computes them, and its integers `start + i * step` wrapped modulo 2^bits (the reference adds
step repeatedly in T, which wraps the same way).

How many values Range-1 gives: the spec's condition, start <= val[i] < stop (> stop for a
negative step), on the values as computed. OpenVINO counts ceil((stop - start) / step) in f64
instead, which can leave out a last value that rounds to just below stop: for start 0.1,
stop 1.0, step 0.3 in f64, (1.0 - 0.1) / 0.3 is exactly 3, while val[3] = 0.1 + 3 * 0.3 is
0.9999999999999999 < 1.0, so the spec (and irscatter) give 4 values and OpenVINO 3. The two
agree on integers and whenever no value lands within rounding of stop.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.numeric import compute_dtype, convert_array, from_compute
from irscatter.ops.common.ranges import Bounds
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register


class RangeAttrs(OpAttrs):
    output_type: ElementTypeAttr


def range_values(start: float, stop: float, step: float, etype: ElementType) -> np.ndarray:
    """Range-4: for integer outputs the bounds are first truncated to integers."""
    count = range_length(start, stop, step, etype)
    check_allocation([count], etype.dtype.itemsize)
    if etype.is_float:
        return (start + step * np.arange(count, dtype=np.float64)).astype(etype.dtype)
    # Exact modulo 2^64, so bounds past the i64 range (a u64 step) work too; the output type
    # then keeps the low bits, as the i64 arithmetic this equals within its range would.
    low = np.uint64(int(start) % (1 << 64)), np.uint64(int(step) % (1 << 64))
    return (low[0] + low[1] * np.arange(count, dtype=np.uint64)).astype(etype.dtype)


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


class RangeBase(Op):
    labels = {
        "start-shape": "start is not a scalar",
        "stop-shape": "stop is not a scalar",
        "step-shape": "step is not a scalar",
        "range-step": "step is 0, or the sequence is not finite or too long",
    }

    inputs = ("start", "stop", "step")
    one_element = True  # whether shape [1] passes for a scalar

    def input_range(self, position: int, infos) -> Bounds | None:
        # an ascending sequence of a few values, whatever the three draws
        return ((0, 4), (4, 12), (1, 3))[position]

    def check_scalars(self, start: TensorInfo, stop: TensorInfo, step: TensorInfo) -> None:
        for name, label, info in (("start", "start-shape", start), ("stop", "stop-shape", stop),
                                  ("step", "step-shape", step)):
            if info.shape.rank_is_static:
                check(info.shape.rank == 0 or (self.one_element and info.shape.rank == 1
                                               and info.shape[0].contains(1)), label,
                      f"{name} must be a scalar, found shape {info.shape}", port=self.port(name))

    def count(self, start: float, stop: float, step: float, etype: ElementType) -> int:
        return range_length(start, stop, step, etype)

    def length(self, start: TensorInfo, stop: TensorInfo, step: TensorInfo, etype: ElementType) -> PartialShape:
        if all(i.value is not None for i in (start, stop, step)):
            first, last, stride = (float(np.asarray(i.value).reshape(-1)[0]) for i in (start, stop, step))
            try:
                count = self.count(first, last, stride, etype)
            except ValueError as e:
                fail("range-step", str(e), port=self.port("step"))
            return PartialShape.of([count])
        return PartialShape.of([-1])


@register("Range", 1)
class Range1(RangeBase):
    one_element = False

    @staticmethod
    def values(start: float, step: float, count: int, etype: ElementType) -> np.ndarray:
        """start + i * step for i < count, in the compute type of a float T (not yet rounded to T)."""
        work = compute_dtype(etype)
        with np.errstate(over="ignore", invalid="ignore"):
            return work.type(start) + np.arange(count, dtype=work) * work.type(step)

    def count(self, start: float, stop: float, step: float, etype: ElementType) -> int:
        """The spec's count for floats: the formula's estimate, moved while a value computed as
        the kernel computes it falls on the other side of stop than the condition says."""
        n = range_length(start, stop, step, etype)
        if not etype.is_float:
            return n
        work = compute_dtype(etype)

        def inside(i: int) -> bool:
            with np.errstate(over="ignore", invalid="ignore"):
                v = float(from_compute(np.array([work.type(start) + work.type(i) * work.type(step)]), etype)[0])
            return v < stop if step > 0 else v > stop
        # a few steps at most in practice (values within rounding of stop); bounded all the same
        for _ in range(4096):
            if n > 0 and not inside(n - 1):
                n -= 1
            elif inside(n):
                n += 1
            else:
                break
        return n
    def infer(self, start: TensorInfo, stop: TensorInfo, step: TensorInfo) -> TensorInfo:
        self.check_scalars(start, stop, step)
        etype = same_element_type(start, stop, "start, stop and step must share one element type",
                                  "same-element-type", self.port("stop"))
        etype = same_element_type(TensorInfo(etype, start.shape), step,
                                  "start, stop and step must share one element type", "same-element-type",
                                  self.port("step"))
        check(etype is ElementType.dynamic or etype.is_float or etype.is_integral, "numeric-type",
              f"Range takes numeric inputs, found {etype}", port=self.port("start"))
        if etype is ElementType.dynamic:
            return TensorInfo(etype, PartialShape.of([-1]))
        return TensorInfo(etype, self.length(start, stop, step, etype))

    def compute(self, start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(start.dtype)
        first, last, delta = (np.asarray(v).reshape(-1)[0] for v in (start, stop, step))
        try:
            count = self.count(float(first), float(last), float(delta), etype)
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("step"), label="range-step") from None
        check_allocation([count], etype.dtype.itemsize)
        if etype.is_float:
            return from_compute(self.values(float(first), float(delta), count, etype), etype)
        wide = np.dtype(np.uint64 if etype is ElementType.u64 else np.int64)
        with np.errstate(over="ignore"):
            values = wide.type(first) + np.arange(count, dtype=wide) * wide.type(delta)
        return convert_array(values, ElementType.from_dtype(wide), etype)


@register("Range", 4)
class Range(RangeBase):
    Attrs = RangeAttrs
    attrs: RangeAttrs

    def infer(self, start: TensorInfo, stop: TensorInfo, step: TensorInfo) -> TensorInfo:
        self.check_scalars(start, stop, step)
        etype = self.attrs.output_type
        check(etype.is_float or etype.is_integral, "output-type", f"output_type must be numeric, found {etype}")
        return TensorInfo(etype, self.length(start, stop, step, etype))

    def compute(self, start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> np.ndarray:
        try:
            first, last, stride = (float(np.asarray(v).reshape(-1)[0]) for v in (start, stop, step))
            return range_values(first, last, stride, self.attrs.output_type)
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("step"), label="range-step") from None
