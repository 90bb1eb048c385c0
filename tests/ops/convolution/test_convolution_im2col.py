"""The gathered-patches kernel (one matrix product, used for finite filters) against the
per-offset kernel (which skips taps in the padding) on random geometries: 1-D to 3-D, strides,
dilations, padding, groups, and inputs that are strided views rather than contiguous arrays;
and the dispatch keeps non-finite filters on the per-offset kernel."""

import numpy as np
import pytest

from irscatter.ops.convolution import kernels
from irscatter.ops.convolution.kernels import Im2col, grouped_convolution, im2col_convolution
from irscatter.ops.convolution.plans import forward_convolution


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


@pytest.mark.parametrize("seed", range(40))
def test_wide_rows_match_the_per_offset_products(seed, monkeypatch):
    """Stride 1 along the last two axes and short rows: the patches are gathered as rows as wide
    as the padded input, whose extra columns run into the next row (and, for the last tap of
    the last channel, into the buffer's tail), and are cut off (here whatever the extra columns
    cost: empty rows and wide padding included)."""
    monkeypatch.setattr(kernels, "WIDE_EXTRA", 1 << 30)
    rng = np.random.default_rng(1000 + seed)
    n, g, c, d = (int(v) for v in rng.integers(1, 4, 4))
    rank = int(rng.integers(2, 4))
    size, kernel = rng.integers(1, 9, rank), rng.integers(1, 4, rank)
    strides, dilations, begin = np.ones(rank, int), rng.integers(1, 3, rank), rng.integers(0, 3, rank)
    strides[0] = rng.integers(1, 3) if rank == 3 else 1  # a 3-D convolution's depth may stride
    out = [max(0, (int(sz) + 2 * int(b) - (int(k) - 1) * int(dl) - 1) // int(st) + 1)
           for sz, b, k, dl, st in zip(size, begin, kernel, dilations, strides)]
    x = rng.standard_normal((n, g, c, *size)).astype(np.float32)
    x[..., -1] = np.inf  # the cut-off columns wrap onto it: nothing of theirs may reach the kept ones
    w = rng.standard_normal((g, d, c, *kernel)).astype(np.float32)
    args = (list(strides), list(dilations), list(begin), out)
    plan = Im2col(x.shape, w.shape, x.dtype, *args)
    assert plan.wide is not None or plan.direct
    with np.errstate(invalid="ignore", over="ignore"):
        np.testing.assert_allclose(plan(x, w), grouped_convolution(x, w, *args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("channels, size, wide", [(32, 7, True), (128, 7, True), (512, 7, False), (64, 17, True), (192, 17, False)])
def test_rows_are_gathered_wide_only_where_their_extra_columns_cost_little(channels, size, wide):
    """A wide row's extra columns (the padding) are multiplied by every filter: with many output
    channels on a small map, the plain gathering is taken."""
    kernel = (3, 3) if size == 7 else (1, 7)
    begin = [k // 2 for k in kernel]
    plan = Im2col((1, 1, channels, size, size), (1, channels, channels, *kernel), np.dtype(np.float32), [1, 1],
                  [1, 1], begin, [size, size])
    assert (plan.wide is not None) == wide


def test_non_finite_filters_skip_the_padding():
    x = np.ones((1, 1, 1, 3), np.float32)
    w = np.array([np.inf, 1, 1], np.float32).reshape(1, 1, 1, 3)
    out = forward_convolution(x, w, [1], [1], [1], [3])
    assert out[..., 0].item() == 2.0  # the inf weight meets the padding there: no 0 * inf = NaN
    assert np.isinf(out[..., 1]).all()


def test_a_one_by_one_kernel_at_stride_one_multiplies_the_data_itself():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 1, 4, 3, 5)).astype(np.float32)
    w = rng.standard_normal((1, 6, 4, 1, 1)).astype(np.float32)
    args = ([1, 1], [1, 1], [0, 0], [3, 5])
    got = im2col_convolution(x, w, *args)
    np.testing.assert_array_equal(got, np.matmul(w.reshape(1, 6, 4), x.reshape(2, 1, 4, 15)).reshape(2, 1, 6, 3, 5))
    np.testing.assert_allclose(got, grouped_convolution(x, w, *args), rtol=1e-5, atol=1e-5)


def _conv_op():
    from helpers import layer, port

    from irscatter import parse_layer
    from irscatter.ops import registry
    snippet = layer(0, "conv", "Convolution", "opset1",
                    {"strides": "1", "dilations": "1", "pads_begin": "1", "pads_end": "1", "auto_pad": "explicit"},
                    inputs=[port(0, None, [1, 1, 4]), port(1, None, [1, 1, 3])], outputs=[port(2, None, [1, 1, 4])])
    found = parse_layer(snippet)
    return registry.resolve(found.type, found.version).cls(found)


def test_one_op_works_out_each_shape_and_dtype_and_rereads_filters_that_may_change():
    op = _conv_op()
    x = np.array([[[1, 2, 3, 4]]], np.float32)
    w = np.array([[[1, 1, 1]]], np.float32)  # writable: may change between calls
    np.testing.assert_array_equal(op.compute(x, w), [[[3, 6, 9, 7]]])
    w[0, 0, 1] = np.inf  # now a non-finite filter: the per-offset kernel, no 0 * inf in the padding
    out = op.compute(x, w)
    assert np.isinf(out).all()
    np.testing.assert_array_equal(op.compute(x.astype(np.float64), np.ones((1, 1, 3))), [[[3, 6, 9, 7]]])
    assert op.compute(x.astype(np.float64), np.ones((1, 1, 3))).dtype == np.float64
    longer = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    np.testing.assert_array_equal(op.compute(longer, np.ones((1, 1, 3), np.float32)), [[[1, 3, 6, 9, 12, 9]]])
