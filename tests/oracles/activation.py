"""The activation functions, one Python step per output element, in f64 with the `math`
module, transcribed from the specs' formulas (and, where a spec leaves a value undefined, from
the choice irscatter documents, which is OpenVINO's core reference's).

Each oracle takes numpy arrays and returns an array of the input's element type. Where a
formula as written loses the value it defines in f64 (1 + erf(z) for very negative z), the
oracle writes the same mathematical value in a form that keeps it (erfc), and says so.
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np


def _exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _each(x: np.ndarray, f) -> np.ndarray:
    """f applied to every element of x as a Python float (or int), in x's element type."""
    out = np.empty(x.shape, dtype=np.float64 if x.dtype.kind not in "iu" else object)
    for index in np.ndindex(x.shape):
        v = x[index]
        out[index] = f(int(v) if x.dtype.kind in "iu" else float(v))
    return out.astype(x.dtype)


# --- element-wise -------------------------------------------------------------------------------


def relu(x):
    return _each(x, lambda v: v if v > 0 else 0)


def sigmoid(x):
    return _each(x, lambda v: 1 / (1 + _exp(-v)))


def hsigmoid(x):
    return _each(x, lambda v: min(max(v + 3, 0.0), 6.0) / 6 if not math.isnan(v) else v)


def hswish(x):
    return _each(x, lambda v: v * min(max(v + 3, 0.0), 6.0) / 6 if not math.isnan(v) else v)


def _softplus(v: float) -> float:
    """log(e^v + 1), written as log1p so that it keeps its digits for negative v."""
    if math.isnan(v):
        return v
    if v > 0:
        return v + math.log1p(_exp(-v))
    return math.log1p(_exp(v))


def mish(x):
    return _each(x, lambda v: v * math.tanh(_softplus(v)))


def softplus(x):
    """The spec's threshold: 20 for f32, 11 for f16; log(max of T) for the types it leaves open."""
    threshold = {np.dtype(np.float32): 20.0, np.dtype(np.float16): 11.0}.get(
        x.dtype, math.log(float(ml_dtypes.finfo(x.dtype).max)))
    return _each(x, lambda v: v if v >= threshold else _softplus(v))


def softsign(x):
    return _each(x, lambda v: v / (1 + abs(v)) if not math.isinf(v) else math.nan)


def elu(alpha):
    def oracle(x):
        return _each(x, lambda v: v if v > 0 else alpha * math.expm1(v))
    return oracle


def clamp(low, high):
    """min(max(x, min), max); integer types take ceil(min) and floor(max), saturated to the type."""
    def oracle(x):
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            lo = info.min if low <= info.min else info.max if low >= info.max else math.ceil(low)
            hi = info.min if high <= info.min else info.max if high >= info.max else math.floor(high)
        else:
            lo, hi = float(np.asarray(low, x.dtype)), float(np.asarray(high, x.dtype))

        def one(v):
            v = lo if v < lo else v
            return hi if v > hi else v
        return _each(x, one)
    return oracle


def gelu_erf(x):
    """x * (1 + erf(x / sqrt 2)) / 2, with 1 + erf(z) written as erfc(-z) (the same value)."""
    def one(v):
        if math.isinf(v):
            return v if v > 0 else math.nan  # -inf * 0, as the formula gives in IEEE arithmetic
        return v * 0.5 * math.erfc(-v / math.sqrt(2))
    return _each(x, one)


def gelu_tanh(x):
    """x * (1 + tanh u) / 2 with u = sqrt(2/pi) (x + 0.044715 x^3); (1 + tanh u) / 2 is written as
    1 / (1 + e^(-2u)), the same value, which keeps its digits where tanh u is near -1."""
    def one(v):
        if math.isinf(v):
            return v if v > 0 else math.nan
        u = math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)
        return v / (1 + _exp(-2 * u))
    return _each(x, one)


# --- with parameter inputs ----------------------------------------------------------------------


def prelu(data, slope):
    """Per channel when the slope is 1-D and as long as the channel axis (1, or 0 for 1-D data);
    otherwise the slope's numpy broadcast, its index read from the right-aligned data index."""
    out = np.empty(data.shape, np.float64)
    channel = 1 if data.ndim > 1 else 0
    per_channel = slope.ndim == 1 and data.ndim > 0 and data.shape[channel] == slope.shape[0]
    for index in np.ndindex(data.shape):
        if per_channel:
            a = float(slope[index[channel]])
        else:
            tail = index[len(index) - slope.ndim:] if slope.ndim else ()
            a = float(slope[tuple(0 if n == 1 else i for i, n in zip(tail, slope.shape))])
        x = float(data[index])
        out[index] = a * x if x < 0 else x
    return out.astype(data.dtype)


def selu(data, alpha, lambda_):
    a, scale = float(alpha.reshape(-1)[0]), float(lambda_.reshape(-1)[0])
    return _each(data, lambda v: scale * v if v > 0 else scale * a * math.expm1(v))


def hard_sigmoid(data, alpha, beta):
    """max(0, min(1, alpha x + beta)) with OpenVINO's std::min(1, y) = y < 1 ? y : 1 and
    std::max(0, y) = 0 < y ? y : 0 (so NaN gives 1)."""
    a, b = float(alpha), float(beta)

    def one(v):
        y = a * v + b
        y = y if y < 1 else 1.0
        return y if 0 < y else 0.0
    return _each(data, one)


def swish(data, beta=None):
    b = 1.0 if beta is None else float(beta)

    def one(v):
        if math.isinf(v) and v < 0 and b > 0:
            return math.nan  # -inf / inf
        return v / (1 + _exp(-b * v))
    return _each(data, one)


def _slices(shape, axis):
    """Every index list along `axis`, one per position of the other axes."""
    others = [range(n) for i, n in enumerate(shape) if i != axis]
    for rest in itertools.product(*others):
        yield [tuple(rest[:axis]) + (k,) + tuple(rest[axis:]) for k in range(shape[axis])]


def _softmax_slice(values, log):
    if any(math.isnan(v) or v == math.inf for v in values) or all(v == -math.inf for v in values):
        return [math.nan] * len(values)  # the maximum subtracted from itself is NaN
    m = max(values)
    total = math.fsum(math.exp(v - m) for v in values)
    if log:
        return [(v - m) - math.log(total) for v in values]
    return [math.exp(v - m) / total for v in values]


def _softmax(data, axis, log):
    axis = axis + data.ndim if axis < 0 else axis
    out = np.empty(data.shape, np.float64)
    for positions in _slices(data.shape, axis):
        for pos, y in zip(positions, _softmax_slice([float(data[p]) for p in positions], log)):
            out[pos] = y
    return out.astype(data.dtype)


def softmax(axis):
    return lambda data: _softmax(data, axis, log=False)


def log_softmax(axis):
    return lambda data: _softmax(data, axis, log=True)
