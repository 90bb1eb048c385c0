"""A per-channel scale and bias (Multiply-1 and Add-1 by Consts), or the sum of two arrays of one
shape, and an activation in one compiled pass: over a convolution's output in place, or from
other layers' outputs into an array of its own (`runtime/epilogues.py` fuses the layers in a
plain run; imported only when numba is used, since importing it imports numba).

Each element takes the layers' own arithmetic, in their type, in their order, so the bits are
theirs: the product of Multiply-1 and the sum of Add-1 (one rounding each, never fused), then
* Relu-1: the sum if it is greater than 0, else +0.0 (so NaN and -0.0 give +0.0, as the row
  kernel's fmax and + 0.0 do);
* HSwish-4: t = min(max(v + 3, 0), 6), then (v * t) / 6, a NaN kept through the clamps as
  numpy's maximum and minimum keep it;
* HSigmoid-5: the same t, then t / 6;
* Swish-4 without beta: v / (e^(v * -1) + 1), its exponential numpy's (the layer's own call)
  between two compiled passes (`biased_scaled_block`, then `divided_by_successor_block`), a
  block at a time.
The constants come typed as the output (the element-wise ops compute f32 layers in f32), so
nothing is widened. The loops have no fast-math: no contraction, no reassociation.
"""

from __future__ import annotations

import numba

from irscatter.ops.elementwise.pass_codes import HSIGMOID, HSWISH, RELU


@numba.njit(inline="always", error_model="numpy")
def _activated(v, activation, zero, three, six):  # pragma: no cover - compiled
    if activation == RELU:
        return v if v > zero else zero
    if activation == HSWISH or activation == HSIGMOID:
        t = v + three
        t = zero if t < zero else t
        t = six if t > six else t
        return (v * t) / six if activation == HSWISH else t / six
    return v


@numba.njit(nogil=True, cache=True, error_model="numpy")
def affine_rows(source, out, scale, bias, first, activation, zero, three, six):  # pragma: no cover - compiled
    """out[r] = activation(source[r] * scale[c] + bias[c]) with c = (first + r) % channels, for
    rows of [outer x channels, inner] from row `first` on (`out` may be `source`). A Multiply
    left out has a scale of 1 and an Add a bias of -0.0, which change no value (x * 1 and
    x + -0.0 are x, -0.0 and NaN included)."""
    channels = scale.size
    for r in range(source.shape[0]):
        c = (first + r) % channels
        s, b, row, target = scale[c], bias[c], source[r], out[r]
        for j in range(row.size):
            target[j] = _activated(row[j] * s + b, activation, zero, three, six)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def affine_block_in_place(flat, start, stride, rows, width, scale, bias, first, activation, zero, three,
                          six):  # pragma: no cover - compiled
    """`affine_rows` in place, over a block of an array given flat: `rows` rows of `width`
    elements, the first at flat[start], each `stride` elements after the one before (rows of a
    whole array, or a block of positions of every channel as a convolution's part writes it).
    One array read and written is a loop the compiler vectorizes (given two arrays, it checks at
    run time whether they overlap, and where they do, the same array twice, it takes its scalar
    loop, several times slower); each row is a contiguous slice of the flat array, so the loop
    over it vectorizes as over a contiguous array."""
    channels = scale.size
    for r in range(rows):
        c = (first + r) % channels
        s, b = scale[c], bias[c]
        begin = start + r * stride
        row = flat[begin:begin + width]
        for j in range(width):
            row[j] = _activated(row[j] * s + b, activation, zero, three, six)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def affine_columns(source, out, scale, bias, activation, zero, three, six):  # pragma: no cover - compiled
    """out[r, c] = activation(source[r, c] * scale[c] + bias[c]): the channels along the last axis."""
    for r in range(source.shape[0]):
        row, target = source[r], out[r]
        for j in range(row.size):
            target[j] = _activated(row[j] * scale[j] + bias[j], activation, zero, three, six)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def summed(a, b, out, activation, zero, three, six):  # pragma: no cover - compiled
    """out = activation(a + b), for arrays of one length (an Add of two layers' outputs, then
    its activation)."""
    for j in range(a.size):
        out[j] = _activated(a[j] + b[j], activation, zero, three, six)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def biased_scaled_block(flat, start, stride, rows, width, bias, first, factor, scaled):  # pragma: no cover - compiled
    """Over a block given flat, as `affine_block_in_place` takes it: each row of the block plus
    its channel's bias (row r's is bias[(first + r) % channels]), in place, and that sum times
    `factor` into `scaled` (contiguous, `width` a row)."""
    channels = bias.size
    for r in range(rows):
        b = bias[(first + r) % channels]
        begin = start + r * stride
        row, target = flat[begin:begin + width], scaled[r * width:(r + 1) * width]
        for j in range(width):
            v = row[j] + b
            row[j] = v
            target[j] = v * factor


@numba.njit(nogil=True, cache=True, error_model="numpy")
def divided_by_successor_block(flat, start, stride, rows, width, values, one):  # pragma: no cover - compiled
    """Over a block given flat: each row over (its values + 1), in place."""
    for r in range(rows):
        begin = start + r * stride
        row, value = flat[begin:begin + width], values[r * width:(r + 1) * width]
        for j in range(width):
            row[j] = row[j] / (value[j] + one)
