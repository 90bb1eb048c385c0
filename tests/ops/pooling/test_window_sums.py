"""AvgPool's window sums: windows that move one element at a time are summed as shifts of the
flattened padded array (`avg_pool._shifted_sums`), others over strided views of it. The two
must give the same bits, since each window takes the same additions in the same order: compared
here with a sum over the strided views alone, on random geometries (1 to 3 spatial axes,
dilations, pads, windows past the end, empty inputs), for floats with NaN, infinities and
negative zeros, and for integers.
"""

import numpy as np

from irscatter.ops.pooling import avg_pool
from irscatter.ops.pooling.core import Axis, Windows, padded, tap_picks


def _by_views(values: np.ndarray, axes: Windows) -> np.ndarray:
    source = padded(values, axes, 0)
    sums = np.zeros(values.shape[:values.ndim - len(axes)] + tuple(ax.out for ax in axes), dtype=values.dtype)
    for pick in tap_picks(axes):
        np.add(sums, source[pick], out=sums)
    return sums


def _axis(rng: np.random.Generator) -> Axis:
    size, kernel, dilation = int(rng.integers(0, 9)), int(rng.integers(1, 5)), int(rng.integers(1, 3))
    stride = int(rng.choice([1, 1, 1, 2]))
    begin, end = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    reach = size + begin + end - ((kernel - 1) * dilation + 1)
    out = reach // stride + 1 if reach >= 0 else 0
    if reach >= 0 and rng.random() < 0.3:
        out = -(-reach // stride) + 1  # a last window past the end padding, as ceil rounding makes
    return Axis(size=size, kernel=kernel, stride=stride, dilation=dilation, begin=begin, end=end, out=out)


def test_shifted_sums_have_the_strided_views_bits():
    rng = np.random.default_rng(11)
    shifted = 0
    for _ in range(1500):
        axes = [_axis(rng) for _ in range(int(rng.integers(1, 4)))]
        dtype = rng.choice([np.float32, np.float64, np.float16, np.int64])
        lead = tuple(int(n) for n in rng.integers(0, 3, 2))
        values = (rng.standard_normal(lead + tuple(ax.size for ax in axes)) * 100).astype(dtype)
        if values.dtype.kind == "f" and values.size:
            values.flat[::5] = rng.choice([np.nan, np.inf, -np.inf, -0.0], size=values.flat[::5].shape)
        windows = Windows(axes)
        shifted += avg_pool._flat_offsets(windows, padded(values, windows, 0).shape) is not None
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, as AvgPool's kernel allows
            got, want = avg_pool.window_sums(values, windows), _by_views(values, Windows(axes))
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), axes
    assert shifted > 300  # the shifted route was taken often enough to mean something
