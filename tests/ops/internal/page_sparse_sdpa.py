"""SparseSDPA as its page's pseudo-code writes it (internal/sparse-sdpa.rst), one loop per
batch, query block, selection head and query head, kept literal so that the kernel answers to it.

Where the pseudo-code is silent this transcription fills in the page's prose, and says so:
* a mask plan (no sel_indices/sel_count) selects every block (the page: expand(plan) is then
  all ones);
* the pseudo-code reads attn_mask[b, 0, ...]; a mask with d = h_sel or num_heads heads (the
  page's example 3 gives one per selection head) is read at the head of query head h.
"""

import numpy as np


def softmax(x, axis=-1):
    with np.errstate(invalid="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


def sparse_sdpa(query, key, value, sel_indices=None, sel_count=None, attn_mask=None, scale=None, *, num_heads,
                num_kv_heads, h_sel, k_head_size, v_head_size, sel_block_size, q_block_size=1, causal=True):
    query, key, value = (np.asarray(x, np.float64) for x in (query, key, value))
    B, Hq, L, Dh = query.shape
    Hkv = num_kv_heads
    S = key.shape[2]
    Dv = v_head_size
    Bk = sel_block_size
    Bq = q_block_size
    sc = float(np.asarray(scale).reshape(())) if scale is not None else 1.0 / np.sqrt(Dh)
    num_q_blocks = -(-L // Bq)
    q_per_sel = Hq // h_sel
    if attn_mask is not None:
        attn_mask = np.asarray(attn_mask)
        attn_mask = attn_mask.reshape((1,) * (4 - attn_mask.ndim) + attn_mask.shape)
        mask_heads = attn_mask.shape[1]
        attn_mask = np.broadcast_to(attn_mask, (B, mask_heads, L, S))

    out = np.zeros((B, Hq, L, Dv))
    for b in range(B):
        for qb in range(num_q_blocks):
            l0 = qb * Bq
            l1 = min(l0 + Bq, L)
            for sh in range(h_sel):
                if sel_indices is None:
                    idx = np.arange(-(-S // Bk))
                else:
                    nblocks = int(sel_count[b, sh, qb])
                    idx = np.asarray(sel_indices[b, sh, qb, :nblocks], np.int64)
                blk_base = idx * Bk
                kpos = (blk_base[:, None] + np.arange(Bk)[None, :]).reshape(-1)
                valid = kpos < S
                kpos = kpos[valid]
                K_g = key[b].transpose(1, 0, 2)[kpos]  # gather_blocks(key[b], idx, Bk)[valid]: [n_tok, Hkv, Dh]
                V_g = value[b].transpose(1, 0, 2)[kpos]
                for h in range(q_per_sel * sh, q_per_sel * (sh + 1)):
                    kv = h // (Hq // Hkv)
                    scores = np.sum(query[b, h, l0:l1, None, :] * K_g[None, :, kv, :], axis=-1) * sc
                    eff = np.ones((l1 - l0, kpos.shape[0]), dtype=bool)
                    if causal:
                        q_abs = S - L + (l0 + np.arange(l1 - l0))
                        eff = eff & (q_abs[:, None] >= kpos[None, :])
                    if attn_mask is not None:
                        hm = h // (Hq // attn_mask.shape[1])  # the pseudo-code's head 0, for d heads
                        m = attn_mask[b, hm, l0:l1][:, kpos]
                        if m.dtype == bool:
                            eff = eff & m
                        else:
                            m = m.astype(np.float64)
                            eff = eff & (m != -np.inf)
                            scores = scores + np.where(m != -np.inf, m, 0)
                    scores = np.where(eff, scores, -np.inf)
                    all_masked = ~np.any(eff, axis=-1)
                    probs = softmax(scores, axis=-1) if scores.shape[-1] else scores
                    probs = np.where(all_masked[:, None], np.zeros_like(probs), probs)
                    out[b, h, l0:l1] = np.sum(probs[:, :, None] * V_g[None, :, kv, :], axis=1)
    return out
