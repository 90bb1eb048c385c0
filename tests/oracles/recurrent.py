"""The recurrent cells and sequences (RNNCell-1, GRUCell-3, LSTMCell-1/-4, RNNSequence-5,
GRUSequence-5, LSTMSequence-5), one Python step per element, in f64 with the `math` module,
transcribed from the specs' formulas.

A cell step walks the batch rows one by one, and within a row computes every gate element as
its own sum over the input and hidden elements. A sequence walks directions, then batch rows,
then the valid time steps of that row (0..length-1, or length-1 down to 0 in reverse),
writing each step's H into Y at the position of X it read; Y is zero past a row's length, and
Ho (Co) is the state after the last valid step, or zero for a row of length 0 (OpenVINO's
choice, which irscatter documents). Gate blocks: GRU z, r, h (+ Rb_h with
linear_before_reset), LSTM f, i, c, o; LSTM peepholes [Pf, Pi, Po].

Each function returns arrays of X's element type (one, or a tuple for several outputs).
"""

from __future__ import annotations

import math

import numpy as np


def _sigmoid(v: float) -> float:
    if v < -700:
        return 0.0
    return 1.0 / (1.0 + math.exp(-v))


def _activation(name: str, clip: float):
    f = {"relu": lambda v: v if v > 0 else 0.0, "sigmoid": _sigmoid, "tanh": math.tanh}[name]

    def apply(v: float) -> float:
        if 0 < clip < math.inf:
            v = min(max(v, -clip), clip)
        return f(v)

    return apply


def _names(activations) -> list[str]:
    return [a.strip().lower() for a in activations.split(",")] if isinstance(activations, str) else list(activations)


def _row(m: np.ndarray, j: int) -> list[float]:
    return [float(v) for v in m[j]]


def _dot(a: list[float], b: list[float]) -> float:
    total = 0.0
    for u, v in zip(a, b):
        total += u * v
    return total


# --- one step for one batch row (lists of floats in, lists out) --------------------------------


def _rnn_step(x, h, w, r, b, f):
    hidden = len(h)
    return [f(_dot(x, _row(w, j)) + _dot(h, _row(r, j)) + float(b[j])) for j in range(hidden)]


def _gru_step(x, h, w, r, b, f, g, linear_before_reset):
    n = len(h)
    z = [f(_dot(x, _row(w, j)) + _dot(h, _row(r, j)) + float(b[j])) for j in range(n)]
    reset = [f(_dot(x, _row(w, n + j)) + _dot(h, _row(r, n + j)) + float(b[n + j])) for j in range(n)]
    candidate = []
    for j in range(n):
        xh = _dot(x, _row(w, 2 * n + j))
        if linear_before_reset:
            v = xh + reset[j] * (_dot(h, _row(r, 2 * n + j)) + float(b[3 * n + j])) + float(b[2 * n + j])
        else:
            rh = [reset[k] * h[k] for k in range(n)]
            v = xh + _dot(rh, _row(r, 2 * n + j)) + float(b[2 * n + j])
        candidate.append(g(v))
    return [(1 - z[j]) * candidate[j] + z[j] * h[j] for j in range(n)]


def _lstm_step(x, h, c, w, r, b, p, f, g, h_act, input_forget):
    n = len(h)

    def pre(block, j):
        return _dot(x, _row(w, block * n + j)) + _dot(h, _row(r, block * n + j)) + float(b[block * n + j])

    new_h, new_c = [], []
    for j in range(n):
        pf, pi, po = (float(p[j]), float(p[n + j]), float(p[2 * n + j])) if p is not None else (0.0, 0.0, 0.0)
        ft = f(pre(0, j) + pf * c[j])
        it = 1 - ft if input_forget else f(pre(1, j) + pi * c[j])
        ct = g(pre(2, j))
        cell = ft * c[j] + it * ct
        ot = f(pre(3, j) + po * cell)
        new_c.append(cell)
        new_h.append(ot * h_act(cell))
    return new_h, new_c


def _floats(a: np.ndarray, index) -> list[float]:
    return [float(v) for v in a[index]]


def _out(values, like: np.ndarray) -> np.ndarray:
    return np.array(values, dtype=np.float64).astype(like.dtype)


# --- cells -------------------------------------------------------------------------------------


def rnn_cell(x, h, w, r, b, *, activations="tanh", clip=math.inf):
    f = _activation(_names(activations)[0], clip)
    w64, r64 = w.astype(np.float64), r.astype(np.float64)
    rows = [_rnn_step(_floats(x, n), _floats(h, n), w64, r64, b.astype(np.float64), f) for n in range(x.shape[0])]
    return _out(rows, x).reshape(x.shape[0], h.shape[1])


def gru_cell(x, h, w, r, b=None, *, activations="sigmoid,tanh", clip=math.inf, linear_before_reset=False):
    names = _names(activations)
    f, g = _activation(names[0], clip), _activation(names[1], clip)
    hidden = h.shape[1]
    if b is None:
        b = np.zeros((4 if linear_before_reset else 3) * hidden)
    rows = [_gru_step(_floats(x, n), _floats(h, n), w.astype(np.float64), r.astype(np.float64),
                      b.astype(np.float64), f, g, linear_before_reset) for n in range(x.shape[0])]
    return _out(rows, x).reshape(x.shape[0], hidden)


def lstm_cell(x, h, c, w, r, b=None, p=None, *, activations="sigmoid,tanh,tanh", clip=math.inf,
              input_forget=False):
    names = _names(activations)
    f, g = _activation(names[0], clip), _activation(names[1], clip)
    h_act = _activation(names[2], math.inf)  # the cell state is never clipped
    hidden = h.shape[1]
    if b is None:
        b = np.zeros(4 * hidden)
    hs, cs = [], []
    for n in range(x.shape[0]):
        nh, nc = _lstm_step(_floats(x, n), _floats(h, n), _floats(c, n), w.astype(np.float64),
                            r.astype(np.float64), b.astype(np.float64), None if p is None else p.astype(np.float64),
                            f, g, h_act, input_forget)
        hs.append(nh)
        cs.append(nc)
    return _out(hs, x).reshape(x.shape[0], hidden), _out(cs, x).reshape(x.shape[0], hidden)


# --- sequences ---------------------------------------------------------------------------------


def _sequence(x, states, lengths, w, r, b, direction, step):
    """Run `step(x_row, state_lists, W_d, R_d, B_d) -> state_lists` over each row's valid steps."""
    batch, seq = x.shape[0], x.shape[1]
    dirs, hidden = w.shape[0], states[0].shape[2]
    y = [[[[0.0] * hidden for _ in range(seq)] for _ in range(dirs)] for _ in range(batch)]
    finals = [[[[0.0] * hidden for _ in range(dirs)] for _ in range(batch)] for _ in states]
    for d in range(dirs):
        backwards = direction == "reverse" or (direction == "bidirectional" and d == 1)
        wd, rd, bd = w[d].astype(np.float64), r[d].astype(np.float64), b[d].astype(np.float64)
        for n in range(batch):
            length = int(lengths[n])
            current = [_floats(s, (n, d)) for s in states]
            positions = range(length - 1, -1, -1) if backwards else range(length)
            for pos in positions:
                current = step(_floats(x, (n, pos)), current, wd, rd, bd)
                y[n][d][pos] = current[0]
            if length > 0:
                for k in range(len(states)):
                    finals[k][n][d] = current[k]
    return (_out(y, x).reshape(batch, dirs, seq, hidden),
            *(_out(fk, x).reshape(batch, dirs, hidden) for fk in finals))


def rnn_sequence(x, h, lengths, w, r, b, *, direction, activations="tanh", clip=math.inf):
    f = _activation(_names(activations)[0], clip)
    return _sequence(x, [h], lengths, w, r, b, direction,
                     lambda xr, s, wd, rd, bd: [_rnn_step(xr, s[0], wd, rd, bd, f)])


def gru_sequence(x, h, lengths, w, r, b, *, direction, activations="sigmoid,tanh", clip=math.inf,
                 linear_before_reset=False):
    names = _names(activations)
    f, g = _activation(names[0], clip), _activation(names[1], clip)
    return _sequence(x, [h], lengths, w, r, b, direction,
                     lambda xr, s, wd, rd, bd: [_gru_step(xr, s[0], wd, rd, bd, f, g, linear_before_reset)])


def lstm_sequence(x, h, c, lengths, w, r, b, *, direction, activations="sigmoid,tanh,tanh", clip=math.inf):
    names = _names(activations)
    f, g = _activation(names[0], clip), _activation(names[1], clip)
    h_act = _activation(names[2], math.inf)
    return _sequence(x, [h, c], lengths, w, r, b, direction,
                     lambda xr, s, wd, rd, bd: list(_lstm_step(xr, s[0], s[1], wd, rd, bd, None, f, g, h_act, False)))
