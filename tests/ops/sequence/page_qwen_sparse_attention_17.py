"""QwenSparseAttention-17 as its page's pseudo-code writes it (sequence/qwen-sparse-attention-17.rst):
per query token, the ReLU'd index scores of the visible complete blocks, a stable descending
sort, the selected blocks' tokens and the incomplete block's, then dense attention under the
mask of selected tokens. Returns (output, indices)."""

import numpy as np


def softmax(x, axis=-1):
    with np.errstate(invalid="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


def qwen_sparse_attention(query, key, value, index_query, index_key_blocks, scale=None, *, compress_ratio,
                          token_budget):
    query, key, value = (np.asarray(x, np.float64) for x in (query, key, value))
    N, H, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    r = compress_ratio
    block_topk = token_budget // r
    width = token_budget + r - 1
    if scale is None:
        scale = 1.0 / np.sqrt(E)

    indices = np.full((N, L, width), -1)
    mask = np.zeros((N, L, S), dtype=bool)
    for n in range(N):
        for l in range(L):  # noqa: E741  (the page names the query row l)
            p = S - L + l
            num_visible_blocks = (p + 1) // r
            selected = np.zeros((0,), dtype=np.int64)
            if num_visible_blocks > 0:
                q = index_query[n, :, l, :].astype(np.float32)
                k = index_key_blocks[n, :num_visible_blocks, :].astype(np.float32)
                scores = np.maximum(q @ k.T, 0.0).sum(axis=0)
                num_selected_blocks = min(block_topk, num_visible_blocks)
                blocks = np.argsort(-scores, kind="stable")[:num_selected_blocks]
                selected = (blocks[:, None] * r + np.arange(r)[None, :]).reshape(-1)
            tail = np.arange(num_visible_blocks * r, p + 1)
            selected = np.concatenate([selected, tail])
            indices[n, l, :selected.size] = selected
            mask[n, l, selected] = True

    key = np.repeat(key, H // Hkv, axis=1)
    value = np.repeat(value, H // Hkv, axis=1)
    attn = (query @ np.swapaxes(key, -1, -2)) * float(np.asarray(scale).reshape(()))
    attn = np.where(mask[:, None, :, :], attn, -np.inf)
    attn = softmax(attn, axis=-1) if S else attn
    return attn @ value, indices
