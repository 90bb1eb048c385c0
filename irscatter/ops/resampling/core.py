"""What the Interpolate versions share: the coordinate transforms, the rounding of the nearest
mode, and one table per resized axis of which input positions (taps) feed each output position
with what weight. A kernel resizes one axis at a time: `np.take` of the taps, a weighted sum over
them. Every mode here is separable, including `linear` with antialias, whose weights are a
product of per-axis triangles normalised by their joint sum (which is the product of the per-axis
sums, since a tap is kept only when it lies inside the input on every axis).

Coordinates are computed in f32 in the order of OpenVINO's reference, so the integer decisions
(floor, rounding at .5, clamping) fall where OpenVINO's do. A tap outside the input points at an
extra zero slab appended to the axis, with weight 0, so that it adds exactly nothing, while a tap
inside the input with weight 0 still multiplies its value (0 * inf is NaN, as in the reference).
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ops.common.padding import pad_constant

F32 = np.float32

COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


def source_coordinates(mode: str, out_len: int, in_len: int, scale: float) -> np.ndarray:
    """The input coordinate (f32) of each output position along one axis. An axis whose scale
    is 1 or whose length does not change maps each position onto itself, whatever the mode (the
    spec's "other dimensions do not change"; OpenVINO's reference does the same)."""
    x = np.arange(out_len, dtype=F32)
    s = F32(scale)
    if s == F32(1) or out_len == in_len:
        return x
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if mode == "half_pixel":
            return (x + F32(0.5)) / s - F32(0.5)
        if mode == "pytorch_half_pixel":
            return (x + F32(0.5)) / s - F32(0.5) if out_len > 1 else np.zeros(out_len, F32)
        if mode == "asymmetric":
            return x / s
        if mode == "tf_half_pixel_for_nn":
            return (x + F32(0.5)) / s
        if out_len == 1:  # align_corners
            return np.zeros(1, F32)
        return x * F32(in_len - 1) / F32(out_len - 1)


def round_half_away(c: np.ndarray) -> np.ndarray:
    """C's round(): halves away from zero (numpy's round goes to even)."""
    c = c.astype(np.float64)
    return np.copysign(np.floor(np.abs(c) + 0.5), c)


def nearest_indices(coords: np.ndarray, mode: str, scale: float, in_len: int) -> np.ndarray:
    c = coords.astype(np.float64)  # exact: every f32 is an f64
    with np.errstate(invalid="ignore"):
        if mode == "round_prefer_floor":
            half = coords == (np.trunc(coords) + F32(0.5))
            pick = np.where(half, np.floor(c), round_half_away(c))
        elif mode == "round_prefer_ceil":
            pick = round_half_away(c)
        elif mode == "floor":
            pick = np.floor(c)
        elif mode == "ceil":
            pick = np.ceil(c)
        else:  # simple: ceil when downsampling, else truncation
            pick = np.ceil(c) if F32(scale) < F32(1) else np.trunc(c)
    pick = np.nan_to_num(pick, nan=0.0, posinf=in_len, neginf=0.0)
    return np.clip(pick, 0, in_len - 1).astype(np.int64)


# --- tap tables: (indices [out, taps] into the axis extended by one zero, weights [out, taps]) -----


def _outside(idx: np.ndarray, in_len: int) -> np.ndarray:
    return (idx < 0) | (idx >= in_len)


def linear_table(coords: np.ndarray, in_len: int, a: float, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The `linear` mode: taps round(c) - r .. round(c) + r, weight a * max(0, 1 - |a * dz|)
    (a = the scale when antialiasing, else 1), normalised by their sum (0 when the sum is 0)."""
    r = min(r, in_len + 2)  # the taps past that all lie outside the input
    centre = round_half_away(coords).astype(np.int64)
    idx = centre[:, None] + np.arange(-r, r + 1)[None, :]
    dz = coords[:, None] - idx.astype(F32)
    af = F32(a)
    w = af * np.maximum(F32(0), F32(1) - np.abs(af * dz))
    outside = _outside(idx, in_len)
    w = np.where(outside, F32(0), w).astype(np.float64)
    total = w.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(total == 0, 0.0, w / np.where(total == 0, 1.0, total))
    return np.where(outside, in_len, idx), w


def cubic_coefficients(s: np.ndarray, a: float) -> np.ndarray:
    """The four weights of taps floor(c) - 1 .. floor(c) + 2 at fraction s, in f32."""
    s = np.abs(s).astype(F32)
    a = F32(a)
    one, two = F32(1), F32(2)
    t0, t2, t3 = s + one, one - s, two - s
    c0 = ((a * t0 - F32(5) * a) * t0 + F32(8) * a) * t0 - F32(4) * a
    c1 = ((a + two) * s - (a + F32(3))) * s * s + one
    c2 = ((a + two) * t2 - (a + F32(3))) * t2 * t2 + one
    c3 = ((a * t3 - F32(5) * a) * t3 + F32(8) * a) * t3 - F32(4) * a
    return np.stack([c0, c1, c2, c3], axis=1)


def cubic_table(coords: np.ndarray, in_len: int, a: float) -> tuple[np.ndarray, np.ndarray]:
    base = np.floor(coords)
    s = (coords - base).astype(F32)
    idx = base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    return np.clip(idx, 0, in_len - 1), cubic_coefficients(s, a).astype(np.float64)


def linear_onnx_table(coords: np.ndarray, in_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Two taps: the clamped coordinate's integer part and the next one, weighted by the
    distance to the other; a clamped edge weighs each tap 1/2 (both are the same pixel)."""
    c = np.clip(coords, F32(0), F32(in_len - 1)).astype(F32)
    i1 = np.minimum(c.astype(np.int64), in_len - 1)
    i2 = np.minimum(i1 + 1, in_len - 1)
    d1 = np.abs(c - i1.astype(F32))
    d2 = np.abs(c - i2.astype(F32))
    same = i1 == i2
    d1 = np.where(same, F32(0.5), d1)
    d2 = np.where(same, F32(0.5), d2)
    return np.stack([i1, i2], axis=1), np.stack([d2, d1], axis=1).astype(np.float64)


def _pillow_bilinear(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _pillow_bicubic(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


PILLOW_FILTERS = {"bilinear_pillow": (_pillow_bilinear, 1.0), "bicubic_pillow": (_pillow_bicubic, 2.0)}


def pillow_table(mode: str, in_len: int, out_len: int, a: float) -> tuple[np.ndarray, np.ndarray]:
    """Pillow's resampling coefficients (f64): the filter widened by the downscaling factor,
    taps from round(centre - support) to round(centre + support) inside the input, normalised."""
    kernel, support = PILLOW_FILTERS[mode]
    scale = in_len / out_len
    filterscale = max(scale, 1.0)
    support = support * filterscale
    ksize = int(math.ceil(support)) * 2 + 1
    centre = (np.arange(out_len, dtype=np.float64) + 0.5) * scale
    xmin = np.maximum(np.trunc(centre - support + 0.5).astype(np.int64), 0)
    xmax = np.minimum(np.trunc(centre + support + 0.5).astype(np.int64), in_len) - xmin
    k = np.arange(ksize)[None, :]
    idx = xmin[:, None] + k
    inside = k < xmax[:, None]
    w = np.where(inside, kernel((idx - centre[:, None] + 0.5) / filterscale, float(a)), 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1.0), w)
    return np.where(inside, idx, in_len), w


# --- applying a table ---------------------------------------------------------------------------------


def apply_table(x: np.ndarray, axis: int, idx: np.ndarray, w: np.ndarray, work: np.dtype) -> np.ndarray:
    """sum over taps of w[o, t] * x[..., idx[o, t], ...] along `axis`, in dtype `work`; an index
    equal to the axis length reads a zero."""
    n = x.shape[axis]
    if idx.size and int(idx.max()) >= n:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (0, 1)
        x = pad_constant(x, pad)
    out, taps = idx.shape
    g = np.take(x, idx.reshape(-1), axis=axis).astype(work, copy=False)
    g = g.reshape(x.shape[:axis] + (out, taps) + x.shape[axis + 1:])
    wb = w.astype(work).reshape((out, taps) + (1,) * (x.ndim - axis - 1))
    with np.errstate(invalid="ignore", over="ignore"):
        return (g * wb).sum(axis=axis + 1)
