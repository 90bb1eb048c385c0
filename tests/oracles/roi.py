"""Oracles for ROIPooling-2, ROIAlign-3/-9 and ROIAlignRotated-15: one output element, one bin
and one sampling point per Python step, in the order of OpenVINO's reference loops, with its
rounding rules (see the op modules' docstrings for the choices where the spec says nothing).

Arithmetic runs on numpy scalars of the compute type (f32 for the narrow floats, f64 for f64),
so each step rounds as the reference's does; sums are sequential. `spatial_scale` is taken as
an f32, as OpenVINO holds it. The results are returned in the data's type.
"""

from __future__ import annotations

import math

import numpy as np


def _work(dtype: np.dtype) -> type:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _round_half_away(v: float) -> int:
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return int(math.copysign(2**40, v))
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1) if abs(v) < 2**52 else int(v)


def _to_int(v: float) -> int:
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return int(math.copysign(2**40, v))
    return int(v)


def roi_pooling(data, rois, *, pooled_h, pooled_w, spatial_scale, method="max"):
    T = _work(data.dtype)
    N, C, H, W = data.shape
    R = rois.shape[0]
    out = np.zeros((R, C, pooled_h, pooled_w), T)
    scale = T(np.float32(spatial_scale))
    for r in range(R):
        batch = int(float(rois[r, 0]))
        assert 0 <= batch < N
        x1, y1, x2, y2 = (T(rois[r, k]) for k in range(1, 5))
        for c in range(C):
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    if method == "max":
                        ws, hs = _round_half_away(float(x1 * scale)), _round_half_away(float(y1 * scale))
                        we, he = _round_half_away(float(x2 * scale)), _round_half_away(float(y2 * scale))
                        roi_h, roi_w = max(he - hs + 1, 1), max(we - ws + 1, 1)
                        bin_h, bin_w = T(roi_h) / T(pooled_h), T(roi_w) / T(pooled_w)
                        h0 = min(max(_to_int(math.floor(T(ph) * bin_h)) + hs, 0), H)
                        h1 = min(max(_to_int(math.ceil(T(ph + 1) * bin_h)) + hs, 0), H)
                        w0 = min(max(_to_int(math.floor(T(pw) * bin_w)) + ws, 0), W)
                        w1 = min(max(_to_int(math.ceil(T(pw + 1) * bin_w)) + ws, 0), W)
                        if h1 <= h0 or w1 <= w0:
                            out[r, c, ph, pw] = 0
                            continue
                        best = T(-np.inf)
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                v = T(data[batch, c, h, w])
                                if math.isnan(v) or math.isnan(best):
                                    best = T(np.nan)
                                elif v > best:
                                    best = v
                        out[r, c, ph, pw] = best
                    else:
                        out[r, c, ph, pw] = _bilinear_point(data, batch, c, x1, y1, x2, y2, ph, pw,
                                                            pooled_h, pooled_w, T)
    return out.astype(data.dtype)


def _bilinear_point(data, batch, c, x1, y1, x2, y2, ph, pw, pooled_h, pooled_w, T):
    _, _, H, W = data.shape
    if H == 0 or W == 0:
        return T(0)
    with np.errstate(all="ignore"):
        if pooled_h > 1:
            y = T(H - 1) * y2 if ph == pooled_h - 1 else T(ph) * ((y2 - y1) * T(H - 1) / T(pooled_h - 1)) + y1 * T(H - 1)
        else:
            y = T(0.5 * float(y1 + y2) * (H - 1))
        if pooled_w > 1:
            x = T(W - 1) * x2 if pw == pooled_w - 1 else T(pw) * ((x2 - x1) * T(W - 1) / T(pooled_w - 1)) + x1 * T(W - 1)
        else:
            x = T(0.5 * float(x1 + x2) * (W - 1))
        if not (0 <= y <= H - 1 and 0 <= x <= W - 1):
            return T(0)
        top, bottom = math.floor(y), min(math.ceil(y), H - 1)
        left, right = math.floor(x), min(math.ceil(x), W - 1)
        p = lambda h, w: T(data[batch, c, h, w])
        dx, dy = x - T(left), y - T(top)
        upper = p(top, left) + (p(top, right) - p(top, left)) * dx
        lower = p(bottom, left) + (p(bottom, right) - p(bottom, left)) * dx
        return upper + (lower - upper) * dy


def _sample(data, batch, c, y, x, T):
    """One bilinear sample with ROIAlign's border rules."""
    _, _, H, W = data.shape
    if H == 0 or W == 0:
        return T(0)
    if math.isnan(y) or math.isnan(x):
        return T(np.nan)
    if x < -1 or x > W or y < -1 or y > H:
        v = T(data[batch, c, 0, 0])
        with np.errstate(all="ignore"):
            return T(0) * v + T(0) * v + T(0) * v + T(0) * v
    y, x = max(y, T(0)), max(x, T(0))
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yl = yh = H - 1
        y = T(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xl = xh = W - 1
        x = T(xl)
    else:
        xh = xl + 1
    ly, lx = y - T(yl), x - T(xl)
    hy, hx = T(1) - ly, T(1) - lx
    p = lambda h, w: T(data[batch, c, h, w])
    with np.errstate(all="ignore"):
        return hy * hx * p(yl, xl) + hy * lx * p(yl, xh) + ly * hx * p(yh, xl) + ly * lx * p(yh, xh)


def _count(bin_size, sampling_ratio):
    if sampling_ratio > 0:
        return sampling_ratio
    c = math.ceil(float(bin_size))
    return max(c, 0)


def _align(data, batch_indices, boxes, pooled_h, pooled_w, sampling_ratio, mode, T, turn=None):
    N, C = data.shape[:2]
    R = len(boxes)
    out = np.zeros((R, C, pooled_h, pooled_w), T)
    for r in range(R):
        x1, y1, width, height = boxes[r]
        b = int(batch_indices[r])
        assert 0 <= b < N
        with np.errstate(all="ignore"):
            bin_w, bin_h = width / T(pooled_w), height / T(pooled_h)
        nx, ny = _count(bin_w, sampling_ratio), _count(bin_h, sampling_ratio)
        n = nx * ny
        with np.errstate(all="ignore"):
            step_x, step_y = bin_w / T(nx), bin_h / T(ny)
        for c in range(C):
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    pooled = T(0)
                    for iy in range(ny):
                        for ix in range(nx):
                            with np.errstate(all="ignore"):
                                y = y1 + T(ph) * bin_h + step_y * (T(iy) + T(0.5))
                                x = x1 + T(pw) * bin_w + step_x * (T(ix) + T(0.5))
                                if turn is not None:
                                    y, x = turn(r, y, x)
                                v = _sample(data, b, c, y, x, T)
                                if mode == "avg":
                                    pooled = pooled + v / T(n)
                                elif v > pooled:
                                    pooled = v
                    out[r, c, ph, pw] = pooled
    return out.astype(data.dtype)


def roi_align(data, rois, batch_indices, *, pooled_h, pooled_w, sampling_ratio, spatial_scale, mode,
              aligned_mode="asymmetric"):
    T = _work(data.dtype)
    scale = T(np.float32(spatial_scale))
    src = T(0.5) if aligned_mode == "half_pixel" else T(0)
    dst = T(0) if aligned_mode == "asymmetric" else T(-0.5)
    boxes = []
    for r in range(rois.shape[0]):
        with np.errstate(all="ignore"):
            x1, y1, x2, y2 = ((T(rois[r, k]) + src) * scale + dst for k in range(4))
            width, height = x2 - x1, y2 - y1
        if aligned_mode == "asymmetric":
            width = T(1) if width < 1 else width
            height = T(1) if height < 1 else height
        boxes.append((x1, y1, width, height))
    return _align(data, batch_indices, boxes, pooled_h, pooled_w, sampling_ratio, mode, T)


def roi_align_rotated(data, rois, batch_indices, *, pooled_h, pooled_w, sampling_ratio, spatial_scale,
                      clockwise_mode=False):
    T = _work(data.dtype)
    scale = T(np.float32(spatial_scale))
    boxes, turns = [], []
    for r in range(rois.shape[0]):
        with np.errstate(all="ignore"):
            cx, cy = T(rois[r, 0]) * scale - T(0.5), T(rois[r, 1]) * scale - T(0.5)
            width, height = T(rois[r, 2]) * scale, T(rois[r, 3]) * scale
            angle = -T(rois[r, 4]) if clockwise_mode else T(rois[r, 4])
            cos, sin = T(np.float32(np.cos(angle))), T(np.float32(np.sin(angle)))
        boxes.append((-width / T(2), -height / T(2), width, height))
        turns.append((cx, cy, cos, sin))

    def turn(r, y, x):
        cx, cy, cos, sin = turns[r]
        return T(np.float32(y * cos - x * sin + cy)), T(np.float32(y * sin + x * cos + cx))

    return _align(data, batch_indices, boxes, pooled_h, pooled_w, sampling_ratio, "avg", T, turn)
