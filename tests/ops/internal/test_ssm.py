"""SSM (domain `extension`) against the page's own PyTorch function, transcribed in page_ssm.py
(OpenVINO 2026.4.1 has no SSM): groups, size-0 dims, edge values and the float types; the same
numbers as SelectiveSSM, whose inference and labelled refusals it shares (tested there); inputs
never written; the page's example."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from page_ssm import torch_ssm_recurrence
from state_space_util import against_the_page, assert_refused, check_example, selective_inputs

from irscatter.ops.functional import call
from irscatter.ops.internal.selective_ssm import SelectiveSSM
from irscatter.ops.internal.ssm import SSM


def ssm(arrays):
    return call(SSM, arrays, {})


SHAPES = {  # batch, length, heads, groups, head_dim, state_size
    "groups": (2, 5, 4, 2, 3, 6), "one-group": (1, 4, 3, 1, 2, 4), "group-per-head": (1, 3, 2, 2, 4, 3),
    "no-steps": (2, 0, 2, 1, 3, 4), "no-batch": (0, 3, 2, 1, 3, 4), "no-head-dim": (1, 3, 2, 1, 0, 4),
    "no-state": (1, 3, 2, 1, 3, 0), "no-heads": (1, 3, 0, 1, 3, 4),
}
TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, ml_dtypes.float8_e4m3fn]


@pytest.mark.parametrize("name", SHAPES)
def test_shapes_against_the_page(name):
    against_the_page(ssm, torch_ssm_recurrence, selective_inputs(np.random.default_rng(2), *SHAPES[name]))


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
def test_types_against_the_page(dtype):
    out, state = against_the_page(ssm, torch_ssm_recurrence,
                                  selective_inputs(np.random.default_rng(3), 2, 4, 4, 2, 3, 5, dtype))
    assert out.dtype == state.dtype == np.dtype(dtype)


def test_edge_values_against_the_page():
    a, dt, b, x, c, state = selective_inputs(np.random.default_rng(4), 2, 3, 2, 1, 2, 3)
    dt[0, 0, 0], dt[0, 1, 1], x[1, 2, 0, 1], state[1, 1, 0, 0] = np.inf, 0.0, np.nan, np.inf
    a[1], dt[1, 0, 1] = 0.0, np.inf  # 0 * inf: a NaN decay
    out, _ = against_the_page(ssm, torch_ssm_recurrence, [a, dt, b, x, c, state])
    assert np.isnan(out[1, 0, 1]).all()


def test_the_same_numbers_as_selective_ssm():
    arrays = selective_inputs(np.random.default_rng(6), 2, 6, 4, 2, 3, 5)
    for got, want in zip(ssm(arrays), call(SelectiveSSM, arrays, {})):
        np.testing.assert_array_equal(got, want)


def test_a_refusal_names_ssm():
    arrays = selective_inputs(np.random.default_rng(1), 2, 3, 4, 2, 3, 5)
    arrays[0] = np.zeros(5, np.float32)
    assert_refused(ssm, arrays, SSM, "ssm-dims", "A")


def test_the_pages_example_checks_its_shapes():
    check_example("ssm.rst", "SSM")
