"""SparsePA (domain `extension`) against a literal transcription of its page's pseudo-code
(page_sparse_pa.py), not against OpenVINO: OpenVINO has no class of the op, so neither its
Python API nor a transformation can make one and no plugin runs it.

Cases go through an IR file (`harness.check`: the fed caches are never written): both plans
(index lists with counts, a block mask), every h_sel, q_block_size 1 and 2, sel_block_size
below and equal to block_size, causal on and off, sequences with no new token, with no past,
with block tables that are not the identity, a step of no sequence at all, T of f32, f16,
bf16 and f64 with i32 and i64 index inputs, NaN in a cache slot not yet written (never read),
and every refusal with its label. A model run with the caches donated updates them as the
transcription does. One test holds the op to SparseSDPA on a page table made for one sequence,
as the page says a lowering may. Tolerance: 4 ulps of T against the f64 transcription, plus
1e-5 (the f32 rounding of sums of values up to 4 in magnitude)."""

from __future__ import annotations

from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from helpers import OP_SPECS, one_layer_ir
from page_sparse_pa import sparse_pa

import irscatter
from irscatter import examples
from irscatter.ops.functional import call
from irscatter.ops.internal.sparse_pa import INDEX_PLAN, MASK_PLAN, SparsePA
from irscatter.ops.internal.sparse_sdpa import SparseSDPA

OP = ("SparsePA", "extension")
WHY = "OpenVINO has no SparsePA (no class in its source): the page's pseudo-code judges"
I32 = np.int32


def step(seed, sequences, *, heads=4, kv=2, h_sel=1, k=3, v=2, block=4, sel_block=2, q_block=1, blocks=10,
         mask_plan=False, dtype=np.float32, index=I32, causal=True):
    """The inputs (by name, in the layout of the plan) and attributes of one step; `sequences`
    are (past, new tokens, block table)."""
    rng = np.random.default_rng(seed)
    tokens = sum(new for _, new, _ in sequences)
    rows = [-(-new // q_block) for _, new, _ in sequences]
    widest = max((len(t) for *_, t in sequences), default=0) * (block // sel_block)
    indices = np.full((sum(rows), h_sel, widest), -1, index)
    counts = np.zeros((sum(rows), h_sel), index)
    marks = np.zeros((sum(rows), h_sel, widest), bool)
    row = 0
    for (_, _, table), count in zip(sequences, rows):
        for r in range(row, row + count):
            for h in range(h_sel):
                own = len(table) * (block // sel_block)
                chosen = np.sort(rng.choice(own, rng.integers(0, own + 1), replace=False))
                indices[r, h, :len(chosen)], counts[r, h], marks[r, h, chosen] = chosen, len(chosen), True
        row += count
    values = {
        "query": harness.values(rng, (tokens, heads * k), dtype), "key": harness.values(rng, (tokens, kv * k), dtype),
        "value": harness.values(rng, (tokens, kv * v), dtype),
        "key_cache": harness.values(rng, (blocks, kv, block, k), dtype),
        "value_cache": harness.values(rng, (blocks, kv, block, v), dtype),
        "block_indices": np.array([b for *_, t in sequences for b in t], index),
        "block_indices_begins": np.cumsum([0] + [len(t) for *_, t in sequences]).astype(index),
        "subsequence_begins": np.cumsum([0] + [new for _, new, _ in sequences]).astype(index),
        "past_lens": np.array([p for p, _, _ in sequences], index),
        "sel_indices": indices, "sel_count": counts, "sel_block_mask": marks,
        "qb_start": np.cumsum([0] + rows).astype(index),
    }
    names = MASK_PLAN if mask_plan else INDEX_PLAN
    attributes = {"num_heads": heads, "num_kv_heads": kv, "h_sel": h_sel, "k_head_size": k, "v_head_size": v,
                  "block_size": block, "sel_block_size": sel_block, "q_block_size": q_block, "scale": 0.5,
                  "causal": causal}
    return {n: values[n] for n in names}, attributes


def _oracle(attributes, *arrays):
    named = dict(zip(MASK_PLAN if len(arrays) == len(MASK_PLAN) else INDEX_PLAN, arrays))
    return sparse_pa(*(named.get(n) for n in (*INDEX_PLAN[:9], "sel_indices", "sel_count", "qb_start")),
                     sel_block_mask=named.get("sel_block_mask"), **attributes)


def case(name, inputs, attributes, error=None):
    return Case(name, *OP, [Input(n, a) for n, a in inputs.items()], attributes,
                oracle=None if error else partial(_oracle, attributes), openvino="none", why=WHY, ulps=4,
                atol=1e-5, error=error)


SEQUENCES = [(3, 2, [3, 1]), (0, 5, [0, 2]), (4, 0, [5, 6]), (2, 1, [4, 9, 7])]
ALIGNED = [(4, 3, [3, 1]), (0, 5, [0, 2]), (4, 0, [5, 6]), (2, 1, [4, 9])]  # pasts multiples of 2


def _cases():
    cases = []
    for n, (h_sel, q_block, sel_block, mask_plan, causal) in enumerate(
            [(1, 1, 2, False, True), (2, 2, 4, False, False), (4, 1, 1, True, True), (2, 2, 2, True, False)]):
        sequences = ALIGNED if q_block == 2 else SEQUENCES
        inputs, attributes = step(n, sequences, h_sel=h_sel, q_block=q_block, sel_block=sel_block,
                                  mask_plan=mask_plan, causal=causal)
        cases.append(case(f"hsel{h_sel}-qb{q_block}-sb{sel_block}-{'mask' if mask_plan else 'index'}-"
                          f"{'causal' if causal else 'full'}", inputs, attributes))
    for n, (tag, dtype, index) in enumerate((("f16", np.float16, np.int64), ("bf16", ml_dtypes.bfloat16, I32),
                                             ("f64", np.float64, np.int64))):
        cases.append(case(f"{tag}-{np.dtype(index).name}", *step(10 + n, SEQUENCES, dtype=dtype, index=index)))
    cases.append(case("no-sequences", *step(20, [])))
    inputs, attributes = step(21, [(2, 1, [1])], causal=False)
    inputs["key_cache"][1, :, 3] = np.nan  # slot 3 of the only block: position 3, not written yet
    inputs["value_cache"][1, :, 3] = np.inf
    cases.append(case("unwritten-slot-never-read", inputs, attributes))
    return cases


def _errors():
    good, attributes = step(30, SEQUENCES)
    cases = [
        case("both-plans", {**good, "sel_block_mask": step(30, SEQUENCES, mask_plan=True)[0]["sel_block_mask"],
                            "qb_start": good["qb_start"]}, attributes, error="sparse-pa-plans"),
        case("block-multiple", good, {**attributes, "sel_block_size": 3}, error="sparse-attrs"),
        case("cache-block", good, {**attributes, "block_size": 2, "sel_block_size": 2}, error="sparse-shape"),
        case("mask-type", {**step(30, SEQUENCES, mask_plan=True)[0], "sel_block_mask": np.zeros((6, 1, 6), I32),
                           "qb_start": good["qb_start"]}, attributes, error="sparse-mask-type"),
        case("past-aligned", *step(31, SEQUENCES, q_block=2), error="sparse-history"),
    ]
    for name, change, label in (
            ("past-negative", {"past_lens": [-1, 0, 4, 2]}, "sparse-pa-sequences"),
            ("subsequence-end", {"subsequence_begins": [0, 2, 7, 7, 7]}, "sparse-pa-sequences"),
            ("block-begins", {"block_indices_begins": [0, 2, 4, 6, 8]}, "sparse-pa-sequences"),
            ("qb-start", {"qb_start": [0, 2, 6, 7, 8]}, "sparse-pa-sequences"),
            ("table-range", {"block_indices": [3, 1, 0, 2, 5, 6, 4, 9, 10]}, "sparse-pa-block-table"),
            ("table-short", {"block_indices_begins": [0, 1, 4, 6, 9]}, "sparse-pa-block-table"),
            ("plan-count", {"sel_count": np.full((8, 1), 9)}, "sparse-plan")):
        changed = {**good, **{n: np.asarray(v, good[n].dtype) for n, v in change.items()}}
        cases.append(case(name, changed, attributes, error=label))
    mask_inputs = step(32, SEQUENCES, mask_plan=True)[0]
    mask_inputs["sel_block_mask"] = mask_inputs["sel_block_mask"][..., :4]
    cases.append(case("mask-width", mask_inputs, attributes, error="sparse-shape"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES + _errors(), ids=str)
def test_sparse_pa(case):
    harness.check(case, CASES)


def test_donated_caches_hold_the_step_and_fed_ones_are_left_alone(tmp_path):
    inputs, attributes = step(40, SEQUENCES, mask_plan=True)
    want, key_cache, value_cache = _oracle(attributes, *inputs.values())
    xml = one_layer_ir(tmp_path, "SparsePA", "extension", attributes, list(inputs.items()),
                       [((8, 8), np.float32)])
    model = irscatter.read_model(xml)
    fed = {n: a.copy() for n, a in inputs.items()}
    out = model.run(fed)
    assert all(np.array_equal(fed[n], inputs[n]) for n in inputs)
    out = model.run(fed, donate=["key_cache", "value_cache"])
    harness.assert_close(out[0], want.astype(np.float32), ulps=4, atol=1e-5, what="output")
    np.testing.assert_array_equal(fed["key_cache"], key_cache)
    np.testing.assert_array_equal(fed["value_cache"], value_cache)


def test_on_a_page_table_of_one_sequence_it_is_sparse_sdpa():
    """One sequence of L new tokens after S - L cached ones, its history in the cache, is the
    dense SparseSDPA of the same plan (the page: a lowering may turn one into the other)."""
    inputs, attributes = step(41, [(6, 3, [2, 0, 4])], h_sel=2, sel_block=2)
    cache = {n: inputs[n].copy() for n in ("key_cache", "value_cache")}
    got = call(SparsePA, list(inputs.values()), attributes)
    table, positions = inputs["block_indices"], np.arange(9)
    dense = {}
    for name, cache_name in (("key", "key_cache"), ("value", "value_cache")):
        rows = cache[cache_name][table[positions // 4], :, positions % 4]  # [9, kv, size]
        rows[6:] = inputs[name].reshape(3, 2, -1)
        dense[name] = np.moveaxis(rows, 0, 1)[None]
    query = np.moveaxis(inputs["query"].reshape(3, 4, 3), 0, 1)[None]
    sdpa = {n: attributes[n] for n in ("num_heads", "num_kv_heads", "h_sel", "k_head_size", "v_head_size",
                                       "sel_block_size", "q_block_size", "causal")}
    want = call(SparseSDPA, [query, dense["key"], dense["value"], inputs["sel_indices"].transpose(1, 0, 2)[None],
                             inputs["sel_count"].T[None], np.ones((1, 1), bool), np.array(0.5, np.float32)], sdpa)
    harness.assert_close(got, np.moveaxis(want[0], 0, 1).reshape(3, 8), ulps=4, what="SparsePA against SparseSDPA")


@pytest.mark.skipif(not OP_SPECS.is_dir(), reason="the OpenVINO spec pages are not present")
def test_the_pages_examples_run():
    found = examples.run_document(OP_SPECS / "internal" / "sparse-pa.rst")
    assert [ex.status for ex in found] == ["shape-checked"] * 3, [ex.reason for ex in found]
