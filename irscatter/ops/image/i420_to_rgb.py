"""I420toRGB-8: an I420 frame (one plane, or separate Y, U and V planes) to RGB.

The arithmetic, clipping and u8 rounding are in `image/core.py`. In a single plane the Y rows
are followed by the whole U plane and then the whole V plane, each H/2 x W/2 values laid out
row after row. Image height and width must be even; a single plane's height must be 3/2 of
the image height. U and V come together: two inputs are refused.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo, required
from irscatter.ops.image.core import i420_planes, merge_types, yuv_output_shape, yuv_to_rgb
from irscatter.ops.registry import register


@register("I420toRGB", 8)
class I420toRGB(Op):
    inputs = ("y", "u", "v")  # one input: the whole frame (Y rows, then U, then V)
    optional_inputs = 2
    bgr = False

    def infer(self, y: TensorInfo, u: TensorInfo | None = None, v: TensorInfo | None = None) -> TensorInfo:
        planes = [y]
        if u is not None:
            planes += [u, required(v, "input-count",
                                   f"{self.type_name} takes one plane or three (Y, U and V), the layer has 2 inputs")]
        etype = merge_types(self, planes, self.inputs)
        return TensorInfo(etype, yuv_output_shape(self, planes, self.inputs, 1))

    def compute(self, y: np.ndarray, u: np.ndarray | None = None, v: np.ndarray | None = None) -> np.ndarray:
        return yuv_to_rgb(*i420_planes(y, u, v), ElementType.from_dtype(y.dtype), self.bgr)
