"""Oracles of the spatial family: DepthToSpace-1, SpaceToDepth-1, BatchToSpace-2,
SpaceToBatch-2, ShuffleChannels-1, ExtractImagePatches-3 and Col2Im-15.

Each walks the output (or, for Col2Im, the data) one element per Python step and says where
that element comes from with the index arithmetic the spec's reshape-transpose-reshape
definitions amount to, written out per coordinate rather than as reshapes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _flat(digits, base):
    """The mixed-radix number with `digits` (most significant first) in `base`s."""
    value = 0
    for d, b in zip(digits, base):
        value = value * b + d
    return value


def depth_to_space(x, block_size, mode):
    """Output [N, C', D1 * bs, ...]: position y along axis i is block row y // bs, offset y % bs;
    the channel read is (offsets..., c') in blocks_first mode and (c', offsets...) in depth_first."""
    n_, c_, *spatial = x.shape
    k = len(spatial)
    depth = c_ // block_size**k
    out = np.empty((n_, depth, *(d * block_size for d in spatial)), x.dtype)
    for index in itertools.product(*(range(d) for d in out.shape)):
        n, c, *ys = index
        offsets = [y % block_size for y in ys]
        if mode == "blocks_first":
            channel = _flat(offsets + [c], [block_size] * k + [depth])
        else:
            channel = _flat([c] + offsets, [depth] + [block_size] * k)
        out[index] = x[(n, channel, *(y // block_size for y in ys))]
    return out


def space_to_depth(x, block_size, mode):
    """Output [N, C * bs^K, D1 / bs, ...]: channel (offsets..., c) in blocks_first mode and
    (c, offsets...) in depth_first reads position y * bs + offset of each spatial axis."""
    n_, c_, *spatial = x.shape
    k = len(spatial)
    out = np.empty((n_, c_ * block_size**k, *(d // block_size for d in spatial)), x.dtype)
    for index in itertools.product(*(range(d) for d in out.shape)):
        n, channel, *ys = index
        if mode == "blocks_first":
            *offsets, c = _digits(channel, [block_size] * k + [c_])
        else:
            c, *offsets = _digits(channel, [c_] + [block_size] * k)
        out[index] = x[(n, c, *(y * block_size + o for y, o in zip(ys, offsets)))]
    return out


def _digits(value, base):
    """The inverse of `_flat`."""
    digits = []
    for b in reversed(base):
        digits.append(value % b)
        value //= b
    return digits[::-1]


def batch_to_space(x, block_shape, crops_begin, crops_end):
    """Output position y on spatial axis i is position p = y + crops_begin[i] of the uncropped
    axis: spatial p // B_i of the input, from the batch entry (p % B_1, ..., p % B_{N-1}, n)."""
    blocks = [int(b) for b in block_shape][1:]
    begin, end = [int(v) for v in crops_begin], [int(v) for v in crops_end]
    batch = x.shape[0] // math.prod(blocks)
    shape = [batch] + [d * b - begin[i + 1] - end[i + 1] for i, (d, b) in enumerate(zip(x.shape[1:], blocks))]
    out = np.empty(shape, x.dtype)
    for index in itertools.product(*(range(d) for d in shape)):
        n, *ys = index
        ps = [y + begin[i + 1] for i, y in enumerate(ys)]
        source_batch = _flat([p % b for p, b in zip(ps, blocks)] + [n], blocks + [batch])
        out[index] = x[(source_batch, *(p // b for p, b in zip(ps, blocks)))]
    return out


def space_to_batch(x, block_shape, pads_begin, pads_end):
    """Output batch entry (o_1, ..., o_{N-1}, n) at position z on spatial axis i holds padded
    position z * B_i + o_i, which is input position z * B_i + o_i - pads_begin[i] or a zero pad."""
    blocks = [int(b) for b in block_shape][1:]
    begin, end = [int(v) for v in pads_begin], [int(v) for v in pads_end]
    batch = x.shape[0]
    shape = [batch * math.prod(blocks)] + [(d + begin[i + 1] + end[i + 1]) // b
                                           for i, (d, b) in enumerate(zip(x.shape[1:], blocks))]
    out = np.empty(shape, x.dtype)
    zero = np.zeros((), x.dtype)
    for index in itertools.product(*(range(d) for d in shape)):
        ob, *zs = index
        *offsets, n = _digits(ob, blocks + [batch])
        src = [z * b + o - begin[i + 1] for i, (z, b, o) in enumerate(zip(zs, blocks, offsets))]
        inside = all(0 <= s < d for s, d in zip(src, x.shape[1:]))
        out[index] = x[(n, *src)] if inside else zero
    return out


def shuffle_channels(x, axis, group):
    """Output channel k = j * group + g holds input channel g * (C / group) + j."""
    axis = axis + x.ndim if axis < 0 else axis
    per_group = x.shape[axis] // group
    out = np.empty_like(x)
    for index in itertools.product(*(range(d) for d in x.shape)):
        k = index[axis]
        j, g = k // group, k % group
        source = list(index)
        source[axis] = g * per_group + j
        out[index] = x[tuple(source)]
    return out


def extract_image_patches(x, sizes, strides, rates, auto_pad):
    """Output channel (kr * size_cols + kc) * C + c at patch (r, q) holds input row
    r * stride_rows - pad_top + kr * rate_rows, column likewise, or 0 outside the image."""
    n_, c_, h, w = x.shape
    geometry = []
    for size, k, s, rate in zip((h, w), sizes, strides, rates):
        span = rate * (k - 1) + 1
        if auto_pad == "valid":
            count, before = max(0, math.ceil((size - span + 1) / s)), 0
        else:
            count = math.ceil(size / s)
            total = max(0, (count - 1) * s + span - size) if count else 0
            before = total // 2 if auto_pad == "same_upper" else total - total // 2
        geometry.append((count, before))
    (rows, top), (cols, left) = geometry
    out = np.empty((n_, sizes[0] * sizes[1] * c_, rows, cols), x.dtype)
    zero = np.zeros((), x.dtype)
    for n, channel, r, q in itertools.product(*(range(d) for d in out.shape)):
        kr, kc, c = _digits(channel, [sizes[0], sizes[1], c_])
        i = r * strides[0] - top + kr * rates[0]
        j = q * strides[1] - left + kc * rates[1]
        out[n, channel, r, q] = x[n, c, i, j] if 0 <= i < h and 0 <= j < w else zero
    return out


def col2im(x, output_size, kernel_size, strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0), pads_end=(0, 0)):
    """Each data element (n, c * kh * kw + i * kw + j, lr * Lc + lc) adds to image position
    (lr * stride - pad_begin + i * dilation, ...) when that lies inside the image. Sums are
    Python floats (or integers) in the data's order, rounded once to the data's type (floats)
    or wrapped modulo 2^bits (integers)."""
    batched = x.ndim == 3
    data = x if batched else x[None]
    kh, kw = (int(k) for k in kernel_size)
    oh, ow = (int(o) for o in output_size)
    n_, rows, length = data.shape
    c_ = rows // (kh * kw)
    lr_, lc_ = ((o + pb + pe - d * (k - 1) - 1) // s + 1
                for o, pb, pe, d, k, s in zip((oh, ow), pads_begin, pads_end, dilations, (kh, kw), strides))
    assert lr_ * lc_ == length
    integral = x.dtype.kind in "iu"
    sums = [[[[0 if integral else 0.0 for _ in range(ow)] for _ in range(oh)] for _ in range(c_)] for _ in range(n_)]
    for n, row, block in itertools.product(range(n_), range(rows), range(length)):
        c, i, j = _digits(row, [c_, kh, kw])
        lr, lc = _digits(block, [lr_, lc_])
        y = lr * strides[0] - pads_begin[0] + i * dilations[0]
        z = lc * strides[1] - pads_begin[1] + j * dilations[1]
        if 0 <= y < oh and 0 <= z < ow:
            value = data[n, row, block]
            sums[n][c][y][z] += int(value) if integral else float(value)
    flat = [v for a in sums for b in a for row in b for v in row]
    if integral:  # modulo 2^64, then C's narrowing cast: modulo 2^bits of the data's type
        out = np.array([v % 2**64 for v in flat], dtype=np.uint64).astype(x.dtype)
    else:  # one rounding of the exact sum to the data's type
        out = np.array(flat, dtype=np.float64).astype(x.dtype)
    out = out.reshape(n_, c_, oh, ow)
    return out if batched else out[0]
