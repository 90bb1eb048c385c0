"""The numba backend (`irscatter.ops.common.accel`) against the numpy path, bit for bit.

The rest of the suite runs whichever backend the environment picks (numba when it is installed,
as in CI, whose test extra brings it); this file forces each path in turn inside one process and
holds them to identical bytes, so both stay covered wherever the suite runs. Cases go through
the ops' own `compute`, and through `core` with tiles made small, so that every kernel of the
backend (tiles, rows, the parallel copy) sees ranks 1 to 5, empty dimensions, duplicates,
negative indices, every reduction with `use_init_val` both ways, and NaN, infinities and
signed zeros.
"""

from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from helpers import EXHAUSTIVE, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba", reason="numba is not installed, so the fast scatter backend was not compared "
                                    "(pip install -e '.[fast]')")

from irscatter.ir.element_types import ElementType  # noqa: E402
from irscatter.ir.graph import Layer  # noqa: E402
from irscatter.ops.common import accel as fast  # noqa: E402
from irscatter.ops.common.buffers import output_buffer  # noqa: E402
from irscatter.ops.scatter import core as scatter_core  # noqa: E402
from irscatter.ops.scatter.scatter_elements_update import ScatterElementsUpdate3, ScatterElementsUpdate12  # noqa: E402
from irscatter.ops.scatter.scatter_nd_update import ScatterNDUpdate4, ScatterNDUpdate15  # noqa: E402
from irscatter.ops.scatter.scatter_update import ScatterUpdate  # noqa: E402

# Each dtype the kernels see is one more compilation of every kernel it meets (seconds each). The
# quick run keeps one float kind (f16 and bf16 reach the kernels as f32), one integer and bool;
# the exhaustive run takes them all.
DTYPES = ([np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.int64, np.uint8, np.bool_]
          if EXHAUSTIVE else [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.bool_])
# One worker runs the whole file, so each kernel specialization is compiled once per suite run.
# One worker takes the whole module (numba compiles each kernel once per process), and it starts
# first: compiling from a fresh checkout's cold cache makes it one of the suite's longest runs.
pytestmark = [pytest.mark.xdist_group("numba"), pytest.mark.early]
SETTINGS = settings(max_examples=examples(200, 50), deadline=None, suppress_health_check=list(HealthCheck))
SPECIAL_FLOATS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], np.float64)


def _op(cls, type_name, **attrs):
    return cls(Layer(id=3, name="s", type=type_name, version="opset15", attrs={k: str(v) for k, v in attrs.items()}))


def _values(rng, shape, dtype, special: bool):
    """Random values, with many repeats (ties) and, for floats when `special`, NaN, infinities
    and zeros of both signs mixed in."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -200), min(info.max, 200) + 1, shape).astype(dtype)
    values = rng.integers(-40, 40, shape) / 4
    if special:
        values = np.where(rng.random(shape) < 0.3, rng.choice(SPECIAL_FLOATS, shape), values)
    return values.astype(dtype)


def _bits(array: np.ndarray) -> tuple:
    array = np.ascontiguousarray(array)
    return array.dtype, array.shape, array.view(np.uint8).tobytes()


def _same_on_both_paths(run, arithmetic: bool = False):
    """`run()` under the numpy path and the numba path (every call, whatever its size). With
    `arithmetic` (sum, sub, prod, mean), a NaN that two NaNs or infinities make may differ in
    sign between the paths (see accel's module doc): NaNs are compared as NaNs, the rest by bits."""
    with fast.use("numpy"):
        expected = run()
    with fast.use("numba"):
        got = run()
    if arithmetic and got.dtype.kind == "f":
        nan = np.isnan(expected.astype(np.float32))
        assert np.array_equal(nan, np.isnan(got.astype(np.float32)))
        got, expected = np.where(nan, 0, got).astype(got.dtype), np.where(nan, 0, expected).astype(expected.dtype)
    assert _bits(got) == _bits(expected)
    return got


def _pairs(reductions: list[str]) -> list[tuple]:
    """The (dtype, reduction) pairs drawn: every pair in the exhaustive run; in the quick one,
    each reduction once and each dtype at least once, since every distinct pair the kernels
    meet is a compilation of its own."""
    every = [(d, r) for d in DTYPES for r in reductions if not (d == np.bool_ and r == "mean")]
    if EXHAUSTIVE:
        return every
    cycle = [d for d in DTYPES if d != np.bool_]
    quick = [(cycle[i % len(cycle)], r) for i, r in enumerate(reductions)]
    return quick + [(np.bool_, "sum")]


def _shape(draw, rank, largest=4):
    return tuple(draw(st.lists(st.integers(0, largest), min_size=rank, max_size=rank)))


@st.composite
def elements_case(draw):
    rank = draw(st.integers(1, 5))
    shape = _shape(draw, rank)
    axis = draw(st.integers(-rank, rank - 1))
    a = axis % rank
    spanning = draw(st.booleans())  # indices as wide as data away from the axis: the tiled path
    ishape = tuple(draw(st.integers(0, 6)) if d == a else (n if spanning else draw(st.integers(0, n)))
                   for d, n in enumerate(shape))
    if shape[a] == 0:
        ishape = tuple(0 if d == a else n for d, n in enumerate(ishape))
    dtype, reduction = draw(st.sampled_from(_pairs(["none", "sum", "prod", "min", "max", "mean"])))
    return dict(shape=shape, axis=axis, ishape=ishape, dtype=dtype, reduction=reduction,
                use_init_val=draw(st.booleans()), version=draw(st.sampled_from([3, 12])),
                tile=draw(st.sampled_from([4, 64, scatter_core.TILE_ELEMENTS])), special=draw(st.booleans()),
                seed=draw(st.integers(0, 2**32 - 1)))


@SETTINGS
@given(elements_case())
def test_scatter_elements_same_bits(case):
    rng = np.random.default_rng(case["seed"])
    shape, a = case["shape"], case["axis"] % len(case["shape"])
    low = -shape[a] if case["version"] == 12 else 0
    indices = rng.integers(low, max(low + 1, shape[a]), case["ishape"]) if shape[a] else np.zeros(case["ishape"], np.int64)
    data = _values(rng, shape, case["dtype"], case["special"])
    updates = _values(rng, case["ishape"], case["dtype"], case["special"])
    if case["version"] == 3:
        op = _op(ScatterElementsUpdate3, "ScatterElementsUpdate")
    else:
        op = _op(ScatterElementsUpdate12, "ScatterElementsUpdate", reduction=case["reduction"],
                 use_init_val=str(case["use_init_val"]).lower())
    axis = np.array(case["axis"], np.int64)
    # the backend's own minimum tile width lifted too, so that its tiles stay as small as core's
    with mock.patch.object(scatter_core, "TILE_ELEMENTS", case["tile"]), \
            mock.patch.object(scatter_core, "MIN_TILE_WIDTH", 1), \
            mock.patch.object(fast, "MIN_TILE_COLUMNS", 1):
        arithmetic = case["version"] == 12 and case["reduction"] in ("sum", "prod", "mean")
        _same_on_both_paths(lambda: op.compute(data, indices, updates, axis), arithmetic)
        # handed over: the result is written into the data buffer itself
        _same_on_both_paths(lambda: op.compute(data.copy(), indices, updates, axis, inplace=True), arithmetic)


@st.composite
def nd_case(draw):
    rank = draw(st.integers(1, 5))
    shape = _shape(draw, rank)
    k = draw(st.integers(0 if 0 not in shape else 1, rank))
    batch = _shape(draw, draw(st.integers(0, 2)), largest=5)
    dtype, reduction = draw(st.sampled_from(_pairs(["none", "sum", "sub", "prod", "min", "max"])))
    return dict(shape=shape, k=k, batch=batch, dtype=dtype, reduction=reduction,
                version=draw(st.sampled_from([4, 15])), special=draw(st.booleans()),
                seed=draw(st.integers(0, 2**32 - 1)))


@SETTINGS
@given(nd_case())
def test_scatter_nd_same_bits(case):
    rng = np.random.default_rng(case["seed"])
    shape, k, batch = case["shape"], case["k"], case["batch"]
    if any(shape[d] == 0 for d in range(k)):
        batch = (0,)  # nothing can be addressed along an empty axis
    low = (lambda n: -n) if case["version"] == 15 else (lambda n: 0)
    indices = np.stack([rng.integers(low(shape[d]), max(1, shape[d]), batch) for d in range(k)], axis=-1) \
        if k else np.zeros(batch + (0,), np.int64)
    data = _values(rng, shape, case["dtype"], case["special"])
    updates = _values(rng, batch + shape[k:], case["dtype"], case["special"])
    op = (_op(ScatterNDUpdate15, "ScatterNDUpdate", reduction=case["reduction"]) if case["version"] == 15
          else _op(ScatterNDUpdate4, "ScatterNDUpdate"))
    arithmetic = case["version"] == 15 and case["reduction"] in ("sum", "sub", "prod")
    _same_on_both_paths(lambda: op.compute(data, indices, updates), arithmetic)
    _same_on_both_paths(lambda: op.compute(data.copy(), indices, updates, inplace=True), arithmetic)


@SETTINGS
@given(st.integers(1, 5).flatmap(lambda rank: st.tuples(
    st.lists(st.integers(0, 4), min_size=rank, max_size=rank), st.integers(0, rank - 1),
    st.lists(st.integers(0, 3), min_size=0, max_size=2), st.sampled_from(DTYPES), st.integers(0, 2**32 - 1))))
def test_scatter_update_same_bits(case):
    shape, axis, ishape, dtype, seed = case
    rng = np.random.default_rng(seed)
    if shape[axis] == 0:
        ishape = [0]
    indices = rng.integers(0, max(1, shape[axis]), ishape)
    data = _values(rng, shape, dtype, True)
    updates = _values(rng, tuple(shape[:axis]) + tuple(ishape) + tuple(shape[axis + 1:]), dtype, True)
    op = _op(ScatterUpdate, "ScatterUpdate")
    _same_on_both_paths(lambda: op.compute(data, indices, updates, np.array(axis)))


@pytest.mark.parametrize("incomparable", ["nan", "keep", "update"])
@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64] if EXHAUSTIVE else [np.float32])
def test_nan_rules_and_signed_zeros_same_bits(dtype, reduction, incomparable):
    """Every order of NaN (two payloads), infinities and zeros of both signs meeting in one
    element: numpy's choice between values that compare equal or not at all is kept."""
    nan_bits = np.array([np.nan], dtype).view(np.uint32 if dtype == np.float32 else np.uint64)
    other_nan = (nan_bits | 1).view(dtype)[0]
    values = np.array([np.nan, other_nan, np.inf, -np.inf, 0.0, -0.0, 2.0], dtype)
    pairs = np.array(np.meshgrid(np.arange(len(values)), np.arange(len(values)), np.arange(len(values)))).reshape(3, -1).T
    for use_init_val in (True, False):
        def run():
            out = values[pairs[:, 0]].copy()
            rows = np.repeat(np.arange(len(pairs)), 2)
            updates = values[pairs[:, 1:]].reshape(-1)
            scatter_core.scatter_rows(out, rows, updates, reduction, use_init_val=use_init_val,
                                      incomparable=incomparable)
            return out
        _same_on_both_paths(run)


@pytest.mark.parametrize("reduction", ["sum", "max", "mean", "none"])
def test_large_tiled_scatter_same_bits_in_auto_mode(reduction):
    """The size the backend takes by itself (`auto`): many tiles, spread over the threads."""
    rng = np.random.default_rng(5)
    shape = (1024, 320)
    data = rng.standard_normal(shape, dtype=np.float32)
    indices = rng.integers(0, 64, shape)  # many duplicates per target
    updates = rng.standard_normal(shape, dtype=np.float32)

    def run():
        return scatter_core.scatter_along_axis(data, indices, updates, 0, reduction, ElementType.f32,
                                               incomparable="update")
    with fast.use("numpy"):
        expected = run()
    with fast.use("auto"):
        assert fast.enabled()
        got = run()
    assert _bits(got) == _bits(expected)


def test_large_copy_is_split_and_exact():
    data = np.random.default_rng(6).standard_normal((1 << 21) + 3).astype(np.float32)
    with fast.use("numba"), mock.patch.object(fast, "parallel_copy", wraps=fast.parallel_copy) as parallel:
        copied = output_buffer(data, inplace=False)
    assert parallel.called and copied is not data and _bits(copied) == _bits(data)


def test_choosing_the_backend(monkeypatch):
    monkeypatch.setenv(fast.ENVIRONMENT_VARIABLE, "numpy")
    assert not fast.enabled()
    with fast.use("numba"):
        assert fast.enabled() and fast.forced()
    monkeypatch.setenv(fast.ENVIRONMENT_VARIABLE, "auto")
    assert fast.enabled() and not fast.forced()
    monkeypatch.setenv(fast.ENVIRONMENT_VARIABLE, "cuda")
    with pytest.raises(ValueError, match="IRSCATTER_BACKEND"):
        fast.mode()
    with pytest.raises(ValueError, match="backend must be"):
        with fast.use("gpu"):
            pass
