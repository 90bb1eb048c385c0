"""NormalizeL2-1: each element divided by the L2 norm of its slice over the axes.

output = x / sqrt(eps_mode(sum(x^2 over axes), eps)), eps_mode `add` (sum + eps) or `max`
(max(sum, eps); a NaN sum stays NaN, as with OpenVINO's reference std::max, while its CPU
plugin answers eps). f16 and bf16 compute in f32 and round once; eps is taken in
the compute type. The axes are a scalar or a 1-D tensor of any integer type, of unique axes in
[-rank, rank-1], as the spec says (OpenVINO lets a repeated axis through).

With no axes the spec divides each element by itself: 1 for every non-zero element (NaN and inf
included) and 0 for zeros, which is what OpenVINO's reference does. OpenVINO's CPU plugin
computes x / sqrt(x^2 + eps) there instead (-1 for negative x, NaN for inf); irscatter follows
the spec.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo
from irscatter.ops.common.axes import check_1d_integral, int_values, normalize_axes, normalized_axis
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.registry import register


def l2_normalize(data: np.ndarray, axes: tuple[int, ...], eps: float, add: bool) -> np.ndarray:
    """data / sqrt(sum(data^2 over axes) + eps) (or max(sum, eps)), computed in the compute type."""
    etype = ElementType.from_dtype(data.dtype)
    work = data.astype(compute_dtype(etype), copy=False)
    e = work.dtype.type(eps)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        total = np.add.reduce(work * work, axis=axes, keepdims=True, dtype=work.dtype)
        out = work / np.sqrt(total + e if add else np.maximum(total, e))
    return from_compute(np.asarray(out, dtype=work.dtype), etype)


@register("NormalizeL2", 1)
class NormalizeL2(Op):
    class Attrs(OpAttrs):
        eps: float
        eps_mode: Annotated[Literal["add", "max"], Lower]
    attrs: Attrs

    inputs = ("data", "axes")

    def _axes(self, values: list[int], rank: int, at_runtime: bool = False) -> tuple[int, ...]:
        port = self.port("axes")
        if not at_runtime:
            return tuple(sorted(normalize_axes(values, rank, port)))
        axes = [normalized_axis(a, rank, port=port, at_runtime=True) for a in values]
        if len(set(axes)) != len(axes):
            raise ExecutionError(f"axes {values} repeat an axis", port=port)
        return tuple(sorted(axes))

    def infer(self, data: TensorInfo, axes: TensorInfo) -> TensorInfo:
        check_float(self, data.etype, "data")
        check_1d_integral(axes, "axes", self.port("axes"), type_label="axes-type", rank_label="axes-rank")
        if axes.value is not None and data.shape.rank_is_static:
            self._axes(int_values(axes.value), data.shape.rank)
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, axes: np.ndarray) -> np.ndarray:
        reduced = self._axes(int_values(axes), data.ndim, at_runtime=True)
        if not reduced:
            return (data != 0).astype(data.dtype)
        return l2_normalize(data, reduced, self.attrs.eps, self.attrs.eps_mode == "add")
