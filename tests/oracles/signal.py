"""Oracles of the signal ops (DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15, ISTFT-16): the spec's sums
written out, one output element per Python step, each a literal sum of input * exp(+-2 pi i ...)
in Python complex arithmetic (f64). O(N^2) per transformed block: small inputs only.

Complex tensors are real arrays whose last dimension holds (real, imaginary). Axes of complex
data count in the complex tensor (a negative axis a is rank - 1 + a); RDFT's count in its real
data. signal_size -1 keeps an axis's length; any other value reads the axis as zero-padded or
trimmed to that length. A NaN meets every twiddle factor of its block (NaN * 0 is NaN), so it
spreads over the block, as the sums say.

IRDFT is the reference's reading (see irscatter/ops/signal/irdft.py): the inverse over the
other axes, then along the last axis the first S // 2 + 1 values extended to S by Hermitian
symmetry, the inverse of that, and the real part.
"""

from __future__ import annotations

import cmath
import itertools
import math

import numpy as np


def _axes(axes, rank: int) -> list[int]:
    return [int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(axes).reshape(-1)]


def _sizes(signal_size, axes: list[int], shape: tuple[int, ...]) -> list[int]:
    if signal_size is None:
        return [shape[a] for a in axes]
    return [shape[a] if int(s) == -1 else int(s) for a, s in zip(axes, np.asarray(signal_size).reshape(-1))]


def _transform(read, in_shape, axes, sizes, out_shape, sign: float, scale: float) -> np.ndarray:
    """out[n] = scale * sum over j < sizes of X[n with j on axes] * exp(sign 2 pi i sum n_q j_q / S_q),
    with X = read(index) inside in_shape and 0 past it (the zero padding)."""
    out = np.zeros(out_shape, complex)
    for n in itertools.product(*(range(d) for d in out_shape)):
        total = 0j
        for j in itertools.product(*(range(s) for s in sizes)):
            source = list(n)
            for a, k in zip(axes, j):
                source[a] = k
            if any(source[a] >= in_shape[a] for a in axes):
                continue
            phase = sum(n[a] * k / s for a, k, s in zip(axes, j, sizes))
            total += read(tuple(source)) * cmath.exp(sign * 2j * math.pi * phase)
        out[n] = total * scale
    return out


def _pairs(values: np.ndarray) -> np.ndarray:
    return np.stack([values.real, values.imag], axis=-1)


def _complex(data) -> np.ndarray:
    d = np.asarray(data).astype(np.float64)
    return d[..., 0] + 1j * d[..., 1]


def dft(data, axes, signal_size=None, *, inverse: bool = False) -> np.ndarray:
    """DFT-7 (inverse=False) and IDFT-7 (inverse=True, divided by the product of the sizes)."""
    x = _complex(data)
    ax = _axes(axes, x.ndim)
    sizes = _sizes(signal_size, ax, x.shape)
    out_shape = list(x.shape)
    for a, s in zip(ax, sizes):
        out_shape[a] = s
    scale = 1.0 / math.prod(sizes) if inverse and math.prod(sizes) else 1.0
    y = _transform(lambda i: complex(x[i]), x.shape, ax, sizes, out_shape, 1.0 if inverse else -1.0, scale)
    return _pairs(y)


def idft(data, axes, signal_size=None) -> np.ndarray:
    return dft(data, axes, signal_size, inverse=True)


def rdft(data, axes, signal_size=None) -> np.ndarray:
    """RDFT-9: the real input's DFT, the last listed axis keeping bins 0 .. S // 2."""
    x = np.asarray(data).astype(np.float64)
    ax = _axes(axes, x.ndim)
    sizes = _sizes(signal_size, ax, x.shape)
    out_shape = list(x.shape)
    for a, s in zip(ax, sizes):
        out_shape[a] = s
    out_shape[ax[-1]] = sizes[-1] // 2 + 1
    return _pairs(_transform(lambda i: float(x[i]), x.shape, ax, sizes, out_shape, -1.0, 1.0))


def irdft(data, axes, signal_size=None) -> np.ndarray:
    """IRDFT-9, in three literal steps (see the module's doc)."""
    x = _complex(data)
    ax = _axes(axes, x.ndim)
    last = ax[-1]
    if signal_size is None or int(np.asarray(signal_size).reshape(-1)[-1]) == -1:
        s_last = max(2 * (x.shape[last] - 1), 0)
    else:
        s_last = int(np.asarray(signal_size).reshape(-1)[-1])
    outer = ax[:-1]
    outer_sizes = _sizes(None if signal_size is None else np.asarray(signal_size).reshape(-1)[:-1], outer, x.shape)
    # 1. the inverse transform over the other axes
    z_shape = list(x.shape)
    for a, s in zip(outer, outer_sizes):
        z_shape[a] = s
    scale = 1.0 / math.prod(outer_sizes) if math.prod(outer_sizes) else 1.0
    z = _transform(lambda i: complex(x[i]), x.shape, outer, outer_sizes, z_shape, 1.0, scale)
    # 2. the Hermitian extension of the last axis to s_last values
    e_shape = list(z_shape)
    e_shape[last] = s_last
    e = np.zeros(e_shape, complex)
    for i in itertools.product(*(range(d) for d in e_shape)):
        j = i[last]
        mirror = j if j <= s_last // 2 else s_last - j
        source = i[:last] + (mirror,) + i[last + 1:]
        if mirror < z_shape[last]:
            e[i] = z[source] if j <= s_last // 2 else z[source].conjugate()
    # 3. the inverse transform of the last axis, and its real part
    y = _transform(lambda i: complex(e[i]), e_shape, [last], [s_last], e_shape, 1.0, 1.0 / s_last if s_last else 1.0)
    return y.real.copy()


def _padded_window(window, frame_size: int) -> list[float]:
    w = [float(v) for v in np.asarray(window).astype(np.float64)]
    left = (frame_size - len(w)) // 2
    return [0.0] * left + w + [0.0] * (frame_size - left - len(w))


def stft(signal, window, frame_size, frame_step, *, transpose_frames: bool) -> np.ndarray:
    """STFT-15: bin k of frame f = sum_n signal[f * step + n] * window[n] * exp(-2 pi i k n / frame_size)."""
    x = np.asarray(signal).astype(np.float64)
    rows = x.reshape(-1, x.shape[-1])
    size, step = int(frame_size), int(frame_step)
    w = _padded_window(window, size)
    frames, bins = (rows.shape[1] - size) // step + 1, size // 2 + 1
    out = np.zeros((rows.shape[0], frames, bins), complex)
    for b in range(rows.shape[0]):
        for f in range(frames):
            for k in range(bins):
                total = 0j
                for n in range(size):
                    total += float(rows[b, f * step + n]) * w[n] * cmath.exp(-2j * math.pi * k * n / size)
                out[b, f, k] = total
    if transpose_frames:
        out = out.transpose(0, 2, 1)
    return _pairs(out).reshape(*x.shape[:-1], *out.shape[1:], 2)


def istft(data, window, frame_size, frame_step, signal_length=None, *, center: bool, normalized: bool) -> np.ndarray:
    """ISTFT-16: each frame's inverse real DFT (Hermitian extension to frame_size), windowed and
    overlap-added, divided by the overlap-added squared window (0 where that is 0), times
    sqrt(frame_size) when normalized; with center the first frame_size // 2 samples are dropped.
    The default length is (frames - 1) * step, plus frame_size without center (the spec's)."""
    spectra = _complex(data)
    spectra = spectra.reshape(-1, *spectra.shape[-2:])  # [rows, bins, frames]
    size, step = int(frame_size), int(frame_step)
    rows, bins, frames = spectra.shape
    w = _padded_window(window, size)
    if signal_length is not None:
        length = int(np.asarray(signal_length).reshape(-1)[0])
    else:
        length = (frames - 1) * step + (0 if center else size)
    full = (frames - 1) * step + size
    margin = size // 2 if center else 0
    out = np.zeros((rows, length))
    for b in range(rows):
        for i in range(length):
            t = i + margin
            if t >= full:
                continue
            summed, weight = 0.0, 0.0
            for f in range(frames):
                n = t - f * step
                if not 0 <= n < size:
                    continue
                value = 0j
                for k in range(size):
                    mirror = k if k <= size // 2 else size - k
                    bin_value = complex(spectra[b, mirror, f])
                    value += (bin_value if k <= size // 2 else bin_value.conjugate()) * cmath.exp(2j * math.pi * k * n / size)
                summed += (value / size).real * w[n]
                weight += w[n] * w[n]
            out[b, i] = summed / weight * (math.sqrt(size) if normalized else 1.0) if weight != 0 else 0.0
    return out.reshape(*np.asarray(data).shape[:-3], length)
