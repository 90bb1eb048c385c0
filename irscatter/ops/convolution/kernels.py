"""The arithmetic of convolutions over arrays in their work dtype, data [N, G, C_IN, *in] and
filters per group: the per-offset form that skips the taps in the padding, the im2col form (one
matrix product over gathered patches, in blocks) where it gives the same answer, and the
transposed form. The geometry they are handed (pads, output sizes) is worked out in `core.py`;
which form a float forward convolution takes, in `plans.py`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def tap_range(n_src: int, n_dst: int, tap: int, stride: int, dilation: int, pad: int) -> tuple[slice, slice] | None:
    """Along one axis, the positions p in [0, n_src) whose image q = p * stride + tap * dilation
    - pad lies in [0, n_dst), as a slice of p and the matching (strided) slice of q; None when
    there are none. A forward convolution reads input q = o * s + k * d - pad for output o; a
    transposed one writes output q from input p the same way."""
    offset = tap * dilation - pad
    lo = max(0, -(offset // stride) if offset < 0 else 0)  # ceil(-offset / stride)
    hi = min(n_src - 1, (n_dst - 1 - offset) // stride)
    if lo > hi:
        return None
    start = lo * stride + offset
    return slice(lo, hi + 1), slice(start, start + (hi - lo) * stride + 1, stride)


def _taps(src_dims, dst_dims, kernel, strides, dilations, begin):
    """Every kernel offset with its box of source positions and the strided box it maps to."""
    ranges = []
    for i, k in enumerate(kernel):
        axis = {}
        for t in range(k):
            found = tap_range(src_dims[i], dst_dims[i], t, strides[i], dilations[i], begin[i])
            if found is not None:
                axis[t] = found
        ranges.append(axis)
    for offset in np.ndindex(*kernel):
        if all(t in ranges[i] for i, t in enumerate(offset)):
            pairs = [ranges[i][t] for i, t in enumerate(offset)]
            yield offset, tuple(p for p, _ in pairs), tuple(q for _, q in pairs)


def grouped_convolution(x: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
                        begin: Sequence[int], out_dims: Sequence[int]) -> np.ndarray:
    """A forward convolution of x [N, G, C_IN, *in] with w [G, C_OUT, C_IN, *kernel], both in the
    work dtype: out[n, g, d, o...] = sum over c and kernel offsets k of
    x[n, g, c, o * stride + k * dilation - begin] * w[g, d, c, k], over the taps that fall inside
    the input. Taps in the padding contribute nothing at all (not zero times the weight, which
    would be NaN for an infinite weight), as in OpenVINO's reference and CPU plugin. One batched
    matrix product per kernel offset, over the box of outputs whose tap lies inside the input."""
    n, g, c = x.shape[:3]
    d = w.shape[1]
    out = np.zeros((n, g, d, *out_dims), dtype=x.dtype)
    if out.size == 0 or c == 0:
        return out
    lead = (slice(None),) * 3
    for offset, outs, ins in _taps(out_dims, x.shape[3:], w.shape[3:], strides, dilations, begin):
        patch = x[lead + ins]  # [N, G, C_IN, *box]
        box = patch.shape[3:]
        product = np.matmul(w[lead + offset], patch.reshape(n, g, c, math.prod(box)))
        out[lead + outs] += product.reshape(n, g, d, *box)
    return out


class Im2col:
    """`im2col_convolution` for one shape of x [N, G, C_IN, *in] and of w [G, C_OUT, C_IN, *kernel]
    and one dtype, its geometry worked out once: the zero-padded buffer, the window view's shape
    and strides over it, and whether the view is the data itself (a 1x1 kernel at stride 1 with
    no padding, whose patches need no copy).

    The work goes in blocks of samples and of positions along the first output axis (`blocks`),
    each gathering its own patches: a block's patches stay small enough to be read back from
    the cache, memory stays bounded whatever the batch, and blocks can run on several threads."""

    def __init__(self, x_shape: Sequence[int], w_shape: Sequence[int], dtype: np.dtype, strides: Sequence[int],
                 dilations: Sequence[int], begin: Sequence[int], out_dims: Sequence[int]) -> None:
        n, g, c = x_shape[:3]
        d, kernel = w_shape[1], tuple(w_shape[3:])
        self.out_shape = (n, g, d, *out_dims)
        self.empty = n * g * d * math.prod(out_dims) == 0 or c == 0
        spans = [(k - 1) * dl + 1 for k, dl in zip(kernel, dilations)]
        widths = [(b, max(0, (o - 1) * s + span - size - b))
                  for size, b, o, s, span in zip(x_shape[3:], begin, out_dims, strides, spans)]
        self.padded_shape = (n, g, c, *(size + b + e for size, (b, e) in zip(x_shape[3:], widths)))
        self.interior = None
        if any(b or e for b, e in widths):
            self.interior = (slice(None),) * 3 + tuple(slice(b, b + size) for size, (b, _) in zip(x_shape[3:], widths))
        self.dtype = np.dtype(dtype)
        # The strides of the C-contiguous padded buffer, in bytes.
        contiguous = [self.dtype.itemsize]
        for size in reversed(self.padded_shape[1:]):
            contiguous.insert(0, contiguous[0] * size)
        spatial = contiguous[3:]
        # A read-only view [N, G, C, k..., out...] of the padded data: element (.., t, o) is the
        # source at o * stride + t * dilation along each spatial axis (what sliding_window_view
        # does, without its checks); copying it runs along output positions.
        self.view_shape = (n, g, c, *kernel, *out_dims)
        self.view_strides = (*contiguous[:3], *(st * dl for st, dl in zip(spatial, dilations)),
                             *(st * sd for st, sd in zip(spatial, strides)))
        self.taps = c * math.prod(kernel)
        self.filter_shape = (g, d, self.taps)
        self.direct = self.interior is None and all(k == 1 for k in kernel) and all(s == 1 for s in strides)
        self.wide: _Wide | None = None
        if not self.direct and len(out_dims) >= 2 and tuple(strides[-2:]) == (1, 1) and out_dims[-1] <= WIDE_ROWS \
                and (self.padded_shape[-1] - out_dims[-1]) * d <= WIDE_EXTRA * max(1, out_dims[-1]):
            self._plan_wide(kernel, out_dims)
        # Elements of the view per sample and per position of the first output axis, and how
        # many view elements that axis holds per output position (a wide view of 2-D outputs
        # runs its rows into one axis, `width` elements a row).
        self.first_axis = 3 + len(kernel)
        self.per_row = self.wide.width if self.wide is not None and len(out_dims) == 2 else 1

    def _plan_wide(self, kernel: Sequence[int], out_dims: Sequence[int]) -> None:
        """Short rows at stride 1 along the last two axes: gather each tap's rows of outputs
        as one run through the padded buffer, row after row, each row as wide as the padded
        input. The columns past the output's last read into the next row; they are computed
        and cut off. A copy of runs that long is several times faster than one of short rows,
        which is where a small layer spends its time. The buffer gets a tail, so the last
        tap's run never reads past its end."""
        width = self.padded_shape[-1]
        lead = 3 + len(kernel) + len(out_dims) - 2  # the view's axes before its last two
        self.wide = _Wide(
            tail=self.view_strides[2 + len(kernel)] // self.dtype.itemsize * (kernel[-1] - 1),
            view_shape=(*self.view_shape[:lead], out_dims[-2] * width),
            view_strides=(*self.view_strides[:lead], self.dtype.itemsize),
            width=width,
            keep=out_dims[-1],
        )

    def source(self, x: np.ndarray) -> np.ndarray:
        """The window view of x's zero-padded copy (or of x itself, for a direct plan)."""
        wide = self.wide
        if self.direct or self.interior is None and wide is None:  # no padding: the data itself
            source = np.ascontiguousarray(x)
            if self.direct:
                return source
            view = np.ndarray(self.view_shape, self.dtype, buffer=source, offset=0, strides=self.view_strides)
            view.flags.writeable = False
            return view
        tail = wide.tail if wide is not None else 0
        flat = np.zeros(math.prod(self.padded_shape) + tail, self.dtype)
        padded = flat[:flat.size - tail].reshape(self.padded_shape)
        padded[self.interior if self.interior is not None else ...] = x
        shape, strides = (wide.view_shape, wide.view_strides) if wide is not None else (self.view_shape,
                                                                                          self.view_strides)
        view = np.ndarray(shape, self.dtype, buffer=flat, offset=0, strides=strides)
        view.flags.writeable = False
        return view

    def patches(self, x: np.ndarray) -> np.ndarray:
        """[N, G, C_IN * taps, positions]: every output position's patch, a column each."""
        return self.patches_of(self.source(x))

    def _columns(self, view: np.ndarray, n0: int, n1: int, r0: int, r1: int) -> np.ndarray:
        """The patches of samples [n0, n1) and positions [r0, r1) of the first output axis."""
        n, g = n1 - n0, self.out_shape[1]
        if self.direct:
            rest = math.prod(self.out_shape[4:])
            return view.reshape(*view.shape[:3], -1)[n0:n1, ..., r0 * rest:r1 * rest]
        index = [slice(n0, n1)] + [slice(None)] * (view.ndim - 1)
        index[self.first_axis] = slice(r0 * self.per_row, r1 * self.per_row)
        return np.ascontiguousarray(view[tuple(index)]).reshape(n, g, self.taps, -1)

    def blocks(self, limit: int) -> list[tuple[int, int, int, int]]:
        """(n0, n1, r0, r1) blocks covering every sample and every position of the first output
        axis, each with about `limit` patch elements or fewer (one position of one sample at
        least)."""
        n, rows = self.out_shape[0], self.out_shape[3]
        per_row = max(1, self.taps * self.out_shape[1] * math.prod(self.out_shape[4:]))
        if per_row * rows <= limit:
            step = max(1, limit // (per_row * rows))
            return [(lo, min(n, lo + step), 0, rows) for lo in range(0, n, step)]
        step = max(1, limit // per_row)
        return [(i, i + 1, lo, min(rows, lo + step)) for i in range(n) for lo in range(0, rows, step)]

    def block(self, view: np.ndarray, w: np.ndarray, out: np.ndarray, n0: int, n1: int, r0: int, r1: int) -> None:
        """out[n0:n1, :, :, r0:r1] of the convolution, from `source(x)` and filters `w` shaped
        `filter_shape`."""
        self.product(self._columns(view, n0, n1, r0, r1), w, out[n0:n1, :, :, r0:r1])

    def product(self, cols: np.ndarray, w: np.ndarray, target: np.ndarray) -> None:
        """target [n, g, d, rows, ...] = w [g, d, taps] x cols [n, g, taps, positions] (any
        matching slices of groups and output channels), the wide rows cut to the output's."""
        if self.wide is None:
            merged = np.lib.stride_tricks.as_strided(target, (*target.shape[:3], cols.shape[-1]),
                                                     (*target.strides[:3], target.itemsize), writeable=True)
            np.matmul(w, cols, out=merged)
            return
        product = np.matmul(w, cols)
        target[...] = product.reshape(*target.shape[:-1], self.wide.width)[..., :self.wide.keep]

    def patches_of(self, view: np.ndarray) -> np.ndarray:
        """Every sample's patches at once, [N, G, taps, positions], from `source(x)`."""
        return self._columns(view, 0, self.out_shape[0], 0, self.out_shape[3])

    def group_patches(self, view: np.ndarray, g0: int, g1: int) -> np.ndarray:
        """The patches of groups [g0, g1) of every sample, [N, g1 - g0, taps, positions]."""
        if self.direct:
            return self.patches_of(view)[:, g0:g1]
        return np.ascontiguousarray(view[:, g0:g1]).reshape(self.out_shape[0], g1 - g0, self.taps, -1)

    def __call__(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        out = np.empty(self.out_shape, dtype=x.dtype)
        if self.empty:
            out[...] = 0
            return out
        view = self.source(x)
        self.block(view, w.reshape(self.filter_shape), out, 0, self.out_shape[0], 0, self.out_shape[3])
        return out


# Output rows this short or shorter are gathered as wide rows (`Im2col._plan_wide`); longer rows
# copy fast enough as they are, and the wide rows' extra columns would cost more than they save.
WIDE_ROWS = 32
# Nor are they gathered wide where the extra columns' products cost more than the copy saves:
# a wide row adds (padded width - output width) columns, each multiplied by C_OUT filters, to
# the output width's columns; beyond WIDE_EXTRA multiply-adds per output column (a 7x7 map of
# 512 channels, Inception's 1x7 kernels on 17x17 maps), the plain gathering's layers were
# 10-14% faster in the models.
WIDE_EXTRA = 40


@dataclass(frozen=True)
class _Wide:
    """The wide-row gathering of one `Im2col`: the buffer's tail (elements), the view of the
    padded buffer [N, G, C, *kernel, *lead outputs, rows * width], the padded row's width and
    how many of its columns are outputs."""

    tail: int
    view_shape: tuple[int, ...]
    view_strides: tuple[int, ...]
    width: int
    keep: int


def im2col_convolution(x: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
                       begin: Sequence[int], out_dims: Sequence[int]) -> np.ndarray:
    """The convolution of `grouped_convolution` as one batched matrix product: the patch of every
    output position is gathered (a strided window view of the zero-padded data, made contiguous
    as [N, G, C_IN * taps, positions]) and multiplied by the filters [G, C_OUT, C_IN * taps]."""
    return Im2col(x.shape, w.shape, x.dtype, strides, dilations, begin, out_dims)(x, w)


def grouped_transposed(x: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
                       begin: Sequence[int], out_dims: Sequence[int]) -> np.ndarray:
    """A transposed convolution of x [N, G, C_IN, *in] with w [G, C_IN, C_OUT, *kernel], both in
    the work dtype: every input element i scatters x[n, g, c, i] * w[g, c, d, k] onto output
    i * stride + k * dilation - begin, kept where that lies in [0, out_dims) (so `begin` crops the
    start, and what lies past the end is cropped or, with a longer output, left zero). One
    batched matrix product per kernel offset, added onto a strided box of the output (the
    outputs of one offset are distinct, so plain slice addition is exact)."""
    n, g, c = x.shape[:3]
    d = w.shape[2]
    out = np.zeros((n, g, d, *out_dims), dtype=x.dtype)
    if out.size == 0 or c == 0:
        return out
    lead = (slice(None),) * 3
    w_t = np.swapaxes(w, 1, 2)  # [G, C_OUT, C_IN, *kernel]
    for offset, ins, outs in _taps(x.shape[3:], out_dims, w.shape[3:], strides, dilations, begin):
        patch = x[lead + ins]
        box = patch.shape[3:]
        product = np.matmul(w_t[lead + offset], patch.reshape(n, g, c, math.prod(box)))
        out[lead + outs] += product.reshape(n, g, d, *box)
    return out


# --- the ops' shared declarations --------------------------------------------------------------
