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
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def depthwise(x, w, out, geometry, offsets, zero, c0, c1):  # pragma: no cover - compiled
    """out[c, d] for channels c in [c0, c1): x [channels, H, W] (channel c in group c % G),
    w [G, D, taps], out [channels, D, OH, OW], `offsets` [taps] (int64) where each tap reads in
    the channel's copy laid out by stride phase, `zero` the dtype's +0.0. `geometry` (int64):
    strides (sy, sx), pads before (by, bx), a phase's rows and columns (hq, wq), rows per block.

    The channel is copied once into a buffer by phase of the strides (input (p, q) at
    (p % sy, q % sx, p // sy, q // sx) after padding), zeros around it, so that each tap reads
    one contiguous run for a block of output rows as wide as the phase's rows (`wq`); the
    columns past a row's end read into the next row and are computed and cut off."""
    sy, sx, by, bx, hq, wq, block = (geometry[0], geometry[1], geometry[2], geometry[3], geometry[4],
                                     geometry[5], geometry[6])
    g, d_out, taps = w.shape
    h, wd = x.shape[1], x.shape[2]
    oh, ow = out.shape[2], out.shape[3]
    plane = hq * wq
    # a row and a vector more: the last block's cut columns (and its rounding up) read past
    copy = np.zeros(sy * sx * plane + wq + LANES, x.dtype)
    acc = np.empty(block * wq + LANES, x.dtype)
    for c in range(c0, c1):
        _lay_out(x[c], copy, sy, sx, by, bx, hq, wq, h, wd)
        weights = w[c % g]
        for d in range(d_out):
            tap_weights, target = weights[d], out[c, d]
            for r0 in range(0, oh, block):
                rows = min(block, oh - r0)
                length = -(-rows * wq // LANES) * LANES  # whole vectors: no scalar remainder
                start = r0 * wq
                for j in range(np.uint64(length)):
                    acc[j] = zero
                t = 0
                while t < taps:
                    _add_taps(acc, copy, offsets, tap_weights, t, start, length)
                    t += GROUP if t + GROUP <= taps else 1
                for r in range(rows):
                    line, row = np.uint64(r * wq), np.uint64(r0 + r)
                    for j in range(np.uint64(ow)):
                        target[row, j] = acc[line + j]


# Taps added in one pass over a block's sums: each sum stays in a register across them, in
# the same order, where a pass a tap would load and store it once per tap.
GROUP = 4
# The sums of a block are computed in whole runs of this many (the cut columns grow by less).
LANES = 16


@numba.njit(nogil=True, cache=True, inline="always")
def _add_taps(acc, copy, offsets, weights, t, start, length):  # pragma: no cover - compiled
    """acc[:length] += the products of taps t to t + GROUP - 1 in that order, or of tap t alone
    where fewer than GROUP are left."""
    n, oa, wa = np.uint64(length), np.uint64(offsets[t] + start), weights[t]
    if t + GROUP > len(offsets):
        for j in range(n):
            acc[j] = acc[j] + copy[oa + j] * wa
        return
    ob, oc, od = np.uint64(offsets[t + 1] + start), np.uint64(offsets[t + 2] + start), np.uint64(offsets[t + 3] + start)
    wb, wc, wd = weights[t + 1], weights[t + 2], weights[t + 3]
    for j in range(n):
        acc[j] = acc[j] + copy[oa + j] * wa + copy[ob + j] * wb + copy[oc + j] * wc + copy[od + j] * wd


@numba.njit(nogil=True, cache=True)
def _lay_out(channel, copy, sy, sx, by, bx, hq, wq, h, wd):  # pragma: no cover - compiled
    """Writes the channel's inputs into their places in `copy` (phases of the strides); what
    lies in the padding stays as it was (zeros)."""
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
                base, source, row = np.uint64((ay * sx + ax) * hq * wq + q * wq + lo), np.uint64(first), np.uint64(i)
                for k in range(np.uint64(hi - lo)):
                    copy[base + k] = channel[row, source + k * np.uint64(sx)]
