"""Oracles of the colour conversions: NV12toRGB-8, NV12toBGR-8, I420toRGB-8, I420toBGR-8,
RGBtoNV12-17 and BGRtoNV12-17, one pixel per Python step.

The arithmetic is the one OpenVINO's core reference fixes and the spec leaves open: for u8 and
the f32/f16/bf16 types each value is an f32 (`np.float32` scalars, the spec's constants rounded
to f32, terms added left to right); for f64 it is a Python float with the spec's decimal
constants. A result is clipped to [0, 255] (NaN stays NaN); for u8 it is first rounded to the
nearest integer, halves away from zero. RGBtoNV12 stores for each 2x2 block the mean of its four
pixels' U and V, each already clipped (and rounded) to the output type.

The planes are read the way the spec lays them out in memory: a single plane is one buffer per
batch, the Y rows first, then (NV12) the interleaved U, V pairs or (I420) all of U, then all of V.
"""

from __future__ import annotations

import math

import numpy as np

YUV_TO_RGB = {"k_y": 1.164, "k_rv": 1.596, "k_gu": 0.391, "k_gv": 0.813, "k_bu": 2.018}
RGB_TO_YUV = {"y": (0.257, 0.504, 0.098, 16.0), "u": (-0.148, -0.291, 0.439, 128.0),
              "v": (0.439, -0.368, -0.071, 128.0)}


def _number(dtype):
    """How one value is computed: Python floats for f64, f32 scalars otherwise."""
    return float if np.dtype(dtype) == np.float64 else np.float32


def _round_half_away(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    whole = float(math.trunc(x))
    return whole + math.copysign(1.0, x) if abs(x - whole) >= 0.5 else whole


def _clip(x, dtype):
    """Clip to [0, 255]; u8 rounds first. Returns a value the output dtype stores."""
    x = float(x)
    if np.dtype(dtype) == np.uint8:
        x = _round_half_away(x)
    if math.isnan(x):
        return x
    return min(max(x, 0.0), 255.0)


def yuv_pixel(y, u, v, dtype):
    """(R, G, B) of one pixel, clipped (and for u8 rounded)."""
    f = _number(dtype)
    k = {name: f(value) for name, value in YUV_TO_RGB.items()}
    c, d, e = f(float(y)) - f(16.0), f(float(u)) - f(128.0), f(float(v)) - f(128.0)
    with np.errstate(invalid="ignore", over="ignore"):
        r = k["k_y"] * c + k["k_rv"] * e
        g = k["k_y"] * c - k["k_gu"] * d - k["k_gv"] * e
        b = k["k_y"] * c + k["k_bu"] * d
    return _clip(r, dtype), _clip(g, dtype), _clip(b, dtype)


def _yuv_to_rgb(frame_y, sample, n_batch, height, width, dtype, bgr):
    out = np.zeros((n_batch, height, width, 3), dtype)
    for n in range(n_batch):
        for h in range(height):
            for w in range(width):
                u, v = sample(n, h, w)
                r, g, b = yuv_pixel(frame_y(n, h, w), u, v, dtype)
                out[n, h, w] = (b, g, r) if bgr else (r, g, b)
    return out


def nv12_to_rgb(y, uv=None, *, bgr=False):
    """NV12 to RGB (BGR with `bgr`): each 2x2 block shares the U, V pair of its chroma sample."""
    n_batch, width = y.shape[0], y.shape[2]
    if uv is None:
        height = y.shape[1] * 2 // 3
        flat = [y[n].reshape(-1) for n in range(n_batch)]

        def sample(n, h, w):
            at = height * width + (h // 2) * width + (w // 2) * 2
            return flat[n][at], flat[n][at + 1]
    else:
        height = y.shape[1]

        def sample(n, h, w):
            return uv[n, h // 2, w // 2, 0], uv[n, h // 2, w // 2, 1]
    return _yuv_to_rgb(lambda n, h, w: y[n, h, w, 0], sample, n_batch, height, width, y.dtype, bgr)


def i420_to_rgb(y, u=None, v=None, *, bgr=False):
    """I420 to RGB (BGR with `bgr`): each 2x2 block shares one U and one V value."""
    n_batch, width = y.shape[0], y.shape[2]
    if u is None:
        height = y.shape[1] * 2 // 3
        flat = [y[n].reshape(-1) for n in range(n_batch)]
        quarter = height * width // 4

        def sample(n, h, w):
            at = height * width + (h // 2) * (width // 2) + w // 2
            return flat[n][at], flat[n][at + quarter]
    else:
        height = y.shape[1]

        def sample(n, h, w):
            return u[n, h // 2, w // 2, 0], v[n, h // 2, w // 2, 0]
    return _yuv_to_rgb(lambda n, h, w: y[n, h, w, 0], sample, n_batch, height, width, y.dtype, bgr)


def rgb_to_nv12(image, *, bgr=False, single_plane=True):
    """RGB (BGR with `bgr`) to NV12: Y per pixel; per 2x2 block the mean of the four U and V."""
    dtype = image.dtype
    f = _number(dtype)
    n_batch, height, width = image.shape[:3]
    y_plane = np.zeros((n_batch, height, width, 1), dtype)
    uv_plane = np.zeros((n_batch, height // 2, width // 2, 2), dtype)

    def component(name, r, g, b):
        kr, kg, kb, k0 = (f(k) for k in RGB_TO_YUV[name])
        with np.errstate(invalid="ignore", over="ignore"):
            return dtype.type(_clip(kr * r + kg * g + kb * b + k0, dtype))

    for n in range(n_batch):
        for bh in range(0, height, 2):
            for bw in range(0, width, 2):
                u_sum, v_sum = f(0.0), f(0.0)
                for h in (bh, bh + 1):
                    for w in (bw, bw + 1):
                        first, g, last = (f(float(c)) for c in image[n, h, w])
                        r, b = (last, first) if bgr else (first, last)
                        y_plane[n, h, w, 0] = component("y", r, g, b)
                        u_sum = u_sum + f(float(component("u", r, g, b)))
                        v_sum = v_sum + f(float(component("v", r, g, b)))
                for k, total in enumerate((u_sum, v_sum)):
                    mean = float(total / f(4.0))
                    uv_plane[n, bh // 2, bw // 2, k] = _round_half_away(mean) if dtype == np.uint8 else total / f(4.0)
    if not single_plane:
        return y_plane, uv_plane
    out = np.zeros((n_batch, height * 3 // 2, width, 1), dtype)
    for n in range(n_batch):
        flat = out[n].reshape(-1)
        for h in range(height):
            for w in range(width):
                flat[h * width + w] = y_plane[n, h, w, 0]
        for i, value in enumerate(uv_plane[n].reshape(-1)):
            flat[height * width + i] = value
    return out
