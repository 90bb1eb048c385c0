"""Mamba2 as its page (internal/mamba2.rst) writes it: the page's PyTorch function
`torch_mamba2_recurrence`, line by line in numpy, in f64."""

import numpy as np


def torch_mamba2_recurrence(dA, dBx, C, recurrent_state):
    dA, dBx, C, recurrent_state = (np.asarray(v, np.float64) for v in (dA, dBx, C, recurrent_state))
    batch_size, num_heads, seq_len, head_dim, state_size = dBx.shape

    output = np.zeros((batch_size, num_heads, seq_len, head_dim))
    output_recurrent_state = recurrent_state

    for t in range(seq_len):
        dA_t = dA[:, :, t]
        dBx_t = dBx[:, :, t]
        C_t = C[:, :, t]

        output_recurrent_state = output_recurrent_state * dA_t + dBx_t

        output[:, :, t] = (output_recurrent_state * np.expand_dims(C_t, -2)).sum(axis=-1)

    return output, output_recurrent_state
