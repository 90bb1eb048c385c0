"""CumSum-3: running sums of the data along one axis, inclusive or exclusive, forward or reversed.

The axis input may be left out (axis 0; OpenVINO's CPU plugin fails to compile such a layer,
reading an input 1 that is not there). It is a scalar of type i32 or i64 in [-rank, rank-1], as
the spec says: OpenVINO's core op also takes a [1]-shaped axis, its CPU plugin refuses one, and
so does irscatter. The data is of rank 1 or more (OpenVINO's CPU plugin crashes on a scalar).

Integers sum in the element type and wrap modulo 2^bits, as the CPU plugin does for i8, u8 and
i32 (its i64 sums saturate instead). Floats sum one element after another in the compute type (f32 for f16 and
bf16), rounding once at the end, so inf - inf gives NaN from that point on.

Departure from the spec: boolean data is accepted, where the spec names numeric types only.
OpenVINO writes it for a converted `mask.cumsum(...)` (torch counts in i64; the converter keeps
the boolean type). Its core op types the output boolean and does not fold it (its evaluate takes
f32 alone); its reference kernel, as the template plugin runs it, and its CPU plugin, which holds
booleans as u8, both keep a boolean in one byte and add those bytes: each output byte holds the
running count of true elements modulo 256. A boolean here holds true or false only, so the
output is true where that byte is not 0: what OpenVINO's own readers of the output as a truth
value see (a Result, Select, the logical and bitwise ops), so a count of 256 reads false there
too. Strict mode reports every boolean CumSum (`boolean-data`).

What no boolean can hold: OpenVINO's CPU plugin passes the byte on unchanged, so a Convert to a
number reads the count itself (modulo 256) and an Equal or NotEqual compares counts, where
irscatter's output holds 1 for any count that is not 0 modulo 256. The two agree wherever every
count is 0 or 1; strict mode names the positions where a count is higher (`boolean-count`).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import constant_axis, normalized_axis, runtime_axis
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.registry import register

AXIS_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)


@register("CumSum", 3)
class CumSum(Op):
    labels = {
        "boolean-data": "strict mode: CumSum's data is boolean, which OpenVINO writes and runs and the spec does "
                        "not allow (numeric types); the output is true where the running count modulo 256 is not 0",
        "boolean-count": "strict mode: a running count of a boolean CumSum is above 1, which OpenVINO keeps in the "
                         "output's byte (a Convert or Equal reading it sees the count) and irscatter's boolean "
                         "cannot hold",
    }

    class Attrs(OpAttrs):
        exclusive: IRBool = False
        reverse: IRBool = False
    attrs: Attrs

    inputs = ("data", "axis")
    optional_inputs = 1

    def infer(self, data: TensorInfo, axis: TensorInfo | None = None) -> TensorInfo:
        check(data.etype != ElementType.string, "numeric-type",
              "CumSum is not defined for string tensors (it takes a numeric type)", port=self.port("data"))
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
        if etype == ElementType.boolean:
            return self._boolean(data, a)
        work = data.astype(compute_dtype(etype), copy=False) if etype.is_float else data
        return from_compute(self._running_sums(work, a), etype)

    def _boolean(self, data: np.ndarray, a: int) -> np.ndarray:
        """OpenVINO's reading (see the module doc): the counts summed in a byte, true where not 0."""
        if strict.active():
            self._report_boolean(data, a)
        return self._running_sums(data.view(np.uint8), a) != 0

    def _report_boolean(self, data: np.ndarray, a: int) -> None:
        port = self.port("data")
        strict.report(label="boolean-data", port=port, evidence=(),  # decided by the type alone
                      message="the data is boolean, which the spec does not allow (numeric types); irscatter "
                              "reads it as OpenVINO does: true where the running count of true elements modulo "
                              "256 is not 0")
        counts = self._running_sums(data.astype(np.int64), a)
        strict.report_values(counts > 1, counts, label="boolean-count", port=port, what="running count",
                             consequence="OpenVINO keeps the count modulo 256 in the output's byte, which a "
                                         "Convert to a number or an Equal reads as it is; irscatter's boolean "
                                         "holds true there")

    def _running_sums(self, work: np.ndarray, a: int) -> np.ndarray:
        """The sums along axis `a` in `work`'s own type, with the layer's `exclusive` and `reverse`."""
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
        return np.ascontiguousarray(out)
