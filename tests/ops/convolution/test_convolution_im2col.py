"""The gathered-patches kernel (one matrix product, used for finite filters) against the
per-offset kernel (which skips taps in the padding) on random geometries: 1-D to 3-D, strides,
dilations, padding, groups, and inputs that are strided views rather than contiguous arrays;
and the dispatch keeps non-finite filters on the per-offset kernel."""

import numpy as np
import pytest

from irscatter.ops.convolution.core import forward_convolution, grouped_convolution, im2col_convolution


@pytest.mark.parametrize("seed", range(40))
def test_gathered_patches_match_the_per_offset_products(seed):
    rng = np.random.default_rng(seed)
    n, g, c, d = (int(v) for v in rng.integers(1, 4, 4))
    rank = int(rng.integers(1, 4))
    size, kernel = rng.integers(1, 9, rank), rng.integers(1, 4, rank)
    strides, dilations, begin = rng.integers(1, 3, rank), rng.integers(1, 3, rank), rng.integers(0, 3, rank)
    out = [max(0, (int(sz) + 2 * int(b) - (int(k) - 1) * int(dl) - 1) // int(st) + 1)
           for sz, b, k, dl, st in zip(size, begin, kernel, dilations, strides)]
    x = rng.standard_normal((n, g, 2 * c, *size)).astype(np.float32)[:, :, ::2]  # a strided view
    w = rng.standard_normal((g, d, c, *kernel)).astype(np.float32)
    args = (list(strides), list(dilations), list(begin), out)
    np.testing.assert_allclose(im2col_convolution(x, w, *args), grouped_convolution(x, w, *args), rtol=1e-5, atol=1e-5)


def test_non_finite_filters_skip_the_padding():
    x = np.ones((1, 1, 1, 3), np.float32)
    w = np.array([np.inf, 1, 1], np.float32).reshape(1, 1, 1, 3)
    out = forward_convolution(x, w, [1], [1], [1], [3])
    assert out[..., 0].item() == 2.0  # the inf weight meets the padding there: no 0 * inf = NaN
    assert np.isinf(out[..., 1]).all()
