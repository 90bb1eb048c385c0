"""ReduceSum-1, ReduceProd-1, ReduceMax-1, ReduceMin-1 over the axes given by an input.

Integer reductions run in the element type (sums and products wrap modulo 2^bits); f16 and
bf16 accumulate in f32 and round once at the end. An empty `axes` leaves the data unchanged.

ReduceMax and ReduceMin fold as OpenVINO's core reference does: from a starting value, keeping
the accumulator whenever an element does not compare greater (smaller), so NaN is never chosen
(the reduction of [NaN, 1, -1, inf] is inf; of all NaN, the starting value). The spec calls an
empty reduction undefined; it gives the starting value, as the reference does: the lowest finite
value of the compute type for ReduceMax (so -3.4028235e38 in f32, and -inf once rounded to f16
or bf16), and +inf (floats) or the type's maximum (integers) for ReduceMin.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.numeric import compute_dtype, from_compute
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
    Attrs = ReduceAttrs
    inputs = ("data", "axes")
    kernel: ClassVar[np.ufunc]

    def infer(self, data: TensorInfo, axes: TensorInfo) -> TensorInfo:
        check_integral(axes, "axes", self.port("axes"), "axes-type")
        if axes.shape.rank_is_static:
            check(axes.shape.rank <= 1, "axes-rank", f"axes must be a scalar or 1-D, found {axes.shape}", port=self.port("axes"))
        check(data.etype is not ElementType.string, "numeric-type", "reductions are not defined for strings")
        if not data.shape.rank_is_static or axes.value is None:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        reduced = _axes(axes.value, data.shape.rank, self.port("axes"))
        one = Dimension.static(1)
        dims = [one if i in reduced else d for i, d in enumerate(data.shape.dims)] if self.attrs.keep_dims else \
            [d for i, d in enumerate(data.shape.dims) if i not in reduced]
        return TensorInfo(data.etype, PartialShape.of(dims))

    def compute(self, data: np.ndarray, axes: np.ndarray) -> np.ndarray:
        reduced = _axes(axes, data.ndim, self.port("axes"), at_runtime=True)
        etype = ElementType.from_dtype(data.dtype)
        work = data.astype(compute_dtype(etype), copy=False) if etype.is_float else data
        out = self.kernel.reduce(work, axis=reduced, keepdims=self.attrs.keep_dims, dtype=work.dtype,
                                 **self.start(work.dtype))
        return from_compute(np.asarray(out), etype)

    def start(self, dtype: np.dtype) -> dict:
        """Extra arguments of the reduction: a starting value where the op has one."""
        return {}


@register("ReduceSum", 1)
class ReduceSum(Reduce):
    kernel = np.add


@register("ReduceProd", 1)
class ReduceProd(Reduce):
    kernel = np.multiply


@register("ReduceMax", 1)
class ReduceMax(Reduce):
    kernel = np.fmax  # fmax never returns a NaN it can avoid, and the start is never NaN

    def start(self, dtype: np.dtype) -> dict:
        if dtype.kind == "b":
            return {"initial": False}
        return {"initial": np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min}


@register("ReduceMin", 1)
class ReduceMin(Reduce):
    kernel = np.fmin

    def start(self, dtype: np.dtype) -> dict:
        if dtype.kind == "b":
            return {"initial": True}
        return {"initial": np.inf if dtype.kind == "f" else np.iinfo(dtype).max}
