"""SparsePA as its page's pseudo-code writes it (internal/sparse-pa.rst): per sequence, the
token-by-token write into the paged caches, then per token and query head the gather of the
selected blocks through the page table and a softmax over them. Works on copies of the caches
and returns (output, key_cache, value_cache).

Where the pseudo-code is silent this transcription fills in the page's prose, and says so:
a `sel_block_mask` plan selects the blocks whose mark is set among the first
num_k_blocks_s = (its table length) * block_size / sel_block_size of the row.
"""

import numpy as np


def softmax(x, axis=-1):
    with np.errstate(invalid="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


def gather_physical_blocks(key_cache, value_cache, phys, offs, Bk):
    """The Bk slots from offs[i] of physical block phys[i], for each selected block, as
    [n_sel * Bk, Hkv, D]."""
    K = [key_cache[p, :, o:o + Bk, :].transpose(1, 0, 2) for p, o in zip(phys, offs)]
    V = [value_cache[p, :, o:o + Bk, :].transpose(1, 0, 2) for p, o in zip(phys, offs)]
    hk, dk, dv = key_cache.shape[1], key_cache.shape[3], value_cache.shape[3]
    return (np.concatenate(K) if K else np.zeros((0, hk, dk)), np.concatenate(V) if V else np.zeros((0, hk, dv)))


def sparse_pa(query, key, value, key_cache, value_cache, block_indices, block_indices_begins, subsequence_begins,
              past_lens, sel_indices, sel_count, qb_start, *, num_heads, num_kv_heads, h_sel, k_head_size,
              v_head_size, block_size, sel_block_size, q_block_size=1, scale, causal=True, sel_block_mask=None):
    key_cache, value_cache = key_cache.copy(), value_cache.copy()
    tokens = query.shape[0]
    Hq, Hkv = num_heads, num_kv_heads
    Dh, Dv = k_head_size, v_head_size
    B = block_size
    Bk = sel_block_size
    Bq = q_block_size
    blk_per_page = B // Bk
    q_per_sel = Hq // h_sel
    num_sequences = len(past_lens)

    q = np.reshape(query.astype(np.float64), (tokens, Hq, Dh))
    out = np.zeros((tokens, Hq, Dv))

    for s in range(num_sequences):
        chunk_len = subsequence_begins[s + 1] - subsequence_begins[s]
        valid_max = past_lens[s] + chunk_len
        phys_seq = block_indices[block_indices_begins[s]:block_indices_begins[s + 1]]
        for t in range(subsequence_begins[s], subsequence_begins[s + 1]):
            token_pos = past_lens[s] + (t - subsequence_begins[s])
            phys_block = phys_seq[token_pos // B]
            offset_in_block = token_pos % B
            key_cache[phys_block, :, offset_in_block, :] = key[t].reshape(Hkv, Dh)
            value_cache[phys_block, :, offset_in_block, :] = value[t].reshape(Hkv, Dv)

        for t in range(subsequence_begins[s], subsequence_begins[s + 1]):
            row = qb_start[s] + (t - subsequence_begins[s]) // Bq
            token_pos = past_lens[s] + (t - subsequence_begins[s])
            for h in range(Hq):
                sh = h // q_per_sel
                kv = h // (Hq // Hkv)
                if sel_block_mask is None:
                    nblocks = sel_count[row, sh]
                    idx = np.asarray(sel_indices[row, sh, :nblocks], np.int64)
                else:
                    num_k_blocks = len(phys_seq) * blk_per_page
                    idx = np.flatnonzero(sel_block_mask[row, sh, :num_k_blocks])
                phys = phys_seq[idx // blk_per_page]
                offs = (idx % blk_per_page) * Bk
                K_g, V_g = gather_physical_blocks(key_cache.astype(np.float64), value_cache.astype(np.float64),
                                                  phys, offs, Bk)
                kpos = (idx[:, None] * Bk + np.arange(Bk)[None, :]).reshape(-1)
                eff = np.ones(kpos.shape[0], dtype=bool)
                eff = eff & (kpos < valid_max)
                if causal:
                    eff = eff & (kpos <= token_pos)
                scores = np.sum(q[t, h] * K_g[:, kv, :], axis=-1) * scale
                scores = np.where(eff, scores, -np.inf)
                probs = softmax(scores, axis=-1) if scores.size else scores
                if not np.any(eff):
                    probs = np.zeros_like(probs)
                out[t, h] = np.sum(probs[:, None] * V_g[:, kv, :], axis=0)

    return out.reshape(tokens, Hq * Dv), key_cache, value_cache
