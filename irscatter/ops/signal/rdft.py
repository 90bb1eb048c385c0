"""RDFT-9: the discrete Fourier transform of a real tensor over the given axes, keeping the
non-redundant half of the last transformed axis (the last one listed in axes): its length S
becomes S // 2 + 1, and the output gains a last dimension 2 for (real, imaginary).

Unlike the complex transforms, RDFT's axes count in the data itself: they lie in [-r, r-1] for
data of rank r, and a negative axis a means r + a. The signal_size rules are in `core.py`.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension
from irscatter.ops.base import check
from irscatter.ops.registry import register
from irscatter.ops.signal.core import NAN_PAIR, FourierBase, as_pairs, finish, fitted, nan_blocks


def half_spectrum(d: Dimension) -> Dimension:
    return Dimension.static(int(d) // 2 + 1) if d.is_static else Dimension.dynamic()


@register("RDFT", 9)
class RDFT(FourierBase):
    complex_input = False

    def check_axes_count(self, axes: list[int]) -> None:
        check(axes, "axes-empty", "RDFT needs at least one axis", port=self.port("axes"))

    def unknown_axes_dims(self, dims: list[Dimension], has_sizes: bool) -> list[Dimension]:
        return [Dimension.dynamic()] * len(dims)

    def output_dims(self, dims: list[Dimension], axes: list[int], sizes: list[int]) -> list[Dimension]:
        out = super().output_dims(dims, axes, sizes)
        out[axes[-1]] = half_spectrum(out[axes[-1]])
        return out

    def compute(self, data: np.ndarray, axes: np.ndarray, signal_size: np.ndarray | None = None) -> np.ndarray:
        known, lengths, shape = self.plan(data, axes, signal_size)
        etype = ElementType.from_dtype(data.dtype)
        if math.prod(shape) == 0 or min(lengths) == 0:  # nothing to compute, or sums over nothing
            return np.zeros(shape, etype.dtype)
        x = fitted(data.astype(np.float64), known, lengths)
        y = np.fft.rfftn(x, axes=known)
        y = np.where(nan_blocks(x, known), NAN_PAIR, y)
        return finish(as_pairs(y), etype)
