"""PaddleScatter-1 (irscatter1): the seed's worked example through an IR file, the
overwrite and accumulate modes on ranks 1-5 and every numeric type, against the seed's
own pseudo-code as the oracle."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import oracles
import pytest
from helpers import one_layer_ir
from hypothesis import given, settings
from hypothesis import strategies as st

import irscatter
from irscatter.ops import paddle_scatter

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64, np.int8, np.uint8]


def run_ir(tmp_path, x, index, updates, overwrite):
    xml = one_layer_ir(tmp_path, "PaddleScatter", "irscatter1", {"overwrite": str(overwrite).lower()},
                       [("x", x), ("index", index), ("updates", updates)], [(x.shape, x.dtype)])
    return irscatter.read_model(xml).run({"x": x, "index": index, "updates": updates})["out0"]


SEED_X = np.array([[1, 1], [2, 2], [3, 3]], np.float32)
SEED_INDEX = np.array([2, 1, 0, 1], np.int64)
SEED_UPDATES = np.array([[1, 1], [2, 2], [3, 3], [4, 4]], np.float32)


def test_seed_example_accumulates(tmp_path):
    out = run_ir(tmp_path, SEED_X, SEED_INDEX, SEED_UPDATES, overwrite=False)
    np.testing.assert_array_equal(out, [[3, 3], [6, 6], [1, 1]])
    assert out.shape == (3, 2)


def test_seed_example_overwrites_with_the_last_write(tmp_path):
    out = run_ir(tmp_path, SEED_X, SEED_INDEX, SEED_UPDATES, overwrite=True)
    np.testing.assert_array_equal(out, [[3, 3], [4, 4], [1, 1]])


def test_rows_not_indexed_keep_x(tmp_path):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    index = np.array([3, 0, 3], np.int32)
    updates = np.array([[10, 10], [20, 20], [30, 30]], np.float32)
    out = run_ir(tmp_path, x, index, updates, overwrite=False)
    np.testing.assert_array_equal(out, [[20, 20], [2, 3], [4, 5], [40, 40], [8, 9]])
    out = run_ir(tmp_path, x, index, updates, overwrite=True)
    np.testing.assert_array_equal(out, [[20, 20], [2, 3], [4, 5], [30, 30], [8, 9]])


def test_default_is_overwrite(tmp_path):
    xml = one_layer_ir(tmp_path, "PaddleScatter", "irscatter1", {},
                       [("x", SEED_X), ("index", SEED_INDEX), ("updates", SEED_UPDATES)], [(SEED_X.shape, np.float32)])
    out = irscatter.read_model(xml).run({"x": SEED_X, "index": SEED_INDEX, "updates": SEED_UPDATES})["out0"]
    np.testing.assert_array_equal(out, [[3, 3], [4, 4], [1, 1]])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("overwrite", [True, False])
def test_ranks_and_types_match_the_pseudo_code(tmp_path, dtype, rank, overwrite):
    rng = np.random.default_rng(rank)
    shape = (5,) + tuple(rng.integers(1, 4, size=rank - 1))
    x = rng.integers(-5, 6, size=shape).astype(dtype)
    index = rng.integers(0, 5, size=7).astype(np.int64)  # duplicates on purpose
    updates = rng.integers(-5, 6, size=(7,) + shape[1:]).astype(dtype)
    before = (x.copy(), index.copy(), updates.copy())
    got = run_ir(tmp_path, x, index, updates, overwrite)
    expected = oracles.paddle_scatter(x, index, updates, overwrite).astype(dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)
    for a, b in zip((x, index, updates), before):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_random_cases_match_the_pseudo_code(data):
    rows = data.draw(st.integers(1, 6))
    tail = data.draw(st.lists(st.integers(0, 3), max_size=3))
    n = data.draw(st.integers(0, 8))
    overwrite = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.normal(size=(rows, *tail))
    index = rng.integers(0, rows, size=n).astype(np.int32)
    updates = rng.normal(size=(n, *tail))
    np.testing.assert_allclose(paddle_scatter(x, index, updates, overwrite),
                               oracles.paddle_scatter(x, index, updates, overwrite), rtol=1e-12)


@pytest.mark.parametrize(("x", "index", "updates", "label"), [
    (np.zeros((3, 2)), np.zeros((1, 1), np.int64), np.zeros((1, 1, 2)), "index-rank"),
    (np.zeros((3, 2)), np.zeros(1, np.int16), np.zeros((1, 2)), "index-type"),
    (np.zeros((3, 2)), np.zeros(2, np.int64), np.zeros((1, 2)), "updates-shape"),
    (np.zeros((3, 2)), np.zeros(1, np.int64), np.zeros((1, 3)), "updates-shape"),
    (np.zeros((3, 2)), np.zeros(1, np.int64), np.zeros((1, 2), np.float32), "updates-type"),
    (np.zeros((3, 2), bool), np.zeros(1, np.int64), np.zeros((1, 2), bool), "x-type"),
    (np.zeros(()), np.zeros(1, np.int64), np.zeros((1,)), "x-rank"),
])
def test_constraint_violations_are_labelled(x, index, updates, label):
    with pytest.raises(irscatter.ValidationError) as e:
        paddle_scatter(x, index, updates)
    assert e.value.label == label


@pytest.mark.parametrize("bad", [-1, 3])
def test_out_of_range_index_is_an_error(tmp_path, bad):
    index = np.array([0, bad], np.int64)
    with pytest.raises(irscatter.ExecutionError) as e:
        run_ir(tmp_path, SEED_X, index, SEED_UPDATES[:2], overwrite=True)
    assert f"index {bad} at position [1]" in str(e.value) and "[0, 2]" in str(e.value)
