"""ROIAlign-3 and ROIAlign-9: average or max pooling of bilinear samples over regions of interest.

data [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] give [R, C, pooled_h, pooled_w].
A box scaled to the feature map (`spatial_scale`) is cut into pooled_h x pooled_w bins; each bin
holds a regular grid of sampling points, `sampling_ratio` per axis, or with 0 `ceil(bin size)`
per axis, ROI by ROI. Point (iy, ix) of bin (py, px) lies at
`y1 + py * bin_h + (bin_h / count_y) * (iy + 0.5)` (and the same along x), and its value is the
bilinear blend of the four pixels around it.

The sampler (`bilinear_samples`, which ROIAlignRotated shares) treats points as OpenVINO's core
reference does:
  * a point beyond [-1, W] x [-1, H] has weight 0 on pixel (0, 0) for all four corners, so it
    adds `0 * data[b, c, 0, 0]` (0, or NaN when that pixel is NaN or infinite, as in OpenVINO);
  * a point inside that band is clamped to >= 0; from the last row or column on it reads that
    row or column alone;
  * the blend is `w00 * p00 + w01 * p01 + w10 * p10 + w11 * p11`, summed in that order.

The bin's value is the mean of its points (each point divided by the count, then summed) for
`avg`. For `max` it is OpenVINO's definition, which is not the plain maximum the spec's one word
suggests: the running maximum starts at 0 and takes a point only when it is greater, so a bin
of negative samples gives 0 and a NaN sample is never taken (the CPU plugin gives 0 for negative
bins too; it lets a NaN through, the reference does not; irscatter follows the reference).

ROIAlign-3 (and -9's `asymmetric`) widen a box narrower than 1 to 1 (the spec's
`max(spatial_scale * (x2 - x1), 1.0)`); -9's `half_pixel_for_nn` maps a coordinate to
`x * spatial_scale - 0.5` and `half_pixel` to `(x + 0.5) * spatial_scale - 0.5`, and keep a
box's size as it is, so a zero-sized or reversed box is possible there.

Choices where the spec says nothing and OpenVINO's reference is undefined or refuses:
  * an adaptive count below 0 (a reversed box with an aligned mode) counts as 0 points, as the
    CPU plugin does (the reference asserts); a bin of 0 points is 0 (the reference; the CPU
    plugin gives NaN for a zero-sized box);
  * an adaptive count that is NaN, infinite or above 2^31 - 1 (the reference's int) is refused
    (`roi-sampling-count`; the CPU plugin refuses NaN too);
  * a point with a NaN coordinate is NaN (the CPU plugin's answer; the reference converts NaN
    to an integer, which is undefined);
  * a feature map of height or width 0 gives 0 (the reference and the CPU plugin read past it);
  * a batch index outside [0, N) is refused (`index-range`), as the CPU plugin does.

Coordinates and sums are computed in the data's type, f32 for f16, bf16 and the 8-bit floats
(rounded once at the end), f64 for f64; `spatial_scale` is an f32 attribute, as in OpenVINO.
All sampling points of a group of ROIs are gathered at once into one flat table ([points, C],
ROIs taken in groups that keep the table near 2^21 values), each bin a contiguous segment of
it, reduced with `reduceat`. Sums are pairwise there, not sequential: a few ulps from OpenVINO.
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
from irscatter.ops.common.ranges import Bounds, extent, indices_within
from irscatter.ops.common.types import check_float, check_integral, same_element_type
from irscatter.ops.registry import register

_CHUNK = 2**21  # sample values (points x channels) gathered at once
_INT_MAX = 2**31 - 1


def merged_dim(a: Dimension, b: Dimension) -> Dimension:
    """One dimension known from two compatible ones (the narrower interval)."""
    lo = max(a.min, b.min)
    hi = b.max if a.max is None else a.max if b.max is None else min(a.max, b.max)
    return Dimension(min=lo, max=hi)


class PooledAttrs(OpAttrs):
    """The output grid and the scale of the boxes, which every ROI pooling of this module reads."""

    pooled_h: int
    pooled_w: int
    spatial_scale: float


class SampledAttrs(PooledAttrs):
    """The ROIAlign family's: PooledAttrs and the sampling points per bin."""

    sampling_ratio: int


def check_attributes_positive(op: Op, pooled_h: int, pooled_w: int, spatial_scale: float, *,
                              allow_zero_pooled: bool = False) -> None:
    """pooled_h, pooled_w (>= 1, or >= 0) and a positive, finite spatial_scale."""
    low = 0 if allow_zero_pooled else 1
    for name, value in (("pooled_h", pooled_h), ("pooled_w", pooled_w)):
        check(value >= low, "pooled-size", f"{name} must be {'>= 0' if low == 0 else 'positive'}, found {value}",
              port=op.port(name))
    with np.errstate(over="ignore"):
        held = np.float32(spatial_scale)  # OpenVINO holds the attribute as an f32
    check(np.isfinite(held) and held > 0, "spatial-scale",
          f"spatial_scale must be a positive finite f32 number, found {spatial_scale}", port=op.port("spatial_scale"))


def check_data_and_rois(op: Op, data: TensorInfo, rois: TensorInfo, box: int) -> ElementType:
    """data: a 4-D float tensor; rois: [R, box] of the same type. Returns the element type."""
    check_float(op, data.etype, "data")
    etype = same_element_type(data, rois, "data and rois must share one element type", "same-element-type",
                              op.port("rois"))
    check_float(op, rois.etype, "rois")
    if data.shape.rank_is_static:
        check(data.shape.rank == 4, "data-rank", f"data must be 4-D [N, C, H, W], found {data.shape}",
              port=op.port("data"))
    if rois.shape.rank_is_static:
        check(rois.shape.rank == 2 and rois.shape[1].contains(box), "rois-shape",
              f"rois must be a 2-D tensor [NUM_ROIS, {box}], found {rois.shape}", port=op.port("rois"))
    return etype


def output_shape(pooled: PooledAttrs, data: TensorInfo, rois_count: Dimension, etype: ElementType) -> PartialShape:
    channels = data.shape[1] if data.shape.rank_is_static else Dimension.dynamic()
    shape = PartialShape.of([rois_count, channels, pooled.pooled_h, pooled.pooled_w])
    if shape.is_static:
        check_inferred(shape.to_tuple(), etype.dtype.itemsize, "output 0")
    return shape


def as_work_scale(spatial_scale: float, work: np.dtype) -> np.generic:
    """The attribute as OpenVINO holds it (an f32), in the compute type."""
    return work.type(np.float32(spatial_scale))


def check_batch(batch: np.ndarray, count: int, port: str) -> np.ndarray:
    """Batch indices (any integer type) as int64, each in [0, count)."""
    b = batch.astype(np.int64)
    if batch.dtype == np.uint64:
        b = np.where(batch > np.uint64(_INT_MAX), -1, b)
    bad = (b < 0) | (b >= count)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ExecutionError(f"batch index {batch.reshape(-1)[k]} of ROI {k} lies outside [0, {count - 1}]",
                             port=port, label="index-range")
    return b


def bilinear_samples(data_nhwc: np.ndarray, batch: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """[S, C]: the bilinear value at each point (y[s], x[s]) of image batch[s] of `data_nhwc`
    [N, H, W, C], with OpenVINO's ROIAlign rules for points near or beyond the border (see
    the module's docstring)."""
    _, H, W, C = data_nhwc.shape
    work = data_nhwc.dtype
    if H == 0 or W == 0:
        return np.zeros((y.shape[0], C), work)
    nan = np.isnan(y) | np.isnan(x)
    outside = (x < -1) | (x > W) | (y < -1) | (y > H)
    skip = nan | outside
    zero = work.type(0)

    def corners(v: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        v = np.where(skip, zero, np.maximum(v, zero))
        low = v.astype(np.int64)
        last = low >= size - 1
        low = np.where(last, size - 1, low)
        high = np.where(last | skip, low, low + 1)
        v = np.where(last, low.astype(work), v)
        return v - low.astype(work), np.where(skip, 0, low), high

    ly, y0, y1 = corners(y, H)
    lx, x0, x1 = corners(x, W)
    one = work.type(1)
    hy, hx = one - ly, one - lx
    weights = [hy * hx, hy * lx, ly * hx, ly * lx]
    weights = [np.where(outside, zero, w)[:, None] for w in weights]
    with np.errstate(invalid="ignore", over="ignore"):
        value = (weights[0] * data_nhwc[batch, y0, x0] + weights[1] * data_nhwc[batch, y0, x1]
                 + weights[2] * data_nhwc[batch, y1, x0] + weights[3] * data_nhwc[batch, y1, x1])
    if nan.any():
        value[nan] = np.nan
    return value


def adaptive_counts(bin_size: np.ndarray, port: str) -> np.ndarray:
    """ceil(bin size) per ROI as int64; below 0 counts as 0; NaN, inf and past int are refused."""
    with np.errstate(invalid="ignore"):
        c = np.ceil(bin_size.astype(np.float64))
        bad = ~np.isfinite(c) | (c > _INT_MAX)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ExecutionError(f"ROI {k}'s adaptive number of sampling points, ceil({bin_size[k]}), is not a count "
                             f"(sampling_ratio 0 takes ceil(bin size) points per axis)", port=port,
                             label="roi-sampling-count")
    return np.maximum(c, 0).astype(np.int64)


def pool_samples(data: np.ndarray, batch: np.ndarray, x1: np.ndarray, y1: np.ndarray, width: np.ndarray,
                 height: np.ndarray, pooled: tuple[int, int], sampling_ratio: int, mode: str, *,
                 rotation: tuple[np.ndarray, ...] | None = None, port: str = "input 1") -> np.ndarray:
    """[R, C, pooled_h, pooled_w]: ROIAlign's bins over boxes starting at (x1, y1) of the given
    width and height (one value per ROI, in the compute type). `rotation` = (center_x, center_y,
    cos, sin) turns each point about the box's centre into the image (ROIAlignRotated)."""
    work = data.dtype
    R, C = batch.shape[0], data.shape[1]
    ph, pw = pooled
    P = ph * pw
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        bin_w, bin_h = width / work.type(pw), height / work.type(ph)
    if sampling_ratio == 0:
        nx, ny = adaptive_counts(bin_w, port), adaptive_counts(bin_h, port)
    else:
        nx = ny = np.full(R, sampling_ratio, np.int64)
    out = np.zeros((R, P, C), work)
    if R == 0 or C == 0:
        return out.reshape(R, ph, pw, C).transpose(0, 3, 1, 2)
    # the largest table of one ROI's points, in Python integers (no overflow before the check)
    check_allocation((P, int(ny.max()), int(nx.max()), C), work.itemsize, port="output 0")
    count = nx * ny
    per_roi = count * P
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        step_x = bin_w / nx.astype(work)
        step_y = bin_h / ny.astype(work)
    data_nhwc = np.ascontiguousarray(data.transpose(0, 2, 3, 1))
    half = work.type(0.5)
    start = 0
    while start < R:
        # ROIs [start, stop): as many as keep the table near _CHUNK values, at least one
        cum = np.cumsum(per_roi[start:] * C)
        stop = start + max(1, int(np.searchsorted(cum, _CHUNK, side="right")))
        rois = np.arange(start, stop)
        n = per_roi[start:stop]
        total = int(n.sum())
        if total:
            offsets = np.concatenate([[0], np.cumsum(n)[:-1]])
            roi = np.repeat(rois, n)
            local = np.arange(total, dtype=np.int64) - np.repeat(offsets, n)
            cnt = count[roi]
            bin_index, k = np.divmod(local, cnt)
            py, px = np.divmod(bin_index, pw)
            iy, ix = np.divmod(k, nx[roi])
            with np.errstate(invalid="ignore", over="ignore"):
                y = y1[roi] + py.astype(work) * bin_h[roi] + step_y[roi] * (iy.astype(work) + half)
                x = x1[roi] + px.astype(work) * bin_w[roi] + step_x[roi] * (ix.astype(work) + half)
                if rotation is not None:
                    cx, cy, cos, sin = (r[roi] for r in rotation)
                    y, x = y * cos - x * sin + cy, y * sin + x * cos + cx
                    if work == np.float64:  # the reference holds the turned point in an f32
                        y, x = y.astype(np.float32).astype(work), x.astype(np.float32).astype(work)
            values = bilinear_samples(data_nhwc, batch[roi], y, x)
            filled = count[start:stop] > 0
            firsts = (offsets[filled, None] + np.arange(P) * count[start:stop][filled, None]).reshape(-1)
            with np.errstate(invalid="ignore", over="ignore"):
                if mode == "avg":
                    pooled_values = np.add.reduceat(values / cnt.astype(work)[:, None], firsts, axis=0)
                else:
                    best = np.fmax.reduceat(values, firsts, axis=0)
                    pooled_values = np.where(best > 0, best, work.type(0))
            out[rois[filled]] = pooled_values.reshape(-1, P, C)
        start = stop
    return out.reshape(R, ph, pw, C).transpose(0, 3, 1, 2)


class ROIAlignBase(Op):
    """What ROIAlign-3, -9 and ROIAlignRotated-15 share: inputs, inference, the sampling and
    the pooling. A subclass gives its box width (`box`) and its boxes (`boxes`)."""

    labels = {
        "batch-indices-shape": "batch_indices is not a 1-D tensor as long as rois has rows",
        "sampling-ratio": "sampling_ratio is negative",
        "roi-sampling-count": "sampling_ratio 0 asks for a number of sampling points per bin that is NaN, "
                              "infinite or past 2^31 - 1 (a box of NaN or huge coordinates)",
    }

    Attrs: ClassVar[type[SampledAttrs]] = SampledAttrs
    attrs: SampledAttrs
    inputs = ("data", "rois", "batch_indices")
    box = 4

    def input_range(self, position: int, infos) -> Bounds | None:
        return indices_within(extent(infos[0], 0)) if position == 2 else None  # images of the batch

    def infer(self, data: TensorInfo, rois: TensorInfo, batch_indices: TensorInfo) -> TensorInfo:
        etype = check_data_and_rois(self, data, rois, self.box)
        check_integral(batch_indices, "batch_indices", self.port("batch_indices"), "indices-type")
        a = self.attrs
        check_attributes_positive(self, a.pooled_h, a.pooled_w, a.spatial_scale)
        check(a.sampling_ratio >= 0, "sampling-ratio", f"sampling_ratio must be >= 0, found {a.sampling_ratio}",
              port=self.port("sampling_ratio"))
        count = rois.shape[0] if rois.shape.rank_is_static else Dimension.dynamic()
        if batch_indices.shape.rank_is_static:
            check(batch_indices.shape.rank == 1 and batch_indices.shape[0].compatible(count), "batch-indices-shape",
                  f"batch_indices must be 1-D with one index per ROI ({count}), found {batch_indices.shape}",
                  port=self.port("batch_indices"))
            count = merged_dim(count, batch_indices.shape[0])
        return TensorInfo(etype, output_shape(self.attrs, data, count, etype))

    def boxes(self, rois: np.ndarray) -> tuple[np.ndarray, ...]:
        """(x1, y1, width, height[, rotation]) per ROI, in the compute type."""
        raise NotImplementedError

    def mode(self) -> str:
        """How a bin pools its samples: the attribute `mode`; ROIAlignRotated, which has none, averages."""
        return self.attrs.mode if isinstance(self.attrs, ROIAlign3Attrs) else "avg"

    def compute(self, data: np.ndarray, rois: np.ndarray, batch_indices: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        work = compute_dtype(etype)
        a = self.attrs
        R = rois.shape[0]
        if batch_indices.shape != (R,) or rois.shape[1:] != (self.box,):
            raise ExecutionError(f"rois {list(rois.shape)} and batch_indices {list(batch_indices.shape)} do not "
                                 f"describe the same ROIs", port=self.port("batch_indices"),
                                 label="batch-indices-shape")
        check_allocation((R, data.shape[1], a.pooled_h, a.pooled_w), data.dtype.itemsize)
        batch = check_batch(batch_indices, data.shape[0], self.port("batch_indices"))
        x1, y1, width, height, *rotation = self.boxes(rois.astype(work))
        out = pool_samples(data.astype(work, copy=False), batch, x1, y1, width, height, (a.pooled_h, a.pooled_w),
                           a.sampling_ratio, self.mode(), rotation=tuple(rotation) or None,
                           port=self.port("rois"))
        return from_compute(np.ascontiguousarray(out), etype)


def aligned_boxes(spatial_scale: float, rois: np.ndarray, mode: str) -> tuple[np.ndarray, ...]:
    """ROIAlign's boxes under an aligned_mode: the corners mapped to the feature map, and the
    width and height (widened to 1 under `asymmetric` only)."""
    work = rois.dtype
    scale = as_work_scale(spatial_scale, work)
    src = work.type(0.5) if mode == "half_pixel" else work.type(0)
    dst = work.type(-0.5) if mode != "asymmetric" else work.type(0)
    with np.errstate(invalid="ignore", over="ignore"):
        x1, y1, x2, y2 = ((rois[:, k] + src) * scale + dst for k in range(4))
        width, height = x2 - x1, y2 - y1
    if mode == "asymmetric":
        one = work.type(1)
        width = np.where(width < one, one, width)  # NaN stays NaN, as std::max keeps it
        height = np.where(height < one, one, height)
    return x1, y1, width, height


class ROIAlign3Attrs(SampledAttrs):
    mode: Annotated[Literal["avg", "max"], Lower]


class ROIAlign9Attrs(ROIAlign3Attrs):
    aligned_mode: Annotated[Literal["asymmetric", "half_pixel_for_nn", "half_pixel"], Lower] = "asymmetric"


@register("ROIAlign", 3)
class ROIAlign(ROIAlignBase):
    Attrs = ROIAlign3Attrs
    attrs: ROIAlign3Attrs

    def boxes(self, rois: np.ndarray) -> tuple[np.ndarray, ...]:
        return aligned_boxes(self.attrs.spatial_scale, rois, "asymmetric")


@register("ROIAlign", 9)
class ROIAlign9(ROIAlignBase):
    Attrs = ROIAlign9Attrs
    attrs: ROIAlign9Attrs

    def boxes(self, rois: np.ndarray) -> tuple[np.ndarray, ...]:
        return aligned_boxes(self.attrs.spatial_scale, rois, self.attrs.aligned_mode)
