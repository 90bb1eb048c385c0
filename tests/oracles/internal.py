"""Oracle of PagedAttentionExtension, read off the spec page's pseudo-code: for each sequence,
for each new token, write its key and value to its slot, then for each query head walk the
visible cached positions one by one. Python floats (f64) throughout; small inputs only.

Where the page leaves a point open it takes what OpenVINO's CPU plugin does (and what the
kernel's docstring says): `scale` 0 means 1/sqrt(S); an empty score window scores the last new
token; re-rotation turns every slot of a listed block before the step's writes; a sequence with
several new tokens zeroes the slots after its last position in its last value block.
"""

from __future__ import annotations

import math

import numpy as np


def paged_attention(query, key, value, key_cache, value_cache, past_lens, subsequence_begins, block_indices,
                    block_indices_begins, scale, sliding_window, alibi_slopes, max_context_len,
                    score_aggregation_window, rotated_block_indices=(), rotation_deltas=(), rotation_trig_lut=(),
                    sinks=None):
    """Returns (attention [T, Hq*Sv], scores, key_cache after, value_cache after)."""
    key_cache = np.array(key_cache, np.float64)
    value_cache = np.array(value_cache, np.float64)
    _, kv_heads, block_size, head_size = key_cache.shape
    value_size = value_cache.shape[3]
    heads = query.shape[1] // head_size
    group = heads // kv_heads
    scale = float(scale) or 1 / math.sqrt(head_size)
    _rotate(key_cache, list(rotated_block_indices), np.asarray(rotation_deltas), np.asarray(rotation_trig_lut))
    output = np.zeros((query.shape[0], heads * value_size))
    scores = []
    for s in range(len(past_lens)):
        past = int(past_lens[s])
        begin, end = int(subsequence_begins[s]), int(subsequence_begins[s + 1])
        table = [int(b) for b in block_indices[block_indices_begins[s]:block_indices_begins[s + 1]]]
        new = end - begin
        window = _window(score_aggregation_window, s)
        region = [0.0] * (past + new)
        for i in range(new):  # every write comes first: the kernel attends over the written cache
            position = past + i
            block, slot = table[position // block_size], position % block_size
            for h in range(kv_heads):
                for d in range(head_size):
                    key_cache[block, h, slot, d] = key[begin + i, h * head_size + d]
                for d in range(value_size):
                    value_cache[block, h, slot, d] = value[begin + i, h * value_size + d]
        total = past + new
        if new > 1 and total % block_size:  # the CPU plugin's zeroed tail of the last value block
            for slot in range(total % block_size, block_size):
                value_cache[table[total // block_size], :, slot, :] = 0
        for i in range(new):
            token, position = begin + i, past + i
            start = 0
            if max_context_len > 0:
                start = max(start, position + 1 - int(max_context_len))
            if sliding_window > 0:
                start = max(start, position + 1 - int(sliding_window))
            scored = window != 0 and (window < 0 or new - i <= window)
            for h in range(heads):
                logits = []
                for k in range(start, position + 1):
                    block, slot = table[k // block_size], k % block_size
                    if block < 0:
                        logits.append(-math.inf)
                        continue
                    dot = sum(float(query[token, h * head_size + d]) * key_cache[block, h // group, slot, d]
                              for d in range(head_size))
                    logit = dot * scale
                    if len(alibi_slopes):
                        logit += float(alibi_slopes[h]) * (k - position)
                    logits.append(logit)
                sink = None if sinks is None else float(np.asarray(sinks).reshape(-1)[h])
                weights = _softmax(logits, sink)
                for t, k in enumerate(range(start, position + 1)):
                    block, slot = table[k // block_size], k % block_size
                    if block < 0:
                        continue
                    for d in range(value_size):
                        output[token, h * value_size + d] += weights[t] * value_cache[block, h // group, slot, d]
                    if scored:
                        region[k] += weights[t]
        scores += region
    return output, np.array(scores), key_cache, value_cache


def _window(windows, s):
    windows = np.asarray(windows).reshape(-1)
    if windows.size == 0:
        return 1
    return int(windows[0] if windows.size == 1 else windows[s])


def _softmax(logits, sink):
    top = max(logits + ([sink] if sink is not None else []))
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps) + (math.exp(sink - top) if sink is not None else 0.0)
    return [e / total for e in exps]


def _rotate(key_cache, blocks, deltas, lut):
    if not blocks:
        return
    block_size, head_size = key_cache.shape[2], key_cache.shape[3]
    half = head_size // 2
    lut = lut.reshape(-1, head_size)
    for r, block in enumerate(blocks):
        for slot in range(block_size):
            row = int(deltas.reshape(len(blocks), -1)[r, slot if deltas.reshape(len(blocks), -1).shape[1] > 1 else 0])
            for h in range(key_cache.shape[1]):
                x = key_cache[block, h, slot].copy()
                for d in range(half):
                    cos, sin = float(lut[row, d]), float(lut[row, half + d])
                    key_cache[block, h, slot, d] = x[d] * cos - x[d + half] * sin
                    key_cache[block, h, slot, d + half] = x[d] * sin + x[d + half] * cos
