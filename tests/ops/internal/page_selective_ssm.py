"""SelectiveSSM as its page (internal/selective-ssm.rst) writes it: the page's PyTorch function
`torch_selective_ssm_recurrence`, line by line in numpy, in f64. Discretization is done for the
whole sequence before the loop."""

import numpy as np
from page_ssm import expanded


def torch_selective_ssm_recurrence(A, dt, B, x, C, recurrent_state):
    A, dt, B, x, C, recurrent_state = expanded(A, dt, B, x, C, recurrent_state)  # as the SSM page opens
    batch_size, seq_len, num_heads, head_dim = x.shape

    dA = np.exp(A * dt).reshape(batch_size, seq_len, num_heads, 1, 1)
    dB = dt.reshape(batch_size, seq_len, num_heads, 1) * B
    state_size = B.shape[-1]  # the page's -1, spelled out: an empty tensor cannot infer it
    dBx = dB.reshape(batch_size, seq_len, num_heads, 1, state_size) * x.reshape(batch_size, seq_len, num_heads, head_dim, 1)
    C = C.reshape(batch_size, seq_len, num_heads, 1, state_size)

    output_recurrent_state = recurrent_state
    output = np.zeros((batch_size, seq_len, num_heads, head_dim))

    for t in range(seq_len):
        output_recurrent_state = output_recurrent_state * dA[:, t] + dBx[:, t]
        output[:, t] = (output_recurrent_state * C[:, t]).sum(axis=-1)

    return output, output_recurrent_state
