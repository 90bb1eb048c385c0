"""GatedResidual as its page writes it, one token row, branch, channel and low-rank unit at a
time, in Python floats (f64):

    Rbar_c = RMSNorm_D(R_c, gamma_c, eps)              gamma = 1 + w (norm_gain_plus_one) or w
    T = SiLU(Rbar W_down^T / C);  G = sigmoid(T W_up^T);  M = (1/C) sum_c G_c . Rbar_c
    S = 2 sigmoid(Rbar W_inject^T / C)                 (READ with produce_write_gate)
    R'_c = R_c + S_c Y                                 (WRITE)
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _sigmoid(v: float) -> float:
    if math.isnan(v):
        return v
    return 1 / (1 + math.exp(-v)) if v > -700 else 0.0


def _rows(shape):
    return itertools.product(*(range(d) for d in shape))


def read(residual, norm_weight, w_down, w_up, w_inject=None, *, hc_count, hidden_size, epsilon=1e-6,
         norm_gain_plus_one=True):
    """(mixed, write_gate or None) for READ and FINAL_MIX."""
    c_count, d_count = hc_count, hidden_size
    lead = residual.shape[:-1]
    mixed = np.zeros((*lead, d_count))
    gate_out = np.zeros((*lead, c_count)) if w_inject is not None else None
    for row in _rows(lead):
        r = [float(v) for v in residual[row]]
        normed = []
        for c in range(c_count):
            branch = r[c * d_count:(c + 1) * d_count]
            root = math.sqrt(sum(v * v for v in branch) / d_count + epsilon)
            for d, v in enumerate(branch):
                w = float(norm_weight[c * d_count + d])
                normed.append(v / root * ((1 + w) if norm_gain_plus_one else w))
        low = []
        for unit in range(w_down.shape[0]):
            t = sum(float(w_down[unit, k]) * normed[k] for k in range(c_count * d_count)) / c_count
            low.append(t * _sigmoid(t))
        gates = [_sigmoid(sum(float(w_up[k, unit]) * low[unit] for unit in range(len(low))))
                 for k in range(c_count * d_count)]
        for d in range(d_count):
            mixed[row + (d,)] = sum(gates[c * d_count + d] * normed[c * d_count + d] for c in range(c_count)) / c_count
        if gate_out is not None:
            for c in range(c_count):
                s = sum(float(w_inject[c, k]) * normed[k] for k in range(c_count * d_count)) / c_count
                gate_out[row + (c,)] = 2 * _sigmoid(s)
    return mixed, gate_out


def write(residual, sublayer_y, write_gate, *, hc_count, hidden_size):
    out = np.zeros(residual.shape)
    for row in _rows(residual.shape[:-1]):
        for c in range(hc_count):
            for d in range(hidden_size):
                k = c * hidden_size + d
                out[row + (k,)] = float(residual[row + (k,)]) + float(write_gate[row + (c,)]) * float(sublayer_y[row + (d,)])
    return out
