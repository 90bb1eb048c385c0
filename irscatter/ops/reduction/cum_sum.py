"""CumSum-3: running sums of the data along one axis, inclusive or exclusive, forward or reversed.

The axis input may be left out (axis 0; OpenVINO's CPU plugin fails to compile such a layer,
reading an input 1 that is not there). It is a scalar of type i32 or i64 in [-rank, rank-1], as
the spec says: OpenVINO's core op also takes a [1]-shaped axis, its CPU plugin refuses one, and
so does irscatter. The data is numeric and of rank 1 or more; booleans and scalars are refused,
as the spec says (OpenVINO's core op takes booleans; its CPU plugin crashes on a scalar).

Integers sum in the element type and wrap modulo 2^bits, as the CPU plugin does for i8, u8 and
i32 (its i64 sums saturate instead). Floats sum one element after another in the compute type (f32 for f16 and
bf16), rounding once at the end, so inf - inf gives NaN from that point on.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import constant_axis, normalized_axis, runtime_axis
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.registry import register

AXIS_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)


@register("CumSum", 3)
class CumSum(Op):
    class Attrs(OpAttrs):
        exclusive: IRBool = False
        reverse: IRBool = False
    attrs: Attrs

    inputs = ("data", "axis")
    optional_inputs = 1

    def infer(self, data: TensorInfo, axis: TensorInfo | None = None) -> TensorInfo:
        check(data.etype not in (ElementType.boolean, ElementType.string), "numeric-type",
              f"CumSum is not defined for {data.etype} tensors (it takes a numeric type)", port=self.port("data"))
        if data.shape.rank_is_static:
            check(data.shape.rank >= 1, "data-rank", "the data must have rank 1 or more, found a scalar",
                  port=self.port("data"))
        if axis is not None:
            check(axis.etype in AXIS_TYPES, "axis-type", f"axis must be i32 or i64, found {axis.etype}",
                  port=self.port("axis"))
            if axis.shape.rank_is_static:
                check(axis.shape.rank == 0, "axis-shape", f"axis must be a scalar, found {axis.shape}",
                      port=self.port("axis"))
            value = constant_axis(axis)
            if value is not None and data.shape.rank_is_static:
                normalized_axis(value, data.shape.rank, port=self.port("axis"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
        a = 0 if axis is None else runtime_axis(axis, data.ndim, self.port("axis"))
        if axis is None:
            normalized_axis(0, data.ndim, port=self.port("data"), at_runtime=True)
        etype = ElementType.from_dtype(data.dtype)
        work = data.astype(compute_dtype(etype), copy=False) if etype.is_float else data
        if self.attrs.reverse:
            work = np.flip(work, a)
        if self.attrs.exclusive:
            # Each sum leaves out its own element: the data shifted one step along the axis,
            # with a zero in front.
            head = np.zeros_like(work, shape=tuple(1 if i == a else d for i, d in enumerate(work.shape)))
            body = np.take(work, np.arange(work.shape[a] - 1), axis=a)
            work = np.concatenate([head, body], axis=a)[tuple(slice(0, d) for d in work.shape)]
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf and overflow: IEEE answers
            out = np.cumsum(work, axis=a, dtype=work.dtype)
        if self.attrs.reverse:
            out = np.flip(out, a)
        return from_compute(np.ascontiguousarray(out), etype)
