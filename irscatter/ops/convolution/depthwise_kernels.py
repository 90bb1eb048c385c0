"""The compiled loop of `depthwise_compiled.DepthwiseCompiled` (imported only when numba is
used, since importing this module imports numba). Module-level functions, so that numba's disk
cache finds them again in the next process; they hold no GIL, so irscatter's threads run their
channel ranges side by side.

The arithmetic is the per-offset kernel's: each output is +0.0 plus its taps' products in
row-major tap order, each product rounded, then added (no fused multiply-add: numba leaves
contraction off unless `fastmath` asks for it, and these functions do not), so a sum of -0.0
products is +0.0 as there. The padding is zeros in the channel's copy, so a tap there adds
0 * w = +-0, which changes no sum from +0.0 on (the weights are finite), where the per-offset
kernel skips the tap.

Indices are unsigned where the loops read and write: numba checks a signed index for
wraparound at every element (which keeps the loop from vectorizing) and an unsigned one not,
and the views that would give known non-negative indices instead cost more to make, one per
tap group and row, than the arithmetic of a channel of a small map (MobileNetV3's 960 channels
of 7x7: 0.88 -> 0.66 ms on one core).

A small map (a few outputs a row) leaves that loop little to run per channel: its sums are a
few vectors, and the copy, the zeroing and the writing out of each channel cost more than its
taps. `depthwise_lanes` takes such layers a block of channels at a time, side by side: a
position's channels are a vector, so the taps run over whole rows of positions. Its
arithmetic is the same, in the same order, and so are its bits.
"""

from __future__ import annotations

from functools import cache

import numba
import numpy as np

from irscatter.ops.common import machine_code
from irscatter.ops.common.compiled_hints import WIDE_VECTORS, wide_vectors
from irscatter.ops.convolution.depthwise_kept import KEPT_LANES, KEPT_LOOP, LANES


@numba.njit(nogil=True, cache=True)
def depthwise(x, w, out, geometry, offsets, zero, c0, c1, copy, acc):  # pragma: no cover - compiled
    """out[c, d] for channels c in [c0, c1): x [channels, H, W] (channel c in group c % G),
    w [G, D, taps], out [channels, D, OH, OW], `offsets` [taps] (int64) where each tap reads in
    the channel's copy laid out by stride phase, `zero` the dtype's +0.0. `geometry` (int64):
    strides (sy, sx), pads before (by, bx), a phase's rows and columns (hq, wq), rows per block.
    `copy` and `acc` are the caller's buffers (`copy_size` zeros and `acc_size` elements): the
    loop allocates nothing, so that its machine code runs without numba (`machine_code`).

    The channel is copied once into a buffer by phase of the strides (input (p, q) at
    (p % sy, q % sx, p // sy, q // sx) after padding), zeros around it, so that each tap reads
    one contiguous run for a block of output rows as wide as the phase's rows (`wq`); the
    columns past a row's end read into the next row and are computed and cut off."""
    if WIDE_VECTORS:
        wide_vectors()  # (a pass's eight taps are eight products a vector of sums: wider vectors, fewer passes)
    sy, sx, by, bx, hq, wq, block = (geometry[0], geometry[1], geometry[2], geometry[3], geometry[4],
                                     geometry[5], geometry[6])
    g, d_out, taps = w.shape
    h, wd = x.shape[1], x.shape[2]
    oh, ow = out.shape[2], out.shape[3]
    for c in range(c0, c1):
        _lay_out(x[c], copy, sy, sx, by, bx, hq, wq, h, wd, 0, 1)
        weights = w[c % g]
        for d in range(d_out):
            tap_weights, target = weights[d], out[c, d]
            for r0 in range(0, oh, block):
                rows = min(block, oh - r0)
                length = -(-rows * wq // LANES) * LANES  # whole vectors: no scalar remainder
                start = r0 * wq
                for j in range(np.uint64(length)):
                    acc[j] = zero
                _add_taps(acc, copy, offsets, tap_weights, start, length)
                for r in range(rows):
                    line, row = np.uint64(r * wq), np.uint64(r0 + r)
                    for j in range(np.uint64(ow)):
                        target[row, j] = acc[line + j]


@numba.njit(nogil=True, cache=True)
def depthwise_lanes(x, lanes, out, geometry, offsets, zero, c0, c1, block, spread,
                    sums):  # pragma: no cover - compiled
    """`depthwise`'s outputs for channels c0 to c1, a block of `size` channels at a time (c0 a
    multiple of `size`). `lanes` [blocks, D, taps, size] holds the filters of channel size * b + l
    at [b, :, :, l] (zeros past the last channel).
    A block's channels are copied by phase of the strides as `depthwise` copies one, each
    position's values side by side; each tap's filters are repeated along a row of outputs, so
    that the tap's products for the row are one run; each sum takes its taps in `depthwise`'s
    order. The lanes of a last, partial block are computed and not written out. `block` (zeros),
    `spread` and `sums` are the caller's buffers (`lanes_sizes`)."""
    if WIDE_VECTORS:
        wide_vectors()  # (a position's channels are one 512-bit vector)
    sy, sx, by, bx, hq, wq = geometry[0], geometry[1], geometry[2], geometry[3], geometry[4], geometry[5]
    d_out, size = lanes.shape[1], lanes.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    run = ow * size  # a row of outputs, `size` channels a position
    for c in range(c0, c1, size):
        count = min(size, c1 - c)
        for lane in range(count):  # (a small map: the block stays in the cache meanwhile)
            _lay_out(x[c + lane], block, sy, sx, by, bx, hq, wq, x.shape[1], x.shape[2], lane, size)
        for d in range(d_out):
            _spread(lanes[c // size, d], spread, ow)
            for oy in range(oh):
                _row_sums(block, spread, sums, offsets, oy * wq * size, oy * run, run, size, zero)
            for oy in range(oh):
                for lane in range(count):
                    target, first = out[c + lane, d, oy], np.uint64(oy * run + lane)
                    for ox in range(np.uint64(ow)):
                        target[ox] = sums[first + ox * np.uint64(size)]


@numba.njit(nogil=True, cache=True, inline="always")
def _spread(filters, spread, ow):  # pragma: no cover - compiled
    """spread[t, ox, :] = filters[t] ([taps, size]) for each of a row's `ow` positions."""
    size = filters.shape[1]
    for t in range(filters.shape[0]):
        for ox in range(ow):
            at = np.uint64((t * ow + ox) * size)
            for lane in range(np.uint64(size)):
                spread[at + lane] = filters[t, lane]


@numba.njit(nogil=True, cache=True, inline="always")
def _row_sums(block, spread, sums, offsets, start, at, run, lanes, zero):  # pragma: no cover - compiled
    """sums[at:at + run] = +0.0 plus each tap's products for one row of outputs, in tap order,
    in the passes `depthwise` adds them in; `start` is where the row's windows begin in each
    phase of `block`, `lanes` values a position."""
    n, s0 = np.uint64(run), np.uint64(at)
    for q in range(n):
        sums[s0 + q] = zero
    t, taps, size, first = 0, len(offsets), np.uint64(lanes), np.uint64(start)
    while t < taps:  # (each tap's windows begin at a, its filters, spread along the row, at f)
        group = _group(t, taps)
        a0, f0 = np.uint64(offsets[t]) * size + first, np.uint64(t * run)
        if group == 1:
            for q in range(n):
                sums[s0 + q] = sums[s0 + q] + block[a0 + q] * spread[f0 + q]
            t += 1
            continue
        a1, a2, a3 = (np.uint64(offsets[t + 1]) * size + first, np.uint64(offsets[t + 2]) * size + first,
                      np.uint64(offsets[t + 3]) * size + first)
        f1, f2, f3 = f0 + n, f0 + n + n, f0 + n + n + n
        if group == HALF_GROUP:
            for q in range(n):
                sums[s0 + q] = (sums[s0 + q] + block[a0 + q] * spread[f0 + q] + block[a1 + q] * spread[f1 + q]
                                + block[a2 + q] * spread[f2 + q] + block[a3 + q] * spread[f3 + q])
            t += HALF_GROUP
            continue
        a4, a5, a6, a7 = (np.uint64(offsets[t + 4]) * size + first, np.uint64(offsets[t + 5]) * size + first,
                          np.uint64(offsets[t + 6]) * size + first, np.uint64(offsets[t + 7]) * size + first)
        f4, f5, f6, f7 = f3 + n, f3 + n + n, f3 + n + n + n, f3 + n + n + n + n
        for q in range(n):
            sums[s0 + q] = (sums[s0 + q] + block[a0 + q] * spread[f0 + q] + block[a1 + q] * spread[f1 + q]
                            + block[a2 + q] * spread[f2 + q] + block[a3 + q] * spread[f3 + q]
                            + block[a4 + q] * spread[f4 + q] + block[a5 + q] * spread[f5 + q]
                            + block[a6 + q] * spread[f6 + q] + block[a7 + q] * spread[f7 + q])
        t += GROUP


# Taps added in one pass over a block's sums: each sum stays in a register across them, in
# the same order, where a pass a tap would load and store it once per tap, and each pass has a
# fixed cost (its bounds, its first vector) that a short block of sums pays again. Passes of
# GROUP taps first, then one of HALF_GROUP where that many are left, then one a tap (a 9x9
# kernel: eleven passes, where four a pass made twenty-one; sixteen a pass gained nothing more
# and holds more registers: docs/performance.md).
GROUP = 8
HALF_GROUP = 4
# The sums of a block are computed in whole runs of LANES (the cut columns grow by less).


@numba.njit(nogil=True, cache=True, inline="always")
def _group(t, taps):  # pragma: no cover - compiled
    """How many taps from tap t the next pass adds."""
    if t + GROUP <= taps:
        return GROUP
    return HALF_GROUP if t + HALF_GROUP <= taps else 1


@numba.njit(nogil=True, cache=True, inline="always")
def _add_taps(acc, copy, offsets, weights, start, length):  # pragma: no cover - compiled
    """acc[:length] += the products of every tap, in tap order, in passes of `_group` taps
    (tap k's window begins at ok in `copy`)."""
    n, t, taps = np.uint64(length), 0, len(offsets)
    while t < taps:
        group = _group(t, taps)
        o0, w0 = np.uint64(offsets[t] + start), weights[t]
        if group == 1:
            for j in range(n):
                acc[j] = acc[j] + copy[o0 + j] * w0
            t += 1
            continue
        o1, o2, o3 = np.uint64(offsets[t + 1] + start), np.uint64(offsets[t + 2] + start), np.uint64(offsets[t + 3] + start)
        w1, w2, w3 = weights[t + 1], weights[t + 2], weights[t + 3]
        if group == HALF_GROUP:
            for j in range(n):
                acc[j] = acc[j] + copy[o0 + j] * w0 + copy[o1 + j] * w1 + copy[o2 + j] * w2 + copy[o3 + j] * w3
            t += HALF_GROUP
            continue
        o4, o5, o6, o7 = (np.uint64(offsets[t + 4] + start), np.uint64(offsets[t + 5] + start),
                          np.uint64(offsets[t + 6] + start), np.uint64(offsets[t + 7] + start))
        w4, w5, w6, w7 = weights[t + 4], weights[t + 5], weights[t + 6], weights[t + 7]
        for j in range(n):
            acc[j] = (acc[j] + copy[o0 + j] * w0 + copy[o1 + j] * w1 + copy[o2 + j] * w2 + copy[o3 + j] * w3
                      + copy[o4 + j] * w4 + copy[o5 + j] * w5 + copy[o6 + j] * w6 + copy[o7 + j] * w7)
        t += GROUP


@numba.njit(nogil=True, cache=True)
def _lay_out(channel, copy, sy, sx, by, bx, hq, wq, h, wd, lane, size):  # pragma: no cover - compiled
    """Writes the channel's inputs into their places in `copy` (phases of the strides), every
    `size`-th element from `lane` on (1 and 0: all of them); what lies in the padding stays as
    it was (zeros)."""
    for ay in range(sy):
        for ax in range(sx):
            # the phase's columns q with an input at q * sx + ax - bx in [0, wd)
            lo = max(0, (bx - ax + sx - 1) // sx)
            hi = min(wq, (wd - 1 + bx - ax) // sx + 1)
            if hi <= lo:
                continue
            first = lo * sx + ax - bx
            for q in range(hq):
                i = q * sy + ay - by
                if i < 0 or i >= h:
                    continue
                base = np.uint64(((ay * sx + ax) * hq * wq + q * wq + lo) * size + lane)
                source, row, step = np.uint64(first), np.uint64(i), np.uint64(size)
                for k in range(np.uint64(hi - lo)):
                    copy[base + k * step] = channel[row, source + k * np.uint64(sx)]


@cache
def _as_c_loops() -> tuple[object, object]:
    """`depthwise` and `depthwise_lanes` in f32 as C functions of pointers and sizes
    (`depthwise_kept.KEPT_LOOP` and `KEPT_LANES`), compiled once."""
    types = numba.types
    f32, i64 = types.CPointer(types.float32), types.CPointer(types.int64)
    n = types.int64

    @numba.cfunc(types.int64(f32, n, n, n, f32, n, n, n, n, f32, n, n, i64, i64, n, n, f32, n, f32, n, f32, n))
    def loop(x, channels, h, wd, w, g, d, taps, size, out, oh, ow, geometry, offsets, c0, c1, copy, copy_size, acc,
             acc_size, unused, unused_size):  # pragma: no cover - compiled
        depthwise(numba.carray(x, (channels, h, wd)), numba.carray(w, (g, d, taps)),
                  numba.carray(out, (channels, d, oh, ow)), numba.carray(geometry, (7,)),
                  numba.carray(offsets, (taps,)), np.float32(0), c0, c1, numba.carray(copy, (copy_size,)),
                  numba.carray(acc, (acc_size,)))
        return 0

    @numba.cfunc(types.int64(f32, n, n, n, f32, n, n, n, n, f32, n, n, i64, i64, n, n, f32, n, f32, n, f32, n))
    def lanes_loop(x, channels, h, wd, lanes, blocks, d, taps, size, out, oh, ow, geometry, offsets, c0, c1, block,
                   block_size, spread, spread_size, sums, sums_size):  # pragma: no cover - compiled
        depthwise_lanes(numba.carray(x, (channels, h, wd)), numba.carray(lanes, (blocks, d, taps, size)),
                        numba.carray(out, (channels, d, oh, ow)), numba.carray(geometry, (7,)),
                        numba.carray(offsets, (taps,)), np.float32(0), c0, c1, numba.carray(block, (block_size,)),
                        numba.carray(spread, (spread_size,)), numba.carray(sums, (sums_size,)))
        return 0

    return loop, lanes_loop


@cache
def keep_loops() -> None:
    """Keeps both loops' f32 machine code for later processes (`machine_code.keep`), once a process."""
    machine_code.keep(KEPT_LOOP, lambda: _as_c_loops()[0])
    machine_code.keep(KEPT_LANES, lambda: _as_c_loops()[1])
