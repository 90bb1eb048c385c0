"""SparseAttentionIndexer (domain `extension`) against page_sparse_attention_indexer.py, the
literal transcription of sparse-attention-indexer.rst's pseudo-code beside these tests: no
OpenVINO release defines the op. Then its tie rule, the DSA and QSA readings the page gives,
key_length as a scalar or one value, a model run and every refusal."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir
from indexer_refusals import assert_refused
from page_sparse_attention_indexer import sparse_attention_indexer as page

import irscatter
from irscatter.ops.functional import call, make_op
from irscatter.ops.internal.qsa_indexer import QSAIndexer
from irscatter.ops.internal.sparse_attention_indexer import INPUTS, SparseAttentionIndexer


def inputs_for(*, batch=2, heads=4, length=5, size=8, ratio=3, key_length=14, weights=True, dtype=np.float32, seed=0,
               length_type=np.int64):
    rng = np.random.default_rng(seed)

    def draw(*shape):
        return rng.standard_normal(shape).astype(np.float32).astype(dtype)
    arrays = [draw(batch, heads, length, size), draw(batch, key_length // ratio, size),
              np.array(key_length, length_type)]
    return arrays + [draw(batch, length, heads)] if weights else arrays


CASES = {  # (inputs_for options, attributes)
    "qsa-prefill": (dict(length=14, weights=False), dict(compress_ratio=3, token_budget=9)),
    "qsa-chunk-with-weights": ({}, dict(compress_ratio=3, token_budget=6)),
    "decode": (dict(length=1, key_length=20), dict(compress_ratio=3, token_budget=6)),
    "dsa-ratio-1": (dict(length=3, key_length=9, ratio=1), dict(compress_ratio=1, token_budget=4)),
    "two-selection-heads": ({}, dict(compress_ratio=3, token_budget=6, num_selection_heads=2)),
    "a-selection-per-head": ({}, dict(compress_ratio=3, token_budget=3, num_selection_heads=4)),
    "budget-past-the-blocks": ({}, dict(compress_ratio=3, token_budget=30)),
    "i64-outputs": ({}, dict(compress_ratio=3, token_budget=6, index_element_type="i64")),
    "key-length-one-value": (dict(length_type=np.int32), dict(compress_ratio=3, token_budget=6)),
    "empty-batch": (dict(batch=0), dict(compress_ratio=3, token_budget=6)),
    "no-queries": (dict(length=0), dict(compress_ratio=3, token_budget=6)),
    "no-complete-block": (dict(length=2, key_length=2), dict(compress_ratio=3, token_budget=6)),
    "no-index-heads": (dict(heads=0), dict(compress_ratio=3, token_budget=6)),
    "f16": (dict(dtype=np.float16), dict(compress_ratio=3, token_budget=6)),
    "bf16": (dict(dtype=ml_dtypes.bfloat16), dict(compress_ratio=3, token_budget=6)),
    "f64": (dict(dtype=np.float64), dict(compress_ratio=3, token_budget=6)),
}


def check_against_page(arrays, attributes):
    kept = [a.copy() for a in arrays]
    got = call(SparseAttentionIndexer, arrays, attributes)
    want = page(*arrays, **attributes)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(arrays, kept))
    return got


@pytest.mark.parametrize("name", CASES)
def test_a_call_matches_the_page(name):
    options, attributes = CASES[name]
    arrays = inputs_for(**options)
    if name == "key-length-one-value":
        arrays[2] = arrays[2].reshape(1)
    check_against_page(arrays, attributes)


def test_edge_values_and_negative_weights_match_the_page():
    arrays = inputs_for(length=8, key_length=16, ratio=2)
    arrays[0][0, 1, 3, 2] = np.nan
    arrays[0][1, 0, 7, 0] = np.inf
    arrays[1][0, 2, 5] = -np.inf
    arrays[3][1, 2] = [-1.0, np.inf, 0.0, -np.inf]  # w * ReLU(q . k): inf * 0 is NaN, as numpy has it
    check_against_page(arrays, dict(compress_ratio=2, token_budget=6))


def test_equal_scores_choose_the_earlier_blocks_and_nan_ranks_last():
    arrays = inputs_for(batch=1, heads=1, length=1, key_length=12, ratio=2, weights=False)
    arrays[0][:] = 1
    arrays[1][:] = 1
    arrays[1][0, 1] = 2  # block 1 scores highest, the others tie
    attributes = dict(compress_ratio=2, token_budget=6)
    assert call(SparseAttentionIndexer, arrays, attributes)[0].tolist() == [[[[1, 0, 2]]]]  # by rank, ties by index
    arrays[1][0, 0, 0] = np.nan
    assert call(SparseAttentionIndexer, arrays, attributes)[0].tolist() == [[[[1, 2, 3]]]]


def test_the_page_s_counts():
    """Each row holds min(budget / r, (p + 1) // r) blocks; the first r - 1 positions none."""
    arrays = inputs_for(batch=1, length=12, key_length=12)
    _, count = call(SparseAttentionIndexer, arrays, dict(compress_ratio=3, token_budget=6))
    assert count[0, 0].tolist() == [min(2, (p + 1) // 3) for p in range(12)]


def test_it_chooses_the_complete_blocks_qsa_indexer_chooses():
    """The page's QSA reading: summaries as index_key_blocks, no weights, one selection head:
    the same blocks as QSAIndexer's complete ones (which it lists ascending, then the open one)."""
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((1, 9, 4, 8)).astype(np.float32), rng.standard_normal((1, 9, 1, 8)).astype(np.float32)
    state = [rng.standard_normal((1, 9, 4)).astype(np.float32), np.zeros((1, 1, 0, 8), np.float32),
             np.zeros((1, 1, 0, 8), np.float32), np.zeros((1, 4), np.float32), np.ones(8, np.float32)]
    sel, count, summaries, *_ = call(QSAIndexer, [q, k, *state], dict(
        compress_ratio=3, block_topk=2, indexer_rotary_dim=2, indexer_head_dim=8, scale=0.35))
    chosen, chosen_count = call(SparseAttentionIndexer, [q.transpose(0, 2, 1, 3), summaries[:, 0], np.array(9)],
                                dict(compress_ratio=3, token_budget=6))
    for p in range(9):
        complete = count[0, 0, p] - ((p + 1) % 3 != 0)
        assert chosen_count[0, 0, p] == complete
        assert sorted(chosen[0, 0, p, :complete]) == sel[0, 0, p, :complete].tolist()


def test_a_model_run_gives_the_function_s_outputs(tmp_path):
    arrays, attributes = inputs_for(), dict(compress_ratio=3, token_budget=6, num_selection_heads=2)
    want = call(SparseAttentionIndexer, arrays, attributes)
    xml = one_layer_ir(tmp_path, "SparseAttentionIndexer", "extension", attributes, list(zip(INPUTS, arrays)),
                       [(w.shape, w.dtype) for w in want])
    out = irscatter.read_model(xml).run(dict(zip(INPUTS, arrays)))
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[f"out{k}"], w)


REFUSED = [
    ("sai-attribute", {}, dict(token_budget=7)),
    ("sai-attribute", {}, dict(compress_ratio=0, token_budget=6)),
    ("sai-attribute", {}, dict(num_selection_heads=0)),
    ("sai-rank", {1: np.zeros((2, 4, 8, 1), np.float32)}, {}),
    ("sai-rank", {2: np.array([[14]])}, {}),
    ("sai-type", {3: np.zeros((2, 5, 4), np.float16)}, {}),
    ("sai-type", {2: np.array(14.0, np.float32)}, {}),
    ("sai-type", {0: np.zeros((2, 4, 5, 8), np.int32)}, {}),
    ("sai-shape", {1: np.zeros((2, 4, 7), np.float32)}, {}),
    ("sai-shape", {3: np.zeros((2, 5, 3), np.float32)}, {}),
    ("sai-shape", {3: np.zeros((1, 5, 4), np.float32)}, {}),
    ("sai-heads", {}, dict(num_selection_heads=3)),
    ("sai-key-length", {2: np.array([14, 14])}, {}),
    ("sai-key-length", {2: np.array(4)}, {}),
    ("sai-key-length", {2: np.array(17)}, {}),
]


@pytest.mark.parametrize("label, replaced, changes", REFUSED)
def test_what_the_page_rules_out_is_refused_with_its_label(label, replaced, changes):
    assert_refused(SparseAttentionIndexer, inputs_for(), replaced, dict(compress_ratio=3, token_budget=6) | changes,
                   label)


def test_a_key_length_inference_never_saw_is_refused_when_it_runs():
    arrays = inputs_for()
    arrays[2] = np.array(3)  # a fed value: fewer keys than the 5 queries
    with pytest.raises(irscatter.IRError) as caught:
        make_op(SparseAttentionIndexer, dict(compress_ratio=3, token_budget=6)).compute(*arrays)
    assert caught.value.label == "sai-key-length"
