"""BNNSScatter-1 (irscatter1): the seed's three examples through IR files (a 1-D sum, and
the rectangular 3x3 -> 5x3 slice and element cases), both modes on ranks 1-5, every
reduction and type, against a per-element oracle."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import oracles
import pytest
from helpers import one_layer_ir
from hypothesis import given, settings
from hypothesis import strategies as st

import irscatter
from irscatter.ops import bnns_scatter

REDUCTIONS = ["none", "sum", "product", "max", "min", "mean"]
DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64, np.int8, np.uint8]


def run_ir(tmp_path, output, indices, values, axis=0, reduction="none"):
    xml = one_layer_ir(tmp_path, "BNNSScatter", "irscatter1", {"axis": axis, "reduction": reduction},
                       [("output", output), ("indices", indices), ("input", values)], [(output.shape, output.dtype)])
    return irscatter.read_model(xml).run({"output": output, "indices": indices, "input": values})["out0"]


# --- the seed's three examples -------------------------------------------------------------------


def test_seed_vector_sum(tmp_path):
    out = run_ir(tmp_path, np.array([10, 20, 30, 40, 50, 60, 70, 80], np.float32), np.array([1, 3, 7, 5], np.int32),
                 np.array([2, 4, 6, 8], np.float32), reduction="sum")
    np.testing.assert_array_equal(out, [10, 22, 30, 44, 50, 68, 70, 86])


def test_seed_rows_into_a_taller_matrix(tmp_path):
    values = np.array([[10, 11, 12], [30, 31, 32], [40, 41, 42]], np.float32)
    out = run_ir(tmp_path, np.zeros((5, 3), np.float32), np.array([1, 3, 4], np.int32), values)
    np.testing.assert_array_equal(out, [[0, 0, 0], [10, 11, 12], [0, 0, 0], [30, 31, 32], [40, 41, 42]])


def test_seed_elements_into_a_taller_matrix(tmp_path):
    values = np.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]], np.float32)
    indices = np.array([[4, 2, 3], [0, 0, 0], [2, 4, 4]], np.int32)
    out = run_ir(tmp_path, np.zeros((5, 3), np.float32), indices, values)
    np.testing.assert_array_equal(out, [[40, 50, 60], [0, 0, 0], [70, 20, 0], [0, 0, 30], [10, 80, 90]])


# --- both modes, every reduction, ranks 1-5 --------------------------------------------------------


def _case(rng, rank, axis, element_mode, dtype):
    out_shape = tuple(int(n) for n in rng.integers(2, 4, size=rank))
    n = int(rng.integers(1, 5))
    in_shape = list(out_shape)
    in_shape[axis] = n
    if element_mode:
        in_shape = [m if d == axis else int(rng.integers(1, m + 1)) for d, m in enumerate(in_shape)]
        indices = rng.integers(0, out_shape[axis], size=in_shape)
    else:
        indices = rng.integers(0, out_shape[axis], size=n)  # duplicates likely
    output = rng.integers(-4, 5, size=out_shape).astype(dtype)
    values = rng.integers(-4, 5, size=in_shape).astype(dtype)
    if np.dtype(dtype).kind == "u":
        output, values = np.abs(output.astype(np.int64)).astype(dtype), np.abs(values.astype(np.int64)).astype(dtype)
    return output, indices.astype(np.int64), values


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("element_mode", [False, True], ids=["slices", "elements"])
def test_modes_and_reductions_match_the_oracle(tmp_path, reduction, rank, element_mode):
    rng = np.random.default_rng(rank * 10 + REDUCTIONS.index(reduction))
    axis = int(rng.integers(-rank, rank))
    output, indices, values = _case(rng, rank, axis % rank, element_mode or rank == 1, np.float32)
    before = (output.copy(), indices.copy(), values.copy())
    got = run_ir(tmp_path, output, indices, values, axis, reduction)
    np.testing.assert_allclose(got, oracles.bnns_scatter(output, indices, values, axis, reduction), rtol=1e-6)
    for a, b in zip((output, indices, values), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_every_type(dtype, reduction):
    rng = np.random.default_rng(5)
    output, indices, values = _case(rng, 3, 1, True, dtype)
    got = bnns_scatter(output, indices, values, 1, reduction)
    assert got.dtype == np.dtype(dtype)
    expected = oracles.bnns_scatter(output, indices, values, 1, reduction)
    np.testing.assert_array_equal(got, expected.astype(dtype))


def test_integer_mean_floors():
    out = bnns_scatter(np.array([0, 0], np.int32), np.array([0, 0], np.int32), np.array([1, -4], np.int32),
                       reduction="mean")
    np.testing.assert_array_equal(out, [-1, 0])  # (0 + 1 - 4) / 3 = -1, floored


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_random_cases_match_the_oracle(data):
    rank = data.draw(st.integers(1, 4))
    axis = data.draw(st.integers(-rank, rank - 1))
    element_mode = data.draw(st.booleans())
    reduction = data.draw(st.sampled_from(REDUCTIONS))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    output, indices, values = _case(rng, rank, axis % rank, element_mode or rank == 1, np.float64)
    np.testing.assert_allclose(bnns_scatter(output, indices, values, axis, reduction),
                               oracles.bnns_scatter(output, indices, values, axis, reduction), rtol=1e-12)


# --- constraints -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "indices", "values", "attrs", "label"), [
    (np.zeros((5, 3)), np.zeros(3, np.int64), np.zeros((3, 3)), {"reduction": "average"}, "attributes"),
    (np.zeros((5, 3)), np.zeros(3, np.int64), np.zeros((3, 3)), {"axis": 2}, "axis-range"),
    (np.zeros((5, 3)), np.zeros(3, np.int16), np.zeros((3, 3)), {}, "indices-type"),
    (np.zeros((5, 3)), np.zeros(3, np.int64), np.zeros((3, 3), np.float32), {}, "input-type"),
    (np.zeros((5, 3)), np.zeros(3, np.int64), np.zeros(3), {}, "input-rank"),
    (np.zeros((5, 3)), np.zeros(2, np.int64), np.zeros((3, 3)), {}, "indices-shape"),
    (np.zeros((5, 3)), np.zeros(3, np.int64), np.zeros((3, 4)), {}, "input-shape"),
    (np.zeros((5, 3)), np.zeros((3, 2), np.int64), np.zeros((3, 3)), {}, "indices-shape"),
    (np.zeros((5, 3)), np.zeros((3, 4), np.int64), np.zeros((3, 4)), {}, "input-extent"),
    (np.zeros((5, 3), bool), np.zeros(3, np.int64), np.zeros((3, 3), bool), {"reduction": "mean"}, "mean-boolean"),
])
def test_constraint_violations_are_labelled(output, indices, values, attrs, label):
    with pytest.raises(irscatter.ValidationError) as e:
        bnns_scatter(output, indices, values, **attrs)
    assert e.value.label == label


def test_unknown_reduction_names_the_supported_ones():
    with pytest.raises(irscatter.ValidationError) as e:
        bnns_scatter(np.zeros(3), np.zeros(1, np.int64), np.zeros(1), reduction="average")
    for name in REDUCTIONS:
        assert f"'{name}'" in str(e.value)


@pytest.mark.parametrize("bad", [-1, 5])
def test_out_of_range_index_is_an_error(bad):
    with pytest.raises(irscatter.ExecutionError) as e:
        bnns_scatter(np.zeros((5, 3)), np.array([0, bad]), np.zeros((2, 3)))
    assert f"index {bad} at position [1]" in str(e.value)
