"""ROIAlignRotated-15: ROIAlign's average over bilinear samples, in boxes turned by an angle.

data [N, C, H, W], rois [R, 5] (center_x, center_y, width, height, angle in radians),
batch_indices [R] give [R, C, pooled_h, pooled_w]. The centre, width and height are multiplied by
`spatial_scale` (the centre too, as the spec's warning says) and the centre moved by -0.5 on both
axes. The box, centred on the origin, is cut into bins with sampling points placed as ROIAlign
places them (`sampling_ratio` per axis, or with 0 `ceil(bin size)`, ROI by ROI), and each point
(x, y) is turned into the image as
    y' = y * cos(a) - x * sin(a) + center_y,   x' = y * sin(a) + x * cos(a) + center_x
with a = angle, or -angle when `clockwise_mode` is true. Every point is then read with
ROIAlign's bilinear sampler (`roi_align.bilinear_samples`, with its rules for points near or
beyond the border) and the bin is the mean of its points.

The width and height are not widened to 1 (unlike ROIAlign-3): a zero-sized box has bins of
0 points under sampling_ratio 0, which give 0, and a negative size places the points the other
way; under sampling_ratio 0 its negative count counts as 0 points (OpenVINO's reference, which
the CPU plugin runs for this op, fails an assertion there). The spec page has no `aligned` attribute and OpenVINO's op none either: the -0.5 shift is
always made.

As in OpenVINO's reference, cos and sin are f32 values and a turned point is held in an f32 even
for f64 data; everything else is computed in the data's type (f32 for f16, bf16 and the 8-bit
floats, rounded once at the end). The choices ROIAlign makes where the spec says nothing (NaN
points, counts past int, empty feature maps, batch indices out of range) are made here too; see
`roi_align`.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import IRBool
from irscatter.ops.registry import register
from irscatter.ops.roi.roi_align import ROIAlignBase, SampledAttrs, as_work_scale


class ROIAlignRotatedAttrs(SampledAttrs):
    clockwise_mode: IRBool = False


@register("ROIAlignRotated", 15)
class ROIAlignRotated(ROIAlignBase):
    Attrs = ROIAlignRotatedAttrs
    attrs: ROIAlignRotatedAttrs
    box = 5

    def boxes(self, rois: np.ndarray) -> tuple[np.ndarray, ...]:
        work = rois.dtype
        scale = as_work_scale(self.attrs.spatial_scale, work)
        half, two = work.type(0.5), work.type(2)
        with np.errstate(invalid="ignore", over="ignore"):
            center_x = rois[:, 0] * scale - half
            center_y = rois[:, 1] * scale - half
            width = rois[:, 2] * scale
            height = rois[:, 3] * scale
            angle = -rois[:, 4] if self.attrs.clockwise_mode else rois[:, 4]
            cos = np.cos(angle).astype(np.float32).astype(work)
            sin = np.sin(angle).astype(np.float32).astype(work)
        return -width / two, -height / two, width, height, center_x, center_y, cos, sin
