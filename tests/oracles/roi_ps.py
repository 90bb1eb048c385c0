"""Oracles of the position-sensitive ROI poolings (PSROIPooling-1, DeformablePSROIPooling-1): one
Python step per output element, bin pixel or sample point, following OpenVINO's reference
arithmetic as irscatter documents it.

Coordinates are f32 (numpy float32 scalars, as the reference's floats), values Python floats
(f64), rounded to the data type at the end. Where the reference is undefined the oracle makes
irscatter's documented choices: a negative batch_id gives zeros, a bin's first pixel below 0 is
clipped to 0, a bilinear point below 0 adds 0, a bin of no pixels is 0.
"""

from __future__ import annotations

import math

import numpy as np

f32 = np.float32


def _round(v) -> f32:
    """roundf: halves away from zero."""
    v = float(v)
    if math.isnan(v) or math.isinf(v):
        return f32(v)
    return f32(math.copysign(math.floor(abs(v) + 0.5), v))


def _blend(plane, x, y, left, right, top, bottom) -> float:
    tl, tr = float(plane[top, left]), float(plane[top, right])
    bl, br = float(plane[bottom, left]), float(plane[bottom, right])
    dx, dy = float(f32(x) - f32(left)), float(f32(y) - f32(top))
    upper = tl + (tr - tl) * dx
    lower = bl + (br - bl) * dx
    return upper + (lower - upper) * dy


def psroi_pooling(data, rois, *, output_dim, group_size=1, spatial_scale, mode="average", spatial_bins_x=1,
                  spatial_bins_y=1):
    _, _, height, width = data.shape
    out = np.zeros((rois.shape[0], output_dim, group_size, group_size), np.float64)
    scale = f32(spatial_scale)
    for r in range(rois.shape[0]):
        b = math.trunc(max(float(rois[r, 0]), -1.0))
        if b < 0 or not height or not width:
            continue
        x1, y1, x2, y2 = (f32(v) for v in rois[r, 1:])
        for o in range(output_dim):
            for i in range(group_size):
                for j in range(group_size):
                    if mode == "average":
                        out[r, o, i, j] = _average(data[b, (o * group_size + i) * group_size + j], x1, y1, x2, y2,
                                                   scale, group_size, i, j)
                    else:
                        out[r, o, i, j] = _bilinear(data[b], o, output_dim, x1, y1, x2, y2, scale, group_size, i, j,
                                                    spatial_bins_x, spatial_bins_y)
    return out.astype(data.dtype)


def _average(plane, x1, y1, x2, y2, scale, group, i, j) -> float:
    height, width = plane.shape
    spans = []
    for lo, hi, k, extent in ((y1, y2, i, height), (x1, x2, j, width)):
        start = _round(lo) * scale
        end = (_round(hi) + f32(1)) * scale
        size = (end - start) / f32(group)
        with np.errstate(invalid="ignore", over="ignore"):
            first, past = float(start + f32(k) * size), float(start + f32(k + 1) * size)
        if not (math.isfinite(first) and math.isfinite(past)):
            return 0.0  # a bin at NaN or infinite coordinates covers no pixel
        first, past = math.floor(first), math.ceil(past)
        first = min(max(first, 0), extent - 1)
        past = min(max(past, 0), extent)
        spans.append((first, past))
    (top, bottom), (left, right) = spans
    if bottom <= top or right <= left:
        return 0.0
    total = 0.0
    for y in range(top, bottom):
        for x in range(left, right):
            total += float(plane[y, x])
    return total / ((bottom - top) * (right - left))


def _bilinear(image, o, output_dim, x1, y1, x2, y2, scale, group, i, j, bins_x, bins_y) -> float:
    _, height, width = image.shape
    start_x, start_y = x1 * scale, y1 * scale
    size_x = (x2 * scale - start_x) / f32(bins_x)
    size_y = (y2 * scale - start_y) / f32(bins_y)
    total = 0.0
    for sy in range(bins_y):
        for sx in range(bins_x):
            plane = image[(sy * bins_x + sx) * output_dim + o]
            bx = start_x + f32(sx) * size_x
            by = start_y + f32(sy) * size_y
            if group > 1:
                x = f32(j) * (size_x * f32(width - 1) / f32(group - 1)) + bx * f32(width - 1)
                y = f32(i) * (size_y * f32(height - 1) / f32(group - 1)) + by * f32(height - 1)
            else:
                x = (bx + bx + size_x) * f32(width - 1) / f32(2)
                y = (by + by + size_y) * f32(height - 1) / f32(2)
            if not (0 <= x < width and 0 <= y < height):
                continue
            left, top = math.floor(x), math.floor(y)
            right, bottom = min(math.ceil(x), width - 1), min(math.ceil(y), height - 1)
            total += _blend(plane, x, y, left, right, top, bottom)
    return total / (bins_x * bins_y)


def deformable_psroi_pooling(data, rois, offsets=None, *, output_dim, spatial_scale, group_size=1,
                             mode="bilinear_deformable", spatial_bins_x=1, spatial_bins_y=1, trans_std=1.0,
                             part_size=1):
    _, _, height, width = data.shape
    group = group_size
    out = np.zeros((rois.shape[0], output_dim, group, group), np.float64)
    scale = f32(spatial_scale)
    for r in range(rois.shape[0]):
        b = math.trunc(max(float(rois[r, 0]), -1.0))
        if b < 0 or not height or not width:
            continue
        x1 = _round(rois[r, 1]) * scale - f32(0.5)
        y1 = _round(rois[r, 2]) * scale - f32(0.5)
        x2 = (_round(rois[r, 3]) + f32(1)) * scale - f32(0.5)
        y2 = (_round(rois[r, 4]) + f32(1)) * scale - f32(0.5)
        roi_w = x2 - x1 if math.isnan(x2 - x1) else max(x2 - x1, f32(0.1))
        roi_h = y2 - y1 if math.isnan(y2 - y1) else max(y2 - y1, f32(0.1))
        bin_w, bin_h = roi_w / f32(group), roi_h / f32(group)
        for o in range(output_dim):
            for i in range(group):
                for j in range(group):
                    bin_x = x1 + f32(j) * bin_w
                    bin_y = y1 + f32(i) * bin_h
                    if offsets is not None:
                        classes = offsets.shape[1] // 2
                        k = o // (output_dim // classes)
                        ox = float(offsets[r, 2 * k, i * part_size // group, j * part_size // group])
                        oy = float(offsets[r, 2 * k + 1, i * part_size // group, j * part_size // group])
                        bin_x = bin_x + f32(ox * float(f32(trans_std))) * roi_w
                        bin_y = bin_y + f32(oy * float(f32(trans_std))) * roi_h
                    plane = data[b, (o * group + i) * group + j]
                    total, taken = 0.0, 0
                    for sy in range(spatial_bins_y):
                        y = bin_y + f32(sy) * (bin_h / f32(spatial_bins_y))
                        if not (-0.5 <= y <= height - 0.5):
                            continue
                        for sx in range(spatial_bins_x):
                            x = bin_x + f32(sx) * (bin_w / f32(spatial_bins_x))
                            if not (-0.5 <= x <= width - 0.5):
                                continue
                            cx = min(max(x, f32(0)), f32(width - 1))
                            cy = min(max(y, f32(0)), f32(height - 1))
                            left, top = math.floor(cx), math.floor(cy)
                            total += _blend(plane, cx, cy, left, math.ceil(cx), top, math.ceil(cy))
                            taken += 1
                    out[r, o, i, j] = total / taken if taken else 0.0
    return out.astype(data.dtype)
