"""GatedDeltaNet and PagedGatedDeltaNet read off their spec pages (internal/gated-delta-net.rst,
internal/paged-gated-delta-net.rst), one batch, time step and value head at a time, in f64.

The recurrence is the GatedDeltaNet page's PyTorch code. The paged op's transcription applies it
to each sequence from the state in its block 0 and stores states as the paged page's use cases
say (read block 0, write blocks 1...N, a block per `cache_interval` tokens counted from the
sequence's start, and the state after the last token), with the update of the page it calls
itself the paged variant of (see the kernel's docstring for the paged page's sketch).
"""

from __future__ import annotations

import math

import numpy as np


def _l2norm(x: np.ndarray, eps: float) -> np.ndarray:
    return x / math.sqrt(float((x * x).sum()) + eps)


def _step(state: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, g: float, beta: float) -> np.ndarray:
    """The page's loop body for one head: state [K, V] updated in place; returns the output [V]."""
    with np.errstate(over="ignore", invalid="ignore"):
        state *= np.exp(np.float64(g))
        kv_mem = (state * k[:, None]).sum(axis=0)
        delta = (v - kv_mem) * beta
        state += k[:, None] * delta[None, :]
        return (state * q[:, None]).sum(axis=0)


def gated_delta_net(query, key, value, recurrent_state, gate, beta, *, use_qk_l2norm=False, q_l2_norm_eps=1e-6,
                    k_l2_norm_eps=1e-6):
    """(output_attn [B, T, Hv, V], output_recurrent_state [B, Hv, K, V])."""
    q, k, v = (np.asarray(a, np.float64) for a in (query, key, value))
    state = np.array(recurrent_state, np.float64)
    batch, steps, heads, size = q.shape
    value_heads = v.shape[2]
    groups = value_heads // heads if heads else 1
    out = np.zeros(v.shape)
    for b in range(batch):
        for h in range(value_heads):
            hq = h // groups
            for t in range(steps):
                qt, kt = q[b, t, hq], k[b, t, hq]
                if use_qk_l2norm:
                    qt, kt = _l2norm(qt, q_l2_norm_eps), _l2norm(kt, k_l2_norm_eps)
                qt = qt * (1 / size ** 0.5)
                out[b, t, h] = _step(state[b, h], qt, kt, v[b, t, h], float(gate[b, t, h]), float(beta[b, t, h]))
    return out, state


def paged_gated_delta_net(query, key, value, table, gate, beta, subsequence_begins, block_indices,
                          block_indices_begins, past_lens, cache_interval, **attrs):
    """(output [T, Hv, V], the table after the step [N, Hv, V, K])."""
    table = np.array(table, np.float64)
    out = np.zeros(np.shape(value))
    for s in range(len(past_lens)):
        first, end = int(subsequence_begins[s]), int(subsequence_begins[s + 1])
        blocks = [int(b) for b in block_indices[block_indices_begins[s]:block_indices_begins[s + 1]]]
        if end == first:
            continue
        state = table[blocks[0]].transpose(0, 2, 1)[None].copy()  # [1, Hv, K, V]
        interval = int(cache_interval[s])
        done = int(past_lens[s]) % interval if interval > 0 else 0
        for t in range(first, end):
            one = [np.asarray(a)[None, t:t + 1] for a in (query, key, value, gate, beta)]
            o, state = gated_delta_net(one[0], one[1], one[2], state, one[3], one[4], **attrs)
            out[t] = o[0, 0]
            n = done + t - first + 1
            if (interval > 0 and n % interval == 0) or t == end - 1:
                slot = 1 + (n - 1) // interval if interval > 0 else 1
                if slot < len(blocks):
                    table[blocks[slot]] = state[0].transpose(0, 2, 1)
    return out, table
