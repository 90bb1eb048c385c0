"""PagedSelectiveSSM as its page (internal/paged-selective-ssm.rst) writes it, in f64: the
page's per-token, per-head update, and its block rules: a sequence reads its state from block
0 of its blocks and writes blocks 1 to N, N = ceil((processed % interval + new) / interval);
block k holds the state once the k-th multiple of the interval is reached in this step, block
N the state after the last token; an interval <= 0 caches nothing.

Returns the output and the table after the step (a new array, in the table's type)."""

import math

import numpy as np


def paged_selective_ssm(A, dt, B, x, C, recurrent_state_table, subsequence_begins, la_block_indices,
                        la_block_indices_begins, num_processed_tokens, cache_interval):
    table = recurrent_state_table.copy()
    A, dt, B, x, C = (np.asarray(v, np.float64) for v in (A, dt, B, x, C))
    num_heads = x.shape[1]
    num_groups = B.shape[1]
    heads_per_group = num_heads // num_groups
    output = np.zeros(x.shape)
    for s in range(len(subsequence_begins) - 1):
        begin, end = int(subsequence_begins[s]), int(subsequence_begins[s + 1])
        if end == begin:
            continue
        blocks = la_block_indices[la_block_indices_begins[s]:la_block_indices_begins[s + 1]]
        past, interval = int(num_processed_tokens[s]), int(cache_interval[s])
        S = table[blocks[0]].astype(np.float64)  # read block 0 before anything is written
        written = 0
        for t in range(begin, end):
            for h in range(num_heads):
                g = h // heads_per_group
                dA = math.exp(A[h] * dt[t, h])
                dtB = dt[t, h] * B[t, g]
                dBx = np.outer(x[t, h], dtB)
                S[h] = S[h] * dA + dBx
                output[t, h] = S[h] @ C[t, g]
            if interval > 0:
                processed = past + (t - begin) + 1
                if processed % interval == 0 or t == end - 1:
                    written += 1
                    table[blocks[written]] = S
        if interval > 0:
            assert written == math.ceil((past % interval + end - begin) / interval)
    return output, table
