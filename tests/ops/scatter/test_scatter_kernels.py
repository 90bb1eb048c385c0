"""The vectorized scatter kernels against the per-element oracles (hypothesis), the spec's
reference cases, index errors, and inputs never mutated."""

from unittest import mock

import ml_dtypes
import numpy as np
import oracles
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irscatter
from irscatter.ir.graph import Layer
from irscatter.ops.common import accel
from irscatter.ops.scatter import core as scatter_core
from irscatter.ops.scatter.scatter_elements_update import ScatterElementsUpdate3, ScatterElementsUpdate12
from irscatter.ops.scatter.scatter_nd_update import ScatterNDUpdate4, ScatterNDUpdate15
from irscatter.ops.scatter.scatter_update import ScatterUpdate

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.int64, np.int8, np.uint8, np.bool_]
SETTINGS = settings(max_examples=examples(150, 40), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def numpy_backend():
    """The numpy kernels against the oracles. With tiles patched small, `auto` would send
    these calls to numba, compiling a kernel per dtype and reduction; test_fast_backend.py holds
    numba to the numpy kernels' bits."""
    with accel.use("numpy"):
        yield


def _op(cls, type_name, **attrs):
    return cls(Layer(id=7, name="s", type=type_name, version="opset15", attrs={k: str(v) for k, v in attrs.items()}))


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -5
        return rng.integers(lo, 6, shape).astype(dtype)
    return (rng.integers(-40, 40, shape) / 4).astype(dtype)  # exact in every float type


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    exact = got.dtype.kind in "biu"
    np.testing.assert_array_equal(got if exact else got.astype(np.float64), want if exact else want.astype(np.float64))


def _to_data_type(want, dtype):
    """The oracle's f32 result in the data type, rounded to bf16 by OpenVINO's rule."""
    if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
        from irscatter.ops.common.numeric import convert_array

        return convert_array(want, irscatter.ElementType.f32, irscatter.ElementType.bf16)
    return want.astype(dtype) if want.dtype != np.dtype(dtype) else want


def _shape_and_axis(draw, largest):
    """A shape of rank 1 to 5, an axis in [-rank, rank) and the axis normalised."""
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(st.lists(st.integers(1, largest), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    return shape, axis, axis % rank


@st.composite
def elements_case(draw):
    shape, axis, a = _shape_and_axis(draw, 4)
    ishape = tuple(draw(st.integers(1, 6)) if d == a else draw(st.integers(1, n)) for d, n in enumerate(shape))
    dtype = draw(st.sampled_from(DTYPES))
    reductions = ["none", "sum", "prod", "min", "max"] + ([] if dtype == np.bool_ else ["mean"])
    reduction = draw(st.sampled_from(reductions))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    indices = rng.integers(-shape[a], shape[a], ishape)
    return shape, axis, indices, dtype, reduction, draw(st.booleans()), rng


@SETTINGS
@given(elements_case())
def test_scatter_elements_matches_oracle(case):
    shape, axis, indices, dtype, reduction, use_init_val, rng = case
    data, updates = _values(rng, shape, dtype), _values(rng, indices.shape, dtype)
    data_before = data.copy()
    op = _op(ScatterElementsUpdate12, "ScatterElementsUpdate", reduction=reduction, use_init_val=str(use_init_val).lower())
    got = op.compute(data, indices, updates, np.array(axis))
    want = _to_data_type(oracles.scatter_elements(data, indices, updates, axis, reduction, use_init_val), dtype)
    assert got.shape == data.shape and got.dtype == data.dtype
    _same(got, want)
    assert np.array_equal(data, data_before), "data must not be mutated"


@st.composite
def nd_case(draw):
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    k = draw(st.integers(1, rank))
    lead = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=2)))
    dtype = draw(st.sampled_from(DTYPES))
    reduction = draw(st.sampled_from(["none", "sum", "sub", "prod", "min", "max"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sizes = np.array(shape[:k])
    indices = (rng.integers(0, 2**31, lead + (k,)) % (2 * sizes)) - sizes  # [-s, s-1] per component
    return shape, indices.astype(draw(st.sampled_from([np.int32, np.int64]))), dtype, reduction, rng


@SETTINGS
@given(nd_case())
def test_scatter_nd_matches_oracle(case):
    shape, indices, dtype, reduction, rng = case
    k = indices.shape[-1]
    data = _values(rng, shape, dtype)
    updates = _values(rng, indices.shape[:-1] + shape[k:], dtype)
    got = _op(ScatterNDUpdate15, "ScatterNDUpdate", reduction=reduction).compute(data, indices, updates)
    _same(got, _to_data_type(oracles.scatter_nd(data, indices, updates, reduction), dtype))


@st.composite
def update_case(draw):
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    ishape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    indices = rng.integers(0, shape[axis % rank], ishape)
    return shape, axis, indices, dtype, rng


@SETTINGS
@given(update_case())
def test_scatter_update_matches_oracle(case):
    shape, axis, indices, dtype, rng = case
    a = axis % len(shape)
    data = _values(rng, shape, dtype)
    updates = _values(rng, shape[:a] + indices.shape + shape[a + 1:], dtype)
    got = _op(ScatterUpdate, "ScatterUpdate").compute(data, indices, updates, np.array(axis))
    _same(got, _to_data_type(oracles.scatter_update(data, indices, updates, axis), dtype))


@st.composite
def spanning_case(draw):
    """Indices that cover data everywhere but along the axis: the tiled path's domain."""
    shape, axis, a = _shape_and_axis(draw, 5)
    ishape = tuple(draw(st.integers(1, 7)) if d == a else n for d, n in enumerate(shape))
    dtype = draw(st.sampled_from(DTYPES))
    reduction = draw(st.sampled_from(["none", "sum", "prod", "min", "max"] + ([] if dtype == np.bool_ else ["mean"])))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    indices = rng.integers(-shape[a], shape[a], ishape)
    tile = draw(st.sampled_from([1, 3, 8, 40]))
    return shape, axis, indices, dtype, reduction, draw(st.booleans()), draw(st.booleans()), tile, rng


@SETTINGS
@given(spanning_case())
def test_tiled_scatter_elements_matches_oracle(case):
    """Tiles as small as one element, so that every way of cutting a shape is exercised;
    with `inplace=True` the result may overwrite data, and must still be the same."""
    shape, axis, indices, dtype, reduction, use_init_val, inplace, tile, rng = case
    data, updates = _values(rng, shape, dtype), _values(rng, indices.shape, dtype)
    want = _to_data_type(oracles.scatter_elements(data, indices, updates, axis, reduction, use_init_val), dtype)
    op = _op(ScatterElementsUpdate12, "ScatterElementsUpdate", reduction=reduction, use_init_val=str(use_init_val).lower())
    with mock.patch.object(scatter_core, "TILE_ELEMENTS", tile), mock.patch.object(scatter_core, "MIN_TILE_WIDTH", 1):
        got = op.compute(data, indices, updates, np.array(axis), inplace=inplace)
    _same(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("kernel", ["elements", "nd", "update", "elements-tiled"])
def test_inplace_kernels_write_into_data_only_when_its_dtype_is_the_compute_dtype(kernel, dtype):
    rng = np.random.default_rng(3)
    data = _values(rng, (6, 5), dtype)
    if kernel.startswith("elements"):
        indices = rng.integers(-6, 6, (4, 5))
        args = (data, indices, _values(rng, indices.shape, dtype), np.array(0))
        op = _op(ScatterElementsUpdate12, "ScatterElementsUpdate", reduction="sum")
        want = oracles.scatter_elements(data, indices, args[2], 0, "sum")
    elif kernel == "nd":
        indices = np.array([[1], [4], [1]])
        args = (data, indices, _values(rng, (3, 5), dtype))
        op = _op(ScatterNDUpdate15, "ScatterNDUpdate", reduction="max")
        want = oracles.scatter_nd(data, indices, args[2], "max")
    else:
        indices = np.array([5, 0, 5])
        args = (data, indices, _values(rng, (3, 5), dtype), np.array(0))
        op = _op(ScatterUpdate, "ScatterUpdate")
        want = oracles.scatter_update(data, indices, args[2], 0)
    before = data.copy()
    tile = 4 if kernel.endswith("tiled") else scatter_core.TILE_ELEMENTS
    with mock.patch.object(scatter_core, "TILE_ELEMENTS", tile), mock.patch.object(scatter_core, "MIN_TILE_WIDTH", 1):
        got = op.compute(*args, inplace=True)
    _same(got, _to_data_type(want, dtype))
    if np.dtype(dtype) == np.float16:  # computed in f32: data cannot hold the result, so it is kept
        assert np.array_equal(data, before) and not np.shares_memory(got, data)
    else:
        assert np.shares_memory(got, data)


# --- deterministic cases --------------------------------------------------------------------------


def test_duplicates_without_reduction_keep_the_last_row_major_update():
    op = _op(ScatterElementsUpdate12, "ScatterElementsUpdate")
    out = op.compute(np.zeros(3, np.float32), np.array([1, 1, -2, 0]), np.array([5, 6, 7, 8], np.float32), np.array(0))
    assert out.tolist() == [8, 7, 0]
    nd = _op(ScatterNDUpdate15, "ScatterNDUpdate").compute(np.zeros(1), np.array([[0], [0]]), np.array([40.0, 50.0]))
    assert nd.tolist() == [50.0]


def test_integer_mean_floors_toward_negative_infinity():
    op = _op(ScatterElementsUpdate12, "ScatterElementsUpdate", reduction="mean", use_init_val="false")
    out = op.compute(np.zeros(2, np.int32), np.array([0, 0, 1, 1]), np.array([-3, -4, 3, 4], np.int32), np.array(0))
    assert out.tolist() == [-4, 3]  # -7/2 floors to -4, 7/2 to 3


def test_boolean_reductions_are_logical():
    data = np.array([True, False, False, True])
    idx, upd = np.array([1, 2, 3, 3]), np.array([True, False, False, True])
    for reduction, want in [("sum", [1, 1, 0, 1]), ("max", [1, 1, 0, 1]), ("prod", [1, 0, 0, 0]), ("min", [1, 0, 0, 0])]:
        got = _op(ScatterElementsUpdate12, "ScatterElementsUpdate", reduction=reduction).compute(data, idx, upd, np.array(0))
        assert got.astype(int).tolist() == want, reduction
    sub = _op(ScatterNDUpdate15, "ScatterNDUpdate", reduction="sub").compute(data, idx.reshape(4, 1), upd)
    assert sub.astype(int).tolist() == [1, 1, 0, 0]  # XOR, twice on the last element


def test_use_init_val_false_only_resets_touched_elements():
    op = _op(ScatterElementsUpdate12, "ScatterElementsUpdate", reduction="max", use_init_val="false")
    out = op.compute(np.array([9, 9, 9], np.int32), np.array([0, 0]), np.array([-5, -7], np.int32), np.array(0))
    assert out.tolist() == [-5, 9, 9]


@pytest.mark.parametrize(
    "cls, type_name, args, message",
    [
        (ScatterUpdate, "ScatterUpdate", (np.zeros((2, 3)), np.array([0, -1]), np.zeros((2, 2)), np.array(1)),
         "index -1 at position [1] is out of range [0, 2] (negative indices are not allowed"),
        (ScatterUpdate, "ScatterUpdate", (np.zeros((2, 3)), np.array([[3]]), np.zeros((2, 1, 1)), np.array(1)),
         "index 3 at position [0, 0] is out of range [0, 2]"),
        (ScatterElementsUpdate3, "ScatterElementsUpdate", (np.zeros(3), np.array([0, -1]), np.zeros(2), np.array(0)),
         "index -1 at position [1]"),
        (ScatterElementsUpdate12, "ScatterElementsUpdate", (np.zeros(3), np.array([0, -4]), np.zeros(2), np.array(0)),
         "index -4 at position [1] is out of range [-3, 2]"),
        (ScatterNDUpdate4, "ScatterNDUpdate", (np.zeros((2, 3)), np.array([[1, -1]]), np.zeros(1)),
         "index component -1 at position [0, 1]"),
        (ScatterNDUpdate15, "ScatterNDUpdate", (np.zeros((2, 3)), np.array([[0, 0], [1, 3]]), np.zeros(2)),
         "index component 3 at position [1, 1] is out of range [-3, 2]"),
        (ScatterElementsUpdate12, "ScatterElementsUpdate", (np.zeros(3), np.array([0]), np.zeros(1), np.array(2)),
         "axis 2 is out of the range [-1, 0]"),
    ],
)
def test_index_errors_name_value_and_position(cls, type_name, args, message):
    with pytest.raises(irscatter.ExecutionError) as info:
        _op(cls, type_name).compute(*args)
    assert message in str(info.value)
