"""PagedCausalConv1D (domain `extension`) against OpenVINO's CPU plugin, which runs the op read
from IR (tests/data/state_space_openvino.py, out of process), and against the page's pseudocode
transcribed in page_paged_causal_conv1d.py (with its two readings, said there): steps mixing
prefills (with and without a past, a past off the cache interval, slot 0 aliasing slot 1),
decodes crossing an interval or not, sequences that cache only their final window or have no
tokens; kernels of 1 to 5, an empty bias, the float types, size-0 dims and edge values. The
plugin computes the depthwise convolution only, so grouped and full ones are the page's alone;
it writes the caller's table only when it is f32, so other tables are the page's alone too.
Then a model run updating a donated table and no other, and every refusal with its label."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from page_paged_causal_conv1d import paged_causal_conv1d as page
from state_space_util import (
    assert_refused,
    check_donation,
    check_example,
    check_paged_step,
    paged_conv_inputs,
    plugin_answers,
)

from irscatter.ops.internal.paged_causal_conv1d import INPUTS, PagedCausalConv1D, paged_causal_conv1d

# (new tokens, processed, cache interval, slots): the rows each sequence reads and writes are its own
# (the plugin wants two slots even of a sequence without tokens, which reads and writes nothing)
MIXED = [(5, 3, 2, [5, 1, 2, 3]), (1, 7, 4, [4, 4]), (3, 0, 0, [6, 8]), (0, 2, 1, [9, 9]), (4, 0, 2, [0, 0, 7])]
DECODE = [(1, 4, 4, [1, 2]), (1, 3, 4, [3, 3]), (1, 5, 0, [5, 6]), (1, 9, 3, [0, 7])]
LONG = [(7, 1, 3, [2, 4, 5, 6]), (2, 0, 0, [1, 1])]  # more tokens than the kernel reaches back


def _edge(rng):
    arrays = paged_conv_inputs(rng, MIXED, rows=10)
    arrays[0][2, 1] = np.inf
    arrays[0][7, 3] = np.nan
    arrays[1][4, 0, 3] = -np.inf  # the newest column of a decode's window
    return arrays


def _cases():
    rng = np.random.default_rng(31)
    return {
        "mixed": paged_conv_inputs(rng, MIXED, rows=10),
        "decode": paged_conv_inputs(rng, DECODE, hidden=3, kernel=3),
        "long-kernel-2": paged_conv_inputs(rng, LONG, kernel=2),
        "kernel-1": paged_conv_inputs(rng, LONG, kernel=1),
        "kernel-5-no-bias": paged_conv_inputs(rng, MIXED, kernel=5, rows=10, bias=False),
        "f16": paged_conv_inputs(rng, MIXED, rows=10, dtype=np.float16),
        "bf16": paged_conv_inputs(rng, DECODE, dtype=ml_dtypes.bfloat16),
        "no-tokens": paged_conv_inputs(rng, [(0, 3, 2, [1, 2]), (0, 0, 1, [3, 3])]),
        "no-hidden": paged_conv_inputs(rng, MIXED, hidden=0, rows=10),
        "edge": _edge(rng),
    }


CASES = _cases()
GROUPED = {"grouped": paged_conv_inputs(np.random.default_rng(5), MIXED, per_group=2, rows=10),
           "full": paged_conv_inputs(np.random.default_rng(6), DECODE, hidden=4, per_group=4),
           "f64": paged_conv_inputs(np.random.default_rng(7), MIXED, rows=10, dtype=np.float64)}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    return plugin_answers(tmp_path_factory.mktemp("paged_conv"), "PagedCausalConv1D", CASES)


@pytest.mark.parametrize("name", CASES)
def test_against_the_plugin_and_the_page(name, plugin):
    check_paged_step(paged_causal_conv1d, page, CASES[name], 1, plugin[name])


@pytest.mark.parametrize("name", GROUPED)
def test_what_the_plugin_does_not_compute_against_the_page(name):
    check_paged_step(paged_causal_conv1d, page, GROUPED[name], 1)


def test_a_model_run_updates_a_donated_table_and_no_other(tmp_path):
    arrays = paged_conv_inputs(np.random.default_rng(3), MIXED, rows=10)
    check_donation(tmp_path, PagedCausalConv1D, arrays, paged_causal_conv1d)


def _changed(**replace):
    arrays = dict(zip(INPUTS, paged_conv_inputs(np.random.default_rng(1), MIXED, rows=10)))
    arrays.update({k: np.asarray(v, arrays[k].dtype) if isinstance(v, list) else v for k, v in replace.items()})
    return list(arrays.values())


F32 = np.float32
REFUSED = [
    ("paged-conv-rank", "input_embeds", {"input_embeds": np.zeros(13, F32)}),
    ("paged-conv-rank", "conv_bias", {"conv_bias": np.zeros((6, 1), F32)}),
    ("paged-conv-type", "conv_state_table", {"conv_state_table": np.zeros((10, 6, 4), np.float16)}),
    ("paged-conv-type", "input_embeds", {"input_embeds": np.zeros((13, 6), np.int32)}),
    ("paged-conv-type", "num_processed_tokens", {"num_processed_tokens": np.zeros(5, np.int64)}),
    ("paged-conv-dims", "conv_state_table", {"conv_state_table": np.zeros((10, 5, 4), F32)}),  # hidden size
    ("paged-conv-dims", "conv_weight", {"conv_weight": np.zeros((5, 1, 4), F32)}),  # out channels != hidden
    ("paged-conv-dims", "conv_weight", {"conv_weight": np.zeros((6, 1, 3), F32)}),  # kernel size
    ("paged-conv-dims", "conv_weight", {"conv_weight": np.zeros((6, 4, 4), F32)}),  # 4 channels per group of 6
    ("paged-conv-dims", "conv_weight", {"conv_weight": np.zeros((6, 1, 0), F32),
                                        "conv_state_table": np.zeros((10, 6, 0), F32)}),  # no kernel
    ("paged-conv-dims", "conv_bias", {"conv_bias": np.zeros(5, F32)}),
    ("paged-conv-sequences", "subsequence_begins", {"num_processed_tokens": [3, 7, 0, 2]}),  # lengths disagree
    ("paged-conv-sequences", "subsequence_begins", {"subsequence_begins": [1, 5, 6, 9, 9, 13]}),  # not from 0
    ("paged-conv-sequences", "la_block_indices_begins", {"la_block_indices_begins": [0, 4, 3, 8, 10, 13]}),
    ("paged-conv-sequences", "num_processed_tokens", {"num_processed_tokens": [3, 7, -2, 2, 0]}),
    ("paged-conv-slots", "la_block_indices", {"la_block_indices": [5, 1, 2, 3, 4, 4, 6, -1, 9, 9, 0, 0, 7]}),
    ("paged-conv-slots", "la_block_indices", {"la_block_indices_begins": [0, 4, 6, 7, 9, 12]}),  # one slot
]


@pytest.mark.parametrize(("label", "port", "replace"), REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_refusals(label, port, replace):
    assert_refused(lambda arrays: paged_causal_conv1d(*arrays), _changed(**replace), PagedCausalConv1D, label, port)


def test_the_pages_example_checks_its_shapes():
    check_example("paged-causal-conv1d.rst", "PagedCausalConv1D")
