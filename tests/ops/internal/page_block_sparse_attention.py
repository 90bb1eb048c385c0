"""BlockSparseAttention (domain `extension`) as its page's pseudo-code writes it
(internal/block-sparse-attention.rst): a boolean mask built one query row at a time from the
counted blocks and the incomplete block, then dense attention under it. Indices must not be
negative here (the pseudo-code's mask assignment would wrap them around)."""

import numpy as np


def softmax(x, axis=-1):
    with np.errstate(invalid="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


def block_sparse_attention(query, key, value, block_indices, block_count, scale=None, *, compress_ratio):
    query, key, value = (np.asarray(x, np.float64) for x in (query, key, value))
    N, H, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    Hs = block_indices.shape[1]
    r = compress_ratio
    if scale is None:
        scale = 1.0 / np.sqrt(E)

    mask = np.zeros((N, Hs, L, S), dtype=bool)
    for n in range(N):
        for g in range(Hs):
            for l in range(L):  # noqa: E741  (the page names the query row l)
                p = S - L + l
                blocks = np.asarray(block_indices[n, g, l, :int(block_count[n, g, l])], np.int64)
                selected = (blocks[:, None] * r + np.arange(r)[None, :]).reshape(-1)
                selected = selected[selected < S]  # only for the undefined blocks past S, where numpy fails
                tail = np.arange((p + 1) // r * r, p + 1)
                mask[n, g, l, selected] = True
                mask[n, g, l, tail] = True
    mask = np.repeat(mask, H // Hs, axis=1)

    key = np.repeat(key, H // Hkv, axis=1)
    value = np.repeat(value, H // Hkv, axis=1)
    attn = (query @ np.swapaxes(key, -1, -2)) * float(np.asarray(scale).reshape(()))
    attn = np.where(mask, attn, -np.inf)
    attn = softmax(attn, axis=-1) if S else attn
    output = attn @ value
    return np.where(mask.any(axis=-1)[..., None], output, 0.0)
