"""PagedCausalConv1D as its page (internal/paged-causal-conv1d.rst) writes it, in f64: the
page's pseudocode, with two readings where the page contradicts itself (see the op's module
docstring):

* the blocks: the pseudocode reads the state from the last block and caches into the block
  `(processed + t + 1) // interval - 1`; the page's list of cases (and its PagedSelectiveSSM
  twin, and OpenVINO) read block 0 and write blocks 1 to N. This follows the cases: block k gets
  the window once the k-th multiple of the interval is reached in this step, block N the final
  window; with an interval <= 0 the final window goes to block 1.
* conv_weight's second dimension is the input channels per group (`ic_per_group`), the only
  reading under which the pseudocode's `conv_weight[oc, :, :] * state[ic_start:ic_end, :]` runs.

Returns the output and the table after the step (a new array, in the table's type)."""

import math

import numpy as np


def grouped_conv1d(state, conv_weight, conv_bias):
    hidden_size = state.shape[0]
    out_channels = conv_weight.shape[0]
    ic_per_group = conv_weight.shape[1]
    groups = hidden_size // ic_per_group
    output = np.zeros(out_channels)
    for oc in range(out_channels):
        g = oc * groups // out_channels
        ic_start = g * ic_per_group
        ic_end = ic_start + ic_per_group
        output[oc] = np.sum(conv_weight[oc, :, :] * state[ic_start:ic_end, :]) + (conv_bias[oc] if len(conv_bias) else 0)
    return output


def paged_causal_conv1d(input_embeds, conv_state_table, conv_weight, conv_bias, subsequence_begins, la_block_indices,
                        la_block_indices_begins, num_processed_tokens, cache_interval):
    table = conv_state_table.copy()
    input_embeds, conv_weight, conv_bias = (np.asarray(v, np.float64) for v in (input_embeds, conv_weight, conv_bias))
    output_embeds = np.zeros(input_embeds.shape)
    for s in range(len(subsequence_begins) - 1):
        token_start = int(subsequence_begins[s])
        token_end = int(subsequence_begins[s + 1])
        seq_len = token_end - token_start
        if seq_len == 0:
            continue
        seq_blocks = la_block_indices[la_block_indices_begins[s]:la_block_indices_begins[s + 1]]
        interval = int(cache_interval[s])

        state = table[seq_blocks[0]].astype(np.float64)  # [hidden_size, kernel_size]
        written = 0
        for t in range(seq_len):
            x = input_embeds[token_start + t]
            state = np.concatenate([state[:, 1:], x[:, np.newaxis]], axis=-1)
            output_embeds[token_start + t] = grouped_conv1d(state, conv_weight, conv_bias)
            abs_pos = int(num_processed_tokens[s]) + t
            if interval > 0 and ((abs_pos + 1) % interval == 0 or t == seq_len - 1):
                written += 1
                table[seq_blocks[written]] = state
        if interval <= 0:
            table[seq_blocks[1]] = state
        else:
            assert written == math.ceil((int(num_processed_tokens[s]) % interval + seq_len) / interval)
    return output_embeds, table
