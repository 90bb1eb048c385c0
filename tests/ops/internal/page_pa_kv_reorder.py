"""PaKVReorder read off its spec page (internal/pa-kv-reorder.rst): the pseudocode's loops over
sequences, batches of moves between one pair of blocks, heads and moves, for caches that are not
quantized (the branch that copies token rows). Returns new caches."""

from __future__ import annotations

import numpy as np


def pa_kv_reorder(key_cache, value_cache, block_indices, block_indices_begins, block_update_indices,
                  block_update_indices_begins):
    key_cache, value_cache = np.array(key_cache), np.array(value_cache)
    block_size = key_cache.shape[2]
    for s in range(len(block_indices_begins) - 1):
        op_start, op_end = int(block_update_indices_begins[s]), int(block_update_indices_begins[s + 1])
        seq_blocks = block_indices[block_indices_begins[s]:block_indices_begins[s + 1]]
        op_idx = op_start
        while op_idx < op_end:
            src_block = seq_blocks[block_update_indices[op_idx * 2] // block_size]
            dst_block = seq_blocks[block_update_indices[op_idx * 2 + 1] // block_size]
            batch_end = op_idx + 1
            while batch_end < op_end:
                if (seq_blocks[block_update_indices[batch_end * 2] // block_size] != src_block
                        or seq_blocks[block_update_indices[batch_end * 2 + 1] // block_size] != dst_block):
                    break
                batch_end += 1
            for h in range(key_cache.shape[1]):
                for op in range(op_idx, batch_end):
                    src_token = block_update_indices[op * 2] % block_size
                    dst_token = block_update_indices[op * 2 + 1] % block_size
                    key_cache[dst_block, h, dst_token] = key_cache[src_block, h, src_token]
                    value_cache[dst_block, h, dst_token] = value_cache[src_block, h, src_token]
            op_idx = batch_end
    return key_cache, value_cache
