"""Oracles of the resampling family: Interpolate-1/-4/-11 and GridSample-9, one output element
per Python step, written after the spec's own Python (Interpolate-4's page) and OpenVINO's
reference where the spec is silent (Pillow modes, Interpolate-1, GridSample's padding).

Coordinates are computed with numpy f32 scalars in the reference's order, so that every floor,
round and clamp falls where OpenVINO's does; the sums are taken jointly over all resized axes
(not one axis at a time as the kernel does), in f64.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

F = np.float32
INT_TYPES = (np.int8, np.uint8, np.int32, np.int64)


def _coordinate(mode, x_resized, scale, length_resized, length_original):
    """The spec's GetOriginalCoordinate, with the identity of an axis that keeps its size."""
    x, s = F(x_resized), F(scale)
    if s == F(1) or length_resized == length_original:
        return x
    if mode == "half_pixel":
        return (x + F(0.5)) / s - F(0.5)
    if mode == "pytorch_half_pixel":
        return (x + F(0.5)) / s - F(0.5) if length_resized > 1 else F(0)
    if mode == "asymmetric":
        return x / s
    if mode == "tf_half_pixel_for_nn":
        return (x + F(0.5)) / s
    return F(0) if length_resized == 1 else x * F(length_original - 1) / F(length_resized - 1)


def _c_round(v):
    v = float(v)
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def _nearest(mode, x, downsample):
    if mode == "round_prefer_floor":
        return math.floor(x) if x == F(math.trunc(float(x))) + F(0.5) else _c_round(x)
    if mode == "round_prefer_ceil":
        return _c_round(x)
    if mode == "floor":
        return math.floor(x)
    if mode == "ceil":
        return math.ceil(x)
    return math.ceil(x) if downsample else math.trunc(float(x))


def _cubic_coeffs(s, a):
    s, a = abs(F(s)), F(a)
    return [((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a,
            ((a + 2) * s - (a + 3)) * s * s + 1,
            ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1,
            ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a]


def _output_shape(padded_shape, axes, target, use_scales):
    out = list(padded_shape)
    for i, a in enumerate(axes):
        out[a] = math.floor(float(target[i]) * padded_shape[a]) if use_scales else int(target[i])
    return out


def _to_type(value, dtype, how):
    if not _is_int(dtype):
        return value
    info = np.iinfo(dtype)
    if math.isnan(value):
        return 0
    r = _c_round(value) if how == "round" else math.trunc(value) if math.isfinite(value) else value
    return min(max(r, info.min), info.max)


def interpolate(data, axes, target, **attrs):
    """Interpolate-4/-11 (and -1, mapped onto them by the caller) element by element; NaN and
    infinities propagate through the sums as IEEE arithmetic says, without warnings."""
    with np.errstate(all="ignore"):
        return _interpolate(data, axes, target, **attrs)


def _interpolate(data, axes, target, *, mode, shape_calculation_mode, coordinate_transformation_mode="half_pixel",
                nearest_mode="round_prefer_floor", antialias=False, pads_begin=(0,), pads_end=(0,),
                cube_coeff=-0.75, keep_unpadded=False):
    rank = data.ndim
    begin = (list(pads_begin) + [0] * rank)[:rank]
    end = (list(pads_end) + [0] * rank)[:rank]
    padded = np.pad(data.astype(np.float64), list(zip(begin, end))) if rank else data.astype(np.float64)
    axes = list(range(rank)) if axes is None else [int(a) for a in axes]
    use_scales = shape_calculation_mode == "scales"
    out_shape = _output_shape(padded.shape, axes, target, use_scales)
    if keep_unpadded:
        for d in range(rank):
            if d not in axes:
                out_shape[d] = data.shape[d]
    if use_scales:
        scales = [F(v) for v in target]
    else:
        scales = [F(out_shape[a]) / F(padded.shape[a]) if padded.shape[a] else F(0) for a in axes]
    result = np.zeros(out_shape, np.float64)
    magnitude = np.zeros(out_shape, np.float64)  # the sum of |weight * value|: see _settle
    how = "round" if mode == "linear" else "trunc"
    if mode in ("bilinear_pillow", "bicubic_pillow"):
        return _pillow(padded, axes, out_shape, mode, cube_coeff, data.dtype)
    downsample = any(s < 1 for s in scales)
    for out in itertools.product(*(range(n) for n in out_shape)):
        coords = {a: _coordinate(coordinate_transformation_mode, out[a], scales[i], out_shape[a], padded.shape[a])
                  for i, a in enumerate(axes)}
        if mode == "nearest":
            src = list(out)
            for i, a in enumerate(axes):
                n = _nearest(nearest_mode, coords[a], scales[i] < 1)
                src[a] = min(max(n, 0), padded.shape[a] - 1)
            result[out] = padded[tuple(src)]
            continue
        if mode == "cubic":
            total = 0.0
            bases = {a: math.floor(coords[a]) for a in axes}
            coeffs = {a: _cubic_coeffs(coords[a] - F(bases[a]), cube_coeff) for a in axes}
            for taps in itertools.product(range(4), repeat=len(axes)):
                src, w = list(out), 1.0
                for t, a in zip(taps, axes):
                    src[a] = min(max(bases[a] + t - 1, 0), padded.shape[a] - 1)
                    w *= float(coeffs[a][t])
                total += w * padded[tuple(src)]
                magnitude[out] += abs(w * padded[tuple(src)])
            result[out] = total
            continue
        if mode == "linear_onnx":
            total = 0.0
            ends = {}
            for a in axes:
                c = min(max(coords[a], F(0)), F(padded.shape[a] - 1))
                i1 = min(int(c), padded.shape[a] - 1)
                i2 = min(i1 + 1, padded.shape[a] - 1)
                d1, d2 = abs(c - F(i1)), abs(c - F(i2))
                if i1 == i2:
                    d1 = d2 = F(0.5)
                ends[a] = ((i1, float(d2)), (i2, float(d1)))
            for taps in itertools.product(range(2), repeat=len(axes)):
                src, w = list(out), 1.0
                for t, a in zip(taps, axes):
                    src[a], wt = ends[a][t]
                    w *= wt
                total += w * padded[tuple(src)]
                magnitude[out] += abs(w * padded[tuple(src)])
            result[out] = total
            continue
        # linear: the spec's triangle filter over 2r+1 taps per axis, normalised by the weight sum
        aa = {a: (scales[i] if (antialias and downsample) else F(1)) for i, a in enumerate(axes)}
        rr = {a: 2 if scales[i] > 1 else int(math.ceil(F(2) / aa[a])) for i, a in enumerate(axes)}
        summa = wsum = 0.0
        for taps in itertools.product(*(range(2 * rr[a] + 1) for a in axes)):
            src, w = list(out), 1.0
            inside = True
            for t, a in zip(taps, axes):
                src[a] = t + _c_round(coords[a]) - rr[a]
                inside = inside and 0 <= src[a] < padded.shape[a]
            if not inside:
                continue
            for a in axes:
                w *= float(aa[a] * max(F(0), F(1) - abs(aa[a] * (coords[a] - F(src[a])))))
            summa += w * padded[tuple(src)]
            magnitude[out] += abs(w * padded[tuple(src)])
            wsum += w
        result[out] = 0.0 if wsum == 0 else summa / wsum
        magnitude[out] = 0.0 if wsum == 0 else magnitude[out] / wsum
    return _cast(_settle(result, magnitude) if _is_int(data.dtype) else result, data.dtype, how)


def _settle(result, magnitude):
    """An integer result is rounded or cut where its exact value is a whole number or a half, so
    a sum that lies within the f32 weights' rounding error of one (4 f32 ulps of the sum of
    |weight * value|) is taken to be it: 187 * 1/3 + 112 * 2/3 is 137, not 136."""
    out = result.copy()
    for index in np.ndindex(result.shape):
        half = round(result[index] * 2) / 2 if math.isfinite(result[index]) else result[index]
        if abs(result[index] - half) <= 4 * float(np.finfo(F).eps) * magnitude[index]:
            out[index] = half
    return out


def _is_int(dtype):
    return np.issubdtype(np.dtype(dtype), np.integer)


def _cast(result, dtype, how):
    if not _is_int(dtype):
        return result.astype(np.float64 if dtype == np.float64 else np.float32).astype(dtype)
    flat = [_to_type(float(v), dtype, how) for v in result.reshape(-1)]
    return np.array(flat, dtype=dtype).reshape(result.shape)


def _pillow_filter(mode, x, a):
    x = abs(x)
    if mode == "bilinear_pillow":
        return 1.0 - x if x < 1.0 else 0.0
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def _pillow_pass(x, axis, out_len, mode, a, dtype):
    in_len = x.shape[axis]
    scale = in_len / out_len
    filterscale = max(scale, 1.0)
    support = (1.0 if mode == "bilinear_pillow" else 2.0) * filterscale
    shape = list(x.shape)
    shape[axis] = out_len
    out = np.zeros(shape, np.float64)
    for pos in itertools.product(*(range(n) for n in shape)):
        o = pos[axis]
        centre = (o + 0.5) * scale
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), in_len)
        ws = [_pillow_filter(mode, (i - centre + 0.5) / filterscale, a) for i in range(lo, hi)]
        total = sum(ws)
        ss = 0.0
        for i, w in zip(range(lo, hi), ws):
            src = list(pos)
            src[axis] = i
            ss += x[tuple(src)] * (w / total if total != 0 else w)
        if not _is_int(dtype):
            out[pos] = float(np.float64(ss).astype(np.float64 if dtype == np.float64 else np.float32))
        else:
            out[pos] = _to_type(ss, dtype, "round")
    return out


def _pillow(padded, axes, out_shape, mode, a, dtype):
    x = padded
    for axis in (axes[1], axes[0]):
        if x.shape[axis] != out_shape[axis]:
            x = _pillow_pass(x, axis, out_shape[axis], mode, a, dtype)
    return np.array(x).astype(np.float32 if not _is_int(dtype) and dtype != np.float64 else x.dtype).astype(dtype)


def interpolate1(data, target, *, axes, mode, align_corners=True, antialias=False, pads_begin=(0,), pads_end=(0,)):
    """Interpolate-1 as OpenVINO converts it to Interpolate-4."""
    rank = data.ndim
    if mode == "linear":
        mode = "linear_onnx" if rank < 5 else "linear"
    ctm = "asymmetric"
    if align_corners:
        ctm = "align_corners"
    elif mode in ("linear", "linear_onnx") and not any(pads_begin) and not any(pads_end) \
            and not (rank == 4 and sorted(axes) == [2, 3]):
        ctm = "half_pixel"
    return interpolate(data, axes, target, mode=mode, shape_calculation_mode="sizes",
                       coordinate_transformation_mode=ctm, nearest_mode="simple", antialias=antialias,
                       pads_begin=pads_begin, pads_end=pads_end, keep_unpadded=True)


# --- GridSample-9 -------------------------------------------------------------------------------


def _reflect(i, n, align):
    if align:
        period = 1 if n == 1 else 2 * (n - 1)
        i = abs(i) % period
        return period - i if i >= n else i
    period = 2 * n
    i = (i % period + period) % period
    return period - 1 - i if i >= n else i


def grid_sample(data, grid, *, align_corners=False, mode="bilinear", padding_mode="zeros"):
    N, C, H, W = data.shape
    _, Ho, Wo, _ = grid.shape
    out = np.zeros((N, C, Ho, Wo), np.float64)
    g = grid.astype(np.float32)

    def denorm(v, size):
        v = F(v)
        if align_corners:
            return (v + F(1)) * (F(size) - F(1)) / F(2)
        return ((v + F(1)) * F(size) - F(1)) / F(2)

    def pixel(n, c, y, x):
        if padding_mode == "zeros":
            return 0.0 if (y < 0 or x < 0 or y >= H or x >= W) else float(data[n, c, y, x])
        if padding_mode == "border":
            return float(data[n, c, min(max(y, 0), H - 1), min(max(x, 0), W - 1)])
        return float(data[n, c, _reflect(y, H, align_corners), _reflect(x, W, align_corners)])

    for n, c, i, j in itertools.product(range(N), range(C), range(Ho), range(Wo)):
        yd, xd = denorm(g[n, i, j, 1], H), denorm(g[n, i, j, 0], W)
        if not (math.isfinite(yd) and math.isfinite(xd)):
            out[n, c, i, j] = math.nan
            continue
        if mode == "nearest":
            out[n, c, i, j] = pixel(n, c, int(np.rint(yd)), int(np.rint(xd)))
            continue
        y0, x0 = math.floor(yd), math.floor(xd)
        dy, dx = float(yd - F(y0)), float(xd - F(x0))
        if mode == "bilinear":
            q0 = (1 - dx) * pixel(n, c, y0, x0) + dx * pixel(n, c, y0, x0 + 1)
            q1 = (1 - dx) * pixel(n, c, y0 + 1, x0) + dx * pixel(n, c, y0 + 1, x0 + 1)
            out[n, c, i, j] = dy * q1 + (1 - dy) * q0
            continue
        cy, cx = _cubic_coeffs(dy, -0.75), _cubic_coeffs(dx, -0.75)
        total = 0.0
        for p in range(4):
            row = sum(float(cx[q]) * pixel(n, c, y0 - 1 + p, x0 - 1 + q) for q in range(4))
            total += float(cy[p]) * row
        out[n, c, i, j] = total
    if data.dtype.kind in "iu":
        info = np.iinfo(data.dtype)
        flat = [0 if math.isnan(v) else min(max(math.trunc(v), info.min), info.max) for v in out.reshape(-1)]
        return np.array(flat, data.dtype).reshape(out.shape)
    return out.astype(data.dtype)
