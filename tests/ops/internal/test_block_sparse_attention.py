"""BlockSparseAttention (domain `extension`) against a literal transcription of its page's
pseudo-code (page_block_sparse_attention.py), not against OpenVINO: OpenVINO has no class of
the op, so neither its Python API nor a transformation can make one and no plugin runs it.

Cases go through an IR file (`harness.check`, inputs never written): compress_ratio 1 (DSA:
no incomplete block), 3 and 4, every kind of selection heads (1, Hkv, H), prefill (L = S),
decode (L = 1) and chunks between, an explicit scale, f32, f16, bf16 and f64 with i32 and i64
indices, size-0 N, L, S and KB, rows that attend nothing (zeros), entries past block_count
(ignored), and every refusal with its label. NaN and inf at positions nobody attends are never
read (the pseudo-code's dense product would spread them; the test says what is expected
instead). Tolerance: 4 ulps of the output type against an f64 transcription, plus 1e-5 (the
f32 rounding of sums of values up to 4 in magnitude)."""

from __future__ import annotations

from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import OP_SPECS
from page_block_sparse_attention import block_sparse_attention

from irscatter import examples
from irscatter.ops.functional import call
from irscatter.ops.internal.block_sparse_attention import BlockSparseAttention

OP = ("BlockSparseAttention", "extension")
WHY = "OpenVINO has no BlockSparseAttention of domain extension (no class in its source): the page's pseudo-code judges"
NAMES = ("query", "key", "value", "block_indices", "block_count", "scale")


def selection(rng, batch, selections, length, source, ratio, width, index=np.int32):
    """Valid rows as SparseAttentionIndexer makes them: distinct blocks before the query's own,
    -1 after the count (every fourth row empty)."""
    indices = np.full((batch, selections, length, width), -1, index)
    count = np.zeros((batch, selections, length), index)
    for n, (b, g, row) in enumerate(np.ndindex(batch, selections, length)):
        visible = (source - length + row + 1) // ratio
        chosen = [] if n % 4 == 3 else rng.choice(visible, min(visible, rng.integers(0, width + 1)), replace=False)
        indices[b, g, row, :len(chosen)], count[b, g, row] = chosen, len(chosen)
    return indices, count


def inputs(rng, *, batch=2, heads=4, kv=2, selections=1, length=3, source=9, size=3, value_size=2, ratio=2,
           width=3, dtype=np.float32, index=np.int32):
    return [harness.values(rng, (batch, heads, length, size), dtype),
            harness.values(rng, (batch, kv, source, size), dtype),
            harness.values(rng, (batch, kv, source, value_size), dtype),
            *selection(rng, batch, selections, length, source, ratio, width, index)]


def case(name, arrays, ratio, error=None):
    oracle = None if error else partial(block_sparse_attention, compress_ratio=ratio)
    return Case(name, *OP, named_inputs(NAMES, arrays), {"compress_ratio": ratio}, oracle=oracle,
                openvino="none", why=WHY, ulps=4, atol=1e-5, error=error)


def _cases():
    rng = np.random.default_rng(11)
    cases = []
    for ratio, selections, length, source in ((1, 1, 4, 4), (4, 2, 1, 13), (3, 4, 5, 11), (2, 2, 6, 6)):
        cases.append(case(f"r{ratio}-hs{selections}-L{length}-S{source}",
                          inputs(rng, ratio=ratio, selections=selections, length=length, source=source), ratio))
    scaled = inputs(rng, ratio=4, length=2, source=10)
    cases.append(case("scale", [*scaled, np.array([0.25], np.float32)], 4))
    for tag, dtype, index in (("f16", np.float16, np.int64), ("bf16", ml_dtypes.bfloat16, np.int32),
                              ("f64", np.float64, np.int64)):
        cases.append(case(f"{tag}-{np.dtype(index).name}", inputs(rng, dtype=dtype, index=index), 2))
    for tag, changes in (("N0", {"batch": 0}), ("L0", {"length": 0}), ("S0", {"length": 0, "source": 0}),
                         ("KB0", {"width": 0})):
        cases.append(case(f"size0-{tag}", inputs(rng, **changes), 2))
    tail_only = inputs(rng, ratio=4, length=4, source=8)
    tail_only[3][...] = 7  # past the counts: never read
    tail_only[4][...] = 0  # the last query (p = 7) has a complete block of its own and attends nothing
    cases.append(case("incomplete-blocks-only", tail_only, 4))
    return cases


def _errors():
    rng = np.random.default_rng(12)
    good = inputs(rng)
    q, k, v, indices, count = good
    too_many = count.copy()
    too_many[0, 0, 0] = 4
    return [
        case("ratio", good, 0, error="bsa-ratio"),
        case("length", [q, k[:, :, :2], v[:, :, :2], indices, count], 2, error="bsa-shape"),
        case("kv-heads", [q, np.repeat(k, 2, 1)[:, :3], np.repeat(v, 2, 1)[:, :3], indices, count], 2,
             error="bsa-shape"),
        case("selection-heads", [q, k, v, np.repeat(indices, 3, 1), np.repeat(count, 3, 1)], 2, error="bsa-shape"),
        case("count-shape", [q, k, v, indices, count[:, :, :2]], 2, error="bsa-shape"),
        case("count-range", [q, k, v, indices, too_many], 2, error="bsa-count"),
        case("index-type", [q, k, v, indices.astype(np.int8), count], 2, error="index-type"),
    ]


CASES = _cases()


@pytest.mark.parametrize("case", CASES + _errors(), ids=str)
def test_block_sparse_attention(case):
    harness.check(case, CASES)


def test_nan_and_inf_where_no_query_looks_are_never_read():
    rng = np.random.default_rng(13)
    q, k, v, indices, count = inputs(rng, batch=1, length=2, source=8, ratio=2)
    indices[...], count[...] = -1, 1
    indices[..., 0] = 0  # block 0 and each query's own incomplete block (positions 6 and 7)
    attended = np.zeros(8, bool)
    attended[[0, 1, 6, 7]] = True
    k[:, :, ~attended], v[:, :, ~attended] = np.nan, np.inf
    got = call(BlockSparseAttention, [q, k, v, indices, count], {"compress_ratio": 2})
    clean = [np.where(attended[:, None], x, 0).astype(np.float32) for x in (k[0], v[0])]
    want = block_sparse_attention(q, clean[0][None], clean[1][None], indices, count, compress_ratio=2)
    harness.assert_close(got, want.astype(np.float32), ulps=4, atol=1e-5, what="with NaN and inf unattended")


@pytest.mark.skipif(not OP_SPECS.is_dir(), reason="the OpenVINO spec pages are not present")
def test_the_pages_examples_run():
    found = examples.run_document(OP_SPECS / "internal" / "block-sparse-attention.rst")
    assert [ex.status for ex in found] == ["shape-checked"] * 2, [ex.reason for ex in found]
