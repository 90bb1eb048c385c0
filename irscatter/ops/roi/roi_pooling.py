"""ROIPooling-2 (the spec page's ROIPooling-1; the op entered the opsets in opset2): max or
bilinear pooling of a fixed-size grid over each region of interest.

data [N, C, H, W] and rois [R, 5] (batch_id, x1, y1, x2, y2), both of one floating-point type,
give [R, C, pooled_h, pooled_w]. The batch id is truncated to an integer and must lie in
[0, N) (`index-range`).

`max`, as OpenVINO's reference computes it: the corners `round(x * spatial_scale)` (half away
from zero) are integers, the box is `max(end - start + 1, 1)` pixels on each axis, bin i of the
pooled_h bins covers rows [floor(i * h / pooled_h), ceil((i + 1) * h / pooled_h)) shifted by the
box's start and clipped to [0, H], and so for columns. A bin left empty by the clipping is 0.
A bin's value is the maximum of its pixels; a NaN among them makes it NaN and a bin of -inf is
-inf. OpenVINO departs here from the plain maximum: its reference starts from the lowest finite
value (a bin of -inf gives -3.4e38) and lets a later pixel replace a NaN (so the NaN survives only
as the bin's last pixel), and the CPU plugin keeps a NaN only when it is the bin's first pixel.
A non-finite corner converts to an integer as irscatter's Convert does (NaN to 0, infinities
saturate; the reference's conversion is undefined there).

`bilinear`: the coordinates are normalised to [0, 1] and `spatial_scale` is not used. Along
the height, output row i reads the image at y = y1 * (H - 1) + i * (y2 - y1) * (H - 1) /
(pooled_h - 1), the last row exactly at y2 * (H - 1), and with pooled_h 1 the middle
0.5 * (y1 + y2) * (H - 1) (computed in f64, as the reference's `0.5` literal does); the same
along the width. A point outside [0, H - 1] x [0, W - 1] (or at a NaN coordinate, where the
reference is undefined) gives 0. Otherwise the four pixels at the floor and ceiling of y and x
are blended as `top = tl + (tr - tl) * dx`, `bottom = bl + (br - bl) * dx`,
`top + (bottom - top) * dy`, as the reference does (an infinite pixel next to an integer
coordinate therefore gives NaN there).

The spec allows pooled_h and pooled_w of 0 ("a non-negative integer"), which give an empty
output; OpenVINO refuses them. spatial_scale must be positive (`spatial-scale`).

Coordinates are computed in the data's type (f32 for f16, bf16 and the 8-bit floats, rounded
once at the end; f64 for f64) with `spatial_scale` held as an f32, as OpenVINO holds it. The
max windows are gathered for a group of ROIs at once, columns first then rows, padded to the
group's widest bin and masked.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension
from irscatter.limits import check_allocation
from irscatter.ops.base import Lower, Op, TensorInfo
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.registry import register
from irscatter.ops.roi.roi_align import (
    PooledAttrs,
    as_work_scale,
    check_attributes_positive,
    check_data_and_rois,
    output_shape,
)

_CHUNK = 2**21  # values gathered at once for the max windows
_COORD_LIMIT = float(2**40)  # corners saturate here: far outside any feature map, and exact in f64


class ROIPoolingAttrs(PooledAttrs):
    method: Annotated[Literal["max", "bilinear"], Lower] = "max"


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """std::round: halves away from zero, as int64 (NaN to 0, infinities saturated)."""
    v = np.nan_to_num(v.astype(np.float64), nan=0.0, posinf=_COORD_LIMIT, neginf=-_COORD_LIMIT)
    t = np.trunc(v)
    r = np.where(np.abs(v - t) >= 0.5, t + np.sign(v), t)
    return np.clip(r, -_COORD_LIMIT, _COORD_LIMIT).astype(np.int64)


def _to_int(v: np.ndarray) -> np.ndarray:
    v = np.nan_to_num(v.astype(np.float64), nan=0.0, posinf=_COORD_LIMIT, neginf=-_COORD_LIMIT)
    return np.clip(v, -_COORD_LIMIT, _COORD_LIMIT).astype(np.int64)


def _bins(start: np.ndarray, size: np.ndarray, pooled: int, limit: int, work: np.dtype) -> tuple[np.ndarray, ...]:
    """[R, pooled] first and past-the-end pixels of each max bin along one axis, clipped to [0, limit]."""
    bin_size = size.astype(work) / work.type(pooled)
    i = np.arange(pooled, dtype=work)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = _to_int(np.floor(i * bin_size[:, None])) + start[:, None]
        hi = _to_int(np.ceil((i + work.type(1)) * bin_size[:, None])) + start[:, None]
    return np.clip(lo, 0, limit), np.clip(hi, 0, limit)


def _window_max(values: np.ndarray, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, axis_len: int) -> np.ndarray:
    """Max over windows [lo, hi) (at least one element each) of the last axis of
    `values[rows[g], :, :, index]`; `lo`, `hi` are [G, B]; NaN propagates."""
    width = int((hi - lo).max()) if lo.size else 0
    idx = lo[:, :, None] + np.arange(max(width, 1))
    valid = idx < hi[:, :, None]
    gathered = values[rows[:, None, None], :, :, np.minimum(idx, max(axis_len - 1, 0))]  # [G, B, K, ...]
    mask = valid.reshape(valid.shape + (1,) * (gathered.ndim - 3))
    return np.where(mask, gathered, -np.inf).max(axis=2)


@register("ROIPooling", 2)
class ROIPooling(Op):
    Attrs = ROIPoolingAttrs
    attrs: ROIPoolingAttrs
    inputs = ("data", "rois")

    def infer(self, data: TensorInfo, rois: TensorInfo) -> TensorInfo:
        etype = check_data_and_rois(self, data, rois, 5)
        a = self.attrs
        check_attributes_positive(self, a.pooled_h, a.pooled_w, a.spatial_scale, allow_zero_pooled=True)
        count = rois.shape[0] if rois.shape.rank_is_static else Dimension.dynamic()
        return TensorInfo(etype, output_shape(self.attrs, data, count, etype))

    def compute(self, data: np.ndarray, rois: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        work = compute_dtype(etype)
        a = self.attrs
        N, C = data.shape[:2]
        R = rois.shape[0]
        ph, pw = a.pooled_h, a.pooled_w
        check_allocation((R, C, ph, pw), data.dtype.itemsize)
        r = rois.astype(work)
        ids = r[:, 0].astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(ids) | (np.trunc(ids) < 0) | (np.trunc(ids) >= N)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"ROI {k}'s batch id {rois[k, 0]} lies outside [0, {N - 1}]",
                                 port=self.port("rois"), label="index-range")
        batch = np.trunc(ids).astype(np.int64)
        src = data.astype(work, copy=False)
        if R * C * ph * pw == 0:
            out = np.zeros((R, C, ph, pw), work)
        elif a.method == "max":
            out = self._max(src, batch, r, as_work_scale(a.spatial_scale, work))
        else:
            out = self._bilinear(src, batch, r)
        return from_compute(out, etype)

    def _max(self, data: np.ndarray, batch: np.ndarray, rois: np.ndarray, scale: np.generic) -> np.ndarray:
        work = data.dtype
        _, C, H, W = data.shape
        R, ph, pw = rois.shape[0], self.attrs.pooled_h, self.attrs.pooled_w
        with np.errstate(over="ignore", invalid="ignore"):
            x1, y1, x2, y2 = (_round_half_away(rois[:, k] * scale) for k in range(1, 5))
        h0, h1 = _bins(y1, np.maximum(y2 - y1 + 1, 1), ph, H, work)
        w0, w1 = _bins(x1, np.maximum(x2 - x1 + 1, 1), pw, W, work)
        empty = (h1 <= h0)[:, :, None] | (w1 <= w0)[:, None, :]  # [R, ph, pw]
        h1, w1 = np.maximum(h1, h0 + 1), np.maximum(w1, w0 + 1)  # empty bins read one pixel, then 0
        out = np.zeros((R, C, ph, pw), work)
        if H == 0 or W == 0:
            return out
        # cost per ROI: the column pass [pw, widest, C, H] and the row pass [ph, tallest, pw, C]
        per_roi = pw * max(int((w1 - w0).max()), 1) * C * H + ph * max(int((h1 - h0).max()), 1) * pw * C
        step = max(1, _CHUNK // per_roi)
        for s in range(0, R, step):
            g = slice(s, s + step)
            b = batch[g]
            # columns: data[b, :, :, cols] -> [G, pw, K, C, H], max over K -> [G, pw, C, H]
            cols = _window_max(data, b, w0[g], w1[g], W)
            # rows: cols[g, :, :, rows] -> [G, ph, K, pw, C], max over K -> [G, ph, pw, C]
            best = _window_max(cols, np.arange(cols.shape[0]), h0[g], h1[g], H)
            best = np.where(empty[g][..., None], work.type(0), best)
            out[g] = best.transpose(0, 3, 1, 2)
        return out

    def _bilinear(self, data: np.ndarray, batch: np.ndarray, rois: np.ndarray) -> np.ndarray:
        work = data.dtype
        _, C, H, W = data.shape
        ph, pw = self.attrs.pooled_h, self.attrs.pooled_w
        if H == 0 or W == 0:
            return np.zeros((rois.shape[0], C, ph, pw), work)
        with np.errstate(over="ignore", invalid="ignore"):
            ys = self._points(rois[:, 2], rois[:, 4], ph, H)  # [R, ph]
            xs = self._points(rois[:, 1], rois[:, 3], pw, W)  # [R, pw]
            inside_y = (ys >= 0) & (ys <= work.type(H - 1))
            inside_x = (xs >= 0) & (xs <= work.type(W - 1))
        ys, xs = np.where(inside_y, ys, 0), np.where(inside_x, xs, 0)
        top = np.floor(ys).astype(np.int64)
        bottom = np.minimum(np.ceil(ys).astype(np.int64), H - 1)
        left = np.floor(xs).astype(np.int64)
        right = np.minimum(np.ceil(xs).astype(np.int64), W - 1)
        b = batch[:, None, None]

        def at(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
            return data[b, :, rows[:, :, None], columns[:, None, :]]  # [R, ph, pw, C]

        dx = (xs - left.astype(work))[:, None, :, None]
        dy = (ys - top.astype(work))[:, :, None, None]
        with np.errstate(over="ignore", invalid="ignore"):
            tl, tr = at(top, left), at(top, right)
            bl, br = at(bottom, left), at(bottom, right)
            upper = tl + (tr - tl) * dx
            lower = bl + (br - bl) * dx
            value = upper + (lower - upper) * dy
        inside = inside_y[:, :, None] & inside_x[:, None, :]
        value = np.where(inside[..., None], value, work.type(0))
        return np.ascontiguousarray(value.transpose(0, 3, 1, 2))

    @staticmethod
    def _points(start: np.ndarray, end: np.ndarray, pooled: int, size: int) -> np.ndarray:
        """[R, pooled] sampling coordinates along one axis (see the module's docstring)."""
        work = start.dtype
        span = work.type(size - 1)
        if pooled == 1:
            middle = 0.5 * (start + end).astype(np.float64) * float(size - 1)
            return middle.astype(work)[:, None]
        scale = (end - start) * span / work.type(pooled - 1)
        i = np.arange(pooled - 1, dtype=work)
        points = i * scale[:, None] + (start * span)[:, None]
        return np.concatenate([points, (span * end)[:, None]], axis=1)
