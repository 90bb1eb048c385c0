"""sparse-attention-indexer.rst read as loops: for each sequence, selection head and query
token, score the visible blocks with the page's numpy and take the stable top-k. The oracle of
the SparseAttentionIndexer kernel; no OpenVINO runs the op."""

from __future__ import annotations

import numpy as np


@np.errstate(all="ignore")  # edge values: NaN and inf pass through, as in the kernel
def sparse_attention_indexer(index_query, index_key_blocks, key_length, index_weights=None, *, compress_ratio,
                             token_budget, num_selection_heads=1, index_element_type="i32"):
    n_seq, heads, length, _ = index_query.shape
    work = np.float64 if index_query.dtype == np.float64 else np.float32
    total = int(np.asarray(key_length).reshape(-1)[0])
    r = compress_ratio
    per_group = heads // num_selection_heads
    budget = token_budget // r
    if index_weights is None:
        index_weights = np.ones((n_seq, length, heads), work)
    out = np.int32 if index_element_type == "i32" else np.int64
    block_indices = np.full((n_seq, num_selection_heads, length, budget), -1, out)
    block_count = np.zeros((n_seq, num_selection_heads, length), out)
    for n in range(n_seq):
        for g in range(num_selection_heads):
            group = slice(g * per_group, (g + 1) * per_group)
            for step in range(length):
                visible = (total - length + step + 1) // r
                if visible == 0:
                    continue
                scores = np.zeros(visible, work)
                for b in range(visible):
                    key = index_key_blocks[n, b].astype(work)
                    for h, weight in zip(range(heads)[group], index_weights[n, step, group].astype(work)):
                        dot = work(np.dot(index_query[n, h, step].astype(work), key))
                        scores[b] += weight * (dot if np.isnan(dot) or dot > 0 else work(0))
                taken = min(budget, visible)
                block_indices[n, g, step, :taken] = np.argsort(-scores, kind="stable")[:taken]
                block_count[n, g, step] = taken
    return block_indices, block_count
