"""RGBtoNV12-17: an RGB image to NV12, as one plane (`single_plane`, the default) or as a Y
plane and an interleaved UV plane (two outputs).

The arithmetic, clipping, u8 rounding and the 2x2 averaging of U and V are in `image/core.py`
(the spec gives per-pixel formulas only; the averaging is OpenVINO's reference's). Image height
and width must be even. The layer declares one output with `single_plane` true, two otherwise.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.image.core import H, N, W, check_even, check_image_type, nhwc, rgb_to_nv12
from irscatter.ops.registry import register


class ToNV12Attrs(OpAttrs):
    single_plane: IRBool = True


def _times(d: Dimension, num: int, den: int) -> Dimension:
    return Dimension(min=d.min * num // den, max=None if d.max is None else d.max * num // den)


@register("RGBtoNV12", 17)
class RGBtoNV12(Op):
    Attrs = ToNV12Attrs
    attrs: ToNV12Attrs
    inputs = ("image",)
    bgr = False

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        want = 1 if self.attrs.single_plane else 2
        check(n_inputs == 1, "input-count", f"takes 1 input (image), the layer has {n_inputs}")
        check(n_outputs == want, "output-count",
              f"has {want} output{'s' if want > 1 else ''} with single_plane={str(self.attrs.single_plane).lower()}, "
              f"the layer declares {n_outputs}")

    def infer(self, image: TensorInfo) -> TensorInfo | tuple[TensorInfo, TensorInfo]:
        check_image_type(self, image.etype, "image")
        dims = nhwc(self, image, "image", 3)
        check_even(self, dims, "image")
        n, h, w = dims[N], dims[H], dims[W]
        if self.attrs.single_plane:
            return TensorInfo(image.etype, PartialShape.of([n, _times(h, 3, 2), w, Dimension.static(1)]))
        return (TensorInfo(image.etype, PartialShape.of([n, h, w, Dimension.static(1)])),
                TensorInfo(image.etype, PartialShape.of([n, _times(h, 1, 2), _times(w, 1, 2), Dimension.static(2)])))

    def compute(self, image: np.ndarray) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        return rgb_to_nv12(image, ElementType.from_dtype(image.dtype), self.bgr, self.attrs.single_plane)

