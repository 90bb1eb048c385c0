"""QSAIndexer (domain `extension`) against page_qsa_indexer.py, the literal transcription of
qsa-indexer.rst beside these tests: no OpenVINO release defines the op, so no plugin or
transformation can be the oracle. Selections must match exactly, states to rounding; then the
page's example, the tie rule, a prefill cut into steps, a model run and every refusal."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir
from indexer_refusals import assert_refused
from page_qsa_indexer import qsa_indexer as page

import irscatter
from irscatter.ops.functional import call, make_op
from irscatter.ops.internal.qsa_indexer import INPUTS, QSAIndexer

BF16 = ml_dtypes.bfloat16


def step_inputs(*, batch=2, length=5, q_heads=4, k_heads=2, size=8, rotary=4, known=2, pending=1, dtype=np.float32,
                seed=0, whole=False):
    """The 7 inputs of a step: `known` block summaries and `pending` raw keys of state. `whole`
    draws small integers, whose products and sums are exact (ties are ties)."""
    rng = np.random.default_rng(seed)

    def draw(*shape):
        values = rng.integers(-2, 3, shape) if whole else rng.standard_normal(shape)
        return values.astype(np.float32).astype(dtype)
    return [draw(batch, length, q_heads, size), draw(batch, length, k_heads, size), draw(batch, length, 2 * rotary),
            draw(batch, k_heads, known, size), draw(batch, k_heads, pending, size), draw(batch, 2 * rotary),
            (1 + 0.1 * draw(size)).astype(dtype)]


def attrs(**changes):
    base = dict(compress_ratio=3, block_topk=2, h_sel=1, indexer_rotary_dim=4, indexer_head_dim=8, eps=1e-6,
                scale=0.35)
    return {**base, **changes}


CASES = {  # (step_inputs options, attribute changes)
    "qsa-decode": (dict(batch=1, length=1, k_heads=1, known=2, pending=1), dict(compress_ratio=4)),
    "prefill-without-state": (dict(length=11, known=0, pending=0), {}),
    "two-key-heads-one-selection": ({}, {}),
    "a-selection-per-key-head": ({}, dict(h_sel=2)),
    "three-key-heads": (dict(q_heads=6, k_heads=3, length=7), dict(h_sel=3, block_topk=3)),
    "ratio-1-no-open-block": (dict(pending=0, known=3, length=4), dict(compress_ratio=1, block_topk=3)),
    "no-rotation": (dict(rotary=0), dict(indexer_rotary_dim=0)),
    "full-rotation": (dict(rotary=8), dict(indexer_rotary_dim=8)),
    "budget-past-the-blocks": (dict(length=6), dict(block_topk=9)),
    "budget-1": (dict(length=8), dict(block_topk=1)),
    "negative-scale": (dict(length=8), dict(scale=-0.5)),
    "zero-scale-ties": (dict(length=8), dict(scale=0.0)),
    "eps": (dict(length=4), dict(eps=0.5)),
    "empty-batch": (dict(batch=0), {}),
    "no-tokens": (dict(length=0, pending=2), {}),
    "no-query-heads": (dict(q_heads=0), {}),
    "f16": (dict(dtype=np.float16, length=7), {}),
    "bf16": (dict(dtype=BF16, length=7), {}),
}


def check_against_page(inputs, attributes, rtol=1e-5):
    kept = [a.copy() for a in inputs]
    got = call(QSAIndexer, inputs, attributes)
    want = page(*inputs, **attributes)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    for g, w in zip(got[2:], want[2:]):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=rtol, atol=rtol)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(inputs, kept))
    return got


@pytest.mark.parametrize("name", CASES)
def test_a_step_matches_the_page(name):
    options, changes = CASES[name]
    narrow = options.get("dtype", np.float32) != np.float32
    got = check_against_page(step_inputs(**options), attrs(**changes), rtol=1e-2 if narrow else 1e-5)
    assert got[0].dtype == got[1].dtype == np.int32


def test_edge_values_match_the_page():
    inputs = step_inputs(length=9, whole=True)
    inputs[0][0, 2, 1, 3] = np.nan
    inputs[0][1, 4, 0, 0] = np.inf
    inputs[1][0, 1, 0, 5] = -np.inf
    inputs[3][1, 0, 1, 2] = np.nan
    check_against_page(inputs, attrs())


def test_the_page_s_example():
    """One token at position 9 (two blocks done, one pending key), r 4, block_topk 2: the two
    complete blocks then the open one, whatever the scores."""
    inputs = step_inputs(batch=1, length=1, k_heads=1, size=128, rotary=64, known=2, pending=1)
    sel, count, summaries, pending, start = call(QSAIndexer, inputs, attrs(
        compress_ratio=4, indexer_head_dim=128, indexer_rotary_dim=64, scale=0.088388))
    assert sel.tolist() == [[[[0, 1, 2]]]] and count.tolist() == [[[3]]]
    assert summaries.shape == (1, 1, 2, 128) and pending.shape == (1, 1, 2, 128) and start.shape == (1, 128)
    np.testing.assert_array_equal(pending[0, 0, 1], inputs[1][0, 0, 0])  # the step's key joins the pending one


def test_equal_scores_choose_the_earlier_blocks_and_nan_ranks_last():
    inputs = step_inputs(batch=1, length=1, k_heads=1, known=5, pending=0)
    inputs[0][:] = 1
    inputs[3][:] = 2  # five equal summaries: every score is 4 heads * 8 * 2
    attributes = attrs(compress_ratio=2, block_topk=4)
    assert call(QSAIndexer, inputs, attributes)[0].tolist() == [[[[0, 1, 2, 3, 5]]]]  # then the open block 5
    inputs[3][0, 0, 1, 0] = np.nan
    assert call(QSAIndexer, inputs, attributes)[0].tolist() == [[[[0, 2, 3, 4, 5]]]]  # NaN: below every number
    inputs[3][0, 0, 4, 0] = -np.inf  # block 4 scores a rectified 0, still above NaN
    assert call(QSAIndexer, inputs, attributes)[0].tolist() == [[[[0, 2, 3, 4, 5]]]]


def test_a_prefill_cut_into_steps_gives_what_one_step_gives():
    whole = step_inputs(batch=1, length=13, known=0, pending=0, seed=3)
    attributes = attrs(compress_ratio=4)
    one = call(QSAIndexer, whole, attributes)
    summary, pending, start = whole[3], whole[4], whole[5]
    sels = []
    for rows in (slice(0, 5), slice(5, 6), slice(6, 11), slice(11, 13)):
        step = [whole[0][:, rows], whole[1][:, rows], whole[2][:, rows], summary, pending, start, whole[6]]
        sel, _, summary, pending, start = call(QSAIndexer, step, attributes)
        sels.append(sel)
    np.testing.assert_array_equal(np.concatenate(sels, axis=2), one[0])
    for got, want in zip((summary, pending, start), one[2:]):
        np.testing.assert_array_equal(got, want)


def _ir(tmp_path, inputs, attributes):
    outs = [(o.shape, o.dtype) for o in call(QSAIndexer, inputs, attributes)]
    return one_layer_ir(tmp_path, "QSAIndexer", "extension", attributes, list(zip(INPUTS, inputs)), outs)


def test_a_model_run_gives_the_function_s_outputs(tmp_path):
    inputs, attributes = step_inputs(), attrs(h_sel=2)
    want = call(QSAIndexer, inputs, attributes)
    kept = [a.copy() for a in inputs]
    out = irscatter.read_model(_ir(tmp_path, inputs, attributes)).run(dict(zip(INPUTS, inputs)))
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[f"out{k}"], w)
    assert all(np.array_equal(a, b) for a, b in zip(inputs, kept))


REFUSED = [
    ("qsa-attribute", {}, dict(block_topk=0)),
    ("qsa-attribute", {}, dict(compress_ratio=0)),
    ("qsa-attribute", {}, dict(indexer_rotary_dim=3)),
    ("qsa-attribute", {}, dict(indexer_rotary_dim=10)),
    ("qsa-rank", {4: np.zeros((2, 2, 8), np.float32)}, {}),
    ("qsa-type", {6: np.ones(8, np.float64)}, {}),
    ("qsa-type", {3: np.zeros((2, 2, 2, 8), np.float16)}, {}),
    ("qsa-shape", {1: np.zeros((2, 4, 2, 8), np.float32)}, {}),
    ("qsa-shape", {}, dict(indexer_head_dim=6)),
    ("qsa-shape", {2: np.zeros((2, 5, 6), np.float32)}, {}),
    ("qsa-heads", {}, dict(h_sel=3)),
    ("qsa-heads", {0: np.zeros((2, 5, 3, 8), np.float32)}, {}),
    ("qsa-heads", {1: np.zeros((2, 5, 0, 8), np.float32), 3: np.zeros((2, 0, 2, 8), np.float32),
                   4: np.zeros((2, 0, 1, 8), np.float32)}, {}),
    ("qsa-pending", {4: np.zeros((2, 2, 3, 8), np.float32)}, {}),
]


@pytest.mark.parametrize("label, replaced, changes", REFUSED)
def test_what_the_page_rules_out_is_refused_with_its_label(label, replaced, changes):
    assert_refused(QSAIndexer, step_inputs(), replaced, attrs(**changes), label)


def test_a_state_inference_never_saw_is_refused_when_it_runs():
    """A state fed at run time to a model that left its shape open: the kernel checks it."""
    inputs = step_inputs()
    inputs[4] = np.zeros((2, 2, 3, 8), np.float32)  # 3 pending keys, r is 3
    with pytest.raises(irscatter.IRError) as caught:
        make_op(QSAIndexer, attrs()).compute(*inputs)
    assert caught.value.label == "qsa-pending"
