"""PagedQSAIndexer (domain `extension`) against page_qsa_indexer.py, the literal transcription of
paged-qsa-indexer.rst beside these tests (token by token, as its pseudo-code writes the caches):
no OpenVINO release defines the op. Then against QSAIndexer step by step, the page's example,
its prefix-caching example, the caches a model run updates (donated) or leaves alone, and every
refusal."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir
from indexer_refusals import assert_refused
from page_qsa_indexer import paged_qsa_indexer as page

import irscatter
from irscatter.ops.functional import call, make_op
from irscatter.ops.internal.paged_qsa_indexer import INPUTS, PagedQSAIndexer
from irscatter.ops.internal.qsa_indexer import QSAIndexer

I32 = np.int32


def attrs(**changes):
    base = dict(compress_ratio=2, block_topk=2, h_sel=1, indexer_rotary_dim=4, indexer_head_dim=6, eps=1e-6,
                scale=0.4, page_size=4, ring_capacity=4)
    return {**base, **changes}


def step_inputs(sequences, *, q_heads=4, k_heads=2, pages=8, slots=4, attributes=None, dtype=np.float32, seed=0,
                index_type=I32):
    """The 12 inputs of a step. `sequences`: (past, new, page table, ring slot) each."""
    a = attributes or attrs()
    size, rot, r = a["indexer_head_dim"], a["indexer_rotary_dim"], a["compress_ratio"]
    rng = np.random.default_rng(seed)
    tokens = sum(new for _, new, _, _ in sequences)

    def draw(*shape):
        return rng.standard_normal(shape).astype(np.float32).astype(dtype)
    return [draw(tokens, q_heads * size), draw(tokens, k_heads * size), draw(tokens, 2 * rot),
            draw(pages, k_heads, a["page_size"] // r, size), draw(slots, k_heads, a["ring_capacity"], size),
            draw(slots, a["ring_capacity"] // r, 2 * rot), (1 + 0.1 * draw(size)).astype(dtype),
            np.array([s for *_, s in sequences], index_type),
            np.array([b for _, _, t, _ in sequences for b in t], index_type),
            np.cumsum([0] + [len(t) for _, _, t, _ in sequences]).astype(index_type),
            np.cumsum([0] + [n for _, n, _, _ in sequences]).astype(index_type),
            np.array([p for p, *_ in sequences], index_type)]


def run(inputs, attributes):
    """(sel_indices, sel_count, summary_cache, indexer_k_cache, indexer_k_start_cos_sin) after the step."""
    caches = [inputs[i].copy() for i in (3, 4, 5)]
    op = make_op(PagedQSAIndexer, attributes)
    return (*op.step(tuple(inputs), *caches), *caches)


MIXED = [(5, 3, [3, 1], 1), (0, 7, [0, 2], 0), (2, 0, [4], 3), (6, 1, [5, 7], 2)]  # a chunk, a prefill, idle, decode

CASES = {  # (sequences, step_inputs options, attribute changes)
    "continuous-batch": (MIXED, {}, {}),
    "a-selection-per-key-head": (MIXED, {}, dict(h_sel=2)),
    "one-key-head": (MIXED, dict(k_heads=1), {}),
    "ring-of-one-block-wraps": ([(1, 6, [2, 6], 3), (3, 2, [1, 0], 0)], {}, dict(ring_capacity=2)),
    "ring-of-three-blocks": (MIXED, {}, dict(ring_capacity=6)),
    "pages-of-one-block": ([(3, 4, [6, 2, 0, 7], 0), (0, 5, [1, 3, 5], 2)], {}, dict(page_size=2)),
    "ratio-1": (MIXED, {}, dict(compress_ratio=1, block_topk=3, ring_capacity=3)),
    "ratio-3": ([(4, 5, [2, 5], 1), (0, 8, [0, 3], 0)], {},
                dict(compress_ratio=3, page_size=6, ring_capacity=6, block_topk=1)),
    "budget-past-the-blocks": (MIXED, {}, dict(block_topk=6)),
    "no-rotation": (MIXED, {}, dict(indexer_rotary_dim=0)),
    "full-rotation": (MIXED, {}, dict(indexer_rotary_dim=6)),
    "a-slot-shared-by-two-sequences": ([(3, 2, [0, 1], 1), (1, 2, [2], 1)], {}, {}),
    "a-page-listed-twice": ([(0, 8, [3, 3], 0)], {}, {}),
    "no-sequences": ([], {}, {}),
    "only-idle-sequences": ([(4, 0, [1], 0), (0, 0, [], 1)], {}, {}),
    "i64-indices": (MIXED, dict(index_type=np.int64), {}),
    "f16": (MIXED, dict(dtype=np.float16), {}),
    "bf16": (MIXED, dict(dtype=ml_dtypes.bfloat16), {}),
}


@pytest.mark.parametrize("name", CASES)
def test_a_step_matches_the_page(name):
    sequences, options, changes = CASES[name]
    attributes = attrs(**changes)
    inputs = step_inputs(sequences, attributes=attributes, **options)
    kept = [a.copy() for a in inputs]
    got = run(inputs, attributes)
    want = page(*inputs, **attributes)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    tolerance = 1e-5 if inputs[0].dtype == np.float32 else 1e-2
    for g, w in zip(got[2:], want[2:]):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=tolerance, atol=tolerance)
    assert all(np.array_equal(a, b) for a, b in zip(inputs, kept))
    assert got[0].dtype == got[1].dtype == np.int32


def test_edge_values_match_the_page():
    inputs = step_inputs(MIXED)
    inputs[0][2, 7] = np.nan
    inputs[1][4, 3] = np.inf
    inputs[3][1, 0, 1, 2] = np.nan  # a summary of the first sequence's past
    inputs[4][0, 1, 1, 0] = -np.inf
    got, want = run(inputs, attrs()), page(*inputs, **attrs())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_the_page_s_example():
    a = attrs(compress_ratio=4, page_size=16, ring_capacity=4, indexer_head_dim=128, indexer_rotary_dim=128)
    inputs = step_inputs([(9, 1, [0], 0)], k_heads=1, pages=1, slots=1, attributes=a)
    sel, count, *_ = run(inputs, a)
    assert sel.tolist() == [[[0, 1, 2]]] and count.tolist() == [[3]]


def test_steps_select_as_qsa_indexer_selects():
    """One sequence, step after step: the paged op chooses what QSAIndexer chooses, and the
    summaries in its pages are QSAIndexer's state."""
    a = attrs()
    qsa = {k: v for k, v in a.items() if k not in ("page_size", "ring_capacity")}
    full = step_inputs([(0, 11, [5, 0, 2], 2)], k_heads=2, slots=3, attributes=a, seed=4)
    caches = [full[i].copy() for i in (3, 4, 5)]
    state = [np.zeros((1, 2, 0, 6), np.float32), np.zeros((1, 2, 0, 6), np.float32), np.zeros((1, 8), np.float32)]
    past = 0
    for new in (4, 1, 3, 2, 1):
        rows = slice(past, past + new)
        paged = [full[0][rows], full[1][rows], full[2][rows], *caches, full[6], full[7], full[8], full[9],
                 np.array([0, new], I32), np.array([past], I32)]
        sel, count = make_op(PagedQSAIndexer, a).step(tuple(paged), *caches)
        step = [full[0][None, rows].reshape(1, new, 4, 6), full[1][None, rows].reshape(1, new, 2, 6),
                full[2][None, rows], *state, full[6]]
        want = call(QSAIndexer, step, qsa)
        np.testing.assert_array_equal(sel, want[0][0].transpose(1, 0, 2))
        np.testing.assert_array_equal(count, want[1][0].T)
        state = list(want[2:])
        past += new
    blocks = state[0].shape[2]
    pages, rows = np.array([5, 0, 2])[np.arange(blocks) * 2 // 4], np.arange(blocks) * 2 % 4 // 2
    np.testing.assert_array_equal(caches[0][pages, :, rows].transpose(1, 0, 2), state[0][0])


def test_a_page_aligned_prefix_is_read_from_the_shared_pages():
    """The page's prefix caching: B shares A's first two pages (8 tokens) and computes only its
    suffix, yet selects as a prefill of all its tokens does."""
    a = attrs()
    first = step_inputs([(0, 10, [0, 1, 2], 0)], attributes=a, seed=5)
    caches = run(first, a)[2:]
    fresh = step_inputs([(0, 13, [3, 4, 5, 6], 1)], attributes=a, seed=6)
    for name in (0, 1, 2):  # B's first 8 tokens are A's
        fresh[name][:8] = first[name][:8]
    fresh[6] = first[6]
    whole = run(fresh[:3] + list(caches) + fresh[6:], a)
    suffix = [x[8:] for x in fresh[:3]] + list(caches) + [fresh[6], np.array([1], I32), np.array([0, 1, 4, 5], I32),
                                                          np.array([0, 4], I32), np.array([0, 5], I32),
                                                          np.array([8], I32)]
    reused = run(suffix, a)
    np.testing.assert_array_equal(reused[0], whole[0][8:])


def _ir(tmp_path, inputs, attributes):
    outputs = [(o.shape, o.dtype) for o in run(inputs, attributes)[:2]]
    return irscatter.read_model(one_layer_ir(tmp_path, "PagedQSAIndexer", "extension", attributes,
                                             list(zip(INPUTS, inputs)), outputs))


def test_a_model_run_updates_donated_caches_and_no_other(tmp_path):
    inputs = step_inputs(MIXED)
    model = _ir(tmp_path, inputs, attrs())
    sel, count, *caches = run(inputs, attrs())
    kept = [a.copy() for a in inputs]
    out = model.run(dict(zip(INPUTS, inputs)))
    np.testing.assert_array_equal(out["out0"], sel)
    np.testing.assert_array_equal(out["out1"], count)
    assert all(np.array_equal(a, b) for a, b in zip(inputs, kept))  # nothing donated: nothing written
    feeds = dict(zip(INPUTS, inputs))
    feeds["indexer_k_cache"].flags.writeable = False  # donated but read-only: left alone
    out = model.run(feeds, donate=["summary_cache", "indexer_k_cache", "indexer_k_start_cos_sin"])
    np.testing.assert_array_equal(feeds["summary_cache"], caches[0])
    np.testing.assert_array_equal(feeds["indexer_k_cache"], kept[4])
    np.testing.assert_array_equal(feeds["indexer_k_start_cos_sin"], caches[2])
    np.testing.assert_array_equal(out["out0"], sel)


def test_the_function_form_writes_no_input():
    inputs = step_inputs(MIXED)
    kept = [a.copy() for a in inputs]
    call(PagedQSAIndexer, inputs, attrs())
    assert all(np.array_equal(a, b) for a, b in zip(inputs, kept))


REFUSED = [
    ("qsa-attribute", {}, dict(page_size=3)),
    ("qsa-attribute", {}, dict(ring_capacity=1)),
    ("qsa-attribute", {}, dict(h_sel=0)),
    ("qsa-rank", {7: np.zeros((2, 1), I32)}, {}),
    ("qsa-type", {11: np.zeros(2, np.float32)}, {}),
    ("qsa-type", {0: np.zeros((3, 24), np.float16)}, {}),
    ("qsa-shape", {0: np.zeros((3, 25), np.float32)}, {}),
    ("qsa-shape", {3: np.zeros((8, 2, 3, 6), np.float32)}, {}),
    ("qsa-shape", {4: np.zeros((4, 2, 6, 6), np.float32)}, {}),
    ("qsa-shape", {5: np.zeros((3, 2, 8), np.float32)}, {}),
    ("qsa-heads", {0: np.zeros((3, 18), np.float32)}, {}),
    ("pqsa-sequences", {9: np.array([0, 1, 2], I32)}, {}),
    ("pqsa-sequences", {10: np.array([0, 2], I32)}, {}),
    ("pqsa-sequences", {11: np.array([-1, 0], I32)}, {}),
    ("pqsa-sequences", {9: np.array([0, 2, 2], I32)}, {}),
    ("pqsa-slot", {7: np.array([0, 4], I32)}, {}),
    ("pqsa-block-table", {8: np.array([0, 9, 2], I32)}, {}),
    ("pqsa-block-table", {8: np.array([0, 1, 2], I32), 9: np.array([0, 0, 3], I32)}, {}),
]


@pytest.mark.parametrize("label, replaced, changes", REFUSED)
def test_what_the_op_cannot_compute_is_refused_with_its_label(label, replaced, changes):
    assert_refused(PagedQSAIndexer, step_inputs([(2, 2, [0], 0), (3, 1, [1, 2], 1)]), replaced, attrs(**changes), label)
