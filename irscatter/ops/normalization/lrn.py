"""LRN-1: local response normalization over a window along the axes given by an input.

    sqr_sum[i] = sum of data[j]^2 over the window around i: along each axis a in `axes`,
                 j_a runs over [max(0, i_a - size // 2), min(dim_a, i_a + size // 2 + 1));
                 along every other axis j_a = i_a
    output[i]  = data[i] / (bias + alpha / size^len(axes) * sqr_sum[i])^beta

This is the spec's formula, alpha divided by size to the power of the number of (distinct) axes.
For an odd `size` the window holds `size` elements along each axis, centred on i, and OpenVINO's
CPU plugin computes the same when `bias` is 1 or more; with a bias below 1 (0.5 and 0.1 measured)
its every element is far off (3.43 here, 604 there), and OpenVINO has no reference LRN to ask.
For an even `size` the spec's window reaches size // 2 on both
sides (size + 1 elements), while OpenVINO's reference and CPU plugin reach (size - 1) // 2 on both
sides (size - 1 elements): irscatter follows the spec there.

The axes are a 1-D tensor of any integer type, at most rank of them, each in [-rank, rank-1]; an
axis named twice counts once, as in OpenVINO. With no axes the window is the element itself.
`size` must be positive. f16 and bf16 compute in f32 and round once.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import int_values
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, check_integral
from irscatter.ops.normalization.core import check_known_axes, distinct_axes
from irscatter.ops.registry import register


def window_sums(values: np.ndarray, axis: int, half: int) -> np.ndarray:
    """Sum of `values` over [i - half, i + half] along `axis` (clipped at the ends): one shifted
    add per offset, at most 2 * dim - 1 of them."""
    n = values.shape[axis]
    out = values.copy()
    reach = min(half, n - 1)
    for offset in range(1, reach + 1):
        lo = [slice(None)] * values.ndim
        hi = [slice(None)] * values.ndim
        lo[axis], hi[axis] = slice(0, n - offset), slice(offset, n)
        out[tuple(lo)] += values[tuple(hi)]  # the element `offset` after
        out[tuple(hi)] += values[tuple(lo)]  # the element `offset` before
    return out


@register("LRN", 1)
class LRN(Op):
    labels = {
        "lrn-size": "LRN's size is not a positive integer",
    }

    class Attrs(OpAttrs):
        alpha: float
        beta: float
        bias: float
        size: int
    attrs: Attrs

    inputs = ("data", "axes")

    def __init__(self, layer) -> None:
        super().__init__(layer)
        check(self.attrs.size >= 1, "lrn-size", f"size must be a positive integer, found {self.attrs.size}",
              port=self.port("size"))

    def infer(self, data: TensorInfo, axes: TensorInfo) -> TensorInfo:
        check_float(self, data.etype, "data")
        port = self.port("axes")
        check_integral(axes, "axes", port, "axes-type")
        check_known_axes(self, data, axes)
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, axes: np.ndarray) -> np.ndarray:
        reduced = distinct_axes(self, int_values(axes), data.ndim, at_runtime=True)
        etype = ElementType.from_dtype(data.dtype)
        work = data.astype(compute_dtype(etype), copy=False)
        t = work.dtype.type
        a = self.attrs
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            sums = work * work
            for axis in reduced:
                sums = window_sums(sums, axis, a.size // 2)
            scale = t(a.alpha) / t(float(a.size) ** len(reduced))
            out = work / np.power(t(a.bias) + scale * sums, t(a.beta))
        return from_compute(np.asarray(out, dtype=work.dtype), etype)
