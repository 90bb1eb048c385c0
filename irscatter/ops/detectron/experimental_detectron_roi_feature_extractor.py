"""ExperimentalDetectronROIFeatureExtractor-6: ROIAlign over a feature pyramid. Inputs: the ROIs
[N, 4] (x0, y0, x1, y1 in image pixels), then L pyramid levels [1, C, H_l, W_l]. Outputs: the
features [N, C, output_size, output_size] and the ROIs [N, 4].

Each ROI goes to level `floor(2 + log2(sqrt(w * h) / 224 + 1e-6))` (w = x1 - x0, h = y1 - y0),
clamped to [0, L - 1], and is pooled there by ROIAlign with spatial scale
`1 / pyramid_scales[level]` (minus 0.5 with `aligned`): the ROI (at least 1 x 1) is cut into
output_size x output_size bins, each the mean of a grid of `sampling_ratio` x `sampling_ratio`
points (`ceil(roi size / output_size)` per axis when 0), each point bilinear between its four
neighbouring feature cells; a point more than one cell outside the map counts 0, one within a
cell of the border is clamped onto it.

All in f32 in the order of OpenVINO's reference (f16 and bf16 rounded once at the end, f64 from
f32 results): the sum over a bin's points runs row by row, so results match it to the ulp.

Choices and departures (OpenVINO's reference and CPU plugin agree on each):
* the spec's level formula has no 1e-6 and no clamp; irscatter adds both as OpenVINO does;
* a ROI of zero, negative or NaN area belongs to no level: its features are 0;
* the spec says output 1 holds the ROIs "reordered according to their mapping to the pyramid
  levels" without saying how; OpenVINO outputs the input ROIs unchanged (and output 0 in input
  order, as the spec's `output[i] = ROIAlign(inputPyramid[j], rois[i])` has it); so does irscatter;
* `pyramid_scales` may list more scales than there are levels (the spec's example has 5 scales
  for 4 levels); the first L are used;
* where the reference is undefined (a sample point at an infinite or NaN position, an adaptive
  grid of infinite size), a point that is not finite counts 0 and an infinite grid is 1 point;
* the work (points x channels x output cells) must stay within the tensor_elements limit: a ROI
  of absurd size with an adaptive grid is refused with `tensor-limit` rather than run for hours.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation, check_inferred
from irscatter.ops.base import IntList, IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.detectron.core import F32, FLOATS, itemsize, ranked
from irscatter.ops.registry import register


class ROIFeatureExtractorAttrs(OpAttrs):
    output_size: int = Field(gt=0)
    sampling_ratio: int = Field(ge=0)
    pyramid_scales: IntList
    aligned: IRBool = False


def pyramid_levels(rois: np.ndarray, levels: int) -> np.ndarray:
    """Each ROI's level, `levels` for a ROI of no positive area (one that is pooled nowhere)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        area = (rois[:, 2] - rois[:, 0]) * (rois[:, 3] - rois[:, 1])
        positive = area > 0
        scale = np.sqrt(np.where(positive, area, F32(1))) / F32(224)
        level = np.floor(np.log2(scale + F32(1e-6)) + F32(2))
    level = np.clip(np.nan_to_num(level, nan=0.0, posinf=levels - 1, neginf=0), 0, max(levels - 1, 0))
    return np.where(positive, level.astype(np.int64), levels)


def _axis(start: np.ndarray, bin_size: np.ndarray, grid: int, pooled: int, size: int):
    """Sample coordinates along one axis, [R, pooled, grid]: the low cell, the high cell, the
    low and high weights, and whether the coordinate is inside [-1, size]."""
    p = np.arange(pooled, dtype=F32)[None, :, None]
    i = np.arange(grid, dtype=F32)[None, None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        pos = (start[:, None, None] + p * bin_size[:, None, None]
               + (i + F32(0.5)) * bin_size[:, None, None] / F32(grid))
        inside = (pos >= F32(-1)) & (pos <= F32(size))
        pos = np.where(inside, np.maximum(pos, F32(0)), F32(0))
        low = pos.astype(np.int64)
        edge = low >= size - 1
        low = np.where(edge, size - 1, low)
        high = np.where(edge, size - 1, low + 1)
        pos = np.where(edge, low.astype(F32), pos)
        lw = (pos - low.astype(F32)).astype(F32)
    return low, high, lw, (F32(1) - lw).astype(F32), inside


def _grid(bin_size: np.ndarray, ratio: int) -> np.ndarray:
    """Sample points per bin along one axis: `ratio`, or ceil(bin size) (1 where not finite), as
    float64 so that an absurd size is caught by the limits before it becomes an integer."""
    if ratio > 0:
        return np.full(bin_size.shape, float(ratio))
    return np.where(np.isfinite(bin_size), np.ceil(np.where(np.isfinite(bin_size), bin_size, 1)), 1.0)


# sample values computed at once: bounds the memory of one step, not the result
_BLOCK = 1 << 20


def _pool(flat: np.ndarray, width: int, height: int, start: np.ndarray, bin_w: np.ndarray, bin_h: np.ndarray,
          grid_h: int, grid_w: int, pooled: int) -> np.ndarray:
    """ROIAlign of ROIs sharing one sampling grid, [R, C, pooled, pooled]. The points of a bin are
    summed one after another, row by row, as the reference does (a cumulative sum is sequential),
    in blocks of points so that memory stays bounded whatever the grid."""
    rois, channels = start.shape[0], flat.shape[0]
    yl, yh, ly, hy, yin = _axis(start[:, 1], bin_h, grid_h, pooled, height)
    xl, xh, lx, hx, xin = _axis(start[:, 0], bin_w, grid_w, pooled, width)
    total = np.zeros((rois, channels, pooled, pooled), F32)
    points = grid_h * grid_w
    step = max(1, _BLOCK // max(1, rois * channels * pooled * pooled))
    for first in range(0, points, step):
        which = np.arange(first, min(points, first + step))
        iy, ix = which // grid_w, which % grid_w
        # [R, ph, pw, k] for the k-th point of this block
        ok = yin[:, :, None, iy] & xin[:, None, :, ix]
        y0, y1 = yl[:, :, None, iy], yh[:, :, None, iy]
        x0, x1 = xl[:, None, :, ix], xh[:, None, :, ix]
        wy0, wy1 = hy[:, :, None, iy], ly[:, :, None, iy]
        wx0, wx1 = hx[:, None, :, ix], lx[:, None, :, ix]
        term = None
        with np.errstate(invalid="ignore", over="ignore"):
            # a point outside reads cell 0 with weight 0, as the reference's zeroed table does
            for a, b, wa, wb in ((y0, x0, wy0, wx0), (y0, x1, wy0, wx1), (y1, x0, wy1, wx0), (y1, x1, wy1, wx1)):
                index = np.where(ok, a * width + b, 0)
                weight = np.where(ok, wa * wb, F32(0))
                part = weight[:, None] * np.moveaxis(flat[:, index], 0, 1)  # [R, C, ph, pw, k]
                term = part if term is None else term + part
            total = np.cumsum(np.concatenate([total[..., None], term], axis=-1), axis=-1, dtype=F32)[..., -1]
    return total


def roi_align(feature: np.ndarray, rois: np.ndarray, scale: np.float32, pooled: int, ratio: int,
              aligned: bool) -> np.ndarray:
    """ROIAlign of `rois` [R, 4] over one level `feature` [C, H, W], as [R, C, pooled, pooled]."""
    channels, height, width = feature.shape
    offset = F32(0.5) if aligned else F32(0)
    with np.errstate(invalid="ignore", over="ignore"):
        start = rois * scale - offset
        size_w = np.maximum(start[:, 2] - start[:, 0], F32(1))
        size_h = np.maximum(start[:, 3] - start[:, 1], F32(1))
        bin_w, bin_h = size_w / F32(pooled), size_h / F32(pooled)
    grid_w, grid_h = _grid(bin_w, ratio), _grid(bin_h, ratio)
    # the points sampled, each read for every channel and output cell: what the reference computes
    with np.errstate(over="ignore"):
        work = float(np.sum(grid_w * grid_h)) * channels * pooled * pooled
    check_allocation((int(min(work, 2.0**62)),), 4, port="output 0")
    grid_w, grid_h = grid_w.astype(np.int64), grid_h.astype(np.int64)
    flat = feature.reshape(channels, height * width)
    out = np.zeros((len(rois), channels, pooled, pooled), F32)
    pairs = np.unique(np.stack([grid_h, grid_w], 1), axis=0)
    for gh, gw in pairs.tolist():
        members = np.flatnonzero((grid_h == gh) & (grid_w == gw))
        total = _pool(flat, width, height, start[members], bin_w[members], bin_h[members], gh, gw, pooled)
        out[members] = total / F32(gh * gw)
    return out


@register("ExperimentalDetectronROIFeatureExtractor", 6)
class ExperimentalDetectronROIFeatureExtractor(Op):
    labels = {
        "roi-feature-shape": "the ROIs are not [N, 4], a pyramid level is not [1, C, H, W], or the levels differ in C",
        "pyramid-scales": "pyramid_scales lists fewer scales than there are pyramid levels, or a scale below 1",
    }

    Attrs = ROIFeatureExtractorAttrs
    attrs: ROIFeatureExtractorAttrs
    inputs = ("input_rois",)
    variadic = True
    outputs = 2

    def infer(self, rois: TensorInfo, *levels: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        check(len(levels) >= 1, "input-count", "takes the ROIs and at least one pyramid level, the layer has "
              f"{1 + len(levels)} inputs")
        etype = ElementType.dynamic
        for k, info in enumerate((rois, *levels)):
            check(info.etype in (*FLOATS, ElementType.dynamic), "float-type",
                  f"{self.type_name} takes f16, bf16, f32 or f64 tensors, found {info.etype}", port=f"input {k}")
            if info.etype is not ElementType.dynamic:
                check(etype in (ElementType.dynamic, info.etype), "same-element-type",
                      f"the inputs must share one element type, found {etype} and {info.etype}", port=f"input {k}")
                etype = info.etype
        scales = self.attrs.pyramid_scales
        check(len(scales) >= len(levels) and all(s >= 1 for s in scales), "pyramid-scales",
              f"pyramid_scales {list(scales)} must hold a positive scale for each of the {len(levels)} levels",
              port=self.port("pyramid_scales"))
        r = ranked(self, rois, "input_rois", 2, "roi-feature-shape", last=4)
        count = r[0] if r is not None else Dimension.dynamic()
        channels = Dimension.dynamic()
        for k, info in enumerate(levels, start=1):
            shape = info.shape
            if not shape.rank_is_static:
                continue
            check(shape.rank == 4 and shape[0].compatible(Dimension.static(1)), "roi-feature-shape",
                  f"a pyramid level must be [1, C, H, W], found {shape}", port=f"input {k}")
            check(shape[1].compatible(channels), "roi-feature-shape",
                  f"the pyramid levels must have as many channels, found {shape[1]} and {channels}", port=f"input {k}")
            if shape[1].is_static:
                channels = shape[1]
        out = self.attrs.output_size
        features = PartialShape.of([count, channels, out, out])
        if features.is_static:
            check_inferred(features.to_tuple(), itemsize(etype), "output 0")
        return TensorInfo(etype, features), TensorInfo(etype, PartialShape.of([count, 4]))

    def compute(self, rois: np.ndarray, *levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        etype = ElementType.from_dtype(rois.dtype)
        out = self.attrs.output_size
        channels = levels[0].shape[1]
        if any(level.shape[1] != channels for level in levels):
            raise ExecutionError("the pyramid levels must have as many channels", label="roi-feature-shape")
        check_allocation((rois.shape[0], channels, out, out), itemsize(etype))
        boxes = rois.astype(F32)
        which = pyramid_levels(boxes, len(levels))
        features = np.zeros((rois.shape[0], channels, out, out), F32)
        for k, level in enumerate(levels):
            members = np.flatnonzero(which == k)
            if members.size and math.prod(level.shape):
                scale = F32(1) / F32(self.attrs.pyramid_scales[k])
                features[members] = roi_align(level[0].astype(F32), boxes[members], scale, out,
                                              self.attrs.sampling_ratio, self.attrs.aligned)
        return from_compute(features, etype), rois.copy()
