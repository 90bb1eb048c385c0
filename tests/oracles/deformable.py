"""Oracles of DeformableConvolution-1/-8 and BinaryConvolution-1: one output element per Python
step, read off the spec's formulas, for small shapes only.

DeformableConvolution: y(p) = sum over taps k of w_k * x(p + p_k + dp_k) * dm_k, with x read by
bilinear interpolation. `sampling` says how a location near or outside the map is read:

* "pad" (bilinear_interpolation_pad true): inside -1 < p < S on both axes, interpolation of the
  map padded with zeros; elsewhere 0;
* "clamp-spec" (-8, the pad false): inside -1 < p < S, the location moved into [0, S - 1]
  (the spec: "shifts to the inner boundary"), then interpolated; elsewhere 0;
* "clamp-reference" (-1, as OpenVINO's core reference): inside 0 <= p < S, the location moved
  into [0, S - 1]; elsewhere 0.

BinaryConvolution (xnor-popcount): an input or pad value 1 is the bit 1, 0 the bit 0; any other
value matches neither bit (OpenVINO's reference compares for equality). Each tap adds +1 when
input and filter bits are equal and -1 otherwise, which is 2 * popcount(xnor) - bit count.

Both compute in Python floats (f64) and return the input's dtype.
"""

from __future__ import annotations

import math

import numpy as np


def _pads(auto_pad, size, kernel, stride, dilation, begin, end):
    """One axis's pads: the spec's auto_pad rules."""
    if auto_pad == "explicit":
        return begin, end
    if auto_pad == "valid":
        return 0, 0
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    small, large = total // 2, total - total // 2
    return (small, large) if auto_pad == "same_upper" else (large, small)


def _out_size(auto_pad, size, kernel, stride, dilation, begin, end):
    if auto_pad in ("same_upper", "same_lower"):
        return -(-size // stride)
    return (size + begin + end - ((kernel - 1) * dilation + 1)) // stride + 1


def _geometry(x_shape, k_shape, strides, pads_begin, pads_end, dilations, auto_pad):
    pads, outs = [], []
    for i in range(2):
        b, e = _pads(auto_pad, x_shape[2 + i], k_shape[i], strides[i], dilations[i],
                     pads_begin[i] if pads_begin else 0, pads_end[i] if pads_end else 0)
        pads.append(b)
        outs.append(_out_size(auto_pad, x_shape[2 + i], k_shape[i], strides[i], dilations[i], b, e))
    return pads, outs


def _read(x, n, c, y, xx):
    """One pixel of the map, or 0 outside it."""
    if 0 <= y < x.shape[2] and 0 <= xx < x.shape[3]:
        return float(x[n, c, y, xx])
    return 0.0


def bilinear(x, n, c, py, px, sampling):
    """The value of channel c of image n at the fractional location (py, px)."""
    height, width = x.shape[2], x.shape[3]
    if sampling == "clamp-reference":
        if not (0 <= py < height and 0 <= px < width):
            return 0.0
    elif not (-1 < py < height and -1 < px < width):
        return 0.0
    if sampling == "pad":
        y0, x0 = math.floor(py), math.floor(px)
        y1, x1 = y0 + 1, x0 + 1
    else:
        py, px = max(py, 0.0), max(px, 0.0)  # the band (-1, 0) moves onto the first row or column
        y0, x0 = math.floor(py), math.floor(px)
        y1, x1 = min(math.ceil(py), height - 1), min(math.ceil(px), width - 1)
    dy, dx = py - y0, px - x0
    total = 0.0
    for weight, y, xx in (((1 - dx) * (1 - dy), y0, x0), ((1 - dx) * dy, y1, x0), (dx * (1 - dy), y0, x1),
                          (dx * dy, y1, x1)):
        if weight != 0:  # a neighbour of weight 0 is not read (an exact pixel is that pixel alone)
            total += weight * _read(x, n, c, y, xx)
    return total


def deformable_convolution(x, offsets, w, mask=None, *, strides, pads_begin, pads_end, dilations,
                           auto_pad="explicit", group=1, deformable_group=1, sampling="clamp-reference"):
    n_batch, channels = x.shape[0], x.shape[1]
    out_channels, group_channels, ky, kx = w.shape
    (pad_y, pad_x), (oh, ow) = _geometry(x.shape, (ky, kx), strides, pads_begin, pads_end, dilations, auto_pad)
    taps = ky * kx
    per_dg = channels // deformable_group
    out = np.zeros((n_batch, out_channels, oh, ow), np.float64)
    for n in range(n_batch):
        for o in range(out_channels):
            g = o // (out_channels // group)
            for oy in range(oh):
                for ox in range(ow):
                    total = 0.0
                    for ci in range(group_channels):
                        c = g * group_channels + ci
                        dg = c // per_dg
                        for i in range(ky):
                            for j in range(kx):
                                k = i * kx + j
                                dy = float(offsets[n, dg * 2 * taps + 2 * k, oy, ox])
                                dx = float(offsets[n, dg * 2 * taps + 2 * k + 1, oy, ox])
                                py = oy * strides[0] - pad_y + i * dilations[0] + dy
                                px = ox * strides[1] - pad_x + j * dilations[1] + dx
                                m = 1.0 if mask is None else float(mask[n, dg * taps + k, oy, ox])
                                sample = bilinear(x, n, c, py, px, sampling)
                                total += float(w[o, ci, i, j]) * sample * m
                    out[n, o, oy, ox] = total
    return out.astype(x.dtype)


def binary_convolution(x, w, *, strides, pads_begin, pads_end, dilations, pad_value, auto_pad="explicit"):
    n_batch, channels = x.shape[0], x.shape[1]
    out_channels, _, ky, kx = w.shape
    (pad_y, pad_x), (oh, ow) = _geometry(x.shape, (ky, kx), strides, pads_begin, pads_end, dilations, auto_pad)
    pad = np.array([pad_value], np.float32).astype(x.dtype)[0]  # the pad value as the data's type
    out = np.zeros((n_batch, out_channels, oh, ow), np.int64)
    for n in range(n_batch):
        for o in range(out_channels):
            for oy in range(oh):
                for ox in range(ow):
                    total = 0
                    for c in range(channels):
                        for i in range(ky):
                            for j in range(kx):
                                y = oy * strides[0] - pad_y + i * dilations[0]
                                xx = ox * strides[1] - pad_x + j * dilations[1]
                                inside = 0 <= y < x.shape[2] and 0 <= xx < x.shape[3]
                                value = x[n, c, y, xx] if inside else pad
                                bit = int(w[o, c, i, j])
                                total += 1 if value == bit else -1
                    out[n, o, oy, ox] = total
    return out.astype(x.dtype)
