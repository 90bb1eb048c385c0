"""ExperimentalDetectronPriorGridGenerator-6: the priors ([P, 4]) shifted to the centre of every
cell of a grid over the image. The grid has `h` x `w` cells (the feature map's height and width
where 0) and steps `stride_y`, `stride_x` (the image's height, width over the grid's where 0).
Cell (i, j) shifts prior s to `prior[s] + (step_x * (j + 0.5), step_y * (i + 0.5))` on both
corners. The output is [H * W * P, 4] with `flatten`, else [H, W, P, 4] (H, W the feature map's),
filled in (i, j, s) order; only its first h * w * P rows are defined when the grid is smaller
than the feature map, and irscatter sets the rest to 0.

The feature map ([N, C, H, W]) and the image ([N, C', Hi, Wi]) are read for their shapes only.
Departure from the spec: it asks the two to have as many channels, but its own example (256 and
3) does not, and neither does OpenVINO, which checks only that the first dimensions agree;
irscatter does the same.

Arithmetic as OpenVINO's reference: the steps and the shifts `step * (j + 0.5)` in f32, added to
the priors in their own type (f32 for f16 and bf16, rounded once).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_inferred
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.detectron.core import F32, float_inputs, itemsize, ranked
from irscatter.ops.registry import register


class PriorGridGeneratorAttrs(OpAttrs):
    flatten: IRBool = True
    h: int = Field(default=0, ge=0)
    w: int = Field(default=0, ge=0)
    stride_x: float = Field(default=0.0, ge=0)
    stride_y: float = Field(default=0.0, ge=0)


@register("ExperimentalDetectronPriorGridGenerator", 6)
class ExperimentalDetectronPriorGridGenerator(Op):
    labels = {
        "prior-grid-shape": "the priors are not [P, 4], the feature map or the image not 4-D, or their first "
                            "dimensions differ",
        "prior-grid-size": "h or w is larger than the feature map's height or width",
    }

    Attrs = PriorGridGeneratorAttrs
    attrs: PriorGridGeneratorAttrs
    inputs = ("priors", "feature_map", "im_data")

    def infer(self, priors: TensorInfo, featmap: TensorInfo, image: TensorInfo) -> TensorInfo:
        etype = float_inputs(self, [priors, featmap, image], list(self.inputs))
        p = ranked(self, priors, "priors", 2, "prior-grid-shape", last=4)
        f = ranked(self, featmap, "feature_map", 4, "prior-grid-shape")
        i = ranked(self, image, "im_data", 4, "prior-grid-shape")
        if f is not None and i is not None:
            check(f[0].compatible(i[0]), "prior-grid-shape",
                  f"the feature map {f} and the image {i} differ in their first dimension", port=self.port("im_data"))
        if f is not None:
            for name, size, dim in (("h", self.attrs.h, f[2]), ("w", self.attrs.w, f[3])):
                check(dim.max is None or size <= dim.max, "prior-grid-size",
                      f"{name}={size} is larger than the feature map's {dim}", port=self.port(name))
        dyn = Dimension.dynamic()
        height, width = (f[2], f[3]) if f is not None else (dyn, dyn)
        count = p[0] if p is not None else dyn
        if self.attrs.flatten:
            dims = [height, width, count]
            total = Dimension.static(math.prod(d.min for d in dims)) if all(d.is_static for d in dims) else dyn
            shape = PartialShape.of([total, 4])
        else:
            shape = PartialShape.of([height, width, count, 4])
        if shape.is_static:
            check_inferred(shape.to_tuple(), itemsize(etype), "output 0")
        return TensorInfo(etype, shape)

    def compute(self, priors: np.ndarray, featmap: np.ndarray, image: np.ndarray) -> np.ndarray:
        fh, fw = featmap.shape[2], featmap.shape[3]
        check(self.attrs.h <= fh and self.attrs.w <= fw, "prior-grid-size",
              f"h={self.attrs.h}, w={self.attrs.w} exceed the feature map's {fh} x {fw}", port=self.port("h"))
        grid_h = self.attrs.h or fh
        grid_w = self.attrs.w or fw
        with np.errstate(divide="ignore", invalid="ignore"):
            step_w = F32(self.attrs.stride_x) if self.attrs.stride_x else F32(image.shape[3]) / F32(grid_w)
            step_h = F32(self.attrs.stride_y) if self.attrs.stride_y else F32(image.shape[2]) / F32(grid_h)
        etype = ElementType.from_dtype(priors.dtype)
        shift_x = step_w * (np.arange(grid_w, dtype=F32) + F32(0.5))  # [w]
        shift_y = step_h * (np.arange(grid_h, dtype=F32) + F32(0.5))  # [h]
        shifts = np.zeros((grid_h, grid_w, 1, 4), compute_dtype(etype))
        shifts[..., 0::2] = shift_x[None, :, None, None]
        shifts[..., 1::2] = shift_y[:, None, None, None]
        grid = priors.astype(shifts.dtype)[None, None] + shifts  # [h, w, P, 4]
        count = priors.shape[0]
        out = np.zeros(fh * fw * count * 4, shifts.dtype)
        out[: grid.size] = grid.reshape(-1)
        shape = (fh * fw * count, 4) if self.attrs.flatten else (fh, fw, count, 4)
        return from_compute(out.reshape(shape), etype)
