"""SelectiveSSM (domain `extension`) against OpenVINO's CPU plugin, which runs the op read from
IR (tests/data/state_space_openvino.py, out of process), and against the page's own PyTorch
function transcribed in page_selective_ssm.py: groups, size-0 dims, edge values and the float
types; the refusals with their labels; inputs never written; the page's example. Where the
plugin departs from the page the page judges alone: the plugin refuses a state size of 0, which
the page allows, and with no steps returns a state it never wrote (the page returns the state
it was given)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from page_selective_ssm import torch_selective_ssm_recurrence
from state_space_util import (
    against_the_page,
    assert_near,
    assert_refused,
    check_example,
    plugin_answers,
    selective_inputs,
)

from irscatter.ops.functional import call
from irscatter.ops.internal.selective_ssm import SelectiveSSM


def selective_ssm(arrays):
    return call(SelectiveSSM, arrays, {})


def _edge(rng):
    """Steps of inf and 0, a NaN input, a state of inf: what IEEE arithmetic makes of each."""
    a, dt, b, x, c, state = selective_inputs(rng, 2, 3, 2, 1, 2, 3)
    dt[0, 0, 0] = np.inf  # exp(A * inf) = 0: the state restarts from the inflow
    dt[0, 1, 1] = 0.0  # no decay, no inflow
    x[1, 2, 0, 1] = np.nan
    state[1, 1, 0, 0] = np.inf
    return [a, dt, b, x, c, state]


def _cases():
    rng = np.random.default_rng(11)
    return {
        "groups": selective_inputs(rng, 2, 5, 4, 2, 3, 6),
        "one-group": selective_inputs(rng, 1, 4, 3, 1, 2, 4),
        "group-per-head": selective_inputs(rng, 1, 3, 2, 2, 4, 3),
        "f16": selective_inputs(rng, 2, 4, 4, 2, 3, 5, np.float16),
        "bf16": selective_inputs(rng, 1, 4, 2, 1, 3, 5, ml_dtypes.bfloat16),
        "no-steps": selective_inputs(rng, 2, 0, 2, 1, 3, 4),
        "no-batch": selective_inputs(rng, 0, 3, 2, 1, 3, 4),
        "no-head-dim": selective_inputs(rng, 1, 3, 2, 1, 0, 4),
        "no-state": selective_inputs(rng, 1, 3, 2, 1, 3, 0),
        "edge": _edge(rng),
    }


CASES = _cases()
REFUSED_BY_PLUGIN = {"no-state": "The state size must be greater than zero."}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    return plugin_answers(tmp_path_factory.mktemp("selective_ssm"), "SelectiveSSM", CASES)


@pytest.mark.parametrize("name", CASES)
def test_against_the_plugin_and_the_page(name, plugin):
    out, state = against_the_page(selective_ssm, torch_selective_ssm_recurrence, CASES[name])
    answer = plugin[name]
    if name in REFUSED_BY_PLUGIN:
        assert REFUSED_BY_PLUGIN[name] in answer.refused
        return
    assert answer.refused is None, answer.refused
    assert_near(out, answer.outputs[0], "output against the plugin")
    if out.shape[1]:  # with no steps the plugin's state output is memory it never wrote
        assert_near(state, answer.outputs[1], "state against the plugin")


@pytest.mark.parametrize("dtype", [np.float64, ml_dtypes.float8_e4m3fn], ids=lambda t: np.dtype(t).name)
def test_types_the_plugin_does_not_take_against_the_page(dtype):
    out, state = against_the_page(selective_ssm, torch_selective_ssm_recurrence,
                                  selective_inputs(np.random.default_rng(5), 2, 3, 4, 2, 2, 3, dtype))
    assert out.dtype == state.dtype == np.dtype(dtype)


def _changed(**replace):
    arrays = dict(zip(SelectiveSSM.inputs, selective_inputs(np.random.default_rng(1), 2, 3, 4, 2, 3, 5)))
    arrays.update(replace)
    return list(arrays.values())


F32 = np.float32
REFUSED = [
    ("ssm-rank", "A", {"A": np.zeros((4, 1), F32)}),
    ("ssm-rank", "recurrent_state", {"recurrent_state": np.zeros((2, 4, 3), F32)}),
    ("ssm-type", "x", {"x": np.zeros((2, 3, 4, 3), np.float16)}),
    ("ssm-type", "A", {"A": np.zeros(4, np.int32)}),
    ("ssm-dims", "dt", {"dt": np.zeros((3, 3, 4), F32)}),  # batch
    ("ssm-dims", "C", {"C": np.zeros((2, 4, 2, 5), F32)}),  # sequence length
    ("ssm-dims", "A", {"A": np.zeros(5, F32)}),  # heads
    ("ssm-dims", "recurrent_state", {"recurrent_state": np.zeros((2, 4, 2, 5), F32)}),  # head dim
    ("ssm-dims", "C", {"C": np.zeros((2, 3, 1, 5), F32)}),  # groups
    ("ssm-dims", "recurrent_state", {"recurrent_state": np.zeros((2, 4, 3, 6), F32)}),  # state size
    ("ssm-groups", "B", {"B": np.zeros((2, 3, 3, 5), F32), "C": np.zeros((2, 3, 3, 5), F32)}),
    ("ssm-groups", "B", {"B": np.zeros((2, 3, 0, 5), F32), "C": np.zeros((2, 3, 0, 5), F32)}),
]


@pytest.mark.parametrize(("label", "port", "replace"), REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_refusals(label, port, replace):
    assert_refused(selective_ssm, _changed(**replace), SelectiveSSM, label, port)


def test_the_pages_example_checks_its_shapes():
    check_example("selective-ssm.rst", "SelectiveSSM")
