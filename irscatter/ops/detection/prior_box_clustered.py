"""PriorBoxClustered-1: prior boxes of given widths and heights (clustered from a data set, as in
YOLO's anchors) for every cell of a feature map.

Inputs and output are PriorBox's (`prior_box.py`): `output_size` [H, W] and `image_size`
[IH, IW], one integer type, and an f32 [2, 4 * H * W * K] output of boxes then variances, where
K is the number of `width` (and `height`) values. The output length depends on the values of
`output_size`: known when they are constants, dynamic otherwise.

Each cell (h, w) is centred at `((w + offset) * step_w, (h + offset) * step_h)`, where a step_w
(step_h) of 0 takes `step`, and when both are still 0 they become IW / W and IH / H. Box s of
the cell is `((cx - width[s] / 2) / IW, (cy - height[s] / 2) / IH, (cx + width[s] / 2) / IW,
(cy + height[s] / 2) / IH)`, in f32 step by step as OpenVINO's reference computes it (so
results are exact); `clip` clamps each coordinate into [0, 1] (NaN stays NaN). The spec page's
formulas subtract the half size for xmax and ymax too, a typo: irscatter follows the
reference, which adds it.

Departures: the spec page calls `image_size` optional but defines nothing without it, and
OpenVINO requires it; irscatter requires it too. `width` and `height` default to [1.0] as the
spec says (OpenVINO's default is an empty list, no boxes). A variance list of other than 0, 1
or 4 values, or with a negative value, is refused as in PriorBox.
"""

from __future__ import annotations

import numpy as np

from irscatter.limits import check_allocation
from irscatter.ops.base import FloatList, IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.detection.prior_box import (
    F32,
    check_size_inputs,
    check_variance,
    grid_size,
    image_extent,
    infer_priors,
    with_variances,
)
from irscatter.ops.registry import register


class PriorBoxClusteredAttrs(OpAttrs):
    width: FloatList = (1.0,)
    height: FloatList = (1.0,)
    clip: IRBool = True
    step: float = 0.0
    step_w: float = 0.0
    step_h: float = 0.0
    offset: float
    variance: FloatList = ()


@register("PriorBoxClustered", 1)
class PriorBoxClustered(Op):
    labels = {
        "prior-box-clustered-sizes": "PriorBoxClustered's width and height lists differ in length",
    }

    Attrs = PriorBoxClusteredAttrs
    attrs: PriorBoxClusteredAttrs
    inputs = ("output_size", "image_size")

    def _per_cell(self) -> int:
        a = self.attrs
        check(len(a.width) == len(a.height), "prior-box-clustered-sizes",
              f"width has {len(a.width)} values and height {len(a.height)}", port=self.port("height"))
        check_variance(self, a.variance)
        return len(a.width)

    def infer(self, output_size: TensorInfo, image_size: TensorInfo) -> TensorInfo:
        check_size_inputs(self, output_size, image_size)
        return infer_priors(self, output_size, self._per_cell())

    def compute(self, output_size: np.ndarray, image_size: np.ndarray) -> np.ndarray:
        a = self.attrs
        per_cell = self._per_cell()
        h, w = grid_size(self, output_size, at_runtime=True)
        check_allocation((2, 4 * h * w * per_cell), 4)
        ih, iw = image_extent(image_size)
        step_w = F32(a.step) if F32(a.step_w) == 0 else F32(a.step_w)
        step_h = F32(a.step) if F32(a.step_h) == 0 else F32(a.step_h)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if step_w == 0 and step_h == 0:
                step_w, step_h = F32(iw) / F32(w), F32(ih) / F32(h)
            cx = ((np.arange(w, dtype=F32) + F32(a.offset)) * step_w)[None, :, None]
            cy = ((np.arange(h, dtype=F32) + F32(a.offset)) * step_h)[:, None, None]
            half_w = np.array(a.width, F32) / F32(2)
            half_h = np.array(a.height, F32) / F32(2)
            xmin, xmax = (cx - half_w) / F32(iw), (cx + half_w) / F32(iw)
            ymin, ymax = (cy - half_h) / F32(ih), (cy + half_h) / F32(ih)
            xmin, xmax, ymin, ymax = np.broadcast_arrays(xmin, xmax, ymin, ymax)
            boxes = np.stack([xmin, ymin, xmax, ymax], axis=-1)
            if a.clip:
                boxes = np.minimum(np.maximum(boxes, F32(0)), F32(1))
        return with_variances(boxes.astype(F32, copy=False), check_variance(self, a.variance))
