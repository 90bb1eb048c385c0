"""Oracles of the convolution family, one output element per Python step, read off the specs
(`convolution-1.rst`, `group-convolution-1.rst`, `convolution-backprop-data-1.rst`,
`group-convolution-backprop-data-1.rst`).

Floats are summed as Python floats (f64) and rounded once to the output type; integers are
summed as Python integers and wrapped modulo 2^bits at the end, as sums wrapping at every step
in the element type would be. A kernel tap outside the input (in the padding) is skipped, as
OpenVINO does; with an infinite weight that differs from multiplying by a padded zero.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _scalar(value):
    return int(value) if np.asarray(value).dtype.kind in "iu" else float(value)


def _finish(total, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        bits = dtype.itemsize * 8
        total %= 1 << bits
        if dtype.kind == "i" and total >= 1 << (bits - 1):
            total -= 1 << bits
        return np.array(total).astype(dtype)
    return np.array(total, dtype=np.float64)


def _out_dtype(dtype):
    return dtype if np.dtype(dtype).kind in "iu" else np.float64


def _forward_pads(auto_pad, size, kernel, stride, dilation, pad_begin, pad_end):
    """The spec's auto_pad rules for one axis: explicit pads, no pads, or the pads that give
    ceil(size / stride) outputs, the odd one at the end (same_upper) or the beginning."""
    if auto_pad == "explicit":
        return pad_begin, pad_end
    if auto_pad == "valid":
        return 0, 0
    out = math.ceil(size / stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    if auto_pad == "same_upper":
        return total // 2, total - total // 2
    return total - total // 2, total // 2


def group_convolution(data, filters, *, strides, pads_begin, pads_end, dilations, auto_pad="explicit"):
    """out[b, g * C_OUT + co, o] = sum over ci and kernel offsets k of
    data[b, g * C_IN + ci, o * stride + k * dilation - pad_begin] * filters[g, co, ci, k],
    the taps inside the data only."""
    groups, c_out, c_in = filters.shape[:3]
    kernel, size = filters.shape[3:], data.shape[2:]
    n = len(kernel)
    pb, pe = [], []
    for a in range(n):
        b, e = _forward_pads(auto_pad, size[a], kernel[a], strides[a], dilations[a],
                             pads_begin[a] if pads_begin else 0, pads_end[a] if pads_end else 0)
        pb.append(b)
        pe.append(e)
    if auto_pad in ("same_upper", "same_lower"):
        out_size = [math.ceil(size[a] / strides[a]) for a in range(n)]
    else:
        out_size = [(size[a] + pb[a] + pe[a] - ((kernel[a] - 1) * dilations[a] + 1)) // strides[a] + 1
                    for a in range(n)]
    out = np.zeros((data.shape[0], groups * c_out, *out_size), _out_dtype(data.dtype))
    for batch in range(data.shape[0]):
        for g in range(groups):
            for co in range(c_out):
                for o in itertools.product(*(range(s) for s in out_size)):
                    total = 0
                    for ci in range(c_in):
                        for k in itertools.product(*(range(s) for s in kernel)):
                            at = tuple(o[a] * strides[a] + k[a] * dilations[a] - pb[a] for a in range(n))
                            if all(0 <= at[a] < size[a] for a in range(n)):
                                total += (_scalar(data[(batch, g * c_in + ci, *at)])
                                          * _scalar(filters[(g, co, ci, *k)]))
                    out[(batch, g * c_out + co, *o)] = _finish(total, data.dtype)
    return out


def convolution(data, filters, **attrs):
    """Convolution-1: GroupConvolution-1 with one group."""
    return group_convolution(data, filters[None], **attrs)


def group_convolution_backprop_data(data, filters, output_shape=None, *, strides, dilations, pads_begin=(),
                                    pads_end=(), auto_pad="explicit", output_padding=()):
    """out[b, g * C_OUT + co, o] = sum over ci, kernel offsets k and inputs i with
    i * stride + k * dilation - pad_begin == o of data[b, g * C_IN + ci, i] * filters[g, ci, co, k].

    The pads and the output size by the spec: without output_shape, the pads are the attributes
    (explicit) or zeros and the size is stride * (in - 1) + dilated kernel - pads + output_padding;
    with output_shape, the total padding stride * (in - 1) + dilated kernel - output_shape +
    output_padding goes to pads_begin as total // 2 (all but same_upper) or total - total // 2
    (same_upper). A negative total (a larger output) puts nothing at the beginning."""
    groups, c_in, c_out = filters.shape[:3]
    kernel, size = filters.shape[3:], data.shape[2:]
    n = len(kernel)
    output_padding = output_padding or (0,) * n
    pb, out_size = [], []
    for a in range(n):
        full = strides[a] * (size[a] - 1) + (kernel[a] - 1) * dilations[a] + 1
        if output_shape is None:
            begin = pads_begin[a] if auto_pad == "explicit" and pads_begin else 0
            end = pads_end[a] if auto_pad == "explicit" and pads_end else 0
            pb.append(begin)
            out_size.append(full - begin - end + output_padding[a])
        else:
            total = max(0, full - int(output_shape[a]) + output_padding[a])
            pb.append(total - total // 2 if auto_pad == "same_upper" else total // 2)
            out_size.append(int(output_shape[a]))
    out = np.zeros((data.shape[0], groups * c_out, *out_size), _out_dtype(data.dtype))
    for batch in range(data.shape[0]):
        for g in range(groups):
            for co in range(c_out):
                for o in itertools.product(*(range(s) for s in out_size)):
                    total = 0
                    for ci in range(c_in):
                        for k in itertools.product(*(range(s) for s in kernel)):
                            i = []
                            for a in range(n):
                                q, r = divmod(o[a] + pb[a] - k[a] * dilations[a], strides[a])
                                i.append(q if r == 0 and 0 <= q < size[a] else None)
                            if None not in i:
                                total += (_scalar(data[(batch, g * c_in + ci, *i)])
                                          * _scalar(filters[(g, ci, co, *k)]))
                    out[(batch, g * c_out + co, *o)] = _finish(total, data.dtype)
    return out


def convolution_backprop_data(data, filters, output_shape=None, **attrs):
    """ConvolutionBackpropData-1: GroupConvolutionBackpropData-1 with one group."""
    return group_convolution_backprop_data(data, filters[None], output_shape, **attrs)
