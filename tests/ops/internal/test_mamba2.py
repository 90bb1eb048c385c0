"""Mamba2 (domain `extension`) against the page's own PyTorch function, transcribed in
page_mamba2.py (OpenVINO 2026.4.1 has no Mamba2): size-0 dims, edge values and the float types;
the refusals with their labels; inputs never written, in a model run too; the page's example."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir
from page_mamba2 import torch_mamba2_recurrence
from state_space_util import against_the_page, assert_refused, check_example, output_ports

import irscatter
from irscatter.ops.functional import call
from irscatter.ops.internal.mamba2 import Mamba2


def mamba2(arrays):
    return call(Mamba2, arrays, {})


def inputs(batch, heads, length, head_dim, size, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.2, 1, (batch, heads, length, 1, 1)).astype(dtype),
            rng.standard_normal((batch, heads, length, head_dim, size)).astype(dtype),
            rng.standard_normal((batch, heads, length, size)).astype(dtype),
            rng.standard_normal((batch, heads, head_dim, size)).astype(dtype)]


SHAPES = {  # batch, heads, length, head_dim, state_size
    "plain": (2, 3, 5, 4, 6), "one-step": (1, 2, 1, 3, 2), "no-steps": (2, 2, 0, 3, 4), "no-batch": (0, 2, 3, 2, 2),
    "no-heads": (1, 0, 3, 2, 2), "no-head-dim": (1, 2, 3, 0, 2), "no-state": (1, 2, 3, 2, 0),
}


@pytest.mark.parametrize("name", SHAPES)
def test_shapes_against_the_page(name):
    against_the_page(mamba2, torch_mamba2_recurrence, inputs(*SHAPES[name]))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64, ml_dtypes.float8_e4m3fn],
                         ids=lambda t: np.dtype(t).name)
def test_types_against_the_page(dtype):
    out, state = against_the_page(mamba2, torch_mamba2_recurrence, inputs(2, 2, 4, 3, 5, dtype, seed=1))
    assert out.dtype == state.dtype == np.dtype(dtype)


def test_edge_values_against_the_page():
    da, dbx, c, state = inputs(1, 2, 3, 2, 2, seed=2)
    da[0, 0, 1] = 0.0  # the state restarts
    da[0, 1, 0] = np.inf  # an infinite decay of a state of mixed signs: inf and -inf
    dbx[0, 0, 2, 1, 0] = np.nan
    out, final = against_the_page(mamba2, torch_mamba2_recurrence, [da, dbx, c, state])
    assert np.isinf(final[0, 1]).any() and np.isnan(out[0, 0, 2, 1])


def test_a_model_run_leaves_its_feeds_alone(tmp_path):
    arrays = inputs(1, 2, 3, 2, 4)
    names = list(Mamba2.inputs)
    model = irscatter.read_model(one_layer_ir(tmp_path, "Mamba2", "extension", {}, list(zip(names, arrays)),
                                              output_ports("Mamba2", arrays)))
    kept = [a.copy() for a in arrays]
    for got, want in zip(model.run(dict(zip(names, arrays))).values(), mamba2(arrays)):
        np.testing.assert_array_equal(got, want)
    assert all(np.array_equal(a, k) for a, k in zip(arrays, kept))


def _changed(**replace):
    arrays = dict(zip(Mamba2.inputs, inputs(2, 3, 4, 2, 5)))
    arrays.update(replace)
    return list(arrays.values())


F32 = np.float32
REFUSED = [
    ("mamba2-rank", "dA", {"dA": np.zeros((2, 3, 4, 1), F32)}),
    ("mamba2-rank", "C", {"C": np.zeros((2, 3, 4, 5, 1), F32)}),
    ("mamba2-type", "C", {"C": np.zeros((2, 3, 4, 5), np.float64)}),
    ("mamba2-type", "dBx", {"dBx": np.zeros((2, 3, 4, 2, 5), np.int32)}),
    ("mamba2-dims", "dA", {"dA": np.zeros((2, 3, 4, 2, 1), F32)}),  # not [.., 1, 1]
    ("mamba2-dims", "dBx", {"dBx": np.zeros((1, 3, 4, 2, 5), F32)}),  # batch
    ("mamba2-dims", "recurrent_state", {"recurrent_state": np.zeros((2, 4, 2, 5), F32)}),  # heads
    ("mamba2-dims", "C", {"C": np.zeros((2, 3, 3, 5), F32)}),  # sequence length
    ("mamba2-dims", "recurrent_state", {"recurrent_state": np.zeros((2, 3, 3, 5), F32)}),  # head dim
    ("mamba2-dims", "C", {"C": np.zeros((2, 3, 4, 6), F32)}),  # state size
]


@pytest.mark.parametrize(("label", "port", "replace"), REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_refusals(label, port, replace):
    assert_refused(mamba2, _changed(**replace), Mamba2, label, port)


def test_the_pages_example_checks_its_shapes():
    check_example("mamba2.rst", "Mamba2")
