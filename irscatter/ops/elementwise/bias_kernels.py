"""A per-channel bias added to a convolution's output, then an activation, in one compiled pass
written over the output (`runtime/epilogues.py` fuses the three layers in a plain run; imported
only when numba is used, since importing it imports numba).

Each element takes the layers' own arithmetic, in their type, in their order, so the bits are
theirs: the sum of Add-1 (one rounding), then
* Relu-1: the sum if it is greater than 0, else +0.0 (so NaN and -0.0 give +0.0, as the row
  kernel's fmax and + 0.0 do);
* HSwish-4: t = min(max(v + 3, 0), 6), then (v * t) / 6, a NaN kept through the clamps as
  numpy's maximum and minimum keep it;
* HSigmoid-5: the same t, then t / 6;
* Swish-4 without beta: v / (e^(v * -1) + 1), its exponential numpy's (the layer's own call)
  between two compiled passes (`biased_scaled`, then `divided_by_successor`), a block at a time.
The constants come typed as the output (`ops/elementwise/...` compute f32 layers in f32), so
nothing is widened. The loops have no fast-math: no contraction, no reassociation.
"""

from __future__ import annotations

import numba

NONE, RELU, HSWISH, HSIGMOID, SWISH = 0, 1, 2, 3, 4


@numba.njit(nogil=True, cache=True, error_model="numpy")
def biased(out, bias, first, activation, zero, three, six):  # pragma: no cover - compiled
    """out[r] = activation(out[r] + bias[(first + r) % channels]) for each row r of out, in
    place: rows of [samples x channels, positions] from row `first` on."""
    channels = bias.size
    for r in range(out.shape[0]):
        b = bias[(first + r) % channels]
        row = out[r]
        if activation == RELU:
            for j in range(row.size):
                v = row[j] + b
                row[j] = v if v > zero else zero
        elif activation == HSWISH:
            for j in range(row.size):
                v = row[j] + b
                t = v + three
                t = zero if t < zero else t
                t = six if t > six else t
                row[j] = (v * t) / six
        elif activation == HSIGMOID:
            for j in range(row.size):
                t = row[j] + b + three
                t = zero if t < zero else t
                t = six if t > six else t
                row[j] = t / six
        else:
            for j in range(row.size):
                row[j] = row[j] + b


@numba.njit(nogil=True, cache=True, error_model="numpy")
def biased_scaled(out, bias, first, factor, scaled):  # pragma: no cover - compiled
    """out[r] += bias[(first + r) % channels], in place, and scaled = that sum * factor."""
    channels = bias.size
    for r in range(out.shape[0]):
        b, row, target = bias[(first + r) % channels], out[r], scaled[r]
        for j in range(row.size):
            v = row[j] + b
            row[j] = v
            target[j] = v * factor


@numba.njit(nogil=True, cache=True, error_model="numpy")
def divided_by_successor(out, values, one):  # pragma: no cover - compiled
    """out = out / (values + 1), in place."""
    for r in range(out.shape[0]):
        row, value = out[r], values[r]
        for j in range(row.size):
            row[j] = row[j] / (value[j] + one)
