"""RMS as its page writes it, (x / Sqrt(ReduceMean(x^2, -1) + eps)) * scale, one row of the
last axis at a time and one element at a time, in Python floats (f64); the scale is broadcast
to the data's shape first, as the page says it must."""

from __future__ import annotations

import itertools
import math

import numpy as np


def rms(data: np.ndarray, scale: np.ndarray | None, epsilon: float) -> np.ndarray:
    x = np.asarray(data, np.float64)
    gain = np.ones_like(x) if scale is None else np.broadcast_to(np.asarray(scale, np.float64), x.shape)
    out = np.zeros_like(x)
    n = x.shape[-1]
    for lead in itertools.product(*(range(d) for d in x.shape[:-1])):
        row = [float(v) for v in x[lead]]
        mean = sum(v * v for v in row) / n if n else math.nan
        root = math.sqrt(mean + epsilon) if not math.isnan(mean) else math.nan
        for i, v in enumerate(row):
            normed = v / root if root != 0 else math.copysign(math.inf, v) if v else math.nan
            out[lead + (i,)] = normed * float(gain[lead + (i,)])
    return out
