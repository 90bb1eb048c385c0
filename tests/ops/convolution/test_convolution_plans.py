"""The formulations a float forward convolution takes per shape (`plans.plan_forward`) against
the per-offset kernel (`kernels.grouped_convolution`, which skips taps in the padding and is
what the op tests hold to OpenVINO and the oracle): random geometries of every plan, with the
work split over threads and not, plus the cases each plan must get exactly right."""

import ml_dtypes
import numpy as np
import pytest

from irscatter.ops import registry
from irscatter.ops.common import accel, products, threads
from irscatter.ops.convolution import plans
from irscatter.ops.convolution.kernels import Im2col, grouped_convolution
from irscatter.ops.functional import call

NEEDS_NUMBA = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


@pytest.fixture
def numpy_plans():
    """The numpy plans, whether or not numba is installed (with it, `plan_forward` hands the
    depthwise layers of one or two spatial axes to the compiled plan)."""
    with accel.use("numpy"):
        yield


def _geometry(rng, rank, c, d, g, kernel_high=4, size_high=9):
    n = int(rng.integers(1, 3))
    size, kernel = rng.integers(1, size_high, rank), rng.integers(1, kernel_high, rank)
    strides, dilations = rng.integers(1, 4, rank), rng.integers(1, 3, rank)
    begin, end = rng.integers(0, 3, rank), rng.integers(0, 3, rank)
    out = [(int(sz) + int(b) + int(e) - (int(k) - 1) * int(dl) - 1) // int(st) + 1
           for sz, b, e, k, dl, st in zip(size, begin, end, kernel, dilations, strides)]
    if min(out) <= 0:
        return None
    dtype = np.float64 if rng.integers(0, 4) == 0 else np.float32
    x = rng.standard_normal((n, g, c, *size)).astype(dtype)
    w = rng.standard_normal((g, d, c, *kernel)).astype(dtype)
    return x, w, (list(strides), list(dilations), list(begin), out)


def _check(x, w, args, name=None):
    plan = plans.plan_forward(x.shape, w.shape, x.dtype, *args)
    if name is not None:
        assert plan.name == name
    got = plan(x, plan.prepare(w))
    np.testing.assert_allclose(got, grouped_convolution(x, w, *args), rtol=1e-5, atol=1e-5)
    return got


@pytest.mark.usefixtures("numpy_plans")
@pytest.mark.parametrize("split", [False, True])
def test_every_plan_matches_the_per_offset_kernel(monkeypatch, split):
    """Random 1-D to 3-D geometries, dense, grouped and depthwise (with channel multipliers),
    strides and dilations included, f32 and f64; split: every call's work goes to the threads in parts, and
    the banded plan makes its bands at each call instead of keeping them."""
    if split:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "_policy", "split")
        monkeypatch.setattr(plans, "BAND_KEEP", 0)
    rng = np.random.default_rng(7 + split)
    seen = set()
    for _ in range(80):
        rank, g = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        c, d = int(rng.choice([1, 1, 2, 3])), int(rng.choice([1, 2, 5]))
        case = _geometry(rng, rank, c, d, g, *((7, 40) if c == 1 else (4, 9)))
        if case is not None:
            seen.add(plans.plan_forward(case[0].shape, case[1].shape, case[0].dtype, *case[2]).name)
            _check(*case)
    assert seen >= {"im2col", "im2col (wide rows)", "depthwise (banded)"}


def test_pointwise_multiplies_the_data_as_it_lies():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 7, 4, 1, 1)).astype(np.float32)
    got = _check(x, w, ([1, 1], [1, 1], [0, 0], [5, 6]), "pointwise")
    np.testing.assert_array_equal(got, np.matmul(w.reshape(3, 7, 4), x.reshape(2, 3, 4, 30)).reshape(2, 3, 7, 5, 6))


@pytest.mark.parametrize("samples", [1, 3])
@pytest.mark.parametrize("split", [False, True])
def test_pointwise_on_one_position_is_the_samples_times_the_filters(monkeypatch, samples, split):
    """A map of one position and one group (a squeeze-excitation block's): the samples' rows
    times the filters' transpose, with `products.matmul`'s bits (split by filters or not)."""
    if split:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(products, "VECTOR_WORK", 0)
        monkeypatch.setattr(threads, "_policy", "split")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((samples, 1, 96, 1, 1)).astype(np.float32)
    w = rng.standard_normal((1, 200, 96, 1, 1)).astype(np.float32)
    before = x.copy()
    got = _check(x, w, ([1, 1], [1, 1], [0, 0], [1, 1]), "pointwise")
    with threads.one_blas_thread(1 << 30):
        expected = np.matmul(x.reshape(samples, 96), w.reshape(200, 96).T)
    assert got.shape == (samples, 1, 200, 1, 1) and got.tobytes() == expected.tobytes()
    assert np.array_equal(x, before)


@pytest.mark.parametrize("split", [False, True])
def test_pointwise_with_many_more_filters_than_positions_is_one_product(monkeypatch, split):
    """One sample and one group on a map of few positions for its filters (a ResNet's last 1x1
    layers): the filters times the data, with `products.matmul`'s bits (cut by filters or not)."""
    if split:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "_policy", "split")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 1, 512, 3, 3)).astype(np.float32)
    w = rng.standard_normal((1, 1024, 512, 1, 1)).astype(np.float32)
    assert 1024 >= plans.FILTER_CUT_RATIO * 9
    before = x.copy()
    got = _check(x, w, ([1, 1], [1, 1], [0, 0], [3, 3]), "pointwise")
    with threads.one_blas_thread(1 << 30):
        expected = np.matmul(w.reshape(1024, 512), x.reshape(512, 9))
    assert got.shape == (1, 1, 1024, 3, 3) and got.tobytes() == expected.tobytes()
    assert np.array_equal(x, before)


@pytest.mark.parametrize("finished", [False, True])
def test_pointwise_split_by_filters_keeps_the_bits(monkeypatch, finished):
    """One sample and one group with filters enough for its positions (a ResNet's 1x1 layers at
    14x14): parts of the filters, cut where BLAS keeps the bits, each finishing its own
    channels' rows, with the unsplit product's bits."""
    monkeypatch.setattr(threads, "_policy", "split")
    monkeypatch.setattr(threads, "CORES", 2)
    with threads.one_blas_thread(1 << 30):
        if not products.quantum(np.dtype(np.float32)):
            pytest.skip("this BLAS keeps no row cut's bits")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 1, 256, 14, 14)).astype(np.float32)
    w = rng.standard_normal((1, 512, 256, 1, 1)).astype(np.float32)
    plan = plans.plan_forward(x.shape, w.shape, x.dtype, [1, 1], [1, 1], [0, 0], [14, 14])
    assert plan.name == "pointwise" and not plan.whole
    seen = []

    def finish(flat, start, stride, rows, width, first):  # each channel's rows plus its number
        seen.append((first, rows, width))
        for r in range(rows):
            flat[start + r * stride:start + r * stride + width] += first + r

    before = x.copy()
    got = plan.finishing(x, plan.prepare(w), finish) if finished else plan(x, plan.prepare(w))
    with threads.one_blas_thread(1 << 30):
        expected = np.matmul(w.reshape(512, 256), x.reshape(256, 196)).reshape(1, 1, 512, 14, 14)
    if finished:
        expected = expected + np.arange(512, dtype=np.float32)[:, None, None]
        assert len(seen) == 2 and sorted(seen)[0][0] == 0 and sum(rows for _, rows, _ in seen) == 512
        assert all(width == 196 for _, _, width in seen)
    assert [b[4:] for b in plan._blocks(2)] == [(lo, hi) for lo, hi in products.row_cuts(512, 256 * 196, 2, x.dtype)]
    assert got.tobytes() == expected.astype(np.float32).tobytes()
    assert np.array_equal(x, before)


def test_a_split_gives_the_same_result_on_every_call(monkeypatch):
    """The parts of a split are fixed per shape, so repeated calls agree bit for bit."""
    monkeypatch.setattr(threads, "SPLIT_WORK", 0)
    monkeypatch.setattr(threads, "_policy", "split")
    rng = np.random.default_rng(2)
    for x_shape, w_shape, args in [((1, 1, 8, 12, 12), (1, 6, 8, 3, 3), ([1, 1], [1, 1], [1, 1], [12, 12])),
                                   ((3, 6, 1, 9, 9), (6, 1, 1, 3, 3), ([2, 2], [1, 1], [1, 1], [5, 5])),
                                   ((2, 6, 1, 9, 9), (6, 2, 1, 5, 5), ([1, 1], [1, 1], [2, 2], [9, 9]))]:
        x, w = rng.standard_normal(x_shape).astype(np.float32), rng.standard_normal(w_shape).astype(np.float32)
        plan = plans.plan_forward(x_shape, w_shape, x.dtype, *args)
        prepared = plan.prepare(w)
        np.testing.assert_array_equal(plan(x, prepared), plan(x, prepared))


def test_im2col_blocks_cover_samples_and_rows():
    """Blocks of one sample and a few output rows, however small the limit, give the same sums."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 3, 7, 40)).astype(np.float32)
    w = rng.standard_normal((2, 4, 3, 3, 3)).astype(np.float32)
    args = ([1, 1], [1, 1], [1, 1], [7, 40])
    plan = Im2col(x.shape, w.shape, x.dtype, *args)
    for limit in (1, 500, 10 ** 9):
        out = np.full(plan.out_shape, np.nan, np.float32)
        view = plan.source(x)
        for block in plan.blocks(limit):
            plan.block(view, w.reshape(plan.filter_shape), out, *block)
        np.testing.assert_allclose(out, grouped_convolution(x, w, *args), rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("numpy_plans")
def test_banded_depthwise_leaves_non_finite_data_to_im2col():
    """The band's zeros would turn an infinite or NaN input into NaN in windows that do not hold
    it: such a call goes to im2col, where it reaches only the windows that hold it (and a sum of
    -0.0 products is +0.0, as BLAS's sums start)."""
    x = np.zeros((1, 2, 1, 9, 9), np.float32)
    x[0, 1, 0, 0, 0] = np.inf
    w = -np.ones((2, 1, 1, 3, 5), np.float32)
    args = ([1, 1], [1, 1], [1, 2], [9, 9])
    got = _check(x, w, args, "depthwise (banded)")
    assert not np.signbit(got[0, 0]).any()
    assert np.isneginf(got[0, 1, 0, :2, :3]).all() and (got[0, 1, 0, 2:] == 0).all()
    x[0, 1, 0, 0, 0] = np.nan
    got = _check(x, w, args)
    assert np.isnan(got[0, 1, 0, :2, :3]).all() and not np.isnan(got[0, 1, 0, 2:]).any()


TAPS_PLANS = (plans.DepthwiseChannelsLast, plans.DepthwiseRows)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("plan_class", TAPS_PLANS)
def test_taps_plans_match_the_per_offset_kernel(monkeypatch, plan_class, split):
    """Depthwise geometries of ranks 1 to 3 (strides, dilations, uneven pads, a batch, a few
    outputs per input channel) through each taps plan, whichever plan_forward would pick for
    them; the inputs are left as they were. split: the work goes to the threads in parts."""
    if split:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "_policy", "split")
    rng = np.random.default_rng(11 + split)
    # 256 channels (128 groups of 2 outputs): 1 KB a position, which the channels-last layout pads
    wide = (rng.standard_normal((2, 128, 1, 5, 6)).astype(np.float32),
            rng.standard_normal((128, 2, 1, 3, 2)).astype(np.float32), ([1, 2], [2, 1], [2, 0], [3, 3]))
    cases = (_geometry(rng, int(rng.integers(1, 4)), 1, int(rng.choice([1, 1, 2, 3])), int(rng.integers(1, 5)), 5, 12)
             for _ in range(40))
    for case in [wide, *cases]:
        if case is None:
            continue
        x, w, args = case
        g, d = w.shape[:2]
        kept = x.copy(), w.copy()
        plan = plan_class(x.shape, w.shape, x.dtype, *args)
        got = plan(x, plan.prepare(w))
        assert got.shape == (x.shape[0], g, d, *args[3]) and got.flags.c_contiguous
        np.testing.assert_allclose(got, grouped_convolution(x, w, *args), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(x, kept[0])
        np.testing.assert_array_equal(w, kept[1])


@pytest.mark.parametrize("plan_class", TAPS_PLANS)
def test_taps_plans_take_non_finite_data_as_the_per_offset_kernel(plan_class):
    """A tap multiplies only its windows' inputs and the padding's zeros by finite weights, so
    an infinity or NaN reaches exactly the windows that hold it (inf * 0 = NaN where a weight is
    0, as in the reference), and a sum of -0.0 products (zeros times negative weights) is +0.0."""
    x = np.zeros((2, 3, 1, 9, 10), np.float32)
    x[0, 1, 0, 0, 0], x[0, 2, 0, 4, 5], x[1, 0, 0, 8, 9] = np.inf, np.nan, -np.inf
    w = -np.ones((3, 2, 1, 3, 3), np.float32)
    w[0, 1, 0, 1, 1] = 0.0
    args = ([1, 2], [1, 1], [1, 2], [9, 6])
    plan = plan_class(x.shape, w.shape, x.dtype, *args)
    with np.errstate(invalid="ignore"):
        got, want = plan(x, plan.prepare(w)), grouped_convolution(x, w, *args)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[1, 0, 1, 8, 5]) and np.isneginf(got[0, 1, 0, 0, 1]) and np.isnan(got[0, 2]).any()
    assert not np.signbit(got[np.isfinite(got)]).any() and not np.signbit(want[np.isfinite(want)]).any()


@pytest.mark.parametrize("backend", ["numpy", pytest.param("numba", marks=NEEDS_NUMBA)])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_depthwise_layers_sum_in_f32(dtype, backend):
    """GroupConvolution in f16 and bf16 on the taps plans' shapes: summed in f32 in the per-offset
    kernel's order, rounded once, so the results are the same to the bit (with numba, through
    the compiled plan)."""
    rng = np.random.default_rng(5)
    op = registry.find("GroupConvolution", "opset1")
    attrs = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    for x_shape, w_shape, name in [((1, 672, 14, 14), (672, 1, 1, 3, 3), "depthwise (channels last)"),
                                   ((1, 48, 56, 56), (48, 1, 1, 3, 3), "depthwise (wide rows)")]:
        x = rng.standard_normal(x_shape).astype(dtype)
        w = rng.standard_normal(w_shape).astype(dtype)
        with accel.use(backend):
            plan = plans.plan_forward((1, *w_shape[:3], *x_shape[2:]), w_shape, np.dtype(np.float32), [1, 1], [1, 1],
                                      [1, 1], list(x_shape[2:]))
            got = call(op, [x, w], attrs)
        assert plan.name == (name if backend == "numpy" else plans.DepthwiseCompiled.name)
        want = grouped_convolution(x.astype(np.float32)[:, :, None], w.astype(np.float32), [1, 1], [1, 1], [1, 1],
                                   list(x_shape[2:])).reshape(x_shape)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want.astype(dtype))


@pytest.mark.usefixtures("numpy_plans")
def test_which_plan_each_shape_takes():
    f32 = np.dtype(np.float32)
    assert plans.plan_forward((1, 1, 4, 8, 8), (1, 4, 4, 3, 3), np.dtype(np.int64), [1, 1], [1, 1], [1, 1],
                              [8, 8]) is None  # integers: the per-offset kernel
    assert plans.plan_forward((1, 1, 4, 8, 8), (1, 0, 4, 3, 3), f32, [1, 1], [1, 1], [1, 1], [8, 8]) is None
    for x_shape, out in [((0, 672, 1, 14, 14), [14, 14]), ((1, 672, 1, 0, 14), [0, 14])]:  # nothing to compute
        assert plans.plan_forward(x_shape, (672, 1, 1, 3, 3), f32, [1, 1], [1, 1], [1, 1], out) is None
    assert plans.plan_forward((1, 8, 1, 28, 28), (8, 1, 1, 3, 3), f32, [1, 1], [1, 1], [1, 1],
                              [28, 28]).name == "im2col (wide rows)"  # a 3x3 depthwise kernel on a middling map
    assert plans.plan_forward((1, 8, 1, 32, 32), (8, 1, 1, 9, 9), f32, [1, 1], [1, 1], [4, 4],
                              [32, 32]).name == "depthwise (banded)"
    assert plans.plan_forward((1, 8, 1, 512), (8, 1, 1, 31), f32, [1], [1], [15], [512]).name == "depthwise (banded)"
    assert plans.plan_forward((1, 2, 1, 8, 8), (2, 16, 1, 3, 3), f32, [1, 1], [1, 1], [1, 1],
                              [8, 8]).name == "im2col (wide rows)"  # many outputs per input channel


@pytest.mark.usefixtures("numpy_plans")
@pytest.mark.parametrize("x_shape, kernel, stride, name", [
    ((1, 960, 1, 7, 7), 5, 1, "depthwise (channels last)"),  # small maps of many channels
    ((1, 768, 1, 7, 7), 7, 1, "depthwise (channels last)"),
    ((1, 672, 1, 14, 14), 3, 1, "depthwise (channels last)"),
    ((1, 672, 1, 14, 14), 5, 2, "depthwise (channels last)"),
    ((1, 184, 1, 14, 14), 3, 1, "im2col (wide rows)"),  # rows of too few channels
    ((1, 384, 1, 14, 14), 7, 1, "depthwise (banded)"),  # too many taps for a map this large
    ((1, 120, 1, 28, 28), 5, 1, "depthwise (banded)"),
    ((1, 96, 1, 56, 56), 7, 1, "depthwise (banded)"),
    ((1, 144, 1, 56, 56), 3, 1, "depthwise (wide rows)"),  # large maps, 3x3 kernels
    ((1, 64, 1, 112, 112), 3, 2, "depthwise (wide rows)"),
    ((1, 8, 1, 112, 112), 3, 2, "im2col"),  # too few outputs in all
    ((1, 14, 24, 14, 14), 3, 1, "im2col (wide rows)"),  # small groups
    ((1, 64, 1, 8000), 9, 1, "depthwise (wide rows)"),  # 1-D: long rows, or short ones of any width
    ((1, 1024, 1, 50), 3, 1, "im2col"),
    ((1, 128, 1, 8, 28, 28), 3, 1, "depthwise (wide rows)"),  # 3-D: 3x3x3 on a large map
])
def test_which_plan_depthwise_shapes_take(x_shape, kernel, stride, name):
    """The choices measured on MobileNetV3, EfficientNet-B0, ConvNeXt-T and RegNetY-1.6GF (and
    on a few 1-D and 3-D shapes)."""
    rank, pad = len(x_shape) - 3, kernel // 2
    out = [(size + 2 * pad - kernel) // stride + 1 for size in x_shape[3:]]
    w_shape = (x_shape[1], 1, x_shape[2]) + (kernel,) * rank
    plan = plans.plan_forward(x_shape, w_shape, np.dtype(np.float32), [stride] * rank, [1] * rank, [pad] * rank, out)
    assert plan.name == name


# Depthwise layers for the compiled plan: data [N, G, 1, *in], filters [G, C_OUT, 1, *kernel],
# strides, dilations, pads before and after.
COMPILED_CASES = [
    ((2, 3, 1, 9, 10), (3, 2, 1, 3, 3), [1, 2], [1, 1], [1, 2], [1, 0]),  # two outputs a channel, uneven pads
    ((1, 4, 1, 11, 8), (4, 1, 1, 3, 2), [2, 1], [2, 2], [2, 0], [0, 3]),  # dilated, a stride of 2 down
    ((1, 2, 1, 12, 12), (2, 1, 1, 5, 5), [2, 2], [1, 1], [2, 2], [1, 2]),  # 5x5 at stride 2
    ((1, 2, 1, 6, 9), (2, 1, 1, 7, 3), [1, 3], [1, 2], [4, 0], [4, 1]),  # rows wholly in the padding
    ((2, 3, 1, 30), (3, 2, 1, 11), [2], [1], [5], [3]),  # 1-D (numpy: the bands)
    # more channels than a block of the loop over channels side by side, and not a multiple of it
    ((1, 37, 1, 7, 7), (37, 1, 1, 5, 5), [1, 1], [1, 1], [2, 2], [2, 2]),
    ((2, 21, 1, 14, 13), (21, 2, 1, 3, 3), [2, 2], [1, 1], [1, 0], [1, 1]),  # blocks across the samples
    ((1, 40, 1, 9, 6), (40, 1, 1, 3, 3), [1, 2], [2, 1], [2, 1], [2, 0]),
]


def _bits(values):
    """The values' bits, every NaN as one (which NaN a sum passes on is the processor's choice)."""
    values = np.where(np.isnan(values), np.nan, values).astype(values.dtype)
    return values.view(np.uint64 if values.itemsize == 8 else np.uint32)


@NEEDS_NUMBA
@pytest.mark.early  # on a fresh checkout numba compiles the loop for each dtype first: seconds each
@pytest.mark.parametrize("loop", ["a channel at a time", "channels side by side"])
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_depthwise_gives_the_per_offset_kernels_bits(monkeypatch, dtype, split, loop):
    """The compiled plan sums each output's taps in the per-offset kernel's order, product by
    product with no fused multiply-add, so its bits are that kernel's and the taps plans' (the
    banded and im2col plans sum through BLAS, within rounding of them): with infinities, NaNs
    and signed zeros in the data (a sum of -0.0 products is +0.0), whichever channels a part
    of a split takes, in its loop over a channel at a time and in its loop over blocks of
    channels side by side (a part's channels then start at a block's). Without numba the same
    plan computes through the numpy plan it keeps."""
    from irscatter.ops.convolution import depthwise_compiled, depthwise_kernels  # noqa: F401  (loaded)

    monkeypatch.setattr(plans, "COMPILED_WORK", 0)  # (small cases: the compiled loop however small)
    monkeypatch.setattr(depthwise_compiled, "LANES_WIDTH", 0 if loop == "a channel at a time" else 1 << 30)
    if split:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(plans.DepthwiseCompiled, "split_from", None)
        monkeypatch.setattr(threads, "_policy", "split")
    rng = np.random.default_rng(13)
    for x_shape, w_shape, strides, dilations, begin, end in COMPILED_CASES:
        out = [(size + b + e - (k - 1) * dl - 1) // s + 1 for size, b, e, k, dl, s in
               zip(x_shape[3:], begin, end, w_shape[3:], dilations, strides)]
        args = (strides, dilations, begin, out)
        x = rng.standard_normal(x_shape).astype(dtype)
        x.flat[rng.choice(x.size, 4, replace=False)] = [np.inf, -np.inf, np.nan, -0.0]
        x[0, 0] = -0.0  # a channel of -0.0: every product is a signed zero
        w = rng.standard_normal(w_shape).astype(dtype)
        w.flat[0] = 0.0  # inf * 0 = NaN, as in the reference
        kept = x.copy(), w.copy()
        with np.errstate(invalid="ignore"):
            want = grouped_convolution(x, w, *args)
            with accel.use("numba"):
                plan = plans.plan_forward(x.shape, w.shape, x.dtype, *args)
                prepared = plan.prepare(w)
                got = plan(x, prepared)
            with accel.use("numpy"):
                fallback = plan(x, prepared)
        assert plan.name == plans.DepthwiseCompiled.name and got.shape == want.shape and got.flags.c_contiguous
        assert (prepared.lanes is not None) is (loop == "channels side by side")
        block = depthwise_compiled.BLOCK_CHANNELS if prepared.lanes is not None else 1
        parts = threads.CORES if split else 1
        assert len(plan._parts[parts]) == min(parts, -(-x_shape[0] * x_shape[1] // block))  # (parts that got work)
        np.testing.assert_array_equal(_bits(got), _bits(want))
        assert not np.signbit(got[0, 0]).any()
        for taps_plan in (taps_class(x.shape, w.shape, x.dtype, *args) for taps_class in TAPS_PLANS):
            with np.errstate(invalid="ignore"):
                np.testing.assert_array_equal(_bits(taps_plan(x, taps_plan.prepare(w))), _bits(want))
        np.testing.assert_array_equal(np.isnan(fallback), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(fallback[finite], want[finite], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(x, kept[0])
        np.testing.assert_array_equal(w, kept[1])


@NEEDS_NUMBA
def test_a_layers_first_call_before_numba_is_loaded_takes_numpys_taps_with_the_same_bits(monkeypatch):
    """Until numba's loop is loaded, a layer of few taps, or of few multiply-adds, makes its first
    call with a numpy taps plan (the loop's bits: channels last on a small map, the wide rows on
    a larger one), so that a model run once never loads numba; its second call loads it. A
    layer of many taps and much work loads it at once, its numpy taps costing more than the
    load. (In a process where no compiled loop has run: see the next test for one where one
    has.)"""
    import sys

    import irscatter.ops.convolution as package

    monkeypatch.setattr(plans, "COMPILED_WORK", 0)
    monkeypatch.setattr(accel, "warm", lambda: False)
    name = "irscatter.ops.convolution.depthwise_kernels"
    __import__(name)

    def unload():  # (the module and the package's attribute come back after the test)
        monkeypatch.delitem(sys.modules, name)
        monkeypatch.delattr(package, "depthwise_kernels")

    unload()
    rng = np.random.default_rng(3)
    small, large = plans.DepthwiseChannelsLast, plans.DepthwiseRows
    for kernel, side, work_limit, numpy_plan in ((3, 12, None, None), (7, 12, None, small), (9, 12, None, small),
                                                 (7, 52, None, large), (7, 12, 0, small), (9, 12, 0, None)):
        if work_limit is not None:
            monkeypatch.setattr(plans, "UNLOADED_WORK", work_limit)
        x = rng.standard_normal((1, 6, 1, side, side)).astype(np.float32)
        w = rng.standard_normal((6, 1, 1, kernel, kernel)).astype(np.float32)
        args = ([1, 1], [1, 1], [kernel // 2] * 2, [side, side])
        want = grouped_convolution(x, w, *args)
        first_in_numpy = not (kernel == 9 and work_limit == 0)
        with accel.use("numba"):
            plan = plans.plan_forward(x.shape, w.shape, x.dtype, *args)
            assert numpy_plan is None or type(plan.unloaded) is numpy_plan
            prepared = plan.prepare(w)
            first = plan(x, prepared)
            assert prepared.called is first_in_numpy and (name in sys.modules) is not first_in_numpy
            second = plan(x, prepared)
        assert name in sys.modules
        np.testing.assert_array_equal(_bits(first), _bits(want))
        np.testing.assert_array_equal(_bits(second), _bits(want))
        unload()


@NEEDS_NUMBA
def test_once_a_compiled_loop_has_run_a_layers_first_call_takes_the_loop(monkeypatch):
    """Once numba is set up in the process (`accel.warm`), loading the depthwise loops costs
    milliseconds: a layer of few taps takes them on its first call too, with the same bits."""
    import sys

    import irscatter.ops.convolution as package

    monkeypatch.setattr(plans, "COMPILED_WORK", 0)
    monkeypatch.setattr(accel, "warm", lambda: True)
    name = "irscatter.ops.convolution.depthwise_kernels"
    __import__(name)
    monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(package, "depthwise_kernels")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 6, 1, 12, 12)).astype(np.float32)
    w = rng.standard_normal((6, 1, 1, 3, 3)).astype(np.float32)
    args = ([1, 1], [1, 1], [1, 1], [12, 12])
    with accel.use("numba"):
        plan = plans.plan_forward(x.shape, w.shape, x.dtype, *args)
        prepared = plan.prepare(w)
        first = plan(x, prepared)
    assert not prepared.called and name in sys.modules
    np.testing.assert_array_equal(_bits(first), _bits(grouped_convolution(x, w, *args)))


@NEEDS_NUMBA
def test_compiled_depthwise_takes_empty_outputs_and_leaves_the_rest_to_numpy():
    """An output axis of size 0 computes nothing; three spatial axes, more outputs per input
    channel than a few, integers, f16 arrays, short rows of one axis, a 1x1 kernel and a layer
    of fewer multiply-adds than loading numba is worth keep their plans."""
    f32 = np.dtype(np.float32)
    with accel.use("numba"):
        for x_shape, out in [((1, 3, 1, 0, 5), [0, 5]), ((1, 3, 1, 4), [0])]:
            w_shape = (3, 1, 1, *(1,) * len(out))
            plan = plans.DepthwiseCompiled(x_shape, w_shape, f32, [1] * len(out), [1] * len(out), [0] * len(out),
                                           out, fallback=plans.Pointwise(x_shape, w_shape, f32))
            got = plan(np.ones(x_shape, f32), plan.prepare(np.ones(w_shape, f32)))
            assert got.shape == (1, 3, 1, *out)
        assert plans.plan_forward((1, 8, 1, 6, 6, 6), (8, 1, 1, 3, 3, 3), f32, [1] * 3, [1] * 3, [1] * 3,
                                  [6] * 3).name == "depthwise (banded)"
        assert plans.plan_forward((1, 2, 1, 8, 8), (2, 16, 1, 3, 3), f32, [1, 1], [1, 1], [1, 1],
                                  [8, 8]).name == "im2col (wide rows)"
        assert plans.plan_forward((1, 2, 1, 8, 8), (2, 1, 1, 3, 3), np.dtype(np.int32), [1, 1], [1, 1], [1, 1],
                                  [8, 8]) is None
        assert plans.plan_forward((1, 1024, 1, 50), (1024, 1, 1, 3), f32, [1], [1], [1], [50]).name == "im2col"
        assert plans.plan_forward((1, 4, 1, 6, 6), (4, 1, 1, 1, 1), f32, [1, 1], [1, 1], [0, 0],
                                  [6, 6]).name == "pointwise"
        assert plans.plan_forward((1, 16, 1, 16, 16), (16, 1, 1, 3, 3), f32, [1, 1], [1, 1], [1, 1],
                                  [16, 16]).name != plans.DepthwiseCompiled.name
        assert plans.plan_forward((1, 4, 1, 6, 6), (4, 1, 1, 3, 3), np.dtype(np.float16), [1, 1], [1, 1], [1, 1],
                                  [6, 6]).name == "im2col (wide rows)"


def test_thread_policy_and_helpers(monkeypatch):
    with pytest.raises(ValueError, match="unknown thread policy"):
        threads.use("many")
    monkeypatch.setattr(threads, "_policy", "split")
    monkeypatch.setenv("IRSCATTER_THREADS_POLICY", "blas")
    threads._from_environment()
    assert threads.policy() == "blas" and threads.parts(1 << 40) == 1
    monkeypatch.setenv("IRSCATTER_THREADS_POLICY", "many")
    with pytest.warns(UserWarning, match="unknown thread policy 'many'"):
        threads._from_environment()
    assert threads.policy() == "blas"
    assert threads.spans(10, 3) == [(0, 3), (3, 6), (6, 10)] and threads.spans(2, 5) == [(0, 1), (1, 2)]
    done = []
    threads.run([lambda i=i: done.append(i) for i in range(4)])
    assert sorted(done) == [0, 1, 2, 3]

    def fail():
        raise KeyError("part")
    with pytest.raises(KeyError):
        threads.run([lambda: None, fail])
    before = threads.policy()
    try:
        threads.use("one")
        assert threads.parts(1 << 40) == 1
    finally:
        threads.use(before)
