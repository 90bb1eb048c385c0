"""The QSA pages (qsa-indexer.rst, paged-qsa-indexer.rst) read as plain loops: one block, one
token, one head at a time, in numpy scalars and small vectors. The oracle of the QSAIndexer and
PagedQSAIndexer kernels; no OpenVINO runs these ops.

Where the pages leave a point open, the choices of irscatter/ops/internal/block_selection.py: `rope` is
rotate-half (rot cosines, then rot sines), RMSNorm and RoPE run in f32 on the f32 mean rounded
to the keys' type, the summary is rounded once when stored, and the ranking is numpy's stable
argsort of the negated scores.
"""

from __future__ import annotations

import numpy as np

quiet = np.errstate(all="ignore")  # edge values: NaN and inf pass through, as in the kernels


def rms_norm(x, w, eps):
    x = np.asarray(x, np.float32)
    mean_square = np.float32(0)
    for v in x:
        mean_square += v * v
    mean_square /= np.float32(len(x))
    return x * (np.float32(1) / np.sqrt(mean_square + np.float32(eps))) * np.asarray(w, np.float32)


def rope(x, cos_sin, rot):
    x = np.asarray(x, np.float32)
    cos_sin = np.asarray(cos_sin, np.float32)
    out = x.copy()
    half = rot // 2
    for i in range(rot):
        partner = -x[i + half] if i < half else x[i - half]
        out[i] = x[i] * cos_sin[i] + partner * cos_sin[rot + i]
    return out


def summary_key(raw_keys, weight, cos_sin, rot, eps, dtype):
    """raw_keys: the r keys [r, D] of one block of one key head."""
    pooled = np.mean(np.asarray(raw_keys, np.float32), axis=0).astype(dtype)
    return rope(rms_norm(pooled, weight, eps), cos_sin, rot).astype(dtype)


def block_score(q_heads, key):
    """One block key [D] against the index-query heads [G, D] sharing it: ReLU per head, summed."""
    total = np.float32(0)
    for q in np.asarray(q_heads, np.float32):
        dot = np.float32(np.dot(q, np.asarray(key, np.float32)))
        total += dot if np.isnan(dot) or dot > 0 else np.float32(0)
    return total


def selection(scores_of_head, pos, r, block_topk):
    """One row: the ascending chosen complete blocks, then the open block of `pos` if any."""
    visible = (pos + 1) // r
    scores = np.array(scores_of_head[:visible], np.float32)
    k = min(block_topk, visible)
    row = sorted(int(b) for b in np.argsort(-scores, kind="stable")[:k])
    if (pos + 1) % r != 0:
        row.append((pos + 1) // r)
    return row + [-1] * (block_topk + 1 - len(row)), len(row)


def head_scores(q_token, keys_of_block, h_sel, scale):
    """q_token [Hiq, D]; keys_of_block(b) -> [Hik, D]. Per selection head, a function of b."""
    h_iq = len(q_token)

    def score(sh, b):
        keys = keys_of_block(b)
        h_ik = len(keys)
        g = h_iq // h_ik
        total = np.float32(0)
        for kv in range(h_ik):
            if kv * h_sel // h_ik != sh:
                continue
            total += block_score(q_token[kv * g:(kv + 1) * g], keys[kv])
        return total * np.float32(scale)
    return score


@quiet
def qsa_indexer(q_idx, k_idx, k_rope_cos_sin, summary_past, indexer_k_past, indexer_k_start_past, k_norm_weight,
                *, compress_ratio=4, block_topk, h_sel=1, indexer_rotary_dim, eps=1e-6, scale, **_):
    dtype = k_idx.dtype
    batch, length, h_iq, d = q_idx.shape
    h_ik = k_idx.shape[2]
    r = compress_ratio
    n_c, p = summary_past.shape[2], indexer_k_past.shape[2]
    summaries = [[list(summary_past[b, kv]) for kv in range(h_ik)] for b in range(batch)]
    pendings, starts = [], []
    for b in range(batch):
        pending = [[indexer_k_past[b, kv, j] for j in range(p)] for kv in range(h_ik)]
        start = np.array(indexer_k_start_past[b])
        for t in range(length):
            if (p + t) % r == 0:  # the token opens a block
                start = np.array(k_rope_cos_sin[b, t])
            for kv in range(h_ik):
                pending[kv].append(k_idx[b, t, kv])
            if len(pending[0]) == r:  # the block is full: summarize it
                for kv in range(h_ik):
                    summaries[b][kv].append(summary_key(pending[kv], k_norm_weight, start, indexer_rotary_dim,
                                                       eps, dtype))
                pending = [[] for _ in range(h_ik)]
        pendings.append(pending)
        # no block left open: the page carries the past phase over unchanged (it is unused)
        starts.append(start if pending[0] else np.array(indexer_k_start_past[b]))
    blocks = n_c + (p + length) // r
    sel = np.full((batch, h_sel, length, block_topk + 1), -1, np.int32)
    count = np.zeros((batch, h_sel, length), np.int32)
    for b in range(batch):
        for t in range(length):
            pos = n_c * r + p + t
            score = head_scores(np.asarray(q_idx[b, t]), lambda blk, b=b: [summaries[b][kv][blk] for kv in range(h_ik)],
                                h_sel, scale)
            for sh in range(h_sel):
                row, n = selection([score(sh, blk) for blk in range((pos + 1) // r)], pos, r, block_topk)
                sel[b, sh, t], count[b, sh, t] = row, n
    summary_present = np.array([[np.array(summaries[b][kv], dtype).reshape(blocks, d) for kv in range(h_ik)]
                                for b in range(batch)], dtype).reshape(batch, h_ik, blocks, d)
    rest = (p + length) % r
    k_present = np.array([[np.array(pendings[b][kv], dtype).reshape(rest, d) for kv in range(h_ik)]
                          for b in range(batch)], dtype).reshape(batch, h_ik, rest, d)
    start_present = np.array(starts, dtype).reshape(indexer_k_start_past.shape)
    return sel, count, summary_present, k_present, start_present


@quiet
def paged_qsa_indexer(q_idx, k_idx, k_rope_cos_sin, summary_cache, indexer_k_cache, indexer_k_start_cos_sin,
                      k_norm_weight, slot_mapping, block_indices, block_indices_begins, subsequence_begins,
                      past_lens, *, compress_ratio=4, block_topk, h_sel=1, indexer_rotary_dim, indexer_head_dim,
                      page_size, ring_capacity, eps=1e-6, scale):
    """Returns (sel_indices, sel_count, summary_cache, indexer_k_cache, indexer_k_start_cos_sin):
    the caches as the step leaves them (copies)."""
    summary_cache, ring, phases = summary_cache.copy(), indexer_k_cache.copy(), indexer_k_start_cos_sin.copy()
    dtype = k_idx.dtype
    tokens = q_idx.shape[0]
    d = indexer_head_dim
    h_iq, h_ik = q_idx.shape[1] // d, k_idx.shape[1] // d
    r, c = compress_ratio, ring_capacity
    q = q_idx.reshape(tokens, h_iq, d)
    k = k_idx.reshape(tokens, h_ik, d)

    def where(s, blk):
        page = block_indices[block_indices_begins[s] + blk * r // page_size]
        return page, blk * r % page_size // r

    for s in range(len(past_lens)):
        slot = slot_mapping[s]
        for t in range(subsequence_begins[s], subsequence_begins[s + 1]):
            pos = past_lens[s] + t - subsequence_begins[s]
            if pos % r == 0:
                phases[slot, pos // r % (c // r)] = k_rope_cos_sin[t]
            ring[slot, :, pos % c] = k[t]
            if pos % r == r - 1:
                blk = pos // r
                first = blk * r % c
                page, row = where(s, blk)
                for kv in range(h_ik):
                    summary_cache[page, kv, row] = summary_key(ring[slot, kv, first:first + r], k_norm_weight,
                                                               phases[slot, blk % (c // r)], indexer_rotary_dim,
                                                               eps, dtype)
    sel = np.full((tokens, h_sel, block_topk + 1), -1, np.int32)
    count = np.zeros((tokens, h_sel), np.int32)
    for s in range(len(past_lens)):
        for t in range(subsequence_begins[s], subsequence_begins[s + 1]):
            pos = past_lens[s] + t - subsequence_begins[s]
            score = head_scores(q[t], lambda blk, s=s: summary_cache[where(s, blk)[0], :, where(s, blk)[1]],
                                h_sel, scale)
            for sh in range(h_sel):
                row, n = selection([score(sh, blk) for blk in range((pos + 1) // r)], pos, r, block_topk)
                sel[t, sh], count[t, sh] = row, n
    return sel, count, summary_cache, ring, phases
