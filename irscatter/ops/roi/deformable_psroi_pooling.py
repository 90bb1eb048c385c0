"""DeformablePSROIPooling-1: position-sensitive ROI pooling by bilinear sampling, each bin
optionally moved by a learned offset (Deformable ConvNets, MXNet's DeformablePSROIPooling).

data [N, C, H, W], rois [R, 5] (batch_id, x1, y1, x2, y2) and the optional offsets
[R, 2 * classes, part_size, part_size], all of one floating-point type, give
[R, output_dim, group_size, group_size]. C must be output_dim * group_size^2: bin (i, j) of output
channel o reads input channel (o * group_size + i) * group_size + j.

As OpenVINO's reference computes it: the corners are rounded (half away from zero), scaled and
shifted by half a pixel, x1' = round(x1) * spatial_scale - 0.5, x2' = (round(x2) + 1) *
spatial_scale - 0.5 (and so for y); the box is w = max(x2' - x1', 0.1) wide and bins are w /
group_size wide. Bin (i, j) starts at x1' + j * w / group_size, moved, when offsets are given, by
offsets[r, 2 * k, i * part_size // group_size, j * part_size // group_size] * trans_std * w (and
the next channel, 2 * k + 1, for y), where k = o // (output_dim / classes) is the class of output
channel o. The bin holds spatial_bins_x x spatial_bins_y sample points at its start plus
multiples of the bin size / spatial_bins (the top-left corners of its sub-bins). A point beyond
[-0.5, W - 0.5] x [-0.5, H - 0.5] is left out; the others are clamped to [0, W - 1] x [0, H - 1]
and blended from their four pixels as top = tl + (tr - tl) * dx, bottom = bl + (br - bl) * dx,
top + (bottom - top) * dy. The bin's value is the mean of the points not left out, 0 when every
point is.

A ROI whose batch_id (truncated toward zero) is negative gives zeros, as the reference says
(the CPU plugin stops at the first batch_id of -1 and gives zeros for it and every ROI after it,
reading the others' negative batch as an index); a batch_id of N or more, or NaN, is refused
(`index-range`: the reference reads out of bounds). The spec's constraints are checked: C is
output_dim * group_size^2 (`psroi-channels`; OpenVINO does not check it and reads past the data
when C is smaller), the offsets are [R, 2 * classes, part_size, part_size] with output_dim a
multiple of classes (`offsets-shape`). A feature map of height or width 0 gives zeros.

Coordinates are computed in f32 whatever the data type, as the reference computes them (with
spatial_scale and trans_std f32); offsets times trans_std and the blends are in f32 for f16,
bf16 and the 8-bit floats (the reference computes them in the data type; rounded once at the
end) and in f64 for f64. ROIs are taken in groups, every bin, channel and sample point of a
group gathered at once.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.limits import check_allocation
from irscatter.ops.base import Lower, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register
from irscatter.ops.roi.psroi_pooling import (
    PositionSensitiveAttrs,
    PositionSensitivePooling,
    batch_ids,
    blend,
    check_data_and_rois,
    check_positive,
    check_scale,
    chunks,
    round_half_away,
)


class DeformablePSROIPoolingAttrs(PositionSensitiveAttrs):
    mode: Annotated[Literal["bilinear_deformable"], Lower] = "bilinear_deformable"
    spatial_bins_x: int = 1
    spatial_bins_y: int = 1
    trans_std: float = 1.0
    part_size: int = 1


@register("DeformablePSROIPooling", 1)
class DeformablePSROIPooling(PositionSensitivePooling):
    labels = {
        "offsets-shape": "the offsets are not [NUM_ROIS, 2 * classes, part_size, part_size] with output_dim a "
                         "multiple of classes",
    }

    Attrs = DeformablePSROIPoolingAttrs
    attrs: DeformablePSROIPoolingAttrs
    inputs = ("data", "rois", "offsets")
    optional_inputs = 1

    def infer(self, data: TensorInfo, rois: TensorInfo, offsets: TensorInfo | None = None) -> TensorInfo:
        a = self.attrs
        check_positive(self, "output_dim", "group_size", "spatial_bins_x", "spatial_bins_y", "part_size")
        check_scale(self)
        etype = same_element_type(data, rois, "data and rois must share one element type", "same-element-type",
                                  self.port("rois"))
        shape = check_data_and_rois(self, data, rois, a.output_dim * a.group_size ** 2)
        if offsets is not None:
            check_float(self, offsets.etype, "offsets")
            same_element_type(TensorInfo(etype, data.shape), offsets, "offsets must have the element type of data",
                              "same-element-type", self.port("offsets"))
            self._check_offsets(offsets.shape.dims if offsets.shape.rank_is_static else None,
                                rois.shape[0] if rois.shape.rank_is_static else None)
        return TensorInfo(etype, shape)

    def _check_offsets(self, dims, count) -> None:
        if dims is None:
            return
        a = self.attrs
        message = (f"offsets must be [NUM_ROIS, 2 * classes, {a.part_size}, {a.part_size}] with output_dim "
                   f"({a.output_dim}) a multiple of classes, found {list(map(str, dims))}")
        check(len(dims) == 4, "offsets-shape", message, port=self.port("offsets"))
        check(dims[2].contains(a.part_size) and dims[3].contains(a.part_size), "offsets-shape", message,
              port=self.port("offsets"))
        if count is not None:
            check(dims[0].compatible(count), "offsets-shape", message, port=self.port("offsets"))
        if dims[1].is_static:
            pairs = int(dims[1])
            check(pairs >= 2 and pairs % 2 == 0 and a.output_dim % (pairs // 2) == 0, "offsets-shape", message,
                  port=self.port("offsets"))

    def compute(self, data: np.ndarray, rois: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
        a = self.attrs
        etype = ElementType.from_dtype(data.dtype)
        work = compute_dtype(etype)
        count, _, height, width = data.shape
        group = a.group_size
        shape = (rois.shape[0], a.output_dim, group, group)
        check_allocation(shape, data.dtype.itemsize)
        batch = batch_ids(self, rois, count)
        out = np.zeros(shape, work)
        live = np.flatnonzero(batch >= 0)
        if live.size and height and width:
            shift = None
            if offsets is not None and offsets.size:
                shift = self._shifts(offsets[live].astype(work, copy=False))
            out[live] = self._pool(np.ascontiguousarray(data, dtype=work), batch[live], rois[live, 1:].astype(np.float32),
                                   shift)
        return from_compute(out, etype)

    def _shifts(self, offsets: np.ndarray) -> np.ndarray:
        """[r, 2 (x, y), O, G, G]: each output bin's offset times trans_std, as f32."""
        a = self.attrs
        group, part = a.group_size, a.part_size
        classes = offsets.shape[1] // 2
        kind = np.arange(a.output_dim) // (a.output_dim // classes)  # the class of each output channel
        cell = np.arange(group) * part // group
        picked = offsets[:, (2 * kind)[None, :] + np.arange(2)[:, None]]  # [r, 2, O, part, part]
        picked = picked[:, :, :, cell[:, None], cell[None, :]]  # [r, 2, O, G, G]
        with np.errstate(invalid="ignore", over="ignore"):
            return (picked * offsets.dtype.type(np.float32(a.trans_std))).astype(np.float32)

    def _pool(self, data: np.ndarray, batch: np.ndarray, box: np.ndarray, shift: np.ndarray | None) -> np.ndarray:
        a = self.attrs
        _, channels, height, width = data.shape
        group, scale = a.group_size, check_scale(self)
        f32 = np.float32
        bx, by = a.spatial_bins_x, a.spatial_bins_y
        corners = round_half_away(box)
        with np.errstate(invalid="ignore", over="ignore"):
            start = corners[:, :2] * scale - f32(0.5)  # x, y
            end = (corners[:, 2:] + f32(1)) * scale - f32(0.5)
            size = np.maximum(end - start, f32(0.1))  # NaN stays NaN, as std::max(NaN, 0.1) keeps it
            bin_size = size / f32(group)
            sub_size = bin_size / np.array([bx, by], f32)
        rois = box.shape[0]
        out = np.empty((rois, a.output_dim, group, group), data.dtype)
        channel = (np.arange(a.output_dim)[:, None, None] * group + np.arange(group)[:, None]) * group \
            + np.arange(group)  # [O, G(i), G(j)]
        k = np.arange(group, dtype=f32)
        for lo, hi in chunks(rois, a.output_dim * group * group * bx * by):
            with np.errstate(invalid="ignore", over="ignore"):
                # bin starts [r, O, G(i), G(j)] along x and y
                x0 = np.broadcast_to((start[lo:hi, 0, None] + k * bin_size[lo:hi, 0, None])[:, None, None, :],
                                     (hi - lo, a.output_dim, group, group))
                y0 = np.broadcast_to((start[lo:hi, 1, None] + k * bin_size[lo:hi, 1, None])[:, None, :, None],
                                     (hi - lo, a.output_dim, group, group))
                if shift is not None:
                    x0 = x0 + shift[lo:hi, 0] * size[lo:hi, 0, None, None, None]
                    y0 = y0 + shift[lo:hi, 1] * size[lo:hi, 1, None, None, None]
                px = x0[..., None, None] + (np.arange(bx, dtype=f32) * sub_size[lo:hi, 0, None])[:, None, None, None,
                                                                                                   None, :]
                py = y0[..., None, None] + (np.arange(by, dtype=f32) * sub_size[lo:hi, 1, None])[:, None, None, None,
                                                                                                   :, None]
            ok = (px >= -0.5) & (px <= width - 0.5) & (py >= -0.5) & (py <= height - 0.5)  # [r, O, G, G, by, bx]
            sx = np.clip(np.where(ok, px, 0), f32(0), f32(width - 1))
            sy = np.clip(np.where(ok, py, 0), f32(0), f32(height - 1))
            left, top = np.floor(sx), np.floor(sy)
            base = (batch[lo:hi, None, None, None, None, None] * channels + channel[None, :, :, :, None, None]) \
                * (height * width)
            value = blend(data.reshape(-1), base, width, left.astype(np.int64), np.ceil(sx).astype(np.int64),
                          top.astype(np.int64), np.ceil(sy).astype(np.int64), sx - left, sy - top)
            taken = ok.sum(axis=(-2, -1))
            with np.errstate(invalid="ignore", over="ignore"):
                total = np.where(ok, value, 0).sum(axis=(-2, -1))
                out[lo:hi] = np.where(taken > 0, total / np.maximum(taken, 1).astype(data.dtype), 0)
        return out
