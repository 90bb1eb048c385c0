"""Which arithmetic computes a floating-point forward convolution of one shape, worked out once
per shape (`plan_forward`), and the formulations that are neither im2col nor per-offset.

Every plan here computes `kernels.grouped_convolution`'s sums over the zero-padded data, for
finite filters only: a tap in the padding then adds 0 * w = 0, which changes no sum (the caller
sends non-finite filters and integers to the per-offset kernel, which skips those taps). Each
works on x [N, G, C_IN, *in] and w [G, C_OUT, C_IN, *kernel] in the work dtype and returns
[N, G, C_OUT, *out]:

* `pointwise`: a 1x1 kernel at stride 1 without padding is one matrix product per sample and
  group over the data as it lies, [C_OUT, C_IN] x [C_IN, positions], with no copy; on a map
  of one position and one group, [N, C_IN] x [C_IN, C_OUT] (`products.matmul`), and for one
  sample and one group with many more filters than positions, the product through
  `products.matmul`, which splits it by filters. With fewer, but still a quarter of the
  positions or more, its parts are blocks of filters cut where BLAS keeps the bits
  (`products.row_cuts`), else blocks of positions or of samples.
* `im2col`: a dense or grouped kernel, and a depthwise one of 3x3 taps or fewer that the taps
  plans below do not take, gathers each output position's patch and multiplies the filters by
  them (`kernels.Im2col`), in blocks of samples and output rows, so that a block's patches stay
  in the cache and the batch does not multiply the memory.
* `depthwise (banded)`: one input channel per group and a larger kernel (5x5 and up), where
  gathering patches would copy the data once per tap and a product per channel has too little
  to sum: the last axis is a product with a banded matrix of the taps, a few outputs wide
  (`DepthwiseBanded`).
* `depthwise (channels last)` and `depthwise (wide rows)`: one input channel per group, the
  sum of the taps one tap at a time, each a multiply and an add pass of numpy over a strided
  view of one padded copy of the data, laid out so that the passes run long: channels last on
  small maps of many channels (`DepthwiseChannelsLast`), channels first in wide rows by stride
  phase on large maps (`DepthwiseRows`).
* `depthwise (compiled)`: with numba (`accel.enabled()`), one input channel per group and one or
  two spatial axes, in place of the plans above (`plan_forward` says where): the taps plans'
  sums in one compiled loop that keeps each channel and its sums in the cache
  (`depthwise_compiled.py`). Its bits are the per-offset kernel's, as the taps plans' are (the
  products through BLAS, im2col's and the bands', sum in BLAS's order instead).

What every plan implements, and how its work splits over the threads, is `plan_base.py`; a
split product may differ in its last bits from an unsplit one, as BLAS's own products differ
between its thread counts (the taps plans' and the compiled loop's parts are whole channels or
rows, whose sums do not change). The pointwise plan by blocks and the im2col plan can hand each
block of their output to a caller's `Finish` (a fused bias and activation) from the part that
wrote it (`finishing`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from irscatter.ops.common import accel, products, threads
from irscatter.ops.convolution.depthwise_compiled import DepthwiseCompiled
from irscatter.ops.convolution.kernels import Im2col, grouped_convolution, tap_range
from irscatter.ops.convolution.plan_base import Finish, Plan, Taps

# Patch elements a block of the im2col plan gathers at once (16 MB of f32), and at least
# BLOCK_COLUMNS output positions: fewer, larger products were faster than cache-sized ones on a
# quiet machine, while the bound keeps a large batch from gathering all its patches at once.
BLOCK_ELEMENTS = 1 << 22
# Output channels per position from which a 1x1 layer of one sample is split by its filters
# (`products.matmul`'s row blocks) rather than by its positions: there the filters outweigh the
# map, and a part of half the positions still reads all of them (ResNet-50's 1x1 layers at 7x7
# and 14x14 took 6-21% less that way in the model; at fewer filters, positions were as fast).
FILTER_CUT_RATIO = 4
# Gathered elements of one block of channels of the banded plan: they and the channels' bands
# stay in L2, and a layer of many small products splits evenly.
BAND_BLOCK = 1 << 18
BLOCK_COLUMNS = 256
# Positions per filter up to which a 1x1 layer of one sample and one group is split by its
# filters rather than by its positions (when not one product, FILTER_CUT_RATIO): two parts of
# half the filters each read half of them and keep every position's long rows, where halves of
# few positions made BLAS's short side shorter still (ResNet-50's 1x1 shapes at 28x28 and 14x14
# ran 5-20% faster that way, one BLAS thread a part; at 56x56 with few filters, slower).
FILTER_SPLIT_RATIO = 4


class Pointwise(Plan[np.ndarray]):
    name = "pointwise"

    def __init__(self, x_shape: Sequence[int], w_shape: Sequence[int], dtype: np.dtype) -> None:
        self.n, self.g, self.c = x_shape[:3]
        self.d = w_shape[1]
        self.dtype = np.dtype(dtype)
        self.positions = math.prod(x_shape[3:])
        self.out_shape = (self.n, self.g, self.d, *x_shape[3:])
        self.work = self.n * self.g * self.d * self.c * self.positions
        # one product through `products.matmul` (`_whole`), which hands over no blocks to finish
        self.whole = self.g == 1 and (self.positions == 1 or self.n == 1 and self.d >= FILTER_CUT_RATIO * self.positions)
        self.finishes = not self.whole

    def prepare(self, w: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(w.reshape(self.g, self.d, self.c))

    def _blocks(self, count: int) -> Sequence[tuple[int, ...]]:
        """(first sample, end, first position, end, first filter, end): whole samples when there
        are enough; else blocks of filters (see FILTER_SPLIT_RATIO), cut where BLAS keeps the
        bits of one product (`products.row_cuts`), or of positions. Called with BLAS on one
        thread."""
        d, positions = self.d, self.positions
        if count > 1 and self.n < count:
            if self.g == 1 and FILTER_SPLIT_RATIO * d >= positions:
                cuts = products.row_cuts(d, self.c * positions, count, self.dtype)
                if len(cuts) > 1:
                    return [(0, self.n, 0, positions, lo, hi) for lo, hi in cuts]
            return [(0, self.n, lo, hi, 0, d) for lo, hi in threads.spans(positions, count)]
        return [(lo, hi, 0, positions, 0, d) for lo, hi in threads.spans(self.n, count)]

    def __call__(self, x: np.ndarray, prepared: np.ndarray) -> np.ndarray:
        return self._whole(x, prepared) if self.whole else self._by_blocks(x, prepared, None)

    def finishing(self, x: np.ndarray, prepared: np.ndarray, finish: Finish) -> np.ndarray:
        return self._by_blocks(x, prepared, finish)

    def _whole(self, x: np.ndarray, prepared: np.ndarray) -> np.ndarray:
        if self.positions == 1:
            # A map of one position (a squeeze-excitation block's, a network's head): the samples
            # times the filters' transpose, a matrix-vector product for one sample, which
            # `products.matmul` splits by filters where a position split has nothing to split.
            rows = np.ascontiguousarray(x).reshape(self.n, self.c)
            return products.matmul(rows, prepared[0].T).reshape(self.out_shape)
        # Many filters on a small map (a ResNet's 512 -> 2048 channels at 7x7): two parts of half
        # the positions each read every filter; `products.matmul` cuts the filters.
        data = np.ascontiguousarray(x).reshape(self.c, self.positions)
        return products.matmul(prepared[0], data).reshape(self.out_shape)

    def _by_blocks(self, x: np.ndarray, prepared: np.ndarray, finish: Finish | None) -> np.ndarray:
        x = np.ascontiguousarray(x).reshape(self.n, self.g, self.c, self.positions)
        out = np.empty((self.n, self.g, self.d, self.positions), x.dtype)
        flat, channels = out.reshape(-1), self.g * self.d

        def block(n0: int, n1: int, p0: int, p1: int, d0: int, d1: int) -> None:
            np.matmul(prepared[:, d0:d1], x[n0:n1, ..., p0:p1], out=out[n0:n1, :, d0:d1, p0:p1])
            if finish is not None:  # (filter blocks are of one group: channel d0 is the block's first)
                for i in range(n0, n1):
                    finish(flat, (i * channels + d0) * self.positions + p0, self.positions, d1 - d0, p1 - p0, d0)
        self._run(block)
        return out.reshape(self.out_shape)


class Gathered(Plan[np.ndarray]):
    """The im2col formulation (`kernels.Im2col`) in blocks of samples and output rows; or, where
    the filters outweigh the patches (few positions, many channels: a network's last stages)
    or the groups' patches fit one block, the products split by groups or output channels, so
    that no two parts read all the filters, each part gathering the patches of its groups."""

    finishes = True

    def __init__(self, im2col: Im2col) -> None:
        self.im2col = im2col
        self.name = "im2col (wide rows)" if im2col.wide is not None else "im2col"
        self.work = math.prod(im2col.out_shape) * im2col.taps
        n, g, d = im2col.out_shape[:3]
        patches = self.work // d
        # Filters at least as large as the patches (C_OUT >= positions), or groups whose patches
        # fit one block: a part per range of groups reads only its groups' filters.
        self.by_channels = d * g * im2col.taps >= patches or g > 1 and patches <= BLOCK_ELEMENTS

    def prepare(self, w: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(w.reshape(self.im2col.filter_shape))

    def _blocks(self, count: int) -> Sequence[tuple[int, ...]]:
        plan = self.im2col
        if self.by_channels:  # (first group, end, first output channel, end)
            g, d = plan.out_shape[1:3]
            if g >= count:
                return [(lo, hi, 0, d) for lo, hi in threads.spans(g, count)]
            return [(0, g, lo, hi) for lo, hi in threads.spans(d, count)]
        limit = max(BLOCK_ELEMENTS, plan.taps * plan.out_shape[1] * BLOCK_COLUMNS)
        patches = self.work // plan.out_shape[2]  # elements of all samples' patches
        return plan.blocks(min(limit, -(-patches // count)))

    def __call__(self, x: np.ndarray, prepared: np.ndarray) -> np.ndarray:
        return self._by_blocks(x, prepared, None)

    def finishing(self, x: np.ndarray, prepared: np.ndarray, finish: Finish) -> np.ndarray:
        return self._by_blocks(x, prepared, finish)

    def _by_blocks(self, x: np.ndarray, prepared: np.ndarray, finish: Finish | None) -> np.ndarray:
        plan = self.im2col
        out = np.empty(plan.out_shape, x.dtype)
        view = plan.source(x)
        n, g, d = plan.out_shape[:3]
        positions = math.prod(plan.out_shape[3:])
        flat = out.reshape(-1)
        if self.by_channels:
            def by_channels(g0: int, g1: int, d0: int, d1: int) -> None:
                # each part gathers the patches of its own groups (a part of some output channels,
                # those of all groups): the parts gather side by side, where one gather before them
                # ran alone and left them to read its patches from another core
                plan.product(plan.group_patches(view, g0, g1), prepared[g0:g1, d0:d1], out[:, g0:g1, d0:d1])
                if finish is not None:  # each group's block of channels, in each sample
                    for i, group in itertools.product(range(n), range(g0, g1)):
                        finish(flat, ((i * g + group) * d + d0) * positions, positions, d1 - d0, positions,
                               group * d + d0)
            self._run(by_channels)
            return out
        rest = positions // plan.out_shape[3]  # positions per index of the first output axis

        def by_rows(n0: int, n1: int, r0: int, r1: int) -> None:
            plan.block(view, prepared, out, n0, n1, r0, r1)
            if finish is not None:  # every channel's rows r0..r1, in each sample
                for i in range(n0, n1):
                    finish(flat, i * g * d * positions + r0 * rest, positions, g * d, (r1 - r0) * rest, 0)
        self._run(by_rows)
        return out


def padded_into(x: np.ndarray, begin: Sequence[int], target: np.ndarray) -> np.ndarray:
    """Writes x [N, G, 1, *in] into the zeroed target [N, G, *dims] at offset `begin` along each
    spatial axis, cutting what lies past the target's end; returns the target."""
    inner, outer = [], []
    for size, b, p in zip(x.shape[3:], begin, target.shape[2:]):
        lo, hi = max(0, -b), max(max(0, -b), min(size, p - b))  # the data inside the target
        inner.append(slice(lo, hi))
        outer.append(slice(b + lo, b + hi))
    target[(slice(None),) * 2 + tuple(outer)] = x[:, :, 0][(slice(None),) * 2 + tuple(inner)]
    return target


class DepthwiseBanded(Plan[tuple[np.ndarray, np.ndarray | None, np.ndarray]]):
    """One input channel per group and a wide kernel: along the last axis the convolution is a
    product with a banded matrix B [e, C_OUT * b] for each block of b consecutive outputs
    (B[j, (d, o)] = w[d, j - o * stride] on the band, zero elsewhere; e = the inputs a block
    reads), the same for every block; the blocks and the other axes are gathered as im2col
    gathers them, so each channel is one matrix product, [rows * blocks, taps of the other axes
    * e] x B. A layer's bands are kept per Const up to BAND_KEEP elements, else made per block of
    channels at each call (a strided copy of the taps). The band's zeros multiply data outside
    each window, which is exact only for finite data: a call with an infinite or NaN input
    takes im2col, which multiplies only the window's inputs (and the padding's zeros)."""

    name = "depthwise (banded)"

    def __init__(self, x_shape: Sequence[int], w_shape: Sequence[int], dtype: np.dtype, strides: Sequence[int],
                 dilations: Sequence[int], begin: Sequence[int], out_dims: Sequence[int], columns: int) -> None:
        n, g = x_shape[:2]
        self.d, self.kernel = w_shape[1], tuple(w_shape[3:])
        self.x_shape, self.begin, self.out_dims = tuple(x_shape), tuple(begin), tuple(out_dims)
        self.strides, self.dilations = tuple(strides), tuple(dilations)
        self.fallback = Gathered(Im2col(x_shape, w_shape, dtype, strides, dilations, begin, out_dims))
        self.columns = min(columns, out_dims[-1])
        self.count = -(-out_dims[-1] // self.columns)  # blocks of columns along the last axis
        reach = [(k - 1) * dl + 1 for k, dl in zip(self.kernel, dilations)]
        self.extents = (*((o - 1) * s + r for o, s, r in zip(out_dims[:-1], strides, reach)),
                        (self.count * self.columns - 1) * strides[-1] + reach[-1])
        self.span = (self.columns - 1) * strides[-1] + reach[-1]  # the inputs one block reads
        self.lead = math.prod(self.kernel[:-1])
        self.rows = math.prod(out_dims[:-1])
        self.depth = self.lead * self.span
        self.work = n * g * self.rows * self.count * self.depth * self.d * self.columns

    def _blocks(self, count: int) -> Sequence[tuple[int, ...]]:
        """(first group, end), every sample at once: channels whose gathered rows fit in L2."""
        g = self.x_shape[1]
        per_channel = self.x_shape[0] * self.rows * self.count * self.depth
        per_block = max(1, min(BAND_BLOCK // per_channel, -(-g // count)))
        return [(lo, min(g, lo + per_block)) for lo in range(0, g, per_block)]

    def _band(self, w: np.ndarray) -> np.ndarray:
        """The bands [g, taps of the other axes * e, C_OUT * b] of filters w [g, C_OUT, lead, k]:
        a strided view of each row of taps laid in zeros, B[j, o] = v[(b - 1) * stride + j - o * stride]."""
        g, b, s = w.shape[0], self.columns, self.strides[-1]
        shift = (b - 1) * s
        laid = np.zeros((g, self.lead, self.d, shift + self.span), w.dtype)
        laid[..., shift + np.arange(self.kernel[-1]) * self.dilations[-1]] = w.transpose(0, 2, 1, 3)
        item = laid.itemsize
        view = np.lib.stride_tricks.as_strided(laid[..., shift:], (g, self.lead, self.span, self.d, b),
                                               (*laid.strides[:2], item, laid.strides[2], -s * item), writeable=False)
        return np.ascontiguousarray(view).reshape(g, self.depth, self.d * b)

    def prepare(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        taps = np.ascontiguousarray(w.reshape(self.x_shape[1], self.d, self.lead, self.kernel[-1]))
        keep = self.x_shape[1] * self.depth * self.d * self.columns <= BAND_KEEP
        return taps, self._band(taps) if keep else None, self.fallback.prepare(w)

    def __call__(self, x: np.ndarray, prepared: tuple[np.ndarray, np.ndarray | None, np.ndarray]) -> np.ndarray:
        taps, band, fallback = prepared
        if not np.isfinite(x).all():
            return self.fallback(x, fallback)
        n, g = self.x_shape[:2]
        padded = padded_into(x, self.begin, np.zeros((n, g, *self.extents), x.dtype))
        k, st = len(self.kernel), padded.strides
        # [N, G, *out[:-1], blocks, *kernel[:-1], e]: the inputs of each row's blocks of outputs
        view = np.lib.stride_tricks.as_strided(
            padded, (n, g, *self.out_dims[:-1], self.count, *self.kernel[:-1], self.span),
            (*st[:2], *(st[2 + i] * self.strides[i] for i in range(k - 1)), st[-1] * self.strides[-1] * self.columns,
             *(st[2 + i] * self.dilations[i] for i in range(k - 1)), st[-1]), writeable=False)
        wo, b, d, rows = self.out_dims[-1], self.columns, self.d, self.rows
        out = np.empty((n, g, d, rows, wo), x.dtype)
        exact = d == 1 and self.count * b == wo  # the product is the output's layout

        def block(lo: int, hi: int) -> None:
            gathered = np.ascontiguousarray(view[:, lo:hi]).reshape(n, hi - lo, rows * self.count, self.depth)
            bands = band[lo:hi] if band is not None else self._band(taps[lo:hi])
            if exact:
                np.matmul(gathered, bands, out=out[:, lo:hi, 0].reshape(n, hi - lo, rows * self.count, b))
                return
            product = np.matmul(gathered, bands).reshape(n, hi - lo, rows, self.count, d, b)
            out[:, lo:hi] = product.transpose(0, 1, 4, 2, 3, 5).reshape(n, hi - lo, d, rows, -1)[..., :wo]
        self._run(block)
        return out.reshape(n, g, d, *self.out_dims)


class DepthwiseRows(Taps[np.ndarray]):
    """The taps channels first, in wide rows: the padded data of each channel is laid out by
    phase of the strides (the inputs at p = q * stride + a along an axis in phase a, at q), so
    that every tap reads one phase at one offset, and its outputs over the phase's whole rows
    (as wide as the phase's padded row) are one contiguous run of each channel, multiplied by
    the channel's weight. The columns past each output row read into the next row; they are
    computed and cut off."""

    name = "depthwise (wide rows)"

    def __init__(self, *args) -> None:
        super().__init__(*args)
        reach = [(k - 1) * dl // s for k, dl, s in zip(self.kernel, self.dilations, self.strides)]
        self.grid = tuple(o + r for o, r in zip(self.out_dims, reach))  # a phase's padded extent
        self.phase_size = math.prod(self.grid)
        self.block = math.prod(self.strides) * self.phase_size  # one channel's phases
        steps = [math.prod(self.grid[i + 1:]) for i in range(len(self.grid))]
        self.run = self.out_dims[0] * steps[0]
        self.tail = sum(r * st for r, st in zip(reach, steps))
        phase_steps = [math.prod(self.strides[i + 1:]) * self.phase_size for i in range(len(self.strides))]
        self.offsets = [sum((t * dl) % s * ps + (t * dl) // s * st for t, dl, s, ps, st in
                            zip(tap, self.dilations, self.strides, phase_steps, steps))
                        for tap in np.ndindex(*self.kernel)]

    def prepare(self, w: np.ndarray) -> np.ndarray:
        """[taps, G, C_OUT, 1]: a column of weights per group to multiply the runs by."""
        return np.ascontiguousarray(w.reshape(self.g, self.d, self.taps, 1).transpose(2, 0, 1, 3))

    def _blocks(self, count: int) -> Sequence[tuple[int, ...]]:
        return threads.spans(self.g, count)

    def _phases(self, x: np.ndarray) -> np.ndarray:
        """The zero-padded data by phase, [N * G * block + tail] flat."""
        size = self.n * self.g * self.block
        flat = np.zeros(size + self.tail, x.dtype)
        grid = flat[:size].reshape((self.n, self.g) + self.strides + self.grid)
        for phase in np.ndindex(*self.strides):
            found = _inside(self.grid, self.in_dims, phase, self.strides, self.begin)
            if found is not None:
                grid[(slice(None),) * 2 + phase + found[0]] = x[(slice(None), slice(None), 0) + found[1]]
        return flat

    def __call__(self, x: np.ndarray, prepared: np.ndarray) -> np.ndarray:
        flat = self._phases(x)
        item = flat.itemsize
        wide = np.empty((self.n, self.g, self.d, self.run), x.dtype)
        # a tap's runs [N, groups, 1, run], broadcast over the outputs of each input channel
        strides = (self.g * self.block * item, self.block * item, 0, item)

        def block(g0: int, g1: int) -> None:
            shape = (self.n, g1 - g0, 1, self.run)
            _sum_of_products(wide[:, g0:g1], ((np.ndarray(shape, x.dtype, flat, (g0 * self.block + offset) * item,
                                                          strides), prepared[tap, g0:g1])
                                              for tap, offset in enumerate(self.offsets)))
        self._run(block)
        out = np.empty((self.n, self.g, self.d) + self.out_dims, x.dtype)
        rows = wide.reshape((self.n, self.g, self.d, self.out_dims[0]) + self.grid[1:])
        np.add(rows[(Ellipsis,) + tuple(slice(o) for o in self.out_dims[1:])], 0.0, out=out)
        return out


def _inside(dims: Sequence[int], sizes: Sequence[int], phase: Sequence[int], strides: Sequence[int],
            begin: Sequence[int]) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """Where the data lies in a padded buffer of `dims`, as slices of the buffer and of the data:
    buffer position q along an axis holds the input at q * stride + phase - begin. None if the
    buffer holds none of it."""
    found = [tap_range(q, size, a, s, 1, b) for q, size, a, s, b in zip(dims, sizes, phase, strides, begin)]
    if any(f is None for f in found):
        return None
    pairs = [f for f in found if f is not None]
    return tuple(p for p, _ in pairs), tuple(q for _, q in pairs)


def _sum_of_products(target: np.ndarray, pairs: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
    """target = the sum of source * weights over the pairs, added in their order: a multiply
    pass and an add pass each."""
    scratch = None
    for source, weights in pairs:
        if scratch is None:
            np.multiply(source, weights, out=target)
            scratch = np.empty_like(target)
        else:
            np.multiply(source, weights, out=scratch)
            target += scratch


class DepthwiseChannelsLast(Taps[np.ndarray]):
    """The taps in a channels-last copy of the data, [N, *padded, G * C_OUT] (each channel once
    per output it feeds): a tap's inputs for a row of outputs are a strided view whose channels
    are contiguous, and at stride 1 a whole row of them, one run as long as the row times the
    channels, multiplied by the tap's weights laid out as long (kept per Const). Small maps of
    many channels run long loops this way, where the rows of one channel are short. A position's
    channels take a few more lanes (of zeros) where their bytes are a multiple of 1 KB: copying
    into and out of the layout reads with that stride, and strides of a large power of two
    evict one another from the cache's same sets."""

    name = "depthwise (channels last)"

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.channels = self.g * self.d
        self.lanes = self.channels + (ALIAS_LANES if self.channels * self.dtype.itemsize % 1024 == 0 else 0)
        self.padded = tuple((o - 1) * s + (k - 1) * dl + 1 for o, s, k, dl in
                            zip(self.out_dims, self.strides, self.kernel, self.dilations))

    def prepare(self, w: np.ndarray) -> np.ndarray:
        tiles = np.zeros((self.taps, self.out_dims[-1], self.lanes), w.dtype)
        tiles[..., :self.channels] = w.reshape(self.channels, self.taps).T[:, None, :]
        return tiles

    def _blocks(self, count: int) -> Sequence[tuple[int, ...]]:
        """(sample, first row, end) along the first output axis."""
        rows = self.out_dims[0]
        return [(i, lo, hi) for i in range(self.n) for lo, hi in threads.spans(rows, -(-count // self.n))]

    def _window(self, offset: Sequence[int], r0: int, r1: int) -> tuple[slice, ...]:
        """The inputs of tap `offset` for output rows [r0, r1) of the first axis and all of the
        others: a strided box of the padded data."""
        firsts = [r0] + [0] * (len(offset) - 1)
        lasts = [r1 - 1] + [o - 1 for o in self.out_dims[1:]]
        return tuple(slice(t * dl + a * s, t * dl + b * s + 1, s) for t, dl, s, a, b in
                     zip(offset, self.dilations, self.strides, firsts, lasts))

    def _padded(self, x: np.ndarray) -> np.ndarray:
        padded = np.zeros((self.n,) + self.padded + (self.lanes,), x.dtype)
        found = _inside(self.padded, self.in_dims, [0] * len(self.padded), [1] * len(self.padded), self.begin)
        if found is not None:
            inside = np.moveaxis(x[:, :, 0], 1, -1)[(slice(None),) + found[1] + (slice(None), None)]
            by_group = padded[..., :self.channels].reshape((self.n,) + self.padded + (self.g, self.d))
            by_group[(slice(None),) + found[0]] = inside
        return padded

    def __call__(self, x: np.ndarray, prepared: np.ndarray) -> np.ndarray:
        padded = self._padded(x)
        last = np.empty((self.n,) + self.out_dims + (self.lanes,), x.dtype)

        def block(i: int, r0: int, r1: int) -> None:
            tiles = prepared[:, :r1 - r0] if len(self.kernel) == 1 else prepared  # the rows are the last axis
            _sum_of_products(last[i, r0:r1], ((padded[(i,) + self._window(offset, r0, r1)], tiles[tap])
                                              for tap, offset in enumerate(np.ndindex(*self.kernel))))
        self._run(block)
        out = np.empty((self.n, self.channels) + self.out_dims, x.dtype)
        np.add(np.moveaxis(last[..., :self.channels], -1, 1), 0.0, out=out)
        return out.reshape(self.n, self.g, self.d, *self.out_dims)


def plan_forward(x_shape: Sequence[int], w_shape: Sequence[int], dtype: np.dtype, strides: Sequence[int],
                 dilations: Sequence[int], begin: Sequence[int], out_dims: Sequence[int]) -> Plan | None:
    """The fastest formulation for a float convolution of this shape with finite filters, or None
    where only the per-offset kernel applies (integers, or nothing to compute). With numba
    (`accel.enabled()`), a depthwise layer of two spatial axes and `COMPILED_WORK` multiply-adds
    or more takes the compiled loop, and one
    of one axis where numpy's choice is not im2col (short rows of many channels, where BLAS's
    products over the gathered patches were as fast); a call made without numba goes to the
    numpy plan it keeps. A 1x1 kernel that needs no padding stays one product."""
    plan = _numpy_plan(x_shape, w_shape, dtype, strides, dilations, begin, out_dims)
    if plan is None or isinstance(plan, Pointwise) or x_shape[2] != 1 or w_shape[1] > DEPTHWISE_OUTPUTS \
            or np.dtype(dtype) not in COMPILED_TYPES:
        return plan
    work = math.prod(x_shape[:2]) * w_shape[1] * math.prod(out_dims) * math.prod(w_shape[3:])
    if (len(out_dims) == 2 or len(out_dims) == 1 and not isinstance(plan, Gathered)) and work >= COMPILED_WORK \
            and accel.enabled():
        geometry = (x_shape, w_shape, dtype, strides, dilations, begin, out_dims)
        return DepthwiseCompiled(*geometry, fallback=plan, unloaded=_same_bits_in_numpy(plan, geometry, work))
    return plan


def _same_bits_in_numpy(plan: Plan, geometry: tuple, work: int) -> Plan | None:
    """The numpy plan with the compiled loop's bits (a taps plan) for a layer's calls before
    numba's loop is loaded: numpy's own choice where it is one, else, where the taps are few
    enough or the layer's `work` (multiply-adds) small enough that their passes cost less than
    loading numba once, the channels-last plan on a small map and the wide rows on a larger one
    (None: load numba)."""
    if isinstance(plan, (DepthwiseRows, DepthwiseChannelsLast)):
        return plan
    w_shape, out_dims = geometry[1], geometry[6]
    if math.prod(w_shape[3:]) > UNLOADED_TAPS and work > UNLOADED_WORK:
        return None
    if len(out_dims) > 1 and math.prod(out_dims) <= UNLOADED_LAST_POSITIONS:
        return DepthwiseChannelsLast(*geometry)
    return DepthwiseRows(*geometry)


def _numpy_plan(x_shape: Sequence[int], w_shape: Sequence[int], dtype: np.dtype, strides: Sequence[int],
                dilations: Sequence[int], begin: Sequence[int], out_dims: Sequence[int]) -> Plan | None:
    """`plan_forward`'s choice among the numpy plans."""
    if np.dtype(dtype).kind != "f":
        return None
    n, g, c = x_shape[:3]
    d, kernel = w_shape[1], tuple(w_shape[3:])
    if n * g * d * math.prod(out_dims) == 0 or c == 0:
        return None
    if all(k == 1 for k in kernel) and all(s == 1 for s in strides) and not any(begin) \
            and tuple(out_dims) == tuple(x_shape[3:]):
        return Pointwise(x_shape, w_shape, dtype)
    geometry = (x_shape, w_shape, dtype, strides, dilations, begin, out_dims)
    taps, positions = math.prod(kernel), math.prod(out_dims)
    if c == 1 and d <= DEPTHWISE_OUTPUTS:
        if len(kernel) > 1 and taps * positions <= SHORT_TAPS and out_dims[-1] * g * d >= LONG_RUN:
            return DepthwiseChannelsLast(*geometry)
        rows = DepthwiseRows(*geometry)
        few = taps <= DEPTHWISE_TAPS or max(kernel) <= 3
        if few and rows.run >= LONG_RUN // 2 and rows.run * g * d >= WIDE_ROWS_ELEMENTS:
            return rows
        if taps > DEPTHWISE_TAPS:
            columns = kernel[-1] * (BAND_COLUMNS if len(kernel) > 1 else 1)
            return DepthwiseBanded(*geometry, columns)
    return Gathered(Im2col(x_shape, w_shape, dtype, strides, dilations, begin, out_dims))


# The work dtypes the compiled depthwise loop takes (f16 and bf16 layers work in f32).
COMPILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Multiply-adds from which a depthwise layer takes the compiled loop: a smaller one saves some
# tens of microseconds a call, where loading numba costs a second once a process (and compiling
# the loop, on its first use after an install, several).
COMPILED_WORK = 1 << 18
# A depthwise layer's first call, before numba's loop is loaded, takes a numpy taps plan (the
# loop's bits) rather than loading numba, about a second once a process (numba's first kernel
# imports scipy.linalg), where it has UNLOADED_TAPS taps (7x7) or fewer, or UNLOADED_WORK
# multiply-adds or fewer: ConvNeXt-T's eighteen 7x7 layers, and ConvMixer's twenty 9x9 layers of
# 1024 channels on 16x16 maps, whose numpy passes together cost less than the load. Up to
# UNLOADED_LAST_POSITIONS positions a channel, the channels-last plan: its runs are rows times
# channels, where the wide rows' runs are short (it was the faster up to 48x48 maps, the slower
# from 56x56 on: docs/performance.md).
UNLOADED_TAPS = 49
UNLOADED_WORK = 1 << 25
UNLOADED_LAST_POSITIONS = 48 * 48
# One input channel per group: im2col's blocks are as fast as the banded product for a 3x3 kernel
# or smaller, or more than a few outputs per input channel; beyond, the banded product wins.
DEPTHWISE_OUTPUTS = 4
DEPTHWISE_TAPS = 9
# One input channel per group, each tap a multiply-add pass (the taps plans). Each pass costs
# numpy a call per run of contiguous elements, so these win where the runs are long and the
# taps few enough. Channels last (2-D and 3-D; a 1-D layer's copies into and out of the layout
# cost more than its short rows): a run is a row of outputs times the channels, at least
# LONG_RUN elements, and the taps times the positions of a channel at most SHORT_TAPS (5x5
# taps on a 14x14 map): beyond, the products' (im2col's or the bands') fewer passes over the
# data win. Wide rows: 9 taps or fewer, or 3 or fewer along every axis, runs of at least
# LONG_RUN / 2 elements and at least WIDE_ROWS_ELEMENTS outputs in all, where im2col's copy of
# the data per tap costs most.
SHORT_TAPS = 25 * 196
LONG_RUN = 4096
WIDE_ROWS_ELEMENTS = 1 << 17
# Lanes (a cache line of f32) the channels-last layout adds to a position whose channels' bytes
# are a multiple of 1 KB.
ALIAS_LANES = 16
# Outputs per band, in kernel widths: a band does (b + k - 1) / k times the multiply-adds the
# taps need; wider bands do more, narrower ones make smaller products. Rows of a 1-D layer are
# single, so there the band is one kernel width.
BAND_COLUMNS = 2
# Elements of a layer's banded matrices kept per Const, at most (4 MB of f32); larger ones are
# made at each call, a block of channels at a time.
BAND_KEEP = 1 << 20


def forward_convolution(x: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
                        begin: Sequence[int], out_dims: Sequence[int], finite: bool | None = None) -> np.ndarray:
    """`grouped_convolution`'s result through the plan for its shape where one applies (float
    data, finite filters), else the per-offset kernel itself."""
    if finite is None:
        finite = bool(np.isfinite(w).all()) if w.dtype.kind == "f" else True
    plan = plan_forward(x.shape, w.shape, x.dtype, strides, dilations, begin, out_dims) if finite else None
    if plan is None:
        return grouped_convolution(x, w, strides, dilations, begin, out_dims)
    return plan(x, plan.prepare(w))
