"""SparseSDPA (domain `extension`) against a literal transcription of its page's pseudo-code
(page_sparse_sdpa.py), not against OpenVINO: OpenVINO has no class of the op, so neither its
Python API nor a transformation can make one and no plugin runs it. The page defines the op as
SDPA-13 with one combined mask, so one test also holds it to irscatter's
ScaledDotProductAttention-13 (itself compared with OpenVINO's CPU plugin) under that mask.

Cases go through an IR file (`harness.check`, inputs never written): both plans (index lists,
a mask carrying the plan), every h_sel (1, num_kv_heads, num_heads), q_block_size 1 and 2,
sel_block_size dividing S or not, causal on and off, boolean and additive masks of 1, h_sel and
num_heads heads, an explicit scale, f32, f16, bf16 and f64 with i32 and i64 plans, size-0
L, S and K, empty selections (zeros), NaN and inf in unselected blocks (never read) and in the
query, and every refusal with its label. Tolerance: 4 ulps of the output type against an f64
oracle, plus 1e-5 (the f32 rounding of sums of values up to 4 in magnitude)."""

from __future__ import annotations

from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import OP_SPECS
from page_sparse_sdpa import sparse_sdpa

from irscatter import examples
from irscatter.ops.functional import call
from irscatter.ops.internal.sparse_sdpa import SparseSDPA
from irscatter.ops.matrix.scaled_dot_product_attention import ScaledDotProductAttention

OP = ("SparseSDPA", "extension")
WHY = "OpenVINO has no SparseSDPA (no class in its source): the page's pseudo-code judges"
F32 = np.float32


def plan(rng, batch, h_sel, rows, blocks, width=None, dtype=np.int32, empty_every=3):
    """Strictly ascending block lists, -1 padded, with their counts (every third row empty)."""
    width = blocks if width is None else width
    indices = np.full((batch, h_sel, rows, width), -1, dtype)
    count = np.zeros((batch, h_sel, rows), dtype)
    for n, cell in enumerate(np.ndindex(batch, h_sel, rows)):
        chosen = [] if n % empty_every == 2 else np.sort(rng.choice(blocks, rng.integers(1, min(blocks, width) + 1),
                                                                    replace=False)) if blocks and width else []
        indices[cell][:len(chosen)] = chosen
        count[cell] = len(chosen)
    return indices, count


def attrs(heads=4, kv=2, h_sel=1, k=3, v=2, block=2, q_block=1, causal=True):
    return {"num_heads": heads, "num_kv_heads": kv, "h_sel": h_sel, "k_head_size": k, "v_head_size": v,
            "sel_block_size": block, "q_block_size": q_block, "causal": causal}


def case(name, arrays, attributes, *, names=("query", "key", "value", "sel_indices", "sel_count", "attn_mask",
                                               "scale"), error=None, ulps=4):
    inputs = named_inputs(names, arrays)
    index_plan = "sel_indices" in names
    oracle = None if error else partial(_oracle, attributes, index_plan)
    return Case(name, *OP, inputs, attributes, oracle=oracle, openvino="none", why=WHY, ulps=ulps, atol=1e-5,
                error=error)


def _oracle(attributes, index_plan, query, key, value, *rest):
    if index_plan:
        indices, count, *rest = rest
    else:
        indices = count = None
    mask = rest[0] if rest else None
    scale = rest[1] if len(rest) > 1 else None
    return sparse_sdpa(query, key, value, indices, count, mask, scale, **attributes)


def qkv(rng, batch=2, heads=4, kv=2, length=3, source=5, k=3, v=2, dtype=F32):
    return (harness.values(rng, (batch, heads, length, k), dtype), harness.values(rng, (batch, kv, source, k), dtype),
            harness.values(rng, (batch, kv, source, v), dtype))


def _cases():
    rng = np.random.default_rng(7)
    cases = []
    for h_sel in (1, 2, 4):
        for q_block, block, causal in ((1, 2, True), (2, 3, False), (2, 1, True)):
            q, k, v = qkv(rng, length=4, source=6)
            indices, count = plan(rng, 2, h_sel, -(-4 // q_block), -(-6 // block))
            cases.append(case(f"hsel{h_sel}-qb{q_block}-b{block}-{'causal' if causal else 'full'}",
                              [q, k, v, indices, count], attrs(h_sel=h_sel, block=block, q_block=q_block,
                                                               causal=causal)))
    q, k, v = qkv(rng)
    indices, count = plan(rng, 2, 2, 3, 3, width=2)
    boolean = rng.random((2, 1, 3, 5)) > 0.3
    additive = harness.values(rng, (2, 2, 3, 5), F32)
    additive[additive < -2] = -np.inf
    per_head = harness.values(rng, (1, 4, 3, 5), F32)
    cases += [
        case("bool-mask-and-scale", [q, k, v, indices, count, boolean, np.array(0.7, F32)], attrs(h_sel=2)),
        case("additive-mask-per-selection-head", [q, k, v, indices, count, additive], attrs(h_sel=2, causal=False)),
        case("mask-plan-per-query-head", [q, k, v, per_head], attrs(), names=("query", "key", "value", "attn_mask")),
        case("mask-plan-and-scale", [q, k, v, boolean[:, :, :, :], np.array([1.5], F32)], attrs(causal=False),
             names=("query", "key", "value", "attn_mask", "scale")),
        case("rank-2-mask", [q, k, v, indices, count, boolean[0, 0]], attrs(h_sel=2)),
    ]
    for tag, dtype, index in (("f16", np.float16, np.int64), ("bf16", ml_dtypes.bfloat16, np.int32),
                              ("f64", np.float64, np.int64)):
        q, k, v = qkv(rng, dtype=dtype)
        indices, count = plan(rng, 2, 1, 3, 3, dtype=index)
        cases.append(case(f"{tag}-{np.dtype(index).name}", [q, k, v, indices, count], attrs()))
    for tag, length, source, width in (("L0", 0, 4, 2), ("S0", 2, 0, 2), ("K0", 2, 4, 0)):
        q, k, v = qkv(rng, length=length, source=source)
        indices, count = plan(rng, 2, 1, length, -(-source // 2), width=width)
        cases.append(case(f"size0-{tag}", [q, k, v, indices, count], attrs()))
    # NaN and inf in blocks nobody selects are never read; in the query they spread where attended
    q, k, v = qkv(rng, length=2, source=6)
    indices = np.array([[[[0, 2, -1]] * 2] * 1] * 2, np.int32)
    count = np.full((2, 1, 2), 2, np.int32)
    k[:, :, 2:4] = np.nan
    v[:, :, 2:4] = np.inf
    q[0, 1, 0, 0] = np.nan
    cases.append(case("edges-unselected-and-query", [q, k, v, indices, count], attrs(causal=False)))
    return cases


def _errors():
    rng = np.random.default_rng(8)
    q, k, v = qkv(rng)
    indices, count = plan(rng, 2, 1, 3, 3)
    good = [q, k, v, indices, count]
    bad_count, negative, falling = count.copy(), indices.copy(), indices.copy()
    bad_count[0, 0, 0] = 4
    negative[0, 0, 0, :2], count_two = (-1, 0), np.maximum(count, 2)
    falling[0, 0, 0, :2] = (2, 1)
    return [
        case("attrs-heads", good, attrs(kv=3), error="sparse-attrs"),
        case("attrs-h-sel", good, attrs(h_sel=3), error="sparse-attrs"),
        case("attrs-block", good, attrs(block=0), error="sparse-attrs"),
        case("key-heads", good, attrs(kv=1, h_sel=1), error="sparse-shape"),
        case("index-type", [q, k, v, indices.astype(np.float32), count], attrs(), error="index-type"),
        case("float-type", [x.astype(np.int32) for x in (q, k, v)] + [indices, count], attrs(), error="float-type"),
        case("value-type", [q, k, v.astype(np.float16), indices, count], attrs(), error="same-element-type"),
        case("scale-shape", [*good, np.ones((2, 1, 3, 5), bool), np.ones(2, F32)], attrs(), error="scalar-input"),
        case("mask-type", [*good, np.zeros((2, 1, 3, 5), np.int32)], attrs(), error="sparse-mask-type"),
        case("mask-heads", [*good, np.ones((2, 3, 3, 5), bool)], attrs(), error="sparse-mask-shape"),
        case("mask-source", [*good, np.ones((2, 1, 3, 4), bool)], attrs(), error="sparse-mask-shape"),
        case("history", good, attrs(q_block=3), error="sparse-shape"),
        case("history-multiple", [q[:, :, :2], k, v, indices[:, :, :1], count[:, :, :1]], attrs(q_block=2),
             error="sparse-history"),
        case("plan-count", [q, k, v, indices, bad_count], attrs(), error="sparse-plan"),
        case("plan-negative", [q, k, v, negative, count_two], attrs(), error="sparse-plan"),
        case("plan-order", [q, k, v, falling, count_two], attrs(), error="sparse-plan"),
    ]


CASES = _cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", CASES + ERRORS, ids=str)
def test_sparse_sdpa(case):
    harness.check(case, CASES)


def test_it_is_sdpa_13_under_the_combined_mask():
    """The page's definition: SDPA-13 with causal off and the conjunction of the attention mask,
    the bottom-right causal mask and the expanded plan as a boolean mask (no row left empty)."""
    rng = np.random.default_rng(9)
    q, k, v = qkv(rng, length=3, source=7)
    indices = np.broadcast_to(np.array([[0, 2], [1, 3], [0, 3]], np.int32), (2, 1, 3, 2)).copy()
    count = np.full((2, 1, 3), 2, np.int32)
    user = rng.random((2, 1, 3, 7)) > 0.2
    user[..., 5:] = True  # every row keeps its own position
    got = call(SparseSDPA, [q, k, v, indices, count, user], attrs(block=2))
    expanded = np.zeros((2, 1, 3, 7), bool)
    for n, row in np.ndindex(2, 3):
        for b in indices[n, 0, row, :2]:
            expanded[n, 0, row, 2 * b:2 * b + 2] = True
    causal = np.arange(7) <= 7 - 3 + np.arange(3)[:, None]
    combined = user & causal & expanded
    assert combined.any(axis=-1).all()
    dense = call(ScaledDotProductAttention, [q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1), combined],
                 {"causal": False})
    harness.assert_close(got, dense, ulps=4, atol=1e-6, what="SparseSDPA against SDPA-13")


def test_masked_positions_of_a_selected_block_are_never_read():
    """Where the pseudo-code would multiply a causally hidden NaN value of a selected block by a
    zero weight (NaN), the kernel never reads it."""
    rng = np.random.default_rng(10)
    q, k, v = qkv(rng, batch=1, length=2, source=4)  # the queries at positions 2 and 3
    v[..., 3, :] = np.nan  # block 1 holds positions 2 and 3; the first query may not see 3
    indices, count = np.array([[[[1], [1]]]], np.int32), np.array([[[1, 1]]], np.int32)
    out = call(SparseSDPA, [q, k, v, indices, count], attrs(block=2))
    assert np.isfinite(out[:, :, 0]).all() and np.isnan(out[:, :, 1]).all()


@pytest.mark.skipif(not OP_SPECS.is_dir(), reason="the OpenVINO spec pages are not present")
def test_the_pages_examples_run():
    found = examples.run_document(OP_SPECS / "internal" / "sparse-sdpa.rst")
    assert [ex.status for ex in found] == ["shape-checked"] * 3, [ex.reason for ex in found]
