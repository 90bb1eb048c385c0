"""Oracles of the normalization ops: MVN-2/-6, NormalizeL2-1, GRN-1, LRN-1,
BatchNormInference-1/-5 and GroupNormalization-12, one output element per Python step.

Every value is a Python float (f64; sums with `math.fsum`), so the oracles give the exact
formula rounded once to the data's type. Each function takes the data (and the other inputs) as
arrays and the attributes by name, with the spec's names.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _indices(shape):
    return itertools.product(*(range(d) for d in shape))


def _slice(data: np.ndarray, index: tuple[int, ...], axes: set[int]) -> list[float]:
    """The elements sharing `index` outside `axes`."""
    ranges = [range(d) if i in axes else [index[i]] for i, d in enumerate(data.shape)]
    return [float(data[j]) for j in itertools.product(*ranges)]


def _sum(values: list[float]) -> float:
    if any(math.isnan(v) for v in values):
        return math.nan
    infs = {v > 0 for v in values if math.isinf(v)}
    if infs:
        return math.nan if len(infs) == 2 else (math.inf if True in infs else -math.inf)
    return math.fsum(values)


def _div(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def mvn(data, axes, *, normalize_variance, eps, inside_sqrt=True):
    """o = (x - mean) / sqrt(var + eps) (inside_sqrt) or / (sqrt(var) + eps), over `axes`."""
    rank = data.ndim
    axes = {int(a) % rank for a in axes}
    out = np.zeros(data.shape, data.dtype)
    for index in _indices(data.shape):
        values = _slice(data, index, axes)
        mean = _sum(values) / len(values)
        x = float(data[index]) - mean
        if normalize_variance:
            variance = _sum([(v - mean) ** 2 for v in values]) / len(values)
            x = _div(x, math.sqrt(variance + eps) if inside_sqrt else math.sqrt(variance) + eps)
        out[index] = x
    return out


def normalize_l2(data, axes, *, eps, eps_mode):
    """x / sqrt(sum(x^2) + eps) or x / sqrt(max(sum(x^2), eps)); with no axes 1 for non-zero x, 0 for 0."""
    rank = data.ndim
    axes = {int(a) % rank for a in np.asarray(axes).reshape(-1)}
    out = np.zeros(data.shape, data.dtype)
    for index in _indices(data.shape):
        x = float(data[index])
        if not axes:
            out[index] = 0.0 if x == 0 else 1.0
            continue
        total = _sum([v * v for v in _slice(data, index, axes)])
        norm = math.sqrt(total + eps if eps_mode == "add" else (total if math.isnan(total) else max(total, eps)))
        out[index] = _div(x, norm)
    return out


def grn(data, *, bias):
    """x / sqrt(sum over channels of x^2 + bias)."""
    return normalize_l2(data, [1], eps=bias, eps_mode="add")


def lrn(data, axes, *, alpha, beta, bias, size):
    """x / (bias + alpha / size^len(axes) * sum of x^2 over [i - size//2, i + size//2] per axis)^beta."""
    rank = data.ndim
    axes = sorted({int(a) % rank for a in np.asarray(axes).reshape(-1)})
    half = size // 2
    out = np.zeros(data.shape, data.dtype)
    for index in _indices(data.shape):
        ranges = [range(max(0, index[i] - half), min(d, index[i] + half + 1)) if i in axes else [index[i]]
                  for i, d in enumerate(data.shape)]
        total = _sum([float(data[j]) ** 2 for j in itertools.product(*ranges)])
        base = bias + alpha / size ** len(axes) * total
        out[index] = _div(float(data[index]), base ** beta if not math.isnan(base) else math.nan)
    return out


def batch_norm(data, gamma, beta, mean, variance, *, epsilon):
    """(x - mean[c]) / sqrt(variance[c] + epsilon) * gamma[c] + beta[c], c the index on axis 1."""
    out = np.zeros(data.shape, data.dtype)
    for index in _indices(data.shape):
        c = index[1]
        normalized = _div(float(data[index]) - float(mean[c]), math.sqrt(float(variance[c]) + epsilon)
                          if float(variance[c]) + epsilon >= 0 else math.nan)
        out[index] = normalized * float(gamma[c]) + float(beta[c])
    return out


def group_norm(data, scale, bias, *, num_groups, epsilon):
    """(x - mean) / sqrt(variance + epsilon) * scale[c] + bias[c], the statistics over each
    batch entry's group of channels (and every axis after the channels)."""
    channels = data.shape[1]
    per_group = channels // num_groups
    out = np.zeros(data.shape, data.dtype)
    for index in _indices(data.shape):
        n, c = index[0], index[1]
        g = c // per_group
        members = [float(data[(n, k) + rest]) for k in range(g * per_group, (g + 1) * per_group)
                   for rest in _indices(data.shape[2:])]
        mean = _sum(members) / len(members)
        variance = _sum([(v - mean) ** 2 for v in members]) / len(members)
        normalized = _div(float(data[index]) - mean, math.sqrt(variance + epsilon))
        out[index] = normalized * float(scale[c]) + float(bias[c])
    return out
