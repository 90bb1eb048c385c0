"""BlockSparseAttention-17 as its page's pseudo-code writes it (sequence/block-sparse-attention-17.rst):
per batch, head, query block and query row, the list of positions of the listed blocks (a
block listed twice gives its positions twice), then a softmax over them."""

import numpy as np


def softmax(logits):
    if not logits:
        return []
    x = np.asarray(logits, np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - np.max(x))
        return e / np.sum(e)


def block_sparse_attention(query, key, value, block_indices, block_indices_mask=None, scale=None, *, block_size,
                           causal=False):
    query, key, value = (np.asarray(x, np.float64) for x in (query, key, value))
    B, H, L, E = query.shape
    _, Hk, S, Ev = value.shape
    _, Hb, num_q_blocks, k_blocks = block_indices.shape
    num_kv_blocks = S // block_size
    if scale is None:
        scale = 1.0 / np.sqrt(E)
    scale = float(np.asarray(scale).reshape(()))

    output = np.zeros((B, H, L, Ev))
    for b, h in np.ndindex(B, H):
        hk = 0 if Hk == 1 else h
        hb = 0 if Hb == 1 else h
        for qb in range(num_q_blocks):
            selected = [int(blk) for i, blk in enumerate(block_indices[b, hb, qb])
                        if block_indices_mask is None or block_indices_mask[b, hb, qb, i]]
            key_positions = [blk * block_size + t for blk in selected for t in range(block_size)
                             if 0 <= blk < num_kv_blocks]
            for qi in range(block_size):
                q_pos = qb * block_size + qi
                positions = [p for p in key_positions if not causal or p <= q_pos]
                logits = [query[b, h, q_pos] @ key[b, hk, p] * scale for p in positions]
                weights = softmax(logits)
                output[b, h, q_pos] = sum((w * value[b, hk, p] for w, p in zip(weights, positions)), np.zeros(Ev))
    return output
