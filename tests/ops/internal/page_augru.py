"""AUGRUCell and AUGRUSequence as their pages write them, one batch row and hidden unit at a
time, in Python floats (f64); f = sigmoid, g = tanh, gates z, r, h stacked in that order:

    rt = f(Xt Wr^T + Ht-1 Rr^T + Wbr + Rbr)
    zt = f(Xt Wz^T + Ht-1 Rz^T + Wbz + Rbz)
    ht = g(Xt Wh^T + (rt . Ht-1) Rh^T + Rbh + Wbh)
    zt' = (1 - at) . zt
    Ht = (1 - zt') . ht + zt' . Ht-1

B holds each gate's biases summed (Wb + Rb). The sequence runs forward; a row stops at its
length: Y is zero past it and Ho is its last state (zeros for a length of 0, as GRUSequence).
"""

from __future__ import annotations

import math

import numpy as np


def _sigmoid(v: float) -> float:
    if math.isnan(v):
        return v
    return 1 / (1 + math.exp(-v)) if v > -700 else 0.0


def _dot(row, vector) -> float:
    return sum(float(a) * b for a, b in zip(row, vector))


def _step(x: list[float], h: list[float], a: float, w, r, b) -> list[float]:
    n = len(h)
    z = [_sigmoid(_dot(w[j], x) + _dot(r[j], h) + float(b[j])) for j in range(n)]
    reset = [_sigmoid(_dot(w[n + j], x) + _dot(r[n + j], h) + float(b[n + j])) for j in range(n)]
    gated = [reset[j] * h[j] for j in range(n)]
    candidate = [math.tanh(_dot(w[2 * n + j], x) + _dot(r[2 * n + j], gated) + float(b[2 * n + j])) for j in range(n)]
    scaled = [(1 - a) * z[j] for j in range(n)]
    return [(1 - scaled[j]) * candidate[j] + scaled[j] * h[j] for j in range(n)]


def augru_cell(x, h, w, r, b, a) -> np.ndarray:
    out = np.zeros(h.shape)
    for n in range(x.shape[0]):
        out[n] = _step([float(v) for v in x[n]], [float(v) for v in h[n]], float(a[n, 0]), w, r, b)
    return out


def augru_sequence(x, h, lengths, w, r, b, a) -> tuple[np.ndarray, np.ndarray]:
    batch, seq, _ = x.shape
    hidden = h.shape[-1]
    y = np.zeros((batch, 1, seq, hidden))
    last = np.zeros((batch, 1, hidden))
    for n in range(batch):
        state = [float(v) for v in h[n, 0]]
        for t in range(int(lengths[n])):
            state = _step([float(v) for v in x[n, t]], state, float(a[n, t, 0]), w[0], r[0], b[0])
            y[n, 0, t] = state
        if int(lengths[n]) > 0:
            last[n, 0] = state
    return y, last
