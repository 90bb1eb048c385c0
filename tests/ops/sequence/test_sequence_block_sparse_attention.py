"""BlockSparseAttention-17 against a literal transcription of its page's pseudo-code
(page_block_sparse_attention_17.py), not against OpenVINO: the op is a draft of opset17 that
the pinned OpenVINO does not ship (it refuses the layer), so no plugin runs it.

Cases go through an IR file in opset17 (`harness.check`, inputs never written): block_size 1,
2 and 3, causal on and off, key/value and block_indices with one shared head or one per
query head, with and without block_indices_mask (boolean and u8), indices out of range (left
out) and repeated (counted twice), an explicit scale, f32, f16, bf16 and f64 with i32, i64,
u8 and i16 indices, size-0 B, H, L, S and k_blocks, NaN and inf in unlisted blocks (never
read), rows that attend nothing (zeros), and every refusal with its label. Validating an
opset17 layer warns that it is a draft (`draft-op`) and the layer runs. Where the op and the
internal BlockSparseAttention mean the same (a prefill, each query block listing its own
block, causal), the two agree. Tolerance: 4 ulps of the output type against the f64
transcription, plus 1e-5 (the f32 rounding of sums of values up to 4 in magnitude)."""

from __future__ import annotations

from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import one_layer_ir
from page_block_sparse_attention_17 import block_sparse_attention

import irscatter
from irscatter.ops.functional import call
from irscatter.ops.internal.block_sparse_attention import BlockSparseAttention as InternalBlockSparseAttention
from irscatter.ops.sequence.block_sparse_attention import BlockSparseAttention

OP = ("BlockSparseAttention", "opset17")
WHY = "a draft of opset17 the pinned OpenVINO does not ship: the page's pseudo-code judges"
NAMES = ("query", "key", "value", "block_indices", "block_indices_mask", "scale")


def inputs(rng, *, batch=2, heads=3, kv=3, plan_heads=3, q_blocks=2, kv_blocks=3, size=2, width=3, e=4, ev=2,
           dtype=np.float32, index=np.int32, mask=np.bool_):
    """query, key, value, block_indices (some out of range, some repeated) and, unless `mask`
    is None, block_indices_mask."""
    arrays = [harness.values(rng, (batch, heads, q_blocks * size, e), dtype),
              harness.values(rng, (batch, kv, kv_blocks * size, e), dtype),
              harness.values(rng, (batch, kv, kv_blocks * size, ev), dtype),
              rng.integers(-1, kv_blocks + 1, (batch, plan_heads, q_blocks, width)).astype(index)]
    if mask is not None:
        arrays.append((rng.random(arrays[3].shape) > 0.3).astype(mask))
    return arrays


def case(name, arrays, size, causal, error=None):
    oracle = None if error else partial(block_sparse_attention, block_size=size, causal=causal)
    return Case(name, *OP, named_inputs(NAMES, arrays), {"block_size": size, "causal": causal},
                oracle=oracle, openvino="none", why=WHY, ulps=4, atol=1e-5, error=error)


def _cases():
    rng = np.random.default_rng(21)
    cases = []
    for size, causal, kv, plan_heads, mask in ((1, False, 3, 3, np.bool_), (2, True, 1, 3, None),
                                               (3, True, 3, 1, np.uint8), (2, False, 1, 1, np.bool_)):
        arrays = inputs(rng, size=size, kv=kv, plan_heads=plan_heads, mask=mask)
        cases.append(case(f"b{size}-{'causal' if causal else 'full'}-kv{kv}-plan{plan_heads}-"
                          f"{'mask' if mask is None else np.dtype(mask).name}", arrays, size, causal))
    repeated = inputs(rng, mask=None)
    repeated[3][..., :] = [0, 0, 2]
    cases.append(case("repeated-block-counts-twice", repeated, 2, False))
    cases.append(case("scale", [*inputs(rng), np.array(0.3, np.float32)], 2, True))
    for tag, dtype, index in (("f16", np.float16, np.int64), ("bf16", ml_dtypes.bfloat16, np.uint8),
                              ("f64", np.float64, np.int16)):
        cases.append(case(f"{tag}-{np.dtype(index).name}", inputs(rng, dtype=dtype, index=index), 2, True))
    for tag, changes in (("B0", {"batch": 0}), ("H0", {"heads": 0, "kv": 0, "plan_heads": 0}),
                         ("L0", {"q_blocks": 0}), ("S0", {"kv_blocks": 0}), ("K0", {"width": 0})):
        cases.append(case(f"size0-{tag}", inputs(rng, **changes), 2, False))
    edges = inputs(rng, batch=1, mask=None)
    edges[3][...] = [[[0, 0, 0], [2, 2, 2]]]  # block 1 (positions 2, 3) listed by nobody
    edges[1][:, :, 2:4], edges[2][:, :, 2:4] = np.nan, -np.inf
    edges[0][0, 0, 0, 0] = np.inf
    cases.append(case("edges-unlisted-and-query", edges, 2, True))
    return cases


def _errors():
    rng = np.random.default_rng(22)
    q, k, v, indices, mask = inputs(rng)
    return [
        case("block-size", [q, k, v, indices], 0, False, error="block-sparse-size"),
        case("length-multiple", [q[:, :, :3], k, v, indices], 2, False, error="block-sparse-shape"),
        case("source-multiple", [q, k[:, :, :5], v[:, :, :5], indices], 2, False, error="block-sparse-shape"),
        case("query-blocks", [q, k, v, indices[:, :, :1]], 2, False, error="block-sparse-shape"),
        case("kv-heads", [q, k[:, :2], v[:, :2], indices], 2, False, error="block-sparse-shape"),
        case("plan-heads", [q, k, v, indices[:, :2]], 2, False, error="block-sparse-shape"),
        case("batch", [q, k[:1], v[:1], indices], 2, False, error="block-sparse-shape"),
        case("mask-shape", [q, k, v, indices, mask[..., :2]], 2, False, error="block-sparse-shape"),
        case("mask-type", [q, k, v, indices, mask.astype(np.int32)], 2, False, error="block-sparse-mask-type"),
        case("index-type", [q, k, v, indices.astype(np.float32)], 2, False, error="index-type"),
    ]


CASES = _cases()


@pytest.mark.parametrize("case", CASES + _errors(), ids=str)
def test_block_sparse_attention_17(case):
    harness.check(case, CASES)


def test_validate_warns_that_the_op_is_a_draft_and_the_layer_runs(tmp_path):
    arrays = inputs(np.random.default_rng(23), mask=None)
    xml = one_layer_ir(tmp_path, "BlockSparseAttention", "opset17", {"block_size": 2, "causal": "true"},
                       list(zip(NAMES, arrays)), [((2, 3, 4, 2), np.float32)])
    findings = irscatter.validate(xml).findings
    assert [(f.severity, f.code) for f in findings] == [("warning", "draft-op")]
    assert "does not ship it yet" in findings[0].message
    out = irscatter.read_model(xml).run(dict(zip(NAMES, arrays)))
    harness.assert_close(out[0], block_sparse_attention(*arrays, block_size=2, causal=True).astype(np.float32),
                         ulps=4, atol=1e-5, what="the validated layer")


def test_a_causal_prefill_listing_each_query_blocks_own_block_is_the_internal_op():
    """With L = S, block_size = compress_ratio and causal, listing a query block's own block
    gives each of its queries the part of that block up to itself: the internal op's
    incomplete block, or its own complete block, which the internal op must then list."""
    rng = np.random.default_rng(24)
    size, blocks = 2, 4
    q, k, v = (harness.values(rng, (1, 2, blocks * size, e), np.float32) for e in (3, 3, 2))
    earlier, own = np.array([-1, 0, 1, 0]), np.arange(blocks)  # per query block: one earlier block (or none)
    listed = np.broadcast_to(np.stack([earlier, own], -1), (1, 2, blocks, 2)).astype(np.int32)
    got = call(BlockSparseAttention, [q, k, v, listed], {"block_size": size, "causal": True})
    earlier, own = np.repeat(earlier, size), np.repeat(own, size)  # per query token
    complete = (np.arange(blocks * size) + 1) % size == 0
    internal = np.stack([np.where(earlier >= 0, earlier, own), np.where(earlier >= 0, own, -1)], -1)
    count = (earlier >= 0).astype(np.int32) + complete
    internal, count = (np.broadcast_to(x, (1, 2, *x.shape)).astype(np.int32) for x in (internal, count))
    want = call(InternalBlockSparseAttention, [q, k, v, internal, count],
                {"compress_ratio": size})
    harness.assert_close(got, want, ulps=4, atol=1e-6, what="BlockSparseAttention-17 against the internal op")
