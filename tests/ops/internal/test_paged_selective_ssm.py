"""PagedSelectiveSSM (domain `extension`) against OpenVINO's CPU plugin, which runs the op read
from IR (tests/data/state_space_openvino.py, out of process), and against the page's update and
block rules transcribed in page_paged_selective_ssm.py: steps mixing prefills (with and without a
past, a past off the cache interval, slot 0 aliasing slot 1), decodes crossing an interval or
not, a sequence that caches nothing and one without tokens; the table's types; size-0 dims and
edge values. Then a model run updating a donated table and no other, and every refusal with its
label. The plugin writes the caller's table only when it is f32 (of other types it updates a
converted copy), so tables of other types are checked against the page alone."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from page_paged_selective_ssm import paged_selective_ssm as page
from state_space_util import (
    I32,
    assert_refused,
    check_donation,
    check_example,
    check_paged_step,
    paged_ssm_inputs,
    plugin_answers,
)

from irscatter.ops.internal.paged_selective_ssm import INPUTS, PagedSelectiveSSM, paged_selective_ssm

BF16 = ml_dtypes.bfloat16

# (new tokens, processed, cache interval, slots): the rows each sequence reads and writes are its own
MIXED = [(5, 3, 2, [5, 1, 2, 3]), (1, 7, 4, [4, 4]), (3, 0, 0, [6]), (0, 2, 1, []), (4, 0, 2, [0, 0, 7])]
DECODE = [(1, 4, 4, [1, 2]), (1, 3, 4, [3, 3]), (1, 5, 2, [5, 6]), (1, 9, 3, [0, 7])]
EXACT = [(4, 2, 2, [3, 3, 1]), (6, 0, 3, [2, 4, 5])]  # the last token reaches a multiple of the interval


def _edge(rng):
    arrays = paged_ssm_inputs(rng, MIXED)
    arrays[1][0, 0] = np.inf  # exp(A * inf) = 0
    arrays[3][6, 1, 2] = np.nan
    arrays[5][4, 0, 0, 0] = np.inf
    return arrays


def _cases():
    rng = np.random.default_rng(21)
    return {
        "mixed": paged_ssm_inputs(rng, MIXED),
        "decode": paged_ssm_inputs(rng, DECODE, heads=2, groups=1, head_dim=4, size=3),
        "exact": paged_ssm_inputs(rng, EXACT, heads=3, groups=3, head_dim=2, size=4),
        "f16": paged_ssm_inputs(rng, MIXED, dtype=np.float16),
        "f32-with-f16-table": paged_ssm_inputs(rng, MIXED, table_dtype=np.float16),
        "f16-with-f32-table": paged_ssm_inputs(rng, DECODE, dtype=np.float16, table_dtype=np.float32),
        "bf16-with-bf16-table": paged_ssm_inputs(rng, DECODE, dtype=BF16),
        "no-tokens": paged_ssm_inputs(rng, [(0, 3, 2, [1, 2]), (0, 0, 1, [])]),
        "no-head-dim": paged_ssm_inputs(rng, MIXED, head_dim=0),
        "edge": _edge(rng),
    }


CASES = _cases()
PAGE_ONLY = {  # OpenVINO refuses a state size of 0, and computes in f32, f16 and bf16 only
    "no-state": paged_ssm_inputs(np.random.default_rng(8), MIXED, size=0),
    "no-heads": paged_ssm_inputs(np.random.default_rng(9), MIXED, heads=0, groups=1),
    "f64": paged_ssm_inputs(np.random.default_rng(10), MIXED, dtype=np.float64, table_dtype=np.float32),
}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    return plugin_answers(tmp_path_factory.mktemp("paged_ssm"), "PagedSelectiveSSM", CASES)


@pytest.mark.parametrize("name", CASES)
def test_against_the_plugin_and_the_page(name, plugin):
    check_paged_step(paged_selective_ssm, page, CASES[name], 5, plugin[name])


@pytest.mark.parametrize("name", PAGE_ONLY)
def test_what_the_plugin_does_not_take_against_the_page(name):
    check_paged_step(paged_selective_ssm, page, PAGE_ONLY[name], 5)


def test_a_model_run_updates_a_donated_table_and_no_other(tmp_path):
    arrays = paged_ssm_inputs(np.random.default_rng(3), MIXED)
    check_donation(tmp_path, PagedSelectiveSSM, arrays, paged_selective_ssm)


def _changed(sequences=MIXED, **replace):
    arrays = dict(zip(INPUTS, paged_ssm_inputs(np.random.default_rng(1), sequences)))
    arrays.update({k: np.asarray(v, arrays[k].dtype) if isinstance(v, list) else v for k, v in replace.items()})
    return list(arrays.values())


F32 = np.float32
REFUSED = [
    ("paged-ssm-rank", "dt", {"dt": np.zeros((13, 4, 1), F32)}),
    ("paged-ssm-rank", "cache_interval", {"cache_interval": np.zeros((5, 1), I32)}),
    ("paged-ssm-type", "x", {"x": np.zeros((13, 4, 3), np.float16)}),
    ("paged-ssm-type", "recurrent_state_table", {"recurrent_state_table": np.zeros((8, 4, 3, 5), np.float64)}),
    ("paged-ssm-type", "la_block_indices", {"la_block_indices": np.zeros(10, np.int64)}),
    ("paged-ssm-dims", "dt", {"dt": np.zeros((12, 4), F32)}),  # tokens
    ("paged-ssm-dims", "recurrent_state_table", {"recurrent_state_table": np.zeros((8, 2, 3, 5), F32)}),  # heads
    ("paged-ssm-dims", "recurrent_state_table", {"recurrent_state_table": np.zeros((8, 4, 2, 5), F32)}),  # head dim
    ("paged-ssm-dims", "C", {"C": np.zeros((13, 1, 5), F32)}),  # groups
    ("paged-ssm-dims", "C", {"C": np.zeros((13, 2, 4), F32)}),  # state size
    ("paged-ssm-groups", "B", {"B": np.zeros((13, 3, 5), F32), "C": np.zeros((13, 3, 5), F32)}),
    ("paged-ssm-sequences", "subsequence_begins", {"cache_interval": [2, 4, 0, 1]}),  # lengths disagree
    ("paged-ssm-sequences", "subsequence_begins", {"subsequence_begins": [0, 5, 6, 9, 9, 12]}),  # short of 13
    ("paged-ssm-sequences", "subsequence_begins", {"subsequence_begins": [0, 6, 5, 9, 9, 13]}),  # falling
    ("paged-ssm-sequences", "la_block_indices_begins", {"la_block_indices_begins": [0, 4, 6, 7, 7, 11]}),
    ("paged-ssm-sequences", "num_processed_tokens", {"num_processed_tokens": [3, -1, 0, 2, 0]}),
    ("paged-ssm-slots", "la_block_indices", {"la_block_indices": [5, 1, 2, 8, 4, 4, 6, 0, 0, 7]}),  # row 8 of 8
    ("paged-ssm-slots", "la_block_indices", {"cache_interval": [1, 4, 0, 1, 2]}),  # 5 writes, 3 slots after 0
    ("paged-ssm-slots", "la_block_indices", {"la_block_indices_begins": [0, 4, 6, 6, 6, 9]}),  # nothing to read
]


@pytest.mark.parametrize(("label", "port", "replace"), REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_refusals(label, port, replace):
    assert_refused(lambda arrays: paged_selective_ssm(*arrays), _changed(**replace), PagedSelectiveSSM, label, port)


def test_the_pages_example_checks_its_shapes():
    check_example("paged-selective-ssm.rst", "PagedSelectiveSSM")
