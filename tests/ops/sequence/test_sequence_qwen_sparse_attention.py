"""QwenSparseAttention-17 against a literal transcription of its page's pseudo-code
(page_qwen_sparse_attention_17.py), both outputs, not against OpenVINO: the op is a draft of
opset17 that the pinned OpenVINO does not ship (it refuses the layer), so no plugin runs it.

Cases go through an IR file in opset17 (`harness.check`, inputs never written): compress_ratio
1, 3 and 4, budgets of one block and of more blocks than are visible, prefill (L = S), decode
(L = 1) and chunks between, S a multiple of compress_ratio or not, grouped-query heads, tied
index scores (the smaller block first), an explicit scale, both index_element_type values,
f32, f16, bf16 and f64, size-0 N, L and S, NaN index scores (ranked last), NaN and inf in
blocks not chosen (never read), and every refusal with its label. Validating an opset17 layer
warns that it is a draft (`draft-op`) and the layer runs. The op's attention is the internal
BlockSparseAttention's over the blocks it chose, as the page describes QSA's split. Tolerance:
4 ulps of the output type against the f64 transcription, plus 1e-5 (the f32 rounding of sums
of values up to 4 in magnitude); indices exactly."""

from __future__ import annotations

from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import one_layer_ir
from page_qwen_sparse_attention_17 import qwen_sparse_attention

import irscatter
from irscatter.ops.functional import call
from irscatter.ops.internal.block_sparse_attention import BlockSparseAttention
from irscatter.ops.sequence.qwen_sparse_attention import QwenSparseAttention

OP = ("QwenSparseAttention", "opset17")
WHY = "a draft of opset17 the pinned OpenVINO does not ship: the page's pseudo-code judges"
NAMES = ("query", "key", "value", "index_query", "index_key_blocks", "scale")


def inputs(rng, *, batch=2, heads=4, kv=2, length=3, source=9, ratio=2, index_heads=2, index_size=3,
           dtype=np.float32):
    return [harness.values(rng, (batch, heads, length, 4), dtype), harness.values(rng, (batch, kv, source, 4), dtype),
            harness.values(rng, (batch, kv, source, 2), dtype),
            harness.values(rng, (batch, index_heads, length, index_size), dtype),
            harness.values(rng, (batch, source // ratio, index_size), dtype)]


def case(name, arrays, ratio, budget, index_type=None, error=None):
    attrs = {"compress_ratio": ratio, "token_budget": budget}
    if index_type is not None:
        attrs["index_element_type"] = index_type
    oracle = None if error else partial(_oracle, ratio, budget, np.int64 if index_type == "i64" else np.int32)
    return Case(name, *OP, named_inputs(NAMES, arrays), attrs, oracle=oracle, openvino="none",
                why=WHY, ulps=4, atol=1e-5, error=error)


def _oracle(ratio, budget, index_dtype, *arrays):
    out, indices = qwen_sparse_attention(*arrays, compress_ratio=ratio, token_budget=budget)
    return out, indices.astype(index_dtype)


def _cases():
    rng = np.random.default_rng(31)
    cases = []
    for ratio, budget, length, source in ((1, 3, 5, 5), (4, 4, 1, 13), (3, 6, 4, 11), (2, 20, 6, 9)):
        cases.append(case(f"r{ratio}-budget{budget}-L{length}-S{source}",
                          inputs(rng, ratio=ratio, length=length, source=source), ratio, budget))
    tied = inputs(rng, length=4, source=12)
    tied[3][...] = 0  # every block scores 0: the first ones win
    cases.append(case("tied-scores-i64", tied, 2, 4, "i64"))
    cases.append(case("scale-i32", [*inputs(rng), np.array(0.5, np.float32)], 2, 4, "i32"))
    for tag, dtype in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16), ("f64", np.float64)):
        cases.append(case(tag, inputs(rng, dtype=dtype), 2, 4))
    for tag, changes in (("N0", {"batch": 0}), ("L0", {"length": 0}), ("S0", {"length": 0, "source": 0})):
        cases.append(case(f"size0-{tag}", inputs(rng, **changes), 2, 4))
    edges = inputs(rng, batch=1, length=1, source=8)
    edges[4][0, 1] = np.nan  # block 1 scores NaN: ranked last, so blocks 0 and 2 are chosen
    edges[3][0, 0, 0, :] = 0  # the indexer query heads score 0 everywhere but through the second one
    cases.append(case("edges-nan-score", edges, 2, 4))
    return cases


def _errors():
    rng = np.random.default_rng(32)
    good = inputs(rng)
    q, k, v, iq, ik = good
    return [
        case("ratio", good, 0, 4, error="qsa-attrs"),
        case("budget-multiple", good, 2, 3, error="qsa-attrs"),
        case("index-element-type", good, 2, 4, "f32", error="qsa-attrs"),
        case("key-blocks", [q, k, v, iq, ik[:, :3]], 2, 4, error="qsa-shape"),
        case("kv-heads", [q, np.repeat(k, 2, 1)[:, :3], np.repeat(v, 2, 1)[:, :3], iq, ik], 2, 4, error="qsa-shape"),
        case("length", [q, k[:, :, :2], v[:, :, :2], iq, ik[:, :1]], 2, 4, error="qsa-shape"),
        case("index-size", [q, k, v, iq[..., :2], ik], 2, 4, error="qsa-shape"),
        case("index-type", [q, k, v, iq.astype(np.float16), ik], 2, 4, error="same-element-type"),
        case("indices-too-large", good, 2, 2**40, error="tensor-limit"),
    ]


CASES = _cases()


@pytest.mark.parametrize("case", CASES + _errors(), ids=str)
def test_qwen_sparse_attention_17(case):
    harness.check(case, CASES)


def test_nan_and_inf_in_blocks_not_chosen_are_never_read():
    """The pseudo-code's dense product would multiply them by a zero weight (NaN); the op reads
    only what it attends, so it matches the transcription run with them set to 0."""
    arrays = inputs(np.random.default_rng(35), batch=1, length=1, source=8)  # the query at position 7
    arrays[3][...] = np.abs(arrays[3])
    arrays[4][0] = np.abs(arrays[4][0]) * [[1], [1], [0.5], [0]]  # block 3 (positions 6, 7) scores 0: not chosen
    want, indices = qwen_sparse_attention(*arrays, compress_ratio=2, token_budget=4)
    assert 6 not in indices and 7 not in indices
    dirty = [a.copy() for a in arrays]
    dirty[1][:, :, 6:], dirty[2][:, :, 6:] = np.nan, np.inf
    got, _ = call(QwenSparseAttention, dirty, {"compress_ratio": 2, "token_budget": 4})
    harness.assert_close(got, want.astype(np.float32), ulps=4, atol=1e-5, what="with NaN and inf not chosen")


def test_validate_warns_that_the_op_is_a_draft_and_the_layer_runs(tmp_path):
    arrays = inputs(np.random.default_rng(33))
    xml = one_layer_ir(tmp_path, "QwenSparseAttention", "opset17", {"compress_ratio": 2, "token_budget": 4},
                       list(zip(NAMES, arrays)), [((2, 4, 3, 2), np.float32), ((2, 3, 5), np.int32)])
    findings = irscatter.validate(xml).findings
    assert [(f.severity, f.code) for f in findings] == [("warning", "draft-op")]
    assert "does not ship it yet" in findings[0].message
    out, indices = irscatter.read_model(xml).run(dict(zip(NAMES, arrays))).values()
    want, want_indices = qwen_sparse_attention(*arrays, compress_ratio=2, token_budget=4)
    harness.assert_close(out, want.astype(np.float32), ulps=4, atol=1e-5, what="the validated layer")
    np.testing.assert_array_equal(indices, want_indices)


def test_its_attention_is_the_internal_block_sparse_attention_of_the_chosen_blocks():
    rng = np.random.default_rng(34)
    arrays = inputs(rng, length=4, source=11, ratio=3)
    out, indices = call(QwenSparseAttention, arrays, {"compress_ratio": 3, "token_budget": 6})
    blocks = indices[:, None, :, 0:6:3] // 3  # the first token of each chosen block
    count = (indices[:, None, :, 0:6:3] >= 0).sum(-1)
    chosen = np.where(indices[:, None, :, 0:6:3] >= 0, blocks, -1).astype(np.int32)
    want = call(BlockSparseAttention, [*arrays[:3], chosen, count.astype(np.int32)], {"compress_ratio": 3})
    np.testing.assert_array_equal(out, want)
