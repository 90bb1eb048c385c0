"""NV12toRGB-8: an NV12 frame (one plane, or a Y and an interleaved UV plane) to RGB.

The arithmetic, clipping and u8 rounding are in `image/core.py`. Each 2x2 block of pixels shares
the U and V of its chroma sample. Image height and width must be even; a single plane's height
must be 3/2 of the image height.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.image.core import merge_types, nv12_planes, yuv_output_shape, yuv_to_rgb
from irscatter.ops.registry import register


@register("NV12toRGB", 8)
class NV12toRGB(Op):
    inputs = ("y", "uv")  # one input: the whole frame (Y rows, then the UV rows)
    optional_inputs = 1
    bgr = False

    def infer(self, y: TensorInfo, uv: TensorInfo | None = None) -> TensorInfo:
        planes = [y] if uv is None else [y, uv]
        etype = merge_types(self, planes, self.inputs)
        return TensorInfo(etype, yuv_output_shape(self, planes, self.inputs, 2))

    def compute(self, y: np.ndarray, uv: np.ndarray | None = None) -> np.ndarray:
        return yuv_to_rgb(*nv12_planes(y, uv), ElementType.from_dtype(y.dtype), self.bgr)
