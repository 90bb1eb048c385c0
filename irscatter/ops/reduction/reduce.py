"""ReduceSum-1, ReduceProd-1, ReduceMax-1, ReduceMin-1, ReduceMean-1, ReduceL1-4, ReduceL2-4,
ReduceLogicalAnd-1 and ReduceLogicalOr-1 over the axes given by an input.

Integer reductions run in the element type (sums and products wrap modulo 2^bits); f16 and
bf16 accumulate in f32 and round once at the end. An empty `axes` leaves the data unchanged.

ReduceMax and ReduceMin fold as OpenVINO's core reference does: from a starting value, keeping
the accumulator whenever an element does not compare greater (smaller), so NaN is never chosen
(the reduction of [NaN, 1, -1, inf] is inf; of all NaN, the starting value). The spec calls an
empty reduction undefined; it gives the starting value, as the reference does: the lowest finite
value of the compute type for ReduceMax (so -3.4028235e38 in f32, and -inf once rounded to f16
or bf16), and +inf (floats) or the type's maximum (integers) for ReduceMin.

ReduceMean, ReduceL1 and ReduceL2 take numeric types (not booleans); ReduceLogicalAnd and
ReduceLogicalOr take booleans only. Their integer rules follow OpenVINO's core reference:

* ReduceMean of integers divides the element-type sum (wrapping, as ReduceSum does) by the
  element count and truncates toward zero (-7 / 2 is -3). The mean of no elements is 0, for
  floats as for integers, as the reference and the CPU plugin answer.
* ReduceL1 of integers sums |x| in the element type: |x| of the type's minimum wraps to itself,
  and the sum wraps.
* ReduceL2 of integers has no reference implementation; irscatter takes the square root of the
  sum of squares in f64 and converts it as Convert does (toward zero, saturating). That is the
  exact integer root while the sum stays below 2^53; past it (64-bit data near its extremes) the
  f64 rounding may move the last digits. OpenVINO's CPU plugin saturates the integer squares and
  sums instead (sqrt of [3, 4] is 5, of [-5, 12] in i8 is 11).
* ReduceL2 of floats scales each slice by a power of two near its largest magnitude before
  squaring (exact), so no square overflows or underflows that the result would not: the L2 of
  [3e20, 4e20] in f32 is 5e20. OpenVINO squares in the element type and answers inf there.
* With an empty `axes`, ReduceL1 and ReduceL2 give |x|: the norm of each one-element slice, as
  the reference and the CPU plugin do. The spec calls that case "the identity operation";
  its definition (a norm) and OpenVINO agree on |x|, so that is what irscatter computes.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.numeric import compute_dtype, convert_array, from_compute
from irscatter.ops.common.types import check_integral
from irscatter.ops.registry import register


class ReduceAttrs(OpAttrs):
    keep_dims: IRBool = False


def _axes(values, rank: int, port: str, at_runtime: bool = False) -> tuple[int, ...]:
    # A scalar accepts axis 0 (or -1), as OpenVINO's reductions do, and reduces nothing.
    axes = {normalized_axis(int(a), max(rank, 1), port=port, at_runtime=at_runtime)
            for a in np.asarray(values).reshape(-1)}
    return tuple(sorted(axes)) if rank else ()


class Reduce(Op):
    labels = {
        "empty-reduction": "strict mode: ReduceMax or ReduceMin over an axis of size 0 (undefined in the spec)",
    }

    Attrs = ReduceAttrs
    attrs: ReduceAttrs
    inputs = ("data", "axes")
    kernel: ClassVar[np.ufunc]
    empty_is_undefined: ClassVar[bool] = False  # the spec defines the empty sum (0) and product (1)

    def infer(self, data: TensorInfo, axes: TensorInfo) -> TensorInfo:
        check_integral(axes, "axes", self.port("axes"), "axes-type")
        if axes.shape.rank_is_static:
            check(axes.shape.rank <= 1, "axes-rank", f"axes must be a scalar or 1-D, found {axes.shape}", port=self.port("axes"))
        self.check_type(data.etype)
        if not data.shape.rank_is_static or axes.value is None:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        reduced = _axes(axes.value, data.shape.rank, self.port("axes"))
        one = Dimension.static(1)
        dims = [one if i in reduced else d for i, d in enumerate(data.shape.ranked_dims)] if self.attrs.keep_dims else \
            [d for i, d in enumerate(data.shape.ranked_dims) if i not in reduced]
        return TensorInfo(data.etype, PartialShape.of(dims))

    def check_type(self, etype: ElementType) -> None:
        check(etype is not ElementType.string, "numeric-type", "reductions are not defined for strings", port=self.port("data"))

    def compute(self, data: np.ndarray, axes: np.ndarray) -> np.ndarray:
        reduced = self.per_constant(data.ndim, (axes,),
                                    lambda: _axes(axes, data.ndim, self.port("axes"), at_runtime=True))
        etype = ElementType.from_dtype(data.dtype)
        if self.empty_is_undefined and strict.active():
            self._report_empty(data.shape, reduced)
        work = data.astype(compute_dtype(etype), copy=False) if etype.is_float else data
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):  # inf - inf, x^2: IEEE answers
            out = self.reduce(work, reduced)
        return from_compute(np.asarray(out), etype)

    def reduce(self, work: np.ndarray, reduced: tuple[int, ...]) -> np.ndarray:
        """The reduction of `work` (the data in its compute dtype) over the axes `reduced`."""
        return self.kernel.reduce(work, axis=reduced, keepdims=self.attrs.keep_dims, dtype=work.dtype,
                                  **self.start(work.dtype))

    def start(self, dtype: np.dtype) -> dict:
        """Extra arguments of the reduction: a starting value where the op has one."""
        return {}

    def _report_empty(self, shape: tuple[int, ...], reduced: tuple[int, ...]) -> None:
        """Strict mode: a reduction over an axis of size 0 that still has outputs to fill."""
        empty = [a for a in reduced if shape[a] == 0]
        kept = [n for a, n in enumerate(shape) if a not in reduced]
        if empty and 0 not in kept:
            strict.report(label="empty-reduction", port=self.port("axes"),
                          message=f"reduces data of shape {list(shape)} over axis {empty[0]}, of size 0; the spec "
                          f"leaves the result undefined, irscatter gives the reference's starting value")


@register("ReduceSum", 1)
class ReduceSum(Reduce):
    kernel = np.add


@register("ReduceProd", 1)
class ReduceProd(Reduce):
    kernel = np.multiply


@register("ReduceMax", 1)
class ReduceMax(Reduce):
    kernel = np.fmax  # fmax never returns a NaN it can avoid, and the start is never NaN
    empty_is_undefined = True

    def start(self, dtype: np.dtype) -> dict:
        if dtype.kind == "b":
            return {"initial": False}
        return {"initial": np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min}


@register("ReduceMin", 1)
class ReduceMin(Reduce):
    kernel = np.fmin
    empty_is_undefined = True

    def start(self, dtype: np.dtype) -> dict:
        if dtype.kind == "b":
            return {"initial": True}
        return {"initial": np.inf if dtype.kind == "f" else np.iinfo(dtype).max}


class NumericReduce(Reduce):
    """A reduction defined for numbers only: booleans are refused as well as strings."""

    def check_type(self, etype: ElementType) -> None:
        check(etype not in (ElementType.boolean, ElementType.string), "numeric-type",
              f"{self.type_name} is not defined for {etype} tensors (it takes a numeric type)", port=self.port("data"))

    def _unkept(self, out: np.ndarray, reduced: tuple[int, ...]) -> np.ndarray:
        return out if self.attrs.keep_dims else out.reshape([d for i, d in enumerate(out.shape) if i not in reduced])


def summed(work: np.ndarray, axes: tuple[int, ...], keep_dims: bool, dtype: np.dtype | None = None) -> np.ndarray:
    """np.add.reduce over `axes`, whose stubs take keepdims only as a literal True or False."""
    return np.add.reduce(work, axis=axes, keepdims=keep_dims, dtype=dtype)  # type: ignore[call-overload]


@register("ReduceMean", 1)
class ReduceMean(NumericReduce):
    def reduce(self, work: np.ndarray, reduced: tuple[int, ...]) -> np.ndarray:
        total = summed(work, reduced, self.attrs.keep_dims, work.dtype)
        count = math.prod(work.shape[a] for a in reduced)
        if count == 0:
            return np.zeros_like(total)
        if work.dtype.kind == "f":
            return total / work.dtype.type(count)
        # |sum| fits the element type, so its quotient does; the division runs in a type wide
        # enough for `count`, truncating toward zero as C++ integer division does.
        wide = total.astype(np.uint64 if work.dtype == np.uint64 else np.int64)
        quotient = wide // count
        quotient += (quotient * count != wide) & (wide < 0)
        return quotient.astype(work.dtype)


@register("ReduceL1", 4)
class ReduceL1(NumericReduce):
    def reduce(self, work: np.ndarray, reduced: tuple[int, ...]) -> np.ndarray:
        magnitude = work if work.dtype.kind == "u" else np.abs(work)  # wraps at the signed minimum
        return summed(magnitude, reduced, self.attrs.keep_dims, work.dtype)


@register("ReduceL2", 4)
class ReduceL2(NumericReduce):
    def reduce(self, work: np.ndarray, reduced: tuple[int, ...]) -> np.ndarray:
        if work.dtype.kind != "f":
            exact = np.sqrt(summed(np.square(work.astype(np.float64)), reduced, self.attrs.keep_dims))
            return convert_array(exact, ElementType.f64, ElementType.from_dtype(work.dtype))
        return self._unkept(l2_norm(work, reduced), reduced)


def l2_norm(work: np.ndarray, reduced: tuple[int, ...]) -> np.ndarray:
    """sqrt(sum(x^2)) over `reduced` (kept as size-1 axes) without needless overflow or underflow:
    each slice is scaled by 2^-e, e the exponent of its largest magnitude (exact), before squaring."""
    magnitude = np.abs(work)
    peak = np.max(magnitude, axis=reduced, keepdims=True, initial=0) if reduced else magnitude
    with np.errstate(invalid="ignore"):
        _, exponent = np.frexp(peak)  # 0 for 0, inf and NaN: those pass through unscaled
    scaled = np.ldexp(magnitude, -exponent)
    total = np.add.reduce(scaled * scaled, axis=reduced, keepdims=True, dtype=work.dtype)
    return np.ldexp(np.sqrt(total), exponent)


class LogicalReduce(Reduce):
    def check_type(self, etype: ElementType) -> None:
        check(etype in (ElementType.boolean, ElementType.dynamic), "boolean-type",
              f"{self.type_name} is not defined for {etype} tensors (it takes boolean only)", port=self.port("data"))


@register("ReduceLogicalAnd", 1)
class ReduceLogicalAnd(LogicalReduce):
    kernel = np.logical_and


@register("ReduceLogicalOr", 1)
class ReduceLogicalOr(LogicalReduce):
    kernel = np.logical_or
