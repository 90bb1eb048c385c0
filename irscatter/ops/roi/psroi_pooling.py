"""PSROIPooling-1: position-sensitive pooling of regions of interest (R-FCN), by averaging
(`average`) or by bilinear sampling (`bilinear`).

data [N, C, H, W] of a floating-point type and rois [R, 5] (batch_id, x1, y1, x2, y2) of a
floating-point type give [R, output_dim, group_size, group_size] of data's type. Each ROI is cut
into group_size x group_size bins, and output channel o of bin (i, j) reads its own input
channel: the input is position-sensitive.

`average`: C must be output_dim * group_size^2; bin (i, j) of output channel o averages input
channel (o * group_size + i) * group_size + j over the bin's pixels. The corners are rounded
(half away from zero) and scaled: start = round(x1) * spatial_scale, end = (round(x2) + 1) *
spatial_scale, and so for y; bin j spans columns [floor(start + j * w), ceil(start + (j + 1) * w))
with w = (end - start) / group_size, its first column clipped to [0, W - 1] and its end to W
(so a bin starting past the map's right edge reads the last column, as OpenVINO's reference
does).

`bilinear`: C must be output_dim * spatial_bins_x * spatial_bins_y; the coordinates are
normalized to [0, 1] (scaled by spatial_scale, not rounded). The box is cut into spatial_bins_x x
spatial_bins_y sub-boxes of width w = (x2 - x1) * spatial_scale / spatial_bins_x (and height
alike); sub-box (sy, sx) reads input channel (sy * spatial_bins_x + sx) * output_dim + o, at
x = j * w * (W - 1) / (group_size - 1) + (x1 * spatial_scale + sx * w) * (W - 1) for output
column j (the sub-box's middle, (2 * start + w) * (W - 1) / 2, when group_size is 1), and alike
for y. The four pixels around the point are blended as top = tl + (tr - tl) * dx, bottom =
bl + (br - bl) * dx, top + (bottom - top) * dy, the right column and bottom row clipped to the
map (so a point in [W - 1, W) reads the last column). A point at or past W (or H) adds 0. Each
output value is the sum over the sub-boxes divided by spatial_bins_x * spatial_bins_y.

Choices where the spec is silent and OpenVINO's reference is undefined (it converts negative
floats to unsigned indices):
  * a bin's first column (or row) below 0 is clipped to 0, and a bilinear point below 0 adds 0
    (as the CPU plugin does);
  * a bin that covers no pixel (beside the map, of an empty or reversed box, or at NaN
    coordinates) is 0; the reference divides 0 by 0 there (NaN), the CPU plugin gives 0;
  * a ROI whose batch_id (truncated toward zero) is negative gives zeros, as
    DeformablePSROIPooling's reference does (the CPU plugin stops at the first batch_id of -1
    and gives zeros for it and every ROI after it); a batch_id of N or more, or NaN, is refused
    (`index-range`).

Departures of OpenVINO's CPU plugin, where irscatter follows the reference: in `average` it
rounds the end corner as round(x2 + 1) (different for x2 = -0.5, -1.5, ...), widens a box to at
least 0.1 and gives 0 for a bin past the map's right or bottom edge; in `bilinear` it leaves out
points in (W - 1, W) where the reference reads the last column. OpenVINO refuses a layer without
a mode attribute (it reads an empty string); the spec's default, average, is irscatter's.

Coordinates are computed in f32 whatever the data type, as the reference computes them (with
spatial_scale an f32); values are summed and blended in f32 for f16, bf16 and the 8-bit floats
(the reference does it in the data type; rounded once at the end) and in f64 for f64. ROIs are
taken in groups, every bin, channel and sample point of a group gathered at once.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation, check_inferred
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.registry import register

CHUNK = 2**22  # values gathered at once

# --- what the position-sensitive poolings share --------------------------------------------------


class PositionSensitiveAttrs(OpAttrs):
    """The attributes both position-sensitive poolings declare, which the helpers below read."""

    output_dim: int
    spatial_scale: float
    group_size: int = 1


class PositionSensitivePooling(Op):
    """The base of PSROIPooling and DeformablePSROIPooling: each narrows the schema."""

    Attrs: ClassVar[type[PositionSensitiveAttrs]] = PositionSensitiveAttrs
    attrs: PositionSensitiveAttrs


def check_positive(op: Op, *names: str) -> None:
    """Integer attributes that must be 1 or more."""
    for name in names:
        value = getattr(op.attrs, name)
        check(value >= 1, "psroi-attribute", f"{name} must be a positive integer, found {value}", port=op.port(name))


def check_scale(op: PositionSensitivePooling) -> np.float32:
    """spatial_scale as OpenVINO holds it (an f32): positive and finite."""
    with np.errstate(over="ignore"):
        held = np.float32(op.attrs.spatial_scale)
    check(np.isfinite(held) and held > 0, "spatial-scale",
          f"spatial_scale must be a positive finite f32 number, found {op.attrs.spatial_scale}",
          port=op.port("spatial_scale"))
    return held


def check_data_and_rois(op: PositionSensitivePooling, data: TensorInfo, rois: TensorInfo, channels: int) -> PartialShape:
    """data [N, channels, H, W] and rois [R, 5]; returns the output shape [R, output_dim, G, G]."""
    check_float(op, data.etype, "data")
    check_float(op, rois.etype, "rois")
    if data.shape.rank_is_static:
        check(data.shape.rank == 4, "data-rank", f"data must be 4-D [N, C, H, W], found {data.shape}",
              port=op.port("data"))
        check(data.shape[1].contains(channels), "psroi-channels",
              f"data must have {channels} channels for these attributes, found {data.shape[1]}", port=op.port("data"))
    count = Dimension.dynamic()
    if rois.shape.rank_is_static:
        check(rois.shape.rank == 2 and rois.shape[1].contains(5), "rois-shape",
              f"rois must be a 2-D tensor [NUM_ROIS, 5], found {rois.shape}", port=op.port("rois"))
        count = rois.shape[0]
    group = op.attrs.group_size
    shape = PartialShape.of([count, op.attrs.output_dim, group, group])
    if shape.is_static:
        check_inferred(shape.to_tuple(), 8 if data.etype is ElementType.dynamic else data.etype.dtype.itemsize, "output 0")
    return shape


def batch_ids(op: Op, rois: np.ndarray, count: int) -> np.ndarray:
    """Each ROI's batch index, truncated toward zero (int64; negative ones are kept, and give
    zeros); NaN or N and above is refused."""
    first = rois[:, 0].astype(np.float64)
    bad = np.isnan(first) | (first >= count)
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        raise ExecutionError(f"batch_id {rois[k, 0]} of ROI {k} lies outside [0, {count - 1}]",
                             port=op.port("rois"), label="index-range")
    return np.trunc(np.maximum(first, -1.0)).astype(np.int64)


def round_half_away(v: np.ndarray) -> np.ndarray:
    """roundf: halves away from zero, in the dtype of `v` (NaN and infinities kept)."""
    whole = np.trunc(v)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(v - whole) >= 0.5, whole + np.sign(v), whole)


def chunks(total: int, per_item: int) -> list[tuple[int, int]]:
    """[start, stop) groups of `total` items, each group holding about CHUNK values."""
    step = max(1, CHUNK // max(per_item, 1))
    return [(s, min(s + step, total)) for s in range(0, total, step)]


def blend(flat: np.ndarray, base: np.ndarray, width: int, left: np.ndarray, right: np.ndarray, top: np.ndarray,
          bottom: np.ndarray, dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """The reference's bilinear blend in the planes of `flat` (the data raveled) that start at
    `base`: top = tl + (tr - tl) * dx, bottom = bl + (br - bl) * dx, top + (bottom - top) * dy
    (weights in the data's dtype)."""
    upper_row = base + top * width
    lower_row = base + bottom * width
    tl, tr = flat.take(upper_row + left), flat.take(upper_row + right)
    bl, br = flat.take(lower_row + left), flat.take(lower_row + right)
    dx, dy = dx.astype(flat.dtype), dy.astype(flat.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        upper = tl + (tr - tl) * dx
        lower = bl + (br - bl) * dx
        return upper + (lower - upper) * dy


# --- the op -------------------------------------------------------------------------------------


class PSROIPoolingAttrs(PositionSensitiveAttrs):
    mode: Annotated[Literal["average", "bilinear"], Lower] = "average"
    spatial_bins_x: int = 1
    spatial_bins_y: int = 1


@register("PSROIPooling", 1)
class PSROIPooling(PositionSensitivePooling):
    Attrs = PSROIPoolingAttrs
    attrs: PSROIPoolingAttrs
    inputs = ("data", "rois")

    def infer(self, data: TensorInfo, rois: TensorInfo) -> TensorInfo:
        check_positive(self, "output_dim", "group_size")
        a = self.attrs
        if a.mode == "bilinear":
            check_positive(self, "spatial_bins_x", "spatial_bins_y")
            channels = a.output_dim * a.spatial_bins_x * a.spatial_bins_y
        else:
            channels = a.output_dim * a.group_size ** 2
        check_scale(self)
        return TensorInfo(data.etype, check_data_and_rois(self, data, rois, channels))

    def compute(self, data: np.ndarray, rois: np.ndarray) -> np.ndarray:
        a = self.attrs
        etype = ElementType.from_dtype(data.dtype)
        work = compute_dtype(etype)
        count, _, height, width = data.shape
        shape = (rois.shape[0], a.output_dim, a.group_size, a.group_size)
        check_allocation(shape, data.dtype.itemsize)
        batch = batch_ids(self, rois, count)
        out = np.zeros(shape, work)
        live = np.flatnonzero(batch >= 0)
        if live.size and height and width:
            values = np.ascontiguousarray(data, dtype=work)
            box = rois[live, 1:].astype(np.float32)
            if a.mode == "average":
                out[live] = self._average(values, batch[live], box)
            else:
                out[live] = self._bilinear(values, batch[live], box)
        return from_compute(out, etype)

    def _average(self, data: np.ndarray, batch: np.ndarray, box: np.ndarray) -> np.ndarray:
        a = self.attrs
        _, _, height, width = data.shape
        group, scale = a.group_size, check_scale(self)
        corners = round_half_away(box)
        with np.errstate(invalid="ignore", over="ignore"):
            start = corners[:, :2] * scale  # x, y
            end = (corners[:, 2:] + np.float32(1)) * scale
            size = (end - start) / np.float32(group)
            k = np.arange(group + 1, dtype=np.float32)
            edges = start[:, :, None] + k * size[:, :, None]  # [R, 2, G + 1]
        limit = np.array([width, height], np.float64)[None, :, None]
        first = np.floor(edges[:, :, :-1].astype(np.float64))
        past = np.ceil(edges[:, :, 1:].astype(np.float64))
        finite = np.isfinite(first) & np.isfinite(past)
        first = np.clip(np.where(finite, first, 0), 0, limit - 1)
        past = np.clip(np.where(finite, past, 0), 0, limit)
        lengths = np.where(finite, np.maximum(past - first, 0), 0).astype(np.int64)  # [R, 2, G]
        first = first.astype(np.int64)
        rois = box.shape[0]
        out = np.empty((rois, a.output_dim, group, group), data.dtype)
        kw, kh = (max(int(lengths[:, axis].max()), 1) for axis in (0, 1))
        channel = (np.arange(a.output_dim)[:, None, None] * group + np.arange(group)[:, None]) * group \
            + np.arange(group)  # [O, G(i), G(j)]
        for lo, hi in chunks(rois, a.output_dim * group * group * kh * kw):
            i = np.arange(kh)
            j = np.arange(kw)
            rows = first[lo:hi, 1, :, None] + i  # [r, G, kh]
            cols = first[lo:hi, 0, :, None] + j  # [r, G, kw]
            inside = (i < lengths[lo:hi, 1, :, None])[:, None, :, None, :, None] \
                & (j < lengths[lo:hi, 0, :, None])[:, None, None, :, None, :]
            picked = data[batch[lo:hi, None, None, None, None, None], channel[None, :, :, :, None, None],
                          np.minimum(rows, height - 1)[:, None, :, None, :, None],
                          np.minimum(cols, width - 1)[:, None, None, :, None, :]]
            with np.errstate(invalid="ignore", over="ignore"):
                total = np.where(inside, picked, 0).sum(axis=(-2, -1))
            area = (lengths[lo:hi, 1, :, None] * lengths[lo:hi, 0, None, :])[:, None]  # [r, 1, G, G]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[lo:hi] = np.where(area > 0, total / np.maximum(area, 1).astype(data.dtype), 0)
        return out

    def _bilinear(self, data: np.ndarray, batch: np.ndarray, box: np.ndarray) -> np.ndarray:
        a = self.attrs
        _, channels, height, width = data.shape
        group, scale = a.group_size, check_scale(self)
        bins = (a.spatial_bins_x, a.spatial_bins_y)
        f32 = np.float32
        with np.errstate(invalid="ignore", over="ignore"):
            start = box[:, :2] * scale  # x, y
            end = box[:, 2:] * scale
            points = []  # along x, then y: [R, G (output position), bins]
            for axis, extent in ((0, width), (1, height)):
                size = (end[:, axis] - start[:, axis]) / f32(bins[axis])
                sub = start[:, axis, None] + np.arange(bins[axis], dtype=f32) * size[:, None]  # [R, bins]
                span = f32(extent - 1)
                if group > 1:
                    step = size * span / f32(group - 1)
                    at = np.arange(group, dtype=f32)[None, :, None] * step[:, None, None] + (sub * span)[:, None, :]
                else:
                    at = ((sub + sub + size[:, None]) * span / f32(2))[:, None, :]
                points.append(at)
        x, y = points
        rois = box.shape[0]
        bx, by = bins
        out = np.empty((rois, a.output_dim, group, group), data.dtype)
        # channel of output channel o at sub-box (sy, sx): (sy * bx + sx) * output_dim + o
        channel = (np.arange(by)[:, None] * bx + np.arange(bx))[None, :, :] * a.output_dim \
            + np.arange(a.output_dim)[:, None, None]  # [O, by, bx]
        for lo, hi in chunks(rois, a.output_dim * group * group * bx * by):
            px = x[lo:hi][:, None, None, :, None, :]  # [r, 1, 1, G(j), 1, bx]
            py = y[lo:hi][:, None, :, None, :, None]  # [r, 1, G(i), 1, by, 1]
            ok_x = (px >= 0) & (px < width)
            ok_y = (py >= 0) & (py < height)
            sx = np.where(ok_x, px, 0)
            sy = np.where(ok_y, py, 0)
            left, top = np.floor(sx), np.floor(sy)
            right = np.minimum(np.ceil(sx), width - 1).astype(np.int64)
            bottom = np.minimum(np.ceil(sy), height - 1).astype(np.int64)
            base = (batch[lo:hi, None, None, None, None, None] * channels + channel[None, :, None, None, :, :]) \
                * (height * width)
            value = blend(data.reshape(-1), base, width, left.astype(np.int64), right, top.astype(np.int64), bottom,
                          sx - left, sy - top)
            with np.errstate(invalid="ignore", over="ignore"):
                total = np.where(ok_x & ok_y, value, 0).sum(axis=(-2, -1))
                out[lo:hi] = total / data.dtype.type(bx * by)
        return out
