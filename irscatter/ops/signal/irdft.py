"""IRDFT-9: the inverse of RDFT, from the non-redundant half of a Hermitian-symmetric spectrum
(complex, its last dimension 2) to a real tensor. The last transformed axis (the last one listed
in axes) gives a signal of length S: its signal_size, or 2 * (M - 1) for an input length M when
signal_size is -1 or absent (0 for M = 0). The other axes follow the signal_size rules of
`core.py`.

What is computed: the complex inverse transform over the other axes (their inputs trimmed or
padded to their signal sizes), then, along the last axis, the first S // 2 + 1 values (padded
with zeros when the input has fewer) extended to length S by Hermitian symmetry
(value[S - j] = conj(value[j])), and its inverse transform, divided by the product of the
signal sizes. The real part is the result.

That is OpenVINO's reference, its CPU plugin and numpy's irfftn. The spec page's detailed
description reads differently when signal_size differs from 2 * (M - 1): it extends the whole
input to 2 * (M - 1) first and then trims or pads that extended signal. Taken literally, it is
self-contradictory (it extends every transformed axis, which its own output-shape rules deny,
and its final sum runs over X rather than the padded G), and for an odd S it would not invert
RDFT with the same signal_size; irscatter follows the reference. Both agree whenever the last
signal size is 2 * (M - 1), which is every case without signal_size.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension
from irscatter.ops.base import check
from irscatter.ops.registry import register
from irscatter.ops.signal.core import FourierBase, as_complex, finish, fitted, nan_blocks


def full_length(d: Dimension) -> Dimension:
    return Dimension.static(max(2 * (int(d) - 1), 0)) if d.is_static else Dimension.dynamic()


@register("IRDFT", 9)
class IRDFT(FourierBase):
    complex_output = False

    def check_axes_count(self, axes: list[int]) -> None:
        check(axes, "axes-empty", "IRDFT needs at least one axis", port=self.port("axes"))

    def unknown_axes_dims(self, dims: list[Dimension], has_sizes: bool) -> list[Dimension]:
        return [Dimension.dynamic()] * len(dims)

    def output_dims(self, dims: list[Dimension], axes: list[int], sizes: list[int]) -> list[Dimension]:
        out = super().output_dims(dims, axes, sizes)
        if sizes[-1] == -1:
            out[axes[-1]] = full_length(dims[axes[-1]])
        return out

    def compute(self, data: np.ndarray, axes: np.ndarray, signal_size: np.ndarray | None = None) -> np.ndarray:
        known, _, shape = self.plan(data, axes, signal_size)
        etype = ElementType.from_dtype(data.dtype)
        if math.prod(shape) == 0:
            return np.zeros(shape, etype.dtype)
        lengths = [shape[a] for a in known]
        x = fitted(as_complex(data), known, [*lengths[:-1], lengths[-1] // 2 + 1])
        y = np.fft.irfftn(x, s=lengths, axes=known)
        y = np.where(nan_blocks(x, known), np.nan, y)
        return finish(y, etype)
